"""Tests for official/nlp/modeling/networks/modernbert_encoder.py and
modernbert_encoder_config.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling import hyperparams
from official.nlp.configs import encoders
from official.nlp.modeling import networks
from official.nlp.modeling.networks import modernbert_encoder
from official.nlp.modeling.networks import modernbert_encoder_config
from tests import testing
from tests.nlp.modeling import numpy_modernbert

VOCAB, HIDDEN, LAYERS, SEQ, WINDOW = 40, 16, 3, 9, 4
GLOBAL_THETA, LOCAL_THETA = 1000.0, 50.0


def _kwargs(**overrides):
  kwargs = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_layers=LAYERS, num_attention_heads=2,
                intermediate_size=12, global_rope_theta=GLOBAL_THETA,
                local_rope_theta=LOCAL_THETA, local_attention=WINDOW,
                global_attn_every_n_layers=3,
                initializer=tf_keras.initializers.TruncatedNormal(stddev=0.5, seed=3))
  kwargs.update(overrides)
  return kwargs


def _encoder(**overrides):
  encoder = modernbert_encoder.ModernBertEncoder(**_kwargs(**overrides))
  rng = np.random.default_rng(7)
  for v in encoder.weights:  # non-trivial norm scales
    if 'gamma' in v.name:
      v.assign(v + rng.normal(scale=0.2, size=v.shape).astype(np.float32))
  return encoder


def _inputs(batch=2, seed=0):
  rng = np.random.default_rng(seed)
  word_ids = rng.integers(0, VOCAB, (batch, SEQ)).astype(np.int32)
  mask = np.ones((batch, SEQ), np.int32)
  mask[1, 6:] = 0
  return word_ids, mask


def _block_weights(block):
  prefix = block.name + '/'
  return {v.name[len(prefix):].split(':')[0].replace('self_attention/', '', 1)
          if '_norm' not in v.name else v.name[len(prefix):].split(':')[0]: v.numpy()
          for v in block.weights}


def _numpy_modernbert(encoder, word_ids, mask, positions=None):
  """Every layer's output (the last after the final norm), from HF's formulas in numpy."""
  table = encoder.get_embedding_table().numpy()
  gamma = lambda name: encoder.get_layer(name).weights[0].numpy()
  x = numpy_modernbert.layer_norm(table[word_ids], gamma('embeddings/layer_norm'))
  mask = mask.astype(np.float64)
  if positions is not None:  # packed rows: attention within each document (positions restart)
    documents = np.cumsum(positions == 0, axis=1)
    mask = mask[:, None, :] * (documents[:, :, None] == documents[:, None, :])
  outputs = []
  for i, block in enumerate(encoder.transformer_layers):
    w = _block_weights(block)
    is_global = i % 3 == 0
    options = dict(rotary_theta=GLOBAL_THETA if is_global else LOCAL_THETA, positions=positions,
                   window=None if is_global else WINDOW)
    if i == 0:  # Hugging Face's first layer: no attention norm
      h = x + numpy_modernbert.attention(x, mask, w, **options)
      x = h + numpy_modernbert.geglu(numpy_modernbert.layer_norm(h, w['output_layer_norm/gamma']),
                                     w['intermediate/kernel'], w['output/kernel'])
    else:
      x = numpy_modernbert.encoder_layer(x, mask, w, norm_first=True, **options)
    outputs.append(x)
  outputs[-1] = numpy_modernbert.layer_norm(x, gamma('final_layer_norm'))
  return outputs


def test_forward_matches_numpy():
  encoder = _encoder()
  word_ids, mask = _inputs()
  outputs = encoder({'input_word_ids': word_ids, 'input_mask': mask,
                     'input_type_ids': np.ones_like(word_ids)})  # type ids are ignored
  expected = _numpy_modernbert(encoder, word_ids, mask)
  tokens = mask.astype(bool)
  assert len(outputs['encoder_outputs']) == LAYERS
  for got, want in zip(outputs['encoder_outputs'], expected):
    assert got.dtype == tf.float32
    np.testing.assert_allclose(got.numpy()[tokens], want[tokens], atol=2e-4)
  np.testing.assert_allclose(outputs['sequence_output'].numpy()[tokens], expected[-1][tokens],
                             atol=2e-4)
  np.testing.assert_allclose(outputs['pooled_output'].numpy(), expected[-1][:, 0], atol=2e-4)


def test_packed_position_ids_match_numpy_and_default_to_a_range():
  encoder = _encoder()
  word_ids, mask = _inputs()
  positions = np.array([[0, 1, 2, 3, 0, 1, 2, 0, 1], [0, 1, 2, 0, 1, 2, 0, 0, 0]], np.int32)
  packed = encoder({'input_word_ids': word_ids, 'input_mask': mask,
                    'input_position_ids': positions})['sequence_output'].numpy()
  tokens = mask.astype(bool)
  expected = _numpy_modernbert(encoder, word_ids, mask, positions)[-1]
  np.testing.assert_allclose(packed[tokens], expected[tokens], atol=2e-4)
  # The data loaders' key `position_ids` is the same input.
  loader_keys = encoder({'input_word_ids': word_ids, 'input_mask': mask,
                         'position_ids': positions})['sequence_output'].numpy()
  np.testing.assert_allclose(loader_keys, packed, atol=1e-6)
  default = encoder([word_ids, mask, 0 * word_ids])['sequence_output'].numpy()
  ranged = encoder([word_ids, mask, 0 * word_ids, np.tile(np.arange(SEQ, dtype=np.int32), [2, 1])])
  np.testing.assert_allclose(default, ranged['sequence_output'].numpy(), atol=1e-6)
  assert not np.allclose(default[tokens], packed[tokens], atol=1e-3)


def test_weights_exist_at_construction_and_layer_structure():
  encoder = modernbert_encoder.ModernBertEncoder(**_kwargs())
  names = [v.name for v in encoder.weights]
  assert names[:2] == ['word_embeddings/embeddings:0', 'embeddings/layer_norm/gamma:0']
  assert names[-1] == 'final_layer_norm/gamma:0'
  assert not any('bias' in name or 'beta' in name for name in names)
  # Layer 0 has no attention norm (as in Hugging Face); the others do.
  assert 'transformer/layer_0/self_attention_layer_norm/gamma:0' not in names
  assert 'transformer/layer_1/self_attention_layer_norm/gamma:0' in names
  shapes = {v.name: tuple(v.shape) for v in encoder.weights}
  assert shapes['transformer/layer_1/intermediate/kernel:0'] == (HIDDEN, 2 * 12)  # GeGLU
  assert encoder.get_embedding_table().shape == (VOCAB, HIDDEN)
  assert len(encoder.trainable_weights) == 2 + 7 + 2 * 8 + 1


@pytest.mark.slow
def test_local_and_global_layers_as_configured():
  encoder = modernbert_encoder.ModernBertEncoder(**_kwargs(num_layers=7,
                                                           global_attn_every_n_layers=3))
  windows = [(block.attention_window, block.rotary_theta) for block in encoder.transformer_layers]
  glob, loc = (None, GLOBAL_THETA), (WINDOW, LOCAL_THETA)
  assert windows == [glob, loc, loc, glob, loc, loc, glob]
  # A local layer's token i sees j with |i - j| <= WINDOW // 2: changing the last token changes
  # only the outputs of the tokens within reach of it.
  block = encoder.transformer_layers[1]
  x = tf.random.normal([1, SEQ, HIDDEN], seed=1)
  changed = tf.tensor_scatter_nd_update(x, [[0, SEQ - 1]], tf.ones([1, HIDDEN]))
  ones = tf.ones([1, SEQ])
  delta = np.abs((block(changed, ones) - block(x, ones)).numpy()[0]).max(axis=-1)
  assert np.all(delta[:SEQ - 1 - WINDOW // 2] == 0) and np.all(delta[SEQ - 1 - WINDOW // 2:] > 0)


@pytest.mark.slow
def test_config_round_trip():
  encoder = _encoder()
  config = encoder.get_config()
  assert config['local_attention'] == WINDOW and config['activation'] == 'exact_gelu'
  clone = modernbert_encoder.ModernBertEncoder.from_config(config)
  assert clone.get_config() == config
  clone.set_weights(encoder.get_weights())
  word_ids, mask = _inputs()
  np.testing.assert_allclose(clone([word_ids, mask])['sequence_output'].numpy(),
                             encoder([word_ids, mask])['sequence_output'].numpy(), atol=1e-6)
  rebuilt = tf_keras.utils.deserialize_keras_object(tf_keras.utils.serialize_keras_object(encoder))
  assert type(rebuilt) is networks.ModernBertEncoder and rebuilt.get_config() == config


def test_first_block_round_trip():
  kwargs = dict(num_attention_heads=2, inner_dim=12, norm_first=True, use_bias=False,
                norm_use_bias=False, gated_inner=True, rotary_theta=100.0,
                inner_activation='exact_gelu')
  x = np.random.default_rng(0).normal(size=(2, 5, HIDDEN)).astype(np.float32)
  testing.run_layer_test(modernbert_encoder._NoAttentionNormBlock, kwargs, [x], (2, 5, HIDDEN))
  block = modernbert_encoder._NoAttentionNormBlock(**kwargs)
  block(x)
  assert not any('self_attention_layer_norm' in v.name for v in block.weights)
  assert any('output_layer_norm' in v.name for v in block.weights)


@pytest.mark.slow
def test_jit_compiled_forward_matches_eager():
  encoder = _encoder()
  word_ids, mask = _inputs()
  inputs = {'input_word_ids': tf.constant(word_ids), 'input_mask': tf.constant(mask)}
  compiled = tf.function(lambda x: encoder(x)['sequence_output'], jit_compile=True)
  np.testing.assert_allclose(compiled(inputs).numpy(), encoder(inputs)['sequence_output'].numpy(),
                             atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize('policy', ['mixed_bfloat16', 'mixed_float16'])
def test_mixed_precision_matches_float32(policy):
  """Under a mixed policy the variables stay float32, the outputs are float32 and close to the
  float32 encoder's (packed rows and the blocked local path included)."""
  seq = 40
  rng = np.random.default_rng(2)
  word_ids = rng.integers(1, VOCAB, (2, seq)).astype(np.int32)
  positions = np.concatenate([np.arange(15), np.arange(25)])[None].repeat(2, 0).astype(np.int32)
  inputs = {'input_word_ids': word_ids, 'input_mask': np.ones_like(word_ids),
            'position_ids': positions}
  reference = _encoder()
  expected = reference(inputs)['sequence_output'].numpy()
  tf_keras.mixed_precision.set_global_policy(policy)
  try:
    encoder = modernbert_encoder.ModernBertEncoder(**_kwargs())
    encoder.set_weights(reference.get_weights())
    outputs = encoder(inputs)
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert all(v.dtype == tf.float32 for v in encoder.variables)
  assert outputs['sequence_output'].dtype == tf.float32
  # The final LayerNorm makes the outputs O(1): low precision stays close.
  atol = 0.15 if policy == 'mixed_bfloat16' else 0.03
  np.testing.assert_allclose(outputs['sequence_output'].numpy(), expected, atol=atol)


