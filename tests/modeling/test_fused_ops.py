"""Tests for official/modeling/fused_ops.py: values and gradients against plain TensorFlow."""

import numpy as np
import pytest
import tensorflow as tf

from official.modeling import fused_ops
from official.modeling import tf_utils

SEED = tf.constant([123, 456], tf.uint32)


def _value_and_grads(fn, inputs, upstream):
  """fn(*inputs) and d(sum(fn * upstream))/d(inputs), in float32 numpy."""
  with tf.GradientTape() as tape:
    tape.watch(inputs)
    out = fn(*inputs)
    total = tf.reduce_sum(tf.cast(out, tf.float32) * upstream)
  grads = tape.gradient(total, inputs)
  as_np = lambda t: tf.cast(t, tf.float32).numpy()
  return as_np(out), [as_np(g) for g in grads]


def _assert_same(fused, plain, inputs, upstream, atol, rtol=1e-5):
  got, got_grads = _value_and_grads(fused, inputs, upstream)
  want, want_grads = _value_and_grads(plain, inputs, upstream)
  np.testing.assert_allclose(got, want, atol=atol, rtol=rtol)
  for got_grad, want_grad in zip(got_grads, want_grads):
    np.testing.assert_allclose(got_grad, want_grad, atol=atol, rtol=rtol)


@pytest.mark.parametrize('approximate', [True, False])
def test_gelu_matches_tf_nn_gelu(approximate):
  x = tf.random.normal([4, 37, 24], seed=1) * 3.0
  upstream = tf.random.normal(x.shape, seed=2)
  _assert_same(lambda x: fused_ops.gelu(x, approximate),
               lambda x: tf.nn.gelu(x, approximate=approximate), [x], upstream, atol=2e-5)


def test_gelu_bfloat16_stays_bfloat16_and_is_close():
  x = tf.random.normal([64, 32], seed=3)
  upstream = tf.random.normal(x.shape, seed=4)
  got, (got_grad,) = _value_and_grads(fused_ops.gelu, [tf.cast(x, tf.bfloat16)], upstream)
  want, (want_grad,) = _value_and_grads(lambda x: tf.nn.gelu(x, approximate=True), [x], upstream)
  assert fused_ops.gelu(tf.cast(x, tf.bfloat16)).dtype == tf.bfloat16
  np.testing.assert_allclose(got, want, atol=3e-2, rtol=2e-2)
  np.testing.assert_allclose(got_grad, want_grad, atol=5e-2, rtol=3e-2)


@pytest.mark.parametrize('approximate', [True, False])
def test_geglu_matches_gelu_of_the_first_half_times_the_second(approximate):
  x = tf.random.normal([3, 5, 2 * 24], seed=30) * 2.0
  upstream = tf.random.normal([3, 5, 24], seed=31)

  def plain(x):
    inner, gate = tf.split(x, 2, axis=-1)
    return tf.nn.gelu(inner, approximate=approximate) * gate

  _assert_same(lambda x: fused_ops.geglu(x, approximate), plain, [x], upstream, atol=5e-5)
  half = fused_ops.geglu(tf.cast(x, tf.bfloat16), approximate)
  assert half.dtype == tf.bfloat16
  np.testing.assert_allclose(tf.cast(half, tf.float32), plain(x), atol=0.1, rtol=3e-2)


@pytest.mark.parametrize('approximate', [False, True])
def test_gated_gelu_equals_geglu_on_the_joined_halves(approximate):
  inner = tf.random.normal([4, 6, 24], seed=34) * 2.0
  gate = tf.random.normal([4, 6, 24], seed=35)
  upstream = tf.random.normal([4, 6, 24], seed=36)
  _assert_same(lambda i, g: fused_ops.gated_gelu(i, g, approximate),
               lambda i, g: tf.nn.gelu(i, approximate=approximate) * g, [inner, gate], upstream,
               atol=5e-5)
  # In bfloat16, the same values and gradients as geglu (the same float32 math, one rounding).
  joined = tf.cast(tf.concat([inner, gate], -1), tf.bfloat16)
  halves = tf.split(joined, 2, axis=-1)
  _, want = _value_and_grads(lambda x: fused_ops.geglu(x, approximate), [joined], upstream)
  got_value, got = _value_and_grads(lambda i, g: fused_ops.gated_gelu(i, g, approximate),
                                    halves, upstream)
  np.testing.assert_array_equal(np.concatenate(got, -1), want[0])
  np.testing.assert_array_equal(
      got_value, tf.cast(fused_ops.geglu(joined, approximate), tf.float32).numpy())
  with pytest.raises(ValueError, match=r'inner and gate must have one shape, found \(2, 3\) and '
                     r'\(2, 4\)'):
    fused_ops.gated_gelu(tf.ones([2, 3]), tf.ones([2, 4]))


