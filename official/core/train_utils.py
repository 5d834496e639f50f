"""Helpers of the training driver: building params from flags, `params.yaml`, chief/worker dirs.

Example:
  >>> params = build_params('bert/pretraining', ['configs/pretraining/bert_tiny.yaml'],
  ...                       'trainer.train_steps=10')
  >>> write_params(params, '/tmp/model_dir')
"""

import os
import tempfile
from typing import Optional, Sequence

import tensorflow as tf

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
