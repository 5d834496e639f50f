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


@pytest.mark.parametrize('flags, resolved', [('avx2', 'float32'), ('avx2,avx512f', 'float32'),
                                             ('avx2,avx512f,avx512_bf16', 'bfloat16'),
                                             ('avx2,amx_bf16,amx_tile', 'bfloat16')])
def test_auto_is_bfloat16_only_on_cpus_with_bfloat16_units(monkeypatch, flags, resolved):
  monkeypatch.setenv('MLM_CPU_FLAGS', flags)
  assert performance.resolve_mixed_precision_dtype('auto') == resolved
  assert performance.resolve_mixed_precision_dtype('float16') == 'float16'  # others unchanged
  assert performance.resolve_mixed_precision_dtype(None) is None
  try:
    policy = performance.set_mixed_precision_policy('auto')
    assert policy == tf_keras.mixed_precision.global_policy().name
    assert policy == ('mixed_bfloat16' if resolved == 'bfloat16' else 'float32')
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')


def test_bfloat16_on_a_cpu_that_emulates_it_has_a_one_line_warning(monkeypatch):
  monkeypatch.setenv('MLM_CPU_FLAGS', 'avx2')
  message = performance.emulated_bfloat16_warning('bfloat16')
  assert message.startswith('bfloat16 on ') and '[flags from MLM_CPU_FLAGS] (avx2; no ' in message
  assert 'no bfloat16 units' in message and '\n' not in message
  assert performance.emulated_bfloat16_warning('float32') is None
  assert performance.emulated_bfloat16_warning('auto') is None  # auto picks float32 there
  monkeypatch.setenv('MLM_CPU_FLAGS', 'avx2,avx512f,avx512_bf16')
  assert performance.emulated_bfloat16_warning('bfloat16') is None


def test_runtime_config_accepts_auto():
  from official.core import config_definitions  # pylint: disable=g-import-not-at-top
  from official.modeling import hyperparams  # pylint: disable=g-import-not-at-top
  runtime = config_definitions.RuntimeConfig(mixed_precision_dtype='auto')
  runtime.validate()
  with pytest.raises(hyperparams.ConfigError, match='mixed_precision_dtype'):
    config_definitions.RuntimeConfig(mixed_precision_dtype='bf16').validate()


def test_auto_on_the_cpu_this_process_reports():
  """Under `.ci/run`'s AVX2 leg (MLM_CPU_FLAGS=avx2) float32; uncapped on a CPU with bfloat16
  units, bfloat16."""
  from official.utils.misc import cpu_info  # pylint: disable=g-import-not-at-top
  flags = cpu_info.read_cpu_info().flags
  native = flags.get('avx512_bf16') or flags.get('amx_bf16')
  assert performance.resolve_mixed_precision_dtype('auto') == (
      'bfloat16' if native else 'float32')
