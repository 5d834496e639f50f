"""Tests for official/nlp/modeling/networks/albert_encoder.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import networks
from official.nlp.modeling.networks import albert_encoder
from tests import testing
from tests.nlp.modeling import numpy_bert

VOCAB, WIDTH, HIDDEN, LAYERS, SEQ = 40, 8, 16, 3, 7


def _encoder(**kwargs):
  defaults = dict(vocab_size=VOCAB, embedding_width=WIDTH, hidden_size=HIDDEN, num_layers=LAYERS,
                  num_attention_heads=2, intermediate_size=32, max_sequence_length=12,
                  type_vocab_size=2, dropout_rate=0.0, attention_dropout_rate=0.0,
                  initializer=tf_keras.initializers.TruncatedNormal(stddev=0.5, seed=3),
                  dict_outputs=True)
  defaults.update(kwargs)
  return albert_encoder.AlbertEncoder(**defaults)


def _inputs(batch=3, seed=0):
  rng = np.random.default_rng(seed)
  word_ids = rng.integers(0, VOCAB, (batch, SEQ)).astype(np.int32)
  mask = np.ones((batch, SEQ), np.int32)
  mask[1, 4:] = 0
  mask[2, 2:] = 0
  type_ids = (np.arange(SEQ) >= 3).astype(np.int32)[None].repeat(batch, 0)
  return word_ids, mask, type_ids


def _numpy_albert(encoder, word_ids, mask, type_ids):
  """Every layer's output and the pooled output of an ALBERT encoder, in numpy from its weights."""
  get = lambda name: [v.numpy() for v in encoder.get_layer(name).weights]
  word = get('word_embeddings')[0][word_ids]
  position = get('position_embedding')[0][:word_ids.shape[1]]
  types = get('type_embeddings')[0][type_ids]
  x = numpy_bert.layer_norm(word + position[None] + types, *get('embeddings/layer_norm'))
  if any(layer.name == 'embedding_projection' for layer in encoder.layers):
    kernel, bias = get('embedding_projection')
    x = x @ kernel + bias
  weights = numpy_bert.block_weights(encoder.transformer_layer)  # one block, applied every layer
  layers = []
  for _ in range(encoder.get_config()['num_layers']):
    x = numpy_bert.transformer_block(x, mask.astype(np.float32), weights)
    layers.append(x)
  kernel, bias = get('pooler_transform')
  return layers, np.tanh(x[:, 0] @ kernel + bias)


@pytest.mark.slow
@pytest.mark.parametrize('embedding_width', [WIDTH, HIDDEN])
def test_forward_matches_numpy_with_one_shared_block(embedding_width):
  encoder = _encoder(embedding_width=embedding_width)
  word_ids, mask, type_ids = _inputs()
  outputs = encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  layers, pooled = _numpy_albert(encoder, word_ids, mask, type_ids)
  assert len(outputs['encoder_outputs']) == LAYERS
  for ours, expected in zip(outputs['encoder_outputs'], layers):
    np.testing.assert_allclose(ours, expected, atol=2e-5)
  np.testing.assert_allclose(outputs['sequence_output'], layers[-1], atol=2e-5)
  np.testing.assert_allclose(outputs['pooled_output'], pooled, atol=2e-5)
  # Applying the shared block again changes the states: the layers are not copies of one output.
  assert np.abs(layers[0] - layers[-1]).max() > 1e-3


def test_weights_exist_at_construction_and_are_shared_across_layers():
  one, many = _encoder(num_layers=1), _encoder(num_layers=6)
  assert one.built and many.built
  assert one.count_params() == many.count_params()
  expected = (VOCAB * WIDTH + 12 * WIDTH + 2 * WIDTH + 2 * WIDTH + (WIDTH + 1) * HIDDEN
              + 4 * (HIDDEN + 1) * HIDDEN + 2 * HIDDEN + (HIDDEN + 1) * 32 + (32 + 1) * HIDDEN
              + 2 * HIDDEN + (HIDDEN + 1) * HIDDEN)
  assert many.count_params() == expected
  names = [w.name for w in many.weights]
  assert 'embedding_projection/kernel:0' in names
  assert 'transformer/self_attention/query/kernel:0' in names
  assert not [n for n in names if 'transformer/layer' in n]
  assert many.get_embedding_table().shape == (VOCAB, WIDTH)
  assert many.get_embedding_layer() is many.get_layer('word_embeddings')
  # Without a factorization there is no projection (None means hidden_size).
  plain = _encoder(embedding_width=None)
  assert plain.get_config()['embedding_width'] == HIDDEN
  assert not [w for w in plain.weights if 'embedding_projection' in w.name]


