"""Saves an export module (`serving_modules`) as a SavedModel, weights read from a checkpoint.

Example:
  >>> module = serving_modules.Tagging(serving_modules.Tagging.Params(), model=model)
  >>> export_dir = export(module, {'serve': 'serving_default'}, '/tmp/exports',
  ...                     checkpoint_path='runs/tagging')
  >>> tf.saved_model.load(export_dir).signatures['serving_default']
"""

import logging
import os
import time
from typing import Any, Dict, List, Optional, Union

import tensorflow as tf

from official.core import checkpointing


def get_timestamped_export_dir(export_dir_base: str) -> bytes:
  """A new `<export_dir_base>/<unix seconds>` path (bytes) that does not exist yet.

  Raises:
    RuntimeError: every candidate second of the next 10 was taken.
  """
  for _ in range(10):
    path = os.path.join(export_dir_base, str(int(time.time())))
    if not tf.io.gfile.exists(path):
      return path.encode('utf-8')
    time.sleep(1)
  raise RuntimeError(f'no free timestamped directory under {export_dir_base!r} after 10 tries')


def export(export_module: Any, function_keys: Union[List[str], Dict[str, str]],
           export_savedmodel_dir: str, checkpoint_path: Optional[str] = None,
           timestamped: bool = True, module_key: Optional[str] = None,
           checkpoint_kwargs: Optional[Dict[str, Any]] = None) -> str:
  """Restores the module's model from a checkpoint and saves the module with its signatures.

  Args:
    export_module: a `serving_modules.ExportModule`.
    function_keys: `{function key: signature key}` (e.g. `{'serve': 'serving_default'}`), or a
      list of one function key, served as `serving_default`.
    export_savedmodel_dir: where to save (the parent of a timestamped directory by default).
    checkpoint_path: a checkpoint prefix or directory (its latest checkpoint); None keeps the
      model's current weights.
    timestamped: save into `<export_savedmodel_dir>/<unix seconds>`.
    module_key: read the model from this checkpoint key instead of `model`.
    checkpoint_kwargs: the objects to read, as `tf.train.Checkpoint` arguments (instead of
      `model`).

  Returns:
    The directory of the SavedModel.

  Raises:
    ValueError: a list of several function keys, or a checkpoint that does not fit the model.
    FileNotFoundError: `checkpoint_path` holds no checkpoint.
  """
  if checkpoint_path:
    prefix = checkpointing.resolve_checkpoint(checkpoint_path)
    if prefix is None:
      raise FileNotFoundError(f'checkpoint_path {checkpoint_path!r}: no checkpoint found')
    if module_key:
      checkpoint = tf.train.Checkpoint(**{module_key: export_module.model})
    elif checkpoint_kwargs:
      checkpoint = tf.train.Checkpoint(**checkpoint_kwargs)
    else:
      checkpoint = tf.train.Checkpoint(model=export_module.model)
    start = time.monotonic()
    checkpoint.read(prefix).expect_partial().assert_existing_objects_matched()
    logging.info('restored %s in %.1f s', prefix, time.monotonic() - start)
  if isinstance(function_keys, (list, tuple)):
    if len(function_keys) != 1:
      raise ValueError(f'function_keys as a list must hold one key (served as serving_default), '
                       f'found {list(function_keys)}; give a dict to name several signatures')
    function_keys = {function_keys[0]: tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY}
  export_dir = (get_timestamped_export_dir(export_savedmodel_dir).decode('utf-8') if timestamped
                else export_savedmodel_dir)
  start = time.monotonic()  # tracing the signatures and writing the variables: the slow part
  logging.info('saving the signatures %s to %s', ', '.join(sorted(function_keys.values())),
               export_dir)
  signatures = export_module.get_inference_signatures(function_keys)
  tf.saved_model.save(export_module, export_dir, signatures=signatures)
  logging.info('saved the SavedModel in %.1f s', time.monotonic() - start)
  return export_dir
