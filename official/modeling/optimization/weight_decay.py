"""Which variables get weight decay (or layer adaptation): regex search on variable names.

Example:
  >>> matches_any('encoder/layer_0/output_layer_norm/gamma', ['LayerNorm', 'layer_norm', 'bias'])
  True
  >>> use_weight_decay('encoder/layer_0/intermediate/kernel', 0.01, None, ['layer_norm', 'bias'])
  True
"""

import re
from typing import Optional, Sequence

import tensorflow as tf


def variable_name(variable: tf.Variable) -> str:
  """The variable's name without the `:0` suffix, e.g. `dense/kernel`."""
  name = variable.name
  match = re.fullmatch(r'(.*):\d+', name)
  return match.group(1) if match else name


def matches_any(name: str, patterns: Optional[Sequence[str]]) -> bool:
  """Whether any regex in `patterns` is found (`re.search`) in `name`."""
  return any(re.search(p, name) is not None for p in patterns or ())


def use_weight_decay(name: str, rate: float, include: Optional[Sequence[str]],
                     exclude: Optional[Sequence[str]]) -> bool:
  """Model Garden's rule: no decay when rate is 0; `include` matches win over `exclude` matches.

  Args:
    name: the variable name (see `variable_name`).
    rate: the weight decay rate.
    include: regexes of variables always decayed.
    exclude: regexes of variables never decayed (unless included).

  Returns:
    Whether `name` is decayed.
  """
  if not rate:
    return False
  if matches_any(name, include):
    return True
  return not matches_any(name, exclude)
