"""Tests for official/nlp/modeling/layers/transformer_encoder_block.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing
from tests.nlp.modeling import numpy_bert
from tests.nlp.modeling import numpy_modernbert


def _block(**kwargs):
  return layers.TransformerEncoderBlock(
      num_attention_heads=2, inner_dim=32, inner_activation='gelu',
      kernel_initializer=tf_keras.initializers.RandomNormal(stddev=0.3, seed=2), **kwargs)


@pytest.mark.parametrize('norm_first', [False, True])
def test_block_matches_numpy(norm_first):
  x = np.random.default_rng(0).normal(size=(2, 5, 16)).astype(np.float32)
  mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.float32)
  block = _block(norm_first=norm_first)
  block(x, mask)
  for v in block.weights:  # non-trivial biases and LayerNorm parameters
    v.assign(v + 0.1)
  out = block(x, mask).numpy()
  expected = numpy_bert.transformer_block(x, mask, numpy_bert.block_weights(block), norm_first)
  np.testing.assert_allclose(out, expected, atol=1e-5)


def test_pre_ln_norms_run_as_fused_kernels_with_the_layers_variables(monkeypatch):
  """The pre-LN norms take `fused_ops.layer_norm` with the LayerNormalization layers'
  variables (names unchanged)."""
  from official.modeling import fused_ops  # pylint: disable=g-import-not-at-top
  calls = []
  real = fused_ops.layer_norm
  monkeypatch.setattr(fused_ops, 'layer_norm',
                      lambda *a, **k: calls.append(a[0].shape) or real(*a, **k))
  block = _block(norm_first=True)
  block(tf.zeros([2, 5, 16]), tf.ones([2, 5]))
  assert len(calls) == 2  # the attention and the feed-forward inputs
  names = sorted(v.name.split('/', 1)[1] for v in block.weights if 'layer_norm' in v.name)
  assert names == ['output_layer_norm/beta:0', 'output_layer_norm/gamma:0',
                   'self_attention_layer_norm/beta:0', 'self_attention_layer_norm/gamma:0']


def test_a_pre_ln_norm_of_another_width_raises_tensorflows_error():
  """Model Garden's behaviour: a [query, key_value, mask] call whose key/value is wider than the
  query, without `diff_q_kv_att_layer_norm`, fails in the shared norm (not in the fused kernel)."""
  block = _block(norm_first=True)
  inputs = [tf.zeros([2, 4, 16]), tf.zeros([2, 8, 32]), tf.zeros([2, 4, 8])]
  with pytest.raises(tf.errors.InvalidArgumentError):
    block(inputs)


@pytest.mark.parametrize('activation', ['gelu', 'exact_gelu'])
def test_gated_feed_forward_runs_the_fused_gated_gelu(monkeypatch, activation):
  """A gated block with a GELU computes `GELU(input half) * gate` as `fused_ops.gated_gelu` of
  the matmuls against the kernel's two halves, with the block's approximation: the same values as
  TensorFlow's GELU of the input half times the gate half."""
  from official.modeling import fused_ops  # pylint: disable=g-import-not-at-top
  block = layers.TransformerEncoderBlock(
      num_attention_heads=2, inner_dim=8, inner_activation=activation, gated_inner=True,
      kernel_initializer=tf_keras.initializers.RandomNormal(stddev=0.3, seed=2))
  x = tf.random.normal([2, 5, 16], seed=3)
  block(x)
  bias = block._intermediate_dense.bias  # pylint: disable=protected-access
  bias.assign(tf.random.normal(bias.shape, seed=4))  # the halves of the bias go with the kernel's
  fused = block(x).numpy()
  calls = []
  monkeypatch.setattr(fused_ops, 'gated_gelu', lambda inner, gate, approximate: calls.append(
      (inner.shape, gate.shape, approximate)) or (
          tf.nn.gelu(inner, approximate=approximate) * gate))
  split = block(x).numpy()
  assert calls == [([10, 8], [10, 8], activation == 'gelu')]
  np.testing.assert_allclose(fused, split, atol=2e-5)


