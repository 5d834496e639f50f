"""Tests for official/nlp/data/dual_encoder_dataloader.py ."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import data_loader_factory
from official.nlp.data import dual_encoder_dataloader as de_loader

VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'the', 'cat', 'sat', 'play', '##ing',
         'title']
IDS = {token: i for i, token in enumerate(VOCAB)}


def _bytes(values):
  return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))


def _write(path, rows):
  with tf.io.TFRecordWriter(str(path)) as writer:
    for row in rows:
      writer.write(tf.train.Example(features=tf.train.Features(feature=row)).SerializeToString())


def _params(tmp_path, **kwargs):
  (tmp_path / 'vocab.txt').write_text('\n'.join(VOCAB) + '\n')
  _write(tmp_path / 'pairs.tfrecord', [
      {'left_input': _bytes([b'The cat']), 'right_input': _bytes([b'playing']),
       'title': _bytes([b'title'])},
      {'left_input': _bytes([b'sat']), 'right_input': _bytes([b'the dog']),
       'title': _bytes([b'Title cat'])}])
  defaults = dict(input_path=str(tmp_path / 'pairs.tfrecord'),
                  vocab_file=str(tmp_path / 'vocab.txt'), seq_length=6, global_batch_size=2,
                  is_training=False)
  return de_loader.DualEncoderDataConfig(**{**defaults, **kwargs})


def _ids(*tokens):
  return [IDS[t] for t in tokens]


@pytest.mark.slow
def test_loader_tokenizes_both_sides(tmp_path):
  pytest.importorskip('tensorflow_text')
  params = _params(tmp_path)
  loader = data_loader_factory.get_data_loader(params)
  assert isinstance(loader, de_loader.DualEncoderDataLoader)
  batch = next(iter(loader.load()))
  assert sorted(batch) == ['left_mask', 'left_type_ids', 'left_word_ids', 'right_mask',
                           'right_type_ids', 'right_word_ids']
  np.testing.assert_array_equal(batch['left_word_ids'],
                                [_ids('[CLS]', 'the', 'cat', '[SEP]') + [0, 0],
                                 _ids('[CLS]', 'sat', '[SEP]') + [0, 0, 0]])
  np.testing.assert_array_equal(batch['right_word_ids'],
                                [_ids('[CLS]', 'play', '##ing', '[SEP]') + [0, 0],
                                 _ids('[CLS]', 'the', '[UNK]', '[SEP]') + [0, 0]])
  np.testing.assert_array_equal(batch['left_mask'], [[1] * 4 + [0] * 2, [1] * 3 + [0] * 3])
  np.testing.assert_array_equal(batch['right_type_ids'], np.zeros((2, 6)))
  for value in batch.values():
    assert value.dtype == tf.int32 and value.shape == (2, 6)


@pytest.mark.slow
def test_several_fields_are_packed_as_segments(tmp_path):
  pytest.importorskip('tensorflow_text')
  params = _params(tmp_path, left_text_fields=('title', 'left_input'), seq_length=8)
  batch = next(iter(de_loader.DualEncoderDataLoader(params).load()))
  np.testing.assert_array_equal(batch['left_word_ids'][1],
                                _ids('[CLS]', 'title', 'cat', '[SEP]', 'sat', '[SEP]') + [0, 0])
  np.testing.assert_array_equal(batch['left_type_ids'][1], [0, 0, 0, 0, 1, 1, 0, 0])


def test_missing_field_names_the_file_and_feature(tmp_path):
  params = _params(tmp_path, right_text_fields=('passage',))
  with pytest.raises(ValueError, match=r"pairs.tfrecord: missing feature 'passage'.*Check "
                     'left_text_fields and right_text_fields'):
    de_loader.DualEncoderDataLoader(params).load()


def test_config_errors(tmp_path):
  params = _params(tmp_path)
  with pytest.raises(ValueError, match=r"tfds_name.*'para_crawl/enmt'.*TFDS input is not "
                     'supported'):
    de_loader.DualEncoderDataLoader(params.replace(tfds_name='para_crawl/enmt', input_path=''))
  with pytest.raises(ValueError, match='input_path: expected the TFRecord files'):
    de_loader.DualEncoderDataLoader(params.replace(input_path=''))
  with pytest.raises(ValueError, match='vocab_file: expected the WordPiece vocabulary'):
    de_loader.DualEncoderDataLoader(params.replace(vocab_file=''))
  with pytest.raises(ValueError, match='TF Hub preprocessing models are not supported'):
    de_loader.DualEncoderDataLoader(params.replace(preprocessing_hub_module_url='https://x'))
  with pytest.raises(ValueError, match=r'right_text_fields: expected the names of the text '
                     r'features, found \(\)'):
    de_loader.DualEncoderDataLoader(params.replace(right_text_fields=()))
  with pytest.raises(ValueError, match=r"share \['left_input'\]"):
    de_loader.DualEncoderDataLoader(params.replace(right_text_fields=('left_input',)))


def test_config_defaults_and_yaml_override():
  params = de_loader.DualEncoderDataConfig()
  assert (params.left_text_fields, params.right_text_fields) == (('left_input',), ('right_input',))
  assert (params.global_batch_size, params.seq_length, params.is_training) == (32, 128, True)
  params.override({'left_text_fields': ['query', 'title']})
  assert params.left_text_fields == ('query', 'title')
