"""Tests for official/nlp/modeling/layers/encoder_block_attention.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling.layers import encoder_block_attention as paths
from official.nlp.modeling.layers import pack_optimization

_X = tf.TensorShape([2, 5, 16])


def _block(cls=layers.TransformerEncoderBlock, **kwargs):
  return cls(num_attention_heads=2, inner_dim=8, **kwargs)


@pytest.mark.parametrize('kwargs, query_shape, key_value_shape, expected', [
    (dict(), _X, None, paths.FusedSelfAttentionPath()),
    (dict(norm_first=True, use_rms_norm=True, output_range=2, use_bias=False), _X, None,
     paths.FusedSelfAttentionPath()),
    (dict(rotary_theta=1e4, attention_window=4, gated_inner=True), _X, None,
     paths.FusedSelfAttentionPath()),
    (dict(key_dim=4), _X, None, paths.KerasAttentionPath('key_dim')),
    (dict(use_query_residual=False, value_dim=3), _X, None,
     paths.KerasAttentionPath('use_query_residual=False, value_dim')),
    (dict(), _X, tf.TensorShape([2, 7, 12]),
     paths.KerasAttentionPath('a separate key/value input')),
    (dict(attention_axes=[2]), tf.TensorShape([2, 3, 4, 16]), None,
     paths.KerasAttentionPath('attention_axes, inputs of rank 4')),
    (dict(num_kv_heads=1), _X, None,
     paths.EfficientAttentionPath('the efficient-attention options')),
    (dict(linformer_dim=3, output_last_dim=8), _X, None,
     paths.EfficientAttentionPath('output_last_dim, the efficient-attention options')),
])
def test_the_factory_picks_the_path_from_the_arguments(kwargs, query_shape, key_value_shape,
                                                       expected):
  path = paths.attention_path(_block(**kwargs), query_shape, key_value_shape)
  assert path == expected  # dataclass equality: the same class and reason


def test_a_subclass_can_ask_for_the_keras_path():
  strided = _block(pack_optimization.StridedTransformerEncoderBlock)
  assert paths.attention_path(strided, _X) == paths.KerasAttentionPath('strided queries')
  grouped = _block(pack_optimization.StridedTransformerEncoderBlock, num_kv_heads=1)
  assert isinstance(paths.attention_path(grouped, _X), paths.EfficientAttentionPath)


def test_fused_only_options_on_a_keras_path_raise():
  with pytest.raises(ValueError, match='rotary_theta and attention_window need self-attention '
                     'on .* found key_dim'):
    paths.attention_path(_block(rotary_theta=1e4, key_dim=4), _X)
  with pytest.raises(ValueError, match='found a separate key/value input'):
    paths.attention_path(_block(attention_window=4), _X, _X)


@pytest.mark.parametrize('kwargs, inputs, path_type, layer_type', [
    (dict(), [tf.zeros([2, 5, 16]), tf.ones([2, 5])], paths.FusedSelfAttentionPath,
     layers.MultiHeadSelfAttention),
    (dict(key_dim=4), [tf.zeros([2, 5, 16]), tf.ones([2, 5])], paths.KerasAttentionPath,
     tf_keras.layers.MultiHeadAttention),
    (dict(), [tf.zeros([2, 5, 16]), tf.zeros([2, 3, 16]), tf.ones([2, 5, 3])],
     paths.KerasAttentionPath, tf_keras.layers.MultiHeadAttention),
    (dict(num_kv_heads=1), [tf.zeros([2, 5, 16]), tf.ones([2, 5])],
     paths.EfficientAttentionPath, layers.EfficientAttention),
])
def test_the_block_builds_its_paths_layer_under_model_gardens_name(kwargs, inputs, path_type,
                                                                    layer_type):
  block = _block(name='layer_0', **kwargs)
  out = block(inputs)
  assert type(block._attention_path) is path_type  # pylint: disable=protected-access,unidiomatic-typecheck
  assert isinstance(block._attention_layer, layer_type)  # pylint: disable=protected-access
  assert out.shape == inputs[0].shape
  assert {v.name.split('/')[1] for v in block.weights} >= {'self_attention', 'intermediate',
                                                            'output', 'output_layer_norm'}
  # The path is no checkpoint object: the keys are Model Garden's.
  assert '_attention_path' not in block._trackable_children()  # pylint: disable=protected-access


@pytest.mark.parametrize('path', [paths.FusedSelfAttentionPath(), paths.KerasAttentionPath('x')])
def test_attend_returns_the_residual_and_the_attention_before_dropout(path):
  x = tf.random.normal([2, 5, 16], seed=1)
  mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], tf.float32)
  block = _block(norm_first=True, output_range=3, attention_dropout=0.5)
  block(x, mask)  # builds the norms (on the fused path); the attention layer is replaced below
  block._attention_layer = path.make_layer(block, x.shape)  # pylint: disable=protected-access
  residual, attention, scores = path.attend(block, x, None, mask, 3, True, False)
  np.testing.assert_array_equal(residual, x[:, :3])  # the unnormalized queries
  assert attention.shape == (2, 3, 16) and scores.shape == (2, 2, 3, 5)
  # Pre-LN: the attention layer reads the normalized inputs.
  normalized = block._norm(block._attention_layer_norm, x)  # pylint: disable=protected-access
  if isinstance(path, paths.FusedSelfAttentionPath):
    direct = block._attention_layer(normalized, mask, query_length=3)  # pylint: disable=protected-access
  else:
    direct = block._attention_layer(normalized[:, :3], normalized,  # pylint: disable=protected-access
                                    attention_mask=mask[:, None, :])
  np.testing.assert_allclose(attention, direct, atol=1e-6)


def test_no_query_residual_on_the_keras_path():
  block = _block(use_query_residual=False)
  block(tf.zeros([1, 3, 16]))
  residual, _, _ = block._attention_path.attend(  # pylint: disable=protected-access
      block, tf.zeros([1, 3, 16]), None, None, None, False, False)
  assert residual is None