@pytest.mark.parametrize('norm_first', [False, True])
def test_output_range_equals_the_first_rows_of_the_full_output(norm_first):
  x = tf.random.normal([2, 5, 16], seed=1)
  mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], tf.float32)
  full = _block(norm_first=norm_first)
  ranged = _block(norm_first=norm_first, output_range=2)
  full_out = full(x, mask)
  ranged(x, mask)
  ranged.set_weights(full.get_weights())
  out = ranged(x, mask)
  assert out.shape == (2, 2, 16)
  np.testing.assert_allclose(out, full_out[:, :2], atol=1e-5)


def test_round_trip_and_output_range():
  x = tf.random.normal([2, 5, 16])
  mask = tf.ones([2, 5])
  testing.run_layer_test(layers.TransformerEncoderBlock,
                         dict(num_attention_heads=2, inner_dim=32, inner_activation='gelu',
                              norm_first=True, output_range=2),
                         [x, mask], (2, 2, 16))
  testing.run_layer_test(layers.TransformerEncoderBlock,
                         dict(num_attention_heads=2, inner_dim=32, inner_activation='exact_gelu',
                              output_dropout=0.1, attention_dropout=0.1, norm_epsilon=1e-6),
                         [x, mask], (2, 5, 16))


def test_bad_head_count():
  with pytest.raises(ValueError, match='between 1 and the hidden size 16, found 17'):
    layers.TransformerEncoderBlock(num_attention_heads=17, inner_dim=8)(tf.zeros([1, 2, 16]))


def test_heads_that_do_not_divide_the_hidden_size():
  # As Model Garden: 3 heads of 16 // 3 = 5, the attention output projected back to 16.
  block = layers.TransformerEncoderBlock(num_attention_heads=3, inner_dim=8)
  out = block(tf.random.normal([2, 4, 16]), tf.ones([2, 4]))
  assert out.shape == (2, 4, 16)
  attention = block._attention_layer  # pylint: disable=protected-access
  assert attention._query_dense.kernel.shape == (16, 3, 5)  # pylint: disable=protected-access
  assert attention._output_dense.kernel.shape == (3, 5, 16)  # pylint: disable=protected-access


def test_dropout_only_in_training():
  block = layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=32, output_dropout=0.5,
                                         attention_dropout=0.5)
  x = tf.random.normal([2, 5, 16], seed=5)
  mask = tf.ones([2, 5])
  np.testing.assert_allclose(block(x, mask), block(x, mask, training=False))
  assert not np.allclose(block(x, mask, training=True), block(x, mask, training=False))


def test_sublayer_names_and_attention_scores():
  block = layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=32, name='layer_0')
  out, scores = block(tf.zeros([1, 3, 16]), tf.ones([1, 3]), return_attention_scores=True)
  assert out.shape == (1, 3, 16) and scores.shape == (1, 2, 3, 3)
  names = {v.name.split('/')[1] for v in block.weights}
  assert names == {'self_attention', 'self_attention_layer_norm', 'intermediate', 'output',
                   'output_layer_norm'}


def test_mixed_bfloat16_keeps_layer_norm_in_float32():
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    block = _block()
    out = block(tf.random.normal([2, 5, 16]), tf.ones([2, 5]))
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert out.dtype == tf.bfloat16
  assert block._output_layer_norm.compute_dtype == 'float32'  # pylint: disable=protected-access
  assert block._intermediate_dense.compute_dtype == 'bfloat16'  # pylint: disable=protected-access
  assert all(v.dtype == tf.float32 for v in block.weights)


@pytest.mark.slow
@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
def test_a_python_and_a_tensor_training_flag_give_the_same_bits(dtype):
  """A Python `training` flag and a tensor one (dropout under `tf.cond`) run the same kernels:
  without dropout both give the same outputs and gradients."""
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16' if dtype == 'bfloat16' else 'float32')
  try:
    block = _block()
    x = tf.random.normal([2, 6, 16], seed=3)
    mask = tf.constant([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], tf.float32)
    block(x, mask)
    for v in block.weights:
      v.assign(v + 0.1)
    upstream = tf.random.normal([2, 6, 16], seed=4)
    results = []
    for training in (True, tf.constant(True)):
      with tf.GradientTape() as tape:
        tape.watch(x)
        out = tf.cast(block(x, mask, training=training), tf.float32)
        total = tf.reduce_sum(out * upstream)
      grads = tape.gradient(total, [x] + block.trainable_weights)
      results.append([out] + grads)
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  for python_flag, tensor_flag in zip(*results):
    np.testing.assert_array_equal(python_flag, tensor_flag)


