"""Mixed precision: the Keras global dtype policy from `runtime.mixed_precision_dtype`."""

from typing import Optional

import tf_keras

_POLICIES = {None: 'float32', 'float32': 'float32', 'bfloat16': 'mixed_bfloat16',
             'float16': 'mixed_float16'}


def set_mixed_precision_policy(dtype: Optional[str]) -> None:
  """Sets the global policy: None/'float32', 'bfloat16' (mixed_bfloat16) or 'float16' (mixed_float16).

  Layers built afterwards compute in the low-precision dtype and keep float32 variables.

  Raises:
    ValueError: an unknown dtype.
  """
  if dtype not in _POLICIES:
    raise ValueError(f"runtime.mixed_precision_dtype: expected one of None, 'float32', 'bfloat16', "
                     f"'float16', found {dtype!r}")
  tf_keras.mixed_precision.set_global_policy(_POLICIES[dtype])
