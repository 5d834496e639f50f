"""Tests for official/core/actions.py."""

import numpy as np
import pytest
import tensorflow as tf

import orbit
from official.core import actions
from official.core import exp_factory
from tests.core import toy_task  # pylint: disable=unused-import


def test_recovery_condition_counts_bad_losses_then_raises():
  step = orbit.utils.create_global_step()
  condition = actions.RecoveryCondition(step, loss_upper_bound=0.5, recovery_begin_steps=10,
                                        recovery_max_trials=2)
  assert not condition({'training_loss': 0.6})          # before recovery_begin_steps
  step.assign(10)
  assert not condition({'training_loss': 0.4})
  assert condition({'training_loss': 0.6})
  assert condition({'training_loss': tf.constant([np.nan])})
  with pytest.raises(RuntimeError, match='larger than the bound 0.5.*happened 3 times'):
    condition({'training_loss': 0.6})


def test_try_recover_is_the_trainers_form_of_the_same_rule():
  step = orbit.utils.create_global_step()
  condition = actions.RecoveryCondition(step, loss_upper_bound=0.5, recovery_begin_steps=10,
                                        recovery_max_trials=2)
  assert not condition.try_recover(0.6, step=5)            # large but before the begin step
  assert condition.try_recover(float('inf'), step=5)       # non-finite: always a blowup
  assert not condition.try_recover(0.4, step=12)
  assert condition.try_recover(0.6, step=12)
  assert condition.recover_counter == 2
  assert not condition.try_recover(float('nan'), step=13)  # no trial left: the trainer stops
  assert condition.bad_loss_reason(float('nan'), 13) == (
      'The loss value is NaN after the training loop at step 13')


def test_recovery_action_restores_the_latest_checkpoint(tmp_path):
  value = tf.Variable(1.0)
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(value=value), str(tmp_path), 2)
  manager.save()
  value.assign(5.0)
  recover = orbit.actions.ConditionalAction(lambda _: True, actions.RecoveryAction(manager))
  recover({})
  assert float(value.numpy()) == 1.0


def test_default_action_lists():
  params = exp_factory.get_exp_config('test/toy_regression')

  class Trainer:
    global_step = orbit.utils.create_global_step()
    strategy = tf.distribute.get_strategy()

  assert actions.get_eval_actions(params, Trainer(), '/tmp/unused') == []
  assert actions.get_train_actions(params, Trainer(), '/tmp/unused', None) == []