def test_model_garden_list_inputs_and_output_range_call_argument():
  x = tf.random.normal([2, 5, 16], seed=3)
  mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], tf.float32)
  block = _block()
  expected = block(x, mask)
  np.testing.assert_allclose(block([x, mask]), expected, atol=1e-6)
  np.testing.assert_allclose(block([x, mask], output_range=2), expected[:, :2], atol=1e-5)
  scored = _block(return_attention_scores=True)
  out, scores = scored([x, mask])
  assert out.shape == (2, 5, 16) and scores.shape == (2, 2, 5, 5)


@pytest.mark.parametrize('norm_first', [False, True])
def test_plain_keras_path_matches_the_fused_path(norm_first):
  # [query, key_value, mask] takes the plain Keras path; with key_value = query and the same
  # weights it computes the fused path's numbers.
  x = tf.random.normal([2, 5, 16], seed=4)
  mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], tf.float32)
  fused = _block(norm_first=norm_first)
  expected = fused(x, mask)
  plain = _block(norm_first=norm_first)
  plain([x, x, mask[:, None, :] * tf.ones([1, 5, 1])])
  assert isinstance(plain._attention_layer, tf_keras.layers.MultiHeadAttention)  # pylint: disable=protected-access
  by_name = {v.name.split('/', 1)[1]: v for v in fused.weights}
  assert len(plain.weights) == len(fused.weights)
  for v in plain.weights:
    v.assign(by_name[v.name.split('/', 1)[1]])
  np.testing.assert_allclose(plain([x, x, mask]), expected, atol=1e-5)


def test_model_garden_attention_options():
  q = tf.random.normal([2, 4, 12], seed=5)
  kv = tf.random.normal([2, 6, 20], seed=6)
  mask = tf.ones([2, 4, 6])
  block = layers.TransformerEncoderBlock(
      num_attention_heads=2, inner_dim=8, key_dim=3, value_dim=5, output_last_dim=7,
      use_query_residual=False, norm_first=True, diff_q_kv_att_layer_norm=True, use_bias=False,
      inner_dropout=0.2)
  out = block([q, kv, mask])
  assert out.shape == (2, 4, 7)
  attention = block._attention_layer  # pylint: disable=protected-access
  assert attention._query_dense.kernel.shape == (12, 2, 3)  # pylint: disable=protected-access
  assert attention._value_dense.kernel.shape == (20, 2, 5)  # pylint: disable=protected-access
  assert not any('bias' in v.name for v in attention.weights)
  # As Model Garden: the attention output is dropped at the attention_dropout rate.
  dropped = _block(output_dropout=0.1, attention_dropout=0.3, inner_dropout=0.2)
  dropped(tf.zeros([1, 3, 16]))
  assert dropped._attention_dropout.rate == 0.3 and dropped._output_dropout.rate == 0.1  # pylint: disable=protected-access
  assert dropped._inner_dropout_layer.rate == 0.2  # pylint: disable=protected-access
  with pytest.raises(ValueError, match='diff_q_kv_att_layer_norm=True needs norm_first=True'):
    layers.TransformerEncoderBlock(2, 8, diff_q_kv_att_layer_norm=True)


def test_model_garden_options_round_trip():
  testing.run_layer_test(
      layers.TransformerEncoderBlock,
      dict(num_attention_heads=2, inner_dim=8, key_dim=3, value_dim=5, output_last_dim=16,
           use_bias=False, norm_first=True, norm_epsilon=1e-6,
           attention_initializer=tf_keras.initializers.RandomUniform(0.0, 0.1, seed=1),
           return_attention_scores=False),
      [tf.random.normal([2, 4, 16], seed=7)], (2, 4, 16))


