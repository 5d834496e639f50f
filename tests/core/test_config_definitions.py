"""Tests for official/core/config_definitions.py."""

import dataclasses

import pytest

from official.core import config_definitions as cfg
from official.modeling import hyperparams


def test_model_garden_defaults():
  data = cfg.DataConfig()
  assert (data.input_path, data.global_batch_size, data.is_training, data.drop_remainder,
          data.shuffle_buffer_size, data.cache, data.cycle_length, data.block_length,
          data.deterministic, data.sharding, data.seed, data.prefetch_buffer_size) == (
              '', 0, None, True, 100, False, None, 1, None, True, None, None)
  runtime = cfg.RuntimeConfig()
  assert (runtime.distribution_strategy, runtime.enable_xla, runtime.tpu, runtime.num_gpus,
          runtime.worker_hosts, runtime.task_index, runtime.all_reduce_alg, runtime.num_packs,
          runtime.mixed_precision_dtype, runtime.loss_scale, runtime.run_eagerly) == (
              'mirrored', False, None, 0, None, -1, None, 1, None, None, False)
  trainer = cfg.TrainerConfig()
  assert (trainer.train_tf_while_loop, trainer.train_tf_function, trainer.eval_tf_function,
          trainer.eval_tf_while_loop, trainer.steps_per_loop, trainer.summary_interval,
          trainer.checkpoint_interval, trainer.max_to_keep, trainer.continuous_eval_timeout,
          trainer.train_steps, trainer.validation_steps, trainer.validation_interval,
          trainer.best_checkpoint_export_subdir, trainer.best_checkpoint_eval_metric,
          trainer.best_checkpoint_metric_comp, trainer.loss_upper_bound,
          trainer.recovery_begin_steps, trainer.recovery_max_trials,
          trainer.validation_summary_subdir, trainer.preemption_on_demand_checkpoint) == (
              True, True, True, False, 1000, 1000, 1000, 5, 3600, 0, -1, 1000, '', '', 'higher',
              1e6, 0, 0, 'validation', True)
  task = cfg.TaskConfig()
  assert (task.init_checkpoint, task.model, task.name) == ('', None, None)


def test_full_dump_round_trips():
  params = cfg.ExperimentConfig()
  assert cfg.ExperimentConfig.from_dict(params.as_dict()) == params
  params.validate()


@pytest.mark.parametrize('overrides, path, reason', [
    ({'task': {'train_data': {'tfds_name': 'wiki40b'}}}, 'task.train_data.tfds_name', 'TFDS'),
    ({'task': {'validation_data': {'enable_tf_data_service': True}}},
     'task.validation_data.enable_tf_data_service', 'tf.data service'),
    ({'runtime': {'num_cores_per_replica': 2}}, 'runtime.num_cores_per_replica', 'model parallel'),
    ({'runtime': {'per_gpu_thread_count': 2}}, 'runtime.per_gpu_thread_count', 'GPU thread'),
    ({'task': {'differential_privacy_config': {'clipping_norm': 1.0}}},
     'task.differential_privacy_config', 'differential privacy'),
    ({'trainer': {'train_tf_while_loop': False}}, 'trainer.train_tf_while_loop', 'tf.while_loop'),
])
def test_unimplemented_model_garden_fields_fail_when_set(overrides, path, reason):
  with pytest.raises(hyperparams.ConfigError) as e:
    cfg.ExperimentConfig.from_dict(overrides)
  assert e.value.path == path
  assert reason in str(e.value) and 'leave it at its default' in str(e.value)


@pytest.mark.parametrize('overrides, path, message', [
    ({'runtime': {'distribution_strategy': 'horovod'}}, 'runtime.distribution_strategy',
     "expected one of ['off', 'one_device', 'mirrored', 'multi_worker_mirrored', 'tpu']"),
    ({'runtime': {'mixed_precision_dtype': 'float8'}}, 'runtime.mixed_precision_dtype',
     'expected one of'),
    ({'trainer': {'steps_per_loop': 0}}, 'trainer.steps_per_loop', 'must be >= 1'),
    ({'trainer': {'train_steps': 'many'}}, 'trainer.train_steps', 'expected int'),
    ({'task': {'train_data': {'global_batch_size': -2}}}, 'task.train_data.global_batch_size',
     'must be >= 0'),
    ({'trainer': {'validation_steps': -3}}, 'trainer.validation_steps', 'must be >= -1'),
    ({'trainer': {'best_checkpoint_metric_comp': 'max'}}, 'trainer.best_checkpoint_metric_comp',
     'expected one of'),
])
def test_bad_values_name_the_key(overrides, path, message):
  with pytest.raises(hyperparams.ConfigError) as e:
    cfg.ExperimentConfig.from_dict(overrides)
  assert e.value.path == path
  assert message in str(e.value)


def test_best_checkpoint_export_needs_a_metric():
  params = cfg.ExperimentConfig.from_dict({'trainer': {'best_checkpoint_export_subdir': 'best'}})
  with pytest.raises(hyperparams.ConfigError) as e:
    params.validate()
  assert e.value.path == 'trainer.best_checkpoint_eval_metric'
  assert 'required with best_checkpoint_export_subdir' in str(e.value)
  params.override({'trainer': {'best_checkpoint_eval_metric': 'cls_accuracy'}})
  params.validate()


def test_loss_scale_accepts_dynamic_or_number():
  assert cfg.RuntimeConfig.from_dict({'loss_scale': 'dynamic'}).loss_scale == 'dynamic'
  assert cfg.RuntimeConfig.from_dict({'loss_scale': 128}).loss_scale == 128.0
  runtime = cfg.RuntimeConfig.from_dict({'loss_scale': 'static'})
  with pytest.raises(hyperparams.ConfigError, match="loss_scale: expected 'dynamic' or a number"):
    runtime.validate()


def test_task_config_subclass_narrows_model():
  @dataclasses.dataclass
  class _Model(hyperparams.Config):
    width: int = 3

  @dataclasses.dataclass
  class _Task(cfg.TaskConfig):
    model: _Model = dataclasses.field(default_factory=_Model)

  @dataclasses.dataclass
  class _Experiment(cfg.ExperimentConfig):
    task: _Task = dataclasses.field(default_factory=_Task)

  params = _Experiment.from_dict({'task': {'model': {'width': 5}}})
  assert params.task.model.width == 5
  with pytest.raises(hyperparams.ConfigError, match=r'^task.model.depth: unknown key'):
    _Experiment.from_dict({'task': {'model': {'depth': 5}}})


@pytest.mark.parametrize('split', ['train_data', 'validation_data'])
def test_a_configured_input_needs_a_positive_batch_size(split):
  params = cfg.ExperimentConfig.from_dict({'task': {split: {'input_path': 'train.tfrecord',
                                                            'global_batch_size': 0}}})
  with pytest.raises(hyperparams.ConfigError) as e:
    params.validate()
  assert e.value.path == f'task.{split}.global_batch_size'
  assert 'expected a batch size >= 1' in str(e.value) and 'found 0' in str(e.value)
  with pytest.raises(hyperparams.ConfigError, match='must be >= 0, found -1'):
    cfg.ExperimentConfig.from_dict({'task': {split: {'global_batch_size': -1}}})
  cfg.ExperimentConfig().validate()  # an unused split keeps the default 0