@pytest.mark.slow
def test_list_and_dict_inputs_and_outputs_agree():
  word_ids, mask, type_ids = _inputs()
  as_dict = _encoder()
  as_list = _encoder(dict_outputs=False)
  as_list.set_weights(as_dict.get_weights())
  sequence, pooled = as_list([word_ids, mask, type_ids])
  # Extra keys (the pretrainer's masked_lm_positions) are ignored.
  outputs = as_dict(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids,
                         masked_lm_positions=np.zeros([3, 2], np.int32)))
  np.testing.assert_array_equal(sequence, outputs['sequence_output'])
  np.testing.assert_array_equal(pooled, outputs['pooled_output'])
  # Symbolic inputs make a functional model.
  model = tf_keras.Model(as_list.inputs, as_list(as_list.inputs))
  np.testing.assert_allclose(model.predict([word_ids, mask, type_ids], verbose=0)[0], sequence,
                             atol=1e-6)


def test_padding_does_not_change_real_tokens():
  encoder = _encoder()
  word_ids, mask, type_ids = _inputs()
  changed = word_ids.copy()
  changed[1, 4:] = (changed[1, 4:] + 5) % VOCAB
  first = encoder([word_ids, mask, type_ids])['sequence_output']
  second = encoder([changed, mask, type_ids])['sequence_output']
  np.testing.assert_allclose(first[1, :4], second[1, :4], atol=1e-6)


@pytest.mark.slow
def test_config_round_trip_and_serialization():
  word_ids, mask, type_ids = _inputs()
  kwargs = dict(vocab_size=VOCAB, embedding_width=WIDTH, hidden_size=HIDDEN, num_layers=2,
                num_attention_heads=2, max_sequence_length=12, type_vocab_size=3,
                intermediate_size=24, activation='relu', dropout_rate=0.05,
                attention_dropout_rate=0.1, initializer='glorot_uniform')
  testing.run_layer_test(albert_encoder.AlbertEncoder, kwargs, [[word_ids, mask, type_ids]],
                         [(3, SEQ, HIDDEN), (3, HIDDEN)])
  config = albert_encoder.AlbertEncoder(**kwargs).get_config()
  # Model Garden's keys (no dict_outputs unless set, no name).
  assert config == dict(kwargs, initializer=tf_keras.initializers.serialize(
      tf_keras.initializers.get('glorot_uniform')))
  with_dict = albert_encoder.AlbertEncoder(**kwargs, dict_outputs=True)
  rebuilt = albert_encoder.AlbertEncoder.from_config(with_dict.get_config())
  assert isinstance(rebuilt([word_ids, mask, type_ids]), dict)


def test_mixed_precision_output_dtypes():
  tf_keras.mixed_precision.set_global_policy('mixed_float16')
  try:
    encoder = _encoder()
    outputs = encoder(list(_inputs()))
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert outputs['sequence_output'].dtype == tf.float32
  assert all(o.dtype == tf.float32 for o in outputs['encoder_outputs'])
  assert outputs['pooled_output'].dtype == tf.float16
  assert all(w.dtype == tf.float32 for w in encoder.weights)