def test_rms_norm_blocks():
  from official.nlp.modeling.layers import transformer_encoder_block  # pylint: disable=g-import-not-at-top
  x = np.random.default_rng(2).normal(size=(2, 3, 4)).astype(np.float32)
  norm = transformer_encoder_block.RMSNorm(epsilon=1e-6)
  expected = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6)
  np.testing.assert_allclose(norm(x), expected, atol=1e-5)
  block = _block(use_rms_norm=True, use_bias=False)
  assert block(tf.constant(x[..., :4].repeat(4, -1))).shape == (2, 3, 16)
  assert isinstance(block._output_layer_norm, transformer_encoder_block.RMSNorm)  # pylint: disable=protected-access
  testing.run_layer_test(transformer_encoder_block.RMSNorm, dict(epsilon=1e-5), [tf.constant(x)],
                         (2, 3, 4))


# ---- ModernBERT options: rotary_theta, attention_window, gated_inner, norm_use_bias ------------
_MODERNBERT = dict(norm_first=True, use_bias=False, norm_use_bias=False, gated_inner=True,
                   inner_activation='exact_gelu', norm_epsilon=1e-5, rotary_theta=10000.0,
                   attention_window=4)


def _modern_block(**overrides):
  options = dict(_MODERNBERT, **overrides)
  return layers.TransformerEncoderBlock(
      num_attention_heads=2, inner_dim=12,
      kernel_initializer=tf_keras.initializers.RandomNormal(stddev=0.3, seed=2), **options)


def _perturb(block):
  rng = np.random.default_rng(7)
  for v in block.weights:  # non-trivial LayerNorm scales (and biases where there are some)
    v.assign(v + rng.normal(scale=0.1, size=v.shape).astype(np.float32))


def test_default_block_variables_and_outputs_are_unchanged():
  """The checkpoint layout and numbers of the default block, recorded before the new options."""
  x = np.random.default_rng(0).normal(size=(2, 4, 6)).astype(np.float32)
  mask = np.array([[1, 1, 1, 1], [1, 1, 1, 0]], np.float32)
  expected_rows = {  # out[1, :, :3] for post-LN and pre-LN
      False: [[0.37209, 1.03954, 0.89213], [0.0838, 0.9759, 0.89628], [0.22255, 0.95064, 0.89814],
              [0.31145, 0.98317, 0.89976]],
      True: [[0.11781, 1.33154, -0.88056], [-1.74628, 0.88857, -0.29521],
             [-1.28939, 0.90605, 0.86391], [0.4911, 2.00763, 0.20156]]}
  for norm_first, rows in expected_rows.items():
    block = layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=8,
                                           inner_activation='gelu', norm_first=norm_first,
                                           name='layer_0')
    block(x, mask)
    assert [(v.name, tuple(v.shape)) for v in block.weights] == [
        ('layer_0/self_attention/query/kernel:0', (6, 2, 3)),
        ('layer_0/self_attention/query/bias:0', (2, 3)),
        ('layer_0/self_attention/key/kernel:0', (6, 2, 3)),
        ('layer_0/self_attention/key/bias:0', (2, 3)),
        ('layer_0/self_attention/value/kernel:0', (6, 2, 3)),
        ('layer_0/self_attention/value/bias:0', (2, 3)),
        ('layer_0/self_attention/attention_output/kernel:0', (2, 3, 6)),
        ('layer_0/self_attention/attention_output/bias:0', (6,)),
        ('layer_0/self_attention_layer_norm/gamma:0', (6,)),
        ('layer_0/self_attention_layer_norm/beta:0', (6,)),
        ('layer_0/intermediate/kernel:0', (6, 8)), ('layer_0/intermediate/bias:0', (8,)),
        ('layer_0/output/kernel:0', (8, 6)), ('layer_0/output/bias:0', (6,)),
        ('layer_0/output_layer_norm/gamma:0', (6,)), ('layer_0/output_layer_norm/beta:0', (6,))]
    # The object-checkpoint keys (Model Garden's attribute names; `_attention_layer_norm_kv` is
    # `_attention_layer_norm` again, the activation layer has no variable).
    assert sorted(block._trackable_children()) == [  # pylint: disable=protected-access
        '_attention_dropout', '_attention_layer', '_attention_layer_norm',
        '_attention_layer_norm_kv', '_attention_options', '_inner_dropout_layer',
        '_intermediate_activation_layer', '_intermediate_dense', '_output_dense',
        '_output_dropout', '_output_layer_norm']
    # pylint: disable-next=protected-access
    assert block._attention_layer_norm_kv is block._attention_layer_norm
    rng = np.random.default_rng(1)
    for v in block.weights:
      v.assign(rng.normal(scale=0.5, size=v.shape).astype(np.float32))
    for training in (False, tf.constant(False)):  # the fused and the plain-ops paths
      np.testing.assert_allclose(block(x, mask, training=training)[1, :, :3], rows, atol=1e-4)
    config = block.get_config()
    assert (config['rotary_theta'], config['attention_window'], config['gated_inner'],
            config['norm_use_bias']) == (None, None, False, True)


