"""Tests for official/nlp/modeling/layers/{transformer_encoder_block,self_attention}.py."""

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


def test_self_attention_round_trip():
  testing.run_layer_test(layers.MultiHeadSelfAttention, dict(num_heads=2, key_dim=4),
                         [tf.random.normal([2, 5, 8]), tf.ones([2, 5])], (2, 5, 8))
