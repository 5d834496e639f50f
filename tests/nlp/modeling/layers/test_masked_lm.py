"""Tests for official/nlp/modeling/layers/masked_lm.py."""

import math

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing
from tests.nlp.modeling import numpy_bert


def _table(vocab=50, width=16, seed=0):
  return tf.Variable(np.random.default_rng(seed).normal(size=(vocab, width)).astype(np.float32))


def test_logits_match_numpy():
  table = _table()
  layer = layers.MaskedLM(table, activation='gelu', initializer='glorot_uniform')
  sequence = np.random.default_rng(1).normal(size=(2, 8, 16)).astype(np.float32)
  positions = np.array([[1, 3, 0], [7, 2, 2]], np.int32)
  logits = layer(sequence, positions).numpy()
  layer.bias.assign(np.linspace(-1, 1, 50).astype(np.float32))
  logits = layer(sequence, positions).numpy()
  kernel, bias = [v.numpy() for v in layer.dense.weights]
  gamma, beta = [v.numpy() for v in layer.layer_norm.weights]
  gathered = np.take_along_axis(sequence, positions[..., None], 1)
  hidden = numpy_bert.layer_norm(numpy_bert.gelu_tanh(gathered @ kernel + bias), gamma, beta)
  expected = hidden @ table.numpy().T + layer.bias.numpy()
  np.testing.assert_allclose(logits, expected, atol=1e-4)
  assert logits.shape == (2, 3, 50) and logits.dtype == np.float32


def test_predictions_are_log_softmax_of_logits():
  table = _table()
  sequence = tf.random.normal([2, 8, 16], seed=1)
  positions = tf.constant([[1, 3], [7, 2]])
  logits_layer = layers.MaskedLM(table, activation='gelu')
  logits = logits_layer(sequence, positions)
  predictions_layer = layers.MaskedLM(table, activation='gelu', output='predictions')
  predictions_layer(sequence, positions)
  predictions_layer.set_weights(logits_layer.get_weights())
  predictions = predictions_layer(sequence, positions).numpy()
  shifted = logits.numpy() - logits.numpy().max(-1, keepdims=True)
  expected = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
  np.testing.assert_allclose(predictions, expected, atol=1e-5)


def test_unknown_output_raises():
  # Model Garden's wording first ("Unknown `output` value"), then the accepted values.
  with pytest.raises(ValueError,
                     match="Unknown `output` value \"probs\".*'logits' or 'predictions'"):
    layers.MaskedLM(_table(), output='probs')


def test_get_config_round_trip_with_and_without_table():
  table = _table()
  sequence = tf.random.normal([2, 8, 16])
  positions = tf.constant([[1, 2], [3, 4]])
  # Rebuilt with its own table of the recorded shape; weights copied give identical logits.
  testing.run_layer_test(layers.MaskedLM, dict(embedding_table=table, activation='gelu'),
                         [sequence, positions], (2, 2, 50))
  layer = layers.MaskedLM(table, activation='gelu')
  logits = layer(sequence, positions)
  tied = layers.MaskedLM.from_config(layer.get_config(), embedding_table=table)
  tied(sequence, positions)
  tied.set_weights(layer.get_weights())
  assert tied.embedding_table is table
  np.testing.assert_allclose(tied(sequence, positions), logits, atol=1e-6)


def test_mixed_bfloat16_logits_are_float32():
  table = _table()
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    layer = layers.MaskedLM(table, activation='gelu')
    logits = layer(tf.random.normal([2, 8, 16]), tf.constant([[1, 2], [3, 4]]))
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert logits.dtype == tf.float32 and logits.shape == (2, 2, 50)
  assert layer.bias.dtype == tf.float32


def test_bias_is_added_in_full_precision_under_mixed_bfloat16():
  table = tf.Variable(tf.zeros([50, 16]))  # the logits are then exactly the bias
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    layer = layers.MaskedLM(table)
    layer(tf.zeros([1, 4, 16]), tf.constant([[0]]))
    layer.bias.assign(np.full([50], 1.001, np.float32))  # 1.0 when rounded to bfloat16
    logits = layer(tf.random.normal([1, 4, 16]), tf.constant([[0]]))
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  np.testing.assert_allclose(logits, np.full([1, 1, 50], 1.001, np.float32), rtol=1e-7)