@pytest.mark.parametrize('norm_first', [True, False])
@pytest.mark.parametrize('window', [None, 4])
def test_modernbert_options_match_numpy(norm_first, window):
  rng = np.random.default_rng(3)
  x = rng.normal(size=(2, 9, 16)).astype(np.float32)
  mask = np.array([[1] * 9, [1] * 6 + [0] * 3], np.float32)
  positions = np.array([list(range(9)), [0, 1, 2, 0, 1, 2, 3, 0, 0]])
  block = _modern_block(norm_first=norm_first, attention_window=window, name='layer_0')
  block(x, mask)
  _perturb(block)
  expected = numpy_modernbert.encoder_layer(
      x, mask, numpy_modernbert.weights(block), norm_first, rotary_theta=10000.0,
      positions=positions, window=window)
  # Padded queries may see no key at all in a window (their rows are garbage in float32): compare
  # the tokens.
  tokens = mask.astype(bool)
  for training in (False, tf.constant(False)):  # the fused and the plain-ops paths
    out = block(x, mask, training=training, position_ids=tf.constant(positions))
    np.testing.assert_allclose(out.numpy()[tokens], expected[tokens], atol=5e-5)


def test_modernbert_option_variables():
  block = _modern_block(name='layer_0')
  block(tf.zeros([1, 5, 16]), tf.ones([1, 5]))
  assert [(v.name, tuple(v.shape)) for v in block.weights] == [
      ('layer_0/self_attention/query/kernel:0', (16, 2, 8)),
      ('layer_0/self_attention/key/kernel:0', (16, 2, 8)),
      ('layer_0/self_attention/value/kernel:0', (16, 2, 8)),
      ('layer_0/self_attention/attention_output/kernel:0', (2, 8, 16)),
      ('layer_0/self_attention_layer_norm/gamma:0', (16,)),
      ('layer_0/intermediate/kernel:0', (16, 24)),  # [input | gate] halves
      ('layer_0/output/kernel:0', (12, 16)),
      ('layer_0/output_layer_norm/gamma:0', (16,))]


def test_gated_and_bias_free_options_alone_match_numpy():
  x = np.random.default_rng(4).normal(size=(2, 5, 16)).astype(np.float32)
  mask = np.array([[1] * 5, [1, 1, 1, 0, 0]], np.float32)
  block = _modern_block(rotary_theta=None, attention_window=None, use_bias=True,
                        norm_use_bias=True)
  block(x, mask)
  _perturb(block)
  w = numpy_modernbert.weights(block)
  assert 'intermediate/bias' in w and 'output_layer_norm/beta' in w
  expected = numpy_modernbert.encoder_layer(x, mask, w, norm_first=True)
  np.testing.assert_allclose(block(x, mask), expected, atol=5e-5)
  # use_bias=False alone now takes the fused path too (with the plain path's numbers).
  plain = layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=8, use_bias=False,
                                         norm_use_bias=False)
  out = plain(tf.constant(x), tf.constant(mask))
  assert out.shape == (2, 5, 16)
  assert not any('bias' in v.name or 'beta' in v.name for v in plain.weights)


