"""Tests for official/modeling/optimization/configs/optimization_config.py (and its member
configs)."""

import pytest
import yaml

from official.modeling import hyperparams
from official.modeling import optimization

_MG_BLOCK = """
optimizer:
  type: adamw
  adamw:
    weight_decay_rate: 0.01
    exclude_from_weight_decay: ['LayerNorm', 'layer_norm', 'bias']
learning_rate:
  type: polynomial
  polynomial:
    initial_learning_rate: 1e-4
    decay_steps: 1000
    end_learning_rate: 0
warmup:
  type: polynomial
  polynomial:
    warmup_steps: 100
"""


def test_model_garden_yaml_block_loads_and_round_trips(tmp_path):
  cfg = optimization.OptimizationConfig.from_dict(yaml.safe_load(_MG_BLOCK))
  cfg.validate()
  adamw = cfg.optimizer.get()
  assert isinstance(adamw, optimization.AdamWeightDecayConfig)
  assert adamw.weight_decay_rate == 0.01
  assert adamw.exclude_from_weight_decay == ['LayerNorm', 'layer_norm', 'bias']
  assert ((adamw.beta_1, adamw.beta_2, adamw.epsilon, adamw.gradient_clip_norm)
          == (0.9, 0.999, 1e-7, 1.0))
  poly = cfg.learning_rate.get()
  assert poly.initial_learning_rate == 1e-4 and isinstance(poly.initial_learning_rate, float)
  assert (poly.decay_steps, poly.end_learning_rate, poly.power, poly.offset) == (1000, 0.0, 1.0, 0)
  assert cfg.warmup.get().warmup_steps == 100 and cfg.warmup.get().power == 1.0
  assert cfg.ema is None

  path = str(tmp_path / 'opt.yaml')
  cfg.to_yaml(path)
  again = optimization.OptimizationConfig.from_yaml(path)
  assert again.as_dict() == cfg.as_dict()
  assert optimization.OptimizationConfig.from_dict(cfg.as_dict()).as_dict() == cfg.as_dict()


def test_model_garden_defaults():
  cfg = optimization.OptimizationConfig()
  assert cfg.optimizer.type is None and cfg.learning_rate.type is None and cfg.warmup.type is None
  assert cfg.optimizer.lamb.as_dict() == dict(
      clipnorm=None, clipvalue=None, global_clipnorm=None, name='LAMB', beta_1=0.9, beta_2=0.999,
      epsilon=1e-6, weight_decay_rate=0.0, exclude_from_weight_decay=None,
      exclude_from_layer_adaptation=None)
  assert cfg.optimizer.adamw.include_in_weight_decay is None
  assert cfg.optimizer.adamw.amsgrad is False
  assert cfg.learning_rate.constant.learning_rate == 0.1
  assert cfg.learning_rate.polynomial.end_learning_rate == 0.0001
  assert not cfg.learning_rate.polynomial.cycle
  assert cfg.learning_rate.cosine.alpha == 0.0
  assert cfg.warmup.linear.warmup_learning_rate == 0.0


def test_one_of_without_type_picks_the_only_member():
  cfg = optimization.OptimizationConfig.from_dict(
      {'optimizer': {'lamb': {'weight_decay_rate': 0.01}},
       'learning_rate': {'cosine': {'initial_learning_rate': 0.1, 'decay_steps': 10}}})
  assert cfg.optimizer.type == 'lamb' and cfg.learning_rate.type == 'cosine'


