"""Tests for official/nlp/modeling/layers/cls_head.py."""

import numpy as np
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
