"""Tests for official/nlp/data/tagging_data_lib.py (Model Garden's tagging data library)."""

import os

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import full_tokenizer
from official.nlp.data import tagging_data_lib as tdl
from official.nlp.data import tagging_dataloader

VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'the', 'cat', 'on', 'mat', 'play', '##ing', 'paris']
ID = {token: i for i, token in enumerate(VOCAB)}


@pytest.fixture
def tokenizer(tmp_path):
  path = tmp_path / 'vocab.txt'
  path.write_text('\n'.join(VOCAB) + '\n')
  return full_tokenizer.FullTokenizer(str(path), do_lower_case=True)


def _ids(*tokens):
  return [ID[t] for t in tokens]


def test_read_examples(tmp_path):
  path = tmp_path / 'train-en.tsv'
  path.write_text('The\tO\ncat\tB-PER\n\n\nParis\tB-LOC\n')
  examples = tdl.read_examples(str(path), tdl.PanxProcessor().get_labels())
  assert [(e.sentence_id, e.words, e.label_ids) for e in examples] == [
      (0, ['The', 'cat'], [0, 1]), (1, ['Paris'], [3])]
  path.write_text('The\ncat\n')  # a test file: words only, label id 0
  assert tdl.read_examples(str(path), ['O'])[0].label_ids == [0, 0]
  path.write_text('The\tO\ncat\tB-XYZ\n')
  with pytest.raises(ValueError, match=r"train-en.tsv:2: label 'B-XYZ' is not in the label list"):
    tdl.read_examples(str(path), ['O'])
  path.write_text('The\tO\tx\n')
  with pytest.raises(ValueError, match=r'train-en.tsv:1: expected .* found 3 tab-separated'):
    tdl.read_examples(str(path), ['O'])
  with pytest.raises(FileNotFoundError, match='no such file'):
    tdl.read_examples(str(tmp_path / 'none.tsv'), ['O'])


def test_write_example_to_file_splits_long_sentences(tmp_path, tokenizer):
  example = tdl.InputExample(sentence_id=5)
  for word, label in zip(['The', 'cat', 'playing', 'on', 'mat'], [1, 0, 2, 0, 1]):
    example.add_word_and_label_id(word, label)
  path = tmp_path / 'out' / 'train.tfrecord'
  # 4 sub-words per record: 'the cat play ##ing' | 'on mat'.
  assert tdl.write_example_to_file([example], tokenizer, 6, str(path)) == 2
  params = tagging_dataloader.TaggingDataConfig(input_path=str(path), seq_length=6,
                                                global_batch_size=2, is_training=False,
                                                include_sentence_id=True)
  features, labels = next(iter(tagging_dataloader.TaggingDataLoader(params).load()))
  np.testing.assert_array_equal(features['input_word_ids'], [
      _ids('[CLS]', 'the', 'cat', 'play', '##ing', '[SEP]'),
      _ids('[CLS]', 'on', 'mat', '[SEP]') + [0, 0]])
  np.testing.assert_array_equal(features['input_mask'], [[1] * 6, [1] * 4 + [0] * 2])
  np.testing.assert_array_equal(labels, [[-1, 1, 0, 2, -1, -1], [-1, 0, 1, -1, -1, -1]])
  np.testing.assert_array_equal(features['sentence_id'], [5, 5])
  np.testing.assert_array_equal(features['sub_sentence_id'], [0, 1])


def test_long_words_become_unk_and_preprocessing_applies(tmp_path, tokenizer):
  example = tdl.InputExample(0, words=['playing', 'XcatX'], label_ids=[1, 2])
  path = tmp_path / 'a.tfrecord'
  # One sub-word per record: 'playing' (2 pieces) is written as [UNK].
  tdl.write_example_to_file([example], tokenizer, 3, str(path),
                            text_preprocessing=lambda word: word.strip('X'))
  records = [tf.train.Example.FromString(r.numpy()).features.feature
             for r in tf.data.TFRecordDataset(str(path))]
  assert [list(r['input_ids'].int64_list.value) for r in records] == [
      _ids('[CLS]', '[UNK]', '[SEP]'), _ids('[CLS]', 'cat', '[SEP]')]
  assert [list(r['label_ids'].int64_list.value) for r in records] == [[-1, 1, -1], [-1, 2, -1]]
  with pytest.raises(ValueError, match=r'sentence 0: label ids must be >= 0'):
    tdl.write_example_to_file([tdl.InputExample(0, words=['cat'], label_ids=[-1])], tokenizer, 3,
                              str(path))


def test_generate_tf_record_from_data_file(tmp_path, tokenizer):
  processor = tdl.PanxProcessor()
  processor.supported_languages = ['en', 'de']
  data_dir = tmp_path / 'panx'
  data_dir.mkdir()
  (data_dir / 'train-en.tsv').write_text('the\tO\ncat\tB-PER\n\nparis\tB-LOC\n')
  (data_dir / 'dev-en.tsv').write_text('paris\tB-LOC\n')
  (data_dir / 'test-en.tsv').write_text('the\ncat\n')
  (data_dir / 'test-de.tsv').write_text('')
  out = tmp_path / 'out'
  metadata = tdl.generate_tf_record_from_data_file(
      processor, str(data_dir), tokenizer, 8, str(out / 'train.tfrecord'),
      str(out / 'eval.tfrecord'), str(out / 'test_{}.tfrecord'), None)
  assert metadata == {'train_data_size': 2, 'max_seq_length': 8, 'num_labels': 7,
                      'task_type': 'tagging', 'label_type': 'int', 'label_shape': [8],
                      'eval_data_size': 1, 'test_data_size': {'en': 1, 'de': 0},
                      'label_list': processor.get_labels(), 'processor_type': 'panx'}
  assert sorted(os.listdir(out)) == ['eval.tfrecord', 'test_de.tfrecord', 'test_en.tfrecord',
                                     'train.tfrecord']
  assert tdl.UdposProcessor.get_processor_name() == 'udpos'
  assert len(tdl.UdposProcessor().get_labels()) == 17
  # All languages' training files when only_use_en_train is off.
  (data_dir / 'train-de.tsv').write_text('the\tO\n')
  processor = tdl.PanxProcessor(only_use_en_train=False)
  assert len(processor.get_train_examples(str(data_dir))) == 3