def test_rotary_matches_apply_rotary_and_its_gradient():
  from official.nlp.modeling.layers import rotary_embedding  # pylint: disable=g-import-not-at-top
  x = tf.random.normal([2, 3, 7, 8], seed=32)
  cos, sin = rotary_embedding.rotary_cos_sin(tf.constant([[0, 1, 2, 0, 1, 2, 3]] * 2), 8, 100.0)
  cos, sin = cos[:, None], sin[:, None]
  upstream = tf.random.normal(x.shape, seed=33)
  _assert_same(lambda x: fused_ops.rotary(x, cos, sin),
               lambda x: rotary_embedding.apply_rotary(x, cos, sin), [x], upstream, atol=2e-6)
  half = fused_ops.rotary(tf.cast(x, tf.bfloat16), cos, sin)
  assert half.dtype == tf.bfloat16
  np.testing.assert_allclose(tf.cast(half, tf.float32),
                             rotary_embedding.apply_rotary(x, cos, sin), atol=3e-2, rtol=1e-2)


def _plain_softmax_dropout(scores, adder, seed, rate, scale):
  probs = tf.nn.softmax(tf.cast(scores, tf.float32) * scale + adder, axis=-1)
  if seed is None:
    return probs
  keep = fused_ops.keep_mask(tf.shape(scores), seed, rate)
  return tf.where(keep, probs / (1.0 - rate), 0.0)


@pytest.mark.slow
@pytest.mark.parametrize('seed', [None, SEED])
def test_masked_softmax_dropout_matches_plain_ops(seed):
  scores = tf.random.normal([2, 3, 5, 64], seed=5) * 4.0
  mask = tf.cast(tf.random.uniform([2, 1, 1, 64], seed=6) > 0.3, tf.float32)
  adder = (1.0 - mask) * -1e9
  upstream = tf.random.normal(scores.shape, seed=7)
  scale = 0.125
  _assert_same(lambda s: fused_ops.masked_softmax_dropout(s, adder, seed, 0.2, scale=scale),
               lambda s: _plain_softmax_dropout(s, adder, seed, 0.2, scale),
               [scores], upstream, atol=1e-6)


def test_masked_softmax_dropout_output_dtype_and_masked_keys():
  scores = tf.zeros([1, 4], tf.bfloat16)
  adder = tf.constant([[0.0, 0.0, -1e9, -1e9]])
  out = fused_ops.masked_softmax_dropout(scores, adder, dtype=tf.bfloat16)
  assert out.dtype == tf.bfloat16
  np.testing.assert_array_equal(tf.cast(out, tf.float32), [[0.5, 0.5, 0.0, 0.0]])


def test_dropout_matches_the_mask_and_scales():
  x = tf.random.normal([50, 30], seed=15)
  upstream = tf.random.normal(x.shape, seed=16)
  keep = fused_ops.keep_mask(x.shape, SEED, 0.4)
  _assert_same(lambda x: fused_ops.dropout(x, SEED, 0.4),
               lambda x: tf.where(keep, x / 0.6, 0.0), [x], upstream, atol=1e-6)


def test_keep_mask_statistics():
  rate = 0.1
  keep = fused_ops.keep_mask([1000, 1000], SEED, rate).numpy().ravel()
  # 1e6 draws: the standard deviation of the kept fraction is 3e-4.
  assert abs(keep.mean() - (1 - rate)) < 2e-3
  # Neighbours are independent: P(both kept) = 0.81 (standard deviation ~4e-4).
  assert abs((keep[:-1] & keep[1:]).mean() - 0.81) < 2e-3
  assert abs((keep[:-128] & keep[128:]).mean() - 0.81) < 2e-3
  # Another seed gives an independent mask; the same seed the same one.
  other = fused_ops.keep_mask([1000, 1000], tf.constant([124, 456], tf.uint32), rate)
  other = other.numpy().ravel()
  assert abs((keep == other).mean() - (0.81 + 0.01)) < 2e-3
  np.testing.assert_array_equal(keep, fused_ops.keep_mask([1000, 1000], SEED, rate).numpy().ravel())


def test_dropout_seed_sources():
  generator = tf.random.Generator.from_seed(3)
  first = fused_ops.dropout_seed(generator=generator)
  assert first.dtype == tf.uint32 and first.shape == [2]
  assert not np.array_equal(first, fused_ops.dropout_seed(generator=generator))  # state advances
  np.testing.assert_array_equal(fused_ops.dropout_seed(seed=[1, 2]),
                                fused_ops.dropout_seed(seed=[1, 2]))
  assert fused_ops.dropout_seed().shape == [2]


