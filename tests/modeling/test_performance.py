"""Tests for official/modeling/performance.py."""

import pytest
import tensorflow as tf
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


def test_policy_from_a_tf_dtype():
  try:
    performance.set_mixed_precision_policy(tf.bfloat16)
    assert tf_keras.mixed_precision.global_policy().name == 'mixed_bfloat16'
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  with pytest.raises(ValueError, match="found 'int32'"):
    performance.set_mixed_precision_policy(tf.int32)


@pytest.mark.parametrize('loss_scale, dynamic, scale', [(None, True, 2.0**15),
                                                        ('dynamic', True, 2.0**15),
                                                        (128, False, 128.0)])
def test_configure_optimizer_wraps_float16(loss_scale, dynamic, scale):
  sgd = tf_keras.optimizers.SGD(0.1)
  assert performance.configure_optimizer(sgd, use_float16=False, loss_scale=128) is sgd
  wrapped = performance.configure_optimizer(sgd, use_float16=True, loss_scale=loss_scale)
  assert isinstance(wrapped, tf_keras.mixed_precision.LossScaleOptimizer)
  assert wrapped.inner_optimizer is sgd and wrapped.dynamic == dynamic
  assert wrapped.initial_scale == scale


def test_configure_optimizer_names_a_bad_loss_scale():
  with pytest.raises(ValueError, match="loss_scale: .* found 'big'"):
    performance.configure_optimizer(tf_keras.optimizers.SGD(0.1), True, loss_scale='big')
