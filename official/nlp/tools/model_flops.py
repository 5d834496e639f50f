"""Matmul FLOPs of one masked-LM pretraining sequence, counted from the experiment config.

`mlm-benchmark` divides its measured steps/s by these counts to report model TFLOP/s and the share
of the matmul roofline. Counted: every matmul, 2 FLOPs per multiply-add; training is 3x the
forward pass (the backward pass computes two products per forward one). Not counted: embedding
lookups, norms, activations, the GeGLU gate's product, softmax, rotary embeddings, the optimizer.
Attention counts the query-key pairs the model uses: every pair in a global layer, the band
|i - j| <= window // 2 in a local (sliding-window) one, whatever kernel computes it; a packed row
counts as one sequence.

These are the model's FLOPs: every position through every layer, the convention of model-FLOP
utilization, the same for every framework. A `MaskedLMTask` step on a BERT encoder executes fewer:
its last layer runs at [CLS] and the masked positions only (`executed_flops_per_sequence`).

Each encoder family (`networks.encoder_family`) names its counter in its record (`count_flops`:
`bert_flops`, `albert_flops`, `modernbert_flops` below for the built-in ones); a type without one
is refused, naming it.

Example:
  >>> params = exp_factory.get_exp_config('bert/pretraining')
  >>> params.override(hyperparams.read_yaml('configs/pretraining/modernbert_mini.yaml'))
  >>> model_flops_per_sequence(params)['train'] / 1e9  # GFLOP per training sequence
"""

import collections.abc
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

from official.nlp.modeling.networks import encoder_family

# (forward FLOPs of the encoder by part, width of the word table the masked-LM head decodes with)
_EncoderCount = Tuple[Dict[str, float], int]


def model_flops_per_sequence(params: Any) -> Dict[str, float]:
  """Matmul FLOPs of one training sequence of `params`' pretrainer (2 FLOPs per multiply-add).

  Per transformer layer (seq s, hidden h, attention width d = heads x (h // heads), feed-forward
  i, q query-key pairs: s^2 for global attention): projections Q, K, V and output 8*s*h*d;
  scores and weighted sum 4*q*d; feed-forward 4*s*h*i, or 6*s*h*i gated (GeGLU: h -> 2i, i -> h).
  Embedding projection 2*s*e*h when the embedding width e differs from h. Pooler 2*h^2 (BERT,
  ALBERT; ModernBERT has none). Masked-LM head on the p = max_predictions_per_seq positions:
  transform 2*p*h*e, vocabulary 2*p*e*v. Each classification head 2*h*inner + 2*inner*classes
  (2*h*classes without an inner layer).

  Args:
    params: an experiment config with `task.model` (a `PretrainerConfig`) and `task.train_data`
      (`seq_length`, `max_predictions_per_seq`).

  Returns:
    Forward FLOPs per part (`embedding_projection`, `attention_projections`, `attention_scores`,
    `feed_forward`, `pooler`, `mlm_transform`, `mlm_vocab`, `classification_heads`), their sum
    `forward`, and `train` (3 x forward).

  Raises:
    ValueError: an encoder type without a counter, or no type selected (naming
      `task.model.encoder.type`, the type and the counted types).

  Example:
    >>> flops = model_flops_per_sequence(params)
    >>> flops['train'] == 3 * flops['forward']
    True
  """
  encoder = params.task.model.encoder
  counter = _ENCODER_COUNTERS.get(encoder.type)
  if counter is None:
    raise ValueError(f'task.model.encoder.type={encoder.type!r}: no FLOP count for this encoder '
                     f'type; expected one of {sorted(_ENCODER_COUNTERS)}')
  config = getattr(encoder, encoder.type)
  data = params.task.train_data
  p = data.max_predictions_per_seq
  parts, e = counter(config, data.seq_length)
  h, v = config.hidden_size, config.vocab_size
  parts['mlm_transform'] = 2.0 * p * h * e
  parts['mlm_vocab'] = 2.0 * p * e * v
  parts['classification_heads'] = float(sum(
      2 * h * head.inner_dim + 2 * head.inner_dim * head.num_classes if head.inner_dim
      else 2 * h * head.num_classes for head in params.task.model.cls_heads))
  parts['forward'] = sum(parts.values())
  parts['train'] = 3.0 * parts['forward']
  return parts


# Encoder types whose encoders take `output_positions` (`BertEncoder.supports_output_positions`):
# `MaskedLMTask` runs their last layer at [CLS] and the masked positions only.
LAST_LAYER_AT_MASKED_POSITIONS = ('bert', 'bert_v2')


