"""A Hugging Face ModernBERT with a byte-level BPE tokenizer.json (no vocab.txt): imported with its
tokenizer, exported back into a folder that transformers loads with that tokenizer (config.json's
special-token ids from it), from a model_dir or from its records, and fill-mask on it.

transformers and torch are test-only dependencies; the tiny model and tokenizer are made here.
"""

import json
import os
import re
import shutil

os.environ.setdefault('USE_TF', '0')  # transformers must not reach for TensorFlow itself

import numpy as np
import pytest
from tokenizers import Tokenizer
import torch
import transformers

from official.modeling import hyperparams
from official.nlp.configs import encoders
from official.nlp.data import create_pretraining_data as cpd
from official.nlp.data import vocab_assets
from official.nlp.tools import bert_weight_map
from official.nlp.tools import convert_checkpoint
from official.nlp.tools import fill_mask
from official.nlp.tools import hf_bert
from tests import testing
from tests.nlp.data import bpe_tokenizers as bt
from tests.nlp.tools import tiny_hf

TOKEN_IDS = tiny_hf.MODERNBERT_TOKEN_IDS
TEXT = 'Kalo mi [MASK] ne pa.'


@pytest.fixture(scope='module')
def hf_dir(tmp_path_factory):
  """A tiny ModernBertForMaskedLM with a byte-level BPE tokenizer.json (tests/nlp/tools/tiny_hf)."""
  folder = tiny_hf.write_modernbert(tmp_path_factory.mktemp('hf_bpe'))
  assert not (folder / 'vocab.txt').exists()
  return folder


def _logits(folder, text):
  tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
  model = transformers.ModernBertForMaskedLM.from_pretrained(str(folder)).eval()
  inputs = tokenizer(text, return_tensors='pt')
  with torch.no_grad():
    return inputs['input_ids'][0].numpy(), model(**inputs).logits[0].numpy()


@pytest.mark.slow
def test_import_keeps_the_tokenizer_and_export_writes_it_back(hf_dir, tmp_path):
  ours, back = tmp_path / 'ours', tmp_path / 'back'
  convert_checkpoint.convert('hf', 'ours', str(hf_dir), str(ours))
  original = (hf_dir / 'tokenizer.json').read_bytes()
  assert (ours / 'tokenizer.json').read_bytes() == original
  assert not (ours / 'vocab.txt').exists()
  assert vocab_assets.load_tokenizer(str(ours)).special_tokens == {
      'pad': '[PAD]', 'unk': '[UNK]', 'cls': '[CLS]', 'sep': '[SEP]', 'mask': '[MASK]'}

  convert_checkpoint.convert('ours', 'hf', str(ours), str(back))
  assert (back / 'tokenizer.json').read_bytes() == original
  config = json.loads((back / 'config.json').read_text())
  assert {k: config[k] for k in TOKEN_IDS} == TOKEN_IDS and config['mask_token_id'] == 2
  # transformers loads the folder with its tokenizer: same ids, same logits as the original.
  tokenizer = transformers.AutoTokenizer.from_pretrained(str(back))
  assert tokenizer.mask_token == '[MASK]' and tokenizer.mask_token_id == 2
  assert 'token_type_ids' not in tokenizer(TEXT)  # ModernBERT's inputs
  ids, logits = _logits(back, TEXT)
  expected_ids, expected_logits = _logits(hf_dir, TEXT)
  np.testing.assert_array_equal(ids, expected_ids)
  assert ids[0] == 0 and ids[-1] == 1 and 2 in ids.tolist()
  np.testing.assert_allclose(logits, expected_logits, atol=1e-4)


