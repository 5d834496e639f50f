"""Trainer and evaluator base classes that own the loop: subclasses write only the step.

`StandardTrainer.train(num_steps)` calls `train_loop_begin()`, runs `train_step(iterator)`
`num_steps` times (by default inside one `tf.while_loop` in a `tf.function`), then returns
`train_loop_end()`. `StandardEvaluator.evaluate(num_steps)` calls `eval_begin()` (whose return
value, if not None, is a state folded with `eval_reduce(state, step_outputs)`), runs
`eval_step(iterator)` `num_steps` times (-1: the whole dataset), and returns `eval_end(...)`.

Example:
  >>> class MyTrainer(StandardTrainer):
  ...   def __init__(self, model, optimizer, dataset):
  ...     self.model, self.optimizer = model, optimizer
  ...     self.loss = tf_keras.metrics.Mean('loss')
  ...     super().__init__(train_dataset=dataset)
  ...   def train_step(self, iterator):
  ...     ...   # strategy.run(replica_step, args=(next(iterator),))
  ...   def train_loop_end(self):
  ...     return {'loss': self.loss.result()}
"""

import abc
import dataclasses
from typing import Any, Optional

import tensorflow as tf

from orbit import runner
from orbit.utils import loop_fns


@dataclasses.dataclass(frozen=True)
class StandardTrainerOptions:
  """How `StandardTrainer` runs its loop.

  Attributes:
    use_tf_function: compile the loop (or, without `use_tf_while_loop`, each step) with
      `tf.function`.
    use_tf_while_loop: run the `num_steps` steps inside one `tf.while_loop` (needs
      `use_tf_function`).
    use_tpu_summary_optimization: keep a summary-free trace of the loop and record summaries only
      in the first step of loops that should (needs `use_tf_while_loop`).
  """
  use_tf_function: bool = True
  use_tf_while_loop: bool = True
  use_tpu_summary_optimization: bool = False


def _iterators_of(datasets):
  return tf.nest.map_structure(iter, datasets)


class StandardTrainer(runner.AbstractTrainer, metaclass=abc.ABCMeta):
  """A trainer whose subclasses implement `train_step` (and optionally the loop hooks).

  Args:
    train_dataset: a dataset, distributed dataset or nested structure of them; `train_step`
      receives the matching iterator(s). The iterator lives across `train` calls.
    options: a `StandardTrainerOptions` (None: the defaults).

  Raises:
    ValueError: inconsistent options.
  """

  def __init__(self, train_dataset, options: Optional[StandardTrainerOptions] = None):
    options = options or StandardTrainerOptions()
    if options.use_tf_while_loop and not options.use_tf_function:
      raise ValueError('StandardTrainerOptions: use_tf_while_loop=True requires '
                       'use_tf_function=True')
    if options.use_tpu_summary_optimization and not options.use_tf_while_loop:
      raise ValueError('StandardTrainerOptions: use_tpu_summary_optimization=True requires '
                       'use_tf_while_loop=True')
    self._train_options = options
    self._train_dataset = train_dataset
    self._train_iter = None
    self._train_loop_fn = None

  def create_train_loop_fn(self):
    """Builds the function running `num_steps` train steps, per the options."""
    options = self._train_options
    if options.use_tf_while_loop:
      loop = loop_fns.create_tf_while_loop_fn(self.train_step)
      if options.use_tpu_summary_optimization:
        return loop_fns.LoopFnWithSummaries(loop)
      return tf.function(loop)
    step = tf.function(self.train_step) if options.use_tf_function else self.train_step
    return loop_fns.create_loop_fn(step)

  def train(self, num_steps: tf.Tensor) -> Optional[runner.Output]:
    """Runs `train_loop_begin`, `num_steps` train steps and `train_loop_end` (its output)."""
    self.train_loop_begin()
    if self._train_loop_fn is None:
      self._train_loop_fn = self.create_train_loop_fn()
    if self._train_iter is None:
      self._train_iter = _iterators_of(self._train_dataset)
    self._train_loop_fn(self._train_iter, num_steps)
    return self.train_loop_end()

  def train_loop_begin(self) -> None:
    """Called before every loop of train steps (e.g. to reset metrics); eager."""

  @abc.abstractmethod
  def train_step(self, iterator) -> None:
    """Runs one train step, usually `strategy.run(replica_fn, args=(next(iterator),))`.

    Traced inside a `tf.function` (and a `tf.while_loop`) by default.
    """

  def train_loop_end(self) -> Optional[runner.Output]:
    """Called after every loop of train steps; returns the loop's outputs (eager)."""
    return None

  @property
  def train_dataset(self):
    """The training dataset(s)."""
    return self._train_dataset

  @train_dataset.setter
  def train_dataset(self, train_dataset) -> None:
    """Replaces the training dataset(s); the next `train` call starts new iterators."""
    self._train_dataset = train_dataset
    self._train_iter = None


