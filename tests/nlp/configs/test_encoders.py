"""Tests for official/nlp/configs/encoders.py and the encoder-config paths of `BertEncoder`."""

import numpy as np
import pytest
import tensorflow as tf

from official.modeling import hyperparams
from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.modeling import networks
from official.nlp.modeling.networks import bert_encoder_config

_BERT = dict(vocab_size=60, hidden_size=32, num_layers=2, num_attention_heads=4,
             intermediate_size=48, max_position_embeddings=16, type_vocab_size=3,
             dropout_rate=0.0, attention_dropout_rate=0.0, initializer_range=0.05)


def _ids():
  ids = tf.constant(np.random.default_rng(0).integers(0, 60, (2, 6)), tf.int32)
  return dict(input_word_ids=ids, input_mask=tf.ones_like(ids), input_type_ids=tf.zeros_like(ids))


def _expected_config(**overrides):
  return dict(networks.BertEncoder(**bert_encoder_config.encoder_kwargs(
      encoders.BertEncoderConfig(**dict(_BERT, **overrides)))).get_config(), name=None)


def _config(encoder):
  return dict(encoder.get_config(), name=None)


def test_encoder_config_is_importable_from_bert_configs():
  assert bert.EncoderConfig is encoders.EncoderConfig
  assert bert.BertEncoderConfig is encoders.BertEncoderConfig
  assert encoders.BertEncoderConfig is bert_encoder_config.BertEncoderConfig


@pytest.mark.parametrize('layout', ['encoder_config', 'bert_part'])
def test_from_config_takes_encoder_config_dicts(layout):
  full = encoders.EncoderConfig(type='bert', bert=dict(_BERT)).as_dict()
  config = full if layout == 'encoder_config' else full['bert']
  encoder = networks.BertEncoder.from_config(config)
  assert type(encoder) is networks.BertEncoder
  assert _config(encoder) == _expected_config()
  assert encoder.get_config()['dict_outputs'] and encoder.get_config()['inner_dim'] == 48
  stddev = encoder.get_config()['initializer']['config']['stddev']
  assert stddev == pytest.approx(0.05)
  outputs = encoder(_ids())
  assert outputs['sequence_output'].shape == (2, 6, 32) and outputs['pooled_output'].shape == (2, 32)
  # The same as build_encoder's encoder.
  built = encoders.build_encoder(encoders.EncoderConfig.from_dict(full))
  assert _config(built) == _config(encoder)


def test_from_config_takes_a_bert_config_json_dict():
  google = dict(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=48, hidden_act='gelu', hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0, max_position_embeddings=16, type_vocab_size=3,
                initializer_range=0.05)
  assert _config(networks.BertEncoder.from_config(google)) == _expected_config()
  # Hugging Face's 'gelu' is the exact GELU.
  hf = dict(google, model_type='bert', layer_norm_eps=1e-12)
  encoder = networks.BertEncoderV2.from_config(hf)
  assert type(encoder) is networks.BertEncoderV2
  assert encoder.get_config()['inner_activation'] == 'exact_gelu'


def test_from_config_refuses_misspelt_keys_and_other_types():
  with pytest.raises(hyperparams.ConfigError, match="num_layer"):
    networks.BertEncoder.from_config({'type': 'bert', 'bert': {'num_layer': 2}})
  with pytest.raises(hyperparams.ConfigError, match=r"^type: unsupported encoder type 'albert'"):
    networks.BertEncoder.from_config({'type': 'albert', 'bert': {}})


def test_keras_config_round_trip_is_unchanged():
  encoder = networks.BertEncoder(**bert_encoder_config.encoder_kwargs(
      encoders.BertEncoderConfig(**_BERT)))
  assert networks.BertEncoder.from_config(encoder.get_config()).get_config() == encoder.get_config()


def test_attention_scores_and_word_embeddings_are_configurable():
  config = encoders.EncoderConfig(type='bert', bert=dict(_BERT, return_attention_scores=True,
                                                         return_word_embeddings=True))
  outputs = encoders.build_encoder(config)(_ids())
  assert len(outputs['attention_scores']) == 2 and outputs['attention_scores'][0].shape == (2, 4, 6, 6)
  assert outputs['word_embeddings'].shape == (2, 6, 32)
