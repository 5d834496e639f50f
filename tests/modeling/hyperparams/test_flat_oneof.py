"""Tests for official/modeling/hyperparams/flat_oneof.py with a toy one-of."""

import dataclasses
from typing import ClassVar, Dict, Optional

import pytest

from official.modeling import hyperparams


@dataclasses.dataclass
class Small(hyperparams.Config):
  FIELD_ALIASES: ClassVar[Dict[str, str]] = {'n_layers': 'layers'}
  layers: int = 2
  width: int = 8


@dataclasses.dataclass
class Other(hyperparams.Config):
  depth: int = 1


@dataclasses.dataclass(init=False)
class Choice(hyperparams.FlatOneOfConfig):
  type: Optional[str] = 'small'
  small: Small = dataclasses.field(default_factory=Small)
  other: Other = dataclasses.field(default_factory=Other)


def test_nest_flat_fields_routes_into_the_selected_member():
  members = {'small': Small, 'other': Other}
  assert hyperparams.nest_flat_fields({'type': 'small', 'n_layers': 4, 'width': 3}, members) == {
      'type': 'small', 'small': {'layers': 4, 'width': 3}}
  assert hyperparams.nest_flat_fields({'depth': 5}, members, default_type='other') == {
      'other': {'depth': 5}}
  nested = {'type': 'small', 'small': {'width': 1}}
  assert hyperparams.nest_flat_fields(nested, members) == nested      # nothing flat: unchanged
  # Not strict: an unknown key stays where it was (for the caller's own non-strict handling).
  assert hyperparams.nest_flat_fields({'type': 'other', 'extra': 1}, members, is_strict=False) == {
      'type': 'other', 'extra': 1, 'other': {}}


def test_constructor_takes_declared_and_flat_keywords():
  assert Choice().as_dict() == {'type': 'small', 'small': {'layers': 2, 'width': 8}}
  assert Choice(n_layers=5).small.layers == 5
  assert Choice(type='other', depth=3).as_dict() == {'type': 'other', 'other': {'depth': 3}}
  assert Choice(small=Small(width=2), layers=7).small == Small(layers=7, width=2)
  assert Choice({'type': 'small', 'width': 4}).small.width == 4       # default_params
  with pytest.raises(hyperparams.ConfigKeyError, match=r"^depth: not a field of the 'small'"):
    Choice(depth=2)                                                    # a field of another member
  with pytest.raises(hyperparams.ConfigKeyError, match="^width: 'width' of 'small' is given twice"):
    Choice({'small': {'width': 1}, 'width': 2})


def test_override_routes_flat_keys_and_keeps_copies_working():
  choice = Choice()
  choice.override({'n_layers': 9})
  assert choice.small.layers == 9
  assert choice.replace(width=1).small.width == 1
  choice.lock()
  with pytest.raises(ValueError):
    choice.override({'width': 3})
