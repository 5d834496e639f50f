"""The vocabulary travels from the records' metadata into the model_dir and is found there."""

import json
import os
import subprocess
import sys
import types

import pytest

from official.nlp.data import data_metadata
from official.nlp.data import tokenization
from official.nlp.data import vocab_assets
from tests.nlp.serving import tiny_run
from tests.paths import ROOT

def _records(tmp_path, vocab=tiny_run.VOCAB, do_lower_case=True, name='train'):
  """Pretraining records of the tiny corpus; returns (record path, vocab file)."""
  return tiny_run.write_records(tmp_path, vocab, do_lower_case, name)


def _task_config(input_path, init_checkpoint=''):
  return types.SimpleNamespace(train_data=types.SimpleNamespace(input_path=input_path),
                               validation_data=None, init_checkpoint=init_checkpoint)


def test_records_metadata_stores_the_tokens(tmp_path):
  path, vocab_file = _records(tmp_path)
  metadata = data_metadata.load_metadata(path)
  assert metadata['vocab'] == tiny_run.VOCAB
  assert metadata['vocab_sha256'] == tokenization.vocab_sha256(tiny_run.VOCAB)
  assert metadata['vocab_source'] == os.path.basename(vocab_file)


def test_model_dir_gets_vocab_and_tokenizer_config(tmp_path):
  path, vocab_file = _records(tmp_path, do_lower_case=False)
  model_dir = str(tmp_path / 'model')
  written = vocab_assets.write_model_dir_vocab(model_dir, _task_config(path))
  assert written == os.path.join(model_dir, 'vocab.txt')
  with open(written, 'rb') as f, open(vocab_file, 'rb') as g:
    assert f.read() == g.read()
  config = vocab_assets.read_tokenizer_config(model_dir)
  assert config['do_lower_case'] is False
  assert config['vocab_size'] == len(tiny_run.VOCAB)
  assert config['vocab_sha256'] == tokenization.vocab_sha256(tiny_run.VOCAB)
  tokenizer = vocab_assets.load_tokenizer(model_dir)
  assert tokenizer.do_lower_case is False and tokenizer.vocab == tiny_run.VOCAB
  # A second start (resume) with the same records leaves it as it is.
  assert vocab_assets.write_model_dir_vocab(model_dir, _task_config(path)) == written


@pytest.mark.slow
def test_resume_on_records_of_another_vocabulary_is_refused(tmp_path):
  path, _ = _records(tmp_path)
  model_dir = str(tmp_path / 'model')
  vocab_assets.write_model_dir_vocab(model_dir, _task_config(path))
  other_path, _ = _records(tmp_path, vocab=tiny_run.VOCAB + ['extra'], name='other')
  with pytest.raises(ValueError, match=r"model_dir '.*model' holds a vocab.txt \(sha256 "
                     r'[0-9a-f]{12}\.\.\.\) other than the one of the records'):
    vocab_assets.write_model_dir_vocab(model_dir, _task_config(other_path))


@pytest.mark.slow
def test_init_checkpoint_vocabulary_fallback_and_mismatch(tmp_path):
  pretrain_dir = tmp_path / 'pretrain'
  pretrain_dir.mkdir()
  (pretrain_dir / 'vocab.txt').write_text('\n'.join(tiny_run.VOCAB) + '\n')
  (pretrain_dir / 'tokenizer_config.json').write_text(json.dumps({'do_lower_case': False}))
  # Records without stored tokens (written before they were): the pretrained model's vocab.
  path, _ = _records(tmp_path)
  meta_path = data_metadata.metadata_path(path)
  with open(meta_path) as f:
    metadata = json.load(f)
  del metadata['vocab']
  data_metadata.write_metadata(meta_path, metadata)
  model_dir = str(tmp_path / 'finetune')
  vocab_assets.write_model_dir_vocab(model_dir, _task_config(path, str(pretrain_dir)))
  assert tokenization.read_vocab(os.path.join(model_dir, 'vocab.txt')) == tiny_run.VOCAB
  # do_lower_case: how the records were tokenized (they say), not the pretrained model's file.
  assert vocab_assets.read_tokenizer_config(model_dir)['do_lower_case'] is True
  # Records tokenized with another vocabulary than the pretrained model's: refused.
  other_path, _ = _records(tmp_path, vocab=tiny_run.VOCAB + ['extra'], name='other')
  with pytest.raises(ValueError, match=r'task.init_checkpoint: the pretrained model .*pretrain\' '
                     r'was trained with another vocabulary'):
    vocab_assets.write_model_dir_vocab(str(tmp_path / 'x'), _task_config(other_path,
                                                                         str(pretrain_dir)))


