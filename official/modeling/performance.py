"""Mixed precision: the Keras global dtype policy from `runtime.mixed_precision_dtype` ('auto'
decided for the machine), and the loss-scaling wrapper of float16 optimizers."""

from typing import Optional, Union

import tensorflow as tf
import tf_keras

from official.utils.misc import cpu_info

_POLICIES = {None: 'float32', 'float32': 'float32', 'bfloat16': 'mixed_bfloat16',
             'float16': 'mixed_float16'}
AUTO = 'auto'


def _gpu_has_bfloat16_units() -> Optional[bool]:
  """Whether the first GPU computes bfloat16 natively (compute capability 8.0+); None: no GPU."""
  gpus = tf.config.list_physical_devices('GPU')
  if not gpus:
    return None
  capability = tf.config.experimental.get_device_details(gpus[0]).get('compute_capability')
  return bool(capability and tuple(capability) >= (8, 0))


def resolve_mixed_precision_dtype(dtype: Union[None, str, tf.DType]) -> Optional[str]:
  """`runtime.mixed_precision_dtype` with 'auto' decided for this machine.

  'auto' is 'bfloat16' where the hardware computes it natively (a GPU of compute capability 8.0
  or newer; a CPU with `avx512_bf16` or AMX, the rule of `cpu_info.default_precision`, which
  `MLM_CPU_FLAGS` can override) and 'float32' elsewhere: on an AVX2-only CPU TensorFlow emulates
  bfloat16 in float32 and a bfloat16 step is slower than a float32 one. Never 'float16' (that
  needs loss scaling: ask for it). Other values are returned as given (a `tf.DType` by name).

  Example:
    >>> resolve_mixed_precision_dtype('auto')  # a Zen 4 EPYC; 'float32' on a Zen 3 one
    'bfloat16'
  """
  if isinstance(dtype, tf.DType):
    return dtype.name
  if dtype != AUTO:
    return dtype
  gpu = _gpu_has_bfloat16_units()
  if gpu is not None:
    return 'bfloat16' if gpu else 'float32'
  return cpu_info.default_precision()


def emulated_bfloat16_warning(dtype: Union[None, str, tf.DType]) -> Optional[str]:
  """One line warning that `dtype` asks for bfloat16 on a CPU that emulates it, else None.

  Example:
    >>> emulated_bfloat16_warning('bfloat16')  # on an AVX2-only CPU
    'bfloat16 on AMD EPYC (avx2; no ...), which has no bfloat16 units: ... float32 ...'
  """
  if resolve_mixed_precision_dtype(dtype) != 'bfloat16' or _gpu_has_bfloat16_units() is not None:
    return None
  if cpu_info.default_precision() == 'bfloat16':
    return None
  return (f'bfloat16 on {cpu_info.read_cpu_info().line()}, which has no bfloat16 units: '
          f'TensorFlow emulates it and float32 is faster here '
          f'(runtime.mixed_precision_dtype: auto picks it)')


def set_mixed_precision_policy(dtype: Union[None, str, tf.DType]) -> str:
  """Sets the global policy: None/'float32', 'bfloat16' (mixed_bfloat16), 'float16'
  (mixed_float16) or 'auto' (`resolve_mixed_precision_dtype`).

  `dtype` may also be a `tf.DType` (tf.float32, tf.bfloat16, tf.float16), as in Model Garden.

  Layers built afterwards compute in the low-precision dtype and keep float32 variables.

  Returns:
    The policy's name, e.g. 'mixed_bfloat16'.

  Raises:
    ValueError: an unknown dtype.

  Example:
    >>> set_mixed_precision_policy('auto')  # on an AVX2-only CPU
    'float32'
  """
  resolved = resolve_mixed_precision_dtype(dtype)
  if resolved not in _POLICIES:
    raise ValueError(f"runtime.mixed_precision_dtype: expected one of None, 'float32', 'bfloat16', "
                     f"'float16', 'auto', found {resolved!r}")
  tf_keras.mixed_precision.set_global_policy(_POLICIES[resolved])
  return _POLICIES[resolved]


def configure_optimizer(optimizer: tf_keras.optimizers.Optimizer, use_float16: bool = False,
                        loss_scale: Union[None, str, float] = None,
                        use_graph_rewrite: Optional[bool] = None) -> tf_keras.optimizers.Optimizer:
  """`optimizer`, wrapped in a `LossScaleOptimizer` when training in float16.

  Args:
    optimizer: the optimizer.
    use_float16: wrap it (float16 gradients need loss scaling); False returns it unchanged.
    loss_scale: None or 'dynamic' for a dynamic loss scale, a number for a fixed one.
    use_graph_rewrite: ignored (Model Garden's deprecated argument).

  Raises:
    ValueError: a `loss_scale` that is neither 'dynamic' nor a positive number.

  Example:
    >>> configure_optimizer(tf_keras.optimizers.SGD(0.1), use_float16=True, loss_scale=128)
  """
  del use_graph_rewrite
  if not use_float16:
    return optimizer
  if loss_scale is None or loss_scale == 'dynamic':
    return tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
  if isinstance(loss_scale, str) or not loss_scale > 0:
    raise ValueError(f"loss_scale: expected None, 'dynamic' or a positive number, found "
                     f'{loss_scale!r}')
  return tf_keras.mixed_precision.LossScaleOptimizer(optimizer, dynamic=False,
                                                     initial_scale=float(loss_scale))
