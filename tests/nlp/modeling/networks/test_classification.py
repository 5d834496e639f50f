"""Tests for official/nlp/modeling/networks/classification.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import networks
from tests import testing


def test_logits_and_log_probabilities_match_numpy():
  x = np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)
  net = networks.Classification(input_width=8, num_classes=4)
  kernel, bias = (w.numpy() for w in net.get_layer('predictions/transform/logits').weights)
  logits = x @ kernel + bias
  np.testing.assert_allclose(net(x).numpy(), logits, atol=1e-5)
  predictions = networks.Classification(input_width=8, num_classes=4, output='predictions')
  predictions.set_weights([kernel, bias])
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  np.testing.assert_allclose(predictions(x).numpy(), log_probs, atol=1e-5)
  # `logits` is the symbolic tensor before the log-softmax.
  np.testing.assert_allclose(tf_keras.Model(predictions.inputs, predictions.logits)(x).numpy(),
                             logits, atol=1e-5)


def test_log_softmax_stays_float32_under_mixed_bfloat16():
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    net = networks.Classification(input_width=8, num_classes=2, output='predictions')
    assert net(tf.zeros([1, 8])).dtype == tf.float32
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')


def test_config_round_trip_and_bad_output():
  testing.run_layer_test(networks.Classification,
                         dict(input_width=8, num_classes=3, output='predictions'),
                         [tf.ones([2, 8])], (2, 3))
  net = networks.Classification(input_width=8, num_classes=3, initializer='zeros')
  assert networks.Classification.from_config(net.get_config()).to_json() == net.to_json()
  with pytest.raises(ValueError, match=r'Unknown `output` value "bad": Classification output must '
                     r"be one of \['logits', 'predictions'\]"):
    networks.Classification(input_width=8, num_classes=3, output='bad')
