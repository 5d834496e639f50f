"""Helpers of the training driver: building params from flags, `params.yaml`, chief/worker dirs.

Example:
  >>> params = build_params('bert/pretraining', ['configs/pretraining/bert_tiny.yaml'],
  ...                       'trainer.train_steps=10')
  >>> write_params(params, '/tmp/model_dir')
"""

import dataclasses
import json
import logging
import os
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np
import orbit
import tensorflow as tf
import tf_keras
import yaml

from official.common import file_utils
from official.common import nested
from official.core import best_checkpoint
from official.core import checkpointing
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.modeling import hyperparams

# Model Garden's names in this module, kept where they live now.
BestCheckpointExporter = best_checkpoint.BestCheckpointExporter
maybe_create_best_ckpt_exporter = best_checkpoint.maybe_create_best_ckpt_exporter
get_leaf_nested_dict = nested.get_leaf_nested_dict
cast_leaf_nested_dict = nested.cast_leaf_nested_dict
read_global_step_from_checkpoint = checkpointing.read_global_step_from_checkpoint
remove_ckpts = checkpointing.remove_ckpts


def build_params(experiment: str, config_files: Sequence[str] = (),
                 params_override: Optional[str] = None,
                 complete: Optional[Callable[[cfg.ExperimentConfig], Any]] = None
                 ) -> cfg.ExperimentConfig:
  """Experiment defaults < each config file in order < `params_override`; then validated.

  Args:
    experiment: a registered experiment.
    config_files: YAML files, applied in order.
    params_override: `--params_override` text.
    complete: called with the parsed config before it is validated, to fill in fields from
      elsewhere (e.g. the records' metadata: `official.nlp.configs.record_fields`).

  Raises:
    KeyError: an unknown experiment (listing the registered ones).
    FileNotFoundError: a missing config file.
    hyperparams.ConfigError: a bad key or value, naming its full path.
  """
  options = ParseConfigOptions(experiment=experiment, config_file=list(config_files or ()),
                               params_override=params_override)
  if complete is None:
    return parse_configuration(options, lock_return=False, print_return=False)
  params = ExperimentParser(options).parse()
  complete(params)
  params.validate()
  return params


def serialize_config(params: cfg.ExperimentConfig, model_dir: str) -> str:
  """Writes `model_dir/params.yaml` (Model Garden's name for `write_params`); returns its path."""
  return write_params(params, model_dir)


def write_params(params: cfg.ExperimentConfig, model_dir: str) -> str:
  """Writes `model_dir/params.yaml`; returns its path."""
  tf.io.gfile.makedirs(model_dir)
  path = os.path.join(model_dir, 'params.yaml')
  hyperparams.save_params_dict_to_yaml(params, path)
  return path


def is_chief(strategy: Optional[tf.distribute.Strategy] = None) -> bool:
  """Whether this process writes checkpoints and summaries (always true without multi-worker)."""
  strategy = strategy or tf.distribute.get_strategy()
  resolver = getattr(strategy, 'cluster_resolver', None)
  if resolver is None or not resolver.cluster_spec().as_dict():
    return True
  task_type, task_id = resolver.task_type, resolver.task_id
  if task_type == 'chief':
    return True
  has_chief = 'chief' in resolver.cluster_spec().as_dict()
  return task_type == 'worker' and task_id == 0 and not has_chief


def is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
  """Whether `strategy` runs on several workers (a MultiWorkerMirroredStrategy with a cluster)."""
  resolver = getattr(strategy, 'cluster_resolver', None)
  return bool(resolver is not None and resolver.cluster_spec().jobs and
              isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy))


def check_model_dir(model_dir: str) -> None:
  """Creates `model_dir` when missing and checks that training can write into it.

  Raises:
    ValueError: one line naming `model_dir` when it is a file, cannot be created or is not
      writable.

  Example:
    >>> check_model_dir('/tmp/run')
  """
  if file_utils.is_remote(model_dir):  # remote file systems: their own errors
    tf.io.gfile.makedirs(model_dir)
    return
  if os.path.exists(model_dir) and not os.path.isdir(model_dir):
    raise ValueError(f'--model_dir={model_dir}: expected a directory, found a file')
  try:
    os.makedirs(model_dir, exist_ok=True)
  except OSError as e:
    raise ValueError(f'--model_dir={model_dir}: cannot create the directory '
                     f'({e.strerror or e})') from None
  if not os.access(model_dir, os.W_OK | os.X_OK):
    raise ValueError(f'--model_dir={model_dir}: expected a writable directory, found one that '
                     'is not writable')


def writable_dir(model_dir: str, strategy: Optional[tf.distribute.Strategy] = None) -> str:
  """`model_dir` for the chief; a private temporary directory for other workers.

  Multi-worker checkpointing needs every worker to save, but only the chief's files are kept.
  """
  if is_chief(strategy):
    return model_dir
  return tempfile.mkdtemp(prefix='mlm_garden_worker_')


