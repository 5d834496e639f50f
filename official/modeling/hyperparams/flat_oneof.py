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
from typing import Any, Dict, Mapping, Optional, Tuple

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

  Members may also come from outside the class: a subclass whose `extra_members()` returns
  `{name: config class}` (looked up at each use, e.g. from a registry filled at run time) takes
  those as it takes its declared ones: by keyword, nested or flat, in dicts, YAML and overrides;
  `get`, `as_dict`, `validate` and `==` see them, and an instance made before a member existed
  gets its default on first access. Such a subclass declares `eq=False` to keep this `==`.

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

  @classmethod
  def extra_members(cls) -> Dict[str, type]:
    """Members beside the declared fields, `{name: config class}`; none here (see the class doc).

    A declared field of the same name wins over an extra member.
    """
    return {}

  @classmethod
  def _extra(cls) -> Dict[str, type]:
    """`extra_members()` without the names of declared fields."""
    declared = base_config._field_types(cls)  # pylint: disable=protected-access
    return {name: member for name, member in cls.extra_members().items()
            if name not in declared}

  @classmethod
  def member_names(cls) -> Tuple[str, ...]:
    """The declared members, then the extra ones."""
    return super().member_names() + tuple(cls._extra())

  def _members(self) -> Dict[str, type]:
    types_ = base_config._field_types(type(self))  # pylint: disable=protected-access
    members = {name: base_config._config_inside(types_[name])  # pylint: disable=protected-access
               for name in super().member_names()}
    members.update(self._extra())
    return members

  def __getattr__(self, key: str) -> Any:
    # Only called when normal lookup fails: an extra member this instance has not set yet.
    member = None if key.startswith('_') else type(self)._extra().get(key)
    if member is None:
      return super().__getattr__(key)
    value = member()
    object.__setattr__(self, key, value)
    return value

  def __setattr__(self, key: str, value: Any) -> None:
    member = None if key.startswith('_') else type(self)._extra().get(key)
    if member is None:
      super().__setattr__(key, value)
      return
    self._check_unlocked()
    if base_config._holds_mappings(value):  # pylint: disable=protected-access
      # As for declared members: a dict meant as the member config becomes one now.
      value = base_config.coerce_value(value, member, key, True, self.__dict__.get(key))
    object.__setattr__(self, key, value)

  def __eq__(self, other: Any) -> bool:
    if type(other) is not type(self):
      return NotImplemented
    names = [f.name for f in dataclasses.fields(self) if f.compare] + list(self._extra())
    return all(getattr(self, name) == getattr(other, name) for name in names)

  def _override(self, overrides: Any, is_strict: bool = True, path: str = '') -> None:
    if isinstance(overrides, params_dict.ParamsDict):  # another config: its exported members
      overrides = overrides.as_dict()
    if isinstance(overrides, Mapping):
      overrides = nest_flat_fields(overrides, self._members(), self.type, path, is_strict)
      extra = type(self)._extra()
      given = {key: overrides[key] for key in overrides if key in extra}
      if given:
        self._override_extra(overrides, given, is_strict, path)
        return
    super()._override(overrides, is_strict, path)

  def _override_extra(self, overrides: Mapping[str, Any], given: Mapping[str, Any],
                      is_strict: bool, path: str) -> None:
    """`_override` of a mapping that sets extra members (`given`): the declared fields through
    the base class (which checks `type`), then the extra members, each coerced to its class."""
    rest = {key: value for key, value in overrides.items() if key not in given}
    members = [key for key in overrides if key in self.member_names()]
    if 'type' not in overrides and self.type is None and len(members) == 1:
      rest['type'] = members[0]  # the one-of rule: a lone member selects itself
    super()._override(rest, is_strict, path)
    extra = type(self)._extra()
    for key, value in given.items():
      object.__setattr__(self, key, base_config.coerce_value(
          value, extra[key], params_dict._join(path, key),  # pylint: disable=protected-access
          is_strict, self.__dict__.get(key)))

  def validate(self) -> None:
    super().validate()
    for name, member in type(self)._extra().items():
      if name not in self.__dict__:
        continue  # never set: the member's defaults
      try:
        value = base_config.coerce_value(self.__dict__[name], member, '', True, None)
        object.__setattr__(self, name, value)
        value.validate()
      except params_dict.ConfigError as e:
        raise e.with_prefix(name) from None