def test_no_vocabulary_known_writes_nothing(tmp_path):
  model_dir = str(tmp_path / 'model')
  assert vocab_assets.write_model_dir_vocab(model_dir, _task_config('dummy')) is None
  assert not os.path.exists(os.path.join(model_dir, 'vocab.txt'))


def test_find_vocab_file_in_directories(tmp_path):
  (tmp_path / 'export' / 'assets.extra').mkdir(parents=True)
  (tmp_path / 'export' / 'assets.extra' / 'vocab.txt').write_text('\n'.join(tiny_run.VOCAB))
  (tmp_path / 'export' / 'assets.extra' / 'serving_config.json').write_text(
      json.dumps({'do_lower_case': False}))
  assert vocab_assets.find_vocab_file(str(tmp_path / 'export')).endswith(
      'export/assets.extra/vocab.txt')
  assert vocab_assets.load_tokenizer(str(tmp_path / 'export')).do_lower_case is False
  # Data creation's --vocab_file takes the directory too.
  tokenizer = vocab_assets.load_tokenizer_from_flags(vocab_file=str(tmp_path / 'export'))
  assert tokenizer.vocab == tiny_run.VOCAB and tokenizer.do_lower_case is False
  (tmp_path / 'empty').mkdir()
  with pytest.raises(ValueError, match=r"vocabulary '.*empty': a directory without a vocabulary; "
                     r'expected one of vocab.txt, assets.extra/vocab.txt, tokenizer.json, '
                     r'assets.extra/tokenizer.json in it'):
    vocab_assets.find_vocab_file(str(tmp_path / 'empty'))
  with pytest.raises(ValueError, match='no such file or directory'):
    vocab_assets.find_vocab_file(str(tmp_path / 'missing'))


@pytest.mark.slow
def test_training_writes_the_vocabulary_and_inference_finds_it(trained_bert_run):
  # The session's run trained by api.train (train_lib.run_experiment) on cased records.
  from official.nlp.serving import inference  # pylint: disable=g-import-not-at-top
  model_dir = trained_bert_run['model_dir']
  assert data_metadata.load_metadata(trained_bert_run['records'])['do_lower_case'] is False
  assert tokenization.read_vocab(os.path.join(model_dir, 'vocab.txt')) == tiny_run.VOCAB
  model = inference.load_inference_model(model_dir)
  tokenizer = model.load_tokenizer()  # no --vocab_file needed
  assert tokenizer.do_lower_case is False
  assert tokenizer.tokenize('Paris') == ['[UNK]']  # cased: 'Paris' is not 'paris'


@pytest.mark.slow
def test_builtin_experiments_need_no_registry_import():
  code = ('from official.core import exp_factory\n'
          'print(type(exp_factory.get_exp_config("bert/sentence_prediction").task).__name__)\n'
          'print(sorted(exp_factory.registered_experiments())[:2])\n')
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
  lines = result.stdout.strip().splitlines()
  assert lines[0] == 'SentencePredictionConfig'
  assert lines[1].startswith("['bert/")


def test_finetuning_records_give_the_model_dir_their_vocabulary(tmp_path):
  from official.nlp.data import create_finetuning_data  # pylint: disable=g-import-not-at-top
  vocab_file = tmp_path / 'vocab.txt'
  vocab_file.write_text('\n'.join(tiny_run.VOCAB) + '\n')
  rows = tmp_path / 'train.tsv'
  rows.write_text('text\tlabel\nparis is a city\t1\nreturn the list\t0\n')
  output = str(tmp_path / 'ft' / 'train.tfrecord')
  create_finetuning_data.create_finetuning_data(
      'sentence_prediction', str(rows), output, vocab_file=str(vocab_file), max_seq_length=8)
  model_dir = str(tmp_path / 'cls')
  assert vocab_assets.write_model_dir_vocab(model_dir, _task_config(output)) is not None
  assert tokenization.read_vocab(os.path.join(model_dir, 'vocab.txt')) == tiny_run.VOCAB