@pytest.mark.parametrize('rate', [-0.1, 1.0])
def test_keep_threshold_rejects_bad_rates(rate):
  with pytest.raises(ValueError, match=r'dropout rate must be in \[0, 1\), found'):
    fused_ops.keep_threshold(rate)


@pytest.mark.parametrize('center', [True, False])
def test_layer_norm_matches_keras_layer_norm(center):
  """Values and the gradients of x, gamma and beta against tf_keras' LayerNormalization."""
  import tf_keras  # pylint: disable=g-import-not-at-top
  norm = tf_keras.layers.LayerNormalization(epsilon=1e-5, center=center)
  norm.build([None, None, 48])
  norm.gamma.assign(tf.random.normal([48], seed=20) + 1.0)
  if center:
    norm.beta.assign(tf.random.normal([48], seed=21))
  x = tf.random.normal([3, 7, 48], seed=22) * 2.0 + 0.5
  upstream = tf.random.normal(x.shape, seed=23)
  params = [norm.gamma] + ([norm.beta] if center else [])
  with tf.GradientTape() as tape:
    tape.watch(x)
    total = tf.reduce_sum(norm(x) * upstream)
  want_grads = tape.gradient(total, [x] + params)
  with tf.GradientTape() as tape:
    tape.watch(x)
    out = fused_ops.layer_norm(x, norm.gamma, norm.beta if center else None, 1e-5)
    total = tf.reduce_sum(out * upstream)
  got_grads = tape.gradient(total, [x] + params)
  np.testing.assert_allclose(out, norm(x), atol=2e-5, rtol=2e-5)
  for got, want in zip(got_grads, want_grads):
    np.testing.assert_allclose(got, want, atol=5e-5, rtol=2e-5)


def test_layer_norm_bfloat16_in_and_out_with_float32_statistics():
  x = tf.random.normal([40, 256], seed=24) * 10.0 + 100.0  # bf16 sums lose the small terms
  out = fused_ops.layer_norm(tf.cast(x, tf.bfloat16), tf.ones([256]), tf.zeros([256]))
  rounded = tf.cast(tf.cast(x, tf.bfloat16), tf.float32)
  mean, variance = tf.nn.moments(rounded, axes=[-1], keepdims=True)
  want = (rounded - mean) * tf.math.rsqrt(variance + 1e-12)
  assert out.dtype == tf.bfloat16
  assert fused_ops.layer_norm(tf.cast(x, tf.bfloat16), tf.ones([256]),
                              dtype=tf.float32).dtype == tf.float32
  np.testing.assert_allclose(tf.cast(out, tf.float32), want, atol=3e-2)


def test_bad_shapes_are_named():
  with pytest.raises(ValueError, match=r'layer_norm: gamma must be \[8\] .*found shape \(4,\)'):
    fused_ops.layer_norm(tf.ones([2, 8]), tf.ones([4]))
  with pytest.raises(ValueError, match=r'layer_norm: beta must be \[8\]'):
    fused_ops.layer_norm(tf.ones([2, 8]), tf.ones([8]), tf.ones([3]))
  with pytest.raises(ValueError, match=r'geglu needs an even last axis.*\(2, 7\)'):
    fused_ops.geglu(tf.ones([2, 7]))


