"""Tests for official/modeling/tf_utils.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from tests.processes import run_on_two_cpus


def test_gelu_is_the_tanh_approximation():
  x = np.linspace(-4, 4, 17).astype(np.float32)
  expected = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
  np.testing.assert_allclose(tf_utils.get_activation('gelu')(x), expected, atol=1e-6)
  assert not np.allclose(tf_utils.get_activation('exact_gelu')(x), expected, atol=1e-6)


def test_names_round_trip_and_errors():
  for name in ('gelu', 'relu', 'tanh', 'linear'):
    assert tf_utils.serialize_activation(tf_utils.get_activation(name)) in (name, 'identity')
  assert tf_utils.get_activation(None)(3.0) == 3.0
  with pytest.raises(ValueError, match="unknown activation 'nope'"):
    tf_utils.get_activation('nope')


def test_identity_names_and_callables():
  x = tf.constant([-1.0, 2.0])
  for identifier in (None, 'linear', 'identity'):
    np.testing.assert_allclose(tf_utils.get_activation(identifier)(x), [-1.0, 2.0])
  np.testing.assert_allclose(tf_utils.get_activation('relu')(x), [0.0, 2.0])
  np.testing.assert_allclose(tf_utils.get_activation('tanh')(x), np.tanh([-1.0, 2.0]), atol=1e-6)
  custom = lambda t: 2 * t
  assert tf_utils.get_activation(custom) is custom


def test_unknown_name_lists_known_ones():
  with pytest.raises(ValueError, match='known: .*exact_gelu.*gelu'):
    tf_utils.get_activation('gelu_fast_nonexistent')


def test_serialize_activation_names():
  assert tf_utils.serialize_activation(None) is None
  assert tf_utils.serialize_activation('gelu') == 'gelu'
  assert tf_utils.serialize_activation(tf_utils.get_activation('exact_gelu')) == 'exact_gelu'


def test_clone_initializer_gives_an_equal_but_separate_instance():
  initializer = tf_keras.initializers.TruncatedNormal(stddev=0.02, seed=7)
  clone = tf_utils.clone_initializer(initializer)
  assert clone is not initializer and clone.get_config() == initializer.get_config()
  np.testing.assert_allclose(clone([3, 2]), initializer([3, 2]))
  assert tf_utils.clone_initializer('zeros') == 'zeros'


def _cross_entropy_pair(labels, logits, weights):
  """Loss and logits-gradient of tf_utils and of TensorFlow's own op, both weighted by `weights`."""
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(logits)
    ours = tf_utils.sparse_softmax_cross_entropy(labels, logits)
    reference = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    ours_total = tf.reduce_sum(ours * weights)
    reference_total = tf.reduce_sum(reference * weights)
  return ((ours, tape.gradient(ours_total, logits)),
          (reference, tape.gradient(reference_total, logits)))


