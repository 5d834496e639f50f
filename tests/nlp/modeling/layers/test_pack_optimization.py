"""Tests for official/nlp/modeling/layers/pack_optimization.py ."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import layers
from official.nlp.modeling.layers import pack_optimization
from tests import testing


def _numpy_packing(embeddings, mask, pack):
  batch, seq, width = embeddings.shape
  rows = batch // pack
  packed = embeddings.reshape(rows, pack * seq, width)
  flat_mask = mask.reshape(rows, pack * seq)
  example = np.where(flat_mask == 0, 0, 1 + np.arange(pack * seq) // seq)
  combined = np.zeros((rows, pack * seq, pack * seq), np.float32)
  for r in range(rows):
    for i in range(pack * seq):
      for j in range(pack * seq):
        combined[r, i, j] = float(flat_mask[r, j] == 1 and example[r, i] == example[r, j])
  return packed, combined


def test_packing_matches_numpy_with_padding():
  embeddings = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 3, 2)
  mask = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 0]], np.int32)
  out = layers.PackBertEmbeddings(pack_sequences=2)(tf.constant(embeddings), tf.constant(mask))
  packed, combined = _numpy_packing(embeddings, mask, 2)
  np.testing.assert_array_equal(out['packed_embeddings'], packed)
  np.testing.assert_array_equal(out['combined_attention_mask'], combined)
  assert out['combined_attention_mask'].dtype == tf.float32
  # Row 0 holds examples 0 and 1: token 0 (example 0) sees tokens 0-1, not example 1's token 3.
  np.testing.assert_array_equal(out['combined_attention_mask'][0, 0], [1, 1, 0, 0, 0, 0])
  np.testing.assert_array_equal(out['combined_attention_mask'][0, 2], [0, 0, 0, 0, 0, 0])


def test_packing_rejects_a_batch_it_cannot_split():
  with pytest.raises(ValueError, match='the batch size 3 is not a multiple of pack_sequences 2'):
    layers.PackBertEmbeddings(2)(tf.zeros([3, 4, 2]), tf.ones([3, 4]))
  with pytest.raises(ValueError, match='pack_sequences must be >= 1, found 0'):
    layers.PackBertEmbeddings(0)


def test_packing_config_round_trip():
  testing.run_layer_test(layers.PackBertEmbeddings, dict(pack_sequences=2),
                         [tf.ones([4, 3, 2]), tf.ones([4, 3], tf.int32)],
                         {'packed_embeddings': (2, 6, 2), 'combined_attention_mask': (2, 6, 6)})


def _inputs(seed=0):
  rng = np.random.default_rng(seed)
  x = tf.constant(rng.normal(size=(2, 6, 8)), tf.float32)
  mask = np.ones((2, 6, 6), np.float32)
  mask[1, :, 4:] = 0.0
  return x, tf.constant(mask)


def _strided_blocks():
  return [
      pack_optimization.StridedTransformerEncoderBlock(num_attention_heads=2, inner_dim=16),
      pack_optimization.StridedTransformerEncoderBlock(num_attention_heads=2, inner_dim=16,
                                                       norm_first=True),
      pack_optimization.StridedTransformerScaffold(num_attention_heads=2, inner_dim=16),
      pack_optimization.StridedTransformerScaffold(num_attention_heads=2, inner_dim=16,
                                                   norm_first=True),
      pack_optimization.StridedReZeroTransformer(num_attention_heads=2, inner_dim=16),
      pack_optimization.StridedReZeroTransformer(num_attention_heads=2, inner_dim=16,
                                                 use_layer_norm=True),
  ]


@pytest.mark.parametrize('index', range(6))
def test_strided_output_is_every_stride_th_row_of_the_full_output(index):
  block = _strided_blocks()[index]
  x, mask = _inputs()
  full = block([x, mask], stride=1)
  if isinstance(block, layers.ReZeroTransformer):
    if not block._use_layer_norm:  # pylint: disable=protected-access
      np.testing.assert_allclose(full, x, atol=1e-6)  # alpha = 0: the identity
    block._rezero_a.assign(0.7)  # pylint: disable=protected-access
    full = block([x, mask], stride=1)
  assert full.shape == (2, 6, 8)
  for stride in (2, 3, tf.constant(4)):
    strided = block([x, mask], stride=stride)
    np.testing.assert_allclose(strided, full.numpy()[:, ::int(stride)], rtol=1e-5, atol=1e-5)


def test_strided_encoder_block_equals_the_block_at_stride_1():
  x, mask = _inputs(1)
  plain = layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=16)
  expected = plain([x, mask])
  strided = pack_optimization.StridedTransformerEncoderBlock(num_attention_heads=2, inner_dim=16)
  strided([x, mask], stride=1)
  assert [w.shape for w in strided.weights] == [w.shape for w in plain.weights]
  strided.set_weights(plain.get_weights())
  np.testing.assert_allclose(strided([x, mask], stride=1), expected, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(strided([x, mask], stride=2), expected.numpy()[:, ::2], rtol=1e-4,
                             atol=1e-5)


def test_strided_scaffold_equals_the_scaffold_at_stride_1():
  x, mask = _inputs(2)
  plain = layers.TransformerScaffold(num_attention_heads=2, inner_dim=16)
  expected = plain([x, mask])
  strided = pack_optimization.StridedTransformerScaffold(num_attention_heads=2, inner_dim=16)
  strided([x, mask], stride=1)
  strided.set_weights(plain.get_weights())
  np.testing.assert_allclose(strided([x, mask], stride=3), expected.numpy()[:, ::3], rtol=1e-4,
                             atol=1e-5)


def test_encoder_block_takes_a_padding_mask():
  x, _ = _inputs()
  block = pack_optimization.StridedTransformerEncoderBlock(num_attention_heads=2, inner_dim=16)
  padding = tf.constant([[1] * 6, [1] * 4 + [0] * 2], tf.float32)
  full_mask = tf.tile(padding[:, None, :], [1, 6, 1])
  np.testing.assert_allclose(block([x, padding], stride=2), block([x, full_mask], stride=2),
                             atol=1e-6)


@pytest.mark.parametrize('cls', [pack_optimization.StridedTransformerEncoderBlock,
                                 pack_optimization.StridedReZeroTransformer])
def test_strided_blocks_reject_output_range_and_block_sparse_attention(cls):
  with pytest.raises(ValueError, match=f'{cls.__name__} takes no output_range.*found '
                     'output_range=2'):
    cls(num_attention_heads=2, inner_dim=16, output_range=2)
  with pytest.raises(ValueError, match='does not support block-sparse attention, found '
                     'src_block_size=2'):
    cls(num_attention_heads=2, inner_dim=16, src_block_size=2)


def test_strided_blocks_reject_a_list_of_four():
  x, mask = _inputs()
  block = pack_optimization.StridedTransformerScaffold(num_attention_heads=2, inner_dim=16)
  with pytest.raises(ValueError, match='found a list of 4'):
    block([x, x, mask, mask], stride=2)


@pytest.mark.parametrize('cls, kwargs', [
    (pack_optimization.StridedTransformerEncoderBlock, dict(norm_first=True)),
    (pack_optimization.StridedTransformerScaffold, {}),
    (pack_optimization.StridedReZeroTransformer, dict(share_rezero=False)),
])
def test_strided_config_round_trip(cls, kwargs):
  x, mask = _inputs()
  # The scaffold's config holds its built sub-layers, so only its own from_config round-trips
  # (as `TransformerScaffold`'s).
  from_config = cls.from_config if cls is pack_optimization.StridedTransformerScaffold else None
  testing.run_layer_test(cls, dict(num_attention_heads=2, inner_dim=16, **kwargs), [[x, mask]],
                         (2, 3, 8), call_kwargs=dict(stride=2), from_config=from_config,
                         expected_output_dtype=tf.float32)