def test_checkpoint_keys_are_model_gardens(tmp_path):
  encoder = _encoder()
  prefix = tf.train.Checkpoint(encoder=encoder).save(str(tmp_path / 'ckpt'))
  keys = {name.split('/.ATTRIBUTES/')[0]: shape for name, shape in tf.train.list_variables(prefix)}
  # The keys and shapes Model Garden's functional AlbertEncoder writes (its layers in graph order).
  block = 'encoder/layer_with_weights-5'
  expected = {
      'encoder/layer_with_weights-0/embeddings': [VOCAB, WIDTH],
      'encoder/layer_with_weights-1/embeddings': [12, WIDTH],
      'encoder/layer_with_weights-2/embeddings': [2, WIDTH],
      'encoder/layer_with_weights-3/gamma': [WIDTH], 'encoder/layer_with_weights-3/beta': [WIDTH],
      'encoder/layer_with_weights-4/kernel': [WIDTH, HIDDEN],
      'encoder/layer_with_weights-4/bias': [HIDDEN],
      f'{block}/_attention_layer/_query_dense/kernel': [HIDDEN, 2, 8],
      f'{block}/_attention_layer/_query_dense/bias': [2, 8],
      f'{block}/_attention_layer/_key_dense/kernel': [HIDDEN, 2, 8],
      f'{block}/_attention_layer/_key_dense/bias': [2, 8],
      f'{block}/_attention_layer/_value_dense/kernel': [HIDDEN, 2, 8],
      f'{block}/_attention_layer/_value_dense/bias': [2, 8],
      f'{block}/_attention_layer/_output_dense/kernel': [2, 8, HIDDEN],
      f'{block}/_attention_layer/_output_dense/bias': [HIDDEN],
      f'{block}/_attention_layer_norm/gamma': [HIDDEN],
      f'{block}/_attention_layer_norm/beta': [HIDDEN],
      f'{block}/_intermediate_dense/kernel': [HIDDEN, 32],
      f'{block}/_intermediate_dense/bias': [32],
      f'{block}/_output_dense/kernel': [32, HIDDEN], f'{block}/_output_dense/bias': [HIDDEN],
      f'{block}/_output_layer_norm/gamma': [HIDDEN], f'{block}/_output_layer_norm/beta': [HIDDEN],
      'encoder/layer_with_weights-6/kernel': [HIDDEN, HIDDEN],
      'encoder/layer_with_weights-6/bias': [HIDDEN],
      '_CHECKPOINTABLE_OBJECT_GRAPH': [], 'save_counter': [],
  }
  assert keys == expected
  # A second encoder restores every value (by the indexed keys and the attribute names).
  other = _encoder(initializer=tf_keras.initializers.TruncatedNormal(stddev=0.5, seed=9))
  tf.train.Checkpoint(encoder=other).restore(prefix).assert_consumed()
  for a, b in zip(encoder.weights, other.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_bad_arguments_and_inputs_are_named():
  with pytest.raises(ValueError, match=r'num_attention_heads must be at most hidden_size 16, '
                     r'found 32'):
    _encoder(num_attention_heads=32)
  with pytest.raises(ValueError, match=r'vocab_size must be a positive integer, found 0'):
    _encoder(vocab_size=0)
  encoder = _encoder()
  word_ids, mask, _ = _inputs()
  with pytest.raises(ValueError, match=r'Missing data for input "input_type_ids"'):
    encoder(dict(input_word_ids=word_ids, input_mask=mask))
  with pytest.raises(ValueError, match='expects 3 input'):
    encoder([word_ids, mask])


def test_exported_from_networks():
  assert networks.AlbertEncoder is albert_encoder.AlbertEncoder


def test_is_model_gardens_functional_model():
  """Layers and weights in the order of Model Garden's functional AlbertEncoder (tf-models-official
  2.20, same config), without its weightless `SelfAttentionMask`; a walk of the layer graph gives
  the encoder's outputs."""
  encoder = _encoder(dict_outputs=False)
  assert [x.name for x in encoder.inputs] == ['input_word_ids', 'input_mask', 'input_type_ids']
  assert [f'{type(layer).__name__}:{layer.name}' for layer in encoder.layers] == [
      'InputLayer:input_word_ids', 'OnDeviceEmbedding:word_embeddings',
      'InputLayer:input_type_ids', 'PositionEmbedding:position_embedding',
      'OnDeviceEmbedding:type_embeddings', f'Add:{encoder.layers[5].name}',
      'LayerNormalization:embeddings/layer_norm', 'Dropout:embedding_dropout',
      'Dense:embedding_projection', 'InputLayer:input_mask', 'TransformerEncoderBlock:transformer',
      f'SlicingOpLambda:{encoder.layers[-2].name}', 'Dense:pooler_transform']
  names = [w.name for w in encoder.weights]
  assert names[:7] == ['word_embeddings/embeddings:0', 'position_embedding/embeddings:0',
                       'type_embeddings/embeddings:0', 'embeddings/layer_norm/gamma:0',
                       'embeddings/layer_norm/beta:0', 'embedding_projection/kernel:0',
                       'embedding_projection/bias:0']
  assert names[7] == 'transformer/self_attention/query/kernel:0'
  assert names[-2:] == ['pooler_transform/kernel:0', 'pooler_transform/bias:0']
  assert len(names) == 7 + 16 + 2
  word_ids, mask, type_ids = _inputs()
  expected = encoder([word_ids, mask, type_ids])
  walked = testing.walk_layer_graph(encoder, [word_ids, mask, type_ids])
  for got, want in zip(walked, expected):
    np.testing.assert_allclose(got, want, atol=1e-6)
