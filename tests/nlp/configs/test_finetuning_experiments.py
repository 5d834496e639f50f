"""Tests for official/nlp/configs/finetuning_experiments.py and configs/finetuning/*.yaml."""

import glob
import os

import numpy as np
import pytest
import tf_keras

from official.common import registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import exp_factory
from official.core import task_factory
from official.core import train_utils
from official.modeling import hyperparams
from tests.paths import ROOT

FINETUNING = os.path.join(ROOT, 'configs', 'finetuning')
# A fine-tuning YAML's experiment, by the start of its file name.
EXPERIMENTS = {'sentence_prediction': 'bert/sentence_prediction', 'tagging': 'bert/tagging',
               'squad': 'bert/squad'}
MODERNBERT_YAMLS = sorted(glob.glob(os.path.join(FINETUNING, '*_modernbert_tiny.yaml')))


def _experiment(path):
  name = os.path.basename(path)
  matches = [experiment for prefix, experiment in EXPERIMENTS.items() if name.startswith(prefix)]
  assert len(matches) == 1, f'{name}: no experiment of {sorted(EXPERIMENTS)} fits its name'
  return matches[0]


def _params(path, overrides=None):
  params = exp_factory.get_exp_config(_experiment(path))
  params.override(hyperparams.read_yaml(path), is_strict=True)
  if overrides:
    params.override(overrides, is_strict=True)
  params.validate()
  return params


@pytest.mark.parametrize('path', sorted(glob.glob(os.path.join(FINETUNING, '*.yaml'))),
                         ids=os.path.basename)
def test_shipped_finetuning_yaml_files_load_into_their_experiment(path):
  params = _params(path)
  encoder = params.task.model.encoder.get()
  assert params.task.train_data.seq_length <= encoder.max_position_embeddings


def test_every_task_has_a_modernbert_tiny_variant():
  assert [os.path.basename(p) for p in MODERNBERT_YAMLS] == [
      'sentence_prediction_modernbert_tiny.yaml', 'squad_modernbert_tiny.yaml',
      'tagging_modernbert_tiny.yaml']


@pytest.mark.parametrize('path', MODERNBERT_YAMLS, ids=os.path.basename)
def test_modernbert_variants_take_modernbert_tiny_and_the_bert_recipe(path):
  params = _params(path)
  # The encoder of configs/pretraining/modernbert_tiny.yaml, so that its checkpoint restores.
  pretraining = exp_factory.get_exp_config('bert/pretraining')
  pretraining.override(hyperparams.read_yaml(
      os.path.join(ROOT, 'configs', 'pretraining', 'modernbert_tiny.yaml')), is_strict=True)
  assert params.task.model.encoder.as_dict() == pretraining.task.model.encoder.as_dict()
  # Everything else is the BERT-Tiny variant's.
  bert_params = _params(path.replace('_modernbert_tiny.yaml', '_tiny.yaml'))
  modern = params.as_dict()
  bert = bert_params.as_dict()
  del modern['task']['model']['encoder'], bert['task']['model']['encoder']
  assert modern == bert


@pytest.mark.slow
@pytest.mark.parametrize('path', MODERNBERT_YAMLS, ids=os.path.basename)
def test_modernbert_variants_build_and_train_a_step(path):
  sizes = {'vocab_size': 64, 'hidden_size': 32, 'intermediate_size': 48,
           'local_attention': 8}
  data = {'input_path': 'dummy', 'seq_length': 16, 'global_batch_size': 4}
  params = _params(path, {'task': {'model': {'encoder': {'modernbert': sizes}},
                                   'train_data': data}})
  task = task_factory.get_task(params.task)
  model = task.build_model()
  encoder = model.checkpoint_items['encoder']
  assert type(encoder).__name__ == 'ModernBertEncoder' and len(encoder.transformer_layers) == 3
  before = [v.numpy() for v in encoder.trainable_weights]
  logs = task.train_step(next(iter(task.build_inputs(params.task.train_data))), model,
                         tf_keras.optimizers.Adam(1e-3), task.build_metrics())
  assert np.isfinite(float(logs['loss']))
  assert all(not np.array_equal(b, v.numpy()) for b, v in zip(before, encoder.trainable_weights))


def test_build_params_reads_a_modernbert_variant_with_overrides():
  path = os.path.join(FINETUNING, 'sentence_prediction_modernbert_tiny.yaml')
  params = train_utils.build_params('bert/sentence_prediction', [path],
                                    'task.model.num_classes=3,task.init_checkpoint=runs/modernbert')
  assert params.task.model.encoder.type == 'modernbert'
  assert (params.task.model.num_classes, params.task.init_checkpoint) == (3, 'runs/modernbert')