def executed_flops_per_sequence(params: Any) -> Dict[str, float]:
  """`model_flops_per_sequence` less what a `MaskedLMTask` step skips: with an encoder type of
  `LAST_LAYER_AT_MASKED_POSITIONS` and heads that read token 0, the last layer's query and output
  projections, attention rows and feed-forward layer at the s - q positions other than [CLS] and
  the q - 1 = max_predictions_per_seq masked ones.

  Returns:
    The same keys; `skipped_last_layer` holds the forward FLOPs left out (0 when none are).

  Example:
    >>> executed_flops_per_sequence(params)['forward'] < model_flops_per_sequence(params)['forward']
    True
  """
  parts = model_flops_per_sequence(params)
  encoder = params.task.model.encoder
  heads_read_cls = all(head.cls_token_idx == 0 for head in params.task.model.cls_heads)
  skipped = {'attention_projections': 0.0, 'attention_scores': 0.0, 'feed_forward': 0.0}
  if encoder.type in LAST_LAYER_AT_MASKED_POSITIONS and heads_read_cls:
    config = getattr(encoder, encoder.type)
    s, h, i = params.task.train_data.seq_length, config.hidden_size, config.intermediate_size
    heads = config.num_attention_heads
    d = heads * max(h // heads, 1)
    rest = max(s - (1 + params.task.train_data.max_predictions_per_seq), 0)
    # Per position left out: query and output projections, its attention row (scores and
    # weighted sum over s keys) and the feed-forward layer.
    skipped = {'attention_projections': rest * 4.0 * h * d,
               'attention_scores': rest * 4.0 * s * d, 'feed_forward': rest * 4.0 * h * i}
  for key, value in skipped.items():
    parts[key] -= value
  parts['skipped_last_layer'] = sum(skipped.values())
  parts['forward'] -= parts['skipped_last_layer']
  parts['train'] = 3.0 * parts['forward']
  return parts


def band_pairs(seq_length: int, half_window: int) -> int:
  """Query-key pairs (i, j) of a sequence with |i - j| <= half_window: sliding-window attention.

  Args:
    seq_length: tokens s.
    half_window: the reach r on either side (ModernBERT's `local_attention // 2`).

  Returns:
    s * (2r + 1) - r * (r + 1) (each end loses r(r + 1) / 2 pairs), or s^2 once r >= s - 1.

  Example:
    >>> band_pairs(5, 1)  # rows see 2, 3, 3, 3, 2 keys
    13
  """
  s, r = seq_length, half_window
  return s * s if r >= s - 1 else s * (2 * r + 1) - r * (r + 1)


def _layer(s: int, h: int, heads: int, inner: int, pairs: int, gated: bool) -> Dict[str, float]:
  """Forward FLOPs of one transformer layer on `s` tokens whose attention uses `pairs` pairs."""
  d = heads * max(h // heads, 1)
  return {'attention_projections': 8.0 * s * h * d, 'attention_scores': 4.0 * pairs * d,
          'feed_forward': (6.0 if gated else 4.0) * s * h * inner}


def _stack(s: int, h: int, e: int, layers: Any, pooler: bool) -> Dict[str, float]:
  """Sums the layers' parts; adds the embedding projection (e != h) and the pooler."""
  parts = {'embedding_projection': 2.0 * s * e * h if e != h else 0.0,
           'attention_projections': 0.0, 'attention_scores': 0.0, 'feed_forward': 0.0}
  for layer in layers:
    for key, value in layer.items():
      parts[key] += value
  parts['pooler'] = 2.0 * h * h if pooler else 0.0
  return parts


def bert_flops(config: Any, s: int) -> _EncoderCount:
  """`BertEncoder` / `BertEncoderV2`: post- or pre-LN blocks, an optional factorized embedding.

  Args:
    config: a `BertEncoderConfig`.
    s: the sequence length.

  Returns:
    (forward FLOPs by part, the width of the word table the masked-LM head decodes with).
  """
  h, e = config.hidden_size, config.embedding_size or config.hidden_size
  layer = _layer(s, h, config.num_attention_heads, config.intermediate_size, s * s, gated=False)
  return _stack(s, h, e, [layer] * config.num_layers, pooler=True), e


def albert_flops(config: Any, s: int) -> _EncoderCount:
  """`AlbertEncoder`: one shared block applied `num_layers` times (each application computes);
  arguments and result as `bert_flops`'s."""
  h, e = config.hidden_size, config.embedding_width
  layer = _layer(s, h, config.num_attention_heads, config.intermediate_size, s * s, gated=False)
  return _stack(s, h, e, [layer] * config.num_layers, pooler=True), e


def modernbert_flops(config: Any, s: int) -> _EncoderCount:
  """`ModernBertEncoder`: GeGLU blocks, layer i global when i % global_attn_every_n_layers == 0,
  else local (|i - j| <= local_attention // 2); no position table, no pooler; arguments and
  result as `bert_flops`'s."""
  h = config.hidden_size
  local = band_pairs(s, config.local_attention // 2)
  layers = [_layer(s, h, config.num_attention_heads, config.intermediate_size,
                   s * s if i % config.global_attn_every_n_layers == 0 else local, gated=True)
            for i in range(config.num_layers)]
  return _stack(s, h, h, layers, pooler=False), h


class _FamilyCounters(collections.abc.MutableMapping):
  """Type name -> FLOP counter: the `count_flops` of every registered family that has one.

  A live view of the registry (a family registered later is counted too). Deleting a name
  refuses that type here until it is set again (tests use this); setting one overrides the
  family's counter.
  """

  def __init__(self):
    self._local: Dict[str, Optional[Callable[[Any, int], _EncoderCount]]] = {}

  def _counter(self, name: str) -> Optional[Callable[[Any, int], _EncoderCount]]:
    if name in self._local:
      return self._local[name]
    family = encoder_family.get(name)
    return None if family is None else encoder_family.resolve(family.count_flops)

  def __getitem__(self, name: str) -> Callable[[Any, int], _EncoderCount]:
    counter = self._counter(name)
    if counter is None:
      raise KeyError(name)
    return counter

  def __setitem__(self, name: str, counter: Callable[[Any, int], _EncoderCount]) -> None:
    self._local[name] = counter

  def __delitem__(self, name: str) -> None:
    if self._counter(name) is None:
      raise KeyError(name)
    self._local[name] = None

  def __iter__(self) -> Iterator[str]:
    names = list(encoder_family.names()) + [n for n in self._local if n not in
                                             encoder_family.names()]
    return iter([name for name in names if self._counter(name) is not None])

  def __len__(self) -> int:
    return sum(1 for _ in self)


_ENCODER_COUNTERS = _FamilyCounters()

