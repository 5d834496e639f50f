"""Tests for official/nlp/data/create_finetuning_data.py and
data_tools/create_finetuning_data.py."""

import json

import numpy as np
import pytest
import tensorflow as tf

from data_tools import create_finetuning_data as cli
from official.nlp.data import create_finetuning_data as cfd
from official.nlp.data import sentence_prediction_dataloader as sp_loader
from official.nlp.data import tagging_dataloader

VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'the', 'cat', 'sat', 'on', 'mat', 'play',
         '##ing', 'new', 'york', 'is', 'big', '.']
ID = {token: i for i, token in enumerate(VOCAB)}


@pytest.fixture
def vocab_file(tmp_path):
  path = tmp_path / 'vocab.txt'
  path.write_text('\n'.join(VOCAB) + '\n')
  return str(path)


def _ids(*tokens):
  return [ID[t] for t in tokens]


def _read(path):
  """Every record as a dict of lists (independent of our loaders)."""
  out = []
  for record in tf.data.TFRecordDataset(str(path)):
    feature = tf.train.Example.FromString(record.numpy()).features.feature
    out.append({k: list(getattr(v, v.WhichOneof('kind')).value) for k, v in feature.items()})
  return out


def test_tsv_single_sentences(tmp_path, vocab_file):
  src = tmp_path / 'train.tsv'
  src.write_text('text\tlabel\nthe cat sat\tpos\nthe mat\tneg\n\nplaying on the mat .\tpos\n')
  out = tmp_path / 'out' / 'train.tfrecord'
  meta = cfd.create_finetuning_data('sentence_prediction', str(src), str(out), vocab_file,
                                    max_seq_length=8)
  records = _read(out)
  assert records[0]['input_ids'] == _ids('[CLS]', 'the', 'cat', 'sat', '[SEP]') + [0] * 3
  assert records[0]['input_mask'] == [1] * 5 + [0] * 3
  assert records[0]['segment_ids'] == [0] * 8
  # 'playing on the mat .' = 6 pieces, truncated to 6 = 8 - 2: fits exactly.
  assert records[2]['input_ids'] == _ids('[CLS]', 'play', '##ing', 'on', 'the', 'mat', '.', '[SEP]')
  assert [r['label_ids'] for r in records] == [[1], [0], [1]]  # sorted labels: neg, pos
  assert [r['example_id'] for r in records] == [[0], [1], [2]]
  saved = json.loads((tmp_path / 'out' / 'train.metadata.json').read_text())
  assert saved == {**meta}
  assert meta['label_list'] == ['neg', 'pos'] and meta['num_classes'] == 2
  assert meta['max_seq_length'] == 8 and meta['num_examples'] == 3 and meta['num_truncated'] == 0
  assert meta['format'] == sp_loader.FINETUNING_FORMAT
  assert meta['vocab_size'] == len(VOCAB)


def test_csv_pairs_truncate_longest_first(tmp_path, vocab_file):
  src = tmp_path / 'pairs.csv'
  src.write_text('premise,hypothesis,gold\n"the cat sat on the mat",the cat,1\n"the cat, big",'
                 'new york is big,0\n')
  out = tmp_path / 'pairs.tfrecord'
  meta = cfd.create_finetuning_data('sentence_prediction', str(src), str(out), vocab_file,
                                    max_seq_length=9, text_column='premise',
                                    text_b_column='hypothesis', label_column='gold')
  first, second = _read(out)
  # Budget 6: a (6 pieces) + b (2) -> a loses its last two.
  assert first['input_ids'] == _ids('[CLS]', 'the', 'cat', 'sat', 'on', '[SEP]', 'the', 'cat',
                                    '[SEP]')
  assert first['segment_ids'] == [0] * 6 + [1] * 3
  # 'the cat , big' has an unknown ',' -> [UNK]; a (4) + b (4) > 6: each loses one.
  assert second['input_ids'] == _ids('[CLS]', 'the', 'cat', '[UNK]', '[SEP]', 'new', 'york',
                                     'is', '[SEP]')
  assert meta['num_truncated'] == 2 and meta['num_pairs'] == 2
  assert meta['label_list'] == ['0', '1'] and first['label_ids'] == [1]


