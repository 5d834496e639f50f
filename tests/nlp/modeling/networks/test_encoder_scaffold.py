"""Tests for official/nlp/modeling/networks/encoder_scaffold.py."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling import networks
from tests import testing
from tests.nlp.modeling import numpy_bert

_EMBEDDING_CFG = dict(vocab_size=20, type_vocab_size=2, hidden_size=8, max_seq_length=6,
                      initializer=tf_keras.initializers.TruncatedNormal(stddev=0.5, seed=1),
                      dropout_rate=0.1)
_HIDDEN_CFG = dict(num_attention_heads=2, intermediate_size=16, intermediate_activation='gelu',
                   dropout_rate=0.1, attention_dropout_rate=0.1,
                   kernel_initializer=tf_keras.initializers.RandomNormal(stddev=0.3, seed=2))


def _encoder(**kwargs):
  kwargs.setdefault('embedding_cfg', _EMBEDDING_CFG)
  kwargs.setdefault('hidden_cfg', _HIDDEN_CFG)
  return networks.EncoderScaffold(pooled_output_dim=8, num_hidden_instances=2, **kwargs)


def _batch():
  rng = np.random.default_rng(0)
  word_ids = rng.integers(0, 20, size=(2, 5)).astype(np.int32)
  mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)
  return word_ids, mask, rng.integers(0, 2, size=(2, 5)).astype(np.int32)


def _numpy_encoder(encoder, word_ids, mask, type_ids):
  # pylint: disable=protected-access
  word = encoder.get_embedding_table().numpy()[word_ids]
  position = encoder._position_embedding_layer.embeddings.numpy()[:word_ids.shape[1]]
  types = encoder._type_embedding_layer.embeddings.numpy()[type_ids]
  x = numpy_bert.layer_norm(word + position[None] + types,
                            *[v.numpy() for v in encoder._embedding_norm_layer.weights])
  outputs = []
  for layer in encoder.hidden_layers:
    x = numpy_bert.transformer_block(x, mask.astype(np.float32), numpy_bert.block_weights(layer))
    outputs.append(x)
  kernel, bias = [v.numpy() for v in encoder.pooler_layer.weights]
  return outputs, np.tanh(x[:, 0] @ kernel + bias)


def test_default_encoder_matches_numpy():
  encoder = _encoder(dict_outputs=True)
  assert encoder.built  # variables exist once constructed
  for v in encoder.weights:
    if 'layer_norm' in v.name or 'bias' in v.name:
      v.assign(v + 0.1)
  word_ids, mask, type_ids = _batch()
  outputs = encoder([word_ids, mask, type_ids])
  expected, pooled = _numpy_encoder(encoder, word_ids, mask, type_ids)
  np.testing.assert_allclose(outputs['sequence_output'], expected[-1], atol=1e-4)
  np.testing.assert_allclose(outputs['pooled_output'], pooled, atol=1e-4)
  for got, want in zip(outputs['encoder_outputs'], expected):
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_names_outputs_and_embedding_table():
  encoder = _encoder(return_all_layer_outputs=True, layer_norm_before_pooling=True)
  names = {v.name.split(':')[0] for v in encoder.weights}
  assert {'word_embeddings/embeddings', 'position_embedding/embeddings',
          'type_embeddings/embeddings', 'embeddings/layer_norm/gamma', 'final_layer_norm/gamma',
          'cls_transform/kernel'} <= names
  # pylint: disable=protected-access
  assert encoder.get_embedding_table() is encoder._embedding_layer.embeddings
  all_outputs, pooled = encoder([*_batch()])
  assert len(all_outputs) == 2 and all_outputs[-1].shape == (2, 5, 8) and pooled.shape == (2, 8)
  assert isinstance(encoder._output_layer_norm, tf_keras.layers.LayerNormalization)
  with pytest.raises(RuntimeError, match='uses the default embeddings'):
    _ = encoder.embedding_network


def test_is_model_gardens_functional_model():
  """Layers in the order of Model Garden's EncoderScaffold (tf-models-official 2.20, default
  embeddings); a walk of the layer graph gives the encoder's outputs."""
  encoder = _encoder()
  assert [x.name for x in encoder.inputs] == ['input_word_ids', 'input_mask', 'input_type_ids']
  names = [f'{type(layer).__name__}:{layer.name}' for layer in encoder.layers]
  assert [name.split(':')[0] for name in names] == [
      'InputLayer', 'OnDeviceEmbedding', 'InputLayer', 'PositionEmbedding', 'OnDeviceEmbedding',
      'Add', 'LayerNormalization', 'Dropout', 'InputLayer', 'SelfAttentionMask', 'Transformer',
      'Transformer', 'SlicingOpLambda', 'Dense']
  assert names[-1] == 'Dense:cls_transform' and names[1] == 'OnDeviceEmbedding:word_embeddings'
  data = [*_batch()]
  expected = encoder(data, training=False)
  for got, want in zip(testing.walk_layer_graph(encoder, data), expected):
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_mixed_precision_output_dtypes():
  tf_keras.mixed_precision.set_global_policy('mixed_float16')
  try:
    sequence, pooled = _encoder()([*_batch()])
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert sequence.dtype == tf.float32 and pooled.dtype == tf.float16


