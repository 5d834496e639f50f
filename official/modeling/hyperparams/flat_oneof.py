"""One-of configs in the flat form how-tos use: the selected member's fields beside `type`.

Model Garden nests a member's fields under its name (`{'type': 'bert', 'bert': {'num_layers': 4}}`).
Popular how-tos write them flat (`{'type': 'bert', 'num_hidden_layers': 4}`), often with Hugging
Face / Google `bert_config.json` names. `nest_flat_fields` rewrites the flat form into the nested
one: a key that is neither `type` nor a member goes into the member `type` selects (or the
config's current one), under its own name or, through the member class's `FIELD_ALIASES`
(`{'num_hidden_layers': 'num_layers', ...}`), under ours. A key that fits no field of that member
is refused with its path. `FlatOneOfConfig` applies it everywhere a one-of is filled: keyword
arguments, a dict (`Config(default_params)`, `from_dict`), YAML and `override`/`--params_override`.

Example:
  >>> nest_flat_fields({'type': 'bert', 'num_hidden_layers': 2}, {'bert': BertEncoderConfig})
  {'type': 'bert', 'bert': {'num_layers': 2}}
  >>> EncoderConfig(hidden_size=128, num_hidden_layers=2).bert.num_layers   # a FlatOneOfConfig
  2
"""

import dataclasses
from typing import Any, Dict, Mapping, Optional

from official.modeling.hyperparams import base_config
from official.modeling.hyperparams import params_dict


def nest_flat_fields(config: Mapping[str, Any], members: Mapping[str, type],
                     default_type: Optional[str] = None, path: str = '',
                     is_strict: bool = True) -> Dict[str, Any]:
  """The nested form of a one-of mapping that may hold its member's fields flat.

  Args:
    config: the mapping (`type`, member names and/or flat member fields).
    members: member name -> its config class (which may define `FIELD_ALIASES`).
    default_type: the member flat fields go to when `config` has no `type`.
    path: the key path of `config`, for errors.
    is_strict: refuse a flat key that fits no field of the member (else leave it as it is).

  Returns:
    A new dict without flat fields (`config` itself, copied, when it has none).

  Raises:
    ConfigKeyError: a flat key fits no field of the member, or names a field twice (by its name
      and by an alias); the message names the key's path and the fields it could be.
    ConfigError: flat fields but no member selected.
  """
  flat = [key for key in config if key != 'type' and key not in members]
  if not flat:
    return dict(config)
  kind = config.get('type') or default_type
  if kind not in members:
    raise params_dict.ConfigError(params_dict._join(path, 'type'), (  # pylint: disable=protected-access
        f'the fields {flat} need a member to go into; expected type one of {sorted(members)}, '
        f'found {kind!r}'))
  member_cls = members[kind]
  aliases = getattr(member_cls, 'FIELD_ALIASES', {})
  fields = [f.name for f in dataclasses.fields(member_cls)] if member_cls else []
  inner = config.get(kind)
  if isinstance(inner, params_dict.ParamsDict):
    inner = inner.as_dict()
  nested = dict(inner or {})
  result = {key: value for key, value in config.items() if key not in flat}
  for key in flat:
    name = aliases.get(key, key)
    key_path = params_dict._join(path, key)  # pylint: disable=protected-access
    if name not in fields:
      if not is_strict:
        result[key] = config[key]
        continue
      known = f'{fields}' + (f' or their Hugging Face / Google names {sorted(aliases)}'
                             if aliases else '')
      raise params_dict.ConfigKeyError(key_path, f'not a field of the {kind!r} member '
                                       f'({getattr(member_cls, "__name__", "a value")}); '
                                       f'expected one of {known}')
    if name in nested:
      raise params_dict.ConfigKeyError(key_path, f'{name!r} of {kind!r} is given twice')
    nested[name] = config[key]
  result[kind] = nested
  return result


class FlatOneOfConfig(base_config.OneOfConfig):
  """A `OneOfConfig` that also takes its selected member's fields flat (`nest_flat_fields`).

  Declare subclasses with `@dataclasses.dataclass(init=False)`: the constructor here takes the
  declared fields by keyword (Model Garden's form) and any member field by keyword beside them.

  Example:
    >>> @dataclasses.dataclass(init=False)
    ... class EncoderConfig(FlatOneOfConfig):
    ...   type: Optional[str] = 'bert'
    ...   bert: BertEncoderConfig = dataclasses.field(default_factory=BertEncoderConfig)
    >>> EncoderConfig(vocab_size=100, num_hidden_layers=2).as_dict()['bert']['num_layers']
    2
  """

  def __init__(self, default_params: Optional[Mapping[str, Any]] = None,
               restrictions: Optional[Any] = None, **kwargs: Any):
    object.__setattr__(self, '_locked', False)
    declared = {f.name: f for f in dataclasses.fields(self)}
    for name, spec in declared.items():
      if name in kwargs:
        value = kwargs[name]
      elif spec.default is not dataclasses.MISSING:
        value = spec.default
      else:
        value = spec.default_factory()
      setattr(self, name, value)
    self.__post_init__(default_params, restrictions)
    flat = {key: value for key, value in kwargs.items() if key not in declared}
    if flat:
      self.override(flat, is_strict=True)

  def _members(self) -> Dict[str, type]:
    types_ = base_config._field_types(type(self))  # pylint: disable=protected-access
    return {name: base_config._config_inside(types_[name])  # pylint: disable=protected-access
            for name in self.member_names()}

  def _override(self, overrides: Any, is_strict: bool = True, path: str = '') -> None:
    if isinstance(overrides, Mapping):
      overrides = nest_flat_fields(overrides, self._members(), self.type, path, is_strict)
    super()._override(overrides, is_strict, path)