def test_jsonl_numeric_label_order_and_regression(tmp_path, vocab_file):
  src = tmp_path / 'data.jsonl'
  src.write_text('{"text": "the cat", "label": 10}\n{"text": "mat", "label": 2}\n')
  meta = cfd.create_finetuning_data('sentence_prediction', str(src), str(tmp_path / 'c.tfrecord'),
                                    vocab_file, max_seq_length=6)
  assert meta['label_list'] == ['2', '10']
  assert [r['label_ids'] for r in _read(tmp_path / 'c.tfrecord')] == [[1], [0]]
  src.write_text('{"text": "the cat", "label": 0.25}\n{"text": "mat", "label": "4.5"}\n')
  meta = cfd.create_finetuning_data('sentence_prediction', str(src), str(tmp_path / 'r.tfrecord'),
                                    vocab_file, max_seq_length=6, label_type='float')
  assert meta['num_classes'] == 1 and meta['label_list'] is None and meta['label_type'] == 'float'
  assert [r['label_ids'] for r in _read(tmp_path / 'r.tfrecord')] == [[0.25], [4.5]]


@pytest.mark.parametrize('name, content, kwargs, message', [
    ('a.tsv', 'sentence\tlabel\nthe\t1\n', {}, r"a.tsv:1: header has no column 'text'; found "
     r"\['sentence', 'label'\]"),
    ('a.tsv', 'text\tlabel\nthe\t1\nthe cat\tmaybe\n', {'label_list': ['0', '1']},
     r"a.tsv:3: label 'maybe' is not in the label list \['0', '1'\]"),
    ('a.tsv', 'text\tlabel\nthe\t1\t2\n', {}, r'a.tsv:2: expected 2 tsv fields'),
    ('a.jsonl', '{"text": "the", "label": 1}\n{"text": \n', {}, r'a.jsonl:2: not valid JSON'),
    ('a.jsonl', '{"text": "the", "label": "x"}\n', {'label_type': 'float'},
     r"a.jsonl:1: label 'x' is not a number"),
    ('a.csv', 'text,label\n,1\n', {}, r"a.csv:2: empty text in 'text'"),
    ('a.txt', 'text,label\n', {}, r'cannot tell the format from the extension'),
])
def test_sentence_errors_name_file_and_line(tmp_path, vocab_file, name, content, kwargs, message):
  src = tmp_path / name
  src.write_text(content)
  with pytest.raises(ValueError, match=message):
    cfd.create_finetuning_data('sentence_prediction', str(src), str(tmp_path / 'o.tfrecord'),
                               vocab_file, max_seq_length=8, **kwargs)
  assert not (tmp_path / 'o.tfrecord').exists()


CONLL = """-DOCSTART- -X- O O

the DT O
new NNP B-LOC
york NNP I-LOC
playing VBG O

cat NN B-PER
sat VBD O
"""


def test_conll_first_subword_labels(tmp_path, vocab_file):
  src = tmp_path / 'train.conll'
  src.write_text(CONLL)
  out = tmp_path / 'train.tfrecord'
  meta = cfd.create_finetuning_data('tagging', str(src), str(out), vocab_file, max_seq_length=8)
  assert meta['label_list'] == ['O', 'B-LOC', 'I-LOC', 'B-PER']
  assert meta['num_sentences'] == 2 and meta['num_words'] == 6 and meta['ignore_label_id'] == -1
  first, second = _read(out)
  assert first['input_ids'] == _ids('[CLS]', 'the', 'new', 'york', 'play', '##ing', '[SEP]') + [0]
  assert first['label_ids'] == [-1, 0, 1, 2, 0, -1, -1, -1]
  assert second['label_ids'] == [-1, 3, 0, -1, -1, -1, -1, -1]
  assert [first['sentence_id'], second['sentence_id']] == [[0], [1]]
  assert first['sub_sentence_id'] == [0]


