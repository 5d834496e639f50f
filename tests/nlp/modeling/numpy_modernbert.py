"""Independent numpy formulas of ModernBERT's layer (HF transformers' `ModernBertEncoderLayer`).

For checking the TensorFlow options against: rotary embeddings in HF's rotate-half layout, local
(sliding-window) attention, a GeGLU feed-forward layer and LayerNorms without bias.
"""

import math

import numpy as np

from tests.nlp.modeling import numpy_bert

_erf = np.vectorize(math.erf)


def gelu_exact(x):
  return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def layer_norm(x, gamma, beta=None, eps=1e-5):
  return numpy_bert.layer_norm(x, gamma, 0.0 if beta is None else beta, eps)


def rotary_cos_sin(positions, dim, theta):
  """HF's `ModernBertRotaryEmbedding`: cos/sin [..., seq, dim] of cat(freqs, freqs), float64."""
  inverse_frequency = 1.0 / theta ** (np.arange(0, dim, 2) / dim)
  freqs = np.asarray(positions, np.float64)[..., None] * inverse_frequency
  angles = np.concatenate([freqs, freqs], axis=-1)
  return np.cos(angles), np.sin(angles)


def rotate_half(x):
  half = x.shape[-1] // 2
  return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rotary(x, positions, theta):
  """HF's `apply_rotary_pos_emb` on x [batch, seq, heads, dim] with positions [batch, seq]."""
  cos, sin = rotary_cos_sin(positions, x.shape[-1], theta)
  cos, sin = cos[:, :, None], sin[:, :, None]
  return x * cos + rotate_half(x) * sin


def attention(x, mask, w, rotary_theta=None, positions=None, window=None):
  """Self-attention; w: kernels `query/kernel` [h, n, d] etc., biases optional (absent: none).

  mask: [batch, seq] (1 = token) or [batch, seq, seq]; window: total width (|i - j| <= window // 2).
  """
  project = lambda name: np.einsum('bsh,hnd->bsnd', x, w[f'{name}/kernel']) + w.get(
      f'{name}/bias', 0.0)
  q, k, v = project('query'), project('key'), project('value')
  if rotary_theta is not None:
    if positions is None:
      positions = np.arange(x.shape[1])[None].repeat(x.shape[0], 0)
    q, k = rotary(q, positions, rotary_theta), rotary(k, positions, rotary_theta)
  scores = np.einsum('bqnd,bknd->bnqk', q, k) / np.sqrt(q.shape[-1])
  allowed = mask[:, None, :] * np.ones([1, x.shape[1], 1]) if mask.ndim == 2 else mask
  if window is not None:
    index = np.arange(x.shape[1])
    allowed = allowed * (np.abs(index[:, None] - index[None, :]) <= window // 2)
  scores = scores + (1.0 - allowed[:, None]) * -1e9
  context = np.einsum('bnqk,bknd->bqnd', numpy_bert.softmax(scores), v)
  return np.einsum('bqnd,ndh->bqh', context, w['attention_output/kernel']) + w.get(
      'attention_output/bias', 0.0)


def geglu(x, kernel_in, kernel_out, bias_in=0.0, bias_out=0.0):
  """HF's `ModernBertMLP`: `input, gate = Wi(x).chunk(2)`, `Wo(gelu(input) * gate)`."""
  inner, gate = np.split(x @ kernel_in + bias_in, 2, axis=-1)
  return (gelu_exact(inner) * gate) @ kernel_out + bias_out


def weights(block):
  """A TransformerEncoderBlock's variables by their name below the block ('query/kernel', ...)."""
  named = {}
  for v in block.weights:
    name = v.name.split('/', 1)[1].split(':')[0]
    named[name.replace('self_attention/', '', 1) if '_norm' not in name else name] = v.numpy()
  return named


def encoder_layer(x, mask, w, norm_first=True, eps=1e-5, **attention_options):
  """A ModernBERT layer (pre-LN) or its post-LN variant, with our block's variable names."""
  norm = lambda y, name: layer_norm(y, w[f'{name}/gamma'], w.get(f'{name}/beta'), eps)
  ffn = lambda y: geglu(y, w['intermediate/kernel'], w['output/kernel'],
                        w.get('intermediate/bias', 0.0), w.get('output/bias', 0.0))
  if norm_first:
    h = x + attention(norm(x, 'self_attention_layer_norm'), mask, w, **attention_options)
    return h + ffn(norm(h, 'output_layer_norm'))
  h = norm(x + attention(x, mask, w, **attention_options), 'self_attention_layer_norm')
  return norm(h + ffn(h), 'output_layer_norm')
