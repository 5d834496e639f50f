"""Tests for official/nlp/modeling/networks/span_labeling.py."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import networks
from tests import testing


def test_span_labeling_logits_are_the_dense_columns():
  sequence = np.random.default_rng(0).normal(size=(2, 5, 4)).astype(np.float32)
  layer = networks.SpanLabeling(input_width=4)
  start, end = layer(tf.constant(sequence))
  kernel, bias = (w.numpy() for w in layer.dense.weights)
  logits = sequence @ kernel + bias  # [2, 5, 2]
  np.testing.assert_allclose(start.numpy(), logits[..., 0], atol=1e-5)
  np.testing.assert_allclose(end.numpy(), logits[..., 1], atol=1e-5)
  assert layer.dense.name == 'predictions/transform/logits'

  log_probs = networks.SpanLabeling(input_width=4, output='predictions')
  log_probs(tf.constant(sequence))
  log_probs.dense.set_weights([kernel, bias])
  start_lp, _ = log_probs(tf.constant(sequence))
  expected = logits[..., 0] - np.log(np.exp(logits[..., 0]).sum(-1, keepdims=True))
  np.testing.assert_allclose(start_lp.numpy(), expected, atol=1e-5)


def test_span_labeling_errors_name_the_argument():
  with pytest.raises(ValueError, match="output must be one of \\['logits', 'predictions'\\], "
                     "found 'probs'"):
    networks.SpanLabeling(input_width=4, output='probs')
  with pytest.raises(ValueError, match='input_width is 4 but the sequence has width 6'):
    networks.SpanLabeling(input_width=4)(tf.zeros([1, 3, 6]))


def test_span_labeling_config_round_trip():
  testing.run_layer_test(networks.SpanLabeling,
                         dict(input_width=4, activation='tanh', output='predictions'),
                         [tf.zeros([2, 5, 4]) + 0.5], [(2, 5), (2, 5)])