def test_conll_long_sentence_is_split_at_words(tmp_path, vocab_file):
  src = tmp_path / 'long.conll'
  src.write_text('the O\nplaying O\ncat B-PER\nsat O\n')
  out = tmp_path / 'long.tfrecord'
  meta = cfd.create_finetuning_data('tagging', str(src), str(out), vocab_file, max_seq_length=5,
                                    label_list=['O', 'B-PER'], ignore_label_id=-100)
  records = _read(out)
  # 3 sub-words per example: [the play ##ing] [cat sat].
  assert [r['input_ids'] for r in records] == [
      _ids('[CLS]', 'the', 'play', '##ing', '[SEP]'), _ids('[CLS]', 'cat', 'sat', '[SEP]') + [0]]
  assert [r['label_ids'] for r in records] == [[-100, 0, 0, -100, -100],
                                               [-100, 1, 0, -100, -100]]
  assert [r['sub_sentence_id'] for r in records] == [[0], [1]]
  assert [r['sentence_id'] for r in records] == [[0], [0]]
  assert meta['num_split_sentences'] == 1 and meta['num_examples'] == 2


def test_conll_errors_name_file_and_line(tmp_path, vocab_file):
  src = tmp_path / 'bad.conll'
  src.write_text('the O\ncat\n')
  with pytest.raises(ValueError, match=r"bad.conll:2: expected \"token ... tag\""):
    cfd.create_finetuning_data('tagging', str(src), str(tmp_path / 'o.tfrecord'), vocab_file)
  src.write_text('the O\n\ncat O\nsat B-MISC\n')
  with pytest.raises(ValueError, match=r"bad.conll:4: tag 'B-MISC' of word 'sat' is not in the "
                     r"label list \['O'\]"):
    cfd.create_finetuning_data('tagging', str(src), str(tmp_path / 'o.tfrecord'), vocab_file,
                               label_list=['O'])


def test_records_round_trip_through_the_loaders(tmp_path, vocab_file):
  (tmp_path / 'a.tsv').write_text('text\ttext_b\tlabel\nthe cat\tsat\tb\nmat\tthe mat\ta\n')
  meta = cfd.create_finetuning_data('sentence_prediction', str(tmp_path / 'a.tsv'),
                                    str(tmp_path / 'a.tfrecord'), vocab_file, max_seq_length=8)
  params = sp_loader.SentencePredictionDataConfig(
      input_path=str(tmp_path / 'a.tfrecord'), seq_length=8, global_batch_size=2,
      is_training=False, include_example_id=True)
  features = next(iter(sp_loader.SentencePredictionDataLoader(params).load()))
  labels = features['label_ids']
  expected = cfd.encode_sentence_examples(
      cfd.read_sentence_examples(str(tmp_path / 'a.tsv')),
      cfd.WordPieceTokenizer.from_vocab_file(vocab_file), 8, meta['label_list'])[0]
  np.testing.assert_array_equal(features['input_word_ids'], expected['input_ids'])
  np.testing.assert_array_equal(features['input_type_ids'], expected['segment_ids'])
  np.testing.assert_array_equal(labels, [1, 0])
  np.testing.assert_array_equal(features['example_id'], [0, 1])

  (tmp_path / 't.conll').write_text(CONLL)
  cfd.create_finetuning_data('tagging', str(tmp_path / 't.conll'), str(tmp_path / 't.tfrecord'),
                             vocab_file, max_seq_length=8)
  params = tagging_dataloader.TaggingDataConfig(
      input_path=str(tmp_path / 't.tfrecord'), seq_length=8, global_batch_size=2,
      is_training=False, include_sentence_id=True)
  features, labels = next(iter(tagging_dataloader.TaggingDataLoader(params).load()))
  np.testing.assert_array_equal(labels[0], [-1, 0, 1, 2, 0, -1, -1, -1])
  np.testing.assert_array_equal(features['sentence_id'], [0, 1])


