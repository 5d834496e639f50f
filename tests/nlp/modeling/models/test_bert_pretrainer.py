"""Tests for official/nlp/modeling/models/bert_pretrainer.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling import models
from official.nlp.modeling import networks


def _pretrainer(heads=('next_sentence',)):
  encoder = networks.BertEncoder(vocab_size=50, hidden_size=16, num_layers=2,
                                 num_attention_heads=2, inner_dim=32, max_sequence_length=16,
                                 dict_outputs=True)
  return models.BertPretrainerV2(
      encoder, mlm_activation='gelu',
      classification_heads=[layers.ClassificationHead(16, 3, name=name) for name in heads])


def _inputs():
  ids = tf.constant(np.random.default_rng(0).integers(1, 50, (2, 8)), tf.int32)
  return dict(input_word_ids=ids, input_mask=tf.ones_like(ids), input_type_ids=tf.zeros_like(ids),
              masked_lm_positions=tf.constant([[1, 2, 0], [3, 4, 5]]))


def test_outputs_and_checkpoint_items():
  pretrainer = _pretrainer(heads=('next_sentence', 'topic'))
  outputs = pretrainer(_inputs())
  assert outputs['mlm_logits'].shape == (2, 3, 50) and outputs['mlm_logits'].dtype == tf.float32
  assert outputs['next_sentence'].shape == (2, 3) and outputs['topic'].shape == (2, 3)
  assert outputs['sequence_output'].shape == (2, 8, 16)
  assert outputs['pooled_output'].shape == (2, 16)
  assert set(pretrainer.checkpoint_items) == {'encoder', 'masked_lm', 'next_sentence', 'topic'}
  # The masked-LM head is tied to the encoder's word embeddings.
  assert pretrainer.masked_lm.embedding_table is pretrainer.encoder_network.get_embedding_table()


def test_duplicate_head_names_raise():
  with pytest.raises(ValueError, match=r"duplicated: \['nsp'\]"):
    _pretrainer(heads=('nsp', 'nsp'))


def test_get_config_round_trip():
  pretrainer = _pretrainer()
  inputs = _inputs()
  outputs = pretrainer(inputs)
  rebuilt = models.BertPretrainerV2.from_config(pretrainer.get_config())
  rebuilt(inputs)
  rebuilt.set_weights(pretrainer.get_weights())
  again = rebuilt(inputs)
  for key in ('mlm_logits', 'next_sentence', 'pooled_output'):
    np.testing.assert_allclose(again[key], outputs[key], atol=1e-6)


def test_mixed_bfloat16_keeps_logits_float32():
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    outputs = _pretrainer()(_inputs())
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert outputs['mlm_logits'].dtype == tf.float32
  assert outputs['next_sentence'].dtype == tf.float32
  assert outputs['sequence_output'].dtype == tf.bfloat16


def test_rebuilt_masked_lm_is_tied_to_rebuilt_encoder():
  rebuilt = models.BertPretrainerV2.from_config(_pretrainer().get_config())
  rebuilt(_inputs())
  assert rebuilt.masked_lm.embedding_table is rebuilt.encoder_network.get_embedding_table()
  assert rebuilt.masked_lm.name == 'cls/predictions'


def test_checkpoint_items_restore_the_encoder(tmp_path):
  source = _pretrainer()
  source(_inputs())
  path = tf.train.Checkpoint(**source.checkpoint_items).save(str(tmp_path / 'ckpt'))
  target = _pretrainer()
  target(_inputs())
  tf.train.Checkpoint(encoder=target.encoder_network).read(path).expect_partial()
  for a, b in zip(source.encoder_network.weights, target.encoder_network.weights):
    np.testing.assert_allclose(a.numpy(), b.numpy())
  # The tied MLM table follows the encoder; the head's own weights were not restored.
  np.testing.assert_allclose(target.masked_lm.embedding_table.numpy(),
                             source.masked_lm.embedding_table.numpy())
  assert not np.allclose(target.masked_lm.dense.kernel.numpy(),
                         source.masked_lm.dense.kernel.numpy())


def test_jit_compiled_forward():
  pretrainer = _pretrainer()
  inputs = _inputs()
  eager = pretrainer(inputs)
  compiled = tf.function(pretrainer, jit_compile=True)(inputs)
  for key in ('mlm_logits', 'next_sentence'):
    np.testing.assert_allclose(compiled[key], eager[key], atol=1e-4)


def test_list_output_encoder_is_accepted():
  encoder = networks.BertEncoder(vocab_size=50, hidden_size=16, num_layers=1,
                                 num_attention_heads=2, inner_dim=32, max_sequence_length=16)
  outputs = models.BertPretrainerV2(encoder)(_inputs())
  assert outputs['mlm_logits'].shape == (2, 3, 50) and outputs['pooled_output'].shape == (2, 16)


def test_word_embedding_variable_keeps_its_scoped_name():
  pretrainer = _pretrainer()
  pretrainer(_inputs())
  name = pretrainer.encoder_network.get_embedding_table().name
  assert name.endswith('word_embeddings/embeddings:0'), name
