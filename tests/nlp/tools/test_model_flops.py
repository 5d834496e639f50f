"""Tests of official/nlp/tools/model_flops.py: for every registered encoder type, the count from
the config against an independent count from the built pretrainer's kernels and attention layers."""

import collections
import os
from typing import Dict

import numpy as np
import pytest
import tensorflow as tf

from official.core import exp_factory
from official.core import task_factory
from official.modeling import hyperparams
from official.nlp.modeling import layers
from official.nlp.modeling.networks import encoder_family
from official.nlp.tools import model_flops
from tests.paths import ROOT

SEQ, PREDICTIONS = 16, 3
# Tiny encoders, one per registered type. bert_v2's width 30 is not divisible by its 4 heads
# (attention width 4 x 7 = 28); albert's embedding width differs from its hidden size; modernbert
# has a global, a local (window 8 < SEQ) and a global layer.
TINY = {
    'bert': dict(vocab_size=50, hidden_size=16, num_layers=2, num_attention_heads=2,
                 intermediate_size=24),
    'bert_v2': dict(vocab_size=50, hidden_size=30, num_layers=2, num_attention_heads=4,
                    intermediate_size=20, embedding_size=12),
    'albert': dict(vocab_size=50, embedding_width=8, hidden_size=16, num_layers=3,
                   num_attention_heads=2, intermediate_size=24),
    'modernbert': dict(vocab_size=50, hidden_size=16, num_layers=3, num_attention_heads=2,
                       intermediate_size=12, local_attention=8, global_attn_every_n_layers=2),
}


def _params(kind: str, cls_heads=()):
  params = exp_factory.get_exp_config('bert/pretraining')
  params.override({'task': {
      'model': {'encoder': {'type': kind, kind: TINY[kind]}, 'cls_heads': list(cls_heads)},
      'train_data': {'seq_length': SEQ, 'max_predictions_per_seq': PREDICTIONS}}})
  return params


def _block_calls(model, monkeypatch) -> Dict[str, int]:
  """How many times each transformer block runs in one forward pass (ALBERT shares one)."""
  calls = collections.Counter()
  call = layers.TransformerEncoderBlock.call

  def counted(self, *args, **kwargs):
    calls[self.name] += 1
    return call(self, *args, **kwargs)

  monkeypatch.setattr(layers.TransformerEncoderBlock, 'call', counted)
  ids = tf.ones([1, SEQ], tf.int32)
  model({'input_word_ids': ids, 'input_mask': ids, 'input_type_ids': tf.zeros_like(ids),
         'masked_lm_positions': tf.range(PREDICTIONS)[None]})
  monkeypatch.setattr(layers.TransformerEncoderBlock, 'call', call)
  return dict(calls)


