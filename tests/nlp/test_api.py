"""official.nlp.api: config from YAML + overrides, train N steps, fill-mask and embed by
model_dir."""

import os

import numpy as np
import pytest

from official.common import distribute_utils
from official.core import train_lib
from official.modeling import hyperparams
from official.nlp import api
from official.nlp.data import data_metadata
from official.nlp.serving import export_savedmodel
from official.nlp.serving import inference
from official.nlp.tools import embed as embed_lib
from official.nlp.tools import fill_mask as fill_mask_lib
from tests.nlp.serving import tiny_run

TINY_YAML = tiny_run.BERT_YAML


@pytest.fixture(name='run')
def _run(trained_bert_run):
  """The session's tiny BERT trained 4 steps by `api.train` (tests/nlp/tiny_runs.py)."""
  return trained_bert_run


def test_load_config_yaml_then_overrides():
  params = api.load_config(TINY_YAML, overrides={'trainer.train_steps': 7,
                                                 'task': {'train_data': {'seq_length': 64}}})
  assert params.trainer.train_steps == 7
  assert params.task.train_data.seq_length == 64
  assert params.task.model.encoder.bert.num_layers == 2  # from bert_tiny.yaml
  text = api.load_config(TINY_YAML, overrides='trainer.train_steps=9')
  assert text.trainer.train_steps == 9


def test_load_config_errors_name_the_field():
  with pytest.raises(hyperparams.ConfigError, match='trainer.train_stepz'):
    api.load_config(TINY_YAML, overrides={'trainer.train_stepz': 7})
  with pytest.raises(KeyError, match='bert/nope'):
    api.load_config(experiment='bert/nope')
  # A value the validation refuses (rows longer than the position table) is a ConfigError too.
  with pytest.raises(hyperparams.ConfigError, match='seq_length'):
    api.load_config(TINY_YAML, overrides={'task.train_data.seq_length': 4096})


@pytest.mark.slow
def test_train_reaches_the_steps_and_evaluates(run):
  result = run['result']
  assert result.step == 4
  assert run['params'].trainer.train_steps != 4  # the caller's config is not changed
  assert {'masked_lm_accuracy', 'lm_example_loss'} <= set(result.eval_logs)
  assert 0.0 <= result.eval_logs['masked_lm_accuracy'] <= 1.0
  assert os.path.exists(os.path.join(run['model_dir'], 'ckpt-4.index'))
  assert os.path.exists(os.path.join(run['model_dir'], 'vocab.txt'))


@pytest.mark.slow
def test_train_returns_its_own_trainers_step(run, copy_run, monkeypatch):
  # The step comes from the trainer of this call (train_lib keeps no module-level trainer), and
  # the strategy from distribute_utils.strategy_from_runtime, as mlm-train builds it.
  model_dir = copy_run(run)['model_dir']  # the session's run stays at ckpt-4
  runtimes = []
  build = distribute_utils.strategy_from_runtime
  monkeypatch.setattr(distribute_utils, 'strategy_from_runtime',
                      lambda runtime: runtimes.append(runtime) or build(runtime))
  result = api.train(run['params'], str(model_dir), steps=6, evaluate=False)
  assert result.step == 6 and result.eval_logs == {}  # resumed from ckpt-4
  assert [r.distribution_strategy for r in runtimes] == ['off']
  assert not hasattr(train_lib, 'last_trainer')


@pytest.mark.slow
def test_fill_mask_and_embed_from_the_model_dir_alone(run):
  texts = ['paris is the [MASK] of france .', '[MASK] a copy of the [MASK] .']
  predictions = api.fill_mask(run['model_dir'], texts, top_k=3)
  assert [len(masks) for masks in predictions] == [1, 2]
  # The same numbers as the library function with an explicitly given vocabulary.
  model = inference.load_inference_model(run['model_dir'])
  tokenizer = model.load_tokenizer(run['vocab_file'])
  expected = fill_mask_lib.fill_mask(model, tokenizer, texts, top_k=3,
                                     seq_length=tiny_run.SEQ_LENGTH)
  for got, want in zip(predictions, expected):
    for got_mask, want_mask in zip(got, want):
      assert [t for t, _ in got_mask] == [t for t, _ in want_mask]
      np.testing.assert_allclose([p for _, p in got_mask], [p for _, p in want_mask], rtol=1e-5)
  loaded = api.load_model(run['model_dir'])
  vectors = api.embed(loaded, ['paris is a city', 'return the list'], pooling='cls')
  assert vectors.shape == (2, 16) and vectors.dtype == np.float32
  reference, _ = embed_lib.embed_texts(model, tokenizer, ['paris is a city', 'return the list'],
                                       pooling='cls')
  np.testing.assert_allclose(vectors, reference, rtol=1e-5, atol=1e-6)


