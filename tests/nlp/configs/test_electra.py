"""Tests for official/nlp/configs/electra.py, the `electra/pretraining` experiment and
configs/electra/electra_tiny.yaml."""

import os

import pytest

from official.common import registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import exp_factory
from official.modeling import hyperparams
from official.nlp.configs import electra
from official.nlp.tasks import electra_task
from tests.paths import ROOT

TINY_YAML = os.path.join(ROOT, 'configs', 'electra', 'electra_tiny.yaml')


def test_defaults_are_model_gardens():
  config = electra.ElectraPretrainerConfig()
  assert (config.num_masked_tokens, config.sequence_length, config.num_classes) == (76, 512, 2)
  assert config.discriminator_loss_weight == 50.0
  assert config.tie_embeddings and not config.disallow_correct and config.cls_heads == []
  assert config.generator_encoder.type == 'bert'
  task = electra_task.ElectraPretrainConfig()
  assert [head.name for head in task.model.cls_heads] == ['next_sentence']
  assert task.validation_data.is_training is False


def test_experiment_is_registered_under_both_names_and_fresh():
  for name in ('electra/pretraining', 'electra/electra_pretraining'):
    params = exp_factory.get_exp_config(name)
    assert isinstance(params.task, electra_task.ElectraPretrainConfig)
    assert params.trainer.optimizer_config.optimizer.adamw.weight_decay_rate == 0.01
    assert params.runtime.enable_xla
  params.trainer.train_steps = 3
  assert exp_factory.get_exp_config('electra/pretraining').trainer.train_steps == 1_000_000


def test_tiny_yaml_validates():
  params = exp_factory.get_exp_config('electra/pretraining')
  params.override(hyperparams.read_yaml(TINY_YAML), is_strict=True)
  params.validate()
  model = params.task.model
  assert electra.embedding_width(model.generator_encoder.get()) == 128
  assert electra.embedding_width(model.discriminator_encoder.get()) == 128
  generator, discriminator = model.generator_encoder.bert, model.discriminator_encoder.bert
  assert generator.hidden_size * 4 == discriminator.hidden_size


def test_tied_embeddings_need_the_same_vocabulary_and_width():
  config = electra.ElectraPretrainerConfig.from_dict(
      {'generator_encoder': {'bert': {'vocab_size': 100}}})
  with pytest.raises(hyperparams.ConfigError, match=r"generator_encoder.vocab_size: with "
                     r"tie_embeddings the generator shares the discriminator's vocabulary of "
                     r'30522, found 100'):
    config.validate()
  config = electra.ElectraPretrainerConfig.from_dict(
      {'generator_encoder': {'bert': {'hidden_size': 256, 'num_attention_heads': 4}}})
  with pytest.raises(hyperparams.ConfigError, match=r"discriminator's 768, found 256"):
    config.validate()
  config.tie_embeddings = False
  config.validate()
  config = electra.ElectraPretrainerConfig(num_masked_tokens=600)
  with pytest.raises(hyperparams.ConfigError, match='num_masked_tokens: 600 exceeds '
                     'sequence_length=512'):
    config.validate()


def test_task_config_checks_the_data_against_the_encoders():
  config = electra_task.ElectraPretrainConfig.from_dict(
      {'model': {'generator_encoder': {'bert': {'max_position_embeddings': 64}}},
       'train_data': {'seq_length': 128, 'max_predictions_per_seq': 20}})
  with pytest.raises(hyperparams.ConfigError, match='train_data.seq_length: 128 exceeds '
                     'model.generator_encoder.max_position_embeddings=64'):
    config.validate()