def test_table_gradient_flows_through_the_tied_matmul():
  table = _table()
  layer = layers.MaskedLM(table, activation='gelu')
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(layer(tf.random.normal([2, 8, 16]), tf.constant([[1, 2], [3, 4]])))
  grad = tape.gradient(loss, table)
  assert grad.shape == (50, 16) and np.any(grad.numpy() != 0)


def test_defaults_are_berts_head():
  layer = layers.MaskedLM(_table(), activation='gelu', name='cls/predictions')
  layer(tf.zeros([1, 4, 16]), tf.constant([[0]]))
  assert {w.name for w in layer.weights if w is not layer.embedding_table} == {
      'cls/predictions/transform/dense/kernel:0', 'cls/predictions/transform/dense/bias:0',
      'cls/predictions/transform/LayerNorm/gamma:0', 'cls/predictions/transform/LayerNorm/beta:0',
      'cls/predictions/output_bias/bias:0'}
  config = layer.get_config()
  assert (config['use_bias'], config['norm_use_bias'], config['norm_epsilon']) == (
      True, True, 1e-12)
  assert layer.layer_norm.epsilon == 1e-12


def test_bias_free_head_matches_numpy_erf_gelu_and_round_trips():
  """Hugging Face's ModernBERT head: dense without bias, exact GELU, LayerNorm without bias."""
  table = _table()
  options = dict(use_bias=False, norm_use_bias=False, norm_epsilon=1e-5)
  layer = layers.MaskedLM(table, activation='exact_gelu', **options)
  sequence = np.random.default_rng(2).normal(size=(2, 8, 16)).astype(np.float32)
  positions = np.array([[1, 3, 0], [7, 2, 2]], np.int32)
  layer(sequence, positions)
  rng = np.random.default_rng(3)
  for variable in layer.trainable_variables[1:]:  # all but the table
    variable.assign(1.0 + rng.normal(0, 0.3, size=variable.shape).astype(np.float32))
  assert layer.dense.bias is None and layer.layer_norm.beta is None
  assert len(layer.trainable_variables) == 4  # table, kernel, gamma, output bias
  (kernel,), (gamma,) = layer.dense.get_weights(), layer.layer_norm.get_weights()
  gathered = np.take_along_axis(sequence, positions[..., None], 1).astype(np.float64)
  x = gathered @ kernel
  x = 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
  hidden = numpy_bert.layer_norm(x, gamma, 0.0, eps=1e-5)
  expected = hidden @ table.numpy().T + layer.bias.numpy()
  np.testing.assert_allclose(layer(sequence, positions).numpy(), expected, atol=1e-4)
  testing.run_layer_test(layers.MaskedLM, dict(embedding_table=table, activation='exact_gelu',
                                                **options), [sequence, positions], (2, 3, 50))
  config = layers.MaskedLM.from_config(layer.get_config(), embedding_table=table).get_config()
  assert {k: config[k] for k in options} == options


def _full_sequence_casts(layer_call, features):
  """Cast ops whose output has the whole sequence's shape, in a traced forward + backward pass."""
  @tf.function
  def step(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      total = tf.reduce_sum(tf.cast(layer_call(x), tf.float32))
    return tape.gradient(total, x)

  graph = step.get_concrete_function(tf.TensorSpec(features.shape, features.dtype)).graph
  return [op.name for op in graph.get_operations() if op.type == 'Cast'
          and op.outputs[0].shape.as_list() == features.shape.as_list()]


def test_mixed_bfloat16_heads_cast_only_the_rows_they_read():
  """A float32 sequence output is not cast whole to bfloat16 (nor its gradient back)."""
  features = tf.random.normal([2, 8, 16])
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    masked = layers.MaskedLM(_table(), activation='gelu')
    head = layers.ClassificationHead(inner_dim=4, num_classes=2)
    heads = layers.MultiClsHeads(inner_dim=4, cls_list=[('a', 2)])
    positions = tf.constant([[1, 2], [3, 4]])
    calls = [lambda x: masked(x, positions), head, lambda x: heads(x)['a']]
    found = [_full_sequence_casts(call, features) for call in calls]
    logits = masked(features, positions)
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert found == [[], [], []]
  assert logits.dtype == tf.float32 and logits.shape == (2, 2, 50)