# Keys of params.yaml that may change between runs in one model_dir without changing what is being
# trained: run length, intervals, devices, evaluation. Prefixes end with '.'.
RESUMABLE_CHANGES = (
    'runtime.', 'task.validation_data.', 'task.init_checkpoint', 'trainer.train_steps',
    'trainer.steps_per_loop', 'trainer.summary_interval', 'trainer.checkpoint_interval',
    'trainer.max_to_keep', 'trainer.validation_steps', 'trainer.validation_interval',
    'trainer.validation_summary_subdir', 'trainer.continuous_eval_timeout',
    'trainer.train_tf_function', 'trainer.eval_tf_function', 'trainer.loss_upper_bound',
    'trainer.best_checkpoint_', 'trainer.preemption_on_demand_checkpoint',
    'trainer.recovery_', 'trainer.skip_nonfinite_steps')


def config_differences(old: Dict[str, Any], new: Dict[str, Any]) -> List[str]:
  """`key: old -> new` for every key of both nested dicts whose values differ and whose change
  is not in `RESUMABLE_CHANGES`, sorted by key."""
  old_flat, new_flat = nested.flatten(old), nested.flatten(new)
  lines = []
  for key in sorted(set(old_flat) & set(new_flat)):
    if old_flat[key] != new_flat[key] and not key.startswith(RESUMABLE_CHANGES):
      lines.append(f'{key}: {old_flat[key]!r} -> {new_flat[key]!r}')
  return lines


def check_config_compatible(params: cfg.ExperimentConfig, model_dir: str,
                            allow_config_change: bool = False) -> None:
  """Refuses to train in a `model_dir` whose `params.yaml` trains something else.

  Run length, intervals, devices and evaluation settings may change (`RESUMABLE_CHANGES`); any
  other difference (model, optimizer, training data, ...) raises unless `allow_config_change`.

  Raises:
    ValueError: listing each differing key with its old and new value.

  Example:
    >>> check_config_compatible(params, '/tmp/run')   # params.yaml says num_layers 2, params 4
    ValueError: --model_dir=/tmp/run holds a run with another config (/tmp/run/params.yaml):
      task.model.encoder.bert.num_layers: 2 -> 4; pass --allow_config_change to train anyway ...
  """
  path = os.path.join(model_dir, 'params.yaml')
  if not tf.io.gfile.exists(path):
    return
  with tf.io.gfile.GFile(path) as f:
    old = yaml.safe_load(f) or {}
  new = yaml.safe_load(yaml.safe_dump(params.as_dict()))  # the types params.yaml has
  differences = config_differences(old, new)
  if not differences:
    return
  listing = '; '.join(differences)
  if allow_config_change:
    logging.warning('--allow_config_change: training in %s although its params.yaml differs: %s',
                    model_dir, listing)
    return
  raise ValueError(f'--model_dir={model_dir} holds a run with another config ({path}): '
                   f'{listing}. Pass --allow_config_change to train with the new config anyway, '
                   'or choose another --model_dir.')


def apply_runtime_determinism(runtime: cfg.RuntimeConfig) -> None:
  """Seeds Python, NumPy and TensorFlow (`runtime.seed`, 0 when only `deterministic` is set) and,
  with `runtime.deterministic`, enables deterministic TensorFlow ops and makes Keras draw dropout
  masks from `tf.random.Generator`s, whose state is saved in checkpoints (a resumed run then
  draws the masks the uninterrupted run would have drawn). Call before building the model.
  """
  if runtime.deterministic or runtime.seed is not None:
    tf_keras.utils.set_random_seed(runtime.seed if runtime.seed is not None else 0)
  if runtime.deterministic:
    tf.config.experimental.enable_op_determinism()
    tf_keras.backend.experimental.enable_tf_random_generator()


# ---- Model Garden's parsing API ------------------------------------------------------------------
@dataclasses.dataclass
class ParseConfigOptions:
  """The flag values `parse_configuration` reads, for callers without absl flags.

  Example:
    >>> options = ParseConfigOptions(experiment='bert/pretraining', config_file=['a.yaml'],
    ...                              params_override='trainer.train_steps=10')
    >>> params = parse_configuration(options)
  """
  experiment: str
  config_file: List[str]
  tpu: str = ''
  tf_data_service: str = ''
  params_override: str = ''

  def __contains__(self, name: str) -> bool:
    return name in dataclasses.asdict(self)


