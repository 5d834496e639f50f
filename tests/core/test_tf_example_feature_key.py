"""Tests for official/core/tf_example_feature_key.py."""

import dataclasses

from official.core import tf_example_feature_key


@tf_example_feature_key.dataclass
class _TextKey(tf_example_feature_key.TfExampleFeatureKeyBase):
  text: str = 'text/raw'
  ids: str = 'text/ids'


def test_prefix_goes_before_every_field():
  key = _TextKey('query')
  assert (key.text, key.ids) == ('query/text/raw', 'query/text/ids')
  assert dataclasses.is_dataclass(key)


def test_no_prefix_keeps_the_names_and_leaves_the_class_defaults_alone():
  _TextKey('first')
  for prefix in (None, ''):
    key = _TextKey(prefix)
    assert (key.text, key.ids) == ('text/raw', 'text/ids')
