"""Tests for official/nlp/modeling/models/bert_classifier.py ."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import models
from official.nlp.modeling import networks
from tests import testing


def _encoder(dict_outputs=True):
  return networks.BertEncoder(vocab_size=40, hidden_size=16, num_layers=2, num_attention_heads=2,
                              inner_dim=32, max_sequence_length=16, dict_outputs=dict_outputs)


def _inputs():
  ids = tf.constant(np.random.default_rng(0).integers(1, 40, (3, 8)), tf.int32)
  return dict(input_word_ids=ids, input_mask=tf.ones_like(ids), input_type_ids=tf.zeros_like(ids))


def _dense(layer, x):
  return x @ layer.kernel.numpy() + layer.bias.numpy()


def test_encoder_pooler_head_matches_numpy():
  encoder = _encoder()
  model = models.BertClassifier(encoder, num_classes=3, use_encoder_pooler=True)
  logits = model(_inputs(), training=False).numpy()
  pooled = encoder(_inputs(), training=False)['pooled_output'].numpy()
  np.testing.assert_allclose(logits, _dense(model.classifier.out_proj, pooled), atol=1e-5)
  assert logits.dtype == np.float32
  assert set(model.checkpoint_items) == {'encoder'}


def test_own_pooler_head_matches_numpy():
  encoder = _encoder()
  model = models.BertClassifier(encoder, num_classes=2, use_encoder_pooler=False)
  logits = model(_inputs(), training=False).numpy()
  first = encoder(_inputs(), training=False)['sequence_output'].numpy()[:, 0]
  pooled = np.tanh(_dense(model.classifier.pooler_dense, first))
  np.testing.assert_allclose(logits, _dense(model.classifier.out_proj, pooled), atol=1e-5)
  items = model.checkpoint_items
  assert set(items) == {'encoder', 'sentence_prediction.pooler_dense'}
  assert items['encoder'] is encoder and items['sentence_prediction.pooler_dense'].kernel.shape == (16, 16)


def test_list_output_encoder_gives_same_logits():
  encoder = _encoder(dict_outputs=False)
  model = models.BertClassifier(encoder, num_classes=1)
  assert model(_inputs()).shape == (3, 1)


def test_classifier_config_round_trip():
  testing.run_layer_test(models.BertClassifier,
                         dict(network=_encoder(), num_classes=4, dropout_rate=0.2,
                              use_encoder_pooler=False, name='cls'),
                         [_inputs()], (3, 4), expected_output_dtype=tf.float32)


def test_classifier_rejects_zero_classes():
  with pytest.raises(ValueError, match='num_classes must be >= 1, found 0'):
    models.BertClassifier(_encoder(), num_classes=0)



def test_restoring_a_checkpoint_of_another_hidden_size_fails_at_once(tmp_path):
  # The encoder has its variables once constructed (as Model Garden's), so a restore through
  # `checkpoint_items` is checked at once instead of being deferred to the first call and
  # silently leaving random weights.
  source = networks.BertEncoder(vocab_size=40, hidden_size=8, num_layers=2, num_attention_heads=2,
                                inner_dim=32, max_sequence_length=16)
  path = tf.train.Checkpoint(encoder=source).save(str(tmp_path / 'ckpt'))
  model = models.BertClassifier(_encoder(), num_classes=2)
  assert model.checkpoint_items['encoder'].weights, 'the encoder has no variables yet'
  # Model Garden's error, word for word (its encoder gives the same message).
  with pytest.raises(ValueError, match=r'Received incompatible tensor with shape \(40, 8\) when '
                     r'attempting to restore variable with shape \(40, 16\) and name '
                     r'word_embeddings/embeddings:0'):
    status = tf.train.Checkpoint(**model.checkpoint_items).read(path)
    status.expect_partial().assert_existing_objects_matched()


def test_restoring_a_matching_checkpoint_into_a_fresh_classifier_is_immediate(tmp_path):
  source = _encoder()
  path = tf.train.Checkpoint(encoder=source).save(str(tmp_path / 'ckpt'))
  model = models.BertClassifier(_encoder(), num_classes=2)
  tf.train.Checkpoint(**model.checkpoint_items).read(path).assert_existing_objects_matched()
  for restored, saved in zip(model.checkpoint_items['encoder'].weights, source.weights):
    np.testing.assert_array_equal(restored.numpy(), saved.numpy())