@pytest.mark.parametrize('override, path', [
    ({'optimizer': {'type': 'adamw', 'adamw': {'beta_1': 1.0}}}, 'optimizer.adamw.beta_1'),
    ({'optimizer': {'type': 'adamw', 'adamw': {'epsilon': 0.0}}}, 'optimizer.adamw.epsilon'),
    ({'optimizer': {'type': 'lamb', 'lamb': {'beta_2': -0.1}}}, 'optimizer.lamb.beta_2'),
    ({'optimizer': {'type': 'adamw', 'adamw': {'weight_decay_rate': -1}}},
     'optimizer.adamw.weight_decay_rate'),
    ({'optimizer': {'type': 'sgd', 'sgd': {'momentum': -0.5}}}, 'optimizer.sgd.momentum'),
    ({'learning_rate': {'type': 'polynomial', 'polynomial': {'decay_steps': 0}}},
     'learning_rate.polynomial.decay_steps'),
    ({'warmup': {'type': 'linear', 'linear': {'warmup_steps': -1}}}, 'warmup.linear.warmup_steps'),
    ({'optimizer': {'type': 'adamw', 'adamw': {'weight_decay_rate': 'abc'}}},
     'optimizer.adamw.weight_decay_rate'),
    ({'optimizer': {'type': 'adamw', 'adamw': {'no_such_key': 1}}}, 'optimizer.adamw.no_such_key'),
    ({'optimizer': {'type': 'adafactor'}}, 'optimizer.type'),
])
def test_bad_values_name_the_full_key_path(override, path):
  with pytest.raises(hyperparams.ConfigError) as e:
    cfg = optimization.OptimizationConfig.from_dict(override)
    cfg.validate()
  assert str(e.value).startswith(path + ':'), str(e.value)


@pytest.mark.parametrize('override, path', [
    ({'learning_rate': {'type': 'polynomial', 'polynomial': {'initial_learning_rate': 0.1}}},
     'learning_rate.polynomial.decay_steps'),
    ({'learning_rate': {'type': 'cosine', 'cosine': {'decay_steps': 10}}},
     'learning_rate.cosine.initial_learning_rate'),
    ({'warmup': {'type': 'polynomial'}}, 'warmup.polynomial.warmup_steps'),
    ({'learning_rate': {'type': 'stepwise', 'stepwise': {'boundaries': [10], 'values': [1.0]}}},
     'learning_rate.stepwise.values'),
    ({'learning_rate': {'type': 'stepwise', 'stepwise': {'boundaries': [10, 5],
                                                        'values': [1.0, 0.5, 0.1]}}},
     'learning_rate.stepwise.boundaries'),
    ({'optimizer': {'type': 'adam', 'adam': {'clipnorm': 1.0, 'global_clipnorm': 1.0}}},
     'optimizer.adam.clipnorm'),
    ({'optimizer': {'type': 'sgd', 'sgd': {'decay': 0.1}}}, 'optimizer.sgd.decay'),
    ({'ema': {'average_decay': 1.5}}, 'ema.average_decay'),
    ({'ema': {'start_step': -1}}, 'ema.start_step'),
    ({'ema': {'clipnorm': 1.0}}, 'ema.clipnorm'),
])
def test_missing_or_inconsistent_values_name_the_full_key_path(override, path):
  with pytest.raises(hyperparams.ConfigError) as e:
    optimization.OptimizationConfig.from_dict(override).validate()
  assert str(e.value).startswith(path + ':'), str(e.value)


def test_unselected_members_are_not_required():
  # Only the selected member's None fields are errors.
  optimization.OptimizationConfig.from_dict({'learning_rate': {'type': 'constant'}}).validate()


@pytest.mark.parametrize('member, field', [('polynomial', 'initial_learning_rate'),
                                           ('constant', 'learning_rate')])
def test_a_learning_rate_beyond_float32_is_refused_naming_the_field(member, field):
  # Keras makes float32 tensors of learning rates: 1e39 could not even be converted (a raw TF error
  # at step 0).
  def config(value):
    params = {field: value, 'decay_steps': 10} if member == 'polynomial' else {field: value}
    return optimization.OptimizationConfig.from_dict(
        {'optimizer': {'type': 'adamw'}, 'learning_rate': {'type': member, member: params}})

  with pytest.raises(hyperparams.ConfigError,
                     match=f'learning_rate.{member}.{field}: must be <= 3.40'):
    config(1e39)
  config(3e38).validate()