def test_sparse_softmax_cross_entropy_matches_tensorflow_values_and_gradients():
  rng = np.random.default_rng(0)
  # [batch, predictions, vocab]
  logits = tf.constant(rng.normal(scale=8.0, size=(3, 4, 37)), tf.float32)
  labels = tf.constant(rng.integers(0, 37, size=(3, 4)), tf.int32)
  weights = tf.constant(rng.uniform(size=(3, 4)), tf.float32)
  (loss, grad), (ref_loss, ref_grad) = _cross_entropy_pair(labels, logits, weights)
  assert loss.shape == (3, 4) and loss.dtype == tf.float32
  np.testing.assert_allclose(loss, ref_loss, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(grad, ref_grad, atol=1e-6)
  # Numpy: -log softmax at the label.
  x = logits.numpy().astype(np.float64)
  log_softmax = x - x.max(-1, keepdims=True)
  log_softmax -= np.log(np.exp(log_softmax).sum(-1, keepdims=True))
  expected = -np.take_along_axis(log_softmax, labels.numpy()[..., None], -1)[..., 0]
  np.testing.assert_allclose(loss, expected, rtol=1e-5, atol=1e-5)


def test_sparse_softmax_cross_entropy_extreme_logits_and_xla():
  logits = tf.constant([[80.0, -80.0, 0.0], [0.0, 0.0, 0.0]])
  labels = tf.constant([1, 2])
  np.testing.assert_allclose(tf_utils.sparse_softmax_cross_entropy(labels, logits),
                             [160.0, np.log(3.0)], rtol=1e-6)

  @tf.function(jit_compile=True)
  def compiled(lg):
    with tf.GradientTape() as tape:
      tape.watch(lg)
      loss = tf.reduce_sum(tf_utils.sparse_softmax_cross_entropy(labels, lg))
    return loss, tape.gradient(loss, lg)

  loss, grad = compiled(logits)
  (_, ref_grad), (ref_loss, _) = _cross_entropy_pair(labels, logits, tf.ones([2]))
  np.testing.assert_allclose(loss, tf.reduce_sum(ref_loss), rtol=1e-6)
  np.testing.assert_allclose(grad, ref_grad, atol=1e-6)


def test_sparse_softmax_cross_entropy_casts_bfloat16_logits():
  logits = tf.constant([[1.0, 2.0, 3.0]], tf.bfloat16)
  loss = tf_utils.sparse_softmax_cross_entropy(tf.constant([2], tf.int64), logits)
  assert loss.dtype == tf.float32
  np.testing.assert_allclose(loss, [-np.log(np.exp(3) / np.exp([1, 2, 3]).sum())], rtol=1e-5)


def test_cross_entropy_argmax_is_tensorflows_first_maximum():
  logits = tf.constant([[[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]],
                        [[-1.0, -5.0, -0.5, -0.5], [0.0, 1.0, 0.0, 9.0]]])
  labels = tf.constant([[2, 0], [3, 3]])
  loss, top = tf_utils.sparse_softmax_cross_entropy_with_argmax(labels, logits)
  assert top.dtype == tf.int32 and top.shape == (2, 2)
  np.testing.assert_array_equal(top, tf.argmax(logits, -1))  # ties: the first index
  np.testing.assert_array_equal(top, [[1, 0], [2, 3]])
  np.testing.assert_allclose(loss, tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits),
                             rtol=1e-6, atol=1e-6)


def test_cross_entropy_names_labels_of_the_wrong_shape():
  with pytest.raises(ValueError, match=r'labels must have the shape of logits without its last '
                                       r'axis; found labels \(1, 1\) and logits \(2, 3\)'):
    tf_utils.sparse_softmax_cross_entropy(tf.constant([[1]]), tf.zeros([2, 3]))


def test_cross_entropy_gradient_is_in_the_dtype_of_bfloat16_logits():
  rng = np.random.default_rng(4)
  logits = tf.constant(rng.normal(scale=4.0, size=(6, 33)), tf.bfloat16)
  labels = tf.constant(rng.integers(0, 33, size=6), tf.int32)
  weights = tf.constant(rng.uniform(size=6), tf.float32)
  with tf.GradientTape() as tape:
    tape.watch(logits)
    loss = tf.reduce_sum(tf_utils.sparse_softmax_cross_entropy(labels, logits) * weights)
  grad = tape.gradient(loss, logits)
  assert grad.dtype == tf.bfloat16
  # The float32 gradient of the same (bfloat16-valued) logits, rounded once to bfloat16.
  (_, want), _ = _cross_entropy_pair(labels, tf.cast(logits, tf.float32), weights)
  np.testing.assert_allclose(tf.cast(grad, tf.float32),
                             tf.cast(tf.cast(want, tf.bfloat16), tf.float32), atol=1e-7)


def _bias_add_gradients(add, rows, bias):
  with tf.GradientTape() as tape:
    tape.watch([rows, bias])
    out = add(rows, bias)
    loss = tf.reduce_sum(
        tf.cast(out, tf.float32) * tf.cast(tf.range(out.shape[-1]) % 3, tf.float32))
  return out, tape.gradient(loss, [rows, bias], output_gradients=None)


def test_bias_add_matches_tf_bias_add_in_float32():
  rng = np.random.default_rng(1)
  rows = tf.constant(rng.normal(size=(50, 7)), tf.float32)
  bias = tf.constant(rng.normal(size=(7,)), tf.float32)
  out, (d_rows, d_bias) = _bias_add_gradients(tf_utils.bias_add, rows, bias)
  ref, (ref_rows, ref_bias) = _bias_add_gradients(tf.nn.bias_add, rows, bias)
  np.testing.assert_array_equal(out, ref)
  np.testing.assert_array_equal(d_rows, ref_rows)
  np.testing.assert_allclose(d_bias, ref_bias, rtol=1e-6)


