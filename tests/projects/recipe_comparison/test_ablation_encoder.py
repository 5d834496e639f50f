"""Tests of the recipe study's ablation encoder (BERT with ModernBERT's differences as switches)."""

import numpy as np
import pytest
import tensorflow as tf

from official.modeling import hyperparams
from official.nlp.configs import encoders
from official.nlp.modeling import models
from official.nlp.modeling.networks import bert_encoder
from official.projects.recipe_comparison import ablation_encoder

SIZES = dict(vocab_size=50, hidden_size=16, num_layers=2, num_attention_heads=2)
pytestmark = pytest.mark.usefixtures('ablation_family')


def _inputs(seed=0):
  ids = tf.constant(np.random.RandomState(seed).randint(1, 50, (2, 7)), tf.int32)
  mask = tf.constant([[1] * 7, [1] * 5 + [0] * 2], tf.int32)
  return {'input_word_ids': ids, 'input_mask': mask,
          'input_type_ids': tf.constant([[0] * 4 + [1] * 3] * 2, tf.int32)}


def _encoder(**switches):
  return ablation_encoder.AblationEncoder(intermediate_size=32, max_sequence_length=20,
                                          **SIZES, **switches)


def test_with_every_switch_off_it_computes_what_bert_computes():
  ours = _encoder(dropout_rate=0.0, attention_dropout_rate=0.0)
  bert = bert_encoder.BertEncoder(inner_dim=32, output_dropout=0.0, attention_dropout=0.0,
                                  max_sequence_length=20, type_vocab_size=2, dict_outputs=True,
                                  **SIZES)
  inputs = _inputs()
  ours(inputs), bert(inputs)
  assert [w.name for w in ours.weights] == [w.name for w in bert.weights]
  for mine, theirs in zip(ours.weights, bert.weights):
    mine.assign(theirs)
  got, want = ours(inputs), bert(inputs)
  for key in ('sequence_output', 'pooled_output'):
    np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), atol=1e-6)


@pytest.mark.parametrize('switches, absent, present', [
    (dict(positions='rotary'), 'position_embedding/', None),
    (dict(use_bias=False), 'transformer/layer_0/intermediate/bias', None),
    (dict(norm_first=True), None, 'final_layer_norm/gamma'),
])
def test_each_switch_changes_its_part_only(switches, absent, present):
  encoder = _encoder(**switches)
  names = [w.name for w in encoder.weights]
  baseline = [w.name for w in _encoder().weights]
  if absent:
    assert not any(absent in name for name in names)
    assert any(absent in name for name in baseline)
  if present:
    assert any(present in name for name in names)
    assert not any(present in name for name in baseline)
  assert encoder(_inputs())['sequence_output'].shape == (2, 7, 16)


def test_gated_inner_doubles_the_feed_forward_input():
  kernel = lambda e: [w for w in e.weights if 'layer_0/intermediate/kernel' in w.name][0]
  assert kernel(_encoder(gated_inner=True)).shape[-1] == 2 * kernel(_encoder()).shape[-1] == 64


def test_rotary_positions_make_order_matter_without_a_position_table():
  # Weights large enough for attention far from uniform (at 0.02 it is nearly uniform, so nearly
  # order-blind whatever the positions).
  encoder = _encoder(positions='rotary', dropout_rate=0.0, attention_dropout_rate=0.0,
                     initializer_range=0.5)
  inputs = {'input_word_ids': tf.constant([[3, 4, 5, 6]]), 'input_mask': tf.ones([1, 4], tf.int32)}
  flipped = dict(inputs, input_word_ids=inputs['input_word_ids'][:, ::-1])
  out = encoder(inputs)['sequence_output'].numpy()[0]
  out_flipped = encoder(flipped)['sequence_output'].numpy()[0, ::-1]
  # Without positions attention is permutation-equivariant; rotary breaks that.
  assert np.abs(out - out_flipped).max() > 0.1


def test_config_round_trip_builds_the_same_encoder():
  encoder = _encoder(positions='rotary', gated_inner=True, use_bias=False, norm_first=True)
  clone = ablation_encoder.AblationEncoder.from_config(encoder.get_config())
  assert clone.get_config() == encoder.get_config()
  inputs = _inputs(1)
  encoder(inputs), clone(inputs)
  for mine, theirs in zip(clone.weights, encoder.weights):
    mine.assign(theirs)
  np.testing.assert_allclose(clone(inputs)['sequence_output'].numpy(),
                             encoder(inputs)['sequence_output'].numpy(), atol=1e-6)


def test_the_family_builds_from_an_encoder_config_with_a_bias_free_head():
  config = encoders.EncoderConfig(type='ablation', ablation=ablation_encoder.AblationEncoderConfig(
      intermediate_size=32, use_bias=False, **SIZES))
  encoder = encoders.build_encoder(config)
  assert isinstance(encoder, ablation_encoder.AblationEncoder)
  pretrainer = models.BertPretrainerV2(encoder_network=encoder)
  inputs = dict(_inputs(), masked_lm_positions=tf.constant([[1, 2], [0, 3]]))
  assert pretrainer(inputs)['mlm_logits'].shape == (2, 2, 50)
  assert not any('masked_lm' in w.name and 'bias' in w.name and 'output_bias' not in w.name
                 for w in pretrainer.weights)


def test_an_unknown_position_kind_is_refused_naming_the_field():
  with pytest.raises(hyperparams.ConfigError, match="positions.*expected one of .*'learned', "
                     "'rotary'.*'sinusoid'"):
    ablation_encoder.AblationEncoderConfig(positions='sinusoid').validate()
  with pytest.raises(ValueError, match="positions: expected one of"):
    _encoder(positions='sinusoid')
  with pytest.raises(hyperparams.ConfigError, match=r"embedding_size.*the ablation encoder does "
                     r"not build it; found 128"):
    ablation_encoder.AblationEncoderConfig(embedding_size=128).validate()
