"""Tests for official/nlp/modeling/layers/cls_head.py."""

import numpy as np
import tensorflow as tf

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
