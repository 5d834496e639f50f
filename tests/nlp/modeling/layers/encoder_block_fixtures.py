"""Transformer blocks and encoders of every attention path, for checkpoint compatibility tests.

Each case builds a layer (`TransformerEncoderBlock` on each attention path, under float32 and
mixed_bfloat16, its subclasses, and the encoders built on it), gives it weights from a seeded
numpy generator and calls it in several modes: `eval` (training=False: the fused kernels),
`eval_plain` (a tensor flag: plain ops), `train` (dropout, seeded), `grad` (gradients of the
eval output) and `xla` (compiled). `write` stores the layers' checkpoint (one object per case),
their variables, checkpoint keys and configs (`layout.json`) and the outputs (`outputs.npz`).

`tests/testdata/encoder_block/` was written by the code before the attention paths were split
out of the block (commit c966edd), so the tests compare today's code with it:

  git worktree add /tmp/block_base c966edd
  PYTHONPATH=/tmp/block_base .venv/bin/python \\
      tests/nlp/modeling/layers/encoder_block_fixtures.py tests/testdata/encoder_block

Only public constructors are used, so any version of the package can write the fixture.
"""

import json
import os
import sys
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling import networks
from official.nlp.modeling.layers import pack_optimization
from official.nlp.modeling.networks import albert_encoder
from official.nlp.modeling.networks import modernbert_encoder

SEED = 1234


class Case(NamedTuple):
  make: Callable[[], tf_keras.layers.Layer]
  inputs: Callable[[np.random.Generator], Tuple[tuple, dict]]
  modes: Tuple[str, ...] = ('eval', 'eval_plain', 'grad')
  policy: str = 'float32'


def _x(shape):
  return lambda rng: rng.normal(size=shape).astype(np.float32)


