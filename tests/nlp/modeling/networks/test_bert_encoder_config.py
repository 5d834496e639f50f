"""Tests for official/nlp/modeling/networks/bert_encoder_config.py."""

import subprocess
import sys

import pytest

from official.modeling import hyperparams
from official.nlp.modeling import networks
from official.nlp.modeling.networks import bert_encoder_config as bec
from tests.paths import ROOT

_SMALL = dict(vocab_size=40, hidden_size=16, num_layers=2, num_attention_heads=2,
              intermediate_size=24, max_position_embeddings=12, type_vocab_size=3,
              initializer_range=0.05, return_attention_scores=True)


def test_encoder_kwargs_and_encoder_config_of_are_inverse():
  config = bec.BertEncoderConfig(**_SMALL)
  encoder = networks.BertEncoder(**bec.encoder_kwargs(config))
  assert encoder.get_config()['inner_dim'] == 24
  assert encoder.get_config()['max_sequence_length'] == 12
  assert bec.encoder_config_of(encoder) == config
  factorized = bec.BertEncoderConfig(**dict(_SMALL, embedding_size=8))
  encoder = networks.BertEncoder(**bec.encoder_kwargs(factorized))
  assert bec.encoder_config_of(encoder).embedding_size == 8
  packed = bec.BertEncoderConfig(**dict(_SMALL, packed_documents=True))
  encoder = networks.BertEncoder(**bec.encoder_kwargs(packed))
  assert encoder.get_config()['packed_documents'] and bec.encoder_config_of(encoder) == packed


@pytest.mark.parametrize('fmt', bec.FORMATS)
def test_external_config_round_trips(fmt):
  config = bec.BertEncoderConfig(**dict(_SMALL, return_attention_scores=False))
  external = bec.external_config(config, fmt)
  assert external['num_hidden_layers'] == 2 and external['intermediate_size'] == 24
  assert bec.encoder_config_from_external(external, fmt, 'config.json') == config


def test_hugging_face_gelu_is_the_exact_gelu():
  assert bec.activation_from_external('gelu', 'hf', 'config.json') == 'exact_gelu'
  assert bec.activation_from_external('gelu', 'google', 'bert_config.json') == 'gelu'
  assert bec.activation_to_external('gelu', 'hf') == 'gelu_new'
  with pytest.raises(ValueError, match="config.json: unsupported hidden_act 'mish'"):
    bec.activation_from_external('mish', 'hf', 'config.json')


def test_bert_config_from_dict_fills_config_defaults_and_validates():
  config = bec.bert_config_from_dict({'type': 'bert', 'bert': {'num_layers': 2}})
  assert (config.num_layers, config.type_vocab_size, config.vocab_size) == (2, 2, 30522)
  with pytest.raises(hyperparams.ConfigError, match='num_layers'):
    bec.bert_config_from_dict({'num_layers': 0})
  with pytest.raises(hyperparams.ConfigError, match="'bert'"):
    bec.bert_config_from_dict({'type': 'bert', 'bert': {}, 'extra': 1})
  with pytest.raises(hyperparams.ConfigError, match=r"^type: unsupported encoder type 'albert'"):
    bec.check_encoder_type('albert')


@pytest.mark.slow
def test_networks_import_no_experiment_configs():
  """The encoder and its config dicts need nothing above the networks layer."""
  code = ('import sys; from official.nlp.modeling import networks; '
          "networks.BertEncoder.from_config({'type': 'bert', 'bert': {'num_layers': 1, "
          "'hidden_size': 8, 'num_attention_heads': 2, 'vocab_size': 10}}); "
          "print(sorted(m for m in sys.modules if m.startswith(('official.nlp.configs', "
          "'official.nlp.tasks', 'official.nlp.tools'))))")
  result = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True,
                          check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.strip() == '[]'
