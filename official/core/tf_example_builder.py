"""`TfExampleBuilder`: builds a `tf.train.Example` one feature at a time (Model Garden's API).

Each `add_*` method returns the builder, so calls chain; `example` is the proto built so far and
`serialized_example` its bytes, ready for a TFRecord writer (`file_writers.write_small_dataset`).

Example:
  >>> example = (TfExampleBuilder()
  ...            .add_bytes_feature('text', 'the cat sat')
  ...            .add_ints_feature('input_ids', [101, 1996, 4937, 102])
  ...            .add_floats_feature('weight', 0.5)
  ...            .example)
  >>> example.features.feature['input_ids'].int64_list.value
  [101, 1996, 4937, 102]
"""

from __future__ import annotations

from typing import Any, List, Mapping, Sequence, Union

import numpy as np
import tensorflow as tf

BytesValueType = Union[bytes, str, Sequence[bytes], Sequence[str]]


def _as_list(value: Any) -> List[Any]:
  """`value` as a list of values: a scalar becomes a one-element list."""
  if isinstance(value, np.ndarray):
    return value.reshape(-1).tolist()
  if isinstance(value, (list, tuple)):
    return list(value)
  return [value]


def _as_bytes(value: Union[bytes, str]) -> bytes:
  if isinstance(value, str):
    return value.encode('utf-8')
  if isinstance(value, bytes):
    return value
  raise TypeError(f'bytes feature: expected bytes or str values, found {type(value).__name__} '
                  f'({value!r})')


class TfExampleBuilder:
  """Builds one `tf.train.Example`; every `add_*` method returns the builder (calls chain).

  A feature added under a key that already exists replaces it.

  Example:
    >>> builder = TfExampleBuilder().add_ints_feature('label', 1)
    >>> builder.serialized_example   # b'\\n\\x0e\\n\\x0c\\n\\x05label...'
  """

  def __init__(self) -> None:
    self._example = tf.train.Example()

  @property
  def example(self) -> tf.train.Example:
    """The example built so far (the builder's own proto, not a copy)."""
    return self._example

  @property
  def serialized_example(self) -> bytes:
    """The example built so far, serialized."""
    return self._example.SerializeToString()

  def set(self, example: tf.train.Example) -> TfExampleBuilder:
    """Continues from `example` (used as is, not copied)."""
    self._example = example
    return self

  def reset(self) -> TfExampleBuilder:
    """Starts over from an empty example."""
    self._example = tf.train.Example()
    return self

  def add_feature_dict(self, feature_dict: Mapping[str, tf.train.Feature]) -> TfExampleBuilder:
    """Adds every `key: tf.train.Feature` of `feature_dict`."""
    for key, feature in feature_dict.items():
      self.add_feature(key, feature)
    return self

  def add_feature(self, key: str, feature: tf.train.Feature) -> TfExampleBuilder:
    """Adds (a copy of) `feature` under `key`."""
    self._example.features.feature[key].CopyFrom(feature)
    return self

  def add_bytes_feature(self, key: str, value: BytesValueType) -> TfExampleBuilder:
    """Adds one or more byte strings under `key`; `str` values are UTF-8 encoded.

    Raises:
      TypeError: a value is neither bytes nor str.
    """
    values = [_as_bytes(v) for v in _as_list(value)]
    return self.add_feature(key, tf.train.Feature(bytes_list=tf.train.BytesList(value=values)))

  def add_ints_feature(self, key: str, value: Union[int, Sequence[int]]) -> TfExampleBuilder:
    """Adds one or more integers (an `Int64List`) under `key`."""
    return self.add_feature(
        key, tf.train.Feature(int64_list=tf.train.Int64List(value=_as_list(value))))

  def add_floats_feature(self, key: str, value: Union[float, Sequence[float]]) -> TfExampleBuilder:
    """Adds one or more floats (a `FloatList`, float32) under `key`."""
    return self.add_feature(
        key, tf.train.Feature(float_list=tf.train.FloatList(value=_as_list(value))))
