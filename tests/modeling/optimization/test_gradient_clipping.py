"""Tests for official/modeling/optimization/gradient_clipping.py.

Clipping must act on the gradients summed across replicas: the MirroredStrategy test runs in a
child process (`run_on_two_cpus`) because the 2 logical CPU devices must be configured before
TensorFlow initializes.
"""

import json

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling.optimization import adamw
from official.modeling.optimization import keras_optimizers
from tests.processes import run_on_two_cpus


def _np_clip_by_global_norm(grads, clip):
  norm = np.sqrt(sum(np.sum(g * g) for g in grads))
  return [g * clip / max(norm, clip) for g in grads]


def _spy(store):
  def transformer(grads_and_vars):
    store.append([None if g is None else tf.convert_to_tensor(g).numpy()
                  for g, _ in grads_and_vars])
    return grads_and_vars
  return transformer


def test_global_norm_clipping_matches_numpy():
  rng = np.random.default_rng(0)
  grads = [rng.normal(size=s).astype(np.float32) for s in ((3, 2), (4,), ())]
  variables = [tf.Variable(np.zeros_like(g)) for g in grads]
  seen = []
  opt = keras_optimizers.SGD(learning_rate=0.5, global_clipnorm=0.7,
                             gradient_transformers=[_spy(seen)])
  opt.apply_gradients(zip([tf.constant(g) for g in grads], variables))
  expected = _np_clip_by_global_norm(grads, 0.7)
  for got, want, var in zip(seen[0], expected, variables):
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(var.numpy(), -0.5 * want, rtol=1e-6)


def test_small_gradients_are_not_scaled():
  seen = []
  opt = keras_optimizers.SGD(1.0, global_clipnorm=10.0, gradient_transformers=[_spy(seen)])
  opt.apply_gradients([(tf.constant([3.0, 4.0]), tf.Variable([0.0, 0.0]))])
  np.testing.assert_allclose(seen[0][0], [3.0, 4.0])


def test_clipnorm_then_clipvalue_per_variable():
  seen = []
  opt = keras_optimizers.Adam(1e-3, clipnorm=1.0, gradient_transformers=[_spy(seen)])
  opt.apply_gradients([(tf.constant([3.0, 4.0]), tf.Variable([0.0, 0.0])),
                       (tf.constant([0.1]), tf.Variable([0.0]))])
  np.testing.assert_allclose(seen[0][0], [0.6, 0.8], rtol=1e-6)
  np.testing.assert_allclose(seen[0][1], [0.1], rtol=1e-6)
  seen.clear()
  opt = keras_optimizers.SGD(1.0, clipvalue=0.5, gradient_transformers=[_spy(seen)])
  opt.apply_gradients([(tf.constant([3.0, -4.0, 0.2]), tf.Variable([0.0, 0.0, 0.0]))])
  np.testing.assert_allclose(seen[0][0], [0.5, -0.5, 0.2])


def test_none_gradients_are_skipped():
  a, b = tf.Variable([1.0]), tf.Variable([2.0])
  keras_optimizers.SGD(1.0, global_clipnorm=1.0).apply_gradients(
      [(tf.constant([3.0]), a), (None, b)])
  np.testing.assert_allclose(a.numpy(), [0.0])
  np.testing.assert_allclose(b.numpy(), [2.0])


def test_loss_scale_optimizer_clips_unscaled_gradients():
  results = []
  for wrap in (False, True):
    w = tf.Variable([1.0, -2.0, 0.5], name='dense/kernel')
    opt = adamw.AdamWeightDecay(0.1, weight_decay_rate=0.1, gradient_clip_norm=0.1)
    if wrap:
      opt = tf_keras.mixed_precision.LossScaleOptimizer(opt, dynamic=False, initial_scale=256.0)
    for _ in range(2):
      with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(w - 3.0))
        if wrap:
          loss = opt.get_scaled_loss(loss)
      grads = tape.gradient(loss, [w])
      if wrap:
        grads = opt.get_unscaled_gradients(grads)
      opt.apply_gradients(zip(grads, [w]))
    results.append(w.numpy())
  np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


