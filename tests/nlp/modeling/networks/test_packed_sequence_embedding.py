"""Tests for official/nlp/modeling/networks/packed_sequence_embedding.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import networks
from official.nlp.modeling.networks import packed_sequence_embedding as pse
from tests import testing

_IDS = np.array([[1, 5, 6, 1, 7, 0], [1, 4, 4, 4, 0, 0]], np.int32)
_MASK = np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 0, 0]], np.int32)
_TYPES = np.array([[0, 0, 1, 0, 1, 1], [0, 0, 0, 1, 1, 1]], np.int32)


def _net(**kwargs):
  config = dict(vocab_size=10, type_vocab_size=2, embedding_width=8, hidden_size=8,
                max_seq_length=16, initializer='glorot_uniform', dropout_rate=0.0)
  config.update(kwargs)
  return networks.PackedSequenceEmbedding(**config)


def _inputs(**extra):
  return dict(input_word_ids=_IDS, input_mask=_MASK, input_type_ids=_TYPES, **extra)


def _layer_norm(x):
  mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + 1e-12)  # gamma 1, beta 0 at initialization


def test_packed_rows_restart_positions_and_attend_within_their_sequence():
  net = _net(pack_multiple_sequences=True)
  embeddings, mask = net(_inputs())
  words = net.get_embedding_table().numpy()
  positions = net.get_layer('position_embedding').weights[0].numpy()
  types = net.get_layer('type_embeddings').weights[0].numpy()
  # Row 0 packs two sequences ([1 5 6] and [1 7 0]): positions 0 1 2 0 1 2.
  position_ids = np.array([[0, 1, 2, 0, 1, 2], [0, 1, 2, 3, 4, 5]])
  expected = _layer_norm(words[_IDS] + positions[position_ids] + types[_TYPES])
  np.testing.assert_allclose(embeddings.numpy(), expected, atol=1e-5)
  sequence = np.array([[0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 0, 0]])
  same = sequence[:, :, None] == sequence[:, None, :]
  np.testing.assert_array_equal(mask.numpy(), same * _MASK[:, None, :])


def test_position_ids_input_and_projection():
  net = _net(use_position_id=True, hidden_size=12)
  position_ids = np.array([[3, 2, 1, 0, 5, 4]] * 2, np.int32)
  embeddings, mask = net(_inputs(position_ids=position_ids))
  assert embeddings.shape == (2, 6, 12) and mask.shape == (2, 6, 6)
  words = net.get_embedding_table().numpy()
  positions = net.get_layer('position_embedding').weights[0].numpy()
  types = net.get_layer('type_embeddings').weights[0].numpy()
  kernel = net.get_layer('embedding_projection').kernel.numpy()
  assert len(net.get_layer('embedding_projection').weights) == 1  # no bias, as Model Garden's
  expected = _layer_norm(words[_IDS] + positions[position_ids] + types[_TYPES]) @ kernel
  np.testing.assert_allclose(embeddings.numpy(), expected, atol=1e-5)
  np.testing.assert_array_equal(mask.numpy(), np.broadcast_to(_MASK[:, None, :], (2, 6, 6)))


def test_mixed_float16_and_checkpoint_layout(tmp_path):
  tf_keras.mixed_precision.set_global_policy('mixed_float16')
  try:
    net = _net(hidden_size=12, pack_multiple_sequences=True)
    embeddings, mask = net(_inputs())
    assert embeddings.dtype == tf.float16 and mask.dtype == tf.float16
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  path = tf.train.Checkpoint(net=net).write(str(tmp_path / 'ckpt'))
  keys = {name.split('/.ATTRIBUTES')[0] for name, _ in tf.train.list_variables(path)}
  # Model Garden's functional order: words, positions, types, layer norm, projection.
  assert {'net/layer_with_weights-0/embeddings', 'net/layer_with_weights-1/embeddings',
          'net/layer_with_weights-2/embeddings', 'net/layer_with_weights-3/gamma',
          'net/layer_with_weights-4/kernel'} <= keys, keys


def test_config_round_trip_and_errors():
  config = dict(vocab_size=10, type_vocab_size=2, embedding_width=None, hidden_size=8,
                max_seq_length=16, initializer='glorot_uniform', dropout_rate=0.0,
                use_position_id=False, pack_multiple_sequences=True)
  testing.run_layer_test(networks.PackedSequenceEmbedding, config, [_inputs()],
                         [(2, 6, 8), (2, 6, 6)])
  assert _net().get_config()['embedding_width'] == 8
  with pytest.raises(ValueError, match='use_dynamic_slicing=True needs max_sequence_length'):
    pse.PositionEmbeddingWithSubSeqMask(use_dynamic_slicing=True)
  with pytest.raises(ValueError, match='max_sequence_length must be None without '
                     'use_dynamic_slicing'):
    pse.PositionEmbeddingWithSubSeqMask(max_sequence_length=4)(tf.zeros([1, 3, 2]))
  static = pse.PositionEmbeddingWithSubSeqMask()
  assert static(tf.zeros([1, 3, 2])).shape == (1, 3, 2)
  assert static.weights[0].shape == (3, 2)
