"""Mixed precision: the Keras global dtype policy from `runtime.mixed_precision_dtype`, and the
loss-scaling wrapper of float16 optimizers."""

from typing import Optional, Union

import tensorflow as tf
import tf_keras

_POLICIES = {None: 'float32', 'float32': 'float32', 'bfloat16': 'mixed_bfloat16',
             'float16': 'mixed_float16'}


def set_mixed_precision_policy(dtype: Union[None, str, tf.DType]) -> None:
  """Sets the global policy: None/'float32', 'bfloat16' (mixed_bfloat16) or 'float16'
  (mixed_float16).

  `dtype` may also be a `tf.DType` (tf.float32, tf.bfloat16, tf.float16), as in Model Garden.

  Layers built afterwards compute in the low-precision dtype and keep float32 variables.

  Raises:
    ValueError: an unknown dtype.
  """
  if isinstance(dtype, tf.DType):
    dtype = dtype.name
  if dtype not in _POLICIES:
    raise ValueError(f"runtime.mixed_precision_dtype: expected one of None, 'float32', 'bfloat16', "
                     f"'float16', found {dtype!r}")
  tf_keras.mixed_precision.set_global_policy(_POLICIES[dtype])


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
