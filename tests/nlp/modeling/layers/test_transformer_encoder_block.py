"""Tests for official/nlp/modeling/layers/transformer_encoder_block.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing
from tests.nlp.modeling import numpy_bert


@pytest.mark.parametrize('norm_first', [False, True])
def test_block_matches_numpy(norm_first):
  x = np.random.default_rng(0).normal(size=(2, 5, 16)).astype(np.float32)
  mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.float32)
  block = layers.TransformerEncoderBlock(
      num_attention_heads=2, inner_dim=32, inner_activation='gelu', norm_first=norm_first,
      kernel_initializer=tf_keras.initializers.RandomNormal(stddev=0.3, seed=2))
  out = block(x, mask).numpy()
  expected = numpy_bert.transformer_block(x, mask, numpy_bert.block_weights(block), norm_first)
  np.testing.assert_allclose(out, expected, atol=1e-5)


def test_round_trip_and_output_range():
  x = tf.random.normal([2, 5, 16])
  mask = tf.ones([2, 5])
  testing.run_layer_test(layers.TransformerEncoderBlock,
                         dict(num_attention_heads=2, inner_dim=32, inner_activation='gelu',
                              norm_first=True, output_range=2),
                         [x, mask], (2, 2, 16))


def test_bad_head_count():
  with pytest.raises(ValueError, match='not a multiple of num_attention_heads 3'):
    layers.TransformerEncoderBlock(num_attention_heads=3, inner_dim=8)(tf.zeros([1, 2, 16]))



def test_dropout_only_in_training():
  block = layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=32, output_dropout=0.5,
                                         attention_dropout=0.5)
  x = tf.random.normal([2, 5, 16], seed=5)
  mask = tf.ones([2, 5])
  np.testing.assert_allclose(block(x, mask), block(x, mask, training=False))
  assert not np.allclose(block(x, mask, training=True), block(x, mask, training=False))


def test_sublayer_names():
  block = layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=32, name='layer_0')
  block(tf.zeros([1, 3, 16]), tf.ones([1, 3]))
  names = {v.name.split('/')[1] for v in block.weights}
  assert names == {'self_attention', 'self_attention_layer_norm', 'intermediate', 'output',
                   'output_layer_norm'}
