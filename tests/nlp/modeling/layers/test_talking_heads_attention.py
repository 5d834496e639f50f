"""Tests for official/nlp/modeling/layers/talking_heads_attention.py."""

import numpy as np
import tensorflow as tf

from official.nlp.modeling import layers
from tests import testing
from tests.nlp.modeling import numpy_bert


def _numpy_talking_heads(query, value, mask, layer):
  """The talking-heads computation from the layer's weights, in numpy."""
  # pylint: disable=protected-access
  dense = lambda x, d: np.einsum('bsw,wnd->bsnd', x, d.kernel.numpy()) + d.bias.numpy()
  q, k, v = dense(query, layer._query_dense), dense(value, layer._key_dense), dense(
      value, layer._value_dense)
  scores = np.einsum('btnd,bsnd->bnts', q, k) / np.sqrt(q.shape[-1])
  scores = np.einsum('bnts,nm->bmts', scores, layer._pre_softmax_weight.numpy())
  probs = numpy_bert.softmax(scores + (1.0 - mask[:, None]) * -1e9)
  probs = np.einsum('bnts,nm->bmts', probs, layer._post_softmax_weight.numpy())
  context = np.einsum('bnts,bsnd->btnd', probs, v)
  output = layer._output_dense
  return (np.einsum('btnd,ndw->btw', context, output.kernel.numpy()) + output.bias.numpy(),
          probs)


def test_matches_numpy_with_a_mask():
  rng = np.random.default_rng(0)
  query = rng.normal(size=(2, 3, 6)).astype(np.float32)
  value = rng.normal(size=(2, 4, 6)).astype(np.float32)
  mask = np.ones([2, 3, 4], np.float32)
  mask[1, :, 2:] = 0
  layer = layers.TalkingHeadsAttention(num_heads=3, key_dim=2)
  layer(query, value)
  for v in layer.weights:  # non-zero biases
    v.assign(v + 0.1)
  out, scores = layer(query, value, attention_mask=mask, return_attention_scores=True)
  expected, expected_scores = _numpy_talking_heads(query, value, mask, layer)
  np.testing.assert_allclose(out, expected, atol=1e-5)
  np.testing.assert_allclose(scores, expected_scores, atol=1e-6)


def test_identity_mixing_is_keras_multi_head_attention():
  x = tf.random.normal([2, 3, 6], seed=1)
  talking = layers.TalkingHeadsAttention(num_heads=2, key_dim=3)
  plain = layers.MultiHeadAttention(num_heads=2, key_dim=3)
  talking(x, x), plain(x, x)
  plain.set_weights([w for w, v in zip(talking.get_weights(), talking.weights)
                     if 'softmax_weight' not in v.name])
  talking._pre_softmax_weight.assign(tf.eye(2))  # pylint: disable=protected-access
  talking._post_softmax_weight.assign(tf.eye(2))  # pylint: disable=protected-access
  np.testing.assert_allclose(talking(x, x), plain(x, x), atol=1e-6)


def test_mixing_weights_and_attention_axes():
  layer = layers.TalkingHeadsAttention(num_heads=4, key_dim=2, attention_axes=(2,))
  out, scores = layer(tf.ones([2, 3, 5, 8]), tf.ones([2, 3, 4, 8]), return_attention_scores=True)
  assert out.shape == (2, 3, 5, 8) and scores.shape == (2, 3, 4, 5, 4)
  shapes = {v.name.split('/')[-1]: tuple(v.shape) for v in layer.weights}
  assert shapes['pre_softmax_weight:0'] == shapes['post_softmax_weight:0'] == (4, 4)


def test_round_trip():
  testing.run_layer_test(layers.TalkingHeadsAttention, dict(num_heads=2, key_dim=3),
                         [tf.random.normal([2, 3, 6], seed=2), tf.random.normal([2, 4, 6])],
                         (2, 3, 6))
