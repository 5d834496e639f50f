"""SavedModel export: the `ExportModule` base class and `export` (Model Garden's `export_base`).

An export module is a `tf.Module` that holds a model and the `tf.function`s that become the
SavedModel's signatures. A subclass writes `serve` (the inference function, composed of the
optional `preprocessor`, `inference_step` and optional `postprocessor`) and
`get_inference_signatures` ({signature key: concrete function}); `export` restores a checkpoint
into the model and saves the module.

Example:
  >>> class Module(ExportModule):
  ...   @tf.function
  ...   def serve(self, inputs):
  ...     return {'outputs': self.inference_step(inputs)}
  ...   def get_inference_signatures(self, function_keys):
  ...     spec = tf.TensorSpec([None, 4], tf.float32)
  ...     return {key: self.serve.get_concrete_function(spec) for key in function_keys.values()}
  >>> module = Module(params=None, model=tf_keras.layers.Dense(2))
  >>> export_dir = export(module, ['serve'], '/tmp/exports', checkpoint_path='/tmp/run')
  >>> tf.saved_model.load(export_dir).signatures['serving_default']
"""

import abc
import functools
import logging
import os
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

import tensorflow as tf
import tf_keras

# How many seconds `get_timestamped_export_dir` tries before giving up.
MAX_DIRECTORY_CREATION_ATTEMPTS = 10


class ExportModule(tf.Module, metaclass=abc.ABCMeta):
  """Base of the export modules: the model, the params and the inference pieces.

  Args:
    params: the module's parameters (any object, e.g. a config dataclass; may be None).
    model: the model (a Keras model or any `tf.Module`); its variables are saved.
    inference_step: called as `inference_step(inputs, model=model)`; default: a Keras model's
      `call(inputs)` (no Keras training-mode machinery), other modules' `model(inputs,
      training=False)`.
    preprocessor: an optional function or `tf.Module` `serve` may apply to the inputs first.
    postprocessor: an optional function or `tf.Module` `serve` may apply to the outputs.

  Example:
    >>> def step(inputs, model):
    ...   return tf.nn.softmax(model(inputs, training=False))
    >>> module = MyModule(params=None, model=classifier, inference_step=step)
  """

  def __init__(self, params: Any, model: Union[tf.Module, tf_keras.Model],
               inference_step: Optional[Callable[..., Any]] = None, *,
               preprocessor: Optional[Callable[..., Any]] = None,
               postprocessor: Optional[Callable[..., Any]] = None):
    super().__init__(name=None)
    self.model = model
    self.params = params
    if inference_step is not None:
      self.inference_step = functools.partial(inference_step, model=model)
    elif isinstance(model, tf_keras.Model):
      # `call` skips Keras' `__call__` machinery built for training (masks, training flags).
      self.inference_step = model.call
    else:
      self.inference_step = functools.partial(model.__call__, training=False)
    self.preprocessor = preprocessor
    self.postprocessor = postprocessor

  @abc.abstractmethod
  def serve(self, *args, **kwargs) -> Mapping[str, tf.Tensor]:
    """The inference function: tensors in (as keyword arguments), a dict of named tensors out."""

  @abc.abstractmethod
  def get_inference_signatures(self, function_keys: Dict[str, str]) -> Mapping[str, Any]:
    """{signature key: concrete function} for `function_keys` ({function key: signature key})."""


def export(export_module: ExportModule, function_keys: Union[List[str], Dict[str, str]],
           export_savedmodel_dir: str, checkpoint_path: Optional[str] = None,
           timestamped: bool = True,
           save_options: Optional[tf.saved_model.SaveOptions] = None,
           checkpoint: Optional[tf.train.Checkpoint] = None) -> str:
  """Restores the module's model from a checkpoint and saves the module as a SavedModel.

  Args:
    export_module: the `ExportModule`.
    function_keys: {function key: signature key}, or a list of one function key (served as
      `serving_default`).
    export_savedmodel_dir: where to save; with `timestamped`, the parent of a new
      `<unix seconds>` directory.
    checkpoint_path: a checkpoint prefix or a directory (its latest checkpoint); None or a
      directory without checkpoints keeps the model's current weights.
    timestamped: save into a new timestamped subdirectory.
    save_options: passed to `tf.saved_model.save`.
    checkpoint: the checkpoint object to read (default: `tf.train.Checkpoint(model=model)`).

  Returns:
    The SavedModel's directory.

  Raises:
    ValueError: a list of several function keys.
    AssertionError: the checkpoint does not hold the model's variables.
  """
  prefix = checkpoint_path
  if prefix is not None and tf.io.gfile.isdir(prefix):
    prefix = tf.train.latest_checkpoint(prefix)
  if prefix:
    checkpoint = checkpoint or tf.train.Checkpoint(model=export_module.model)
    checkpoint.read(prefix).assert_existing_objects_matched().expect_partial()
    logging.info('export: restored %s', prefix)
  if isinstance(function_keys, (list, tuple)):
    if len(function_keys) != 1:
      raise ValueError('function_keys: a list must hold exactly one function key (served as '
                       f'serving_default), found {list(function_keys)}; pass a dict '
                       '{function key: signature key} for several')
    function_keys = {function_keys[0]: tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY}
  signatures = export_module.get_inference_signatures(function_keys)
  export_dir = (get_timestamped_export_dir(export_savedmodel_dir).decode('utf-8') if timestamped
                else export_savedmodel_dir)
  tf.saved_model.save(export_module, export_dir, signatures=signatures, options=save_options)
  logging.info('export: saved the signatures %s to %s', sorted(signatures), export_dir)
  return export_dir


def get_timestamped_export_dir(export_dir_base: str) -> bytes:
  """A path `<export_dir_base>/<unix seconds>` (as bytes) that does not exist yet.

  The directory is not created. When the current second's directory exists, waits for the next
  second, up to `MAX_DIRECTORY_CREATION_ATTEMPTS` times.

  Raises:
    RuntimeError: every attempt found an existing directory.

  Example:
    >>> get_timestamped_export_dir('/tmp/exports')   # b'/tmp/exports/1767225600'
  """
  base = export_dir_base.decode('utf-8') if isinstance(export_dir_base, bytes) else export_dir_base
  for attempt in range(MAX_DIRECTORY_CREATION_ATTEMPTS):
    path = os.path.join(base, str(int(time.time())))
    if not tf.io.gfile.exists(path):
      return path.encode('utf-8')
    logging.warning('export directory %s exists; waiting a second (attempt %d of %d)', path,
                    attempt + 1, MAX_DIRECTORY_CREATION_ATTEMPTS)
    time.sleep(1)
  raise RuntimeError(f'export_dir_base {base!r}: every timestamped directory tried in '
                     f'{MAX_DIRECTORY_CREATION_ATTEMPTS} seconds exists already')
