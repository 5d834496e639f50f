"""Tests for official/nlp/modeling/layers/cls_head.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing


def test_logits_match_numpy_and_round_trip():
  features = tf.random.normal([3, 6, 16], seed=0)
  head = layers.ClassificationHead(inner_dim=8, num_classes=4, cls_token_idx=1, name='topic')
  logits = head(features).numpy()
  (k1, b1), (k2, b2) = [[v.numpy() for v in head.pooler_dense.weights],
                        [v.numpy() for v in head.out_proj.weights]]
  expected = np.tanh(features.numpy()[:, 1] @ k1 + b1) @ k2 + b2
  np.testing.assert_allclose(logits, expected, atol=1e-5)
  assert set(head.checkpoint_items) == {'pooler_dense'}
  testing.run_layer_test(layers.ClassificationHead,
                         dict(inner_dim=8, num_classes=4, dropout_rate=0.1, name='nsp'),
                         [features], (3, 4))


def test_without_pooler():
  head = layers.ClassificationHead(inner_dim=0, num_classes=2)
  assert head(tf.zeros([2, 5, 16])).shape == (2, 2)
  assert head.checkpoint_items == {}


def test_names_and_float32_logits_under_mixed_bfloat16():
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    head = layers.ClassificationHead(inner_dim=8, num_classes=2, name='next_sentence')
    logits = head(tf.random.normal([2, 5, 16]))
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert logits.dtype == tf.float32 and logits.shape == (2, 2)
  assert {v.name for v in head.weights} == {
      'next_sentence/pooler_dense/kernel:0', 'next_sentence/pooler_dense/bias:0',
      'next_sentence/logits/kernel:0', 'next_sentence/logits/bias:0'}
  assert head.checkpoint_items['pooler_dense'] is head.pooler_dense


def test_only_project_returns_the_pooler_output_and_pooled_inputs_are_used_as_is():
  features = tf.random.normal([3, 6, 16], seed=1)
  head = layers.ClassificationHead(inner_dim=8, num_classes=2)
  projected = head(features, only_project=True)
  kernel, bias = [v.numpy() for v in head.pooler_dense.weights]
  np.testing.assert_allclose(projected, np.tanh(features.numpy()[:, 0] @ kernel + bias), atol=1e-5)
  # A [batch, hidden] input is already pooled: the same logits as from the full sequence.
  np.testing.assert_allclose(head(features[:, 0]), head(features), atol=1e-6)


def test_multi_cls_heads_share_the_pooler_and_match_numpy():
  features = tf.random.normal([3, 6, 16], seed=2)
  heads = layers.MultiClsHeads(inner_dim=8, cls_list=[('topic', 4), ('spam', 2)],
                               cls_token_idx=2, name='multi')
  outputs = heads(features)
  assert sorted(outputs) == ['spam', 'topic']
  pooled = np.tanh(features.numpy()[:, 2] @ heads.dense.kernel.numpy() + heads.dense.bias.numpy())
  for layer, width in zip(heads.out_projs, (4, 2)):
    expected = pooled @ layer.kernel.numpy() + layer.bias.numpy()
    assert outputs[layer.name].shape == (3, width) and outputs[layer.name].dtype == tf.float32
    np.testing.assert_allclose(outputs[layer.name], expected, atol=1e-5)
  assert heads(features, only_project=True).shape == (3, 8)
  assert set(heads.checkpoint_items) == {'pooler_dense', 'topic', 'spam'}
  assert len(layers.MultiClsHeads(0, [('a', 2), ('b', 3)])(features).keys()) == 2
  testing.run_layer_test(layers.MultiClsHeads, dict(inner_dim=8, cls_list=[['a', 2], ['b', 3]]),
                         [features], {'a': (3, 2), 'b': (3, 3)}, expected_output_dtype=tf.float32)


def test_multi_cls_heads_refuse_duplicate_names():
  with pytest.raises(ValueError, match=r"duplicated: \['a'\]"):
    layers.MultiClsHeads(inner_dim=4, cls_list=[('a', 2), ('a', 3)])


def test_per_query_dense_head_matches_numpy_and_round_trips():
  inputs = tf.random.normal([2, 3, 5], seed=3)
  head = layers.PerQueryDenseHead(num_queries=3, features=4, use_bias=True)
  outputs = head(inputs)
  head.bias.assign(tf.random.normal([3, 4], seed=4))
  outputs = head(inputs).numpy()
  expected = np.einsum('bqh,qhf->bqf', inputs.numpy(), head.kernel.numpy()) + head.bias.numpy()
  np.testing.assert_allclose(outputs, expected, atol=1e-5)
  assert len(layers.PerQueryDenseHead(3, 4)(inputs).shape) == 3
  testing.run_layer_test(layers.PerQueryDenseHead, dict(num_queries=3, features=4, use_bias=True),
                         [inputs], (2, 3, 4))
