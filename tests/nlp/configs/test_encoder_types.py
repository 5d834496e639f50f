"""Tests for the encoder types of official/nlp/configs/encoders.py: `albert`, `bert_v2`, and Model
Garden's other types (refused at once), plus configs/models/albert_base.yaml."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import official.common.registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import exp_factory
from official.core import train_utils
from official.modeling import hyperparams
from official.nlp.configs import encoders
from official.nlp.modeling import networks
from official.nlp.tasks import masked_lm
from tests.paths import ROOT

TINY_ALBERT = dict(vocab_size=30, embedding_width=8, hidden_size=16, num_layers=3,
                   num_attention_heads=2, intermediate_size=32, max_position_embeddings=12)
TINY_BERT = dict(vocab_size=30, hidden_size=16, num_layers=1, num_attention_heads=2,
                 intermediate_size=32)
SUPPORTED = "['albert', 'bert', 'bert_v2', 'modernbert']"
# The encoder types of Model Garden's EncoderConfig that mlm-garden does not implement.
MODEL_GARDEN_ONLY = ['mobilebert', 'funnel', 'fnet', 'bigbird', 'kernel', 'sparse_mixer', 'reuse',
                     'query_bert', 'xlnet', 'teams']


def _ids():
  ids = np.array([[5, 6, 7, 0], [8, 9, 0, 0]], np.int32)
  return dict(input_word_ids=ids, input_mask=(ids > 0).astype(np.int32),
              input_type_ids=np.zeros_like(ids))


@pytest.mark.slow
def test_albert_and_bert_v2_build_their_encoders():
  config = encoders.EncoderConfig(type='albert',
                                  albert=encoders.AlbertEncoderConfig(**TINY_ALBERT))
  albert = encoders.build_encoder(config)
  assert type(albert) is networks.AlbertEncoder
  outputs = albert(_ids())
  assert outputs['sequence_output'].shape == (2, 4, 16)
  assert len(outputs['encoder_outputs']) == 3
  assert albert.get_embedding_table().shape == (30, 8)
  # A bare member config works too.
  assert type(encoders.build_encoder(encoders.AlbertEncoderConfig(**TINY_ALBERT))) is (
      networks.AlbertEncoder)
  v2 = encoders.build_encoder(encoders.EncoderConfig(
      type='bert_v2', bert_v2=encoders.BertEncoderConfig(**TINY_BERT)))
  assert type(v2) is networks.BertEncoderV2
  assert v2(_ids())['pooled_output'].shape == (2, 16)
  assert type(encoders.build_encoder(encoders.EncoderConfig(
      bert=encoders.BertEncoderConfig(**TINY_BERT)))) is networks.BertEncoder


def test_albert_config_yaml_and_checkpoint_round_trip(tmp_path):
  # Model Garden's encoders_test.test_encoder_from_yaml, for ALBERT.
  config = encoders.EncoderConfig(type='albert',
                                  albert=encoders.AlbertEncoderConfig(**TINY_ALBERT))
  encoder = encoders.build_encoder(config)
  prefix = tf.train.Checkpoint(encoder=encoder).save(str(tmp_path / 'ckpt'))
  path = str(tmp_path / 'params.yaml')
  hyperparams.save_params_dict_to_yaml(config, path)
  assert hyperparams.read_yaml(path) == {'type': 'albert', 'albert': config.albert.as_dict()}
  restored = encoders.build_encoder(encoders.EncoderConfig.from_yaml(path))
  tf.train.Checkpoint(encoder=restored).restore(prefix).assert_consumed()
  np.testing.assert_allclose(restored(_ids())['pooled_output'], encoder(_ids())['pooled_output'])


def test_albert_flat_form_takes_google_names():
  config = encoders.EncoderConfig(type='albert', embedding_size=32, num_hidden_layers=2,
                                  hidden_act='relu', hidden_dropout_prob=0.1)
  assert (config.albert.embedding_width, config.albert.num_layers,
          config.albert.hidden_activation, config.albert.dropout_rate) == (32, 2, 'relu', 0.1)
  assert config.as_dict() == {'type': 'albert', 'albert': config.albert.as_dict()}
  with pytest.raises(hyperparams.ConfigKeyError, match=r"^output_range: not a field of the "
                     r"'albert' member"):
    encoders.EncoderConfig.from_dict({'type': 'albert', 'output_range': 3})


@pytest.mark.parametrize('kind', MODEL_GARDEN_ONLY)
def test_model_garden_only_types_fail_at_once_naming_type_value_and_supported(kind):
  message = (f"type: '{kind}' is a Model Garden encoder type that mlm-garden does not implement; "
             f'supported types: {SUPPORTED}')
  attempts = [
      lambda: encoders.EncoderConfig(type=kind),
      lambda: encoders.EncoderConfig({'type': kind}),
      lambda: encoders.EncoderConfig({'type': kind, 'hidden_size': 8}),  # before the flat fields
      lambda: encoders.EncoderConfig.from_dict({'type': kind, kind: {}}),
      lambda: encoders.EncoderConfig().override({'type': kind}),
      lambda: setattr(encoders.EncoderConfig(), 'type', kind),
  ]
  for attempt in attempts:
    with pytest.raises(hyperparams.ConfigError) as error:
      attempt()
    assert str(error.value) == message
    assert '\n' not in str(error.value)
  config = encoders.EncoderConfig()
  with pytest.raises(hyperparams.ConfigError):
    config.type = kind
  assert config.type == 'bert'  # unchanged


def test_unsupported_types_in_yaml_and_params_override_name_the_full_path(tmp_path):
  path = tmp_path / 'encoder.yaml'
  path.write_text('task:\n  model:\n    encoder:\n      type: mobilebert\n      mobilebert: {}\n')
  expected = ("task.model.encoder.type: 'mobilebert' is a Model Garden encoder type that "
              f'mlm-garden does not implement; supported types: {SUPPORTED}')
  with pytest.raises(hyperparams.ConfigError) as error:
    train_utils.build_params('bert/pretraining', [str(path)])
  assert str(error.value) == f'{expected} (in {path})'
  with pytest.raises(hyperparams.ConfigError) as error:
    train_utils.build_params('bert/pretraining', params_override='task.model.encoder.type=xlnet')
  assert str(error.value).startswith("task.model.encoder.type: 'xlnet' is a Model Garden")
  with pytest.raises(hyperparams.ConfigError) as error:
    train_utils.build_params('bert/pretraining', params_override='task.model.encoder.type=roberta')
  assert str(error.value) == ("task.model.encoder.type: unknown encoder type 'roberta'; "
                              f'supported types: {SUPPORTED}')
  # The supported types still override strictly: a misspelt field is refused with its path.
  with pytest.raises(hyperparams.ConfigKeyError,
                     match=r'^task\.model\.encoder\.albert\.num_layer:'):
    train_utils.build_params('bert/pretraining',
                             params_override='task.model.encoder.type=albert,'
                             'task.model.encoder.albert.num_layer=2')


def test_albert_refuses_a_shared_embedding_layer():
  layer = tf_keras.layers.Embedding(30, 8)
  with pytest.raises(ValueError, match='embedding_layer is not supported by the albert encoder'):
    encoders.build_encoder(encoders.AlbertEncoderConfig(**TINY_ALBERT), embedding_layer=layer)


@pytest.mark.slow
def test_albert_base_yaml_is_model_gardens_layout_and_albert_base_size():
  path = os.path.join(ROOT, 'configs/models/albert_base.yaml')
  data = hyperparams.read_yaml(path)
  assert data['task']['model']['encoder']['type'] == 'albert'
  params = train_utils.build_params('bert/pretraining', [path])
  albert = params.task.model.encoder.albert
  assert albert == encoders.AlbertEncoderConfig()  # Model Garden's defaults are ALBERT-base's
  encoder = encoders.build_encoder(params.task.model.encoder)
  v, e, h, i, p = 30000, 128, 768, 3072, 512
  expected = (v * e + p * e + 2 * e + 2 * e + (e + 1) * h  # embeddings, LayerNorm, projection
              + 4 * (h + 1) * h + 2 * h + (h + 1) * i + (i + 1) * h + 2 * h  # the shared block
              + (h + 1) * h)  # pooler
  assert encoder.count_params() == expected
  assert 11.5e6 < expected < 12e6  # "ALBERT-base: 12M parameters"


def test_masked_lm_task_checks_seq_length_against_the_albert_table():
  config = masked_lm.MaskedLMConfig()
  config.override({'model': {'encoder': {'type': 'albert', 'albert': TINY_ALBERT}},
                   'train_data': {'seq_length': 16}})
  with pytest.raises(hyperparams.ConfigError, match=r'^train_data.seq_length: 16 exceeds '
                     r'model.encoder.albert.max_position_embeddings=12'):
    config.validate()


def test_pretraining_experiment_with_albert_keeps_params_yaml_nested(tmp_path):
  params = exp_factory.get_exp_config('bert/pretraining')
  params.override({'task': {'model': {'encoder': {'type': 'albert', 'albert': TINY_ALBERT}}}})
  path = str(tmp_path / 'params.yaml')
  hyperparams.save_params_dict_to_yaml(params, path)
  encoder = hyperparams.read_yaml(path)['task']['model']['encoder']
  assert encoder == {'type': 'albert', 'albert': params.task.model.encoder.albert.as_dict()}
