"""Tests for official/nlp/modeling/layers/self_attention.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling.layers import self_attention
from tests import testing
from tests.nlp.modeling import numpy_bert
from tests.nlp.modeling import numpy_modernbert


def _layer(**kwargs):
  return layers.MultiHeadSelfAttention(
      num_heads=2, key_dim=4,
      kernel_initializer=tf_keras.initializers.RandomNormal(stddev=0.5, seed=3), **kwargs)


def test_matches_numpy_with_padding_mask():
  x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype(np.float32)
  mask = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]], np.float32)
  layer = _layer()
  layer(x, mask)
  for v in layer.weights:  # non-zero biases so that they are checked too
    v.assign(v + 0.1)
  out = layer(x, mask).numpy()
  assert out.shape == (2, 6, 8) and out.dtype == np.float32
  np.testing.assert_allclose(out,
                             numpy_bert.attention(x, mask, numpy_bert.attention_weights(layer)),
                             atol=1e-5)


def test_kernel_layout_and_variable_names():
  layer = _layer(name='self_attention')
  layer(tf.zeros([1, 3, 8]), tf.ones([1, 3]))
  shapes = {v.name: tuple(v.shape) for v in layer.weights}
  assert shapes == {
      'self_attention/query/kernel:0': (8, 2, 4), 'self_attention/query/bias:0': (2, 4),
      'self_attention/key/kernel:0': (8, 2, 4), 'self_attention/key/bias:0': (2, 4),
      'self_attention/value/kernel:0': (8, 2, 4), 'self_attention/value/bias:0': (2, 4),
      'self_attention/attention_output/kernel:0': (2, 4, 8),
      'self_attention/attention_output/bias:0': (8,)}


def test_padded_keys_are_ignored_and_query_length_slices():
  rng = np.random.default_rng(1)
  x = rng.normal(size=(1, 6, 8)).astype(np.float32)
  changed = x.copy()
  changed[0, 4:] = rng.normal(size=(2, 8))
  mask = np.array([[1, 1, 1, 1, 0, 0]], np.float32)
  layer = _layer()
  np.testing.assert_allclose(layer(x, mask)[:, :4], layer(changed, mask)[:, :4], atol=1e-6)
  first = layer(x, mask, query_length=2)
  assert first.shape == (1, 2, 8)
  np.testing.assert_allclose(first, layer(x, mask)[:, :2], atol=1e-6)


def test_attention_scores_are_probabilities_that_skip_padding():
  mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], tf.float32)
  out, probs = _layer()(tf.random.normal([2, 5, 8], seed=2), mask, return_attention_scores=True)
  assert out.shape == (2, 5, 8) and probs.shape == (2, 2, 5, 5)
  np.testing.assert_allclose(tf.reduce_sum(probs, -1), np.ones([2, 2, 5]), atol=1e-6)
  np.testing.assert_array_equal(probs[1, :, :, 2:], np.zeros([2, 5, 3]))


def test_mixed_bfloat16_softmax_in_float32():
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    layer = _layer()
    out, probs = layer(tf.random.normal([2, 5, 8]), tf.ones([2, 5]), return_attention_scores=True)
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert out.dtype == tf.bfloat16 and probs.dtype == tf.float32
  assert all(v.dtype == tf.float32 for v in layer.weights)


def test_round_trip():
  testing.run_layer_test(layers.MultiHeadSelfAttention, dict(num_heads=2, key_dim=4, dropout=0.1),
                         [tf.random.normal([2, 5, 8]), tf.ones([2, 5])], (2, 5, 8))


def test_three_dimensional_mask_equals_padding_mask():
  x = tf.random.normal([2, 5, 8], seed=4)
  mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], tf.float32)
  layer = _layer()
  full_mask = tf.repeat(mask[:, None, :], 5, axis=1)
  np.testing.assert_allclose(layer(x, full_mask), layer(x, mask), atol=1e-6)
  np.testing.assert_allclose(layer(x, full_mask, query_length=2), layer(x, mask)[:, :2],
                             atol=1e-6)


def test_attention_dropout_only_in_training():
  layer = _layer(dropout=0.5)
  x, mask = tf.random.normal([2, 5, 8], seed=5), tf.ones([2, 5])
  np.testing.assert_allclose(layer(x, mask), layer(x, mask, training=False))
  assert not np.allclose(layer(x, mask, training=True), layer(x, mask, training=False))


def _einsum_attention(layer, x, mask):
  """An independent einsum formulation on the layer's variables (Keras MultiHeadAttention's)."""
  q = tf.einsum('bsh,hnd->bsnd', x, layer._query_dense.kernel) + layer._query_dense.bias
  k = tf.einsum('bsh,hnd->bsnd', x, layer._key_dense.kernel) + layer._key_dense.bias
  v = tf.einsum('bsh,hnd->bsnd', x, layer._value_dense.kernel) + layer._value_dense.bias
  scores = tf.einsum('bqnd,bknd->bnqk', q, k) / np.sqrt(layer.key_dim)
  scores += (1.0 - mask[:, None, None, :]) * -1e9
  context = tf.einsum('bnqk,bknd->bqnd', tf.nn.softmax(scores), v)
  return tf.einsum('bqnd,ndh->bqh', context, layer._output_dense.kernel) + layer._output_dense.bias


def test_fused_projection_gradients_match_separate_einsums():
  x = tf.random.normal([2, 6, 8], seed=6)
  mask = tf.constant([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], tf.float32)
  layer = _layer()
  layer(x, mask)
  for v in layer.weights:
    v.assign(v + 0.1)
  weights = tf.random.normal([2, 6, 8], seed=7)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    ours = tf.reduce_sum(layer(x, mask) * weights)
    reference = tf.reduce_sum(_einsum_attention(layer, x, mask) * weights)
  targets = [x] + layer.trainable_weights
  for got, expected in zip(tape.gradient(ours, targets), tape.gradient(reference, targets)):
    assert got.shape == expected.shape
    # float32 rounding of two summation orders, relative to the largest gradient (~20 here).
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=1e-5)


def _weights(layer):
  return {v.name.split('/', 1)[1].split(':')[0]: v.numpy() for v in layer.weights}


@pytest.mark.parametrize('rotary_theta,window', [(None, None), (10000.0, None), (None, 4),
                                                 (160000.0, 4)])
def test_bias_free_rotary_and_local_attention_match_numpy(rotary_theta, window):
  rng = np.random.default_rng(8)
  x = rng.normal(size=(2, 9, 8)).astype(np.float32)
  mask = np.array([[1] * 9, [1] * 7 + [0] * 2], np.float32)
  positions = np.array([list(range(9)), [0, 1, 2, 3, 0, 1, 2, 0, 0]])
  layer = _layer(use_bias=False, rotary_theta=rotary_theta, attention_window=window,
                 name='attention')
  kwargs = dict(position_ids=tf.constant(positions)) if rotary_theta else {}
  out = layer(x, mask, **kwargs).numpy()
  assert not any('bias' in v.name for v in layer.weights) and len(layer.weights) == 4
  expected = numpy_modernbert.attention(x, mask, _weights(layer), rotary_theta, positions, window)
  np.testing.assert_allclose(out, expected, atol=2e-5)
  # query_length (output_range) takes the first rows, with their positions.
  np.testing.assert_allclose(layer(x, mask, query_length=3, **kwargs), expected[:, :3], atol=2e-5)


def test_rotary_outputs_are_invariant_to_shifting_all_positions():
  x = tf.random.normal([2, 6, 8], seed=9)
  layer = _layer(rotary_theta=10000.0)
  positions = tf.constant([[0, 1, 2, 3, 4, 5], [0, 1, 2, 0, 1, 2]])
  np.testing.assert_allclose(layer(x, position_ids=positions),
                             layer(x, position_ids=positions + 37), atol=1e-4)
  assert not np.allclose(layer(x, position_ids=positions), layer(x), atol=1e-3)


def test_local_window_probabilities_and_mask():
  np.testing.assert_array_equal(self_attention.local_attention_mask(4, 2), [
      [1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]])
  np.testing.assert_array_equal(self_attention.local_attention_mask(5, 4, query_length=2), [
      [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]])
  # Two documents packed in a row (a [batch, seq, seq] mask), then local attention on top.
  segments = np.array([[0, 0, 0, 0, 1, 1, 1, 1]])
  document_mask = (segments[:, :, None] == segments[:, None, :]).astype(np.float32)
  _, probs = _layer(attention_window=4)(tf.random.normal([1, 8, 8], seed=10), document_mask,
                                        return_attention_scores=True)
  index = np.arange(8)
  allowed = document_mask[:, None] * (np.abs(index[:, None] - index[None]) <= 2)
  np.testing.assert_array_equal(probs.numpy() > 0, np.broadcast_to(allowed > 0, probs.shape))
  np.testing.assert_allclose(tf.reduce_sum(probs, -1), np.ones([1, 2, 8]), atol=1e-6)


def test_options_round_trip_and_errors():
  testing.run_layer_test(
      layers.MultiHeadSelfAttention,
      dict(num_heads=2, key_dim=4, use_bias=False, rotary_theta=160000.0, attention_window=4),
      [tf.random.normal([2, 5, 8]), tf.ones([2, 5])], (2, 5, 8),
      call_kwargs=dict(position_ids=tf.constant([[0, 1, 2, 3, 4], [0, 1, 0, 1, 2]])))
  with pytest.raises(ValueError, match='rotary_theta needs an even head size, found key_dim=3'):
    layers.MultiHeadSelfAttention(num_heads=2, key_dim=3, rotary_theta=10000.0)
  with pytest.raises(ValueError, match='attention_window must be a positive int or None, found 0'):
    layers.MultiHeadSelfAttention(num_heads=2, key_dim=4, attention_window=0)
  with pytest.raises(ValueError, match='position_ids were given but rotary_theta is None'):
    _layer()(tf.zeros([1, 3, 8]), position_ids=tf.constant([[0, 1, 2]]))


def _packed_inputs(length, seed=0):
  """x [2, length, 8], a padding mask and document ids of two packed rows (three documents in
  the first, two and padding in the second)."""
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(2, length, 8)).astype(np.float32)
  cut1, cut2 = length // 3, (2 * length) // 3
  documents = np.zeros((2, length), np.int32)
  documents[0] = np.where(np.arange(length) < cut1, 1, np.where(np.arange(length) < cut2, 2, 3))
  documents[1] = np.where(np.arange(length) < cut2, 1, 2)
  mask = np.ones((2, length), np.float32)
  mask[1, length - 3:] = 0
  return x, mask, documents


@pytest.mark.parametrize('length,window', [(9, 4), (16, 4), (23, 6), (40, 8), (13, 1)])
def test_document_ids_and_blocked_window_match_numpy(length, window):
  x, mask, documents = _packed_inputs(length, seed=length)
  layer = _layer(use_bias=False, rotary_theta=10000.0, attention_window=window)
  every = self_attention._Queries()  # pylint: disable=protected-access
  assert layer._local_block_size(length, every, False, mask)  # the blocked path is taken
  out = layer(x, mask, document_ids=documents).numpy()
  allowed = mask[:, None, :] * (documents[:, :, None] == documents[:, None, :])
  expected = numpy_modernbert.attention(x, allowed, _weights(layer), 10000.0, None, window)
  np.testing.assert_allclose(out[mask > 0], expected[mask > 0], atol=2e-5)
  # The full score matrix gives the same numbers: probabilities asked for take that path.
  full, probs = layer(x, mask, document_ids=documents, return_attention_scores=True)
  np.testing.assert_allclose(full.numpy()[mask > 0], out[mask > 0], atol=2e-5)
  index = np.arange(length)
  band = np.abs(index[:, None] - index[None]) <= window // 2
  queries = np.broadcast_to((mask > 0)[:, None, :], probs.shape[:3])  # rows of real queries
  np.testing.assert_array_equal(
      (probs.numpy() > 0)[queries],
      np.broadcast_to((allowed * band)[:, None] > 0, probs.shape)[queries])


@pytest.mark.slow
def test_blocked_window_gradients_and_jit_match_the_full_matrix():
  x, mask, documents = _packed_inputs(30, seed=3)
  x = tf.constant(x)
  layer = _layer(use_bias=False, attention_window=8)

  def loss(blocked):
    with tf.GradientTape() as tape:
      tape.watch(x)
      if blocked:
        out = layer(x, mask, document_ids=documents, training=True)
      else:  # the full path, through a [batch, seq, seq] mask
        allowed = mask[:, None, :] * (documents[:, :, None] == documents[:, None, :])
        out = layer(x, allowed, training=True)
      value = tf.reduce_sum(tf.square(out) * mask[:, :, None])
    return value, tape.gradient(value, [x] + layer.trainable_weights)

  (blocked_value, blocked_grads), (full_value, full_grads) = loss(True), loss(False)
  np.testing.assert_allclose(blocked_value, full_value, rtol=1e-5)
  for got, want in zip(blocked_grads, full_grads):
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)
  jitted = tf.function(lambda x: layer(x, mask, document_ids=documents), jit_compile=True)
  np.testing.assert_allclose(jitted(x).numpy()[mask > 0],
                             layer(x, mask, document_ids=documents).numpy()[mask > 0], atol=1e-5)


@pytest.mark.parametrize('window', [None, 4])
def test_a_perturbed_document_leaves_the_others_unchanged(window):
  x, mask, documents = _packed_inputs(24, seed=5)
  layer = _layer(rotary_theta=10000.0, attention_window=window)
  positions = np.zeros_like(documents)
  for row in range(2):  # positions restart per document
    for document in np.unique(documents[row]):
      where = documents[row] == document
      positions[row, where] = np.arange(where.sum())
  before = layer(x, mask, position_ids=positions, document_ids=documents).numpy()
  perturbed = x.copy()
  second = documents == 2
  perturbed[second] += np.random.default_rng(1).normal(size=perturbed[second].shape)
  after = layer(perturbed, mask, position_ids=positions, document_ids=documents).numpy()
  others = ~second & (mask > 0)
  np.testing.assert_allclose(after[others], before[others], atol=1e-6)
  assert not np.allclose(after[second], before[second], atol=1e-3)


def test_blocked_local_attention_refuses_a_three_dimensional_mask():
  q = tf.zeros([1, 2, 8, 4])
  with pytest.raises(ValueError, match='takes a \\[batch, seq\\] attention mask, found shape'):
    self_attention.blocked_local_attention(q, q, q, 2, 2, lambda s, a: tf.nn.softmax(s + a),
                                           tf.ones([1, 8, 8]))
  with pytest.raises(ValueError, match='half_window 3 exceeds block 2'):
    self_attention.blocked_local_attention(q, q, q, 2, 3, lambda s, a: tf.nn.softmax(s + a))


@pytest.mark.parametrize('rotary_theta, window, packed, mask_rank', [
    (None, None, False, 2), (10000.0, 4, False, 2), (10000.0, None, True, 2),
    (None, 6, False, 3)])
def test_query_positions_are_the_full_outputs_rows(rotary_theta, window, packed, mask_rank):
  """Queries at arbitrary positions (in any order, repeated): the full computation's rows, with
  rotary positions, a window, packed documents or a 3-D mask taken at those queries."""
  layer = _layer(rotary_theta=rotary_theta, attention_window=window)
  rng = np.random.default_rng(5)
  x = tf.constant(rng.normal(size=(2, 10, 8)), tf.float32)
  mask = tf.constant([[1] * 10, [1] * 7 + [0] * 3], tf.float32)
  kwargs = {}
  if packed:
    x, mask, documents = _packed_inputs(10)
    kwargs['document_ids'] = documents
    # Positions restart at each document (packed rows).
    starts = np.maximum.accumulate(np.where(np.diff(documents, prepend=-1) != 0,
                                            np.arange(10), 0), axis=1)
    kwargs['position_ids'] = np.arange(10)[None] - starts
  if mask_rank == 3:
    mask = mask[:, None, :] * tf.constant(rng.integers(0, 2, size=(2, 10, 1)) | 1, tf.float32)
  positions = tf.constant([[0, 9, 3, 3], [0, 2, 6, 1]], tf.int32)
  full = layer(x, mask, **kwargs)
  out = layer(x, mask, query_positions=positions, **kwargs)
  assert out.shape == (2, 4, 8)
  np.testing.assert_allclose(out, tf.gather(full, positions, batch_dims=1), atol=1e-5)
  with pytest.raises(ValueError, match='give query_length or query_positions, not both'):
    layer(x, mask, query_length=2, query_positions=positions)
  with pytest.raises(ValueError, match=r'query_positions must be \[batch, queries\], found shape'):
    layer(x, mask, query_positions=positions[0])