@pytest.mark.slow
def test_kernels_inside_a_tf_function_with_unknown_batch():
  @tf.function(input_signature=[tf.TensorSpec([None, 8, 32], tf.float32)])
  def step(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = fused_ops.layer_norm(x + fused_ops.dropout(fused_ops.gelu(x), SEED, 0.1),
                               tf.ones([32]), tf.zeros([32]))
      scores = tf.matmul(y, y, transpose_b=True)
      z = fused_ops.masked_softmax_dropout(scores, None, SEED, 0.1, scale=0.5)
      total = tf.reduce_sum(z * tf.range(8, dtype=tf.float32))
    return tape.gradient(total, x)

  for batch in (2, 5):
    grad = step(tf.random.normal([batch, 8, 32], seed=batch))
    assert grad.shape == [batch, 8, 32] and np.isfinite(grad.numpy()).all()


def test_cast_bias_add_matches_cast_then_add_values_and_gradients():
  rng = np.random.default_rng(3)
  rows = tf.constant(rng.normal(size=(5, 7)), tf.bfloat16)
  bias = tf.constant(rng.normal(size=(7,)) * 1e-3 + 1.0, tf.float32)
  upstream = tf.constant(rng.normal(size=(5, 7)), tf.float32)

  def grads(add):
    with tf.GradientTape() as tape:
      tape.watch([rows, bias])
      out = add(rows, bias)
      total = tf.reduce_sum(out * upstream)
    return (out,) + tuple(tape.gradient(total, [rows, bias]))

  out, d_rows, d_bias = grads(fused_ops.cast_bias_add)
  want, want_rows, want_bias = grads(lambda r, b: tf.cast(r, tf.float32) + b)
  assert out.dtype == tf.float32 and d_rows.dtype == tf.bfloat16 and d_bias.dtype == tf.float32
  np.testing.assert_allclose(out, want, rtol=1e-7)  # the bias is not rounded to bfloat16
  np.testing.assert_allclose(tf.cast(d_rows, tf.float32), tf.cast(want_rows, tf.float32))
  np.testing.assert_allclose(d_bias, want_bias, rtol=1e-5)
  with pytest.raises(ValueError, match=r'rows must be 2-D .*\(5, 7\) and bias \(6,\)'):
    fused_ops.cast_bias_add(rows, tf.ones([6]))


def _loss_and_grads(loss_fn, rows, bias, weights):
  """(losses, argmax, d rows, d bias) of sum(loss_fn(rows, bias)[0] * weights)."""
  with tf.GradientTape() as tape:
    tape.watch([rows, bias])
    loss, top = loss_fn(rows, bias)
    total = tf.reduce_sum(loss * weights)
  return (loss, top) + tuple(tape.gradient(total, [rows, bias]))


@pytest.mark.parametrize('width', [2, 37, 4096])  # 4096 is folded; 37 is not
@pytest.mark.parametrize('compiled', [False, True])
def test_biased_cross_entropy_matches_loss_on_cast_bias_add(width, compiled):
  rng = np.random.default_rng(width)
  rows = tf.constant(rng.normal(size=(9, width)) * 4, tf.bfloat16)
  rows = tf.tensor_scatter_nd_update(  # ties: row 0's maximum at columns 0 and 1 (the first wins)
      rows, [[0, 0], [0, 1]], tf.constant([40.0, 40.0], tf.bfloat16))
  bias = tf.constant(np.r_[0.0, 0.0, rng.normal(size=width - 2) * 0.1], tf.float32)
  labels = tf.constant(rng.integers(0, width, size=9), tf.int32)
  weights = tf.constant(rng.uniform(size=9), tf.float32)
  run = tf.function if compiled else lambda f: f
  fused = run(lambda: _loss_and_grads(
      lambda r, b: fused_ops.biased_cross_entropy_with_argmax(labels, r, b), rows, bias, weights))()
  plain = run(lambda: _loss_and_grads(
      lambda r, b: tf_utils.sparse_softmax_cross_entropy_with_argmax(
          labels, fused_ops.cast_bias_add(r, b)), rows, bias, weights))()
  loss, top, d_rows, d_bias = fused
  want_loss, want_top, want_rows, want_bias = plain
  assert (loss.dtype, top.dtype, d_rows.dtype, d_bias.dtype) == (
      tf.float32, tf.int32, tf.bfloat16, tf.float32)
  np.testing.assert_allclose(loss, want_loss, rtol=1e-5, atol=1e-5)
  np.testing.assert_array_equal(top, want_top)
  assert top[0] == 0
  # The rows' gradient is the float32 one rounded to bfloat16 once: equal up to one bfloat16 step
  # where the two float32 softmaxes round differently.
  as_float = lambda t: tf.cast(t, tf.float32).numpy()
  np.testing.assert_allclose(as_float(d_rows), as_float(want_rows), rtol=2 ** -7, atol=1e-7)
  # The bias gradient: the column sums of the bfloat16 rows' gradient (float32 accumulation, the
  # sum rounded to bfloat16), so against the float32 one each column is off by at most a bfloat16
  # rounding of each term and of the sum.
  ours = as_float(d_rows).astype(np.float64)
  np.testing.assert_allclose(d_bias, ours.sum(0), rtol=2 ** -8, atol=1e-7)
  bound = 2 ** -8 * (np.abs(ours).sum(0) + np.abs(as_float(want_bias)))
  assert (np.abs(as_float(d_bias) - as_float(want_bias)) <= bound).all()


def test_biased_rows_marks_cast_bias_add_and_survives_reshape_marked():
  rows, bias = tf.ones([6, 3], tf.bfloat16), tf.zeros([3])
  logits = fused_ops.cast_bias_add(rows, bias)
  source = fused_ops.biased_rows(logits)
  assert source is not None and source[0] is rows and source[1].dtype == tf.float32
  reshaped = fused_ops.reshape_marked(logits, [2, 3, 3])
  assert reshaped.shape == [2, 3, 3] and fused_ops.biased_rows(reshaped)[0] is rows
  # Any other op makes a tensor without the mark.
  assert fused_ops.biased_rows(logits * 1.0) is None
  assert fused_ops.biased_rows(tf.reshape(logits, [2, 3, 3])) is None
  assert fused_ops.reshape_marked(tf.ones([6, 3]), [18]).shape == [18]