class ExperimentParser:
  """Builds the experiment config from flags (or `ParseConfigOptions`) step by step:
  experiment defaults < config files < `--tpu` < `--tf_data_service` < params_override.

  Subclass and override a step to customize parsing.

  Example:
    >>> params = ExperimentParser(flags.FLAGS).parse()
  """

  def __init__(self, flags_obj: Any):
    self._flags_obj = flags_obj

  def _flag(self, name: str, default: Any = None) -> Any:
    return getattr(self._flags_obj, name, default)

  def parse(self) -> cfg.ExperimentConfig:
    """All steps in order; the result is not validated yet."""
    params = self.base_experiment()
    params = self.parse_config_file(params)
    params = self.parse_runtime(params)
    params = self.parse_data_service(params)
    return self.parse_params_override(params)

  def base_experiment(self) -> cfg.ExperimentConfig:
    """The registered experiment's default config.

    Raises:
      ValueError: no experiment was given.
    """
    if not self._flag('experiment'):
      raise ValueError('The flag --experiment must be specified.')
    return exp_factory.get_exp_config(self._flag('experiment'))

  def parse_config_file(self, params: cfg.ExperimentConfig) -> cfg.ExperimentConfig:
    """Applies every `--config_file` in order (strictly: unknown keys raise)."""
    for path in self._flag('config_file') or ():
      try:
        params.override(hyperparams.read_yaml(path), is_strict=True)
      except hyperparams.ConfigError as e:
        raise hyperparams.ConfigError(e.path, f'{e.message} (in {path})') from None
    return params

  def parse_runtime(self, params: cfg.ExperimentConfig) -> cfg.ExperimentConfig:
    """Sets `runtime.tpu` from `--tpu` when given."""
    if self._flag('tpu'):
      params.override({'runtime': {'tpu': self._flag('tpu')}})
    return params

  def parse_data_service(self, params: cfg.ExperimentConfig) -> cfg.ExperimentConfig:
    """Sets the data configs' `tf_data_service_address` from `--tf_data_service` when given
    (mlm-garden refuses the value when the config is validated)."""
    address = self._flag('tf_data_service')
    if address and isinstance(params.task, cfg.TaskConfig):
      params.override({'task': {'train_data': {'tf_data_service_address': address},
                                'validation_data': {'tf_data_service_address': address}}})
    return params

  def parse_params_override(self, params: cfg.ExperimentConfig) -> cfg.ExperimentConfig:
    """Applies `--params_override` (strictly)."""
    hyperparams.override_params_dict(params, self._flag('params_override'), is_strict=True)
    return params


def parse_configuration(flags_obj: Any, lock_return: bool = True,
                        print_return: bool = True) -> cfg.ExperimentConfig:
  """The validated experiment config from flags with `experiment`, `config_file`,
  `params_override` (and optionally `tpu`, `tf_data_service`); Model Garden's entry point.

  Args:
    flags_obj: absl `FLAGS` or a `ParseConfigOptions`.
    lock_return: lock the config (a later `override` raises).
    print_return: log the final config.

  Example:
    >>> params = parse_configuration(ParseConfigOptions('bert/pretraining', []), lock_return=False)
  """
  params = ExperimentParser(flags_obj).parse()
  params.validate()
  if lock_return and hasattr(params, 'lock'):
    params.lock()
  if print_return:
    logging.info('Final experiment parameters:\n%s', yaml.safe_dump(params.as_dict()))
  return params


# ---- models and checkpoints ----------------------------------------------------------------------
def write_model_params(model: Union[tf.Module, tf_keras.Model], output_path: str) -> None:
  """Writes one line `name [shape]` per model variable, then `Total params: N`.

  Example:
    >>> write_model_params(model, '/tmp/run/model_params.txt')
  """
  total = 0
  with tf.io.gfile.GFile(output_path, 'w') as f:
    for variable in model.variables:
      shape = variable.shape.as_list()
      total += int(np.prod(shape))
      f.write(f'{variable.name} {shape}\n')
    f.write(f'\nTotal params: {total}\n')


def try_count_params(model: Union[tf.Module, tf_keras.Model],
                     trainable_only: bool = False) -> Optional[int]:
  """The number of (trainable) parameters of `model`, or None when it cannot be counted (e.g.
  a Keras model that is not built yet)."""
  try:
    variables = model.trainable_variables if trainable_only else model.variables
    return int(sum(np.prod(v.shape.as_list()) for v in variables))
  except (ValueError, TypeError, AttributeError):
    return None


def write_json_summary(log_dir: str, global_step: int, eval_metrics: Dict[str, Any]) -> str:
  """Writes the scalar eval metrics to `log_dir/metrics-<global_step>.json`; returns the path."""
  tf.io.gfile.makedirs(log_dir)
  path = os.path.join(log_dir, f'metrics-{int(global_step)}.json')
  with tf.io.gfile.GFile(path, 'w') as f:
    f.write(json.dumps(nested.scalar_leaves(eval_metrics), indent=2) + '\n')
  return path


def write_scalar_summaries(writer: tf.summary.SummaryWriter, logs: Dict[str, Any],
                           step: int) -> None:
  """Writes the scalar values of `logs` at `step` with `writer` (TensorBoard's scalar format).

  Example:
    >>> write_scalar_summaries(tf.summary.create_file_writer('/tmp/run/eval'), {'loss': 0.5}, 100)
  """
  with writer.as_default(step=step):
    for name, value in logs.items():
      if np.ndim(value) == 0:
        orbit.utils.scalar_summary(name, value, step=step)
  writer.flush()