_DISTRIBUTED_SCRIPT = r'''
import json
import numpy as np
import tensorflow as tf
import tf_keras
from official.modeling import optimization

X = np.array([[1., 2., 0.], [0., -1., 3.], [2., 2., 2.], [-1., 0., 1.]], np.float32)
Y = np.array([1., -2., 5., 0.5], np.float32)
MAKERS = {
    'sgd': lambda: optimization.SGD(1.0, global_clipnorm=0.1),
    'keras_sgd': lambda: tf_keras.optimizers.SGD(1.0, global_clipnorm=0.1),
    'adamw': lambda: optimization.AdamWeightDecay(
        0.1, weight_decay_rate=0.1, exclude_from_weight_decay=['bias'], gradient_clip_norm=0.1),
    'adamw_loss_scale': lambda: tf_keras.mixed_precision.LossScaleOptimizer(
        optimization.AdamWeightDecay(0.1, weight_decay_rate=0.1, exclude_from_weight_decay=['bias'],
                                     gradient_clip_norm=0.1), dynamic=False, initial_scale=64.0),
    'lamb': lambda: optimization.LAMB(0.1, weight_decay_rate=0.1, global_clipnorm=0.1),
}


def run(strategy, make, steps=3):
  replicas = strategy.num_replicas_in_sync
  with strategy.scope():
    w = tf.Variable([0.5, -0.5, 1.0], name='dense/kernel')
    b = tf.Variable([0.1], name='dense/bias')
    opt = make()
  per = len(X) // replicas
  values = strategy.experimental_distribute_values_from_function(
      lambda ctx: (X[ctx.replica_id_in_sync_group * per:(ctx.replica_id_in_sync_group + 1) * per],
                   Y[ctx.replica_id_in_sync_group * per:(ctx.replica_id_in_sync_group + 1) * per]))
  scaled = isinstance(opt, tf_keras.mixed_precision.LossScaleOptimizer)

  def replica_step(x, y):
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(tf.square(tf.linalg.matvec(x, w) + b - y)) / len(X)
      if scaled:
        loss = opt.get_scaled_loss(loss)
    grads = tape.gradient(loss, [w, b])
    if scaled:
      grads = opt.get_unscaled_gradients(grads)
    opt.apply_gradients(zip(grads, [w, b]))

  @tf.function
  def step():
    strategy.run(replica_step, args=values)

  for _ in range(steps):
    step()
  return np.concatenate([w.numpy(), b.numpy()]).tolist()


mirrored = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
assert mirrored.num_replicas_in_sync == 2
out = {name: {'one': run(tf.distribute.get_strategy(), make), 'two': run(mirrored, make)}
       for name, make in MAKERS.items()}
print('RESULT ' + json.dumps(out))
'''


@pytest.fixture(scope='module')
def distributed_results():
  proc = run_on_two_cpus(_DISTRIBUTED_SCRIPT)
  lines = [line for line in proc.stdout.splitlines() if line.startswith('RESULT ')]
  assert proc.returncode == 0 and lines, proc.stderr[-3000:]
  return json.loads(lines[-1][len('RESULT '):])


@pytest.mark.slow
@pytest.mark.parametrize('name', ['sgd', 'keras_sgd', 'adamw', 'adamw_loss_scale', 'lamb'])
def test_two_replicas_match_one(distributed_results, name):
  result = distributed_results[name]
  np.testing.assert_allclose(result['two'], result['one'], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_distributed_sgd_matches_numpy_clip_of_summed_gradient(distributed_results):
  x = np.array([[1., 2., 0.], [0., -1., 3.], [2., 2., 2.], [-1., 0., 1.]])
  y = np.array([1., -2., 5., 0.5])
  w, b = np.array([0.5, -0.5, 1.0]), np.array([0.1])
  for _ in range(3):
    r = x @ w + b - y
    g_w, g_b = 2 * x.T @ r / 4, np.array([2 * r.sum() / 4])
    # Clipping is active (even per replica).
    assert np.sqrt(np.sum(g_w ** 2) + np.sum(g_b ** 2)) > 0.2
    g_w, g_b = _np_clip_by_global_norm([g_w, g_b], 0.1)
    w, b = w - g_w, b - g_b
  np.testing.assert_allclose(distributed_results['sgd']['two'], np.concatenate([w, b]), rtol=1e-5)
  np.testing.assert_allclose(distributed_results['adamw_loss_scale']['two'],
                             distributed_results['adamw']['two'], rtol=1e-5)
