"""Tests for official/nlp/data/sentence_prediction_dataloader.py and tagging_dataloader.py."""

import json

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import sentence_prediction_dataloader as sp_loader
from official.nlp.data import tagging_dataloader


def _int(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _float(values):
  return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def _write(path, rows):
  with tf.io.TFRecordWriter(str(path)) as writer:
    for row in rows:
      writer.write(tf.train.Example(features=tf.train.Features(feature=row)).SerializeToString())


def _sentence_rows(n, seq=6, float_labels=False):
  rng = np.random.default_rng(0)
  rows = []
  for i in range(n):
    rows.append({'input_ids': _int(rng.integers(0, 30, seq)), 'input_mask': _int([1] * seq),
                 'segment_ids': _int([0] * seq), 'example_id': _int([i]),
                 'label_ids': _float([i / 2]) if float_labels else _int([i % 3])})
  return rows


def test_sentence_loader_reads_int_and_float_labels(tmp_path):
  rows = _sentence_rows(5)
  _write(tmp_path / 'a.tfrecord', rows)
  params = sp_loader.SentencePredictionDataConfig(
      input_path=str(tmp_path / 'a.tfrecord'), seq_length=6, global_batch_size=4, is_training=False,
      drop_remainder=False, include_example_id=True)
  batches = list(sp_loader.SentencePredictionDataLoader(params).load())
  batch = batches[0]
  assert sorted(batch) == ['example_id', 'input_mask', 'input_type_ids', 'input_word_ids',
                           'label_ids']
  labels = batch['label_ids']
  assert labels.dtype == tf.int32 and labels.numpy().tolist() == [0, 1, 2, 0]
  np.testing.assert_array_equal(batch['input_word_ids'][1],
                                rows[1]['input_ids'].int64_list.value)
  np.testing.assert_array_equal(batch['input_type_ids'], np.zeros((4, 6)))
  assert batch['input_word_ids'].dtype == tf.int32 and batch['example_id'].dtype == tf.int32
  assert [b['label_ids'].shape[0] for b in batches] == [4, 1]
  np.testing.assert_array_equal(batches[1]['example_id'], [4])

  _write(tmp_path / 'f.tfrecord', _sentence_rows(2, float_labels=True))
  params = params.replace(input_path=str(tmp_path / 'f.tfrecord'), label_type='float',
                          include_example_id=False)
  batch = next(iter(sp_loader.SentencePredictionDataLoader(params).load()))
  assert 'example_id' not in batch
  labels = batch['label_ids']
  assert labels.dtype == tf.float32 and labels.numpy().tolist() == [0.0, 0.5]


def test_sentence_loader_label_field_and_label_name(tmp_path):
  rows = _sentence_rows(3)
  for row in rows:
    row['label'] = row.pop('label_ids')
  _write(tmp_path / 'a.tfrecord', rows)
  params = sp_loader.SentencePredictionDataConfig(
      input_path=str(tmp_path / 'a.tfrecord'), seq_length=6, global_batch_size=3,
      is_training=False, label_field='label', label_name=('label', 'next_sentence_labels'))
  batch = next(iter(sp_loader.SentencePredictionDataLoader(params).load()))
  assert sorted(batch) == ['input_mask', 'input_type_ids', 'input_word_ids', 'label',
                           'next_sentence_labels']
  assert batch['label'].numpy().tolist() == [0, 1, 2]
  assert batch['next_sentence_labels'].numpy().tolist() == [0, 1, 2]
  with pytest.raises(ValueError, match=r"label_name must be \(label_field, other_key\) = "
                     r"\('label', ...\), found \('label_ids', 'x'\)"):
    sp_loader.SentencePredictionDataLoader(params.replace(label_name=('label_ids', 'x')))
  with pytest.raises(ValueError, match=r"missing feature 'label_ids'"):
    sp_loader.SentencePredictionDataLoader(params.replace(label_field='label_ids',
                                                          label_name=None)).load()


def test_sentence_loader_schema_errors_name_file_and_feature(tmp_path):
  path = tmp_path / 'f.tfrecord'
  _write(path, _sentence_rows(2, float_labels=True))
  params = sp_loader.SentencePredictionDataConfig(input_path=str(path), seq_length=6)
  with pytest.raises(ValueError, match=rf"{path}: feature 'label_ids' is float32\[1\], expected "
                     r'int64\[1\]. Check seq_length, label_type'):
    sp_loader.SentencePredictionDataLoader(params).load()
  with pytest.raises(ValueError, match=r"feature 'input_ids' is int64\[6\], expected int64\[8\]"):
    sp_loader.SentencePredictionDataLoader(params.replace(seq_length=8,
                                                          label_type='float')).load()
  rows = _sentence_rows(1)
  del rows[0]['segment_ids']
  _write(path, rows)
  with pytest.raises(ValueError, match=rf"{path}: missing feature 'segment_ids'"):
    sp_loader.SentencePredictionDataLoader(params).load()


def test_metadata_is_checked(tmp_path):
  path = tmp_path / 'a.tfrecord'
  _write(path, _sentence_rows(2))
  meta = tmp_path / 'a.metadata.json'
  meta.write_text(json.dumps({'format': sp_loader.FINETUNING_FORMAT, 'task': 'sentence_prediction',
                              'max_seq_length': 8, 'label_type': 'int'}))
  params = sp_loader.SentencePredictionDataConfig(input_path=str(path), seq_length=6)
  with pytest.raises(ValueError, match=r'seq_length is 6 in the config but the records were '
                     r'written with max_seq_length=8'):
    sp_loader.SentencePredictionDataLoader(params).load()
  meta.write_text(json.dumps({'format': 'mlm_garden.pretraining_data'}))
  with pytest.raises(ValueError, match=r"format should be 'mlm_garden.finetuning_data', found "
                     r"'mlm_garden.pretraining_data'"):
    sp_loader.SentencePredictionDataLoader(params).load()
  meta.write_text(json.dumps({'format': sp_loader.FINETUNING_FORMAT, 'task': 'tagging'}))
  with pytest.raises(ValueError, match=r"written for task 'tagging', not 'sentence_prediction'"):
    sp_loader.SentencePredictionDataLoader(params).load()


def test_tagging_loader_maps_ignore_id(tmp_path):
  path = tmp_path / 't.tfrecord'
  labels = [-100, 2, 0, -100, -100, -100]
  _write(path, [{'input_ids': _int([2, 5, 6, 7, 3, 0]), 'input_mask': _int([1] * 5 + [0]),
                 'segment_ids': _int([0] * 6), 'label_ids': _int(labels),
                 'sentence_id': _int([7]), 'sub_sentence_id': _int([1])}])
  params = tagging_dataloader.TaggingDataConfig(
      input_path=str(path), seq_length=6, global_batch_size=1, is_training=False,
      include_sentence_id=True, ignore_label_id=-100)
  features, got = next(iter(tagging_dataloader.TaggingDataLoader(params).load()))
  assert got.numpy().tolist() == [[-1, 2, 0, -1, -1, -1]]
  assert features['sentence_id'].numpy().tolist() == [7]
  assert features['sub_sentence_id'].numpy().tolist() == [1]
  params = params.replace(seq_length=5)
  with pytest.raises(ValueError, match=rf"{path}: feature 'input_ids' is int64\[6\], expected "
                     r'int64\[5\]. Check seq_length'):
    tagging_dataloader.TaggingDataLoader(params).load()


def test_training_pipeline_repeats(tmp_path):
  _write(tmp_path / 'a.tfrecord', _sentence_rows(3))
  params = sp_loader.SentencePredictionDataConfig(
      input_path=str(tmp_path / 'a.tfrecord'), seq_length=6, global_batch_size=2, seed=1)
  batches = list(sp_loader.SentencePredictionDataLoader(params).load().take(5))
  assert len(batches) == 5 and all(b['label_ids'].shape == (2,) for b in batches)


def _bytes(values):
  return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))


