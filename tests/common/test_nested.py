"""Tests for official/common/nested.py."""

import numpy as np
import pytest

from official.common import nested


def test_flatten_joins_paths_and_keeps_lists_as_leaves():
  tree = {'task': {'model': {'hidden': 8}, 'tags': [1, 2]}, 'empty': {}, 'step': 3}
  assert nested.flatten(tree) == {'task.model.hidden': 8, 'task.tags': [1, 2], 'step': 3}
  assert nested.flatten({'eval': {'loss': 0.5}}, separator='-') == {'eval-loss': 0.5}


def test_get_leaf_nested_dict_names_the_missing_path():
  assert nested.get_leaf_nested_dict({'a': {'b': 1}}, ['a', 'b']) == 1
  with pytest.raises(KeyError, match=r"\['a', 'c'\] \(of \['a', 'c'\]\) is missing"):
    nested.get_leaf_nested_dict({'a': {'b': 1}}, ['a', 'c'])
  with pytest.raises(KeyError, match='is not a leaf'):
    nested.get_leaf_nested_dict({'a': {'b': 1}}, ['a'])


def test_cast_and_scalar_leaves():
  assert nested.cast_leaf_nested_dict({'a': {'b': '1'}, 'c': '2'}, int) == {'a': {'b': 1}, 'c': 2}
  logs = {'loss': np.float32(0.5), 'hist': [1.0, 2.0], 'sub': {'ok': True, 'name': 'x'}}
  assert nested.scalar_leaves(logs) == {'loss': 0.5, 'sub': {'ok': 1.0}}


def test_unflatten_inverts_flatten_and_merges_dotted_with_nested_keys():
  tree = {'task': {'model': {'hidden_size': 256}, 'train_data': {'seq_length': 8}}, 'step': 3}
  assert nested.unflatten(nested.flatten(tree)) == tree
  assert nested.unflatten({'task.model.hidden_size': 256, 'task': {'train_data.seq_length': 8},
                           'step': 3}) == tree
  assert nested.unflatten({'a-b': 1}, separator='-') == {'a': {'b': 1}}
