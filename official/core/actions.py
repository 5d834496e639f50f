"""Orbit actions for Model Garden style trainers: loss-blowup recovery, checkpoints of the moving
averages of the weights (EMA), and the default lists.

`train_lib` builds its own actions (preemption, best checkpoint); these are Model Garden's
names for code that assembles a controller itself.

Example:
  >>> condition = RecoveryCondition(global_step, loss_upper_bound=10.0, recovery_max_trials=2)
  >>> recover = orbit.actions.ConditionalAction(condition, RecoveryAction(checkpoint_manager))
  >>> controller = orbit.Controller(..., train_actions=[recover])
"""

import logging
import math
import os
from typing import Any, List, Optional

import numpy as np
import orbit
import tensorflow as tf
import tf_keras

from official.core import config_definitions as cfg
from official.modeling.optimization import ema_optimizer


class EMACheckpointing:
  """Eval action: saves a checkpoint holding the moving averages as the model's weights.

  Each call swaps the averages into the model, saves `checkpoint` as
  `<export_dir>/ema_checkpoints/average_weights-<optimizer step>`, and swaps back.

  Args:
    export_dir: the directory under which `ema_checkpoints` is written (usually `model_dir`).
    optimizer: the `ExponentialMovingAverage` of the run (or a `LossScaleOptimizer` wrapping it),
      with its averages created (`shadow_copy`).
    checkpoint: the checkpoint to save (holding the model).
    max_to_keep: checkpoints kept in `ema_checkpoints`.

  Raises:
    ValueError: `optimizer` holds no `ExponentialMovingAverage`.

  Example:
    >>> action = EMACheckpointing(model_dir, trainer.optimizer, trainer.checkpoint)
    >>> controller = orbit.Controller(..., eval_actions=[action])
  """

  def __init__(self, export_dir: str, optimizer: tf_keras.optimizers.Optimizer,
               checkpoint: tf.train.Checkpoint, max_to_keep: int = 1):
    ema = ema_optimizer.find_moving_average(optimizer)
    if ema is None:
      raise ValueError(f'Optimizer has to be instance of optimization.ExponentialMovingAverage '
                       f'(or wrap one) for the EMACheckpointing action, found '
                       f'{type(optimizer).__name__}')
    self._optimizer = ema
    self._checkpoint = checkpoint
    directory = os.path.join(export_dir, 'ema_checkpoints')
    self._checkpoint_manager = tf.train.CheckpointManager(
        checkpoint, directory=directory, max_to_keep=max_to_keep,
        checkpoint_name='average_weights')

  @property
  def checkpoint_manager(self) -> tf.train.CheckpointManager:
    """The manager of `<export_dir>/ema_checkpoints`."""
    return self._checkpoint_manager

  def __call__(self, output: orbit.runner.Output) -> None:
    del output
    self._optimizer.swap_weights()
    try:
      self._checkpoint_manager.save(checkpoint_number=self._optimizer.iterations)
    finally:
      self._optimizer.swap_weights()


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
  """The default eval actions: with a moving-average optimizer (`optimizer_config.ema`),
  `EMACheckpointing` into `model_dir/ema_checkpoints` (keeping `trainer.max_to_keep`); else none
  (the best checkpoint is exported by `train_lib`)."""
  ema = ema_optimizer.find_moving_average(getattr(trainer, 'optimizer', None))
  if ema is None:
    return []
  return [EMACheckpointing(model_dir, ema, trainer.checkpoint,
                           max_to_keep=params.trainer.max_to_keep)]


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
