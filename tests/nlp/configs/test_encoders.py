"""Tests for official/nlp/configs/encoders.py and the encoder-config paths of `BertEncoder`."""

import numpy as np
import pytest
import tensorflow as tf

from official.core import exp_factory
from official.core import train_utils
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


@pytest.mark.slow
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
  assert (outputs['sequence_output'].shape == (2, 6, 32)
          and outputs['pooled_output'].shape == (2, 32))
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
  assert (len(outputs['attention_scores']) == 2
          and outputs['attention_scores'][0].shape == (2, 4, 6, 6))
  assert outputs['word_embeddings'].shape == (2, 6, 32)


# ---- the flat form of how-tos: the member's fields beside `type` -------------------------------
_FLAT_HF = dict(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=48, max_position_embeddings=16, type_vocab_size=3,
                hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=0.05)


@pytest.mark.parametrize('names', ['ours', 'hugging_face'])
def test_flat_forms_build_the_nested_config(names):
  flat = dict(_BERT) if names == 'ours' else dict(_FLAT_HF)
  nested = encoders.EncoderConfig(type='bert', bert=encoders.BertEncoderConfig(**_BERT))
  assert bert.EncoderConfig(**flat) == nested                         # keywords
  assert encoders.EncoderConfig(dict(flat, type='bert')) == nested    # a dict (Model Garden's form)
  assert encoders.EncoderConfig.from_dict(dict(flat, type='bert')) == nested
  overridden = encoders.EncoderConfig()
  overridden.override(flat)                                            # YAML / params_override
  assert overridden == nested and overridden.as_dict() == nested.as_dict()
  encoder = networks.BertEncoder.from_config(dict(flat, type='bert'))  # from_config
  assert _config(encoder) == _expected_config()


def test_flat_form_defaults_vocab_size_and_keeps_the_nested_form():
  config = bert.EncoderConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2)
  assert (config.type, config.bert.vocab_size, config.bert.num_layers) == ('bert', 30522, 2)
  encoder = networks.BertEncoder.from_config({'type': 'bert', 'hidden_size': 64,
                                              'num_hidden_layers': 1, 'num_attention_heads': 2,
                                              'intermediate_size': 128})
  assert encoder.get_embedding_table().shape == (30522, 64)
  # Model Garden's nested form is untouched, and a nested member merges with flat fields.
  nested = encoders.EncoderConfig({'type': 'bert', 'bert': {'num_layers': 3},
                                   'hidden_size': 64})
  assert (nested.bert.num_layers, nested.bert.hidden_size) == (3, 64)


def test_flat_form_in_an_experiment_yaml_and_params_override(tmp_path):
  path = tmp_path / 'flat.yaml'
  path.write_text('task:\n  model:\n    encoder:\n      type: bert\n      hidden_size: 96\n'
                  '      num_hidden_layers: 3\n')
  params = train_utils.build_params('bert/pretraining', [str(path)],
                                    'task.model.encoder.intermediate_size=200')
  encoder = params.task.model.encoder
  assert (encoder.bert.hidden_size, encoder.bert.num_layers, encoder.bert.intermediate_size) == (
      96, 3, 200)
  assert 'hidden_size' not in params.as_dict()['task']['model']['encoder']   # saved nested


@pytest.mark.parametrize('make', [
    lambda: bert.EncoderConfig(hidden_sizee=3),
    lambda: encoders.EncoderConfig.from_dict({'type': 'bert', 'hidden_sizee': 3}),
    lambda: networks.BertEncoder.from_config({'type': 'bert', 'hidden_sizee': 3}),
])
def test_flat_form_refuses_a_name_that_fits_no_field(make):
  with pytest.raises(hyperparams.ConfigKeyError,
                     match=r"^hidden_sizee: not a field of the 'bert' member "
                     r".*'num_hidden_layers'"):
    make()


def test_flat_form_errors_name_the_path():
  params = encoders.EncoderConfig()
  with pytest.raises(hyperparams.ConfigKeyError, match='^num_hidden_layers: .* given twice'):
    params.override({'num_layers': 2, 'num_hidden_layers': 3})
  experiment = exp_factory.get_exp_config('bert/pretraining')
  with pytest.raises(hyperparams.ConfigKeyError, match=r'^task\.model\.encoder\.hidden_sizee: '):
    experiment.override({'task': {'model': {'encoder': {'hidden_sizee': 3}}}})
  with pytest.raises(hyperparams.ConfigError, match=r"^type: unknown encoder type 'roberta'"):
    encoders.EncoderConfig({'type': 'roberta', 'hidden_size': 3})


def test_constructor_dicts_are_lenient_as_model_garden():
  # A Google bert_config.json: its names set our fields; keys with no field are kept as extras
  # (as Model Garden's constructor keeps them) and logged once.
  google = {'attention_probs_dropout_prob': 0.2, 'hidden_act': 'relu', 'hidden_size': 64,
            'directionality': 'bidi', 'pooler_fc_size': 768}
  config = encoders.BertEncoderConfig(google)
  assert (config.attention_dropout_rate, config.hidden_activation, config.hidden_size) == (
      0.2, 'relu', 64)
  assert config.directionality == 'bidi'
  nested = encoders.EncoderConfig({'type': 'bert', 'bert': google, 'hidden_sizee': 3})
  assert nested.bert.hidden_size == 64 and nested.hidden_sizee == 3
  with pytest.raises(hyperparams.ConfigKeyError, match=r'^bert\.directionality: '):
    encoders.EncoderConfig.from_dict({'type': 'bert', 'bert': google})