@dataclasses.dataclass(frozen=True)
class StandardEvaluatorOptions:
  """How `StandardEvaluator` runs its loop.

  Attributes:
    use_tf_function: compile each step (or, with `use_tf_while_loop`, the whole loop).
    use_tf_while_loop: run the steps inside one `tf.while_loop` (needs `use_tf_function`; a
      fixed number of steps only).
    recreate_iterator_for_each_eval: start every evaluation at the beginning of the dataset;
      False continues where the previous evaluation stopped (for repeated datasets).
  """
  use_tf_function: bool = True
  use_tf_while_loop: bool = False
  recreate_iterator_for_each_eval: bool = True


class StandardEvaluator(runner.AbstractEvaluator, metaclass=abc.ABCMeta):
  """An evaluator whose subclasses implement `eval_step` (and optionally the hooks).

  Args:
    eval_dataset: a dataset, distributed dataset or nested structure of them.
    options: a `StandardEvaluatorOptions` (None: the defaults).

  Raises:
    ValueError: inconsistent options.
  """

  def __init__(self, eval_dataset, options: Optional[StandardEvaluatorOptions] = None):
    options = options or StandardEvaluatorOptions()
    if options.use_tf_while_loop and not options.use_tf_function:
      raise ValueError('StandardEvaluatorOptions: use_tf_while_loop=True requires '
                       'use_tf_function=True')
    self._eval_options = options
    self._eval_dataset = eval_dataset
    self._eval_iter = None
    self._eval_loop_fns = {}

  def create_eval_loop_fn(self, has_state: bool):
    """Builds the function running the eval steps; `has_state`: folds outputs with
    `eval_reduce`."""
    options = self._eval_options
    if options.use_tf_while_loop:
      if has_state:
        return tf.function(loop_fns.create_tf_while_loop_fn_with_state(self.eval_step))
      return tf.function(loop_fns.create_tf_while_loop_fn(self.eval_step))
    step = tf.function(self.eval_step) if options.use_tf_function else self.eval_step
    return loop_fns.create_loop_fn(step)

  def evaluate(self, num_steps: tf.Tensor) -> Optional[runner.Output]:
    """Runs one evaluation of `num_steps` steps (-1: until the dataset is exhausted).

    Raises:
      ValueError: `num_steps` is -1 with `use_tf_while_loop`.
    """
    options = self._eval_options
    if options.use_tf_while_loop and int(num_steps) == -1:
      raise ValueError('StandardEvaluator: evaluating until the dataset is exhausted '
                       '(num_steps=-1) needs use_tf_while_loop=False; pass a number of steps')
    state = self.eval_begin()
    has_state = state is not None
    if has_state not in self._eval_loop_fns:
      self._eval_loop_fns[has_state] = self.create_eval_loop_fn(has_state)
    loop_fn = self._eval_loop_fns[has_state]
    if self._eval_iter is None or options.recreate_iterator_for_each_eval:
      self._eval_iter = _iterators_of(self._eval_dataset)
    if options.use_tf_while_loop and not isinstance(num_steps, tf.Tensor):
      num_steps = tf.convert_to_tensor(num_steps, tf.int32)
    if has_state:
      state = loop_fn(self._eval_iter, num_steps, state=state, reduce_fn=self.eval_reduce)
      return self.eval_end(state)
    loop_fn(self._eval_iter, num_steps)
    return self.eval_end()

  def eval_begin(self) -> Any:
    """Called before every evaluation (e.g. to reset metrics); a non-None return value is the
    initial state for `eval_reduce`."""
    return None

  @abc.abstractmethod
  def eval_step(self, iterator) -> Any:
    """Runs one eval step; its return value goes to `eval_reduce` when there is a state."""

  def eval_end(self, *args) -> Optional[runner.Output]:
    """Called after every evaluation with the final state (if any); returns the metrics."""
    del args
    return None

  def eval_reduce(self, state: Any = None, step_outputs: Any = None) -> Any:
    """Folds one step's outputs into the state (default: keeps the state)."""
    del step_outputs
    return state

  @property
  def eval_dataset(self):
    """The evaluation dataset(s)."""
    return self._eval_dataset

  @eval_dataset.setter
  def eval_dataset(self, eval_dataset) -> None:
    """Replaces the evaluation dataset(s); the next evaluation starts new iterators."""
    self._eval_dataset = eval_dataset
    self._eval_iter = None
