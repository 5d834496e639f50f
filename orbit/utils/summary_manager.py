"""Writes (nested) dicts of metrics as TensorBoard summaries, one writer per subdirectory.

Writers are created on first use, so a directory appears only once something is written to it.
`tf.summary.scalar` lives in the TensorBoard package; without it this module installs a
replacement writing the same scalar events with TensorFlow's core `tf.summary.write`.

Example:
  >>> manager = SummaryManager('/tmp/run/train', scalar_summary, global_step=step)
  >>> manager.write_summaries({'loss': 0.5, 'squad': {'f1': 88.0}})   # squad/ is a subdirectory
  >>> manager.flush()
"""

import logging
import os
from typing import Any, Callable, Dict, Optional

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from orbit.utils import summary_manager_interface

# TensorBoard's scalars plugin reads summaries tagged with this metadata.
_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name='scalars'))


def scalar_summary(name: str, data: Any, step: Optional[Any] = None,
                   description: Optional[str] = None) -> Any:
  """Writes one scalar summary to the default writer (TensorBoard's `tf.summary.scalar` format).

  Values that are not scalars (images, vectors) are skipped with a log line.

  Args:
    name: the tag.
    data: a scalar (Python number, numpy value or tensor).
    step: the step (None: the default writer's step).
    description: unused (kept for `tf.summary.scalar`'s signature).

  Returns:
    Whether the summary was written (a bool tensor, False when nothing was recorded).
  """
  del description
  if isinstance(data, (tf.Tensor, tf.Variable)):
    if data.shape.rank not in (0, None) and data.shape.num_elements() != 1:
      logging.info('summary %s: not a scalar (shape %s); skipped', name, data.shape)
      return tf.constant(False)
    value = tf.reshape(tf.cast(data, tf.float32), [])
  else:
    array = np.asarray(data)
    if array.size != 1 or not np.issubdtype(array.dtype, np.number) and array.dtype != bool:
      logging.info('summary %s: not a numeric scalar (%r); skipped', name, type(data).__name__)
      return tf.constant(False)
    value = tf.constant(float(array.reshape(())), tf.float32)
  return tf.summary.write(name, value, step=step, metadata=_SCALAR_METADATA)


def _install_scalar_fallback() -> None:
  """Makes `tf.summary.scalar` usable when TensorBoard is not installed."""
  try:
    # Function-level: probes for TensorBoard, an optional dependency.
    import tensorboard  # pylint: disable=g-import-not-at-top,unused-import  # noqa: F401
    return
  except ImportError:
    pass
  tf.summary.scalar = scalar_summary


_install_scalar_fallback()


class SummaryManager(summary_manager_interface.SummaryManagerInterface):
  """Writes summaries under `summary_dir` with `summary_fn` (e.g. `tf.summary.scalar`).

  Args:
    summary_dir: the directory (None: nothing is written; every writer is a no-op).
    summary_fn: `fn(name, value, step=...)` writing one summary.
    global_step: the step of the summaries (None: the default writer's step).
  """

  def __init__(self, summary_dir: Optional[str], summary_fn: Callable[..., Any],
               global_step: Optional[tf.Variable] = None):
    self._summary_dir = summary_dir
    self._summary_fn = summary_fn
    self._global_step = global_step
    self._writers: Dict[str, Any] = {}
    self._enabled = summary_dir is not None

  @property
  def summary_dir(self) -> Optional[str]:
    return self._summary_dir

  def summary_writer(self, relative_path: str = ''):
    """The writer of `summary_dir/relative_path`, created on first use."""
    if relative_path not in self._writers:
      if self._enabled:
        path = os.path.join(self._summary_dir, relative_path)
        self._writers[relative_path] = tf.summary.create_file_writer(path)
      else:
        self._writers[relative_path] = tf.summary.create_noop_writer()
    return self._writers[relative_path]

  def flush(self) -> None:
    if self._enabled:
      for writer in self._writers.values():
        writer.flush()

  def write_summaries(self, summary_dict: Dict[str, Any]) -> None:
    """Writes every leaf of `summary_dict`; nested dicts go to subdirectories."""
    if not self._enabled or not summary_dict:
      return
    self._write(summary_dict, '')

  def _write(self, summary_dict: Dict[str, Any], relative_path: str) -> None:
    leaves = {}
    for name, value in summary_dict.items():
      if isinstance(value, dict):
        self._write(value, os.path.join(relative_path, name))
      else:
        leaves[name] = value
    if not leaves:
      return
    with self.summary_writer(relative_path).as_default():
      for name, value in leaves.items():
        self._summary_fn(name, value, step=self._global_step)
