"""An independent numpy forward pass of a Hugging Face BERT from its named arrays (PyTorch layout).

Written from Hugging Face's semantics, not from our mapping: Linear weights are [out, in] (y = x W^T
+ b), heads split the projection's output as [heads, head_dim], `hidden_act` 'gelu' is the exact erf
GELU and 'gelu_new' the tanh approximation, LayerNorm epsilon is `layer_norm_eps`, padded keys get a
large negative score. Names are those of a `BertModel` (no `bert.` prefix) plus `cls.*`.
"""

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu_erf(x):
  return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
  return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


ACTIVATIONS = {'gelu': gelu_erf, 'gelu_new': gelu_tanh}


def _linear(w, name, x):
  return x @ w[f'{name}.weight'].T + w[f'{name}.bias']


def _layer_norm(w, name, x, eps):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + eps) * w[f'{name}.weight'] + w[f'{name}.bias']


def encoder(w, config, ids, mask, types, act=None):
  """(sequence_output [b, s, h], pooled_output [b, h] or None without pooler) in float64."""
  w = {k: np.asarray(v, np.float64) for k, v in w.items()}
  act = act or ACTIVATIONS[config['hidden_act']]
  eps = config['layer_norm_eps']
  heads = config['num_attention_heads']
  seq = ids.shape[1]
  x = (w['embeddings.word_embeddings.weight'][ids] +
       w['embeddings.position_embeddings.weight'][np.arange(seq)][None] +
       w['embeddings.token_type_embeddings.weight'][types])
  x = _layer_norm(w, 'embeddings.LayerNorm', x, eps)
  batch, _, hidden = x.shape
  dim = hidden // heads
  adder = (1.0 - mask[:, None, None, :].astype(np.float64)) * -1e9
  for i in range(config['num_hidden_layers']):
    p = f'encoder.layer.{i}'
    split = lambda t: t.reshape(batch, seq, heads, dim).transpose(0, 2, 1, 3)
    q, k, v = (split(_linear(w, f'{p}.attention.self.{n}', x)) for n in ('query', 'key', 'value'))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dim) + adder
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
    x = _layer_norm(w, f'{p}.attention.output.LayerNorm',
                    x + _linear(w, f'{p}.attention.output.dense', context), eps)
    inner = act(_linear(w, f'{p}.intermediate.dense', x))
    x = _layer_norm(w, f'{p}.output.LayerNorm', x + _linear(w, f'{p}.output.dense', inner), eps)
  pooled = None
  if 'pooler.dense.weight' in w:
    pooled = np.tanh(_linear(w, 'pooler.dense', x[:, 0]))
  return x, pooled


def mlm_logits(w, config, sequence_output, positions, act=None):
  """Logits [b, p, vocab] at `positions` [b, p]: transform, LayerNorm, tied decoder, bias."""
  w = {k: np.asarray(v, np.float64) for k, v in w.items()}
  act = act or ACTIVATIONS[config['hidden_act']]
  x = np.take_along_axis(sequence_output, positions[:, :, None], axis=1)
  x = act(_linear(w, 'cls.predictions.transform.dense', x))
  x = _layer_norm(w, 'cls.predictions.transform.LayerNorm', x, config['layer_norm_eps'])
  return x @ w['embeddings.word_embeddings.weight'].T + w['cls.predictions.bias']


def nsp_logits(w, pooled_output):
  w = {k: np.asarray(v, np.float64) for k, v in w.items()}
  return _linear(w, 'cls.seq_relationship', pooled_output)


def tiny_config(**overrides):
  config = dict(model_type='bert', vocab_size=40, hidden_size=16, num_hidden_layers=2,
                num_attention_heads=2, intermediate_size=32, hidden_act='gelu',
                hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                max_position_embeddings=12, type_vocab_size=2, layer_norm_eps=1e-12,
                initializer_range=0.02)
  config.update(overrides)
  return config


def random_weights(config, seed=0, pooler=True, mlm=False, nsp=False):
  """Random float32 arrays with `BertModel` names and PyTorch shapes (+ heads when asked)."""
  rng = np.random.default_rng(seed)
  h, inner = config['hidden_size'], config['intermediate_size']
  shapes = {'embeddings.word_embeddings.weight': (config['vocab_size'], h),
            'embeddings.position_embeddings.weight': (config['max_position_embeddings'], h),
            'embeddings.token_type_embeddings.weight': (config['type_vocab_size'], h),
            'embeddings.LayerNorm.weight': (h,), 'embeddings.LayerNorm.bias': (h,)}
  for i in range(config['num_hidden_layers']):
    p = f'encoder.layer.{i}'
    for name, out, inp in ((f'{p}.attention.self.query', h, h), (f'{p}.attention.self.key', h, h),
                           (f'{p}.attention.self.value', h, h),
                           (f'{p}.attention.output.dense', h, h),
                           (f'{p}.intermediate.dense', inner, h), (f'{p}.output.dense', h, inner)):
      shapes[f'{name}.weight'], shapes[f'{name}.bias'] = (out, inp), (out,)
    for name in (f'{p}.attention.output.LayerNorm', f'{p}.output.LayerNorm'):
      shapes[f'{name}.weight'], shapes[f'{name}.bias'] = (h,), (h,)
  if pooler:
    shapes['pooler.dense.weight'], shapes['pooler.dense.bias'] = (h, h), (h,)
  if mlm:
    shapes.update({'cls.predictions.transform.dense.weight': (h, h),
                   'cls.predictions.transform.dense.bias': (h,),
                   'cls.predictions.transform.LayerNorm.weight': (h,),
                   'cls.predictions.transform.LayerNorm.bias': (h,),
                   'cls.predictions.bias': (config['vocab_size'],)})
  if nsp:
    shapes['cls.seq_relationship.weight'], shapes['cls.seq_relationship.bias'] = (2, h), (2,)
  weights = {}
  for name, shape in shapes.items():
    value = rng.normal(0.0, 0.5, size=shape)
    if name.endswith('LayerNorm.weight'):
      value += 1.0
    weights[name] = value.astype(np.float32)
  return weights


def random_inputs(config, batch=2, seq=7, seed=1):
  """(ids, mask, types) int32 [batch, seq]; the second row is padded after 4 tokens."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(1, config['vocab_size'], size=(batch, seq)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[1:, 4:] = 0
  types = np.zeros_like(ids)
  types[:, seq // 2:] = 1
  return ids, mask, types


def write_hf_dir(directory, config, weights, prefix=''):
  """Writes `config.json` and `model.safetensors` (encoder names prefixed with `prefix`)."""
  import json  # pylint: disable=g-import-not-at-top
  import os  # pylint: disable=g-import-not-at-top
  from safetensors import numpy as safetensors_numpy  # pylint: disable=g-import-not-at-top
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, 'config.json'), 'w', encoding='utf-8') as f:
    json.dump(config, f)
  tensors = {(name if name.startswith('cls.') else prefix + name): value
             for name, value in weights.items()}
  safetensors_numpy.save_file(tensors, os.path.join(directory, 'model.safetensors'),
                              metadata={'format': 'pt'})
  return str(directory)