def _mask(batch, seq, rank=2):
  mask = np.ones((batch, seq), np.float32)
  mask[-1, seq // 2 + 1:] = 0
  return mask if rank == 2 else mask[:, None, :] * np.ones((1, seq, 1), np.float32)


def _block_inputs(shape=(2, 6, 16), mask_rank=2, as_list=False, **kwargs):
  def make(rng):
    x, mask = _x(shape)(rng), _mask(shape[0], shape[1], mask_rank)
    return (([x, mask],) if as_list else (x, mask)), kwargs
  return make


def _block(**kwargs):
  options = dict(num_attention_heads=2, inner_dim=24, inner_activation='gelu', name='layer_0')
  options.update(kwargs)
  return lambda: layers.TransformerEncoderBlock(**options)


_MODERNBERT = dict(norm_first=True, use_bias=False, norm_use_bias=False, gated_inner=True,
                   inner_activation='exact_gelu', norm_epsilon=1e-5, rotary_theta=10000.0)
_DROPOUT = dict(output_dropout=0.2, attention_dropout=0.2)
_TRAIN = ('eval', 'eval_plain', 'grad', 'train')


def _modern_inputs(rng):
  x = _x((2, 9, 16))(rng)
  positions = np.array([list(range(9)), [0, 1, 2, 3, 0, 1, 2, 3, 4]], np.int32)
  documents = np.array([[0] * 9, [0] * 4 + [1] * 5], np.int32)
  return (x, _mask(2, 9)), dict(position_ids=positions, document_ids=documents)


def _query_key_value(rng):
  q, kv = _x((2, 4, 12))(rng), _x((2, 6, 20))(rng)
  return ([q, kv, np.ones((2, 4, 6), np.float32)],), {}


def _self_as_query_key_value(rng):
  x = _x((2, 6, 16))(rng)
  return ([x, x, _mask(2, 6, rank=3)],), {}


def _encoder_inputs(seq=8, vocab=30, position_ids=False):
  def make(rng):
    ids = rng.integers(1, vocab, (2, seq)).astype(np.int32)
    inputs = dict(input_word_ids=ids, input_mask=_mask(2, seq).astype(np.int32),
                  input_type_ids=(np.arange(seq) >= 3).astype(np.int32)[None].repeat(2, 0))
    if position_ids:
      inputs['input_position_ids'] = np.array([list(range(seq)), [0, 1, 2, 3, 0, 1, 2, 3]],
                                              np.int32)
    return (inputs,), {}
  return make


_BERT = dict(vocab_size=30, hidden_size=8, num_layers=2, num_attention_heads=2, inner_dim=12,
             max_sequence_length=8, type_vocab_size=2, dict_outputs=True, name='encoder')

CASES: Dict[str, Case] = {
    # The fused self-attention path (MultiHeadSelfAttention).
    'bert_post_ln': Case(_block(**_DROPOUT), _block_inputs(), _TRAIN + ('xla',)),
    'bert_pre_ln': Case(_block(norm_first=True, **_DROPOUT), _block_inputs(), _TRAIN),
    'bert_output_range_scores': Case(
        _block(output_range=3, return_attention_scores=True),
        _block_inputs(mask_rank=3, as_list=True)),
    'heads_not_dividing_inner_dropout': Case(
        _block(num_attention_heads=3, inner_activation='exact_gelu', inner_dropout=0.3,
               **_DROPOUT), _block_inputs(), _TRAIN),
    'rms_norm': Case(_block(use_rms_norm=True, use_bias=False), _block_inputs()),
    'modernbert_global': Case(_block(**_MODERNBERT), _modern_inputs),
    'modernbert_local': Case(_block(attention_window=4, **_MODERNBERT), _modern_inputs,
                             ('eval', 'eval_plain', 'grad', 'xla')),
    'modernbert_post_ln': Case(_block(**dict(_MODERNBERT, norm_first=False), attention_window=4),
                               _modern_inputs),
    # Keras' MultiHeadAttention.
    'keras_options': Case(
        _block(key_dim=3, value_dim=5, output_last_dim=7, use_query_residual=False,
               norm_first=True, diff_q_kv_att_layer_norm=True, use_bias=False, inner_dropout=0.2,
               **_DROPOUT), _query_key_value, _TRAIN),
    'keras_self_as_query_key_value': Case(_block(**_DROPOUT), _self_as_query_key_value, _TRAIN),
    'keras_output_range_scores': Case(
        _block(key_dim=4, output_range=2, return_attention_scores=True, norm_first=True),
        _block_inputs()),
    'keras_rank_4': Case(_block(attention_axes=[2]), lambda rng: ((_x((2, 3, 4, 16))(rng),), {})),
    # EfficientAttention.
    'efficient_grouped_kv_heads': Case(_block(num_attention_heads=4, num_kv_heads=1, **_DROPOUT),
                                       _block_inputs(), _TRAIN),
    'efficient_block_diagonal': Case(_block(src_block_size=2, norm_first=True), _block_inputs()),
    'efficient_sigmoid': Case(_block(use_sigmoid_attn=True, sigmoid_attn_bias=-1.0),
                              _block_inputs()),
    'efficient_linformer': Case(
        _block(linformer_dim=3, linformer_shared_kv_projection=False), _block_inputs()),
    # Subclasses of the block.
    'strided': Case(
        lambda: pack_optimization.StridedTransformerEncoderBlock(
            num_attention_heads=2, inner_dim=24, name='layer_0'),
        lambda rng: (([_x((2, 6, 16))(rng), _mask(2, 6, rank=3)],), dict(stride=2))),
    'transformer_legacy_names': Case(
        lambda: layers.Transformer(num_attention_heads=2, intermediate_size=24,
                                   intermediate_activation='relu', dropout_rate=0.2,
                                   attention_dropout_rate=0.2, name='layer_0'),
        _block_inputs(as_list=True), _TRAIN),
    # Encoders built from blocks.
    'bert_encoder': Case(lambda: networks.BertEncoder(**_BERT), _encoder_inputs()),
    'bert_encoder_pre_ln': Case(lambda: networks.BertEncoder(norm_first=True, **_BERT),
                                _encoder_inputs()),
    'albert_encoder': Case(
        lambda: albert_encoder.AlbertEncoder(
            vocab_size=30, embedding_width=4, hidden_size=8, num_layers=2, num_attention_heads=2,
            intermediate_size=12, max_sequence_length=8, type_vocab_size=2, dict_outputs=True,
            name='encoder'),
        _encoder_inputs()),
    'modernbert_encoder': Case(
        lambda: modernbert_encoder.ModernBertEncoder(
            vocab_size=30, hidden_size=8, num_layers=3, num_attention_heads=2,
            intermediate_size=12, local_attention=4, global_attn_every_n_layers=2,
            name='encoder'),
        _encoder_inputs(position_ids=True)),
}
# The same under mixed_bfloat16.
for _name in ('bert_post_ln', 'bert_pre_ln', 'modernbert_local', 'keras_options',
              'efficient_grouped_kv_heads', 'bert_encoder', 'modernbert_encoder'):
  CASES[f'{_name}_bf16'] = CASES[_name]._replace(policy='mixed_bfloat16')


class _Policy:
  """Sets the global Keras dtype policy inside a `with` block."""

  def __init__(self, name: str):
    self._name = name

  def __enter__(self):
    self._old = tf_keras.mixed_precision.global_policy()
    tf_keras.mixed_precision.set_global_policy(self._name)

  def __exit__(self, *exc):
    tf_keras.mixed_precision.set_global_policy(self._old)


def _call(layer, args, kwargs, training) -> List[tf.Tensor]:
  return [tf.cast(t, tf.float32) for t in tf.nest.flatten(layer(*args, training=training,
                                                                **kwargs))]


def build(name: str, policy: Optional[str] = None) -> Tuple[tf_keras.layers.Layer, tuple, dict]:
  """Case `name`'s layer, built and given seeded weights, and its call arguments.

  `policy` replaces the case's dtype policy (e.g. 'float32' for a bfloat16 case's reference).
  """
  case = CASES[name]
  rng = np.random.default_rng(_seed(name))
  args, kwargs = case.inputs(rng)
  args = tf.nest.map_structure(tf.constant, args)
  kwargs = tf.nest.map_structure(tf.constant, kwargs)
  with _Policy(policy or case.policy):
    layer = case.make()
    _call(layer, args, kwargs, False)
  for v in layer.weights:
    value = rng.normal(scale=0.3, size=v.shape) + ('gamma' in v.name)
    v.assign(value.astype(v.dtype.as_numpy_dtype))
  return layer, args, kwargs


def _seed(name: str) -> int:
  """A seed of its own per case (Python's `hash` of a string changes between runs)."""
  return sum(ord(c) * (i + 1) for i, c in enumerate(name)) + SEED


def outputs(name: str, layer, args, kwargs, policy: Optional[str] = None) -> Dict[str, np.ndarray]:
  """The layer's outputs in each of the case's modes, float32, keyed `mode/index` (`policy` as
  in `build`)."""
  with _Policy(policy or CASES[name].policy):
    return _outputs(name, layer, args, kwargs)


def _outputs(name: str, layer, args, kwargs) -> Dict[str, np.ndarray]:
  results = {}
  for mode in CASES[name].modes:
    if mode == 'eval':
      values = _call(layer, args, kwargs, False)
    elif mode == 'eval_plain':
      values = _call(layer, args, kwargs, tf.constant(False))
    elif mode == 'train':
      tf_keras.utils.set_random_seed(SEED)
      values = _call(layer, args, kwargs, True)
    elif mode == 'xla':
      compiled = tf.function(lambda *a: _call(layer, a, kwargs, False), jit_compile=True)
      values = compiled(*args)
    elif mode == 'grad':
      floats = [t for t in tf.nest.flatten(args) if t.dtype.is_floating]
      with tf.GradientTape() as tape:
        tape.watch(floats)
        total = 0.0
        for out in _call(layer, args, kwargs, False):  # every output, weighted
          upstream = tf.cos(tf.reshape(tf.range(tf.size(out), dtype=tf.float32), tf.shape(out)))
          total += tf.reduce_sum(out * upstream)
      values = tape.gradient(total, floats[:1] + layer.trainable_weights,
                             unconnected_gradients=tf.UnconnectedGradients.ZERO)
    else:
      raise ValueError(f'unknown mode {mode}')
    for i, value in enumerate(values):
      results[f'{mode}/{i}'] = np.asarray(tf.convert_to_tensor(value), np.float32)
  return results


def checkpoint_keys(path: str, name: str) -> List[List[Any]]:
  """[key, shape] of the checkpoint's variables under object `name`, sorted."""
  return sorted([key, list(shape)] for key, shape in tf.train.list_variables(path)
                if key.startswith(f'{name}/'))


def layout(layer) -> Dict[str, Any]:
  """The layer's variables in Keras' order ([name, shape]) and its config (JSON)."""
  config = json.loads(json.dumps(layer.get_config(), default=repr))
  return dict(weights=[[v.name, v.shape.as_list()] for v in layer.weights], config=config)


def write(directory: str) -> None:
  """Writes every case's checkpoint, layout and outputs to `directory`."""
  os.makedirs(directory, exist_ok=True)
  built, results, layouts = {}, {}, {}
  for name in CASES:
    layer, args, kwargs = build(name)
    first = outputs(name, layer, args, kwargs)
    again = outputs(name, layer, args, kwargs)
    for key, value in first.items():
      if not np.array_equal(value, again[key], equal_nan=True):
        raise RuntimeError(f'{name} {key}: two calls differ; not a reproducible case')
      results[f'{name}/{key}'] = value
    built[name] = layer
    layouts[name] = layout(layer)
  path = tf.train.Checkpoint(**built).write(os.path.join(directory, 'blocks'))
  for name in CASES:
    layouts[name]['checkpoint'] = checkpoint_keys(path, name)
  np.savez_compressed(os.path.join(directory, 'outputs.npz'), **results)
  with open(os.path.join(directory, 'layout.json'), 'w') as f:
    json.dump(dict(version=tf.__version__, cases=layouts), f, indent=1, sort_keys=True)


if __name__ == '__main__':
  import official  # pylint: disable=g-import-not-at-top
  print(f'writing with {official.__file__}')
  write(sys.argv[1])