def test_bad_arguments_are_named():
  with pytest.raises(ValueError, match='local_attention must be a positive integer, found 0'):
    modernbert_encoder.ModernBertEncoder(**_kwargs(local_attention=0))
  with pytest.raises(ValueError, match='even head width'):
    modernbert_encoder.ModernBertEncoder(**_kwargs(hidden_size=18, num_attention_heads=2))
  with pytest.raises(ValueError, match=r"missing \['input_mask'\]"):
    _encoder()({'input_word_ids': tf.ones([1, 3], tf.int32)})


@pytest.mark.slow
def test_config_builds_the_encoder_through_build_encoder():
  config = encoders.EncoderConfig(type='modernbert', modernbert=dict(
      vocab_size=VOCAB, hidden_size=HIDDEN, num_layers=4, num_attention_heads=2,
      intermediate_size=12, local_attention=8, global_attn_every_n_layers=2))
  encoder = encoders.build_encoder(config)
  assert type(encoder) is networks.ModernBertEncoder
  assert [b.attention_window for b in encoder.transformer_layers] == [None, 8, None, 8]
  assert encoder.get_config()['norm_epsilon'] == 1e-5
  bare = encoders.build_encoder(config.modernbert)
  assert type(bare) is networks.ModernBertEncoder
  with pytest.raises(ValueError, match='embedding_layer is not supported by the modernbert'):
    encoders.build_encoder(config, embedding_layer=tf_keras.layers.Embedding(4, 4))


