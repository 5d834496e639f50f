"""Tests for official/nlp/modeling/models/electra_pretrainer.py."""

import json

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.modeling.models import electra_pretrainer as ep

_VOCAB = 30


def _encoder(hidden_size=16, **kwargs):
  return networks.BertEncoder(vocab_size=_VOCAB, hidden_size=hidden_size, num_layers=1,
                              num_attention_heads=2, inner_dim=32, max_sequence_length=16,
                              dict_outputs=True, **kwargs)


def _model(**kwargs):
  discriminator = _encoder(hidden_size=16)
  generator = _encoder(hidden_size=8, embedding_width=16,
                       embedding_layer=discriminator.get_embedding_layer())
  return models.ElectraPretrainer(generator, discriminator, vocab_size=_VOCAB, num_classes=3,
                                  num_token_predictions=3, mlm_activation='gelu', **kwargs)


def _inputs():
  ids = np.array([[2, 5, 9, 4, 8, 3, 0, 0], [2, 7, 7, 6, 3, 0, 0, 0]], np.int32)
  # Slot 2 of row 1 is padding (position 0): it is never written.
  positions = np.array([[1, 3, 5], [2, 4, 0]], np.int32)
  return dict(input_word_ids=tf.constant(ids), input_mask=tf.constant((ids > 0).astype(np.int32)),
              input_type_ids=tf.zeros_like(ids), masked_lm_positions=tf.constant(positions),
              masked_lm_ids=tf.constant([[11, 12, 13], [14, 15, 0]]))


def _reference_scatter(sequence, updates, positions):
  sequence, written = np.array(sequence), np.zeros(sequence.shape[:2], np.int32)
  for b in range(positions.shape[0]):
    for j, position in enumerate(positions[b]):
      if position != 0:
        sequence[b, position] = updates[b, j]
        written[b, position] = 1
  return sequence, written


def test_scatter_update_matches_a_loop_last_duplicate_wins_position_0_kept():
  rng = np.random.default_rng(0)
  sequence = rng.integers(0, 50, (3, 7)).astype(np.int32)
  updates = rng.integers(50, 100, (3, 4)).astype(np.int32)
  positions = np.array([[0, 2, 5, 2], [1, 1, 1, 6], [0, 0, 3, 4]], np.int32)
  updated, mask = ep.scatter_update(sequence, updates, positions)
  expected, expected_mask = _reference_scatter(sequence, updates, positions)
  np.testing.assert_array_equal(updated.numpy(), expected)
  np.testing.assert_array_equal(mask.numpy(), expected_mask)
  # [batch, seq, depth] sequences get whole rows written.
  depth = rng.normal(size=(3, 7, 2)).astype(np.float32)
  rows = rng.normal(size=(3, 4, 2)).astype(np.float32)
  updated, _ = ep.scatter_update(depth, rows, positions)
  for d in range(2):
    np.testing.assert_allclose(updated.numpy()[..., d],
                               _reference_scatter(depth[..., d], rows[..., d], positions)[0])


def test_sample_from_softmax_follows_the_distribution_and_disallow():
  tf.random.set_seed(1)
  probabilities = np.array([0.6, 0.3, 0.1, 0.0], np.float32)
  logits = tf.math.log(tf.constant(np.tile(probabilities + 1e-12, (4000, 1, 1))))
  samples = ep.sample_from_softmax(logits).numpy()
  assert samples.shape == (4000, 1, 4) and (samples.sum(-1) == 1).all()
  np.testing.assert_allclose(samples.mean((0, 1)), probabilities, atol=0.03)
  disallow = tf.one_hot(tf.zeros([4000, 1], tf.int32), 4)
  samples = ep.sample_from_softmax(logits, disallow=disallow).numpy()
  assert samples[..., 0].sum() == 0
  np.testing.assert_allclose(samples.mean((0, 1))[1:], [0.75, 0.25, 0.0], atol=0.03)


