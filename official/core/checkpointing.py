"""Checkpoints of a run, in one place: saving (finite only), restoring (falling back to the previous
checkpoint), `init_checkpoint` restores, and the checks and listings they need.

- `FiniteCheckpointManager`: a `tf.train.CheckpointManager` that never writes NaN or Inf and turns
  write failures into one-line `CheckpointWriteError`s.
- `restore_latest`: the newest readable checkpoint of a directory (a truncated or corrupt latest one
  is skipped for the one before it).
- `resolve_checkpoint`, `read_items`, `read_items_if_compatible`: `task.init_checkpoint` restores
  (strict with a one-line error, or lenient for optional heads).
- `newest_finite_checkpoint`: the sentence a stopped run ends with.
Model Garden's checkpoint keys come from `official.modeling.checkpoint_compat`; the best checkpoint
is kept by `best_checkpoint.BestCheckpointExporter`.

Example:
  >>> manager = FiniteCheckpointManager(checkpoint, model_dir, max_to_keep=5, step_counter=step)
  >>> restore_latest(checkpoint, model_dir)      # 'model_dir/ckpt-900' (or None: nothing saved)
  >>> manager.save()                             # raises TrainingStopped on NaN weights
"""

import logging
import os
import re
import shutil
from typing import Any, List, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from official.core import progress


class TrainingStopped(RuntimeError):
  """Training cannot go on (a non-finite or too large loss, non-finite weights, every step of a
  loop skipped); the message says why and names the newest finite checkpoint."""


class CheckpointWriteError(OSError):
  """A checkpoint could not be written (disk full, read-only directory); the message names it."""


# ---- finite weights ----------------------------------------------------------------------------
@tf.function
def _all_finite(variables: List[tf.Variable]) -> tf.Tensor:
  return tf.reduce_all(tf.stack([tf.reduce_all(tf.math.is_finite(v)) for v in variables]))


def checkpoint_variables(checkpoint: tf.train.Checkpoint) -> List[tf.Variable]:
  """The floating-point variables `checkpoint` saves (model weights, optimizer slots, ...).

  Example:
    >>> checkpoint_variables(tf.train.Checkpoint(model=model, optimizer=optimizer))
  """
  variables, seen = [], set()
  for trackable in tf.train.TrackableView(checkpoint).descendants():
    if isinstance(trackable, tf.Variable) and trackable.dtype.is_floating and (
        id(trackable) not in seen):
      seen.add(id(trackable))
      variables.append(trackable)
  return variables


def variables_are_finite(variables: Sequence[tf.Variable]) -> bool:
  """Whether every element of `variables` is finite (no NaN, no Inf): one fused reduction on the
  devices, one boolean to the host; integer variables are skipped.

  Example:
    >>> variables_are_finite(model.variables)   # False after a NaN update
  """
  floats = [v for v in variables if v.dtype.is_floating]
  if not floats:
    return True
  return bool(_all_finite(floats).numpy())


def checkpoint_is_finite(checkpoint: tf.train.Checkpoint) -> bool:
  """Whether the variables `checkpoint` would save are all finite (check before saving).

  Example:
    >>> if checkpoint_is_finite(checkpoint): manager.save()
  """
  return variables_are_finite(checkpoint_variables(checkpoint))


def checkpoint_file_is_finite(path: str) -> bool:
  """Whether every floating-point tensor of the saved checkpoint `path` (a prefix) is finite.

  Reads the whole checkpoint: meant for a few checkpoints when a run stops, not per step.

  Raises:
    tf.errors.OpError: the checkpoint cannot be read.

  Example:
    >>> checkpoint_file_is_finite('/tmp/run/ckpt-100')
  """
  reader = tf.train.load_checkpoint(path)
  for name, dtype in reader.get_variable_to_dtype_map().items():
    if not dtype.is_floating:
      continue
    values = np.asarray(reader.get_tensor(name))
    if values.dtype.kind != 'f':  # bfloat16 (ml_dtypes)
      values = values.astype(np.float32)
    if not np.all(np.isfinite(values)):
      return False
  return True


