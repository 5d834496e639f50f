"""The two interfaces a `Controller` drives: something that trains and something that evaluates.

A trainer runs `num_steps` training steps per call and may return a (nested) dict of outputs,
e.g. `{'loss': 0.3}`; an evaluator runs `num_steps` evaluation steps (-1: the whole dataset) and
returns its metrics. Both are `tf.Module`s so their variables can be tracked by checkpoints.

Example:
  >>> class Counter(AbstractTrainer):
  ...   def __init__(self):
  ...     self.steps = tf.Variable(0)
  ...   def train(self, num_steps):
  ...     self.steps.assign_add(num_steps)
  ...     return {'steps': self.steps}
"""

import abc
from typing import Dict, Optional, Union

import numpy as np
import tensorflow as tf

# What runners return: a (nested) dict of scalars, numpy values or tensors.
Output = Dict[str, Union[tf.Tensor, float, np.number, np.ndarray, 'Output']]


class AbstractTrainer(tf.Module, metaclass=abc.ABCMeta):
  """Runs training steps; `Controller.train` calls `train(num_steps)` once per loop."""

  @abc.abstractmethod
  def train(self, num_steps: tf.Tensor) -> Optional[Output]:
    """Runs `num_steps` training steps.

    Args:
      num_steps: a scalar int32 tensor (a tensor, so a `tf.function` is traced once for every
        loop length).

    Returns:
      Optional outputs (e.g. the loss) to log, summarize and pass to the train actions.
    """


class AbstractEvaluator(tf.Module, metaclass=abc.ABCMeta):
  """Runs evaluation; `Controller.evaluate` calls `evaluate(num_steps)`."""

  @abc.abstractmethod
  def evaluate(self, num_steps: tf.Tensor) -> Optional[Output]:
    """Runs `num_steps` evaluation steps (-1: until the evaluation data is exhausted).

    Returns:
      Optional metrics to log, summarize and pass to the eval actions.
    """
