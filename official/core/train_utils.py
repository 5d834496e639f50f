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
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
import tensorflow as tf
import tf_keras
import yaml

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.modeling import hyperparams


def build_params(experiment: str, config_files: Sequence[str] = (),
                 params_override: Optional[str] = None) -> cfg.ExperimentConfig:
  """Experiment defaults < each config file in order < `params_override`; then validated.

  Raises:
    KeyError: an unknown experiment (listing the registered ones).
    FileNotFoundError: a missing config file.
    hyperparams.ConfigError: a bad key or value, naming its full path.
  """
  options = ParseConfigOptions(experiment=experiment, config_file=list(config_files or ()),
                               params_override=params_override)
  return parse_configuration(options, lock_return=False, print_return=False)


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


def check_model_dir(model_dir: str) -> None:
  """Creates `model_dir` when missing and checks that training can write into it.

  Raises:
    ValueError: one line naming `model_dir` when it is a file, cannot be created or is not
      writable.

  Example:
    >>> check_model_dir('/tmp/run')
  """
  if '://' in model_dir:  # remote file systems: their own errors
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


def _flatten(tree: Any, prefix: str = '') -> Dict[str, Any]:
  if isinstance(tree, dict):
    flat = {}
    for key, value in tree.items():
      flat.update(_flatten(value, f'{prefix}{key}.'))
    return flat
  return {prefix[:-1]: tree}


def config_differences(old: Dict[str, Any], new: Dict[str, Any]) -> List[str]:
  """`key: old -> new` for every key of both nested dicts whose values differ and whose change
  is not in `RESUMABLE_CHANGES`, sorted by key."""
  old_flat, new_flat = _flatten(old), _flatten(new)
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


# ---- nested dicts of metrics ----------------------------------------------------------------------
def get_leaf_nested_dict(d: Dict[str, Any], keys: List[str]) -> Any:
  """The leaf at path `keys` of the nested dict `d`.

  Raises:
    KeyError: the path does not exist ('Path not exist while traversing ...'), or ends at a dict
      rather than a leaf ('The value extracted with keys ... is not a leaf').

  Example:
    >>> get_leaf_nested_dict({'a': {'b': 1}}, ['a', 'b'])   # 1
  """
  node = d
  for i, key in enumerate(keys):
    if not isinstance(node, dict) or key not in node:
      raise KeyError(f'Path not exist while traversing the dictionary: {keys[:i + 1]} (of {keys}) '
                     f'is missing in {d}')
    node = node[key]
  if isinstance(node, dict):
    raise KeyError(f'The value extracted with keys {keys} is not a leaf of the dictionary: '
                   f'{node}')
  return node


def cast_leaf_nested_dict(d: Dict[str, Any], cast_fn: Any) -> Dict[str, Any]:
  """A copy of the nested dict `d` with `cast_fn` applied to every leaf.

  Example:
    >>> cast_leaf_nested_dict({'a': {'b': '1'}}, int)   # {'a': {'b': 1}}
  """
  return {k: cast_leaf_nested_dict(v, cast_fn) if isinstance(v, dict) else cast_fn(v)
          for k, v in d.items()}


