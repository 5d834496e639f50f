"""Tests for official/core/file_writers.py."""

import pytest
import tensorflow as tf

from official.core import file_writers
from official.core import tf_example_builder


def _examples(n: int):
  return [tf_example_builder.TfExampleBuilder().add_ints_feature('i', i).example
          for i in range(n)]


@pytest.mark.parametrize('file_type, compression', [('tfrecord', ''), ('TFRecords', ''),
                                                    ('tfrecord_compressed', 'GZIP'),
                                                    ('TFRecords_GZIP', 'GZIP')])
def test_writes_every_example_in_order(tmp_path, file_type, compression):
  path = str(tmp_path / 'data')
  file_writers.write_small_dataset(_examples(3), path, file_type)
  records = tf.data.TFRecordDataset(path, compression_type=compression)
  values = [tf.train.Example.FromString(r.numpy()).features.feature['i'].int64_list.value[0]
            for r in records]
  assert values == [0, 1, 2]


def test_compressed_file_is_gzip(tmp_path):
  path = tmp_path / 'data'
  file_writers.write_small_dataset(_examples(1), str(path), 'tfrecord_compressed')
  assert path.read_bytes()[:2] == b'\x1f\x8b'


def test_unknown_file_type_is_named(tmp_path):
  with pytest.raises(ValueError, match=r"file_type: expected one of .*'riegeli'.*found 'bar'"):
    file_writers.write_small_dataset(_examples(1), str(tmp_path / 'data'), 'bar')
