"""Tests for official/nlp/modeling/networks/span_labeling.py."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import networks
from tests import testing


def test_span_labeling_logits_are_the_dense_columns():
  sequence = np.random.default_rng(0).normal(size=(2, 5, 4)).astype(np.float32)
  layer = networks.SpanLabeling(input_width=4)
  start, end = layer(tf.constant(sequence))
  kernel, bias = (w.numpy() for w in layer.dense.weights)
  logits = sequence @ kernel + bias  # [2, 5, 2]
  np.testing.assert_allclose(start.numpy(), logits[..., 0], atol=1e-5)
  np.testing.assert_allclose(end.numpy(), logits[..., 1], atol=1e-5)
  assert layer.dense.name == 'predictions/transform/logits'

  log_probs = networks.SpanLabeling(input_width=4, output='predictions')
  log_probs.dense.set_weights([kernel, bias])
  start_lp, _ = log_probs(tf.constant(sequence))
  expected = logits[..., 0] - np.log(np.exp(logits[..., 0]).sum(-1, keepdims=True))
  np.testing.assert_allclose(start_lp.numpy(), expected, atol=1e-5)


def test_span_labeling_exposes_its_symbolic_logits():
  net = networks.SpanLabeling(input_width=4, output='predictions')
  logits_model = tf_keras.Model(net.inputs, [net.start_logits, net.end_logits])
  sequence = tf.random.stateless_normal([2, 5, 4], seed=[1, 2])
  start, end = logits_model(sequence)
  kernel, bias = (w.numpy() for w in net.dense.weights)
  logits = sequence.numpy() @ kernel + bias
  np.testing.assert_allclose(start.numpy(), logits[..., 0], atol=1e-5)
  np.testing.assert_allclose(end.numpy(), logits[..., 1], atol=1e-5)


def test_span_labeling_checkpoint_keys_are_model_gardens(tmp_path):
  net = networks.SpanLabeling(input_width=4)
  path = tf.train.Checkpoint(net=net).write(str(tmp_path / 'ckpt'))
  keys = {name for name, _ in tf.train.list_variables(path)}
  assert 'net/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE' in keys
  assert not any('/dense/' in key for key in keys), keys
  # A checkpoint with the earlier key (`dense`, when SpanLabeling was a layer) still restores.
  dense = tf_keras.layers.Dense(2)
  dense.build([None, 4])
  dense.kernel.assign(np.arange(8, dtype=np.float32).reshape(4, 2))
  old = tf.train.Checkpoint(net=tf.train.Checkpoint(dense=dense)).write(str(tmp_path / 'old'))
  tf.train.Checkpoint(net=net).read(old).assert_existing_objects_matched()
  np.testing.assert_array_equal(net.dense.kernel.numpy(), dense.kernel.numpy())


def test_span_labeling_errors_name_the_argument():
  with pytest.raises(ValueError, match="Unknown `output` value \"probs\": SpanLabeling output must "
                     "be one of \\['logits', 'predictions'\\]"):
    networks.SpanLabeling(input_width=4, output='probs')
  with pytest.raises(ValueError,
                     match=r'expected shape=\(None, None, 4\), found shape=\(1, 3, 6\)'):
    networks.SpanLabeling(input_width=4)(tf.zeros([1, 3, 6]))


def test_span_labeling_config_round_trip():
  testing.run_layer_test(networks.SpanLabeling,
                         dict(input_width=4, activation='tanh', output='predictions'),
                         [tf.zeros([2, 5, 4]) + 0.5], [(2, 5), (2, 5)])
  net = networks.SpanLabeling(input_width=4, initializer='zeros')
  assert networks.SpanLabeling.from_config(net.get_config()).to_json() == net.to_json()


def _xlnet_inputs():
  rng = np.random.default_rng(1)
  sequence = tf.constant(rng.normal(size=(2, 6, 4)).astype(np.float32))
  paragraph_mask = tf.constant([[0, 0, 1, 1, 1, 0], [0, 1, 1, 1, 1, 1]], tf.float32)
  return sequence, tf.constant([0, 0]), paragraph_mask


def test_xlnet_span_labeling_beam_search_matches_per_start_end_logits():
  head = networks.XLNetSpanLabeling(input_width=4, start_n_top=2, end_n_top=3)
  sequence, class_index, paragraph_mask = _xlnet_inputs()
  out = head(sequence, class_index=class_index, paragraph_mask=paragraph_mask)
  assert out['end_logits'].shape == (2, 2, 6) and out['end_top_index'].shape == (2, 6)
  start_logits = head.start_logits_dense(sequence)[..., 0].numpy()
  mask = paragraph_mask.numpy()
  np.testing.assert_allclose(out['start_logits'].numpy(),
                             np.where(mask > 0, start_logits, -1e30), rtol=1e-6)
  # The best starts lie inside the paragraph; each one's end logits are those of the true-start
  # path with that start.
  top = out['start_top_index'].numpy()
  assert (np.take_along_axis(mask, top, 1) == 1).all()
  for k in range(2):
    given = head(sequence, class_index=class_index, paragraph_mask=paragraph_mask,
                 start_positions=tf.constant(top[:, k]), training=True)
    assert 'start_top_index' not in given
    np.testing.assert_allclose(out['end_logits'].numpy()[:, k], given['end_logits'].numpy(),
                               rtol=1e-5, atol=1e-5)
  # Answerability: CLS state and the start-probability-weighted state.
  probs = np.exp(out['start_predictions'].numpy())
  features = np.concatenate([np.einsum('blh,bl->bh', sequence.numpy(), probs),
                             sequence.numpy()[:, 0]], -1)
  expected = head.answer_logits_output(head.answer_logits_inner(features))[:, 0]
  np.testing.assert_allclose(out['class_logits'].numpy(), expected.numpy(), atol=1e-5)


def test_xlnet_span_labeling_config_and_errors():
  sequence, class_index, paragraph_mask = _xlnet_inputs()
  head = networks.XLNetSpanLabeling(input_width=4, start_n_top=2, end_n_top=2, dropout_rate=0.2,
                                    initializer='zeros')
  call = dict(class_index=class_index, paragraph_mask=paragraph_mask)
  out = head(sequence, **call)
  rebuilt = networks.XLNetSpanLabeling.from_config(json.loads(json.dumps(head.get_config())))
  assert rebuilt.get_config() == head.get_config()
  rebuilt(sequence, **call)
  rebuilt.set_weights(head.get_weights())
  again = rebuilt(sequence, **call)
  assert set(again) == set(out)
  for key in out:
    np.testing.assert_allclose(again[key].numpy(), out[key].numpy())
  with pytest.raises(ValueError, match='start_n_top must be greater than 1, found 1'):
    networks.XLNetSpanLabeling(input_width=4, start_n_top=1)
