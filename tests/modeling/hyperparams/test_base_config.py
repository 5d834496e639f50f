"""Tests for official/modeling/hyperparams/base_config.py."""

import dataclasses
import logging
from typing import Dict, List, Optional, Tuple, Union

import pytest
import yaml

from official.modeling import hyperparams


@dataclasses.dataclass
class _Data(hyperparams.Config):
  input_path: Union[str, List[str]] = ''
  global_batch_size: int = hyperparams.field(0, ge=0)
  learning_rate: float = hyperparams.field(0.1, gt=0.0, le=10.0)
  mode: str = hyperparams.field('train', choices=('train', 'eval'))
  is_training: Optional[bool] = None
  tfds_name: str = hyperparams.unsupported('', 'TFDS is not supported')


@dataclasses.dataclass
class _Bert(hyperparams.Config):
  num_layers: int = 12
  hidden_size: int = 768


@dataclasses.dataclass
class _Albert(hyperparams.Config):
  num_layers: int = 12


@dataclasses.dataclass
class _Encoder(hyperparams.OneOfConfig):
  type: Optional[str] = 'bert'
  bert: _Bert = dataclasses.field(default_factory=_Bert)
  albert: _Albert = dataclasses.field(default_factory=_Albert)


@dataclasses.dataclass
class _Optimizer(hyperparams.OneOfConfig):
  type: Optional[str] = None
  bert: _Bert = dataclasses.field(default_factory=_Bert)
  albert: _Albert = dataclasses.field(default_factory=_Albert)


@dataclasses.dataclass
class _Head(hyperparams.Config):
  name: Optional[str] = None
  num_classes: int = 2


@dataclasses.dataclass
class _Task(hyperparams.Config):
  train_data: _Data = dataclasses.field(default_factory=_Data)
  encoder: _Encoder = dataclasses.field(default_factory=_Encoder)
  optimizer: _Optimizer = dataclasses.field(default_factory=_Optimizer)
  cls_heads: List[_Head] = dataclasses.field(default_factory=list)
  extra: Optional[_Bert] = None
  shape: Tuple[int, int] = (1, 2)
  table: Dict[str, float] = dataclasses.field(default_factory=dict)

  def validate(self):
    super().validate()
    names = [h.name for h in self.cls_heads]
    if len(set(names)) != len(names):
      raise hyperparams.ConfigError('cls_heads', f'duplicate head names {names}')


def test_defaults_and_nested_from_dict():
  cfg = _Task.from_dict({'train_data': {'input_path': 'a.tfrecord', 'global_batch_size': 8},
                         'cls_heads': [{'name': 'next_sentence', 'num_classes': 2}],
                         'extra': {'num_layers': 3}, 'shape': [3, 4], 'table': {'a': 1}})
  assert cfg.train_data.global_batch_size == 8
  assert cfg.train_data.learning_rate == 0.1
  assert cfg.cls_heads == [_Head(name='next_sentence', num_classes=2)]
  assert cfg.extra == _Bert(num_layers=3)
  assert cfg.shape == (3, 4)
  assert cfg.table == {'a': 1.0} and isinstance(cfg.table['a'], float)


def test_yaml_round_trip(tmp_path):
  cfg = _Task.from_dict({'train_data': {'input_path': ['x', 'y'], 'learning_rate': '1e-4'},
                         'encoder': {'type': 'albert', 'albert': {'num_layers': 4}},
                         'cls_heads': [{'name': 'nsp'}]})
  path = str(tmp_path / 'sub' / 'params.yaml')
  cfg.to_yaml(path)
  loaded = _Task.from_yaml(path)
  assert loaded == cfg
  assert loaded.as_dict() == cfg.as_dict()
  # A one-of writes its type and the selected member only (as Model Garden does).
  assert yaml.safe_load(open(path))['encoder'] == {'type': 'albert', 'albert': {'num_layers': 4}}


def test_yaml_reads_exponent_strings_as_float():
  # PyYAML reads `1e-4` (no dot) as a string; float fields accept it.
  cfg = _Task.from_dict(yaml.safe_load('train_data: {learning_rate: 1e-4}'))
  assert cfg.train_data.learning_rate == pytest.approx(1e-4)


def test_override_is_in_place_and_keeps_other_fields():
  cfg = _Task.from_dict({'train_data': {'global_batch_size': 8, 'input_path': 'a'}})
  cfg.override({'train_data': {'global_batch_size': 16}})
  assert cfg.train_data.global_batch_size == 16
  assert cfg.train_data.input_path == 'a'


def test_override_with_a_config_instance():
  cfg = _Task()
  cfg.override({'extra': _Bert(num_layers=1)})
  assert cfg.extra.num_layers == 1