# ---- listing -----------------------------------------------------------------------------------
def checkpoint_step(path: str) -> int:
  """The step in a checkpoint prefix's name (`.../ckpt-250` -> 250); -1 when it has none."""
  tail = path.rsplit('-', 1)[-1]
  return int(tail) if tail.isdigit() else -1


def checkpoints_newest_first(model_dir: str) -> List[str]:
  """The checkpoint prefixes of `model_dir`, the newest (highest step) first.

  Read from the `checkpoint` state file; when it is unreadable, from the `*.index` files.
  """
  paths = []
  try:
    state = tf.train.get_checkpoint_state(model_dir)
    if state is not None:
      paths = list(state.all_model_checkpoint_paths) or [state.model_checkpoint_path]
  except Exception:  # pylint: disable=broad-except
    logging.warning('The checkpoint state file of %s cannot be read; listing ckpt-*.index',
                    model_dir)
  if not paths:
    paths = [p[:-len('.index')] for p in tf.io.gfile.glob(os.path.join(model_dir, '*.index'))]
  return sorted(set(paths), key=checkpoint_step, reverse=True)


def newest_finite_checkpoint(model_dir: str, verified: Optional[set] = None) -> str:
  """'The newest finite checkpoint is <path> (step N); ...' (or that there is none), checking the
  checkpoints of `model_dir` newest first; those in `verified` were checked when written."""
  for path in checkpoints_newest_first(model_dir):
    if path not in (verified or ()):
      try:
        if not checkpoint_file_is_finite(path):
          logging.warning('checkpoint %s holds NaN or Inf', path)
          continue
      except (tf.errors.OpError, ValueError, IndexError):
        continue
    step = path.rsplit('-', 1)[-1]
    return f'The newest finite checkpoint is {path} (step {step}); a rerun resumes from it.'
  return (f'There is no finite checkpoint in {model_dir}: a rerun starts from the initial '
          'weights.')


def read_global_step_from_checkpoint(ckpt_file_path: str) -> int:
  """The `global_step` saved in a checkpoint (a prefix or a directory: its latest).

  Raises:
    ValueError: no checkpoint there, or it has no global_step.
  """
  path = ckpt_file_path
  if tf.io.gfile.isdir(path):
    path = tf.train.latest_checkpoint(path)
    if path is None:
      raise ValueError(f'no checkpoint in {ckpt_file_path}')
  reader = tf.train.load_checkpoint(path)
  for key in reader.get_variable_to_shape_map():
    if key.startswith('global_step/'):
      return int(reader.get_tensor(key))
  raise ValueError(f'checkpoint {path} has no global_step')


def remove_ckpts(model_dir: str) -> None:
  """Removes the checkpoints (`ckpt-*` and the `checkpoint` state file) of `model_dir`."""
  for path in tf.io.gfile.glob(os.path.join(model_dir, 'ckpt-*')):
    tf.io.gfile.remove(path)
  state = os.path.join(model_dir, 'checkpoint')
  if tf.io.gfile.exists(state):
    tf.io.gfile.remove(state)


# ---- saving ------------------------------------------------------------------------------------
def _os_reason(error: Exception) -> str:
  """The operating system's reason in a TensorFlow or OS error ('No space left on device')."""
  if isinstance(error, OSError) and error.strerror:
    return error.strerror
  text = str(getattr(error, 'message', None) or error).strip()
  text = re.sub(r'\{\{.*?\}\}\s*', '', text)
  text = re.sub(r'\s*\[Op:\w+\]', '', text).strip()
  text = text.splitlines()[0] if text else type(error).__name__
  return text.rsplit('; ', 1)[-1]


