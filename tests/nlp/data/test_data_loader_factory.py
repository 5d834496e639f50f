"""Tests for official/nlp/data/data_loader_factory.py."""

import dataclasses

import pytest

from official.core import config_definitions as cfg
from official.nlp.data import data_loader_factory
from official.nlp.data import pretrain_dataloader
from official.nlp.data import pretrain_dynamic_dataloader
from official.nlp.data import sentence_prediction_dataloader
from official.nlp.data import tagging_dataloader


@dataclasses.dataclass
class _ToyDataConfig(cfg.DataConfig):
  is_training: bool = True


@data_loader_factory.register_data_loader_cls(_ToyDataConfig)
class _ToyLoader:

  def __init__(self, params):
    self.params = params


def test_register_and_get():
  loader = data_loader_factory.get_data_loader(_ToyDataConfig(input_path='x'))
  assert isinstance(loader, _ToyLoader) and loader.params.input_path == 'x'


@pytest.mark.parametrize('config, loader_cls', [
    (pretrain_dataloader.BertPretrainDataConfig(), pretrain_dataloader.BertPretrainDataLoader),
    (pretrain_dataloader.XLNetPretrainDataConfig(), pretrain_dataloader.XLNetPretrainDataLoader),
    (pretrain_dynamic_dataloader.BertPretrainBucketedDataConfig(),
     pretrain_dynamic_dataloader.PretrainingDynamicDataLoader),
    (pretrain_dynamic_dataloader.BertPretrainDynamicDataConfig(),
     pretrain_dynamic_dataloader.BertPretrainDynamicDataLoader),
    (sentence_prediction_dataloader.SentencePredictionDataConfig(),
     sentence_prediction_dataloader.SentencePredictionDataLoader),
    (tagging_dataloader.TaggingDataConfig(), tagging_dataloader.TaggingDataLoader),
])
def test_our_loaders_are_registered(config, loader_cls):
  assert type(data_loader_factory.get_data_loader(config)) is loader_cls


def test_unregistered_config_names_the_registered_ones():
  with pytest.raises(KeyError,
                     match="unknown data config 'DataConfig'; registered: .*TaggingDataConfig"):
    data_loader_factory.get_data_loader(cfg.DataConfig())
  with pytest.raises(KeyError, match='already registered'):
    data_loader_factory.register_data_loader_cls(_ToyDataConfig)(object)