def _count_from_model(model, monkeypatch) -> float:
  """Forward matmul FLOPs of one sequence read off the built model, not off its config.

  Every kernel does 2 FLOPs per weight per row it is applied to: SEQ rows in the encoder (times
  the calls of its block in a forward pass: ALBERT's shared block runs num_layers times),
  PREDICTIONS rows in the masked-LM head, one row in the pooler and the classification heads. The
  tied word table decodes PREDICTIONS rows. Attention adds 4 FLOPs per query-key pair per
  attention unit (scores and weighted sum), the pairs counted on the mask each block's
  `attention_window` gives.
  """
  calls = _block_calls(model, monkeypatch)
  blocks = [layer for layer in model.encoder_network.submodules
            if isinstance(layer, layers.TransformerEncoderBlock)]
  head_names = [head.name for head in model.classification_heads]
  total = 0.0
  for weight in model.trainable_weights:
    name, size = weight.name, int(np.prod(weight.shape))
    scope = name.split('/')[0]
    if name.startswith('word_embeddings/'):
      total += 2 * size * PREDICTIONS  # the masked-LM decoder (lookups are free)
    elif not name.endswith('kernel:0'):
      continue  # biases, norms, position and type tables
    elif name.startswith('transformer/'):
      block = name.split('/self_attention/')[0].split('/intermediate/')[0].split('/output/')[0]
      total += 2 * size * SEQ * calls[block]
    elif scope == 'embedding_projection':
      total += 2 * size * SEQ
    elif name.startswith('bert/cls/predictions/'):
      total += 2 * size * PREDICTIONS
    elif scope == 'pooler_transform' or (scope == 'bert' and name.split('/')[1] in head_names):
      total += 2 * size
    else:
      raise AssertionError(f'kernel {name} is not classified; count it here and in model_flops')
  for block in blocks:
    query = next(w for w in block.trainable_weights if '/query/kernel' in w.name)
    width = int(np.prod(query.shape[1:]))  # heads x head width
    i, j = np.meshgrid(np.arange(SEQ), np.arange(SEQ), indexing='ij')
    window = block.attention_window
    pairs = int(np.sum(np.abs(i - j) <= window // 2)) if window else SEQ * SEQ
    total += 4 * pairs * width * calls[block.name]
  return total


def test_every_registered_type_has_a_tiny_config():
  assert sorted(TINY) == sorted(encoder_family.names())


@pytest.mark.slow
@pytest.mark.parametrize('kind', sorted(encoder_family.names()))
def test_count_matches_the_built_model(kind, monkeypatch):
  heads = [{'name': 'next_sentence', 'num_classes': 2, 'inner_dim': 8}] if kind != 'modernbert' \
      else []
  params = _params(kind, heads)
  flops = model_flops.model_flops_per_sequence(params)
  model = task_factory.get_task(params.task).build_model()
  assert flops['forward'] == pytest.approx(_count_from_model(model, monkeypatch), rel=1e-12)
  assert flops['train'] == 3 * flops['forward']
  parts = [k for k in flops if k not in ('forward', 'train')]
  assert flops['forward'] == pytest.approx(sum(flops[k] for k in parts))


def test_modernbert_parts():
  flops = model_flops.model_flops_per_sequence(_params('modernbert'))
  s, h, i, v, p = SEQ, 16, 12, 50, PREDICTIONS
  band = 16 * 9 - 4 * 5  # half window 4: 9 keys a row, 4 + 3 + 2 + 1 fewer at each end
  assert flops['feed_forward'] == 3 * 6 * s * h * i  # GeGLU: h -> 2i, i -> h
  assert flops['attention_scores'] == 4 * h * (2 * s * s + band)  # global, local, global
  assert flops['pooler'] == flops['embedding_projection'] == flops['classification_heads'] == 0
  assert flops['mlm_transform'] == 2 * p * h * h and flops['mlm_vocab'] == 2 * p * h * v


def test_local_attention_wider_than_the_sequence_is_global():
  params = _params('modernbert')
  params.override({'task': {'model': {'encoder': {'modernbert': {'local_attention': 64}}}}})
  flops = model_flops.model_flops_per_sequence(params)
  assert flops['attention_scores'] == 4 * 16 * 3 * SEQ * SEQ


@pytest.mark.parametrize('length, half_window', [(1, 0), (5, 1), (16, 4), (16, 15), (16, 40),
                                                 (300, 64)])
def test_band_pairs_against_a_mask(length, half_window):
  i, j = np.meshgrid(np.arange(length), np.arange(length), indexing='ij')
  assert model_flops.band_pairs(length, half_window) == np.sum(np.abs(i - j) <= half_window)


def test_an_uncounted_type_is_refused_in_one_line(monkeypatch):
  monkeypatch.delitem(model_flops._ENCODER_COUNTERS, 'albert')  # pylint: disable=protected-access
  with pytest.raises(ValueError) as error:
    model_flops.model_flops_per_sequence(_params('albert'))
  assert str(error.value) == ("task.model.encoder.type='albert': no FLOP count for this encoder "
                              "type; expected one of ['bert', 'bert_v2', 'modernbert']")


def test_no_type_selected_is_refused():
  params = _params('bert')
  params.override({'task': {'model': {'encoder': {'type': None}}}}, is_strict=False)
  with pytest.raises(ValueError, match=r"task.model.encoder.type=None: no FLOP count"):
    model_flops.model_flops_per_sequence(params)


def test_mini_configs_as_shipped():
  """The shipped mini configs: ModernBERT-Mini's local layers see 129 keys at most of 128."""
  counts = {}
  for name in ('bert_mini', 'modernbert_mini'):
    params = exp_factory.get_exp_config('bert/pretraining')
    params.override(hyperparams.read_yaml(os.path.join(ROOT, 'configs', 'pretraining',
                                                       f'{name}.yaml')))
    counts[name] = model_flops.model_flops_per_sequence(params)
  bert, modern = counts['bert_mini'], counts['modernbert_mini']
  assert bert['attention_scores'] == 4 * 4 * 128 * 128 * 256
  assert modern['attention_scores'] == 4 * 256 * (2 * 128 * 128 + 2 * (128 * 129 - 64 * 65))
  assert modern['feed_forward'] == 4 * 6 * 128 * 256 * 672
  assert modern['mlm_vocab'] == 2 * 38 * 256 * 30522