@pytest.mark.slow
def test_export_takes_the_tokenizer_of_the_records(hf_dir, tmp_path):
  """A directory of ours without a tokenizer.json (e.g. a model_dir of older runs) exports the
  tokenizer.json stored with the records its params.yaml trains on."""
  records = str(tmp_path / 'data' / 'train.tfrecord')
  cpd.create_pretraining_data(str(hf_dir.parent / 'corpus.txt'), records,
                              tokenizer_json=str(hf_dir / 'tokenizer.json'), max_seq_length=32,
                              max_predictions_per_seq=5, dupe_factor=1, pack=True, num_workers=1)
  ours = tmp_path / 'ours'
  convert_checkpoint.convert('hf', 'ours', str(hf_dir), str(ours))
  os.remove(ours / 'tokenizer.json')
  os.remove(ours / 'tokenizer_config.json')
  params = hyperparams.read_yaml(str(ours / 'params.yaml'))
  params['task']['train_data'] = {'input_path': records}
  hyperparams.save_yaml(params, str(ours / 'params.yaml'))
  convert_checkpoint.convert('ours', 'hf', str(ours), str(tmp_path / 'back'))
  assert ((tmp_path / 'back' / 'tokenizer.json').read_bytes()
          == (hf_dir / 'tokenizer.json').read_bytes())
  config = json.loads((tmp_path / 'back' / 'config.json').read_text())
  assert config['mask_token_id'] == 2 and config['pad_token_id'] == 3


def test_tokenizer_files_of_a_roberta_style_tokenizer_load_in_transformers(tmp_path):
  lines = bt.corpus_lines(120)
  path = bt.byte_level_bpe(tmp_path / 'tok' / 'tokenizer.json', lines, bt.ROBERTA_SPECIALS,
                           vocab_size=280, post_processor='roberta')
  assert hf_bert.tokenizer_token_ids(path) == {
      'pad_token_id': 1, 'bos_token_id': 0, 'eos_token_id': 2, 'cls_token_id': 0,
      'sep_token_id': 2, 'mask_token_id': 4}
  folder = tmp_path / 'hf'
  hf_bert.write_tokenizer_files(str(folder), path, {'model_input_names': ['input_ids',
                                                                          'attention_mask']})
  tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
  assert (tokenizer.cls_token, tokenizer.sep_token, tokenizer.mask_token, tokenizer.pad_token,
          tokenizer.unk_token) == ('<s>', '</s>', '<mask>', '<pad>', '<unk>')
  assert tokenizer(lines[0])['input_ids'] == Tokenizer.from_file(path).encode(lines[0]).ids
  assert list(tokenizer(lines[0])) == ['input_ids', 'attention_mask']


_LINE = re.compile(r'^  \[MASK\] 1: (.+)$')


def _printed(capsys):
  out = capsys.readouterr().out.splitlines()
  assert out[0] == TEXT
  return [(m.group(1), float(m.group(2)))
          for m in re.finditer(r'(\S+) \((\d\.\d+)\)', _LINE.match(out[1]).group(1))]


@pytest.mark.slow
def test_fill_mask_on_a_bpe_folder_decodes_the_models_predictions(hf_dir, tmp_path, capsys):
  ids, logits = _logits(hf_dir, TEXT)
  position = ids.tolist().index(2)
  probabilities = torch.softmax(torch.tensor(logits[position]), -1).numpy()
  best = np.argsort(-probabilities)[:3]
  tokenizer = Tokenizer.from_file(str(hf_dir / 'tokenizer.json'))
  expected = [(tokenizer.decode([int(i)]).strip() or tokenizer.id_to_token(int(i)),
               float(probabilities[i])) for i in best]
  # A token with the byte-level space marker is shown decoded, without it.
  ours_tokenizer = vocab_assets.load_tokenizer(str(hf_dir))
  marked = next(t for t in ours_tokenizer.vocab if t.startswith('\u0120') and len(t) > 2)
  assert fill_mask.token_text(ours_tokenizer, ours_tokenizer.token_to_id[marked]) == marked[1:]
  assert fill_mask.main(['fill_mask', f'--model_dir={hf_dir}', f'--text={TEXT}',
                         '--top_k=3']) == 0
  printed = _printed(capsys)
  assert [t for t, _ in printed] == [t for t, _ in expected]
  np.testing.assert_allclose([p for _, p in printed], [p for _, p in expected], atol=1e-3)
  assert not any(t.startswith('\u0120') for t, _ in printed)

  # The same from our directory (its tokenizer.json found there), as the command line loads it.
  ours = tmp_path / 'ours'
  convert_checkpoint.convert('hf', 'ours', str(hf_dir), str(ours))
  assert fill_mask.main(['fill_mask', f'--model_dir={ours}', f'--text={TEXT}', '--top_k=3',
                         '--seq_length=16']) == 0
  assert [t for t, _ in _printed(capsys)] == [t for t, _ in expected]
  shutil.copy(hf_dir / 'tokenizer.json', tmp_path / 'elsewhere.json')
  pretrainer = convert_checkpoint.read('ours', str(ours))
  for tokenizer_source in (str(ours), str(tmp_path / 'elsewhere.json')):
    results = fill_mask.fill_mask(pretrainer, vocab_assets.load_tokenizer(tokenizer_source),
                                  [TEXT], top_k=3, seq_length=16)
    assert [t for t, _ in results[0][0]] == [t for t, _ in expected]
    np.testing.assert_allclose([p for _, p in results[0][0]], [p for _, p in expected],
                               atol=1e-3)


