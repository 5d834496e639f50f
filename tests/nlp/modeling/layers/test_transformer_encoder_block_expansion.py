"""One block, one answer: `TransformerEncoderBlock` and a Keras model of its `call` on symbolic
inputs (its sub-layers called one by one, as differential-privacy libraries rebuild a model to
clip per-example gradients) compute the same bits, forward and backward.

Every block configuration the encoders use: BERT (post-LN, dropout) and pre-LN BERT, ModernBERT's
first layer (global attention, no attention norm) and a local one (pre-LN, GeGLU, rotary, sliding
window, no biases), and a ReLU block; in float32 and mixed bfloat16 (`make test-all`), eager and
in a `tf.function`, in inference and (eager, the dropout seeds drawn again from the same global
seed) in training.
"""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling.networks import bert_encoder
from official.nlp.modeling.networks import modernbert_encoder

SEED = 5


def _blocks(kind: str):
  """The blocks of a tiny encoder of `kind`, or (relu) the block of the issue's report."""
  if kind == 'relu':
    return [layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=32,
                                           inner_activation='relu')]
  if kind == 'modernbert':
    return modernbert_encoder.ModernBertEncoder(
        vocab_size=40, hidden_size=16, num_layers=2, num_attention_heads=2,
        intermediate_size=24, max_sequence_length=16, local_attention=4,
        global_attn_every_n_layers=2, dropout_rate=0.1,
        attention_dropout_rate=0.1).transformer_layers
  return bert_encoder.BertEncoderV2(
      vocab_size=40, hidden_size=16, num_layers=1, num_attention_heads=2, inner_dim=32,
      max_sequence_length=16, norm_first=kind == 'bert_pre_ln').transformer_layers


def _expansion(block, x, mask):
  """The Keras model of `block.call` on symbolic [x, mask] (its sub-layers as nodes)."""
  inputs = [tf_keras.Input(x.shape[1:], dtype=x.dtype), tf_keras.Input(mask.shape[1:])]
  return tf_keras.Model(inputs, block.call(inputs))


def _outputs_and_gradients(run, block, x, mask, training, upstream):
  tf_keras.utils.set_random_seed(SEED)  # the same dropout seeds for both (eager)
  with tf.GradientTape() as tape:
    tape.watch(x)
    out = run([x, mask], training=training)
    total = tf.reduce_sum(tf.cast(out, tf.float32) * upstream)
  return [out] + tape.gradient(total, [x] + block.trainable_weights)


@pytest.mark.parametrize('policy', ['float32',
                                    pytest.param('mixed_bfloat16', marks=pytest.mark.slow)])
@pytest.mark.parametrize('kind', ['bert', 'bert_pre_ln', 'modernbert', 'relu'])
def test_the_sub_layer_expansion_computes_the_block_s_bits(kind, policy):
  tf_keras.mixed_precision.set_global_policy(policy)  # restored by tests/conftest.py
  blocks = _blocks(kind)
  dtype = tf.bfloat16 if policy == 'mixed_bfloat16' else tf.float32
  rng = np.random.default_rng(0)
  x = tf.constant(rng.normal(size=(3, 5, 16)), dtype)
  mask = tf.constant([[1] * 5, [1] * 5, [1, 1, 1, 0, 0]], tf.float32)
  upstream = tf.constant(rng.normal(size=(3, 5, 16)), tf.float32)
  assert {type(block).__name__ for block in blocks} == (
      {'_NoAttentionNormBlock', 'TransformerEncoderBlock'} if kind == 'modernbert'
      else {'TransformerEncoderBlock'})
  for block in blocks:
    block([x, mask])
    for v in block.trainable_weights:  # biases and norm offsets away from their initial zeros
      v.assign(v + tf.random.normal(v.shape, stddev=0.1, seed=1))
    model = _expansion(block, x, mask)
    runs = [(False, block, model),
            (False, tf.function(lambda i, training: block(i, training=training)),
             tf.function(lambda i, training: model(i, training=training))),
            (True, block, model)]
    for training, run_block, run_model in runs:
      got = _outputs_and_gradients(run_model, block, x, mask, training, upstream)
      want = _outputs_and_gradients(run_block, block, x, mask, training, upstream)
      assert got[0].dtype == dtype
      for index, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(a.numpy(), b.numpy(),
                                      err_msg=f'{block.name} training={training} #{index}')
    if kind == 'bert':  # dropout is drawn in training: the outputs differ from inference
      assert not np.array_equal(block([x, mask], training=True), block([x, mask]))
