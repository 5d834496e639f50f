"""Tests for official/nlp/modeling/networks/bert_encoder.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import networks
from tests.nlp.modeling import numpy_bert

VOCAB, HIDDEN, SEQ = 50, 16, 8


def _encoder(**kwargs):
  defaults = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_layers=2, num_attention_heads=2,
                  inner_dim=32, max_sequence_length=16, type_vocab_size=2, output_dropout=0.0,
                  attention_dropout=0.0, dict_outputs=True,
                  initializer=tf_keras.initializers.TruncatedNormal(stddev=0.5, seed=1))
  defaults.update(kwargs)
  return networks.BertEncoder(**defaults)


def _inputs(batch=3, seed=0):
  rng = np.random.default_rng(seed)
  word_ids = rng.integers(0, VOCAB, (batch, SEQ)).astype(np.int32)
  mask = np.ones((batch, SEQ), np.int32)
  mask[1, 5:] = 0
  mask[2, 3:] = 0
  type_ids = (np.arange(SEQ) >= SEQ // 2).astype(np.int32)[None].repeat(batch, 0)
  return word_ids, mask, type_ids


@pytest.mark.parametrize('norm_first', [False, True])
def test_forward_matches_numpy(norm_first):
  encoder = _encoder(norm_first=norm_first)
  word_ids, mask, type_ids = _inputs()
  outputs = encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  sequence, pooled = numpy_bert.encoder_forward(encoder, word_ids, mask, type_ids, norm_first)
  np.testing.assert_allclose(outputs['sequence_output'], sequence, atol=1e-5)
  np.testing.assert_allclose(outputs['pooled_output'], pooled, atol=1e-5)
  assert len(outputs['encoder_outputs']) == 2
  np.testing.assert_allclose(outputs['encoder_outputs'][-1], outputs['sequence_output'])


def test_padding_does_not_change_real_tokens():
  encoder = _encoder()
  word_ids, mask, type_ids = _inputs()
  changed = word_ids.copy()
  changed[1, 5:] = (changed[1, 5:] + 7) % VOCAB  # only padded positions of row 1 change
  first = encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  second = encoder(dict(input_word_ids=changed, input_mask=mask, input_type_ids=type_ids))
  np.testing.assert_allclose(first['sequence_output'][1, :5], second['sequence_output'][1, :5],
                             atol=1e-6)


def test_list_inputs_list_outputs_and_all_encoder_outputs():
  word_ids, mask, type_ids = _inputs()
  sequence, pooled = _encoder(dict_outputs=False)([word_ids, mask, type_ids])
  assert sequence.shape == (3, SEQ, HIDDEN) and pooled.shape == (3, HIDDEN)
  all_outputs, _ = _encoder(dict_outputs=False, return_all_encoder_outputs=True)(
      [word_ids, mask, type_ids])
  assert len(all_outputs) == 2


def test_embedding_width_factorization_and_table():
  encoder = _encoder(embedding_width=8)
  word_ids, mask, type_ids = _inputs()
  outputs = encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  assert encoder.get_embedding_table().shape == (VOCAB, 8)
  assert outputs['sequence_output'].shape == (3, SEQ, HIDDEN)
  sequence, _ = numpy_bert.encoder_forward(encoder, word_ids, mask, type_ids)
  np.testing.assert_allclose(outputs['sequence_output'], sequence, atol=1e-5)


def test_output_range_returns_first_tokens_of_last_layer():
  full = _encoder()
  ranged = _encoder(output_range=1)
  word_ids, mask, type_ids = _inputs()
  inputs = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  full_outputs = full(inputs)
  ranged(inputs)
  ranged.set_weights(full.get_weights())
  outputs = ranged(inputs)
  assert outputs['sequence_output'].shape == (3, 1, HIDDEN)
  np.testing.assert_allclose(outputs['sequence_output'][:, 0],
                             full_outputs['sequence_output'][:, 0], atol=1e-5)
  np.testing.assert_allclose(outputs['pooled_output'], full_outputs['pooled_output'], atol=1e-5)


def test_variable_names_follow_model_garden():
  encoder = _encoder()
  word_ids, mask, type_ids = _inputs()
  encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  names = ' '.join(v.name for v in encoder.variables)
  for part in ('word_embeddings/embeddings', 'position_embedding/embeddings',
               'type_embeddings/embeddings', 'embeddings/layer_norm/gamma',
               'transformer/layer_0/self_attention/query/kernel',
               'transformer/layer_1/self_attention/attention_output/kernel',
               'transformer/layer_0/self_attention_layer_norm/gamma',
               'transformer/layer_0/intermediate/kernel', 'transformer/layer_0/output/kernel',
               'transformer/layer_0/output_layer_norm/beta', 'pooler_transform/kernel'):
    assert part in names, part
  attention = encoder.transformer_layers[0].self_attention
  assert attention._qkv['query'][0].shape == (HIDDEN, 2, 8)  # pylint: disable=protected-access
  assert attention.output_kernel.shape == (2, 8, HIDDEN)


def test_get_config_round_trip():
  encoder = _encoder(norm_first=True, embedding_width=8)
  word_ids, mask, type_ids = _inputs()
  inputs = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  outputs = encoder(inputs)
  rebuilt = networks.BertEncoder.from_config(encoder.get_config())
  rebuilt(inputs)
  rebuilt.set_weights(encoder.get_weights())
  assert rebuilt.get_config() == encoder.get_config()
  np.testing.assert_allclose(rebuilt(inputs)['sequence_output'], outputs['sequence_output'],
                             atol=1e-6)


def test_mixed_bfloat16_and_xla():
  word_ids, mask, type_ids = _inputs()
  inputs = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    encoder = _encoder()
    outputs = encoder(inputs)
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert outputs['sequence_output'].dtype == tf.bfloat16
  assert all(v.dtype == tf.float32 for v in encoder.variables)
  encoder = _encoder()
  eager = encoder(inputs)['sequence_output']
  compiled = tf.function(lambda x: encoder(x)['sequence_output'], jit_compile=True)(inputs)
  np.testing.assert_allclose(compiled, eager, atol=1e-4)


def test_missing_input_is_named():
  word_ids, mask, _ = _inputs()
  with pytest.raises(ValueError, match=r"lack \['input_type_ids'\]"):
    _encoder()(dict(input_word_ids=word_ids, input_mask=mask))