def test_train_refuses_bad_steps(run):
  with pytest.raises(ValueError, match='steps must be >= 1; found 0'):
    api.train(run['params'], run['model_dir'], steps=0)


@pytest.mark.slow
def test_embed_words_one_vector_per_word(run):
  texts = ['paris is a city', 'return the list']
  result = api.embed_words(run['model_dir'], texts, subword_pooling='mean')
  assert result.words == ['paris', 'is', 'a', 'city', 'return', 'the', 'list']
  assert result.vectors.shape == (7, 16)
  assert list(result.lines) == [0, 0, 0, 0, 1, 1, 1]
  # The first word's vector is the encoder's sequence_output after [CLS] (single sub-words).
  model = inference.load_inference_model(run['model_dir'])
  inputs, _ = embed_lib.encode_texts(model.load_tokenizer(), texts[:1], tiny_run.SEQ_LENGTH)
  np.testing.assert_allclose(result.vectors[0], model.encode(inputs)['sequence_output'][0, 1],
                             rtol=1e-5, atol=1e-6)


# ---- ModernBERT: configs/pretraining/modernbert_tiny.yaml through the same calls.

@pytest.fixture(name='modernbert_run')
def _modernbert_run(trained_modernbert_run):
  """The session's tiny ModernBERT trained 4 steps on packed records (tests/nlp/tiny_runs.py)."""
  return trained_modernbert_run


@pytest.mark.slow
def test_modernbert_yaml_trains_fills_masks_and_embeds(modernbert_run):
  params, result = modernbert_run['params'], modernbert_run['result']
  assert params.task.model.encoder.type == 'modernbert' and params.task.model.cls_heads == []
  assert params.task.train_data.use_position_id  # the YAML's packed rows
  assert data_metadata.load_metadata(modernbert_run['records'])['packed']
  assert type(result.model.encoder_network).__name__ == 'ModernBertEncoder'
  assert result.step == 4
  assert {'masked_lm_accuracy', 'lm_example_loss'} <= set(result.eval_logs)
  assert 'next_sentence_accuracy' not in result.eval_logs
  assert np.isfinite(result.eval_logs['lm_example_loss'])
  texts = ['paris is the [MASK] of france .', '[MASK] a copy of the [MASK] .']
  predictions = api.fill_mask(modernbert_run['model_dir'], texts, top_k=3)
  assert [len(masks) for masks in predictions] == [1, 2]
  model, tokenizer = api.load_model(modernbert_run['model_dir'])
  expected = fill_mask_lib.fill_mask(model, tokenizer, texts, top_k=3,
                                     seq_length=tiny_run.SEQ_LENGTH)
  assert [[[t for t, _ in m] for m in text] for text in predictions] == [
      [[t for t, _ in m] for m in text] for text in expected]
  vectors = api.embed((model, tokenizer), ['paris is a city', 'return the list'], pooling='mean')
  assert vectors.shape == (2, tiny_run.ENCODER_SIZES['modernbert']['hidden_size'])
  words = api.embed_words((model, tokenizer), ['paris is a city'])
  assert words.words == ['paris', 'is', 'a', 'city'] and words.vectors.shape[0] == 4


@pytest.mark.slow
def test_modernbert_export_gives_the_model_dirs_answers(modernbert_run, tmp_path):
  export_dir = export_savedmodel.export_from_model_dir(modernbert_run['model_dir'],
                                                       str(tmp_path / 'export'))
  texts = ['paris is the [MASK] of france .', 'return a [MASK] of the list .']
  from_dir = api.fill_mask(modernbert_run['model_dir'], texts, top_k=3)
  from_export = api.fill_mask(export_dir, texts, top_k=3)
  for got_text, want_text in zip(from_export, from_dir):
    for got, want in zip(got_text, want_text):
      assert [t for t, _ in got] == [t for t, _ in want]
      np.testing.assert_allclose([p for _, p in got], [p for _, p in want], atol=1e-5)
  np.testing.assert_allclose(api.embed(export_dir, texts, pooling='cls'),
                             api.embed(modernbert_run['model_dir'], texts, pooling='cls'),
                             atol=1e-5)
