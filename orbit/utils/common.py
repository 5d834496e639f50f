"""Small helpers shared by Orbit runners: the global step, distributed datasets, plain values.

Example:
  >>> step = create_global_step()
  >>> dataset = make_distributed_dataset(strategy, lambda ctx: tf.data.Dataset.range(8).batch(2))
  >>> get_value(tf.constant(3))   # 3
"""

import inspect
from typing import Any, Callable, Optional, Union

import tensorflow as tf


def create_global_step() -> tf.Variable:
  """A `global_step` int64 variable at 0, not trainable, aggregated as "first replica only".

  Creating it inside a strategy's scope mirrors it; `assign_add` in a replica context then
  counts each step once instead of once per replica.

  Example:
    >>> step = create_global_step()
    >>> step.assign_add(1); int(step.numpy())   # 1
  """
  return tf.Variable(0, dtype=tf.int64, name='global_step', trainable=False,
                     aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)


def make_distributed_dataset(strategy: Optional[tf.distribute.Strategy],
                             dataset_or_fn: Union[tf.data.Dataset, Callable[..., tf.data.Dataset]],
                             *args, **kwargs):
  """Distributes a dataset, or a function building one, over `strategy`'s replicas.

  Args:
    strategy: the strategy (None: the current one).
    dataset_or_fn: a `tf.data.Dataset` (split by `experimental_distribute_dataset`) or a function
      returning one; a function with an `input_context` parameter receives the
      `tf.distribute.InputContext` of each input pipeline.
    *args: passed to the function.
    **kwargs: passed to the function.

  Returns:
    A distributed dataset.

  Raises:
    ValueError: `dataset_or_fn` is neither a dataset nor callable.

  Example:
    >>> def build(batch_size, input_context=None):
    ...   return tf.data.Dataset.range(64).batch(batch_size)
    >>> make_distributed_dataset(strategy, build, 8)
  """
  strategy = strategy or tf.distribute.get_strategy()
  if isinstance(dataset_or_fn, tf.data.Dataset):
    return strategy.experimental_distribute_dataset(dataset_or_fn)
  if not callable(dataset_or_fn):
    raise ValueError('make_distributed_dataset: expected a tf.data.Dataset or a function '
                     f'returning one, found {type(dataset_or_fn).__name__}')
  try:
    takes_context = 'input_context' in inspect.signature(dataset_or_fn).parameters
  except (TypeError, ValueError):  # builtins without a signature
    takes_context = False

  def dataset_fn(input_context: tf.distribute.InputContext) -> tf.data.Dataset:
    if takes_context:
      return dataset_or_fn(*args, input_context=input_context, **kwargs)
    return dataset_or_fn(*args, **kwargs)

  return strategy.distribute_datasets_from_function(dataset_fn)


def get_value(x: Any) -> Any:
  """The host value of `x`: numpy for tensors and variables, `x` itself otherwise.

  Example:
    >>> get_value(tf.constant(2.0))   # 2.0 (numpy)
  """
  if isinstance(x, (tf.Tensor, tf.Variable)) or hasattr(x, 'numpy') and callable(x.numpy):
    return x.numpy()
  return x