class FiniteCheckpointManager(tf.train.CheckpointManager):
  """A `tf.train.CheckpointManager` that never writes NaN or Inf.

  Before every save that the interval lets through, one reduction over the checkpoint's
  floating-point variables checks they are finite; a non-finite one raises `TrainingStopped`
  instead of being written. Write failures raise `CheckpointWriteError` naming the checkpoint.
  `verified` holds the checkpoints this process wrote (known finite); `saves` and
  `save_seconds` count the saves that wrote a checkpoint and their time.
  """

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    if not hasattr(self, '_step_counter'):  # the base class keeps them with an interval only
      self._step_counter = None
      self._last_checkpoint_step = None
    self.verified = set()
    self.save_seconds = 0.0
    self.saves = 0

  def _interval_passed(self) -> bool:
    # As `CheckpointManager.save(check_interval=True)` decides, without saving.
    last, interval = self._last_checkpoint_step, self._checkpoint_interval  # pylint: disable=protected-access
    if interval is None or last is None or self._step_counter is None:
      return True
    return int(self._step_counter.numpy()) >= last + interval

  def count_interval_from(self, step: Optional[int]) -> None:
    """The next interval checkpoint comes `checkpoint_interval` steps after `step` (e.g. the
    restored step; the base class would save after the first loop); None: at the next save."""
    self._last_checkpoint_step = step  # pylint: disable=protected-access

  def set_checkpoint_interval(self, steps: int) -> None:
    """Interval checkpoints every `steps` steps from now on (a time-budgeted run rescales it to
    its plan)."""
    if steps < 1:
      raise ValueError(f'checkpoint interval: expected >= 1 steps, found {steps}')
    self._checkpoint_interval = int(steps)  # pylint: disable=protected-access

  def save(self, checkpoint_number=None, check_interval: bool = True, options=None):
    if check_interval and not self._interval_passed():
      return None
    start = progress.now()
    if not checkpoint_is_finite(self.checkpoint):
      step = int(self._step_counter.numpy()) if self._step_counter is not None else None
      newest = newest_finite_checkpoint(self.directory, self.verified)
      raise TrainingStopped(f'the weights (or optimizer state) hold NaN or Inf at step {step}: '
                            f'no checkpoint of them was written; stopping. {newest}')
    try:
      path = super().save(checkpoint_number=checkpoint_number, check_interval=check_interval,
                          options=options)
    except (tf.errors.OpError, OSError) as e:
      number = checkpoint_number if checkpoint_number is not None else self._step_counter
      prefix = self._checkpoint_prefix  # pylint: disable=protected-access
      if number is not None:
        prefix = f'{prefix}-{int(number)}'
      # A failed save leaves `<prefix>_temp/` behind; on a full disk its space matters.
      shutil.rmtree(f'{prefix}_temp', ignore_errors=True)
      raise CheckpointWriteError(f'cannot write checkpoint {prefix}: {_os_reason(e)}') from None
    if path:
      self.verified.add(path)
      self.save_seconds += progress.now() - start
      self.saves += 1
    return path

  def save_at(self, step: int) -> str:
    """Saves at `step` now, whatever the interval (unless the latest checkpoint is of `step`);
    returns the checkpoint's path."""
    latest = self.latest_checkpoint
    if latest is None or not latest.endswith(f'-{step}'):
      self.count_interval_from(None)
      latest = self.save(checkpoint_number=step, check_interval=False)
    return latest


# ---- restoring ---------------------------------------------------------------------------------
def restore_latest(checkpoint: tf.train.Checkpoint, model_dir: str) -> Optional[str]:
  """Restores the newest readable checkpoint of `model_dir` into `checkpoint`.

  A truncated or corrupt latest checkpoint is skipped with a warning and the one before it is
  restored instead (then the one before that, and so on).

  Returns:
    The restored checkpoint's path; None when `model_dir` holds no checkpoint.

  Raises:
    ValueError: there are checkpoints, but none can be read (naming each with its error).
  """
  errors = []
  paths = checkpoints_newest_first(model_dir)
  for path in paths:
    try:
      checkpoint.restore(path).expect_partial()
    except (tf.errors.OpError, IndexError) as e:  # truncated or corrupt files
      first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
      errors.append(f'{os.path.basename(path)}: {first_line}')
      logging.warning('checkpoint %s cannot be read (%s); falling back to the previous one',
                      path, first_line)
      continue
    return path
  if paths:
    raise ValueError(f'no checkpoint in {model_dir} can be read ({"; ".join(errors)}); '
                     'move them away to start over')
  return None


