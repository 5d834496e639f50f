"""Tests for official/modeling/hyperparams/params_dict.py."""

import dataclasses
from typing import List

import pytest

from official.modeling import hyperparams


@dataclasses.dataclass
class _Data(hyperparams.Config):
  input_path: str = ''
  global_batch_size: int = 0
  weights: List[float] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Params(hyperparams.Config):
  train_data: _Data = dataclasses.field(default_factory=_Data)
  train_steps: int = 0
  learning_rate: float = 0.1


def test_parse_override_string_nests_keys_and_reads_values_as_yaml():
  parsed = hyperparams.parse_override_string(
      'train_data.global_batch_size=64, train_steps=10,train_data.input_path="a,b*",'
      'train_data.weights=[0.5, 1.5],learning_rate=1e-4')
  assert parsed == {'train_data': {'global_batch_size': 64, 'input_path': 'a,b*',
                                   'weights': [0.5, 1.5]},
                    'train_steps': 10, 'learning_rate': 1e-4}


@pytest.mark.parametrize('text, message', [
    ('train_steps', 'expected key.path=value'),
    ('=3', 'expected key.path=value'),
    ('a..b=3', 'expected key.path=value'),
    ('a=[1,2', 'unbalanced'),
    ('a.b=1,a=2', 'given both a value and sub-keys'),
    ('a=1,a.b=2', 'given both a value and sub-keys'),
])
def test_parse_override_string_errors(text, message):
  with pytest.raises(hyperparams.ConfigError, match=message):
    hyperparams.parse_override_string(text)


def test_override_params_dict_accepts_every_form(tmp_path):
  params = _Params()
  hyperparams.override_params_dict(params, 'train_data.global_batch_size=64,train_steps=10', True)
  assert (params.train_data.global_batch_size, params.train_steps) == (64, 10)
  hyperparams.override_params_dict(params, '{"train_steps": 11}', True)
  assert params.train_steps == 11
  hyperparams.override_params_dict(params, 'train_data:\n  input_path: x\n', True)
  assert params.train_data.input_path == 'x'
  path = tmp_path / 'override.yaml'
  path.write_text('train_steps: 12\nlearning_rate: 1e-3\n')
  hyperparams.override_params_dict(params, str(path), True)
  assert params.train_steps == 12 and params.learning_rate == pytest.approx(1e-3)
  hyperparams.override_params_dict(params, {'train_steps': 13}, True)
  hyperparams.override_params_dict(params, '', True)
  hyperparams.override_params_dict(params, None, True)
  assert params.train_steps == 13


def test_override_params_dict_strict_errors_name_the_path():
  with pytest.raises(hyperparams.ConfigError, match=r'^train_data.global_batch_size: expected int'):
    hyperparams.override_params_dict(_Params(), 'train_data.global_batch_size=abc', True)
  with pytest.raises(hyperparams.ConfigError, match=r'^train_data.batch: unknown key'):
    hyperparams.override_params_dict(_Params(), 'train_data.batch=3', True)


def test_missing_yaml_file_is_reported():
  with pytest.raises(FileNotFoundError, match='nope.yaml'):
    hyperparams.override_params_dict(_Params(), 'nope.yaml', True)


def test_save_and_read_round_trip(tmp_path):
  params = _Params.from_dict({'train_steps': 5, 'train_data': {'weights': [1.0]}})
  path = str(tmp_path / 'params.yaml')
  hyperparams.save_params_dict_to_yaml(params, path)
  assert hyperparams.read_yaml_to_params_dict(path) == params.as_dict()
  assert _Params.from_yaml(path) == params


def test_yaml_1_1_booleans_stay_strings():
  parsed = hyperparams.parse_override_string('a=off,b=on,c=yes,d=no,e=true,f=False')
  assert parsed == {'a': 'off', 'b': 'on', 'c': 'yes', 'd': 'no', 'e': True, 'f': False}


def test_params_dict_attribute_access_strictness_and_lock():
  params = hyperparams.ParamsDict({'a': 1, 'b': {'c': 2}}, restrictions=['a < b.c'])
  assert params.b.c == 2 and 'a' in params and params.get('z', 5) == 5
  params.validate()
  with pytest.raises(KeyError, match="The key 'z' does not exist"):
    params.z = 1
  with pytest.raises(KeyError):
    params.override({'b': {'d': 1}})
  params.override({'b': {'d': 1}}, is_strict=False)
  assert params.as_dict() == {'a': 1, 'b': {'c': 2, 'd': 1}}
  params.override({'a': 3})
  with pytest.raises(KeyError, match='Found inconsistency'):
    params.validate()
  params.lock()
  with pytest.raises(ValueError, match='locked'):
    params.a = 0
  with pytest.raises(ValueError, match='locked'):
    del params.b


@pytest.mark.parametrize('csv, expected', [
    ('a=1,b.b1=2', '{a : 1, b : {b1 : 2}}'),
    ('a = 1, b = x', '{a : 1, b : x}'),
    ('a.b[1]=2.5,a.b[0]=1', '{a : {b : [1, 2.5]}}'),
    ("p=gs://bucket/x, q='y, z'", "{p : 'gs://bucket/x', q : 'y, z'}"),
    ('', ''),
])
def test_nested_csv_str_to_json_str(csv, expected):
  assert hyperparams.nested_csv_str_to_json_str(csv) == expected


@pytest.mark.parametrize('csv', ['a[0]=1,a[2]=3', 'a=[[1],[2]]', '1a=3', 'a'])
def test_nested_csv_str_to_json_str_errors(csv):
  with pytest.raises(ValueError):
    hyperparams.nested_csv_str_to_json_str(csv)


def test_override_params_dict_on_a_params_dict_reads_exponent_floats():
  params = hyperparams.ParamsDict({'a': 1, 'b': {'c': 'x'}})
  hyperparams.override_params_dict(params, 'a=1e+3, b.c=-1.5E-3', is_strict=True)
  assert params.a == 1000.0 and params.b.c == -1.5e-3
