"""Matmuls, einsums and column sums of bfloat16 data that add in float32 on every CPU.

How TensorFlow 2.21 sums bfloat16 products on a CPU depends on the kernel it picks:

- oneDNN (oneDNN on, the default on x86 Linux, and a CPU with AVX-512 or AVX-NE-CONVERT, which
  TensorFlow checks with `cpuid`): `tf.matmul` and `tf.einsum` accumulate in float32 and round the
  result to nearest once.
- Eigen (a CPU with AVX2 only, or `TF_ENABLE_ONEDNN_OPTS=0`): `tf.matmul` accumulates in float32
  but truncates the result (up to one bfloat16 step, always toward zero), and `tf.einsum`
  accumulates in bfloat16: 4,096 terms of 0.01 sum to 16, not 41.

`einsum`, `matmul` and `column_sums` below give the first behaviour on both paths: where the
kernels are Eigen's they compute in float32 and round once (`tf.cast`, to nearest even), so their
bfloat16 results differ between CPUs only by the order of float32 additions. On the oneDNN path
they are TensorFlow's ops unchanged. float32 inputs are never touched. On a GPU (cuBLAS, float32
accumulation) TensorFlow's ops run unchanged too. XLA-compiled code (`jit_compile`) converts
bfloat16 dots to float32 itself; there the casts are harmless.

`tests/modeling/test_bfloat16_sums.py` checks both contracts on the path the process has; `.ci/run`
runs it again with oneDNN off, which is the path of an AVX2-only CPU.

Example:
  >>> x = tf.fill([1, 4096], tf.constant(0.01, tf.bfloat16))
  >>> float(einsum('ik,kj->ij', x, tf.ones([4096, 1], tf.bfloat16))[0, 0])
  41.0
"""

import functools
import os

import tensorflow as tf

from official.utils.misc import cpu_info


@functools.lru_cache(maxsize=None)
def tensorflow_sums_bfloat16_in_float32() -> bool:
  """Whether this process's bfloat16 `tf.matmul`/`tf.einsum` add in float32 and round once.

  True with a GPU, or on a CPU where TensorFlow runs bfloat16 on oneDNN (oneDNN on and, by
  `cpuid`, AVX-512 or AVX-NE-CONVERT); False where it runs Eigen's kernels (see the module's
  docstring). Read from TensorFlow itself when it tells (its private `_pywrap_util_port` and
  `_pywrap_utils`), else from `TF_ENABLE_ONEDNN_OPTS` and `/proc/cpuinfo`.

  Example:
    >>> tensorflow_sums_bfloat16_in_float32()  # a Zen 4 EPYC; False on a Zen 3 one
    True
  """
  if tf.config.list_physical_devices('GPU'):
    return True
  try:
    from tensorflow.python.util import _pywrap_util_port  # pylint: disable=g-import-not-at-top  # Function-level: TensorFlow's private API, read once, with a fallback
    from tensorflow.python.util import _pywrap_utils  # pylint: disable=g-import-not-at-top  # Function-level: as above
    return bool(_pywrap_util_port.IsMklEnabled() and
                _pywrap_utils.IsDataTypeSupportedByOneDNNOnThisCPU(tf.bfloat16.as_datatype_enum))
  except (ImportError, AttributeError, TypeError):
    onednn = os.environ.get('TF_ENABLE_ONEDNN_OPTS', '1').strip().lower() not in ('0', 'false')
    return onednn and bool(cpu_info.read_cpu_info(use_override=False).flags.get('avx512f'))


def _reduced_precision(dtype: tf.DType) -> bool:
  """Whether TensorFlow's kernels may sum `dtype` in less than float32 here."""
  if dtype == tf.bfloat16:
    return not tensorflow_sums_bfloat16_in_float32()
  return dtype == tf.float16 and not tf.config.list_physical_devices('GPU')


def einsum(equation: str, *inputs: tf.Tensor) -> tf.Tensor:
  """`tf.einsum(equation, *inputs)` that adds in float32 and rounds once, whatever the kernel.

  Args:
    equation: an einsum equation, e.g. 'bsh,hv->bsv'.
    *inputs: tensors of one float dtype.

  Returns:
    The einsum in the inputs' dtype.

  Example:
    >>> einsum('ij,jk->ik', tf.ones([2, 3], tf.bfloat16), tf.ones([3, 4], tf.bfloat16)).shape
    TensorShape([2, 4])
  """
  dtype = inputs[0].dtype
  if not _reduced_precision(dtype):
    return tf.einsum(equation, *inputs)
  return tf.cast(tf.einsum(equation, *[tf.cast(x, tf.float32) for x in inputs]), dtype)


def matmul(a: tf.Tensor, b: tf.Tensor, **kwargs) -> tf.Tensor:
  """`tf.matmul(a, b, **kwargs)` that adds in float32 and rounds to nearest once, whatever the
  kernel (Eigen's bfloat16 matmul truncates).

  Example:
    >>> matmul(tf.ones([2, 3], tf.bfloat16), tf.ones([3, 4], tf.bfloat16)).dtype
    tf.bfloat16
  """
  if not _reduced_precision(a.dtype):
    return tf.matmul(a, b, **kwargs)
  return tf.cast(tf.matmul(tf.cast(a, tf.float32), tf.cast(b, tf.float32), **kwargs), a.dtype)


def column_sums(rows: tf.Tensor) -> tf.Tensor:
  """[rows, n] -> [n]: the sum over rows, as the matmul ones[1, rows] @ rows (`matmul`).

  In float32 and rounded once to the dtype of `rows` on every CPU. TensorFlow's `BiasAddGrad`
  sums bfloat16 in bfloat16 (a mean error of several percent over 4,096 rows), and on CPU the
  matmul is faster than a column reduction, in TensorFlow as in XLA.

  Example:
    >>> column_sums(tf.constant([[1.0, 2.0], [3.0, 4.0]])).numpy()
    array([4., 6.], dtype=float32)
  """
  ones = tf.ones([1, tf.shape(rows)[0]], rows.dtype)
  return tf.reshape(matmul(ones, rows), [-1])
