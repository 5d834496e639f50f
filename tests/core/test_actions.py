"""Tests for official/core/actions.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import orbit
from official.core import actions
from official.core import exp_factory
from official.modeling import optimization
from tests.core import toy_task  # pylint: disable=unused-import  # noqa: F401  (registers test/toy_regression)


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


def _ema_model_and_optimizer():
  model = tf_keras.Sequential([tf_keras.layers.Dense(1, kernel_initializer='ones')])
  model.build([None, 2])
  optimizer = optimization.ExponentialMovingAverage(optimization.SGD(0.1))
  optimizer.shadow_copy(model)  # averages start at zero
  return model, optimizer


def test_ema_checkpointing_saves_the_averages_as_the_weights(tmp_path):
  model, optimizer = _ema_model_and_optimizer()
  optimizer.iterations.assign(7)
  checkpoint = tf.train.Checkpoint(model=model)
  action = actions.EMACheckpointing(str(tmp_path), optimizer, checkpoint, max_to_keep=2)
  action({})
  path = tf.train.latest_checkpoint(str(tmp_path / 'ema_checkpoints'))
  assert path.endswith('average_weights-7')
  np.testing.assert_array_equal(model.get_weights()[0], np.ones((2, 1)))  # swapped back
  checkpoint.read(path).assert_existing_objects_matched()
  np.testing.assert_array_equal(model.get_weights()[0], np.zeros((2, 1)))


def test_ema_checkpointing_refuses_a_plain_optimizer(tmp_path):
  with pytest.raises(ValueError, match='Optimizer has to be instance of .*found SGD'):
    actions.EMACheckpointing(str(tmp_path), optimization.SGD(), tf.train.Checkpoint())


def test_eval_actions_hold_ema_checkpointing_for_an_ema_optimizer(tmp_path):
  params = exp_factory.get_exp_config('test/toy_regression')
  model, optimizer = _ema_model_and_optimizer()

  class Trainer:
    checkpoint = tf.train.Checkpoint(model=model)

  Trainer.optimizer = tf_keras.mixed_precision.LossScaleOptimizer(optimizer)  # found inside
  eval_actions = actions.get_eval_actions(params, Trainer(), str(tmp_path))
  assert [type(a) for a in eval_actions] == [actions.EMACheckpointing]
  manager = eval_actions[0].checkpoint_manager
  assert manager._max_to_keep == params.trainer.max_to_keep  # pylint: disable=protected-access
  eval_actions[0]({})
  assert tf.train.latest_checkpoint(str(tmp_path / 'ema_checkpoints')).endswith('-0')