@pytest.mark.slow
def test_text_loader_tokenizes_in_the_pipeline(tmp_path):
  pytest.importorskip('tensorflow_text')
  vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'the', 'cat', 'sat', 'play', '##ing']
  (tmp_path / 'vocab.txt').write_text('\n'.join(vocab) + '\n')
  _write(tmp_path / 'raw.tfrecord', [
      {'q': _bytes([b'The cat']), 'a': _bytes([b'playing']), 'label': _int([1]),
       'example_id': _int([4])},
      {'q': _bytes([b'sat']), 'a': _bytes([b'the dog']), 'label': _int([0]),
       'example_id': _int([5])}])
  params = sp_loader.SentencePredictionTextDataConfig(
      input_path=str(tmp_path / 'raw.tfrecord'), text_fields=['q', 'a'], seq_length=8,
      global_batch_size=2, is_training=False, vocab_file=str(tmp_path / 'vocab.txt'),
      include_example_id=True)
  batch = next(iter(sp_loader.SentencePredictionTextDataLoader(params).load()))
  assert sorted(batch) == ['example_id', 'input_mask', 'input_type_ids', 'input_word_ids', 'label']
  ids = {token: i for i, token in enumerate(vocab)}
  expected = [[ids[t] for t in ('[CLS]', 'the', 'cat', '[SEP]', 'play', '##ing', '[SEP]')] + [0],
              [ids[t] for t in ('[CLS]', 'sat', '[SEP]', 'the', '[UNK]', '[SEP]')] + [0, 0]]
  np.testing.assert_array_equal(batch['input_word_ids'], expected)
  np.testing.assert_array_equal(batch['input_type_ids'], [[0] * 4 + [1] * 3 + [0],
                                                          [0] * 3 + [1] * 3 + [0, 0]])
  np.testing.assert_array_equal(batch['input_mask'], [[1] * 7 + [0], [1] * 6 + [0, 0]])
  np.testing.assert_array_equal(batch['label'], [1, 0])
  np.testing.assert_array_equal(batch['example_id'], [4, 5])
  with pytest.raises(ValueError, match=r"missing feature 'text'"):
    sp_loader.SentencePredictionTextDataLoader(params.replace(text_fields=['text'])).load()


def test_text_loader_config_errors(tmp_path):
  params = sp_loader.SentencePredictionTextDataConfig(input_path='x.tfrecord', text_fields=['q'],
                                                      vocab_file='vocab.txt')
  with pytest.raises(ValueError, match=r"tfds_name='glue/mrpc': TFDS input is not supported"):
    sp_loader.SentencePredictionTextDataLoader(sp_loader.SentencePredictionTextDataConfig(
        tfds_name='glue/mrpc', tfds_split='train', text_fields=['q'], vocab_file='vocab.txt'))
  with pytest.raises(ValueError, match=r'text_fields: expected the names of the text features'):
    sp_loader.SentencePredictionTextDataLoader(params.replace(text_fields=None))
  with pytest.raises(ValueError, match=r'vocab_file: expected the WordPiece vocabulary'):
    sp_loader.SentencePredictionTextDataLoader(params.replace(vocab_file=''))
  with pytest.raises(ValueError, match=r'TF Hub preprocessing models are not supported'):
    sp_loader.SentencePredictionTextDataLoader(sp_loader.SentencePredictionTextDataConfig(
        input_path='x.tfrecord', text_fields=['q'], preprocessing_hub_module_url='https://x'))
