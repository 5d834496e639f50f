"""Tests for official/modeling/bfloat16_bits.py: bit-identical to `tf.cast`."""

import numpy as np
import pytest
import tensorflow as tf

from official.modeling import bfloat16_bits


def _float32_from_bits(bits):
  return tf.bitcast(tf.constant(np.array(bits, np.uint32)), tf.float32)


def _edge_values():
  """float32 values whose rounding to bfloat16 is delicate, and random ones."""
  bits = [0x3F808000,  # a tie, lowest kept bit 0: rounds down
          0x3F818000,  # a tie, lowest kept bit 1: rounds up
          0x3F808001, 0x3F807FFF,  # just above and below a tie
          0x00000001, 0x00008000, 0x00018000, 0x807FFFFF,  # subnormals
          0x7F7FFFFF, 0xFF7FFFFF,  # the largest finite: rounds to infinity
          0x7F800000, 0xFF800000, 0x00000000, 0x80000000]  # infinities, zeros
  rng = np.random.default_rng(0)
  random = rng.normal(size=2000).astype(np.float32) * np.exp2(rng.integers(-40, 40, size=2000))
  return tf.concat([_float32_from_bits(bits), tf.constant(random.astype(np.float32))], 0)


@pytest.mark.parametrize('compiled', [False, True])
def test_narrowing_and_widening_are_bit_identical_to_tf_cast(compiled):
  x = _edge_values()
  wrap = (lambda f: tf.function(f, jit_compile=True)) if compiled else (lambda f: f)
  narrow = wrap(bfloat16_bits.to_bfloat16)(x)
  assert narrow.dtype == tf.bfloat16
  np.testing.assert_array_equal(tf.bitcast(narrow, tf.uint16),
                                tf.bitcast(tf.cast(x, tf.bfloat16), tf.uint16))
  widen = wrap(bfloat16_bits.to_float32)(narrow)
  assert widen.dtype == tf.float32
  np.testing.assert_array_equal(tf.bitcast(widen, tf.uint32),
                                tf.bitcast(tf.cast(narrow, tf.float32), tf.uint32))


def test_nan_stays_nan():
  nans = _float32_from_bits([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0xFF800001])
  out = tf.cast(bfloat16_bits.to_bfloat16(nans), tf.float32)
  assert np.isnan(out.numpy()).all()
  np.testing.assert_array_equal(np.signbit(out.numpy()), [False, True, False, False, True])


def test_cast_dispatch():
  x = tf.constant([1.5, -2.25])
  assert bfloat16_bits.cast(x, tf.float32) is x
  assert bfloat16_bits.cast(x, 'bfloat16').dtype == tf.bfloat16
  half = bfloat16_bits.cast(x, tf.float16)
  assert half.dtype == tf.float16
  np.testing.assert_array_equal(bfloat16_bits.cast(half, tf.float32), x)
  np.testing.assert_array_equal(bfloat16_bits.to_float32(tf.constant([3], tf.int32)), [3.0])
