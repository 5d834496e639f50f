"""Orbit actions for Model Garden style trainers: loss-blowup recovery and the default lists.

`train_lib` builds its own actions (preemption, best checkpoint); these are Model Garden's
names for code that assembles a controller itself.

Example:
  >>> condition = RecoveryCondition(global_step, loss_upper_bound=10.0, recovery_max_trials=2)
  >>> recover = orbit.actions.ConditionalAction(condition, RecoveryAction(checkpoint_manager))
  >>> controller = orbit.Controller(..., train_actions=[recover])
"""

import logging
import math
from typing import Any, List, Optional

import numpy as np
import orbit
import tensorflow as tf

from official.core import config_definitions as cfg


class RecoveryAction:
  """Restores the latest checkpoint of `checkpoint_manager` (after a loss blowup)."""

  def __init__(self, checkpoint_manager: tf.train.CheckpointManager):
    self.checkpoint_manager = checkpoint_manager

  def __call__(self, _) -> None:
    path = self.checkpoint_manager.restore_or_initialize()
    logging.warning('Loss blowup: restored the model from checkpoint %s', path)


class RecoveryCondition:
  """Loss-blowup recovery: whether a train loop's loss calls for restoring the latest checkpoint.

  A loss calls for it when it is not finite, or, from `recovery_begin_steps` on, above
  `loss_upper_bound`; at most `recovery_max_trials` times. The `Trainer` asks `try_recover` after
  every loop; Model Garden's action form calls the condition with the loop's outputs.

  Args:
    global_step: the step counter.
    loss_upper_bound: the largest acceptable loss.
    recovery_begin_steps: steps before which a large (finite) loss is accepted.
    recovery_max_trials: recoveries allowed.

  Raises:
    RuntimeError (when called): the loss is bad once more than `recovery_max_trials` times.

  Example:
    >>> condition = RecoveryCondition(global_step, loss_upper_bound=10.0, recovery_max_trials=2)
    >>> condition.try_recover(float('nan'), step=100)   # True (then restore the checkpoint)
  """

  def __init__(self, global_step: tf.Variable, loss_upper_bound: float,
               recovery_begin_steps: int = 0, recovery_max_trials: int = 3):
    self.global_step = global_step
    self.loss_upper_bound = loss_upper_bound
    self.recovery_begin_steps = recovery_begin_steps
    self.recovery_max_trials = recovery_max_trials
    self.recover_counter = 0

  def bad_loss_reason(self, loss: float, step: int) -> Optional[str]:
    """Why `loss` after the loop ending at `step` calls for a recovery; None when it does not."""
    if math.isnan(loss):
      return f'The loss value is NaN after the training loop at step {step}'
    if not math.isfinite(loss) or (step >= self.recovery_begin_steps and
                                   loss > self.loss_upper_bound):
      return (f'The loss value is {loss}, which is larger than the bound '
              f'{self.loss_upper_bound}, at step {step}')
    return None

  def try_recover(self, loss: float, step: int) -> bool:
    """Counts a recovery and returns True when `loss` calls for one and trials remain."""
    if (self.recover_counter >= self.recovery_max_trials or
        self.bad_loss_reason(loss, step) is None):
      return False
    self.recover_counter += 1
    return True

  def __call__(self, outputs: orbit.runner.Output) -> bool:
    loss = float(np.asarray(orbit.utils.get_value(outputs['training_loss'])).reshape(-1)[0])
    step = int(self.global_step)
    reason = self.bad_loss_reason(loss, step)
    if reason is None:
      return False
    self.recover_counter += 1
    if self.recover_counter > self.recovery_max_trials:
      raise RuntimeError(f'{reason}; it happened {self.recover_counter} times (more than '
                         f'recovery_max_trials={self.recovery_max_trials}).')
    return True


def get_eval_actions(params: cfg.ExperimentConfig, trainer: Any, model_dir: str
                     ) -> List[orbit.Action]:
  """The default eval actions: none in mlm-garden (no EMA optimizer; the best checkpoint is
  exported by `train_lib`)."""
  del params, trainer, model_dir
  return []


def get_train_actions(params: cfg.ExperimentConfig, trainer: Any, model_dir: str,
                      checkpoint_manager: Optional[tf.train.CheckpointManager] = None
                      ) -> List[orbit.Action]:
  """The default train actions: loss-blowup recovery when `trainer.recovery_max_trials` > 0,
  and on-demand checkpoints on preemption for strategies with a cluster resolver."""
  del model_dir
  actions: List[orbit.Action] = []
  if params.trainer.recovery_max_trials > 0 and checkpoint_manager is not None:
    condition = RecoveryCondition(trainer.global_step, params.trainer.loss_upper_bound,
                                  params.trainer.recovery_begin_steps,
                                  params.trainer.recovery_max_trials)
    actions.append(orbit.actions.ConditionalAction(condition, RecoveryAction(checkpoint_manager)))
  resolver = getattr(trainer.strategy, 'cluster_resolver', None)
  if params.trainer.preemption_on_demand_checkpoint and resolver and checkpoint_manager:
    actions.append(orbit.actions.SaveCheckpointIfPreempted(
        resolver, checkpoint_manager, trainer.global_step, keep_running_after_save=True))
  return actions