def test_unknown_key_names_path_and_valid_keys():
  with pytest.raises(hyperparams.ConfigError) as e:
    _Task.from_dict({'train_data': {'global_batch_sise': 8}})
  message = str(e.value)
  assert message.startswith('train_data.global_batch_sise: unknown key')
  for key in ('input_path', 'global_batch_size', 'learning_rate'):
    assert key in message
  assert e.value.path == 'train_data.global_batch_sise'


def test_non_strict_override_adds_unknown_keys_with_a_warning(caplog):
  cfg = _Task()
  cfg.override({'train_data': {'nope': 1, 'global_batch_size': 4}}, is_strict=False)
  assert cfg.train_data.global_batch_size == 4
  assert cfg.train_data.nope == 1
  assert cfg.as_dict()['train_data']['nope'] == 1
  assert 'train_data.nope' in caplog.text


@pytest.mark.parametrize('overrides, path, expected, found', [
    ({'train_data': {'global_batch_size': 'abc'}}, 'train_data.global_batch_size', 'expected int',
     "'abc' (str)"),
    ({'train_data': {'global_batch_size': 2.5}}, 'train_data.global_batch_size', 'expected int',
     '2.5 (float)'),
    ({'train_data': {'global_batch_size': True}}, 'train_data.global_batch_size', 'expected int',
     'True (bool)'),
    ({'train_data': {'is_training': 'yes'}}, 'train_data.is_training', 'expected bool',
     "'yes' (str)"),
    ({'train_data': {'input_path': 3}}, 'train_data.input_path', 'expected Union[str, List[str]]',
     '3 (int)'),
    ({'cls_heads': [{'num_classes': 'x'}]}, 'cls_heads[0].num_classes', 'expected int', "'x'"),
    ({'cls_heads': {'name': 'x'}}, 'cls_heads', 'expected a list', 'dict'),
    ({'train_data': 5}, 'train_data', 'expected a mapping for _Data', '5 (int)'),
    ({'shape': [1, 2, 3]}, 'shape', 'expected 2 items', 'found 3'),
    ({'extra': {'num_layerz': 1}}, 'extra.num_layerz', 'unknown key', 'num_layers'),
    ({'train_data': {'global_batch_size': None}}, 'train_data.global_batch_size', 'expected int',
     'not Optional'),
])
def test_wrong_type_errors(overrides, path, expected, found):
  with pytest.raises(hyperparams.ConfigError) as e:
    _Task.from_dict(overrides)
  assert e.value.path == path
  assert expected in str(e.value)
  assert found in str(e.value)


@pytest.mark.parametrize('overrides, path, message', [
    ({'train_data': {'global_batch_size': -1}}, 'train_data.global_batch_size', 'must be >= 0'),
    ({'train_data': {'learning_rate': 0}}, 'train_data.learning_rate', 'must be > 0.0'),
    ({'train_data': {'learning_rate': 11}}, 'train_data.learning_rate', 'must be <= 10.0'),
    ({'train_data': {'mode': 'predict'}}, 'train_data.mode', "expected one of ['train', 'eval']"),
])
def test_out_of_range_values_fail_on_override(overrides, path, message):
  with pytest.raises(hyperparams.ConfigError) as e:
    _Task.from_dict(overrides)
  assert e.value.path == path
  assert message in str(e.value)


def test_validate_checks_values_set_as_attributes():
  cfg = _Task()
  cfg.train_data.global_batch_size = -4
  with pytest.raises(hyperparams.ConfigError, match=r'train_data.global_batch_size: must be >= 0'):
    cfg.validate()
  cfg.train_data.global_batch_size = 'x'
  with pytest.raises(hyperparams.ConfigError, match=r"train_data.global_batch_size: expected int"):
    cfg.validate()


def test_validate_coerces_integral_floats():
  cfg = _Task()
  cfg.train_data.global_batch_size = 32.0
  cfg.validate()
  assert (cfg.train_data.global_batch_size == 32
          and isinstance(cfg.train_data.global_batch_size, int))


def test_unsupported_field_parses_at_default_and_fails_otherwise():
  cfg = _Task.from_dict({'train_data': {'tfds_name': ''}})
  cfg.validate()
  expected = ("train_data.tfds_name: is set to 'glue/mrpc', but TFDS is not supported; "
              "leave it at its default ''")
  with pytest.raises(hyperparams.ConfigError) as e:
    _Task.from_dict({'train_data': {'tfds_name': 'glue/mrpc'}})
  assert str(e.value) == expected
  cfg.train_data.tfds_name = 'glue/mrpc'
  with pytest.raises(hyperparams.ConfigError) as e:
    cfg.validate()
  assert str(e.value) == expected