def test_local_window_limits_what_a_token_sees():
  x = tf.random.normal([1, 10, 16], seed=11)
  block = _modern_block(rotary_theta=None)  # window 4: |i - j| <= 2
  base = block(x)
  # (Not a constant vector: the LayerNorm would remove it.)
  change = tf.random.normal([1, 16], seed=17)
  changed = block(tf.tensor_scatter_nd_add(x, [[0, 7]], change))
  delta = np.abs(changed - base).max(-1)[0]
  np.testing.assert_array_equal(delta[:5], np.zeros(5))  # positions 0..4 are > 2 away from 7
  assert (delta[5:] > 1e-3).all()  # 5..9 see position 7 (and 7 itself changed)
  # A per-document [batch, seq, seq] mask on top: 6 and 8 are in the window but in another
  # document (positions 0..6 | 7..9), so only 7..9 change.
  segments = np.array([[0] * 7 + [1] * 3])
  documents = tf.constant(segments[:, :, None] == segments[:, None, :], tf.float32)
  delta = np.abs(block(tf.tensor_scatter_nd_add(x, [[0, 7]], change), documents)
                 - block(x, documents)).max(-1)[0]
  np.testing.assert_array_equal(delta[:7], np.zeros(7))
  assert (delta[7:] > 1e-3).all()


def test_modernbert_options_round_trip():
  x = tf.random.normal([2, 6, 16], seed=12)
  positions = tf.constant([[0, 1, 2, 3, 4, 5], [0, 1, 2, 0, 1, 2]])
  testing.run_layer_test(layers.TransformerEncoderBlock,
                         dict(num_attention_heads=2, inner_dim=12, **_MODERNBERT),
                         [x, tf.ones([2, 6])], (2, 6, 16),
                         call_kwargs=dict(position_ids=positions))


@pytest.mark.slow
def test_modernbert_options_jit_compile_forward():
  x = tf.random.normal([2, 8, 16], seed=13)
  mask = tf.constant([[1] * 8, [1] * 5 + [0] * 3], tf.float32)
  positions = tf.constant([list(range(8)), [0, 1, 2, 0, 1, 2, 3, 4]])
  block = _modern_block(norm_first=False)  # also the fused post-LN kernels, with no beta
  eager = block(x, mask, position_ids=positions, training=False)
  compiled = tf.function(
      lambda *args: block(args[0], args[1], position_ids=args[2], training=False),
      jit_compile=True)
  np.testing.assert_allclose(compiled(x, mask, positions), eager, atol=1e-5)


def test_modernbert_options_mixed_bfloat16():
  x = tf.random.normal([2, 8, 16], seed=14)
  mask = tf.constant([[1] * 8, [1] * 5 + [0] * 3], tf.float32)
  reference = _modern_block()
  expected = reference(x, mask)
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    block = _modern_block()
    block(x, mask)
    block.set_weights(reference.get_weights())
    out = block(x, mask)
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert out.dtype == tf.bfloat16
  assert all(v.dtype == tf.float32 for v in block.weights)
  # bfloat16 keeps 8 bits of mantissa: outputs of a few units are off by up to ~0.11 (seen on an
  # AVX2 CPU, where bfloat16 is emulated), as for BERT's encoder (test_bert_encoder: 0.15).
  np.testing.assert_allclose(tf.cast(out, tf.float32), expected, atol=0.15)


@pytest.mark.slow
def test_modernbert_fused_path_gradients_match_plain_ops():
  """Python and tensor `training` flags (fused and plain ops) agree on outputs and gradients."""
  x = tf.random.normal([2, 6, 16], seed=15)
  mask = tf.constant([[1] * 6, [1] * 4 + [0] * 2], tf.float32)
  block = _modern_block(norm_first=False)
  block(x, mask)
  _perturb(block)
  upstream = tf.random.normal([2, 6, 16], seed=16)
  results = []
  for training in (True, tf.constant(True)):
    with tf.GradientTape() as tape:
      tape.watch(x)
      total = tf.reduce_sum(block(x, mask, training=training) * upstream)
    results.append([total] + tape.gradient(total, [x] + block.trainable_weights))
  for fused, plain in zip(*results):
    np.testing.assert_allclose(fused, plain, atol=1e-4, rtol=1e-4)


