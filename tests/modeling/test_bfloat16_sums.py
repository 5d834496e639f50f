"""Tests for official/modeling/bfloat16_sums.py: bfloat16 sums in float32 on every kernel path.

`.ci/run` runs this file twice: on the machine's own kernels and with oneDNN off
(`TF_ENABLE_ONEDNN_OPTS=0`), TensorFlow's kernels on an AVX2-only CPU.
"""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling import bfloat16_sums
from official.nlp.modeling.layers import einsum_dense

NATIVE = bfloat16_sums.tensorflow_sums_bfloat16_in_float32()


def _ulps_from_nearest(got, exact):
  """|got - exact| in bfloat16 steps at `exact` (float64 reference)."""
  got = np.asarray(tf.cast(got, tf.float64)).astype(np.float64)
  step = 2.0 ** (np.floor(np.log2(np.abs(exact))) - 7)
  return np.abs(got - exact) / step


def _operands(k):
  rng = np.random.default_rng(k)
  a = tf.constant(rng.normal(size=(16, k)), tf.bfloat16)
  b = tf.constant(rng.normal(size=(k, 24)), tf.bfloat16)
  exact = tf.cast(a, tf.float64).numpy() @ tf.cast(b, tf.float64).numpy()
  return a, b, exact


def test_tensorflow_kernels_behave_as_the_module_says():
  """The docstring's account of TensorFlow's own kernels on this process's path."""
  tiny = tf.fill([2, 4096], tf.constant(0.01, tf.bfloat16))  # 0.010009765625; 4,096 of it: 41
  total = float(tf.einsum('ik,kj->ij', tiny, tf.ones([4096, 3], tf.bfloat16))[0, 0])
  a, b, exact = _operands(300)
  error = tf.cast(tf.matmul(a, b), tf.float64).numpy() - exact
  toward_zero = np.mean(np.sign(error) == -np.sign(exact))
  if NATIVE:  # oneDNN: float32 sums, rounded to nearest once
    assert total == 41.0
    assert _ulps_from_nearest(tf.matmul(a, b), exact).max() <= 0.5 + 1e-3
    assert 0.3 < toward_zero < 0.7
  else:  # Eigen: einsum sums in bfloat16 (stalls at 16), matmul truncates
    assert total < 40.0
    assert _ulps_from_nearest(tf.matmul(a, b), exact).max() < 1.0 + 1e-3
    assert toward_zero > 0.99


@pytest.mark.parametrize('k', [12, 1216])
def test_einsum_matmul_and_column_sums_round_the_float32_sum_once(k):
  a, b, exact = _operands(k)
  # float32 sums of k products: off by at most k * 2^-24 of sum |terms|, far below a bfloat16
  # step of the sum unless it cancels; the nearest rounding adds at most half a step.
  slack = k * 2.0 ** -24 * (np.abs(tf.cast(a, tf.float64).numpy())
                            @ np.abs(tf.cast(b, tf.float64).numpy()))
  step = 2.0 ** (np.floor(np.log2(np.abs(exact))) - 7)
  for got in (bfloat16_sums.einsum('ik,kj->ij', a, b), bfloat16_sums.matmul(a, b)):
    assert got.dtype == tf.bfloat16
    assert (_ulps_from_nearest(got, exact) <= 0.5 + slack / step).all()
  sums = bfloat16_sums.column_sums(b)
  exact_sums = tf.cast(b, tf.float64).numpy().sum(0)
  assert sums.dtype == tf.bfloat16 and sums.shape == [24]
  assert (_ulps_from_nearest(sums, exact_sums) <= 0.5 + 1e-3).all()


def test_einsum_of_many_small_terms():
  tiny = tf.fill([2, 4096], tf.constant(0.01, tf.bfloat16))
  assert float(bfloat16_sums.einsum('ik,kj->ij', tiny, tf.ones([4096, 3], tf.bfloat16))[0, 0]) == 41
  assert float(bfloat16_sums.column_sums(tf.transpose(tiny))[0]) == 41


def test_the_eigen_path_casts_and_the_native_path_does_not(monkeypatch):
  a, b, _ = _operands(8)

  def ops(native, dtype):
    monkeypatch.setattr(bfloat16_sums, 'tensorflow_sums_bfloat16_in_float32', lambda: native)
    graph = tf.function(lambda x, y: bfloat16_sums.einsum('ik,kj->ij', x, y)).get_concrete_function(
        tf.TensorSpec(a.shape, dtype), tf.TensorSpec(b.shape, dtype)).graph
    return [op.type for op in graph.get_operations()]

  assert 'Cast' in ops(False, tf.bfloat16)
  assert 'Cast' not in ops(True, tf.bfloat16)
  assert 'Cast' not in ops(False, tf.float32)  # float32 is never touched


def test_float32_inputs_are_tensorflow_s_ops_unchanged():
  rng = np.random.default_rng(1)
  a = tf.constant(rng.normal(size=(5, 7)), tf.float32)
  b = tf.constant(rng.normal(size=(7, 3)), tf.float32)
  np.testing.assert_array_equal(bfloat16_sums.matmul(a, b), tf.matmul(a, b))
  np.testing.assert_array_equal(bfloat16_sums.einsum('ik,kj->ij', a, b),
                                tf.einsum('ik,kj->ij', a, b))


def test_float32_sum_einsum_dense_is_keras_layer_with_float32_sums():
  layer = einsum_dense.Float32SumEinsumDense('btw,wd->btd', output_shape=[None, 4], bias_axes='d',
                                             activation='relu', name='proj')
  keras_layer = tf_keras.layers.EinsumDense('btw,wd->btd', output_shape=[None, 4], bias_axes='d',
                                            activation='relu', name='proj')
  x = tf.constant(np.random.default_rng(2).normal(size=(2, 3, 8)), tf.float32)
  layer(x), keras_layer(x)
  keras_layer.set_weights(layer.get_weights())
  assert [w.name for w in layer.weights] == [w.name for w in keras_layer.weights]
  np.testing.assert_array_equal(layer(x), keras_layer(x))
  config = layer.get_config()
  assert config == keras_layer.get_config()
  clone = einsum_dense.Float32SumEinsumDense.from_config(config)
  assert type(clone) is einsum_dense.Float32SumEinsumDense and clone.get_config() == config
  restored = tf_keras.layers.deserialize(tf_keras.layers.serialize(layer))
  assert type(restored) is einsum_dense.Float32SumEinsumDense
  # Many small bfloat16 terms: the sum is float32 whatever the kernel.
  wide = einsum_dense.Float32SumEinsumDense('bw,wd->bd', output_shape=[1], dtype='mixed_bfloat16')
  wide.build([None, 4096])
  wide.kernel.assign(tf.ones([4096, 1]))
  assert float(wide(tf.fill([1, 4096], 0.01))[0, 0]) == 41
