"""Tests for official/nlp/modeling/models/bert_classifier.py ."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling import models
from official.nlp.modeling import networks
from tests import testing


def _encoder(dict_outputs=True):
  return networks.BertEncoder(**testing.tiny_kwargs(vocab_size=40, max_sequence_length=16,
                                                    dict_outputs=dict_outputs))


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
  assert (items['encoder'] is encoder
          and items['sentence_prediction.pooler_dense'].kernel.shape == (16, 16))


def test_list_output_encoder_gives_same_logits():
  encoder = _encoder(dict_outputs=False)
  model = models.BertClassifier(encoder, num_classes=1)
  assert model(_inputs()).shape == (3, 1)


@pytest.mark.slow
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


# The customize-encoder tutorial of Model Garden: a canonical BertEncoder classifier, the same
# encoder built by EncoderScaffold, and one with a custom embedding network.
_CFG = dict(vocab_size=100, hidden_size=32, num_layers=3, num_attention_heads=4,
            intermediate_size=64, activation='gelu', dropout_rate=0.1,
            attention_dropout_rate=0.1, max_sequence_length=16, type_vocab_size=2)


def _init():
  return tf_keras.initializers.TruncatedNormal(stddev=0.02)


def _scaffold_kwargs():
  cfg = _CFG
  return dict(
      hidden_cfg=dict(num_attention_heads=cfg['num_attention_heads'],
                      intermediate_size=cfg['intermediate_size'],
                      intermediate_activation=cfg['activation'],
                      dropout_rate=cfg['dropout_rate'],
                      attention_dropout_rate=cfg['attention_dropout_rate'],
                      kernel_initializer=_init()),
      embedding_cfg=dict(vocab_size=cfg['vocab_size'], type_vocab_size=cfg['type_vocab_size'],
                         hidden_size=cfg['hidden_size'], initializer=_init(),
                         dropout_rate=cfg['dropout_rate'],
                         max_seq_length=cfg['max_sequence_length']),
      num_hidden_instances=cfg['num_layers'], pooled_output_dim=cfg['hidden_size'],
      return_all_layer_outputs=True, pooler_layer_initializer=_init())


def _tutorial_batch():
  rng = np.random.default_rng(0)
  return [rng.integers(100, size=(3, 16)).astype(np.int32),
          rng.integers(2, size=(3, 16)).astype(np.int32),
          rng.integers(2, size=(3, 16)).astype(np.int32)]


@pytest.mark.slow
def test_set_weights_round_trip_between_bert_encoder_and_encoder_scaffold_classifiers():
  canonical = models.BertClassifier(networks.BertEncoder(**_CFG, initializer=_init()),
                                    num_classes=2)
  scaffold = models.BertClassifier(networks.EncoderScaffold(**_scaffold_kwargs()), num_classes=2)
  # Both are functional models with the encoder's three inputs and the logits as output.
  for model in (canonical, scaffold):
    assert [x.name for x in model.inputs] == ['input_word_ids', 'input_mask', 'input_type_ids']
    assert [x.shape.as_list() for x in model.outputs] == [[None, 2]]
    assert [type(layer).__name__ for layer in model.layers][3:] == [
        type(model.layers[3]).__name__, 'Dropout', 'ClassificationHead']
  # 5 embedding weights, 16 per layer, the pooler's 2 and the head's 2, in the same order.
  weights = canonical.get_weights()
  assert len(weights) == len(scaffold.get_weights()) == 5 + 3 * 16 + 2 + 2
  scaffold.set_weights(weights)
  batch = _tutorial_batch()
  np.testing.assert_allclose(scaffold(batch, training=False), canonical(batch, training=False),
                             atol=1e-5)
  canonical.set_weights([w * 0.5 for w in scaffold.get_weights()])  # and back
  np.testing.assert_allclose(canonical.get_weights()[-1], scaffold.get_weights()[-1] * 0.5)


def test_classifier_of_a_custom_embedding_network_has_its_two_inputs():
  word_ids = tf_keras.layers.Input(shape=(16,), dtype=tf.int32, name='input_word_ids')
  mask = tf_keras.layers.Input(shape=(16,), dtype=tf.int32, name='input_mask')
  embedding_layer = layers.OnDeviceEmbedding(vocab_size=100, embedding_width=32,
                                             name='word_embeddings')
  word_embeddings = embedding_layer(word_ids)
  attention_mask = layers.SelfAttentionMask()([word_embeddings, mask])
  network = tf_keras.Model([word_ids, mask], [word_embeddings, attention_mask])
  encoder = networks.EncoderScaffold(embedding_cls=network,
                                     embedding_data=embedding_layer.embeddings,
                                     **_scaffold_kwargs())
  classifier = models.BertClassifier(encoder, num_classes=2)
  assert len(classifier.inputs) == 2
  assert [x.name for x in classifier.inputs] == ['input_word_ids', 'input_mask']
  ids, mask_data, _ = _tutorial_batch()
  assert classifier([ids, mask_data]).shape == (3, 2)
  assert classifier({'input_word_ids': ids, 'input_mask': mask_data, 'label': ids}).shape == (3, 2)


@pytest.mark.slow
def test_models_are_functional_with_the_encoders_inputs():
  encoder = _encoder()
  names = ['input_word_ids', 'input_mask', 'input_type_ids']
  built = [models.BertClassifier(encoder, num_classes=2),
           models.BertTokenClassifier(encoder, num_classes=3),
           models.BertSpanLabeler(encoder)]
  for model in built:
    assert [x.name for x in model.inputs] == names
    assert model.layers[3] is encoder
    assert model.get_weights()[0].shape == (40, 16)  # the encoder's weights come first
  assert [x.name for x in models.BertPretrainer(_encoder(False), num_classes=2,
                                                num_token_predictions=3).inputs] == (
                                                    names + ['masked_lm_positions'])
  dual = models.DualEncoder(encoder, max_seq_length=8)
  assert [x.name for x in dual.inputs] == [f'{side}_{field}' for side in ('left', 'right')
                                           for field in ('word_ids', 'mask', 'type_ids')]
  with pytest.raises(ValueError, match=r"lack \['input_type_ids'\]"):
    built[0]({'input_word_ids': _inputs()['input_word_ids'],
              'input_mask': _inputs()['input_mask']})


def test_classifier_of_a_modernbert_encoder_fills_its_position_ids():
  encoder = networks.ModernBertEncoder(vocab_size=40, hidden_size=16, num_layers=2,
                                       num_attention_heads=2, intermediate_size=24,
                                       local_attention=4)
  classifier = models.BertClassifier(encoder, num_classes=2)
  assert [x.name for x in classifier.inputs] == ['input_word_ids', 'input_mask',
                                                 'input_position_ids']
  inputs = _inputs()  # no position ids: 0..seq-1, as the encoder's own default
  logits = classifier(inputs, training=False)
  positions = tf.broadcast_to(tf.range(8)[None], [3, 8])
  np.testing.assert_allclose(classifier(dict(inputs, input_position_ids=positions),
                                        training=False), logits, atol=1e-6)
  pooled = encoder(inputs, training=False)['pooled_output'].numpy()
  np.testing.assert_allclose(logits, _dense(classifier.classifier.out_proj, pooled), atol=1e-5)
