"""Tests for official/modeling/performance.py."""

import pytest
import tf_keras

from official.modeling import performance


@pytest.mark.parametrize('dtype, policy', [(None, 'float32'), ('float32', 'float32'),
                                           ('bfloat16', 'mixed_bfloat16'),
                                           ('float16', 'mixed_float16')])
def test_sets_the_global_policy(dtype, policy):
  try:
    performance.set_mixed_precision_policy(dtype)
    assert tf_keras.mixed_precision.global_policy().name == policy
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')


def test_unknown_dtype_is_named():
  with pytest.raises(ValueError, match="found 'float8'"):
    performance.set_mixed_precision_policy('float8')