@pytest.mark.slow
def test_a_savedmodel_export_carries_the_bpe_tokenizer(hf_dir, tmp_path, capsys):
  from official.nlp.serving import export_savedmodel  # pylint: disable=g-import-not-at-top
  ours, export = tmp_path / 'ours', tmp_path / 'export'
  convert_checkpoint.convert('hf', 'ours', str(hf_dir), str(ours))
  export_savedmodel.export_from_model_dir(str(ours), str(export), top_k=3)
  extra = export / 'assets.extra'
  assert (extra / 'tokenizer.json').read_bytes() == (hf_dir / 'tokenizer.json').read_bytes()
  assert not (extra / 'vocab.txt').exists()
  config = json.loads((extra / 'serving_config.json').read_text())
  assert config['vocab_file'] == 'tokenizer.json'
  assert config['special_token_ids'] == {'[PAD]': 3, '[CLS]': 0, '[SEP]': 1, '[MASK]': 2,
                                         '[UNK]': 4}
  printed = []
  for model_dir in (ours, export):  # the export predicts what the model_dir does
    assert fill_mask.main(['fill_mask', f'--model_dir={model_dir}', f'--text={TEXT}',
                           '--top_k=3', '--seq_length=16']) == 0
    printed.append(_printed(capsys))
  from_ours, from_export = printed
  assert [t for t, _ in from_export] == [t for t, _ in from_ours] and len(from_ours) == 3
  np.testing.assert_allclose([p for _, p in from_export], [p for _, p in from_ours], atol=1e-5)


@pytest.mark.slow
def test_bert_export_with_a_bpe_tokenizer_json(tmp_path):
  """The BERT family too: the tokenizer files and `pad_token_id` from the tokenizer.json."""
  path = bt.byte_level_bpe(tmp_path / 'tok' / 'tokenizer.json', bt.corpus_lines(120),
                           bt.ROBERTA_SPECIALS, vocab_size=260, post_processor='roberta')
  config = encoders.BertEncoderConfig(**testing.tiny_config(vocab_size=260,
                                                            max_position_embeddings=12))
  pretrainer = bert_weight_map.build_pretrainer(bert_weight_map.pretrainer_config(config, False))
  out = hf_bert.export(pretrainer, str(tmp_path / 'hf'), vocab_file=path)
  config = json.loads(open(os.path.join(out, 'config.json'), encoding='utf-8').read())
  assert config['pad_token_id'] == 1 and config['architectures'] == ['BertForMaskedLM']
  assert not os.path.exists(os.path.join(out, 'vocab.txt'))
  assert open(os.path.join(out, 'tokenizer.json'), 'rb').read() == open(path, 'rb').read()
  tokenizer = transformers.AutoTokenizer.from_pretrained(out)
  assert tokenizer.mask_token == '<mask>' and tokenizer.pad_token_id == 1
  assert transformers.BertForMaskedLM.from_pretrained(out).config.pad_token_id == 1
