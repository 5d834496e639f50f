"""Loops that run a step function `num_steps` times: in Python, or inside one `tf.while_loop`.

Example:
  >>> loop = create_tf_while_loop_fn(train_step)          # train_step(iterator)
  >>> loop(iterator, tf.constant(100))                    # 100 steps in one compiled call
  >>> loop = create_loop_fn(tf.function(eval_step))        # eval_step(iterator) -> outputs
  >>> state = loop(iterator, -1, state=[], reduce_fn=lambda s, o: s + [o])   # until exhausted
"""

from typing import Any, Callable, Optional

import tensorflow as tf

from orbit.utils import tpu_summaries


def _steps_to_int(num_steps) -> int:
  return int(num_steps.numpy()) if hasattr(num_steps, 'numpy') else int(num_steps)


def create_loop_fn(step_fn: Callable[[Any], Any]):
  """A Python loop over `step_fn(iterator)`; wrap `step_fn` in `tf.function` for speed.

  The returned `loop_fn(iterator, num_steps, state=None, reduce_fn=None)` runs `num_steps` steps
  (-1: until the iterator is exhausted) and folds each step's outputs into `state` with
  `state = reduce_fn(state, outputs)`; it returns the final state (None without `reduce_fn`).

  Args:
    step_fn: `fn(iterator)` running one step.

  Returns:
    The loop function.
  """

  def loop_fn(iterator, num_steps, state: Any = None,
              reduce_fn: Optional[Callable[[Any, Any], Any]] = None):
    num_steps = _steps_to_int(num_steps)
    step = 0
    while num_steps == -1 or step < num_steps:
      try:
        outputs = step_fn(iterator)
      except (StopIteration, tf.errors.OutOfRangeError):
        if num_steps == -1:
          break
        raise
      if reduce_fn is not None:
        state = reduce_fn(state, outputs)
      step += 1
    return state

  return loop_fn


def create_tf_while_loop_fn(step_fn: Callable[[Any], Any]):
  """A loop of `step_fn(iterator)` to be traced into one `tf.while_loop` (wrap it in
  `tf.function`).

  The returned `loop_fn(iterator, num_steps)` needs `num_steps` as a tensor: a Python int would
  be unrolled and retrace for every new value.

  Args:
    step_fn: `fn(iterator)` running one step; its outputs are dropped.

  Returns:
    The loop function.

  Raises:
    ValueError (when called): `num_steps` is not a tensor.
  """

  def loop_fn(iterator, num_steps):
    if not isinstance(num_steps, tf.Tensor):
      raise ValueError('create_tf_while_loop_fn: num_steps must be a tf.Tensor (a Python value '
                       f'would be unrolled into the graph), found {type(num_steps).__name__}')
    for _ in tf.range(num_steps):
      step_fn(iterator)

  return loop_fn


def _relaxed_shape(value):
  """The shape invariant of a loop variable whose dimensions may change between iterations."""
  if isinstance(value, tf.Tensor):
    return tf.TensorShape([None] * value.shape.rank) if value.shape.rank is not None \
        else tf.TensorShape(None)
  return tf.TensorShape(None)


def create_tf_while_loop_fn_with_state(step_fn: Callable[[Any], Any]):
  """Like `create_tf_while_loop_fn`, carrying a state through `reduce_fn` (shapes may grow).

  The returned `loop_fn(iterator, num_steps, state, reduce_fn)` returns the final state.
  """

  def loop_fn(iterator, num_steps, state, reduce_fn):
    if not isinstance(num_steps, tf.Tensor):
      raise ValueError('create_tf_while_loop_fn_with_state: num_steps must be a tf.Tensor, found '
                       f'{type(num_steps).__name__}')
    state = tf.nest.map_structure(tf.convert_to_tensor, state)

    def body(i, state):
      outputs = step_fn(iterator)
      new_state = reduce_fn(state, outputs)
      return i + 1, tf.nest.map_structure(tf.convert_to_tensor, new_state)

    invariants = tf.nest.map_structure(_relaxed_shape, state)
    _, state = tf.while_loop(lambda i, _: i < tf.cast(num_steps, tf.int32), body,
                             (tf.constant(0, tf.int32), state),
                             shape_invariants=(tf.TensorShape([]), invariants))
    return state

  return loop_fn


class LoopFnWithSummaries(tpu_summaries.OptionalSummariesFunction):
  """A compiled loop that records summaries only in the first step of loops that should.

  When `tf.summary.should_record_summaries()` holds, one step runs in the recording trace and
  the remaining `num_steps - 1` in the silent one; otherwise all of them run silently.
  """

  def __call__(self, iterator, num_steps):
    num_steps = tf.convert_to_tensor(num_steps, tf.int32)
    if bool(tf.summary.should_record_summaries()):
      outputs = self.with_summaries(iterator, tf.constant(1, tf.int32))
      num_steps = num_steps - 1
    else:
      outputs = None
    if int(num_steps.numpy()) > 0:
      outputs = self.without_summaries(iterator, num_steps)
    return outputs