@pytest.mark.slow
def test_outputs_and_the_discriminator_sees_the_sampled_tokens():
  model = _model()
  inputs = _inputs()
  # A huge output bias on token 17 makes the generator always sample it.
  bias = np.zeros([_VOCAB], np.float32)
  bias[17] = 1e4
  model(inputs)
  model.masked_lm.bias.assign(bias)
  outputs = model(inputs, training=False)
  assert {k: tuple(v.shape) for k, v in outputs.items()} == {
      'lm_outputs': (2, 3, _VOCAB), 'sentence_outputs': (2, 3), 'disc_logits': (2, 8),
      'disc_label': (2, 8)}
  assert outputs['disc_label'].dtype == tf.int32 and outputs['disc_logits'].dtype == tf.float32
  corrupted, written = _reference_scatter(inputs['input_word_ids'].numpy(), np.full([2, 3], 17),
                                          inputs['masked_lm_positions'].numpy())
  np.testing.assert_array_equal(outputs['disc_label'].numpy(), written)  # 17 differs everywhere
  disc = dict(inputs, input_word_ids=tf.constant(corrupted))
  sequence = model.discriminator_network(disc, training=False)['sequence_output']
  expected = model.discriminator_head(model.discriminator_projection(sequence))[..., 0]
  np.testing.assert_allclose(outputs['disc_logits'].numpy(), expected.numpy(), atol=1e-5)
  generator_sequence = model.generator_network(inputs, training=False)['sequence_output']
  np.testing.assert_allclose(
      outputs['lm_outputs'].numpy(),
      model.masked_lm(generator_sequence, inputs['masked_lm_positions']).numpy(), atol=1e-3)
  np.testing.assert_allclose(outputs['sentence_outputs'].numpy(),
                             model.classification(generator_sequence).numpy(), atol=1e-5)


def test_an_unchanged_sample_is_not_labelled_fake_unless_disallowed():
  inputs = _inputs()
  bias = np.zeros([_VOCAB], np.float32)
  bias[12] = 100.0  # the original token of row 0, slot 1 (position 3); below the -1000 penalty
  for disallow_correct, label in ((False, 0), (True, 1)):
    model = _model(disallow_correct=disallow_correct)
    model(inputs)
    model.masked_lm.bias.assign(bias)
    assert int(model(inputs)['disc_label'][0, 3]) == label


def test_checkpoint_layout_is_model_gardens(tmp_path):
  model = _model()
  model(_inputs())
  assert model.checkpoint_items == {'encoder': model.discriminator_network}
  assert model.masked_lm.name == 'generator_masked_lm'
  assert model.classification.name == 'generator_classification_head'
  assert model.discriminator_projection.name == 'discriminator_projection_head'
  # The tied table is the discriminator's.
  assert model.generator_network.get_embedding_table() is (
      model.discriminator_network.get_embedding_table())
  path = tf.train.Checkpoint(model=model).write(str(tmp_path / 'ckpt'))
  roots = {name.split('/')[1] for name, _ in tf.train.list_variables(path) if '/' in name}
  assert roots == {'generator_network', 'discriminator_network', 'masked_lm', 'classification',
                   'discriminator_projection', 'discriminator_head'}


def test_config_round_trip_through_json():
  model = _model(disallow_correct=True, output_type='predictions')
  config = json.loads(json.dumps(model.get_config()))
  rebuilt = models.ElectraPretrainer.from_config(config)
  assert rebuilt.get_config() == model.get_config()
  assert rebuilt.to_json() == model.to_json()
  outputs = rebuilt(_inputs())
  # 'predictions': log-probabilities.
  np.testing.assert_allclose(np.exp(outputs['lm_outputs'].numpy()).sum(-1), 1.0, atol=1e-4)


def test_errors_name_the_problem():
  with pytest.raises(ValueError, match="inputs lack \\['masked_lm_ids'\\]"):
    inputs = _inputs()
    del inputs['masked_lm_ids']
    _model()(inputs)
  with pytest.raises(ValueError, match="vocab_size is 31 but the generator's embedding table has "
                     '30 rows'):
    models.ElectraPretrainer(_encoder(), _encoder(), vocab_size=31, num_classes=2,
                             num_token_predictions=2)
