"""Tests for official/nlp/modeling/layers/rezero_transformer.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing
from tests.nlp.modeling import numpy_bert


def _block(**kwargs):
  return layers.ReZeroTransformer(num_attention_heads=2, inner_dim=16,
                                  inner_activation='relu', **kwargs)


def test_matches_numpy_with_separate_alphas():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(2, 4, 8)).astype(np.float32)
  padding = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], np.float32)
  mask = np.repeat(padding[:, None, :], 4, axis=1)
  block = _block(share_rezero=False)
  block([x, mask])
  block._rezero_a.assign(0.5)  # pylint: disable=protected-access
  block._rezero_a_ffn.assign(-0.25)  # pylint: disable=protected-access
  # pylint: disable=protected-access
  h = x + 0.5 * numpy_bert.attention(x, padding, numpy_bert.attention_weights(
      block._attention_layer))
  inner = np.maximum(h @ block._intermediate_dense.kernel.numpy()
                     + block._intermediate_dense.bias.numpy(), 0)
  expected = h - 0.25 * (inner @ block._output_dense.kernel.numpy()
                         + block._output_dense.bias.numpy())
  np.testing.assert_allclose(block([x, mask]), expected, atol=1e-5)
  block.reset_rezero()
  np.testing.assert_allclose(block([x, mask]), x)


def test_layer_norm_and_names():
  x = tf.random.normal([2, 3, 8], seed=1) + 3.0
  block = _block(use_layer_norm=True, name='rezero')
  out = block(x).numpy()
  expected = (x - tf.reduce_mean(x, -1, keepdims=True)) / tf.math.reduce_std(x, -1, keepdims=True)
  np.testing.assert_allclose(out, expected, atol=1e-5)
  names = {v.name for v in block.weights}
  assert {'rezero/rezero_alpha:0', 'rezero/self_attention/query/kernel:0',
          'rezero/intermediate/kernel:0', 'rezero/output_layer_norm/gamma:0'} <= names
  assert 'rezero/rezero_alpha_ffn:0' not in names  # shared by default


def test_output_range_and_key_value_input():
  x = tf.random.normal([2, 5, 8], seed=2)
  block = _block()
  block(x)
  block._rezero_a.assign(1.0)  # pylint: disable=protected-access
  np.testing.assert_allclose(block(x, output_range=2), block(x)[:, :2], atol=1e-5)
  assert block([x[:, :3], x, tf.ones([2, 3, 5])]).shape == (2, 3, 8)


@pytest.mark.parametrize('options,name', [(dict(num_kv_heads=1), 'multi_query_attention'),
                                          (dict(src_block_size=2), 'block_sparse_attention')])
def test_efficient_attention_variants(options, name):
  block = _block(**options)
  assert block([tf.ones([2, 4, 8]), tf.ones([2, 4, 4])]).shape == (2, 4, 8)
  assert block._attention_layer.name == name  # pylint: disable=protected-access


def test_mixed_float16_output_is_float32():
  tf_keras.mixed_precision.set_global_policy('mixed_float16')
  try:
    assert _block()(tf.ones([1, 3, 8])).dtype == tf.float32
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')


def test_round_trip():
  testing.run_layer_test(layers.ReZeroTransformer,
                         dict(num_attention_heads=2, intermediate_size=16, output_dropout=0.1,
                              share_rezero=False, use_layer_norm=True),
                         [tf.random.normal([2, 3, 8], seed=3)], (2, 3, 8))


def test_errors_name_the_argument():
  with pytest.raises(ValueError, match='neither Linformer'):
    _block(linformer_dim=4)
  with pytest.raises(ValueError, match='num_kv_heads or src_block_size, not both'):
    _block(num_kv_heads=1, src_block_size=2)
  with pytest.raises(ValueError, match=r"takes no \['bias_initializer'\]"):
    _block(num_kv_heads=1, bias_initializer='ones')
  with pytest.raises(ValueError, match='width 9 is not a multiple of num_attention_heads 2'):
    _block()(tf.ones([1, 2, 9]))
  with pytest.raises(ValueError, match=r'mask must be \[batch, seq, seq\]'):
    _block()([tf.ones([1, 2, 8]), tf.ones([1, 2, 3])])