def test_cli(tmp_path, vocab_file, capsys):
  (tmp_path / 'train.conll').write_text(CONLL)
  (tmp_path / 'dev.conll').write_text('cat B-PER\n')
  out = tmp_path / 'train.tfrecord'
  common = [f'--vocab_file={vocab_file}', '--max_seq_length=8', '--task=tagging']
  assert cli.main(['prog', f'--input_file={tmp_path}/train.conll', f'--output_file={out}',
                   *common]) == 0
  assert 'wrote 2 examples' in capsys.readouterr().out
  # The dev split takes the train split's labels (it only has B-PER itself).
  assert cli.main(['prog', f'--input_file={tmp_path}/dev.conll',
                   f'--output_file={tmp_path}/dev.tfrecord',
                   f'--label_map_file={tmp_path}/train.metadata.json', *common]) == 0
  dev_meta = json.loads((tmp_path / 'dev.metadata.json').read_text())
  assert dev_meta['label_list'] == ['O', 'B-LOC', 'I-LOC', 'B-PER']
  assert _read(tmp_path / 'dev.tfrecord')[0]['label_ids'][:3] == [-1, 3, -1]

  assert cli.main(['prog', f'--input_file={tmp_path}/missing.conll', f'--output_file={out}',
                   *common]) == 1
  assert 'missing.conll' in capsys.readouterr().err
  assert cli.main(['prog', '--task=tagging']) == 2


def test_encode_words_maps_predictions_back_to_words(vocab_file):
  from official.nlp.tasks import tagging  # pylint: disable=g-import-not-at-top
  tokenizer = cfd.WordPieceTokenizer.from_vocab_file(vocab_file)
  features = cfd.encode_words(['the', 'playing', 'cat', 'sat'], tokenizer, max_seq_length=6)
  # 'sat' does not fit: [CLS] the play ##ing cat [SEP].
  assert features['input_ids'].tolist() == _ids('[CLS]', 'the', 'play', '##ing', 'cat', '[SEP]')
  assert features['word_ids'].tolist() == [-1, 0, 1, 1, 2, -1]
  assert features['input_mask'].tolist() == [1] * 6
  predictions = [7, 3, 4, 9, 5, 7]
  assert tagging.subword_to_word_labels(predictions, features['word_ids']) == [3, 4, 5]
  padded = cfd.encode_words(['cat'], tokenizer, max_seq_length=5)
  assert padded['word_ids'].tolist() == [-1, 0, -1, -1, -1]
  assert padded['input_mask'].tolist() == [1, 1, 1, 0, 0]


def test_pack_pair_cuts_the_longer_text_first():
  assert cfd.pack_pair(['a', 'b', 'c'], ['d'], 6, '[CLS]', '[SEP]') == (
      ['[CLS]', 'a', 'b', '[SEP]', 'd', '[SEP]'], [0, 0, 0, 0, 1, 1], True)
  assert cfd.pack_pair([5, 6, 7], None, 4, 2, 3) == ([2, 5, 6, 3], [0, 0, 0, 0], True)
  assert cfd.pack_pair([5], [6], 8, 2, 3) == ([2, 5, 3, 6, 3], [0, 0, 0, 1, 1], False)


def test_encode_word_labels_long_words_and_sentence_ids(vocab_file):
  tokenizer = cfd.WordPieceTokenizer.from_vocab_file(vocab_file)
  sentences = [(['playing', 'cat'], [1, 0])]
  # One sub-word per sequence: 'playing' keeps its start, or becomes [UNK].
  truncated, num_split = cfd.encode_word_labels(sentences, tokenizer, 3, sentence_ids=[9])
  assert truncated['input_ids'].tolist() == [_ids('[CLS]', 'play', '[SEP]'),
                                             _ids('[CLS]', 'cat', '[SEP]')]
  assert truncated['sentence_id'].tolist() == [[9], [9]] and num_split == 1
  assert truncated['sub_sentence_id'].tolist() == [[0], [1]]
  unk, _ = cfd.encode_word_labels(sentences, tokenizer, 3, long_word='unk')
  assert unk['input_ids'][0].tolist() == _ids('[CLS]', '[UNK]', '[SEP]')
  assert unk['label_ids'].tolist() == [[-1, 1, -1], [-1, 0, -1]]
  with pytest.raises(ValueError, match=r"long_word must be 'truncate' or 'unk', found 'x'"):
    cfd.encode_word_labels(sentences, tokenizer, 3, long_word='x')
  with pytest.raises(ValueError, match='sentence_ids has 2 ids for 1 sentences'):
    cfd.encode_word_labels(sentences, tokenizer, 3, sentence_ids=[1, 2])
