"""Helpers of the training driver: building params from flags, `params.yaml`, chief/worker dirs.

Example:
  >>> params = build_params('bert/pretraining', ['configs/pretraining/bert_tiny.yaml'],
  ...                       'trainer.train_steps=10')
  >>> write_params(params, '/tmp/model_dir')
"""

import logging
import os
import tempfile
from typing import Any, Dict, List, Optional, Sequence

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
  params = exp_factory.get_exp_config(experiment)
  for path in config_files or ():
    try:
      params.override(hyperparams.read_yaml(path), is_strict=True)
    except hyperparams.ConfigError as e:
      raise hyperparams.ConfigError(e.path, f'{e.message} (in {path})') from None
  hyperparams.override_params_dict(params, params_override, is_strict=True)
  params.validate()
  return params


def parse_configuration(flags_obj) -> cfg.ExperimentConfig:
  """`build_params` from flags with `experiment`, `config_file` and `params_override` (Model Garden's
  name)."""
  return build_params(flags_obj.experiment, getattr(flags_obj, 'config_file', None) or (),
                      getattr(flags_obj, 'params_override', None))


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
