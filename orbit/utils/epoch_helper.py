"""Tracks epochs from the global step for trainers that do something at epoch boundaries."""

import tensorflow as tf


class EpochHelper:
  """Knows when an epoch of `epoch_steps` steps begins and ends.

  Args:
    epoch_steps: steps per epoch.
    global_step: the training step counter.

  Example:
    >>> helper = EpochHelper(100, global_step)
    >>> def train_loop_begin(self):
    ...   if helper.epoch_begin():
    ...     reset_epoch_metrics()
    >>> def train_loop_end(self):
    ...   if helper.epoch_end():
    ...     return {'epoch_accuracy': accuracy.result()}
  """

  def __init__(self, epoch_steps: int, global_step: tf.Variable):
    if epoch_steps <= 0:
      raise ValueError(f'EpochHelper: epoch_steps must be positive, found {epoch_steps}')
    self._epoch_steps = epoch_steps
    self._global_step = global_step
    self._epoch_start_step = None
    self._in_epoch = False

  def epoch_begin(self) -> bool:
    """Returns True (and starts a new epoch) when no epoch is in progress."""
    if self._in_epoch:
      return False
    self._epoch_start_step = int(self._global_step.numpy())
    self._in_epoch = True
    return True

  def epoch_end(self) -> bool:
    """Returns True (and closes the epoch) once `epoch_steps` steps have run since it began.

    Raises:
      ValueError: no epoch was begun.
    """
    if not self._in_epoch:
      raise ValueError('EpochHelper.epoch_end: call epoch_begin first')
    step = int(self._global_step.numpy())
    if step - self._epoch_start_step >= self._epoch_steps:
      self._in_epoch = False
      return True
    return False

  @property
  def batch_index(self) -> int:
    """The step's index within the current epoch."""
    return int(self._global_step.numpy()) - self._epoch_start_step

  @property
  def current_epoch(self) -> int:
    """The epoch number of the global step (0-based)."""
    return int(self._global_step.numpy()) // self._epoch_steps
