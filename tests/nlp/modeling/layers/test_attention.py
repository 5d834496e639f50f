"""Tests for official/nlp/modeling/layers/attention.py."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling.layers import attention


def _cached_layer():
  return attention.CachedAttention(
      num_heads=2, key_dim=3, kernel_initializer=tf_keras.initializers.RandomNormal(seed=1))


def _causal(length):
  return np.tril(np.ones([length, length], np.float32))[None]


def test_model_garden_names_are_keras_layers():
  assert attention.MultiHeadAttention is tf_keras.layers.MultiHeadAttention
  assert attention.EinsumDense is tf_keras.layers.EinsumDense


def test_step_by_step_decoding_with_a_cache_equals_causal_attention():
  x = np.random.default_rng(0).normal(size=(2, 4, 6)).astype(np.float32)
  layer = _cached_layer()
  full, no_cache = layer(x, x, attention_mask=np.repeat(_causal(4), 2, 0))
  assert no_cache is None
  cache = {'key': tf.zeros([2, 0, 2, 3]), 'value': tf.zeros([2, 0, 2, 3])}
  steps = []
  for t in range(4):
    step, cache = layer(x[:, t:t + 1], x[:, t:t + 1], attention_mask=tf.ones([2, 1, t + 1]),
                        cache=cache)
    steps.append(step)
  assert cache['key'].shape == (2, 4, 2, 3)
  np.testing.assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)


def test_decode_loop_step_writes_into_a_preallocated_cache():
  x = np.random.default_rng(1).normal(size=(1, 3, 6)).astype(np.float32)
  layer = _cached_layer()
  full, _ = layer(x, x, attention_mask=_causal(3))
  cache = {'key': tf.zeros([1, 3, 2, 3]), 'value': tf.zeros([1, 3, 2, 3])}
  for t in range(3):
    step, cache = layer(x[:, t:t + 1], x[:, t:t + 1], attention_mask=_causal(3)[:, t:t + 1],
                        cache=cache, decode_loop_step=t)
    np.testing.assert_allclose(step[:, 0], full[:, t], atol=1e-5)
  keys = layer._key_dense(x)  # pylint: disable=protected-access
  np.testing.assert_allclose(cache['key'], keys, atol=1e-6)


def test_attention_scores_and_a_bad_cache():
  layer = _cached_layer()
  x = tf.ones([1, 2, 6])
  out, scores, _ = layer(x, x, return_attention_scores=True)
  assert out.shape == (1, 2, 6) and scores.shape == (1, 2, 2, 2)
  with pytest.raises(ValueError, match=r"cache must hold .*lacks \['value'\]"):
    layer(x, x, cache={'key': tf.zeros([1, 0, 2, 3])})


def test_cached_attention_json_round_trip():
  layer = _cached_layer()
  x = tf.ones([1, 2, 6])
  layer(x, x)
  clone = tf_keras.layers.deserialize(json.loads(json.dumps(tf_keras.layers.serialize(layer))))
  assert type(clone) is attention.CachedAttention
  assert clone.get_config() == layer.get_config()
  clone(x, x)
  clone.set_weights(layer.get_weights())
  np.testing.assert_allclose(clone(x, x)[0], layer(x, x)[0])


def test_dense_options():
  options = attention.DenseOptions(kernel_initializer='he_normal', kernel_regularizer='l2')
  first, second = options.layer_kwargs(), options.layer_kwargs()
  assert isinstance(first['kernel_initializer'], tf_keras.initializers.HeNormal)
  assert first['kernel_initializer'] is not second['kernel_initializer']  # fresh copies
  assert 'kernel_initializer' not in options.layer_kwargs(initializers=False)
  assert options.non_default() == ['kernel_initializer', 'kernel_regularizer']
  assert attention.DenseOptions().non_default() == []
  rebuilt = attention.DenseOptions(**options.get_config())
  assert rebuilt.get_config() == options.get_config()
  kwargs = {'bias_constraint': 'non_neg', 'name': 'x'}
  assert attention.pop_dense_options(kwargs).non_default() == ['bias_constraint']
  assert kwargs == {'name': 'x'}