def test_custom_validate_gets_path_prefix():
  @dataclasses.dataclass
  class Outer(hyperparams.Config):
    task: _Task = dataclasses.field(default_factory=_Task)
  cfg = Outer.from_dict({'task': {'cls_heads': [{'name': 'a'}, {'name': 'a'}]}})
  with pytest.raises(hyperparams.ConfigError, match=r"^task.cls_heads: duplicate head names"):
    cfg.validate()


def test_replace_returns_validated_copy():
  cfg = _Task()
  new = cfg.replace(train_data={'global_batch_size': 7})
  assert new.train_data.global_batch_size == 7
  assert cfg.train_data.global_batch_size == 0
  with pytest.raises(hyperparams.ConfigError, match='unknown key'):
    cfg.replace(nope=1)


def test_one_of_selects_member_and_infers_type():
  cfg = _Task.from_dict({'encoder': {'type': 'albert', 'albert': {'num_layers': 2}}})
  assert cfg.encoder.get() == _Albert(num_layers=2)
  # Without `type`, one named member is selected when no type is set yet.
  cfg = _Task.from_dict({'optimizer': {'albert': {'num_layers': 3}}})
  assert cfg.optimizer.type == 'albert'
  assert cfg.optimizer.get().num_layers == 3
  # A type already selected is kept: overriding another member's fields does not switch it.
  cfg = _Task.from_dict({'encoder': {'albert': {'num_layers': 3}}})
  assert cfg.encoder.type == 'bert'
  assert _Task().optimizer.get() is None
  assert _Encoder.member_names() == ('bert', 'albert')


def test_one_of_unknown_type_lists_members():
  with pytest.raises(hyperparams.ConfigError) as e:
    _Task.from_dict({'encoder': {'type': 'roberta'}})
  assert str(e.value) == "encoder.type: 'roberta' is not one of ['bert', 'albert'] for _Encoder"
  cfg = _Task()
  cfg.encoder.type = 'gpt'
  with pytest.raises(hyperparams.ConfigError, match=r'^encoder.type:'):
    cfg.validate()


def test_from_yaml_errors_name_the_file(tmp_path):
  with pytest.raises(FileNotFoundError, match='missing.yaml'):
    _Task.from_yaml(str(tmp_path / 'missing.yaml'))
  bad = tmp_path / 'bad.yaml'
  bad.write_text('train_data: [unclosed\n')
  with pytest.raises(hyperparams.ConfigError, match='bad.yaml: invalid YAML'):
    _Task.from_yaml(str(bad))
  scalar = tmp_path / 'scalar.yaml'
  scalar.write_text('3\n')
  with pytest.raises(hyperparams.ConfigError, match='scalar.yaml: expected a YAML mapping'):
    _Task.from_yaml(str(scalar))
  empty = tmp_path / 'empty.yaml'
  empty.write_text('')
  assert _Task.from_yaml(str(empty)) == _Task()


# Model Garden compatibility: positional dicts, schema-less configs, restrictions, locking, bind.


def test_positional_default_params_are_lenient_and_from_dict_is_strict(caplog):
  cfg = _Task({'train_data': {'global_batch_size': 8}, 'encoder': {'type': 'albert'}})
  assert cfg.train_data.global_batch_size == 8
  assert cfg.encoder.type == 'albert'
  # As Model Garden's constructor: an undeclared key is kept (nothing reads it), logged once.
  with caplog.at_level(logging.WARNING):
    for _ in range(2):
      cfg = _Task({'train_data': {'global_batch_size': 8, 'global_batch_sise': 4}})
  assert cfg.train_data.global_batch_sise == 4 and cfg.train_data.global_batch_size == 8
  warnings = [r.getMessage() for r in caplog.records if 'global_batch_sise' in r.getMessage()]
  assert (len(warnings) == 1
          and 'train_data.global_batch_sise is not one of its fields' in warnings[0])
  with pytest.raises(hyperparams.ConfigError) as e:
    _Task.from_dict({'train_data': {'global_batch_sise': 8}})
  assert e.value.path == 'train_data.global_batch_sise'
  assert isinstance(e.value, KeyError)  # Model Garden raises KeyError for unknown keys.
  assert "The key 'global_batch_sise' does not exist" in str(e.value)
  with pytest.raises(TypeError, match='pass fields by keyword'):
    _Head('next_sentence', 2)


