"""Tests for official/nlp/modeling/layers/transformer.py."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing
from tests.nlp.modeling import numpy_bert


def test_transformer_is_the_encoder_block_under_older_names():
  x = tf.random.normal([2, 4, 8], seed=0)
  mask = tf.constant([[1, 1, 1, 1], [1, 1, 0, 0]], tf.float32)
  old = layers.Transformer(num_attention_heads=2, intermediate_size=16,
                           intermediate_activation='relu', dropout_rate=0.1,
                           attention_dropout_rate=0.2, intermediate_dropout=0.3, name='block')
  new = layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=16,
                                       inner_activation='relu', output_dropout=0.1,
                                       attention_dropout=0.2, inner_dropout=0.3, name='block')
  old(x, mask), new(x, mask)
  assert [v.name for v in old.weights] == [v.name for v in new.weights]
  new.set_weights(old.get_weights())
  np.testing.assert_allclose(old(x, mask), new(x, mask), atol=1e-6)
  config = old.get_config()
  assert (config['intermediate_size'], config['intermediate_activation'], config['dropout_rate'],
          config['attention_dropout_rate'], config['intermediate_dropout']) == (
              16, 'relu', 0.1, 0.2, 0.3)
  assert 'inner_dim' not in config


def test_transformer_round_trip():
  testing.run_layer_test(layers.Transformer,
                         dict(num_attention_heads=2, intermediate_size=16,
                              intermediate_activation='gelu', norm_first=True),
                         [tf.random.normal([2, 3, 8], seed=1), tf.ones([2, 3])], (2, 3, 8))


def test_transformer_refuses_options_the_block_lacks():
  layers.Transformer(2, 16, 'relu', bias_initializer='zeros', kernel_regularizer=None)
  with pytest.raises(ValueError, match=r"\['bias_initializer', 'kernel_regularizer'\] only at"):
    layers.Transformer(2, 16, 'relu', bias_initializer='ones', kernel_regularizer='l2')


def _numpy_attention(query, value, mask, layer):
  # pylint: disable=protected-access
  dense = lambda x, d: np.einsum('bsw,wnd->bsnd', x, d.kernel.numpy()) + d.bias.numpy()
  q, k, v = (dense(query, layer._query_dense), dense(value, layer._key_dense),
             dense(value, layer._value_dense))
  scores = np.einsum('btnd,bsnd->bnts', q, k) / np.sqrt(q.shape[-1])
  probs = numpy_bert.softmax(scores + (1.0 - mask[:, None]) * -1e9)
  context = np.einsum('bnts,bsnd->btnd', probs, v)
  out = layer._output_dense
  return np.einsum('btnd,ndw->btw', context, out.kernel.numpy()) + out.bias.numpy()


def _numpy_decoder(targets, memory, mask, self_mask, block, norm_first):
  norm = lambda layer, x: numpy_bert.layer_norm(x, *[v.numpy() for v in layer.weights])
  dense = lambda layer, x: x @ layer.kernel.numpy() + layer.bias.numpy()
  ffn = lambda x: dense(block.output_dense, np.maximum(dense(block.intermediate_dense, x), 0))
  if norm_first:
    x = norm(block.self_attention_layer_norm, targets)
    x = targets + _numpy_attention(x, x, self_mask, block.self_attention)
    x = x + _numpy_attention(norm(block.encdec_attention_layer_norm, x), memory, mask,
                             block.encdec_attention)
    return x + ffn(norm(block.output_layer_norm, x))
  x = norm(block.self_attention_layer_norm,
           targets + _numpy_attention(targets, targets, self_mask, block.self_attention))
  x = norm(block.encdec_attention_layer_norm,
           x + _numpy_attention(x, memory, mask, block.encdec_attention))
  return norm(block.output_layer_norm, x + ffn(x))


def _decoder(**kwargs):
  return layers.TransformerDecoderBlock(num_attention_heads=2, intermediate_size=16,
                                        intermediate_activation='relu', **kwargs)


@pytest.mark.parametrize('norm_first', [False, True])
def test_decoder_matches_numpy(norm_first):
  rng = np.random.default_rng(2)
  targets = rng.normal(size=(2, 3, 8)).astype(np.float32)
  memory = rng.normal(size=(2, 5, 8)).astype(np.float32)
  mask = np.ones([2, 3, 5], np.float32)
  mask[1, :, 3:] = 0
  self_mask = np.repeat(np.tril(np.ones([3, 3], np.float32))[None], 2, axis=0)
  block = _decoder(norm_first=norm_first)
  block([targets, memory, mask, self_mask])
  for v in block.weights:
    v.assign(v + 0.1)
  out, cache = block([targets, memory, mask, self_mask])
  assert cache is None
  np.testing.assert_allclose(
      out, _numpy_decoder(targets, memory, mask, self_mask, block, norm_first), atol=1e-5)


def test_decoder_step_by_step_with_a_cache_equals_the_full_pass():
  rng = np.random.default_rng(3)
  targets = rng.normal(size=(1, 3, 8)).astype(np.float32)
  memory = rng.normal(size=(1, 4, 8)).astype(np.float32)
  block = _decoder()
  causal = np.tril(np.ones([3, 3], np.float32))[None]
  full, _ = block([targets, memory, tf.ones([1, 3, 4]), causal])
  cache = {'key': tf.zeros([1, 0, 2, 4]), 'value': tf.zeros([1, 0, 2, 4])}
  for t in range(3):
    step, cache = block([targets[:, t:t + 1], memory, tf.ones([1, 1, 4]), tf.ones([1, 1, t + 1])],
                        cache=cache)
    np.testing.assert_allclose(step[:, 0], full[:, t], atol=1e-5)
  assert cache['value'].shape == (1, 3, 2, 4)


def test_decoder_names_and_config_round_trip():
  block = _decoder(name='decoder', use_bias=False, norm_first=True, intermediate_dropout=0.1,
                   attention_initializer='ones')
  x = tf.ones([1, 2, 8])
  block([x, x, tf.ones([1, 2, 2]), tf.ones([1, 2, 2])])
  names = {v.name for v in block.weights}
  assert {'decoder/self_attention/query/kernel:0', 'decoder/attention/encdec/key/kernel:0',
          'decoder/attention/encdec_output_layer_norm/gamma:0', 'decoder/intermediate/kernel:0',
          'decoder/output_layer_norm/beta:0'} <= names
  config = json.loads(json.dumps(block.get_config()))
  assert config['self_attention_cls'] == 'mlm_garden>CachedAttention'
  assert config['cross_attention_cls'] == 'MultiHeadAttention'
  rebuilt = layers.TransformerDecoderBlock.from_config(config)
  assert rebuilt.get_config() == block.get_config()
  assert rebuilt._self_attention_cls is layers.CachedAttention  # pylint: disable=protected-access
  assert block.common_layers_with_encoder()[0] is block.self_attention


def test_decoder_custom_attention_classes():
  calls = []

  class CrossAttention(tf_keras.layers.Layer):  # not registered: kept as the class in the config

    def __init__(self, num_heads, key_dim, output_shape, **kwargs):
      del num_heads, key_dim, output_shape, kwargs
      super().__init__()

    def call(self, query, value, attention_mask):
      calls.append(attention_mask.shape)
      return query

  block = _decoder(cross_attention_cls=CrossAttention)
  x = tf.ones([1, 2, 8])
  block([x, x, tf.ones([1, 2, 2]), tf.ones([1, 2, 2])])
  assert calls == [(1, 2, 2)]
  assert block.get_config()['cross_attention_cls'] is CrossAttention


def test_decoder_errors_name_the_argument():
  with pytest.raises(ValueError, match='multi_channel_cross_attention=True needs '
                                       'cross_attention_cls'):
    _decoder(multi_channel_cross_attention=True)
  x = tf.ones([1, 2, 8])
  with pytest.raises(ValueError, match=r'takes 4 inputs .* found 3'):
    _decoder()([x, x, tf.ones([1, 2, 2])])
  with pytest.raises(ValueError, match='width 9 is not a multiple of num_attention_heads 2'):
    _decoder()([tf.ones([1, 2, 9])] * 4)
