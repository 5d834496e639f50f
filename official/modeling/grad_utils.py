"""One optimizer step with an explicit gradient all-reduce and hooks around it (Model Garden's API).

`minimize_using_explicit_allreduce` sums the gradients across replicas itself (in float16 under
a float16 `LossScaleOptimizer`, so the transfer is half the size) and then applies them with
the optimizer's own aggregation turned off. Callbacks may change the gradients before the
all-reduce (per replica, on scaled gradients under loss scaling) and after it (on the summed,
unscaled ones), e.g. to clip them.

Example:
  >>> with tf.GradientTape() as tape:
  ...   loss = compute_loss(model(inputs))
  >>> minimize_using_explicit_allreduce(tape, optimizer, loss, model.trainable_variables,
  ...                                   post_allreduce_callbacks=[clip_by_global_norm])
"""

import logging
from typing import Any, Callable, List, Optional, Sequence, Tuple

import tensorflow as tf
import tf_keras

GradsAndVars = Sequence[Tuple[Any, tf.Variable]]
Callback = Callable[[GradsAndVars], GradsAndVars]


def _drop_missing_gradients(grads_and_vars: GradsAndVars) -> List[Tuple[Any, tf.Variable]]:
  """The pairs whose gradient is not None (warning about the others).

  Raises:
    ValueError: no variable has a gradient (naming them).
  """
  grads_and_vars = list(grads_and_vars)
  kept = [(g, v) for g, v in grads_and_vars if g is not None]
  missing = [v.name for g, v in grads_and_vars if g is None]
  if grads_and_vars and not kept:
    raise ValueError(f'trainable_variables: no gradient for any of them ({missing}); does the '
                     'loss depend on them?')
  if missing:
    logging.warning('No gradient for the variables %s; they are not updated', missing)
  return kept


def _all_reduce(grads_and_vars: GradsAndVars, precision: tf.DType,
                bytes_per_pack: int) -> Tuple[List[tf.Tensor], List[tf.Variable]]:
  """Sums the gradients across replicas in `precision`; returns them in float32 (or their own
  dtype when `precision` is float32) with their variables."""
  kept = _drop_missing_gradients(grads_and_vars)
  grads = [tf.convert_to_tensor(g) for g, _ in kept]
  variables = [v for _, v in kept]
  context = tf.distribute.get_replica_context()
  if precision == tf.float16:
    grads = [tf.cast(g, tf.float16) for g in grads]
  options = tf.distribute.experimental.CommunicationOptions(bytes_per_pack=bytes_per_pack)
  summed = context.all_reduce(tf.distribute.ReduceOp.SUM, grads, options=options)
  if precision == tf.float16:
    summed = [tf.cast(g, tf.float32) for g in summed]
  return list(summed), variables


def _run_callbacks(callbacks: Optional[Sequence[Callback]],
                   grads_and_vars: GradsAndVars) -> GradsAndVars:
  for callback in callbacks or ():
    grads_and_vars = callback(grads_and_vars)
  return grads_and_vars


def minimize_using_explicit_allreduce(tape: tf.GradientTape,
                                      optimizer: tf_keras.optimizers.Optimizer,
                                      loss: tf.Tensor,
                                      trainable_variables: Sequence[tf.Variable],
                                      pre_allreduce_callbacks: Optional[Sequence[Callback]] = None,
                                      post_allreduce_callbacks: Optional[Sequence[Callback]] = None,
                                      allreduce_bytes_per_pack: int = 0) -> None:
  """Updates `trainable_variables` by one optimizer step on `loss`, all-reducing explicitly.

  Under a `tf_keras.mixed_precision.LossScaleOptimizer` the loss is scaled, the scaled
  gradients are summed in float16 and unscaled before the update; otherwise the gradients are
  summed in float32. Variables without a gradient are left out (with a warning).

  Args:
    tape: the `tf.GradientTape` that recorded `loss` (still usable: not yet used for gradients).
    optimizer: a `tf_keras` optimizer (or a `LossScaleOptimizer`).
    loss: the scalar loss of this replica.
    trainable_variables: the variables to update.
    pre_allreduce_callbacks: functions `grads_and_vars -> grads_and_vars` applied in order
      before the all-reduce (to the scaled gradients under loss scaling).
    post_allreduce_callbacks: functions applied in order after the all-reduce, before the update.
    allreduce_bytes_per_pack: split the all-reduce into packs of about this many bytes; 0: one.

  Raises:
    ValueError: no variable has a gradient.
    RuntimeError: called in a cross-replica context.

  Example:
    >>> def clip(grads_and_vars):
    ...   grads, variables = zip(*grads_and_vars)
    ...   return zip(tf.clip_by_global_norm(grads, 1.0)[0], variables)
    >>> minimize_using_explicit_allreduce(tape, optimizer, loss, model.trainable_variables,
    ...                                   post_allreduce_callbacks=[clip])
  """
  if tf.distribute.get_replica_context() is None:
    raise RuntimeError('minimize_using_explicit_allreduce: call it in a replica context (inside '
                       '`strategy.run`), not in a cross-replica context')
  scaled = isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer)
  if scaled:
    with tape:
      loss = optimizer.get_scaled_loss(loss)
  grads = tape.gradient(loss, trainable_variables)
  grads_and_vars = _run_callbacks(pre_allreduce_callbacks, zip(grads, trainable_variables))
  summed, variables = _all_reduce(grads_and_vars, tf.float16 if scaled else tf.float32,
                                  allreduce_bytes_per_pack)
  if scaled:
    summed = optimizer.get_unscaled_gradients(summed)
  grads_and_vars = _run_callbacks(post_allreduce_callbacks, zip(summed, variables))
  optimizer.apply_gradients(grads_and_vars, experimental_aggregate_gradients=False)
