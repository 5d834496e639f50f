"""`released_custom_gradients`: a traced function's `tf.custom_gradient` entries leave the global
gradient registry when the block ends, so the traced graph can be garbage collected."""

import gc
import weakref

import pytest
import tensorflow as tf

from official.modeling import custom_gradient_release
from official.modeling import tf_utils


def _trained_step_graph():
  """Traces and runs a train step whose loss is a custom gradient; returns a weak reference to
  the traced graph and the gradient it computed."""
  weights = tf.Variable(tf.ones([3, 4]))

  @tf.function
  def step(rows):
    with tf.GradientTape() as tape:
      logits = tf.matmul(rows, weights)
      loss = tf.reduce_sum(tf_utils.sparse_softmax_cross_entropy(tf.constant([1, 2]), logits))
    return tape.gradient(loss, weights)

  grad = step(tf.ones([2, 3])).numpy()
  graph = weakref.ref(step.get_concrete_function(tf.TensorSpec([2, 3], tf.float32)).graph)
  return graph, grad


@pytest.mark.slow
def test_the_block_frees_the_traced_graph():
  kept = custom_gradient_release.custom_gradient_names()
  with custom_gradient_release.released_custom_gradients():
    graph, grad = _trained_step_graph()
    made = set(custom_gradient_release.custom_gradient_names()) - set(kept)
    assert made  # the leak this module exists for: the trace registered its gradient
  gc.collect()
  assert custom_gradient_release.custom_gradient_names() == kept
  assert graph() is None
  # softmax - one_hot summed over the rows: each column of the gradient sums to 0 over classes.
  assert grad.shape == (3, 4) and abs(grad.sum()) < 1e-5


@pytest.mark.slow
def test_without_the_block_the_graph_stays_registered():
  """The behaviour the block undoes (if TensorFlow fixes it, this fails and the module can go)."""
  before = set(custom_gradient_release.custom_gradient_names())
  graph, _ = _trained_step_graph()
  gc.collect()
  assert set(custom_gradient_release.custom_gradient_names()) - before
  assert graph() is not None


def test_entries_of_earlier_models_are_kept_and_an_error_still_releases():
  with custom_gradient_release.released_custom_gradients():
    _trained_step_graph()
  outer = custom_gradient_release.custom_gradient_names()
  with pytest.raises(ValueError, match='boom'):
    with custom_gradient_release.released_custom_gradients():
      _trained_step_graph()
      raise ValueError('boom')
  assert custom_gradient_release.custom_gradient_names() == outer