def test_config_defaults_aliases_and_errors():
  config = modernbert_encoder_config.ModernBertEncoderConfig()
  assert (config.hidden_size, config.num_layers, config.intermediate_size,
          config.global_rope_theta, config.local_attention) == (768, 22, 1152, 160000.0, 128)
  flat = encoders.EncoderConfig({'type': 'modernbert', 'num_hidden_layers': 5,
                                 'hidden_act': 'gelu'})
  assert flat.modernbert.num_layers == 5 and flat.modernbert.hidden_activation == 'gelu'
  with pytest.raises(hyperparams.ConfigError, match='must be even'):
    modernbert_encoder_config.ModernBertEncoderConfig(hidden_size=18, num_attention_heads=2
                                                      ).validate()
  with pytest.raises(hyperparams.ConfigError, match='modernbert.max_position_embeddings=16'):
    modernbert_encoder_config.ModernBertEncoderConfig(max_position_embeddings=16
                                                      ).check_seq_length('seq_length', 32)


@pytest.mark.slow
@pytest.mark.parametrize('seq', [12, 40])  # 40: the local layers take the blocked path
def test_a_perturbed_document_leaves_the_other_documents_unchanged(seq):
  """Packed rows: changing every token of one document changes no other document's outputs."""
  encoder = _encoder()
  rng = np.random.default_rng(4)
  lengths = [[seq // 4, seq // 2, seq - seq // 4 - seq // 2], [seq // 3, seq - seq // 3 - 2]]
  positions = np.zeros((2, seq), np.int32)
  documents = np.zeros((2, seq), np.int32)
  mask = np.zeros((2, seq), np.int32)
  for row, row_lengths in enumerate(lengths):
    start = 0
    for number, length in enumerate(row_lengths, 1):
      positions[row, start:start + length] = np.arange(length)
      documents[row, start:start + length] = number
      mask[row, start:start + length] = 1
      start += length
  word_ids = rng.integers(1, VOCAB, (2, seq)).astype(np.int32) * mask
  inputs = {'input_word_ids': word_ids, 'input_mask': mask, 'position_ids': positions}
  before = encoder(inputs)['sequence_output'].numpy()
  changed = word_ids.copy()
  second = documents == 2
  changed[second] = (changed[second] + 1 + rng.integers(0, VOCAB - 2, second.sum())) % VOCAB
  after = encoder(dict(inputs, input_word_ids=changed))['sequence_output'].numpy()
  others = (mask > 0) & ~second
  np.testing.assert_allclose(after[others], before[others], atol=1e-5)
  assert np.abs(after[second] - before[second]).max() > 1e-2
  # Each document alone in its own row (positions from 0) gives its packed outputs.
  for row, number in ((0, 1), (0, 3), (1, 2)):
    where = documents[row] == number
    alone = encoder({'input_word_ids': word_ids[row][where][None],
                     'input_mask': np.ones([1, where.sum()], np.int32)})['sequence_output']
    np.testing.assert_allclose(alone.numpy()[0], before[row][where], atol=1e-4)


def test_document_ids_from_positions():
  np.testing.assert_array_equal(
      modernbert_encoder.document_ids_from_positions(tf.constant([[0, 1, 2, 0, 1, 0],
                                                                  [5, 6, 7, 8, 9, 10]])),
      [[1, 1, 1, 2, 2, 3], [0, 0, 0, 0, 0, 0]])
