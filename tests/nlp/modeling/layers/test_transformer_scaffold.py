"""Tests for official/nlp/modeling/layers/transformer_scaffold.py."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling.layers import transformer_scaffold
from tests.nlp.modeling import numpy_bert


def _inputs():
  x = np.random.default_rng(0).normal(size=(2, 4, 8)).astype(np.float32)
  padding = np.array([[1, 1, 1, 1], [1, 1, 1, 0]], np.float32)
  return x, padding, np.repeat(padding[:, None, :], 4, axis=1)


@pytest.mark.parametrize('norm_first', [False, True])
def test_default_layers_compute_the_bert_block(norm_first):
  x, padding, mask = _inputs()
  block = layers.TransformerScaffold(num_attention_heads=2, inner_dim=16, norm_first=norm_first)
  block([x, mask])
  for v in block.weights:
    v.assign(v + 0.1)
  expected = numpy_bert.transformer_block(x, padding, numpy_bert.block_weights(block), norm_first)
  np.testing.assert_allclose(block([x, mask]), expected, atol=1e-5)


def test_gated_feedforward_block_replaces_the_feedforward_layer():
  x, _, mask = _inputs()
  block = layers.TransformerScaffold(num_attention_heads=2, inner_dim=16,
                                     inner_activation='relu',
                                     feedforward_cls=layers.GatedFeedforward, name='block')
  out = block([x, mask])
  ffn = block._feedforward_block  # pylint: disable=protected-access
  assert isinstance(ffn, layers.GatedFeedforward) and ffn.name == 'feedforward'
  assert (ffn.inner_dim, ffn.inner_activation) == (16, 'relu')
  # Post-LN: the feed-forward block gets the attention sub-block's output and gives the output.
  attention_out = block._attention_layer_norm(  # pylint: disable=protected-access
      x + block._attention_layer(x, x, attention_mask=mask))  # pylint: disable=protected-access
  np.testing.assert_allclose(out, ffn(attention_out), atol=1e-5)
  assert not any('/intermediate/' in v.name for v in block.weights)


def test_attention_instance_and_key_value_input():
  attention = layers.MultiHeadAttention(num_heads=2, key_dim=3, name='custom')
  block = layers.TransformerScaffold(num_attention_heads=5, inner_dim=16, attention_cls=attention)
  out = block([tf.ones([1, 2, 8]), tf.ones([1, 3, 6]), tf.ones([1, 2, 3])])
  assert out.shape == (1, 2, 8)
  assert block._attention_layer is attention  # pylint: disable=protected-access


def test_config_json_round_trip_before_and_after_build():
  block = layers.TransformerScaffold(num_attention_heads=2, inner_dim=16,
                                     attention_cls=layers.TalkingHeadsAttention,
                                     feedforward_cls=layers.GatedFeedforward,
                                     feedforward_cfg=dict(inner_dim=8, dropout=0.1),
                                     kernel_regularizer='l2')
  config = json.loads(json.dumps(block.get_config()))
  assert config['attention_cls'] == 'mlm_garden>TalkingHeadsAttention'
  assert config['feedforward_cfg'] == dict(inner_dim=8, dropout=0.1)
  x = tf.random.normal([2, 3, 8], seed=1)
  out = block(x)
  built = json.loads(json.dumps(block.get_config()))  # the sub-layers, serialized
  assert built['attention_cls']['registered_name'] == 'mlm_garden>TalkingHeadsAttention'
  assert built['feedforward_cfg'] is None
  for rebuilt in (layers.TransformerScaffold.from_config(config),
                  layers.TransformerScaffold.from_config(built)):
    rebuilt(x)
    rebuilt.set_weights(block.get_weights())
    np.testing.assert_allclose(rebuilt(x), out, atol=1e-6)
  # Inside a functional model, as Keras saves it.
  inputs = tf_keras.Input((3, 8))
  model = tf_keras.Model(inputs, layers.TransformerScaffold(2, inner_dim=16)(inputs))
  clone = tf_keras.Model.from_config(json.loads(json.dumps(model.get_config())))
  clone.set_weights(model.get_weights())
  np.testing.assert_allclose(clone(x), model(x), atol=1e-6)


def test_class_config_helpers():
  assert transformer_scaffold.class_to_config(layers.MultiHeadAttention) == 'MultiHeadAttention'
  assert transformer_scaffold.class_from_config('mlm_garden>GatedFeedforward') is (
      layers.GatedFeedforward)

  class Unregistered(tf_keras.layers.Layer):
    pass

  assert transformer_scaffold.class_to_config(Unregistered) is Unregistered
  assert transformer_scaffold.class_to_config(None) is None
  with pytest.raises(ValueError, match="unknown layer class 'NoSuchLayer'"):
    transformer_scaffold.class_from_config('NoSuchLayer')


def test_errors_name_the_argument():
  block = layers.TransformerScaffold(num_attention_heads=3, inner_dim=16)
  with pytest.raises(ValueError, match='width 8 is not a multiple of num_attention_heads 3'):
    block(tf.ones([1, 2, 8]))
  with pytest.raises(ValueError, match=r'expects inputs \[batch, sequence, width\]'):
    layers.TransformerScaffold(num_attention_heads=2)(tf.ones([2, 8]))
  with pytest.raises(ValueError, match='found a list of 4'):
    layers.TransformerScaffold(num_attention_heads=2)([tf.ones([1, 2, 8])] * 4)
