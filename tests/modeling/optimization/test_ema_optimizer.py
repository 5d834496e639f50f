"""Tests for official/modeling/optimization/ema_optimizer.py (and its `ema` config and factory)."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling import hyperparams
from official.modeling import optimization
from official.modeling.optimization import ema_optimizer
from official.modeling.optimization import keras_optimizers


def _model(width: int = 3) -> tf_keras.Model:
  model = tf_keras.Sequential([tf_keras.layers.Dense(2, kernel_initializer='ones',
                                                     bias_initializer='zeros')])
  model.build([None, width])
  return model


def _train(model, optimizer, steps: int, lr_inputs=None):
  """Runs `steps` SGD steps on sum(model(x)**2); returns the weights after each step."""
  x = tf.constant(lr_inputs if lr_inputs is not None else [[1.0, -0.5, 0.25]])

  @tf.function
  def step():
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(tf.square(model(x)))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))

  history = []
  for _ in range(steps):
    step()
    history.append([v.numpy().copy() for v in model.trainable_variables])
  return history


def _reference(history, average_decay, start_step, dynamic_decay):
  """The averages after each step, from zeros (numpy)."""
  averages = [np.zeros_like(w) for w in history[0]]
  for t, weights in enumerate(history, start=1):
    if t < start_step:
      decay = 0.0
    elif dynamic_decay:
      s = t - start_step
      decay = min(average_decay, (1.0 + s) / (10.0 + s))
    else:
      decay = average_decay
    averages = [a - (1.0 - decay) * (a - w) for a, w in zip(averages, weights)]
  return averages


@pytest.mark.parametrize('average_decay, start_step, dynamic_decay', [
    (0.99, 0, True), (0.5, 0, True), (0.9, 3, True), (0.8, 0, False), (0.8, 2, False)])
def test_averages_match_a_numpy_reference(average_decay, start_step, dynamic_decay):
  model = _model()
  optimizer = ema_optimizer.ExponentialMovingAverage(
      keras_optimizers.SGD(0.05), average_decay=average_decay, start_step=start_step,
      dynamic_decay=dynamic_decay)
  optimizer.shadow_copy(model)
  assert optimizer.has_shadow_copy
  history = _train(model, optimizer, steps=6)
  assert int(optimizer.iterations.numpy()) == 6
  expected = _reference(history, average_decay, start_step, dynamic_decay)
  for average, want in zip(optimizer.average_weights, expected):
    np.testing.assert_allclose(average.numpy(), want, rtol=1e-5, atol=1e-7)
  # The model itself trained as plain SGD would.
  assert not np.allclose(history[-1][0], expected[0])


def test_swap_round_trip_is_exact():
  model = _model()
  optimizer = ema_optimizer.ExponentialMovingAverage(keras_optimizers.SGD(0.1))
  optimizer.shadow_copy(model)
  _train(model, optimizer, steps=3)
  weights = [v.numpy() for v in model.trainable_variables]
  averages = [a.numpy() for a in optimizer.average_weights]
  optimizer.swap_weights()
  for v, a in zip(model.trainable_variables, averages):
    np.testing.assert_array_equal(v.numpy(), a)
  for a, w in zip(optimizer.average_weights, weights):
    np.testing.assert_array_equal(a.numpy(), w)
  optimizer.swap_weights()
  for v, w in zip(model.trainable_variables, weights):
    np.testing.assert_array_equal(v.numpy(), w)


def test_swap_under_a_strategy_and_refused_inside_strategy_run():
  strategy = tf.distribute.OneDeviceStrategy('/cpu:0')
  with strategy.scope():
    model = _model()
    optimizer = ema_optimizer.ExponentialMovingAverage(keras_optimizers.SGD(0.1))
    optimizer.shadow_copy(model)
  optimizer.swap_weights()  # outside the scope: the averages' strategy is used
  np.testing.assert_array_equal(model.trainable_variables[0].numpy(), np.zeros((3, 2)))
  with strategy.scope():
    optimizer.swap_weights()
  np.testing.assert_array_equal(model.trainable_variables[0].numpy(), np.ones((3, 2)))
  with pytest.raises(ValueError, match='swap_weights: expected a cross-replica context'):
    strategy.run(optimizer.swap_weights)


def test_checkpoint_round_trip(tmp_path):
  model = _model()
  optimizer = ema_optimizer.ExponentialMovingAverage(keras_optimizers.SGD(0.1),
                                                     average_decay=0.9)
  optimizer.shadow_copy(model)
  _train(model, optimizer, steps=4)
  path = tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(tmp_path / 'ckpt'))
  names = [name for name, _ in tf.train.list_variables(path)]
  assert 'optimizer/_average_weights/0/.ATTRIBUTES/VARIABLE_VALUE' in names
  assert any(n.startswith('optimizer/ema_base_optimizer/') for n in names)

  # Restored after the averages exist, and before (deferred until shadow_copy).
  for shadow_first in (True, False):
    new_model = _model()
    new_optimizer = ema_optimizer.ExponentialMovingAverage(keras_optimizers.SGD(0.1),
                                                           average_decay=0.9)
    if shadow_first:
      new_optimizer.shadow_copy(new_model)
    status = tf.train.Checkpoint(model=new_model, optimizer=new_optimizer).read(path)
    if not shadow_first:
      new_optimizer.shadow_copy(new_model)
    status.assert_existing_objects_matched()
    for old, new in zip(optimizer.average_weights, new_optimizer.average_weights):
      np.testing.assert_array_equal(old.numpy(), new.numpy())
    assert int(new_optimizer.iterations.numpy()) == 4


def test_wrapped_optimizer_api_is_delegated():
  inner = keras_optimizers.SGD(0.1, momentum=0.9, global_clipnorm=2.0)
  optimizer = ema_optimizer.ExponentialMovingAverage(inner)
  assert isinstance(optimizer, tf_keras.optimizers.Optimizer)
  assert optimizer.inner_optimizer is inner
  assert optimizer.global_clipnorm == 2.0 and optimizer.momentum == 0.9
  assert optimizer.iterations is inner.iterations
  optimizer.learning_rate = 0.5
  assert float(inner.learning_rate.numpy()) == 0.5
  assert float(optimizer.lr.numpy()) == 0.5
  model = _model()
  optimizer.shadow_copy(model)
  _train(model, optimizer, steps=1)
  assert len(optimizer.variables) == len(inner.variables) + 2
  with pytest.raises(AttributeError, match='no attribute'):
    _ = optimizer.no_such_attribute


def test_learning_rate_schedule_is_the_wrapped_ones():
  schedule = tf_keras.optimizers.schedules.PolynomialDecay(1.0, 10, 0.0)
  optimizer = ema_optimizer.ExponentialMovingAverage(keras_optimizers.SGD(schedule))
  model = _model()
  optimizer.shadow_copy(model)
  _train(model, optimizer, steps=2)
  # The wrapped optimizer's current learning rate is its schedule at the step it last applied.
  np.testing.assert_allclose(float(optimizer.learning_rate), 0.9, rtol=1e-6)


def test_config_round_trip():
  optimizer = ema_optimizer.ExponentialMovingAverage(
      keras_optimizers.SGD(0.1, momentum=0.5), trainable_weights_only=False, average_decay=0.9,
      start_step=7, dynamic_decay=False, name='avg')
  restored = tf_keras.optimizers.deserialize(tf_keras.optimizers.serialize(optimizer),
                                             use_legacy_optimizer=False)
  assert isinstance(restored, ema_optimizer.ExponentialMovingAverage)
  assert restored.get_config()['optimizer']['config']['momentum'] == 0.5
  config = restored.get_config()
  del config['optimizer']
  assert config == {'trainable_weights_only': False, 'average_decay': 0.9, 'start_step': 7,
                    'dynamic_decay': False, 'name': 'avg'}


def test_all_weights_include_non_trainable_floats_only():
  model = tf_keras.Sequential([tf_keras.layers.Dense(2), tf_keras.layers.BatchNormalization()])
  model.build([None, 3])
  model.counter = tf.Variable(0, trainable=False)  # an integer variable: not averaged
  optimizer = ema_optimizer.ExponentialMovingAverage(keras_optimizers.SGD(0.1),
                                                     trainable_weights_only=False)
  optimizer.shadow_copy(model)
  floats = [v for v in model.variables if v.dtype.is_floating]
  assert len(optimizer.average_weights) == len(floats) == 6
  assert len(model.variables) == 7


def test_assign_average_vars():
  model = _model()
  optimizer = ema_optimizer.ExponentialMovingAverage(keras_optimizers.SGD(0.1))
  optimizer.shadow_copy(model)
  _train(model, optimizer, steps=2)
  optimizer.assign_average_vars(model.trainable_variables)
  for v, a in zip(model.trainable_variables, optimizer.average_weights):
    np.testing.assert_array_equal(v.numpy(), a.numpy())
  with pytest.raises(ValueError, match='other:0 has no average'):
    optimizer.assign_average_vars([tf.Variable(1.0, name='other')])


def test_unbuilt_model_gets_its_averages_at_the_first_update():
  model = tf_keras.Sequential([tf_keras.layers.Dense(2, kernel_initializer='ones')])
  optimizer = ema_optimizer.ExponentialMovingAverage(keras_optimizers.SGD(0.05),
                                                     dynamic_decay=False, average_decay=0.5)
  optimizer.shadow_copy(model)
  assert not optimizer.has_shadow_copy
  history = _train(model, optimizer, steps=2)
  assert optimizer.has_shadow_copy
  expected = _reference(history, 0.5, 0, False)
  for average, want in zip(optimizer.average_weights, expected):
    np.testing.assert_allclose(average.numpy(), want, rtol=1e-6)


def test_loss_scale_optimizer_skips_the_average_of_a_skipped_step():
  model = _model()
  ema = ema_optimizer.ExponentialMovingAverage(keras_optimizers.SGD(0.1))
  ema.shadow_copy(model)
  optimizer = tf_keras.mixed_precision.LossScaleOptimizer(ema, initial_scale=1.0,
                                                          dynamic_growth_steps=1000)
  assert ema_optimizer.find_moving_average(optimizer) is ema
  assert ema_optimizer.find_moving_average(keras_optimizers.SGD()) is None
  grads = [tf.fill(v.shape, np.nan) for v in model.trainable_variables]
  optimizer.apply_gradients(zip(grads, model.trainable_variables))
  assert int(ema.iterations.numpy()) == 1
  assert all(not a.numpy().any() for a in ema.average_weights)  # still zeros
  grads = [tf.ones(v.shape) for v in model.trainable_variables]
  optimizer.apply_gradients(zip(grads, model.trainable_variables))
  decay = min(0.99, 3.0 / 12.0)  # step 2
  np.testing.assert_allclose(ema.average_weights[1].numpy(), (1 - decay) * np.full(2, -0.1),
                             rtol=1e-6)


@pytest.mark.parametrize('kwargs, error, match', [
    (dict(average_decay=1.5), ValueError, r'average_decay must be in \[0, 1\], found 1.5'),
    (dict(start_step=-2), ValueError, 'start_step must be an integer >= 0, found -2'),
    (dict(clipnorm=1.0), ValueError, "clipping arguments to be None.*'clipnorm': 1.0"),
    (dict(decay=0.1), TypeError, r"unexpected arguments \['decay'\]"),
])
def test_bad_arguments_are_named(kwargs, error, match):
  with pytest.raises(error, match=match):
    ema_optimizer.ExponentialMovingAverage(keras_optimizers.SGD(), **kwargs)


def test_misuse_errors():
  with pytest.raises(TypeError, match='must be a tf_keras.optimizers.Optimizer, found str'):
    ema_optimizer.ExponentialMovingAverage('sgd')
  model = _model()
  optimizer = ema_optimizer.ExponentialMovingAverage(keras_optimizers.SGD(0.1))
  with pytest.raises(ValueError, match=r'apply_gradients: no averages yet; call shadow_copy'):
    _train(model, optimizer, steps=1)
  with pytest.raises(ValueError, match='swap_weights: no averages yet'):
    optimizer.swap_weights()
  optimizer.shadow_copy(model)
  with pytest.raises(ValueError, match='the averages exist already'):
    optimizer.shadow_copy(model)


# ---- the `ema` config and the factory ---------------------------------------------------------
def _config(**ema):
  return optimization.OptimizationConfig.from_dict({
      'optimizer': {'type': 'sgd', 'sgd': {'momentum': 0.9}},
      'learning_rate': {'type': 'constant', 'constant': {'learning_rate': 0.1}},
      'ema': ema})


def test_factory_wraps_the_optimizer_when_ema_is_set():
  config = _config(average_decay=0.9, start_step=5, dynamic_decay=False,
                   trainable_weights_only=False)
  assert isinstance(config.ema, optimization.EMAConfig)
  factory = optimization.OptimizerFactory(config)
  for legacy in (True, False):
    optimizer = factory.build_optimizer(factory.build_learning_rate(),
                                        use_legacy_optimizer=legacy)
    assert isinstance(optimizer, optimization.ExponentialMovingAverage)
    assert isinstance(optimizer.inner_optimizer, keras_optimizers.SGD)
    assert optimizer.inner_optimizer.momentum == 0.9
    config_dict = optimizer.get_config()
    assert (config_dict['average_decay'], config_dict['start_step'],
            config_dict['dynamic_decay'], config_dict['trainable_weights_only'],
            config_dict['name']) == (0.9, 5, False, False, 'ExponentialMovingAverage')


def test_factory_postprocessor_sees_the_ema_wrapper():
  factory = optimization.OptimizerFactory(_config())
  seen = []
  factory.build_optimizer(0.1, postprocessor=lambda opt: seen.append(opt) or opt)
  assert isinstance(seen[0], optimization.ExponentialMovingAverage)


def test_factory_without_ema_builds_the_plain_optimizer():
  config = _config()
  config.ema = None
  factory = optimization.OptimizerFactory(config)
  assert isinstance(factory.build_optimizer(0.1), keras_optimizers.SGD)


def test_ema_config_defaults_match_model_garden():
  ema = optimization.EMAConfig()
  assert (ema.name, ema.trainable_weights_only, ema.average_decay, ema.start_step,
          ema.dynamic_decay) == ('ExponentialMovingAverage', True, 0.99, 0, True)
  assert optimization.OptimizationConfig().ema is None
  with pytest.raises(hyperparams.ConfigError, match='ema.average_decay'):
    optimization.OptimizerFactory(_config(average_decay=2.0))