def _scalar_leaves(d: Dict[str, Any]) -> Dict[str, Any]:
  """`d` without the leaves that are not single numbers (images, vectors), as floats."""
  kept = {}
  for key, value in d.items():
    if isinstance(value, dict):
      kept[key] = _scalar_leaves(value)
      continue
    array = np.asarray(value.numpy() if hasattr(value, 'numpy') else value)
    if array.size == 1 and (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
      kept[key] = float(array.reshape(()))
  return kept


# ---- best checkpoint export -----------------------------------------------------------------------
BEST_CHECKPOINT_NAME = 'best_ckpt'


class BestCheckpointExporter:
  """Keeps the checkpoint with the best evaluation metric in `export_dir` (`best_ckpt-N`), and
  its evaluation logs in `export_dir/info.json` (plus `best_ckpt_global_step`).

  The best value survives restarts: it is read back from `info.json`.

  Args:
    export_dir: the directory (`model_dir/<trainer.best_checkpoint_export_subdir>`).
    metric_name: the eval log to compare; '|' separates the keys of nested logs
      ('squad|f1').
    metric_comp: 'higher' or 'lower' (which is better).

  Raises:
    ValueError: `metric_comp` is neither.

  Example:
    >>> exporter = BestCheckpointExporter(f'{model_dir}/best', 'accuracy', 'higher')
    >>> exporter.maybe_export_checkpoint(checkpoint, {'accuracy': 0.9}, global_step=1000)   # True
  """

  def __init__(self, export_dir: str, metric_name: str, metric_comp: str):
    if metric_comp not in ('higher', 'lower'):
      raise ValueError('trainer.best_checkpoint_metric_comp: best checkpoint metric comp must be '
                       f'one of higher, lower. Got: {metric_comp!r}')
    if not metric_name:
      raise ValueError('trainer.best_checkpoint_eval_metric is required with '
                       'trainer.best_checkpoint_export_subdir')
    self._export_dir = export_dir
    self._metric_path = metric_name.split('|')
    self._metric_comp = metric_comp
    tf.io.gfile.makedirs(export_dir)
    self._best_ckpt_logs = None
    if tf.io.gfile.exists(self.best_ckpt_logs_path):
      with tf.io.gfile.GFile(self.best_ckpt_logs_path, 'r') as f:
        self._best_ckpt_logs = json.loads(f.read())
    self._manager = None

  @property
  def export_dir(self) -> str:
    return self._export_dir

  @property
  def best_ckpt_logs(self) -> Optional[Dict[str, Any]]:
    """The eval logs of the best checkpoint so far (None before the first)."""
    return self._best_ckpt_logs

  @property
  def best_ckpt_logs_path(self) -> str:
    return os.path.join(self._export_dir, 'info.json')

  @property
  def best_ckpt_path(self) -> Optional[str]:
    """The best checkpoint's path, or None when none was exported yet."""
    return tf.train.latest_checkpoint(self._export_dir)

  def metric_value(self, eval_logs: Dict[str, Any]) -> float:
    """The compared metric of `eval_logs` as a float.

    Raises:
      KeyError: the logs have no such metric (naming the configured name).
    """
    try:
      value = get_leaf_nested_dict(eval_logs, self._metric_path)
    except KeyError as e:
      raise KeyError(f'trainer.best_checkpoint_eval_metric={"|".join(self._metric_path)!r}: '
                     f'not among the eval logs {sorted(eval_logs)} ({e.args[0]})') from None
    return float(np.asarray(value.numpy() if hasattr(value, 'numpy') else value).reshape(-1)[0])

  def _is_better(self, eval_logs: Dict[str, Any]) -> bool:
    if self._best_ckpt_logs is None:
      return True
    old, new = self.metric_value(self._best_ckpt_logs), self.metric_value(eval_logs)
    return new > old if self._metric_comp == 'higher' else new < old

  def maybe_export_checkpoint(self, checkpoint: tf.train.Checkpoint, eval_logs: Dict[str, Any],
                              global_step: int, write_logs: bool = True) -> bool:
    """Saves `checkpoint` as the best one when `eval_logs` beat the best so far.

    Args:
      checkpoint: the checkpoint to save.
      eval_logs: the evaluation's logs (nested dicts allowed).
      global_step: the step evaluated (recorded in `info.json`).
      write_logs: write `info.json`.

    Returns:
      Whether the checkpoint was exported (never when its variables hold NaN or Inf).
    """
    if not self._is_better(eval_logs):
      return False
    if not checkpoint_is_finite(checkpoint):
      logging.warning('step %d: the weights hold NaN or Inf; not exported as the best checkpoint '
                      'to %s', int(global_step), self._export_dir)
      return False
    self._best_ckpt_logs = eval_logs
    if write_logs:
      self.export_best_eval_metric(eval_logs, global_step)
    if self._manager is None or self._manager.checkpoint is not checkpoint:
      self._manager = tf.train.CheckpointManager(checkpoint, directory=self._export_dir,
                                                 max_to_keep=1,
                                                 checkpoint_name=BEST_CHECKPOINT_NAME)
    path = self._manager.save()
    logging.info('new best %s = %g at step %d: saved %s', '|'.join(self._metric_path),
                 self.metric_value(eval_logs), int(global_step), path)
    return True

  def export_best_eval_metric(self, eval_logs: Dict[str, Any], global_step: int) -> None:
    """Writes the scalar eval logs and `best_ckpt_global_step` to `info.json`."""
    logs = _scalar_leaves(eval_logs)
    logs['best_ckpt_global_step'] = float(global_step)
    with tf.io.gfile.GFile(self.best_ckpt_logs_path, 'w') as f:
      f.write(json.dumps(logs, indent=2) + '\n')


def maybe_create_best_ckpt_exporter(params: cfg.ExperimentConfig, data_dir: str
                                    ) -> Optional[BestCheckpointExporter]:
  """A `BestCheckpointExporter` in `data_dir/<trainer.best_checkpoint_export_subdir>` when the
  trainer config asks for one (subdir and metric set), else None."""
  trainer = params.trainer
  if not (data_dir and trainer.best_checkpoint_export_subdir and
          trainer.best_checkpoint_eval_metric):
    return None
  return BestCheckpointExporter(os.path.join(data_dir, trainer.best_checkpoint_export_subdir),
                                trainer.best_checkpoint_eval_metric,
                                trainer.best_checkpoint_metric_comp)


# ---- models and checkpoints -----------------------------------------------------------------------
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


def write_json_summary(log_dir: str, global_step: int, eval_metrics: Dict[str, Any]) -> str:
  """Writes the scalar eval metrics to `log_dir/metrics-<global_step>.json`; returns the path."""
  tf.io.gfile.makedirs(log_dir)
  path = os.path.join(log_dir, f'metrics-{int(global_step)}.json')
  with tf.io.gfile.GFile(path, 'w') as f:
    f.write(json.dumps(_scalar_leaves(eval_metrics), indent=2) + '\n')
  return path


# ---- finite checkpoints ---------------------------------------------------------------------------
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
  dtypes = reader.get_variable_to_dtype_map()
  for name, dtype in dtypes.items():
    if not dtype.is_floating:
      continue
    values = np.asarray(reader.get_tensor(name))
    if values.dtype.kind != 'f':  # bfloat16 (ml_dtypes)
      values = values.astype(np.float32)
    if not np.all(np.isfinite(values)):
      return False
  return True


def remove_ckpts(model_dir: str) -> None:
  """Removes the checkpoints (`ckpt-*` and the `checkpoint` state file) of `model_dir`."""
  for path in tf.io.gfile.glob(os.path.join(model_dir, 'ckpt-*')):
    tf.io.gfile.remove(path)
  state = os.path.join(model_dir, 'checkpoint')
  if tf.io.gfile.exists(state):
    tf.io.gfile.remove(state)
