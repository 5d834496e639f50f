"""`SavedModelCheckpointManager`: a checkpoint manager that also exports SavedModels.

Every checkpoint `<dir>/ckpt-N` it writes gets a sibling `<dir>/ckpt-N_saved_modules/` with one
SavedModel per module to export (those with a `saved_model_signatures` attribute); SavedModels
are deleted together with their checkpoints (`max_to_keep`). A reader (e.g. an evaluator of
SavedModels) waits for new ones with `wait_for_new_savedmodel` / `savedmodels_iterator`.
It is a `checkpointing.FiniteCheckpointManager`: weights holding NaN or Inf are not written.

Example:
  >>> manager = SavedModelCheckpointManager(checkpoint, '/tmp/run', max_to_keep=3,
  ...                                       modules_to_export={'encoder': encoder})
  >>> manager.save()                  # '/tmp/run/ckpt-1'
  >>> manager.latest_savedmodel       # '/tmp/run/ckpt-1_saved_modules'
  >>> for path in manager.savedmodels_iterator(timeout=600):
  ...   tf.saved_model.load(os.path.join(path, 'encoder'))
"""

import logging
import os
import re
import time
from typing import Callable, Iterator, List, Mapping, Optional

import tensorflow as tf

from official.core import checkpointing

SAVED_MODULES_PATH_SUFFIX = 'saved_modules'
_NUMBER = re.compile(rf'-(\d+)_{SAVED_MODULES_PATH_SUFFIX}$')


def make_saved_modules_directory_name(checkpoint_name: str) -> str:
  """The SavedModels' directory of checkpoint `checkpoint_name`: `<checkpoint_name>_saved_modules`.

  Example:
    >>> make_saved_modules_directory_name('/tmp/run/ckpt-3')   # '/tmp/run/ckpt-3_saved_modules'
  """
  return f'{checkpoint_name}_{SAVED_MODULES_PATH_SUFFIX}'


