"""A BPE tokenizer.json travels from the records' metadata into the model_dir (no vocab.txt), is
found and loaded there, and the masked-LM task trains on BPE records."""

import json
import os
import types

import numpy as np
import pytest
from tokenizers import Tokenizer

from official.nlp.data import create_pretraining_data as cpd
from official.nlp.data import tokenization
from official.nlp.data import vocab_assets
from tests.nlp.data import bpe_tokenizers as bt
from tests.nlp.serving import tiny_run


@pytest.fixture(scope='module')
def bpe(tmp_path_factory):
  """RoBERTa-style byte-level BPE and its packed records (the tiny run's sequence length)."""
  root = tmp_path_factory.mktemp('bpe_model_dir')
  lines = bt.corpus_lines(120)
  (root / 'corpus.txt').write_text(bt.documents_text(lines), encoding='utf-8')
  tokenizer_json = bt.byte_level_bpe(root / 'tok' / 'tokenizer.json', lines, bt.ROBERTA_SPECIALS,
                                     vocab_size=300, post_processor='roberta')
  records = str(root / 'data' / 'train.tfrecord')
  cpd.create_pretraining_data(str(root / 'corpus.txt'), records, tokenizer_json=tokenizer_json,
                              max_seq_length=tiny_run.SEQ_LENGTH,
                              max_predictions_per_seq=tiny_run.PACKED_PREDICTIONS,
                              masked_lm_prob=0.3, dupe_factor=2, pack=True, num_workers=1)
  return types.SimpleNamespace(root=root, lines=lines, tokenizer_json=tokenizer_json,
                               records=records)


def _task_config(input_path, init_checkpoint=''):
  return types.SimpleNamespace(train_data=types.SimpleNamespace(input_path=input_path),
                               validation_data=None, init_checkpoint=init_checkpoint)


def test_model_dir_gets_the_tokenizer_json_and_its_roles(bpe, tmp_path):
  model_dir = str(tmp_path / 'model')
  written = vocab_assets.write_model_dir_vocab(model_dir, _task_config(bpe.records))
  assert written == os.path.join(model_dir, 'tokenizer.json')
  with open(written, 'rb') as f, open(bpe.tokenizer_json, 'rb') as g:
    assert f.read() == g.read()
  assert not os.path.exists(os.path.join(model_dir, 'vocab.txt'))
  config = vocab_assets.read_tokenizer_config(model_dir)
  assert config['tokenizer_type'] == 'bpe' and config['vocab_size'] == 300
  assert (config['cls_token'], config['sep_token'], config['mask_token'], config['pad_token'],
          config['unk_token']) == ('<s>', '</s>', '<mask>', '<pad>', '<unk>')
  assert vocab_assets.find_vocab_file(model_dir) == written
  tokenizer = vocab_assets.load_tokenizer(model_dir)
  rust = Tokenizer.from_file(bpe.tokenizer_json)
  assert tokenizer.kind == 'bpe' and tokenizer.mask_id == rust.token_to_id('<mask>')
  assert tokenizer.encode(bpe.lines[0]) == rust.encode(bpe.lines[0], add_special_tokens=False).ids
  assert vocab_assets.load_tokenizer_from_flags(vocab_file=model_dir).vocab == tokenizer.vocab
  # A second start (resume) with the same records leaves it as it is.
  assert vocab_assets.write_model_dir_vocab(model_dir, _task_config(bpe.records)) == written


def test_model_dir_roles_win_over_conventional_names(bpe, tmp_path):
  """A tokenizer whose mask token was chosen by the caller keeps it in the model_dir."""
  records = str(tmp_path / 'other.tfrecord')
  tokenizer = tokenization.load_tokenizer(tokenizer_json=bpe.tokenizer_json,
                                          special_tokens={'mask': '<unk>'})
  cpd.create_pretraining_data(str(bpe.root / 'corpus.txt'), records, tokenizer=tokenizer,
                              max_seq_length=16, max_predictions_per_seq=3, dupe_factor=1,
                              num_workers=1)
  model_dir = str(tmp_path / 'model')
  vocab_assets.write_model_dir_vocab(model_dir, _task_config(records))
  assert vocab_assets.load_tokenizer(model_dir).special_tokens['mask'] == '<unk>'


