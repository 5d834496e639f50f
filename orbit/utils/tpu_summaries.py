"""A `tf.function` traced twice: with summaries recorded and without.

Summary ops inside a compiled loop cost time on every step (on TPUs they also force host
round trips). `OptionalSummariesFunction` keeps a summary-free trace for the loops that would
record nothing and a recording one for the loops that should.
"""

import functools
from typing import Any, Callable

import tensorflow as tf


class OptionalSummariesFunction:
  """Wraps `function` into two `tf.function`s; calls pick one by `should_record_summaries()`.

  Works on plain functions and as a method decorator (the instance is bound on access).

  Args:
    function: the Python function.
    **tf_function_kwargs: passed to `tf.function` (e.g. `jit_compile`).

  Example:
    >>> class Trainer:
    ...   @OptionalSummariesFunction
    ...   def train(self, num_steps):
    ...     ...
  """

  def __init__(self, function: Callable[..., Any], **tf_function_kwargs):
    self._function = function
    self._tf_function_kwargs = tf_function_kwargs

    @functools.wraps(function)
    def recording(*args, **kwargs):
      return function(*args, **kwargs)

    @functools.wraps(function)
    def silent(*args, **kwargs):
      with tf.summary.record_if(False):
        return function(*args, **kwargs)

    self.with_summaries = tf.function(recording, **tf_function_kwargs)
    self.without_summaries = tf.function(silent, **tf_function_kwargs)

  def __call__(self, *args, **kwargs):
    if bool(tf.summary.should_record_summaries()):
      return self.with_summaries(*args, **kwargs)
    return self.without_summaries(*args, **kwargs)

  def __get__(self, instance, owner):
    if instance is None:
      return self
    bound = OptionalSummariesFunction.__new__(OptionalSummariesFunction)
    bound._function = self._function  # pylint: disable=protected-access
    bound._tf_function_kwargs = self._tf_function_kwargs  # pylint: disable=protected-access
    bound.with_summaries = self.with_summaries.__get__(instance, owner)
    bound.without_summaries = self.without_summaries.__get__(instance, owner)
    return bound