def test_config_json_round_trip():
  encoder = _encoder(name='scaffold')
  config = json.loads(encoder.to_json())['config']
  assert config['hidden_cls_string'] == 'mlm_garden>Transformer'
  assert config['mask_cls_string'] == 'mlm_garden>SelfAttentionMask'
  rebuilt = networks.EncoderScaffold.from_config(config)
  assert rebuilt.name == 'scaffold'
  rebuilt.set_weights(encoder.get_weights())
  batch = _batch()
  for got, want in zip(rebuilt(list(batch)), encoder(list(batch))):
    np.testing.assert_allclose(got, want, atol=1e-6)


class _CountingLayer(tf_keras.layers.Layer):
  """A hidden layer that adds its index and threads a count through `recursive` calls."""

  def __init__(self, layer_idx=0, **kwargs):
    super().__init__(**kwargs)
    self.layer_idx = layer_idx

  def call(self, inputs):
    x, _, count = inputs
    count = tf.ones_like(x[:, :1, :1]) if count is None else count + 1
    return x + float(self.layer_idx), count


def test_custom_embedding_network_recursive_layers_and_layer_index():
  word_ids = tf_keras.Input((None,), dtype=tf.int32, name='input_word_ids')
  mask = tf_keras.Input((None,), dtype=tf.int32, name='input_mask')
  embedding_layer = layers.OnDeviceEmbedding(20, 4, name='word_embeddings')
  words = embedding_layer(word_ids)
  embedding_network = tf_keras.Model([word_ids, mask],
                                     [words, layers.SelfAttentionMask()(words, mask)])
  encoder = networks.EncoderScaffold(
      pooled_output_dim=4, embedding_cls=embedding_network,
      embedding_data=embedding_layer.embeddings, num_hidden_instances=3,
      hidden_cls=_CountingLayer, hidden_cfg={}, feed_layer_idx=True, recursive=True)
  ids = np.array([[1, 2, 3]], np.int32)
  sequence, _ = encoder([ids, np.ones_like(ids)])
  np.testing.assert_allclose(sequence, embedding_layer(ids) + 0.0 + 1.0 + 2.0, atol=1e-6)
  assert [layer.layer_idx for layer in encoder.hidden_layers] == [0, 1, 2]
  assert encoder.get_embedding_table() is embedding_layer.embeddings
  assert encoder.embedding_network is embedding_network
  copy = networks.EncoderScaffold.from_config(encoder.get_config())
  with pytest.raises(RuntimeError, match='does not have a reference to the embedding data'):
    copy.get_embedding_table()


def test_errors_name_the_argument():
  with pytest.raises(ValueError, match=r"missing \['type_vocab_size'"):
    _encoder(embedding_cfg=dict(vocab_size=10, hidden_size=8))
  with pytest.raises(ValueError, match='hidden_cls lists 1 classes or layers, '
                                       'num_hidden_instances is 2'):
    _encoder(hidden_cls=[layers.Transformer])
