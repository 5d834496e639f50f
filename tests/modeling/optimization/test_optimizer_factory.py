"""Tests for official/modeling/optimization/optimizer_factory.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling import hyperparams
from official.modeling import optimization


def _config(optimizer=None, learning_rate=None, warmup=None):
  params = {'optimizer': optimizer or {'type': 'sgd'},
            'learning_rate': learning_rate or {'type': 'constant'}}
  if warmup:
    params['warmup'] = warmup
  return optimization.OptimizationConfig.from_dict(params)


def _values(lr, steps):
  return [float(lr(s)) if callable(lr) else float(lr) for s in steps]


def test_constant_without_warmup_is_a_float():
  lr = optimization.OptimizerFactory(_config()).build_learning_rate()
  assert lr == 0.1 and isinstance(lr, float)


@pytest.mark.parametrize('learning_rate, warmup, expected', [
    ({'type': 'constant', 'constant': {'learning_rate': 0.2}},
     {'type': 'linear', 'linear': {'warmup_steps': 4, 'warmup_learning_rate': 0.1}},
     {0: 0.1, 2: 0.15, 4: 0.2, 100: 0.2}),
    ({'type': 'polynomial', 'polynomial': {'initial_learning_rate': 1e-4, 'decay_steps': 1000,
                                           'end_learning_rate': 0}},
     {'type': 'polynomial', 'polynomial': {'warmup_steps': 100}},
     {0: 9e-7, 1: 9e-7, 50: 4.5e-5, 100: 9e-5, 500: 5e-5, 1000: 0.0, 1500: 0.0}),
    ({'type': 'linear', 'linear': {'initial_learning_rate': 1.0, 'decay_steps': 10,
                                   'end_learning_rate': 0.5, 'offset': 2}},
     None, {0: 1.0, 2: 1.0, 7: 0.75, 12: 0.5, 20: 0.5}),
    ({'type': 'cosine', 'cosine': {'initial_learning_rate': 1.0, 'decay_steps': 10}},
     {'type': 'linear', 'linear': {'warmup_steps': 5}},
     {0: 0.0, 5: 0.5, 10: 0.0}),
    ({'type': 'stepwise', 'stepwise': {'boundaries': [10, 20], 'values': [1.0, 0.1, 0.01]}},
     None, {0: 1.0, 10: 1.0, 11: 0.1, 21: 0.01}),
])
def test_build_learning_rate(learning_rate, warmup, expected):
  factory = optimization.OptimizerFactory(_config(learning_rate=learning_rate, warmup=warmup))
  np.testing.assert_allclose(_values(factory.build_learning_rate(), expected),
                             list(expected.values()), rtol=1e-5, atol=1e-9)


def test_build_adamw_from_model_garden_block():
  config = _config(
      optimizer={'type': 'adamw', 'adamw': {
          'weight_decay_rate': 0.01,
          'exclude_from_weight_decay': ['LayerNorm', 'layer_norm', 'bias'],
          'epsilon': 1e-6, 'global_clipnorm': 5.0}},
      learning_rate={'type': 'polynomial', 'polynomial': {'initial_learning_rate': 1e-4,
                                                          'decay_steps': 1000}},
      warmup={'type': 'polynomial', 'polynomial': {'warmup_steps': 100}})
  factory = optimization.OptimizerFactory(config)
  opt = factory.build_optimizer(factory.build_learning_rate())
  assert isinstance(opt, optimization.AdamWeightDecay)
  assert isinstance(opt, tf_keras.optimizers.Optimizer)
  c = opt.get_config()
  assert (c['name'], c['weight_decay_rate'], c['epsilon'], c['gradient_clip_norm'],
          c['global_clipnorm']) == ('AdamWeightDecay', 0.01, 1e-6, 1.0, 5.0)
  assert c['exclude_from_weight_decay'] == ['LayerNorm', 'layer_norm', 'bias']
  assert isinstance(opt._learning_rate, optimization.PolynomialWarmUp)  # pylint: disable=protected-access
  var = tf.Variable([1.0, 2.0], name='dense/kernel')
  opt.apply_gradients([(tf.constant([0.1, 0.1]), var)])
  assert int(opt.iterations) == 1 and float(opt.learning_rate) == pytest.approx(1e-6, rel=1e-5)
  # end_learning_rate defaults to 1e-4 = initial here, so the decay is flat: warmup 1e-4 / 100.


@pytest.mark.parametrize('optimizer, cls, attrs', [
    ({'type': 'lamb', 'lamb': {'weight_decay_rate': 0.01, 'exclude_from_layer_adaptation': ['b']}},
     optimization.LAMB, {'weight_decay_rate': 0.01, 'epsilon': 1e-6, 'name': 'LAMB'}),
    ({'type': 'sgd', 'sgd': {'momentum': 0.9, 'nesterov': True, 'clipvalue': 1.0}},
     optimization.SGD, {'momentum': 0.9, 'nesterov': True, 'clipvalue': 1.0}),
    ({'type': 'adam', 'adam': {'beta_2': 0.98, 'amsgrad': True}},
     optimization.Adam, {'beta_2': 0.98, 'amsgrad': True, 'epsilon': 1e-7}),
])
def test_build_other_optimizers(optimizer, cls, attrs):
  opt = optimization.OptimizerFactory(_config(optimizer=optimizer)).build_optimizer(0.01)
  assert type(opt) is cls
  for key, value in attrs.items():
    assert getattr(opt, key) == value, key


def test_gradient_transformers_and_postprocessor():
  seen = []

  def transformer(grads_and_vars):
    seen.append(True)
    return [(g * 0.0, v) for g, v in grads_and_vars]

  wrapped = []
  factory = optimization.OptimizerFactory(_config())
  opt = factory.build_optimizer(0.1, gradient_transformers=[transformer],
                                postprocessor=lambda o: wrapped.append(o) or o,
                                global_batch_size=32)
  var = tf.Variable([1.0])
  opt.apply_gradients([(tf.constant([5.0]), var)])
  assert seen and wrapped == [opt]
  np.testing.assert_array_equal(var.numpy(), [1.0])


def test_loss_scale_optimizer_wraps_built_optimizer():
  factory = optimization.OptimizerFactory(_config(optimizer={'type': 'adamw'}))
  opt = tf_keras.mixed_precision.LossScaleOptimizer(factory.build_optimizer(0.1))
  var = tf.Variable([1.0, 2.0])
  opt.apply_gradients([(tf.constant([1.0, 1.0]), var)])
  assert int(opt.iterations) == 1


@pytest.mark.parametrize('params, path', [
    ({'learning_rate': {'type': 'constant'}}, 'optimizer.type'),
    ({'optimizer': {'type': 'sgd'}}, 'learning_rate.type'),
    ({'optimizer': {'type': 'adamw', 'adamw': {'beta_2': 1.5}},
      'learning_rate': {'type': 'constant'}},
     'optimizer.adamw.beta_2'),
    ({'optimizer': {'type': 'sgd'}, 'learning_rate': {'type': 'cosine'}},
     'learning_rate.cosine.initial_learning_rate'),
])
def test_errors_name_the_key_path(params, path):
  with pytest.raises(hyperparams.ConfigError) as e:
    optimization.OptimizerFactory(optimization.OptimizationConfig.from_dict(params))
  assert str(e.value).startswith(path + ':'), str(e.value)
  if path == 'optimizer.type':
    assert 'adamw' in str(e.value) and 'lamb' in str(e.value)


def test_unknown_type_set_directly_names_choices():
  config = _config()
  config.optimizer.type = 'adafactor'
  with pytest.raises(ValueError, match=r"optimizer\.type.*'adamw'"):
    optimization.OptimizerFactory(config)


@pytest.mark.parametrize('optimizer_type', ['sgd', 'adam', 'adamw', 'lamb', 'lars', 'rmsprop',
                                            'adagrad'])
@pytest.mark.parametrize('use_legacy_optimizer', [True, False])
def test_default_member_builds_the_class_defaults(optimizer_type, use_legacy_optimizer):
  # Model Garden's form: a positional dict, and the class looked up in either table.
  config = optimization.OptimizationConfig({'optimizer': {'type': optimizer_type},
                                            'learning_rate': {'type': 'constant'}})
  factory = optimization.OptimizerFactory(config)
  opt = factory.build_optimizer(factory.build_learning_rate(),
                                use_legacy_optimizer=use_legacy_optimizer)
  table = (optimization.optimizer_factory.LEGACY_OPTIMIZERS_CLS if use_legacy_optimizer
           else optimization.optimizer_factory.NEW_OPTIMIZERS_CLS)
  cls = table[optimizer_type]
  assert type(opt) is cls
  assert opt.get_config() == dict(cls().get_config(), learning_rate=0.1)


@pytest.mark.parametrize('learning_rate, expected', [
    ({'type': 'exponential', 'exponential': {'initial_learning_rate': 0.1, 'decay_steps': 1000,
                                             'decay_rate': 0.96, 'staircase': True}},
     {999: 0.1, 1000: 0.096, 2000: 0.09216}),
    ({'type': 'power', 'power': {'initial_learning_rate': 1.0, 'power': -1.0}},
     {0: 1.0, 250: 0.004}),
    ({'type': 'power_linear', 'power_linear': {'initial_learning_rate': 1.0, 'power': -1.0,
                                               'linear_decay_fraction': 0.5,
                                               'total_decay_steps': 100}},
     {40: 1 / 40, 60: 1 / 60 * 0.8}),
    ({'type': 'power_with_offset', 'power_with_offset': {
        'initial_learning_rate': 1.0, 'power': -1.0, 'offset': 10,
        'pre_offset_learning_rate': 3.0}},
     {1: 3.0, 20: 0.1}),
    ({'type': 'step_cosine_with_offset', 'step_cosine_with_offset': {
        'values': [1.0, 0.5], 'boundaries': [0, 100]}},
     {0: 1.0, 50: 0.75, 100: 0.5}),
])
def test_model_garden_schedules(learning_rate, expected):
  lr = optimization.OptimizerFactory(_config(learning_rate=learning_rate)).build_learning_rate()
  np.testing.assert_allclose(_values(lr, expected), list(expected.values()), rtol=1e-5)


def test_missing_required_schedule_field_names_it():
  with pytest.raises(hyperparams.ConfigError, match=r'^learning_rate.exponential.decay_rate:'):
    optimization.OptimizerFactory(_config(learning_rate={
        'type': 'exponential', 'exponential': {'initial_learning_rate': 0.1, 'decay_steps': 10}}))


def test_register_optimizer_cls_refuses_duplicates():
  tables = optimization.optimizer_factory
  try:
    optimization.register_optimizer_cls('h1_test_sgd', optimization.SGD)
    assert tables.LEGACY_OPTIMIZERS_CLS['h1_test_sgd'] is optimization.SGD
    assert 'h1_test_sgd' not in tables.NEW_OPTIMIZERS_CLS
    with pytest.raises(ValueError, match='h1_test_sgd already registered in LEGACY_OPTIMIZERS_CLS'):
      optimization.register_optimizer_cls('h1_test_sgd', optimization.SGD)
    optimization.register_optimizer_cls('h1_test_sgd', optimization.SGD, use_legacy_optimizer=False)
  finally:
    tables.LEGACY_OPTIMIZERS_CLS.pop('h1_test_sgd', None)
    tables.NEW_OPTIMIZERS_CLS.pop('h1_test_sgd', None)


def test_postprocessor_must_return_an_optimizer():
  with pytest.raises(TypeError, match='not a tf_keras optimizer'):
    optimization.OptimizerFactory(_config()).build_optimizer(0.1, postprocessor=lambda o: None)


def test_gradient_aggregator_replaces_the_sum():
  calls = []

  def zero(grads_and_vars):
    calls.append(len(grads_and_vars))
    return [(tf.zeros_like(g), v) for g, v in grads_and_vars]

  factory = optimization.OptimizerFactory(_config(optimizer={'type': 'adam'}))
  opt = factory.build_optimizer(1.0, gradient_aggregator=zero)
  var = tf.Variable([1.0, 2.0])
  opt.apply_gradients([(tf.constant([1.0, 1.0]), var)])
  assert calls == [1]
  np.testing.assert_allclose(var.numpy(), [1.0, 2.0])
