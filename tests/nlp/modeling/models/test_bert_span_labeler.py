"""Tests for official/nlp/modeling/models/bert_span_labeler.py."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import models
from tests import testing
from tests.nlp.modeling.models.test_bert_classifier import _encoder, _inputs


def test_span_labeler_outputs_start_and_end_logits_per_position():
  encoder = _encoder()
  model = models.BertSpanLabeler(encoder)
  start, end = model(_inputs(), training=False)
  assert start.shape == (3, 8) and end.shape == (3, 8) and start.dtype == tf.float32
  sequence = encoder(_inputs(), training=False)['sequence_output'].numpy()
  kernel, bias = (w.numpy() for w in model.span_labeling.dense.weights)
  logits = sequence @ kernel + bias
  np.testing.assert_allclose(start.numpy(), logits[..., 0], atol=1e-5)
  np.testing.assert_allclose(end.numpy(), logits[..., 1], atol=1e-5)
  assert set(model.checkpoint_items) == {'encoder'}
  assert model.checkpoint_items['encoder'] is encoder


@pytest.mark.slow
def test_span_labeler_config_round_trip():
  testing.run_layer_test(models.BertSpanLabeler, dict(network=_encoder(), output='predictions'),
                         [_inputs()], [(3, 8), (3, 8)], expected_output_dtype=tf.float32)
