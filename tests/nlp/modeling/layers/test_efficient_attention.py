"""Tests for official/nlp/modeling/layers/efficient_attention.py against numpy."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import layers
from tests import testing


def _softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def _numpy_attention(layer, query, value, weights_fn, project=None):
  """Reference: per-head attention with kv head h // (H / G), in numpy."""
  w = {name: (dense.kernel.numpy(), dense.bias.numpy()) for name, dense in (
      ('q', layer._query_dense), ('k', layer._key_dense), ('v', layer._value_dense),  # pylint: disable=protected-access
      ('o', layer._output_dense))}  # pylint: disable=protected-access
  q = np.einsum('btw,whd->bthd', query, w['q'][0]) + w['q'][1]
  k = np.einsum('bsw,wgd->bsgd', value, w['k'][0]) + w['k'][1]
  v = np.einsum('bsw,wgd->bsgd', value, w['v'][0]) + w['v'][1]
  if project is not None:
    k, v = project(k), project(v)
  group = layer.num_heads // layer.num_kv_heads
  heads = []
  for h in range(layer.num_heads):
    scores = np.einsum('btd,bsd->bts', q[:, :, h], k[:, :, h // group]) / np.sqrt(q.shape[-1])
    probs = weights_fn(scores)
    heads.append((probs, np.einsum('bts,bsd->btd', probs, v[:, :, h // group])))
  context = np.stack([c for _, c in heads], 2)
  out = np.einsum('bthd,hdw->btw', context, w['o'][0]) + w['o'][1]
  return out, np.stack([p for p, _ in heads], 1)


@pytest.mark.parametrize('num_kv_heads', [1, 2, 4])
def test_grouped_kv_heads_match_numpy(num_kv_heads):
  rng = np.random.default_rng(0)
  query, value = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 6, 8))
  layer = layers.EfficientAttention(num_heads=4, key_dim=3, num_kv_heads=num_kv_heads)
  out, probs = layer(tf.constant(query, tf.float32), tf.constant(value, tf.float32),
                     return_attention_scores=True)
  assert layer._key_dense.kernel.shape == (8, num_kv_heads, 3)  # pylint: disable=protected-access
  expected, expected_probs = _numpy_attention(layer, query, value, _softmax)
  np.testing.assert_allclose(out, expected, atol=1e-5)
  np.testing.assert_allclose(probs, expected_probs, atol=1e-5)


@pytest.mark.parametrize('sigmoid', [False, True])
def test_block_diagonal_attention_is_full_attention_within_blocks(sigmoid):
  rng = np.random.default_rng(1)
  x = rng.normal(size=(2, 6, 8)).astype(np.float32)
  mask = rng.integers(0, 2, size=(2, 6, 6)).astype(np.float32)
  np.fill_diagonal(mask[0], 1)
  np.fill_diagonal(mask[1], 1)
  layer = layers.EfficientAttention(num_heads=2, key_dim=4, src_block_size=3,
                                    use_sigmoid_attn=sigmoid, sigmoid_attn_bias=-1.0)
  out, probs = layer(x, x, attention_mask=mask, return_attention_scores=True)
  assert probs.shape == (2, 2, 2, 3, 3)
  block = np.kron(np.eye(2), np.ones([3, 3]))  # query block i sees key block i only
  allowed = mask * block

  def weights_fn(scores):
    if sigmoid:
      return 1 / (1 + np.exp(-(scores - 1.0))) * allowed
    return _softmax(np.where(allowed > 0, scores, -1e9))
  expected, expected_probs = _numpy_attention(layer, x, x, weights_fn)
  np.testing.assert_allclose(out, expected, atol=1e-5)
  np.testing.assert_allclose(probs[:, :, 1], expected_probs[:, :, 3:, 3:], atol=1e-5)


def test_linformer_projects_keys_and_values_and_round_trips():
  rng = np.random.default_rng(2)
  x = rng.normal(size=(2, 6, 8)).astype(np.float32)
  layer = layers.EfficientAttention(num_heads=2, key_dim=4, linformer_dim=3,
                                    linformer_shared_kv_projection=False)
  out, probs = layer(x, x, return_attention_scores=True)
  assert probs.shape == (2, 2, 6, 3)
  key_projection = layer._linformer_key.kernel.numpy()  # pylint: disable=protected-access
  value_projection = layer._linformer_value.kernel.numpy()  # pylint: disable=protected-access
  calls = iter([key_projection, value_projection])
  project = lambda t: np.einsum('bsgd,sl->blgd', t, next(calls))
  expected, _ = _numpy_attention(layer, x, x, _softmax, project)
  np.testing.assert_allclose(out, expected, atol=1e-5)
  testing.run_layer_test(layers.EfficientAttention,
                         dict(num_heads=4, key_dim=2, num_kv_heads=2, value_dim=3),
                         [tf.constant(x), tf.constant(x)], (2, 6, 8))


def test_blocks_in_the_transformer_block():
  block = layers.TransformerEncoderBlock(num_attention_heads=4, inner_dim=16, num_kv_heads=2,
                                         src_block_size=3, return_attention_scores=True)
  out, scores = block(tf.random.normal([2, 6, 8], seed=1))
  assert out.shape == (2, 6, 8) and scores.shape == (2, 4, 2, 3, 3)
  assert isinstance(block._attention_layer, layers.EfficientAttention)  # pylint: disable=protected-access
  rebuilt = layers.TransformerEncoderBlock.from_config(block.get_config())
  assert rebuilt.get_config() == block.get_config()