def test_resume_on_records_of_another_tokenizer_is_refused(bpe, tmp_path):
  model_dir = str(tmp_path / 'model')
  vocab_assets.write_model_dir_vocab(model_dir, _task_config(bpe.records))
  other_json = bt.byte_level_bpe(tmp_path / 'other' / 'tokenizer.json', bpe.lines[:60],
                                 bt.ROBERTA_SPECIALS, vocab_size=280, post_processor='roberta')
  other = str(tmp_path / 'other.tfrecord')
  cpd.create_pretraining_data(str(bpe.root / 'corpus.txt'), other, tokenizer_json=other_json,
                              max_seq_length=16, max_predictions_per_seq=3, dupe_factor=1,
                              num_workers=1)
  with pytest.raises(ValueError, match=r"model_dir '.*model' holds a tokenizer.json \(sha256 "
                     r'[0-9a-f]{12}\.\.\.\) other than the one of the records'):
    vocab_assets.write_model_dir_vocab(model_dir, _task_config(other))
  wordpiece_dir = tmp_path / 'wordpiece'
  wordpiece_dir.mkdir()
  (wordpiece_dir / 'vocab.txt').write_text('\n'.join(tiny_run.VOCAB) + '\n', encoding='utf-8')
  with pytest.raises(ValueError, match='holds a vocab.txt .* tokenizer.json'):
    vocab_assets.write_model_dir_vocab(str(wordpiece_dir), _task_config(bpe.records))


def test_init_checkpoint_with_a_tokenizer_json(bpe, tmp_path):
  """A converted Hugging Face model (a directory with tokenizer.json) as init_checkpoint: records
  of its tokenizer pass, records of another are refused, and without records its tokenizer.json
  goes into the model_dir."""
  init_dir = tmp_path / 'init'
  init_dir.mkdir()
  (init_dir / 'tokenizer.json').write_bytes(open(bpe.tokenizer_json, 'rb').read())
  model_dir = str(tmp_path / 'model')
  vocab_assets.write_model_dir_vocab(model_dir, _task_config(bpe.records, str(init_dir)))
  wordpiece_records, _ = tiny_run.write_records(tmp_path / 'wp')
  with pytest.raises(ValueError, match='init_checkpoint: the pretrained model .* another '
                     r'vocabulary .* tokenized with .*init/tokenizer.json'):
    vocab_assets.write_model_dir_vocab(str(tmp_path / 'm2'),
                                       _task_config(wordpiece_records, str(init_dir)))
  written = vocab_assets.write_model_dir_vocab(str(tmp_path / 'm3'),
                                               _task_config('dummy', str(init_dir)))
  assert written.endswith('tokenizer.json')
  assert vocab_assets.load_tokenizer(str(tmp_path / 'm3')).special_tokens['cls'] == '<s>'


def test_a_hugging_face_folder_with_only_tokenizer_json_loads(bpe, tmp_path):
  transformers = pytest.importorskip('transformers')
  folder = str(tmp_path / 'hf')
  fast = transformers.PreTrainedTokenizerFast(
      tokenizer_file=bpe.tokenizer_json, cls_token='<s>', sep_token='</s>', mask_token='<mask>',
      pad_token='<pad>', unk_token='<unk>')
  fast.save_pretrained(folder)
  assert not os.path.exists(os.path.join(folder, 'vocab.txt'))
  tokenizer = vocab_assets.load_tokenizer(folder)
  assert tokenizer.special_tokens['mask'] == '<mask>'
  assert tokenizer.encode(bpe.lines[1]) == fast(bpe.lines[1], add_special_tokens=False)['input_ids']


@pytest.mark.slow
def test_masked_lm_task_trains_on_bpe_records(bpe, tmp_path):
  """4 steps of the tiny ModernBERT on byte-level BPE records: finite losses, and the model_dir
  gets the tokenizer.json (and no vocab.txt)."""
  # Function-level: the API (TensorFlow, the experiments) only for this test.
  from official.nlp import api  # pylint: disable=g-import-not-at-top
  overrides = tiny_run.trained_run_overrides(bpe.records, 'modernbert')
  overrides['task.model.encoder.modernbert'] = dict(
      overrides['task.model.encoder.modernbert'], vocab_size=300)
  params = api.load_config(tiny_run.MODERNBERT_YAML, overrides=overrides)
  model_dir = str(tmp_path / 'model')
  result = api.train(params, model_dir, steps=4)
  assert result.step == 4
  assert all(np.isfinite(v) for v in result.eval_logs.values() if np.ndim(v) == 0)
  assert json.load(open(os.path.join(model_dir, 'tokenizer_config.json')))['mask_token'] == '<mask>'
  assert not os.path.exists(os.path.join(model_dir, 'vocab.txt'))
  assert vocab_assets.load_tokenizer(model_dir).vocab_size == 300
