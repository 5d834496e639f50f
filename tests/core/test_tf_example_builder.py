"""Tests for official/core/tf_example_builder.py."""

import numpy as np
import pytest
import tensorflow as tf

from official.core import tf_example_builder


def _parse(serialized: bytes) -> dict:
  spec = {'text': tf.io.VarLenFeature(tf.string), 'ids': tf.io.VarLenFeature(tf.int64),
          'weight': tf.io.VarLenFeature(tf.float32)}
  return {k: tf.sparse.to_dense(v).numpy() for k, v in tf.io.parse_single_example(
      serialized, spec).items()}


def test_chained_features_round_trip_through_tensorflow_parsing():
  builder = (tf_example_builder.TfExampleBuilder()
             .add_bytes_feature('text', ['the cat', b'sat'])
             .add_ints_feature('ids', np.array([[101, 7], [8, 102]]))
             .add_floats_feature('weight', 0.25))
  parsed = _parse(builder.serialized_example)
  assert parsed['text'].tolist() == [b'the cat', b'sat']
  assert parsed['ids'].tolist() == [101, 7, 8, 102]  # a numpy array is flattened
  np.testing.assert_allclose(parsed['weight'], [0.25])


def test_a_key_added_twice_keeps_the_last_feature():
  builder = tf_example_builder.TfExampleBuilder().add_ints_feature('ids', [1, 2])
  builder.add_feature_dict({'ids': tf.train.Feature(int64_list=tf.train.Int64List(value=[3])),
                            'label': tf.train.Feature(int64_list=tf.train.Int64List(value=[0]))})
  features = builder.example.features.feature
  assert list(features['ids'].int64_list.value) == [3]
  assert sorted(features) == ['ids', 'label']


def test_set_and_reset():
  example = tf_example_builder.TfExampleBuilder().add_ints_feature('a', 1).example
  builder = tf_example_builder.TfExampleBuilder().set(example).add_ints_feature('b', 2)
  assert sorted(builder.example.features.feature) == ['a', 'b']
  assert builder.reset().serialized_example == b''


def test_bad_bytes_value_is_named():
  with pytest.raises(TypeError, match=r"expected bytes or str values, found int \(3\)"):
    tf_example_builder.TfExampleBuilder().add_bytes_feature('text', ['ok', 3])