def test_schemaless_config_holds_nested_values_and_round_trips():
  cfg = hyperparams.Config(
      {'a': 1, 'b': {'c': [1, 2]}, 'heads': [{'n': 1}, {'n': 2}], 't': (1, 'x')})
  assert cfg.a == 1 and cfg.b.c == [1, 2]
  assert type(cfg.b) is hyperparams.Config and type(cfg.heads[1]) is hyperparams.Config
  assert cfg.as_dict() == {'a': 1, 'b': {'c': [1, 2]}, 'heads': [{'n': 1}, {'n': 2}], 't': (1, 'x')}
  cfg.override({'heads': [{'n': 3}, {'n': 4}]})
  assert [h.n for h in cfg.heads] == [3, 4]
  with pytest.raises(KeyError, match="The key 'm' does not exist"):
    cfg.override({'heads': [{'m': 3}, {'m': 4}]})
  cfg.override({'a': {'x': 1}}, is_strict=False)
  assert cfg.a.x == 1
  with pytest.raises(TypeError, match='Unknown type'):
    hyperparams.Config({'f': set()})
  with pytest.raises(TypeError, match='Invalid sequence') as e:
    hyperparams.Config({'nested': [[1, 2]]})
  assert e.value.path == 'nested'


def test_reserved_keys_and_lock():
  cfg = _Task()
  with pytest.raises(KeyError, match='internally reserved'):
    cfg.override({'_locked': True})
  cfg.lock()
  with pytest.raises(ValueError, match='locked'):
    cfg.override({'train_data': {'global_batch_size': 2}})
  with pytest.raises(ValueError, match='locked'):
    cfg.shape = (3, 4)
  unlocked = cfg.replace(shape=[5, 6])
  assert unlocked.shape == (5, 6)
  unlocked.shape = (7, 8)


def test_restrictions_are_checked_by_validate():
  cfg = _Task(restrictions=['train_data.global_batch_size <= extra.num_layers'],
              extra=_Bert(num_layers=4))
  cfg.validate()
  cfg.override({'train_data': {'global_batch_size': 5}})
  with pytest.raises(KeyError, match='Found inconsistency'):
    cfg.validate()
  with pytest.raises(KeyError, match='does not exist'):
    _Task(restrictions=['nope == 1']).validate()


def test_bind_sets_builder_once():
  @dataclasses.dataclass
  class _Bound(hyperparams.Config):
    size: int = 1

  @hyperparams.bind(_Bound)
  def build(config):
    return config.size * 2

  cfg = _Bound(size=3)
  assert cfg.BUILDER(cfg) == 6
  with pytest.raises(ValueError, match='not bind a config class twice'):
    hyperparams.bind(_Bound)(build)
  with pytest.raises(AttributeError, match='`BUILDER` is a property'):
    cfg.BUILDER = build


@dataclasses.dataclass
class _Modern(hyperparams.Config):
  leaf: _Bert | None = None
  leaves: tuple[_Bert | None, ...] = ()
  names: Tuple[str] = ('a',)
  heads: List[_Bert] = dataclasses.field(default_factory=lambda: [_Bert(), _Albert()])


def test_pep604_unions_single_type_tuples_and_listed_subclasses():
  cfg = _Modern().replace(leaf={'num_layers': 2}, leaves=[{'hidden_size': 8}, None],
                          names=['a', 'b', 'c'])
  assert cfg.leaf == _Bert(num_layers=2)
  assert cfg.leaves == (_Bert(hidden_size=8), None)
  assert cfg.names == ('a', 'b', 'c')
  # Same length: items are updated in place and keep their class; another length rebuilds them.
  cfg.override({'heads': [{'num_layers': 1}, {'num_layers': 2}]})
  assert cfg.heads == [_Bert(num_layers=1), _Albert(num_layers=2)]
  cfg.override({'heads': [{'hidden_size': 4}]})
  assert cfg.heads == [_Bert(hidden_size=4)]


def test_deleted_field_is_left_out_of_as_dict():
  head = _Head()
  del head.num_classes
  assert head.as_dict() == {'name': None}
  assert 'num_classes' not in head and 'name' in head


def test_repr_shows_schemaless_keys_and_dataclass_fields():
  assert repr(hyperparams.Config({'a': 1, 'b': {'c': [1]}})) == 'Config(a=1, b=Config(c=[1]))'
  assert repr(_Head(name='x')) == "_Head(name='x', num_classes=2)"


def test_schemaless_configs_compare_by_their_keys():
  assert hyperparams.Config({'a': 1}) == hyperparams.Config({'a': 1})
  assert hyperparams.Config({'a': 1}) != hyperparams.Config({'a': 2})
  assert _Head(name='x') == _Head(name='x') and _Head(name='x') != _Head(name='y')
