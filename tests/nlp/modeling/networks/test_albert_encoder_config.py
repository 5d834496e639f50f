"""Tests for official/nlp/modeling/networks/albert_encoder_config.py."""

import pytest

from official.modeling import hyperparams
from official.nlp.modeling import networks
from official.nlp.modeling.networks import albert_encoder_config as aec

# Google's albert_config.json of ALBERT-base (v2), as released.
GOOGLE_BASE = {
    'attention_probs_dropout_prob': 0, 'hidden_act': 'gelu', 'hidden_dropout_prob': 0,
    'embedding_size': 128, 'hidden_size': 768, 'initializer_range': 0.02,
    'intermediate_size': 3072, 'max_position_embeddings': 512, 'num_attention_heads': 12,
    'num_hidden_layers': 12, 'num_hidden_groups': 1, 'net_structure_type': 0, 'gap_size': 0,
    'num_memory_blocks': 0, 'inner_group_num': 1, 'down_scale_factor': 1, 'type_vocab_size': 2,
    'vocab_size': 30000}


def test_defaults_are_model_gardens_albert_base():
  assert aec.AlbertEncoderConfig().as_dict() == dict(
      vocab_size=30000, embedding_width=128, hidden_size=768, num_layers=12,
      num_attention_heads=12, hidden_activation='gelu', intermediate_size=3072, dropout_rate=0.0,
      attention_dropout_rate=0.0, max_position_embeddings=512, type_vocab_size=2,
      initializer_range=0.02)


def test_encoder_kwargs_build_the_configured_encoder():
  config = aec.AlbertEncoderConfig(vocab_size=50, embedding_width=8, hidden_size=16, num_layers=3,
                                   num_attention_heads=2, intermediate_size=24,
                                   max_position_embeddings=20, type_vocab_size=3,
                                   hidden_activation='relu', dropout_rate=0.1,
                                   initializer_range=0.05)
  encoder = networks.AlbertEncoder(**aec.encoder_kwargs(config))
  got = encoder.get_config()
  assert {k: got[k] for k in ('vocab_size', 'embedding_width', 'hidden_size', 'num_layers',
                              'num_attention_heads', 'max_sequence_length', 'type_vocab_size',
                              'intermediate_size', 'activation', 'dropout_rate')} == dict(
      vocab_size=50, embedding_width=8, hidden_size=16, num_layers=3, num_attention_heads=2,
      max_sequence_length=20, type_vocab_size=3, intermediate_size=24, activation='relu',
      dropout_rate=0.1)
  assert got['initializer']['config']['stddev'] == 0.05
  assert got['dict_outputs'] is True


def test_google_albert_config_reads_into_our_fields():
  config = aec.albert_config_from_external(GOOGLE_BASE, 'albert_config.json')
  assert config == aec.AlbertEncoderConfig()
  small = aec.albert_config_from_external(
      dict(GOOGLE_BASE, embedding_size=32, hidden_size=64, num_attention_heads=4,
           intermediate_size=256, num_hidden_layers=3, hidden_dropout_prob=0.1,
           vocab_size=100, initializer_range=0.1), 'c.json')
  assert (small.embedding_width, small.hidden_size, small.num_layers, small.dropout_rate,
          small.vocab_size, small.initializer_range) == (32, 64, 3, 0.1, 100, 0.1)


@pytest.mark.parametrize('change, message', [
    ({'num_hidden_groups': 2}, r"c.json: num_hidden_groups 2 is not supported; AlbertEncoder "
                               r"expects 1"),
    ({'inner_group_num': 3}, r'inner_group_num 3 is not supported'),
    ({'embedding_size': None}, r"c.json: field 'embedding_size' is None; expected a positive"),
    ({'hidden_size': None}, r"field 'hidden_size' is None; expected a positive integer"),
    ({'layer_norm_eps': 1e-5}, r'layer_norm_eps 1e-05 is not supported'),
    ({'hidden_act': 'nope'}, r"unsupported hidden_act 'nope'"),
])
def test_google_albert_config_errors_name_the_field(change, message):
  with pytest.raises(ValueError, match=message):
    aec.albert_config_from_external(dict(GOOGLE_BASE, **change), 'c.json')


def test_validate_and_seq_length_errors_name_the_field():
  with pytest.raises(hyperparams.ConfigError, match=r'^num_attention_heads: must be at most '
                     r'hidden_size 8, found 16'):
    aec.AlbertEncoderConfig(hidden_size=8, num_attention_heads=16).validate()
  with pytest.raises(hyperparams.ConfigError, match=r'^hidden_activation'):
    aec.AlbertEncoderConfig(hidden_activation='nope').validate()
  with pytest.raises(hyperparams.ConfigError, match=r'^train_data.seq_length: 1024 exceeds '
                     r'model.encoder.albert.max_position_embeddings=512'):
    aec.AlbertEncoderConfig().check_seq_length('train_data.seq_length', 1024)
  aec.AlbertEncoderConfig().check_seq_length('train_data.seq_length', 512)