def resolve_checkpoint(path: str) -> Optional[str]:
  """The checkpoint prefix of `path`: a directory's latest checkpoint, or `path` itself.

  An existing directory that holds no checkpoint yet gives None with a warning (nothing to restore,
  as in Model Garden, whose tests point `init_checkpoint` at an empty temporary directory).

  Raises:
    FileNotFoundError: naming `path` (as `task.init_checkpoint`) when `path` is neither a directory
      nor a checkpoint prefix.

  Example:
    >>> resolve_checkpoint('runs/bert_mini')  # 'runs/bert_mini/ckpt-1000'
  """
  if tf.io.gfile.isdir(path):
    prefix = tf.train.latest_checkpoint(path)
    if prefix is None and not tf.io.gfile.exists(f'{path.rstrip("/")}/checkpoint'):
      logging.warning(
          'task.init_checkpoint %r: the directory holds no checkpoint; nothing restored', path)
      return None
  else:
    prefix = path
  if not prefix or not tf.io.gfile.exists(f'{prefix}.index'):
    raise FileNotFoundError(f'task.init_checkpoint {path!r}: no checkpoint found')
  return prefix


class _UnrestoredValuesFilter(logging.Filter):
  """Drops TensorFlow's warnings about the values a half-read checkpoint left unrestored (one line
  a variable and slot, printed when it is freed, often at exit: hundreds of lines after the
  one-line error)."""
  _PREFIXES = ('Value in checkpoint could not be found in the restored object',
               'Detecting that an object or model or tf.train.Checkpoint is being deleted with '
               'unrestored values')

  def filter(self, record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith(self._PREFIXES)


_UNRESTORED_FILTER = _UnrestoredValuesFilter()


def read_items(ckpt_path: str, items: Mapping[str, Any], hint: str = '') -> None:
  """Restores `items` (`{checkpoint key: object}`) from `ckpt_path`; every object must match.

  Args:
    ckpt_path: a checkpoint prefix (see `resolve_checkpoint`).
    items: the objects to restore, by their key at the top of the checkpoint.
    hint: appended to the error's question (what the checkpoint should be).

  Raises:
    ValueError: one line naming the checkpoint and the items, when a variable is missing or of
      another shape (TensorFlow's warnings about the half-read checkpoint are filtered).

  Example:
    >>> read_items('runs/bert_mini/ckpt-1000', {'encoder': model.checkpoint_items['encoder']})
  """
  try:
    status = tf.train.Checkpoint(**items).read(ckpt_path)
    status.expect_partial().assert_existing_objects_matched()
  except (AssertionError, ValueError) as e:
    tf_logger = logging.getLogger('tensorflow')
    if _UNRESTORED_FILTER not in tf_logger.filters:
      tf_logger.addFilter(_UNRESTORED_FILTER)
    raise ValueError(f'task.init_checkpoint {ckpt_path!r}: cannot restore {sorted(items)} into the '
                     f'model{hint}: {str(e).splitlines()[0]}') from None
  logging.info('Restored %s from %s', sorted(items), ckpt_path)


def read_items_if_compatible(ckpt_path: str, name: str, item: Any) -> bool:
  """Restores `item` saved under `name`; on a missing or mismatched variable leaves it unchanged.

  Returns:
    Whether it was restored.
  """
  variables = list(getattr(item, 'variables', []))
  before = [v.numpy() for v in variables]
  try:
    status = tf.train.Checkpoint(**{name: item}).read(ckpt_path)
    status.expect_partial().assert_existing_objects_matched()
    return True
  except (AssertionError, ValueError, tf.errors.OpError):
    for variable, value in zip(variables, before):
      variable.assign(value)
    return False


def dropout_random_state(model: tf_keras.Model) -> tf.Module:
  """The `tf.random.Generator`s of the model's dropout layers, as one checkpointable module.

  With `tf_keras.backend.experimental.enable_tf_random_generator()` (`runtime.deterministic`)
  Keras draws dropout masks from generators, but leaves their state out of checkpoints; saving it
  lets a resumed run draw the masks an uninterrupted run would have drawn.
  """
  generators, seen = [], set()
  for layer in [model] + list(model.submodules):
    generator = getattr(getattr(layer, '_random_generator', None), '_generator', None)
    if isinstance(generator, tf.random.Generator) and id(generator) not in seen:
      seen.add(id(generator))
      generators.append(generator)
  state = tf.Module(name='dropout_random_state')
  state.generators = generators
  return state
