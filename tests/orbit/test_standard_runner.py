"""Tests for orbit/standard_runner.py and orbit/utils/loop_fns.py."""

import pytest
import tensorflow as tf

import orbit
from orbit.utils import loop_fns


class RangeTrainer(orbit.StandardTrainer):
  """Sums the numbers 0, 1, 2, ... of its dataset; the step counter counts steps."""

  def __init__(self, options=None):
    self.global_step = orbit.utils.create_global_step()
    self.total = tf.Variable(0, dtype=tf.int64)
    super().__init__(tf.data.Dataset.range(100), options=options)

  def train_step(self, iterator):
    self.total.assign_add(next(iterator))
    self.global_step.assign_add(1)

  def train_loop_end(self):
    return {'total': self.total.numpy()}


class RangeEvaluator(orbit.StandardEvaluator):
  """Collects the numbers of its dataset (0..9) into a growing vector."""

  def __init__(self, options=None):
    super().__init__(tf.data.Dataset.range(10), options=options)

  def eval_begin(self):
    return tf.zeros([0], tf.int64)

  def eval_step(self, iterator):
    return next(iterator)

  def eval_reduce(self, state, step_outputs):
    return tf.concat([state, [step_outputs]], 0)

  def eval_end(self, state):
    return {'seen': state.numpy().tolist()}


@pytest.mark.parametrize('options', [
    orbit.StandardTrainerOptions(),
    orbit.StandardTrainerOptions(use_tf_while_loop=False),
    orbit.StandardTrainerOptions(use_tf_while_loop=False, use_tf_function=False),
    orbit.StandardTrainerOptions(use_tpu_summary_optimization=True),
])
def test_trainer_loops_continue_the_same_iterator(options):
  trainer = RangeTrainer(options)
  assert trainer.train(tf.constant(3))['total'] == 0 + 1 + 2
  assert trainer.train(tf.constant(2))['total'] == 3 + 3 + 4
  assert int(trainer.global_step.numpy()) == 5
  trainer.train_dataset = tf.data.Dataset.range(100)   # new dataset: a new iterator
  assert trainer.train(tf.constant(1))['total'] == 10


def test_while_loop_is_traced_once_for_every_length():
  trainer = RangeTrainer()
  for n in (1, 2, 3):
    trainer.train(tf.constant(n))
  assert trainer._train_loop_fn.experimental_get_tracing_count() == 1  # pylint: disable=protected-access


@pytest.mark.parametrize('use_tf_while_loop', [False, True])
def test_evaluator_state_grows_and_iterators_restart(use_tf_while_loop):
  evaluator = RangeEvaluator(orbit.StandardEvaluatorOptions(use_tf_while_loop=use_tf_while_loop))
  assert evaluator.evaluate(tf.constant(3))['seen'] == [0, 1, 2]
  assert evaluator.evaluate(tf.constant(2))['seen'] == [0, 1]   # a new iterator each time
  continuing = RangeEvaluator(orbit.StandardEvaluatorOptions(
      use_tf_while_loop=use_tf_while_loop, recreate_iterator_for_each_eval=False))
  continuing.evaluate(tf.constant(3))
  assert continuing.evaluate(tf.constant(2))['seen'] == [3, 4]


def test_evaluate_until_exhausted_and_its_limits():
  assert RangeEvaluator().evaluate(tf.constant(-1))['seen'] == list(range(10))
  while_loop = RangeEvaluator(orbit.StandardEvaluatorOptions(use_tf_while_loop=True))
  with pytest.raises(ValueError, match='num_steps=-1.*use_tf_while_loop=False'):
    while_loop.evaluate(tf.constant(-1))


def test_inconsistent_options_are_refused():
  with pytest.raises(ValueError, match='use_tf_while_loop=True requires use_tf_function=True'):
    RangeTrainer(orbit.StandardTrainerOptions(use_tf_function=False))
  with pytest.raises(ValueError, match='use_tpu_summary_optimization=True requires'):
    RangeTrainer(orbit.StandardTrainerOptions(use_tf_while_loop=False,
                                              use_tpu_summary_optimization=True))
  with pytest.raises(ValueError, match='use_tf_while_loop=True requires use_tf_function=True'):
    RangeEvaluator(orbit.StandardEvaluatorOptions(use_tf_function=False, use_tf_while_loop=True))


def test_loop_fns():
  iterator = iter(tf.data.Dataset.range(5))
  loop = loop_fns.create_loop_fn(lambda it: next(it))
  assert loop(iterator, 2, state=[], reduce_fn=lambda s, x: s + [int(x)]) == [0, 1]
  assert loop(iterator, -1, state=[], reduce_fn=lambda s, x: s + [int(x)]) == [2, 3, 4]
  while_loop = loop_fns.create_tf_while_loop_fn(lambda it: next(it))
  with pytest.raises(ValueError, match='num_steps must be a tf.Tensor'):
    while_loop(iter(tf.data.Dataset.range(3)), 2)