def test_bias_add_sums_bfloat16_gradients_in_float32():
  # 4,096 rows of bfloat16: the bias gradient must be the float32 column sum rounded once, not a
  # bfloat16 running sum (TensorFlow's BiasAddGrad drifts by several percent here).
  rng = np.random.default_rng(2)
  d_out = tf.constant(rng.normal(size=(4096, 64)), tf.bfloat16)
  rows = tf.zeros([4096, 64], tf.bfloat16)
  bias = tf.zeros([64], tf.bfloat16)
  with tf.GradientTape() as tape:
    tape.watch(bias)
    out = tf_utils.bias_add(rows, bias)
  d_bias = tape.gradient(out, bias, output_gradients=d_out)
  assert d_bias.dtype == tf.bfloat16
  exact = d_out.numpy().astype(np.float64).sum(0)
  # Within a few bfloat16 roundings of the exact sum: one (2**-8) where the CPU multiplies bfloat16
  # natively (AVX-512 BF16, AMX); up to 2**-7 seen on AVX2 CPUs, whose bfloat16 matmul rounds
  # partial sums of its blocks. TensorFlow's BiasAddGrad drifts by several percent here.
  np.testing.assert_allclose(d_bias.numpy().astype(np.float64), exact,
                             rtol=2.0 ** -6, atol=1e-3)


def test_bias_add_reads_a_variable_and_runs_under_xla():
  bias = tf.Variable([1.0, -1.0])

  @tf.function(jit_compile=True)
  def step(rows):
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(tf_utils.bias_add(rows, bias) ** 2)
    return tape.gradient(loss, bias)

  rows = tf.constant([[1.0, 2.0], [3.0, 4.0]])
  np.testing.assert_allclose(step(rows), 2 * tf.reduce_sum(rows + bias, 0), rtol=1e-6)


def test_model_garden_activation_names_keras_layers_and_kwargs():
  x = tf.constant([-1.0, 0.5, 7.0])
  np.testing.assert_allclose(tf_utils.get_activation('relu6')(x), [0.0, 0.5, 6.0])
  np.testing.assert_allclose(tf_utils.get_activation('mish')(x),
                             x.numpy() * np.tanh(np.log1p(np.exp(x.numpy()))), atol=1e-5)
  leaky = tf_utils.get_activation('leaky_relu', use_keras_layer=True, alpha=0.1)
  assert isinstance(leaky, tf_keras.layers.Activation)
  np.testing.assert_allclose(leaky(x), [-0.1, 0.5, 7.0], atol=1e-6)
  relu_layer = tf_utils.get_activation('relu', use_keras_layer=True)
  np.testing.assert_allclose(relu_layer(x), [0.0, 0.5, 7.0])
  assert tf_utils.serialize_activation(tf_utils.get_activation('hard_swish')) == 'hard_swish'


_CONCAT_SCRIPT = r"""
import numpy as np
import tensorflow as tf
from official.modeling import tf_utils
strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])


@tf.function
def run():
  def replica():
    value = tf.fill([2, 3], tf.cast(tf_utils.get_replica_id(), tf.float32))
    with tf.GradientTape() as tape:
      tape.watch(value)
      total = tf.reduce_sum(tf_utils.cross_replica_concat(value, axis=0))
    return tf_utils.cross_replica_concat(value, axis=1), tape.gradient(total, value)
  return strategy.run(replica)


concat, grad = run()
for i, (c, g) in enumerate(zip(strategy.experimental_local_results(concat),
                               strategy.experimental_local_results(grad))):
  np.testing.assert_array_equal(c.numpy(), np.concatenate([np.zeros([2, 3]), np.ones([2, 3])], 1))
  # Each replica's slice is used by both replicas' sums.
  np.testing.assert_array_equal(g.numpy(), 2 * np.ones([2, 3]))
print('ok')
"""


@pytest.mark.slow
def test_replica_id_and_cross_replica_concat_with_two_replicas():
  assert int(tf_utils.get_replica_id()) == 0
  np.testing.assert_array_equal(tf_utils.cross_replica_concat(tf.ones([2, 3]), axis=0),
                                np.ones([2, 3]))
  result = run_on_two_cpus(_CONCAT_SCRIPT)
  assert result.returncode == 0 and result.stdout.strip().endswith('ok'), result.stderr[-2000:]
