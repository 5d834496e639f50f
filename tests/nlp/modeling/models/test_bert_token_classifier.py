"""Tests for official/nlp/modeling/models/bert_token_classifier.py."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import models
from tests import testing
from tests.nlp.modeling.models.test_bert_classifier import _dense, _encoder, _inputs


@pytest.mark.slow
def test_token_classifier_logits_and_predictions():
  encoder = _encoder()
  model = models.BertTokenClassifier(encoder, num_classes=5)
  outputs = model(_inputs(), training=False)
  assert set(outputs) == {'logits'}  # a dict, as Model Garden's
  logits = outputs['logits'].numpy()
  sequence = encoder(_inputs(), training=False)['sequence_output'].numpy()
  np.testing.assert_allclose(logits, _dense(model.classifier, sequence), atol=1e-5)
  assert model.classifier.name == 'predictions/transform/logits'
  assert set(model.checkpoint_items) == {'encoder'}

  log_probs = models.BertTokenClassifier(encoder, num_classes=5, output='predictions')
  log_probs.classifier.set_weights(model.classifier.get_weights())  # same head weights
  out = log_probs(_inputs(), training=False)['predictions'].numpy()
  expected = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  np.testing.assert_allclose(out, expected, atol=1e-5)

  both = models.BertTokenClassifier(encoder, num_classes=5, output_encoder_outputs=True)
  outputs = both(_inputs())
  assert outputs['logits'].shape == (3, 8, 5) and outputs['encoder_outputs'].shape == (3, 8, 16)


def test_token_classifier_rejects_unknown_output():
  with pytest.raises(ValueError, match="output must be one of \\['logits', 'predictions'\\], "
                     "found 'probs'"):
    models.BertTokenClassifier(_encoder(), num_classes=2, output='probs')


@pytest.mark.slow
def test_token_classifier_config_round_trip():
  testing.run_layer_test(models.BertTokenClassifier,
                         dict(network=_encoder(), num_classes=3, output='predictions'),
                         [_inputs()], {'predictions': (3, 8, 3)},
                         expected_output_dtype=tf.float32)