class SavedModelCheckpointManager(checkpointing.FiniteCheckpointManager):
  """A checkpoint manager whose every checkpoint comes with SavedModels of `modules_to_export`.

  Args:
    checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours, checkpoint_name,
      step_counter, checkpoint_interval, init_fn: as `tf.train.CheckpointManager`.
    modules_to_export: {name: module}; each module with a `saved_model_signatures` attribute
      (signatures for `tf.saved_model.save`) is saved to `<checkpoint>_saved_modules/<name>`.
  """

  def __init__(self, checkpoint: tf.train.Checkpoint, directory: str, max_to_keep: int,
               modules_to_export: Optional[Mapping[str, tf.Module]] = None,
               keep_checkpoint_every_n_hours: Optional[int] = None,
               checkpoint_name: str = 'ckpt', step_counter: Optional[tf.Variable] = None,
               checkpoint_interval: Optional[int] = None,
               init_fn: Optional[Callable[[], None]] = None):
    super().__init__(checkpoint=checkpoint, directory=directory, max_to_keep=max_to_keep,
                     keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
                     checkpoint_name=checkpoint_name, step_counter=step_counter,
                     checkpoint_interval=checkpoint_interval, init_fn=init_fn)
    self._modules_to_export = modules_to_export
    self._savedmodels = self.get_existing_savedmodels()

  @property
  def modules_to_export(self) -> Optional[Mapping[str, tf.Module]]:
    """{name: module} exported with every checkpoint."""
    return self._modules_to_export

  @property
  def savedmodels(self) -> List[str]:
    """The SavedModel directories of the kept checkpoints, oldest first."""
    return self._savedmodels

  @property
  def latest_savedmodel(self) -> Optional[str]:
    """The newest SavedModel directory, or None."""
    return self._savedmodels[-1] if self._savedmodels else None

  def save(self, checkpoint_number: Optional[int] = None, check_interval: bool = True,
           options: Optional[tf.train.CheckpointOptions] = None) -> Optional[str]:
    """Saves a checkpoint (as the base class), then its SavedModels; returns the checkpoint's
    path (None when the interval skipped the save).

    The SavedModels are written to a `_temp` directory renamed when complete, so a reader never
    sees a half-written one. SavedModels whose checkpoint is gone are deleted.
    """
    path = super().save(checkpoint_number=checkpoint_number, check_interval=check_interval,
                        options=options)
    if not path:
      return None
    if not self._modules_to_export:
      logging.info('SavedModelCheckpointManager: no modules_to_export; saved %s only', path)
      return path
    target = make_saved_modules_directory_name(path)
    temporary = f'{target}_temp'
    for name, module in self._modules_to_export.items():
      signatures = getattr(module, 'saved_model_signatures', None)
      if signatures is not None:
        tf.saved_model.save(module, os.path.join(temporary, name), signatures=signatures)
    if tf.io.gfile.exists(temporary):
      if tf.io.gfile.exists(target):  # a checkpoint number saved again
        tf.io.gfile.rmtree(target)
      tf.io.gfile.rename(temporary, target)
    self._drop_unkept_savedmodels()
    return path

  def _drop_unkept_savedmodels(self) -> None:
    """Keeps the SavedModels of the kept checkpoints (in checkpoint order), deletes the others."""
    existing = set(self.get_existing_savedmodels())
    kept = [make_saved_modules_directory_name(c) for c in self.checkpoints]
    self._savedmodels = [path for path in kept if path in existing]
    for path in existing.difference(self._savedmodels):
      tf.io.gfile.rmtree(path)

  def get_existing_savedmodels(self) -> List[str]:
    """Every complete SavedModel directory of this manager's checkpoints in `directory`
    (in no particular order)."""
    pattern = make_saved_modules_directory_name(f'{self._checkpoint_prefix}-*')
    return [path for path in tf.io.gfile.glob(pattern)
            if path.endswith(SAVED_MODULES_PATH_SUFFIX)]

  def get_savedmodel_number_from_path(self, savedmodel_path: str) -> Optional[int]:
    """The checkpoint number (the global step with Orbit) of a SavedModel directory, or None.

    Example:
      >>> manager.get_savedmodel_number_from_path('/tmp/run/ckpt-30_saved_modules')   # 30
    """
    match = _NUMBER.search(savedmodel_path)
    return int(match.group(1)) if match else None

  def wait_for_new_savedmodel(self, last_savedmodel: Optional[str] = None,
                              seconds_to_sleep: float = 1.0,
                              timeout: Optional[float] = None) -> Optional[str]:
    """Waits for a SavedModel newer than `last_savedmodel` (the one of the smallest number
    above it), looking now and then every `seconds_to_sleep` seconds.

    Args:
      last_savedmodel: the last SavedModel seen; None: any SavedModel is new.
      seconds_to_sleep: the pause between two looks.
      timeout: give up (after a look) when the next look would come after `timeout` seconds;
        None: never.

    Returns:
      The SavedModel's directory, or None after the timeout.
    """
    logging.info('Waiting for a new SavedModel in %s', self.directory)
    deadline = None if timeout is None else time.time() + timeout
    last = -1
    if last_savedmodel:
      number = self.get_savedmodel_number_from_path(last_savedmodel)
      last = -1 if number is None else number
    while True:
      newer = {}
      for path in self.get_existing_savedmodels():
        number = self.get_savedmodel_number_from_path(path)
        if number is not None and number > last:
          newer[number] = path
      if newer:
        path = newer[min(newer)]
        logging.info('Found the SavedModel %s', path)
        return path
      if deadline is not None and time.time() + seconds_to_sleep > deadline:
        return None
      time.sleep(seconds_to_sleep)

  def savedmodels_iterator(self, min_interval_secs: float = 0, timeout: Optional[float] = None,
                           timeout_fn: Optional[Callable[[], bool]] = None) -> Iterator[str]:
    """Yields each new SavedModel directory as it appears (as `tf.train.checkpoints_iterator`).

    Args:
      min_interval_secs: at least this many seconds between two yields.
      timeout: the longest wait for the next SavedModel; None: forever.
      timeout_fn: called after a timeout; True ends the iteration, False waits again. Without
        it, the first timeout ends the iteration.

    Example:
      >>> for path in manager.savedmodels_iterator(timeout=60, timeout_fn=lambda: done):
      ...   evaluate(path)
    """
    last = None
    while True:
      path = self.wait_for_new_savedmodel(last, timeout=timeout)
      if path is None:
        if timeout_fn is None:
          logging.info('No new SavedModel within %s seconds; stopping', timeout)
          return
        if timeout_fn():
          return
        continue
      start = time.time()
      last = path
      yield path
      remaining = start + min_interval_secs - time.time()
      if remaining > 0:
        time.sleep(remaining)