def test_modernbert_option_errors():
  with pytest.raises(ValueError, match='need self-attention on .* found key_dim'):
    _modern_block(key_dim=4)(tf.zeros([1, 3, 16]))
  with pytest.raises(ValueError, match='found a separate key/value input'):
    _modern_block()([tf.zeros([1, 3, 16]), tf.zeros([1, 3, 16]), tf.ones([1, 3, 3])])
  with pytest.raises(ValueError, match='position_ids were given but rotary_theta is None'):
    _modern_block(rotary_theta=None)(tf.zeros([1, 3, 16]), position_ids=tf.constant([[0, 1, 2]]))
  with pytest.raises(ValueError, match='position_ids, document_ids and query_positions need our '
                     'self-attention .* found key_dim'):
    _block(key_dim=4)(tf.zeros([1, 3, 16]), position_ids=tf.constant([[0, 1, 2]]))
  with pytest.raises(ValueError, match='position_ids, document_ids and query_positions need our '
                     'self-attention'):
    _block(key_dim=4)(tf.zeros([1, 3, 16]), document_ids=tf.constant([[1, 1, 2]]))
  with pytest.raises(ValueError, match='rotary_theta needs an even head size, found key_dim=5'):
    layers.TransformerEncoderBlock(2, 8, rotary_theta=1e4)(tf.zeros([1, 3, 10]))


def test_model_gardens_sub_layer_attributes():
  """The attributes Model Garden's block has (and tools read): the sub-layers, the activation as
  an `Activation` layer and `_inner_activation`; the block computes with what they hold."""
  # pylint: disable=protected-access
  block = layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=8,
                                         inner_activation='gelu')
  x = np.random.default_rng(0).normal(size=(2, 4, 6)).astype(np.float32)
  expected = block(x, training=False).numpy()
  for name in ('_attention_layer', '_attention_dropout', '_attention_layer_norm',
               '_attention_layer_norm_kv', '_intermediate_dense', '_intermediate_activation_layer',
               '_inner_dropout_layer', '_output_dense', '_output_dropout', '_output_layer_norm'):
    assert isinstance(getattr(block, name), tf_keras.layers.Layer), name
  assert isinstance(block._attention_layer._dropout_layer, tf_keras.layers.Dropout)
  assert isinstance(block._intermediate_activation_layer, tf_keras.layers.Activation)
  z = np.linspace(-3, 3, 7).astype(np.float32)
  np.testing.assert_allclose(block._inner_activation(z), numpy_bert.gelu_tanh(z), atol=1e-6)
  block._intermediate_activation_layer = tf_keras.layers.Activation('relu')
  relu = block(x, training=False).numpy()
  assert np.abs(relu - expected).max() > 1e-3
  block._intermediate_activation_layer = tf_keras.layers.Activation(block._inner_activation)
  np.testing.assert_allclose(block(x, training=False), expected, atol=1e-6)


@pytest.mark.parametrize('options', [dict(), dict(norm_first=True),
                                     dict(norm_first=True, gated_inner=True, use_bias=False,
                                          rotary_theta=10000.0, attention_window=4)])
def test_query_positions_are_the_full_outputs_rows(options):
  block = _block(**options)
  x = tf.random.normal([2, 7, 16], seed=5)
  mask = tf.constant([[1] * 7, [1] * 5 + [0] * 2], tf.float32)
  positions = tf.constant([[0, 6, 2], [0, 1, 4]], tf.int32)
  full = block(x, mask)
  out = block(x, mask, query_positions=positions)
  assert out.shape == (2, 3, 16)
  np.testing.assert_allclose(out, tf.gather(full, positions, batch_dims=1), atol=1e-5)
  with pytest.raises(ValueError, match='give output_range or query_positions, not both'):
    block(x, mask, output_range=2, query_positions=positions)


def test_query_positions_need_our_self_attention():
  block = _block(key_dim=4)  # Keras' attention path
  with pytest.raises(ValueError, match='query_positions need our self-attention .* key_dim'):
    block(tf.zeros([2, 5, 16]), tf.ones([2, 5]), query_positions=tf.zeros([2, 2], tf.int32))
