"""`GradientClippingMixin`: clip and transform gradients after the cross-replica sum.

tf_keras's `Optimizer.apply_gradients` already sums gradients across replicas before its own
`_clip_gradients`, but it applies at most one of `clipnorm`/`global_clipnorm`/`clipvalue` and has no
hook that sees variables. This mixin makes the order explicit and the same with or without a
`tf.distribute` strategy (and under `LossScaleOptimizer`, which aggregates first and then calls
`apply_gradients(..., skip_gradients_aggregation=True)`):

  1. sum across replicas (unless `skip_gradients_aggregation=True`; a `gradient_aggregator`
     callable, when given, replaces this sum), and sum repeated rows of sparse gradients (tf_keras
     clips before merging them, which miscomputes the norm),
  2. clip by global norm (`global_clipnorm`, and subclasses' extra norms such as AdamW's
     `gradient_clip_norm`; when several are set the smallest wins),
  3. clip each gradient by norm (`clipnorm`), then by value (`clipvalue`),
  4. `gradient_transformers`: callables mapping a list of (gradient, variable) to a new list,
  5. the optimizer's update.

Because every replica sees the same summed gradients, every replica computes the same clip factor:
2 replicas with half the batch each give the same update as 1 replica with the whole batch.
"""

from typing import Any, Callable, List, Optional, Sequence, Tuple

import tensorflow as tf

GradsAndVars = List[Tuple[Any, tf.Variable]]
GradientTransformer = Callable[[GradsAndVars], GradsAndVars]


class GradientClippingMixin:
  """Mix in before a `tf_keras.optimizers.Optimizer` subclass to clip the summed gradients.

  Args (keyword, in addition to the optimizer's own):
    gradient_transformers: callables applied in order to the clipped (gradient, variable) list.
    gradient_aggregator: a callable mapping the per-replica (gradient, variable) list to the
      aggregated one, used instead of the cross-replica sum (not called when the caller already
      aggregated, e.g. under `LossScaleOptimizer`).

  Example:
    >>> class SGD(GradientClippingMixin, tf_keras.optimizers.SGD):
    ...   pass
    >>> opt = SGD(learning_rate=0.1, global_clipnorm=1.0)
  """

  def __init__(self, *args: Any,
               gradient_transformers: Optional[Sequence[GradientTransformer]] = None,
               gradient_aggregator: Optional[GradientTransformer] = None,
               **kwargs: Any):
    super().__init__(*args, **kwargs)
    self._gradient_transformers = self._no_dependency(list(gradient_transformers or []))
    self._gradient_aggregator = gradient_aggregator

  def _global_clip_norms(self) -> List[Optional[float]]:
    """The global-norm limits to apply; subclasses add their own (None or <= 0 are ignored)."""
    return [self.global_clipnorm]

  def _clip_gradients(self, grads):
    # The base class would clip again after `transform_gradients`; everything happens there instead.
    return grads

  def transform_gradients(self, grads_and_vars: GradsAndVars) -> GradsAndVars:
    """Clips and transforms already summed gradients (steps 2-4 of the module docstring).

    Args:
      grads_and_vars: (gradient or None, variable) pairs.

    Returns:
      The new (gradient or None, variable) pairs.
    """
    grads_and_vars = list(grads_and_vars)
    if not grads_and_vars:
      return grads_and_vars
    grads, variables = [list(x) for x in zip(*grads_and_vars)]
    # Sum repeated rows of sparse (embedding) gradients first: norms of the raw slices would be
    # wrong.
    grads = self._deduplicate_sparse_grad(grads)
    norms = [float(n) for n in self._global_clip_norms() if n is not None and n > 0]
    if norms and any(g is not None for g in grads):
      grads, _ = tf.clip_by_global_norm(grads, min(norms))
    if self.clipnorm is not None and self.clipnorm > 0:
      grads = [None if g is None else tf.clip_by_norm(g, self.clipnorm) for g in grads]
    if self.clipvalue is not None and self.clipvalue > 0:
      grads = [None if g is None else tf.clip_by_value(g, -self.clipvalue, self.clipvalue)
               for g in grads]
    grads_and_vars = list(zip(grads, variables))
    for transformer in self._gradient_transformers:
      grads_and_vars = list(transformer(grads_and_vars))
    return grads_and_vars

  def apply_gradients(self, grads_and_vars, name: Optional[str] = None,
                      skip_gradients_aggregation: bool = False, **kwargs: Any):
    """Sums across replicas, clips, transforms, then applies the update (call in replica context).

    Args:
      grads_and_vars: (gradient, variable) pairs, per replica.
      name: the name scope of the update.
      skip_gradients_aggregation: True when the gradients are already summed across replicas
        (as `LossScaleOptimizer` does).
      **kwargs: `experimental_aggregate_gradients` (the inverse of `skip_gradients_aggregation`).

    Returns:
      The optimizer's `iterations` variable.
    """
    grads_and_vars = list(grads_and_vars)
    aggregate = kwargs.pop('experimental_aggregate_gradients', True)
    if kwargs:
      raise TypeError(f'{type(self).__name__}.apply_gradients: unexpected arguments '
                      f'{sorted(kwargs)}')
    if aggregate and not skip_gradients_aggregation and grads_and_vars:
      if self._gradient_aggregator is not None:
        grads_and_vars = list(self._gradient_aggregator(grads_and_vars))
      else:
        grads_and_vars = self.aggregate_gradients(grads_and_vars)
    grads_and_vars = self.transform_gradients(grads_and_vars)
    return super().apply_gradients(grads_and_vars, name=name, skip_gradients_aggregation=True)
