"""XLNet pretraining inputs (Model Garden's `XLNetPretrainDataConfig` / `XLNetPretrainDataLoader`):
records of `input_word_ids`, `input_type_ids` and word `boundary_indices`, with prediction targets
and factorization orders sampled as they are read.

Both names are importable from `pretrain_dataloader` too (Model Garden's path); importing either
module registers the config with `data_loader_factory`.

Example:
  >>> params = XLNetPretrainDataConfig(input_path='data/xlnet-*.tfrecord', seq_length=512,
  ...                                  reuse_length=256, global_batch_size=16)
  >>> batch = next(iter(XLNetPretrainDataLoader(params).load()))
  >>> batch['permutation_mask'].shape
  TensorShape([16, 512, 512])
"""

import dataclasses
import logging
from typing import Dict, Optional

import tensorflow as tf

from official.core import config_definitions as cfg
from official.modeling import hyperparams
from official.nlp.data import data_loader_factory
from official.nlp.data.tfrecord_reader import list_input_files, record_stream

XLNET_SAMPLE_STRATEGIES = ('single_token', 'whole_word', 'token_span', 'word_span')


@dataclasses.dataclass
class XLNetPretrainDataConfig(cfg.DataConfig):
  """XLNet pretraining records (`input_word_ids`, `input_type_ids` int64[seq_length],
  `boundary_indices` int64[any]: word starts) with targets and factorization orders sampled online.

  Attributes:
    seq_length: tokens per example.
    max_predictions_per_seq: targets per example (required by the loader; None is refused).
    reuse_length: tokens at the start reused as memory from the previous segment (0: none); the
      two parts get separate factorization orders and the reused part never sees the rest.
    sample_strategy: how targets are chosen: 'single_token', 'whole_word' (whole words from
      `boundary_indices`), 'token_span' or 'word_span' (spans whose lengths follow p(n) ~ 1/(n+1)).
    min_num_tokens, max_num_tokens: span lengths in tokens ('token_span').
    min_num_words, max_num_words: span lengths in words ('word_span').
    permutation_size: the factorization order permutes blocks of this many tokens (the same
      permutation in every block); `seq_length` and `reuse_length` must be multiples of it.
    leak_ratio: fraction of targets that may see themselves (as BERT keeps some tokens).
    segment_sep_id, segment_cls_id: the [SEP] and [CLS] ids, never targets.
  """
  global_batch_size: int = hyperparams.field(512, ge=0)
  is_training: Optional[bool] = True
  seq_length: int = hyperparams.field(512, ge=1)
  max_predictions_per_seq: Optional[int] = hyperparams.field(76, ge=1)
  reuse_length: int = hyperparams.field(256, ge=0)
  sample_strategy: str = hyperparams.field('word_span', choices=XLNET_SAMPLE_STRATEGIES)
  min_num_tokens: int = hyperparams.field(1, ge=1)
  max_num_tokens: int = hyperparams.field(5, ge=1)
  min_num_words: int = hyperparams.field(1, ge=1)
  max_num_words: int = hyperparams.field(5, ge=1)
  permutation_size: int = hyperparams.field(256, ge=1)
  leak_ratio: float = hyperparams.field(0.1, ge=0.0, le=1.0)
  segment_sep_id: int = 4
  segment_cls_id: int = 3
  file_type: str = hyperparams.field('tfrecord', choices=('tfrecord', 'tfrecord_compressed'))


def _zipf_span_lengths(low: int, high: int, count: int) -> tf.Tensor:
  """`count` span lengths in [low, high] drawn with p(n) proportional to 1 / (n + 1)."""
  lengths = tf.range(low, high + 1, dtype=tf.float32)
  log_probs = tf.math.log(1.0 / (lengths + 1.0))
  return tf.random.categorical(log_probs[None], count, dtype=tf.int32)[0] + low


def _spread_spans(span_lengths: tf.Tensor, density: float) -> tf.Tensor:
  """Begin offsets of spans laid out left to right, each followed and preceded by context so that
  about `1 / density` of the units are covered: a span of n units takes round(n * density) slots,
  a random part of the (density - 1) * n context slots going before it."""
  lengths = tf.cast(span_lengths, tf.float32)
  before = tf.cast(tf.round(tf.random.uniform(tf.shape(lengths)) * lengths * (density - 1.0)),
                   tf.int32)
  slots = tf.cast(tf.round(lengths * density), tf.int32)
  return tf.cumsum(slots, exclusive=True) + before


@data_loader_factory.register_data_loader_cls(XLNetPretrainDataConfig)
class XLNetPretrainDataLoader:
  """Builds the XLNet pretraining pipeline of `XLNetPretrainDataConfig`.

  Each example gets `permutation_mask` int32 [seq, seq] (1: token i may attend to token j),
  `input_word_ids`, `input_type_ids` int32 [seq], `masked_tokens` bool [seq] (the targets), and
  `target`, `target_mask` int32 [max_predictions_per_seq] with `target_mapping` int32
  [max_predictions_per_seq, seq] (one-hot positions of the targets, zero rows as padding).

  Args:
    params: the data config.
  """

  def __init__(self, params: XLNetPretrainDataConfig):
    self._params = params

  def _check(self) -> None:
    params = self._params
    if params.max_predictions_per_seq is None:
      raise ValueError('XLNetPretrainDataConfig.max_predictions_per_seq must be set (found None): '
                       'it is the number of targets sampled per example')
    size, seq, reuse = params.permutation_size, params.seq_length, params.reuse_length
    if reuse > seq:
      raise ValueError(f'reuse_length {reuse} exceeds seq_length {seq}')
    if seq % size or reuse % size:
      raise ValueError(
          f'`reuse_length` ({reuse}) and `seq_length` ({seq}) should both be a multiple '
          f'of `permutation_size` ({size})')
    if reuse and size > reuse:
      logging.warning('permutation_size %d > reuse_length %d may leak targets', size, reuse)

  def _is_content(self, word_ids: tf.Tensor) -> tf.Tensor:
    params = self._params
    return tf.logical_and(tf.not_equal(word_ids, params.segment_sep_id),
                          tf.not_equal(word_ids, params.segment_cls_id))

  def _mark_spans(self, begins: tf.Tensor, ends: tf.Tensor, word_ids: tf.Tensor) -> tf.Tensor:
    """bool [seq]: content tokens inside the spans `[begins, ends)`, taken span by span (in the
    given order) until `max_predictions_per_seq` tokens are marked."""
    positions = tf.range(self._params.seq_length)
    inside = tf.logical_and(positions[None, :] >= begins[:, None],
                            positions[None, :] < ends[:, None])
    inside = tf.logical_and(inside, self._is_content(word_ids)[None, :])
    running = tf.reshape(tf.cumsum(tf.reshape(tf.cast(inside, tf.int32), [-1])), tf.shape(inside))
    kept = tf.logical_and(inside, running <= self._params.max_predictions_per_seq)
    return tf.reduce_any(kept, axis=0)

  def _sample_targets(self, word_ids: tf.Tensor, boundaries: tf.Tensor) -> tf.Tensor:
    """bool [seq]: the prediction targets of one example (see `sample_strategy`)."""
    params = self._params
    seq, count = params.seq_length, params.max_predictions_per_seq
    strategy = params.sample_strategy
    if strategy == 'single_token':
      candidates = tf.boolean_mask(tf.range(seq), self._is_content(word_ids))
      chosen = tf.random.shuffle(candidates)[:count]
      return tf.scatter_nd(chosen[:, None], tf.ones_like(chosen, tf.bool), [seq])
    if strategy == 'whole_word':
      words = tf.stack([boundaries[:-1], boundaries[1:]], axis=1)
      words = tf.random.shuffle(words)[:count]
      return self._mark_spans(words[:, 0], words[:, 1], word_ids)
    if strategy == 'token_span':
      lengths = _zipf_span_lengths(params.min_num_tokens, params.max_num_tokens, count)
      begins = _spread_spans(lengths, seq / count)
      ends = begins + lengths
      valid = ends < seq
    else:  # word_span: spans of words, mapped to tokens through the word boundaries
      lengths = _zipf_span_lengths(params.min_num_words, params.max_num_words, count)
      begins = _spread_spans(lengths, seq / count / 1.2)  # about 1.2 tokens a word
      ends = begins + lengths
      valid = ends < tf.shape(boundaries)[0] - 1
      begins = tf.gather(boundaries, tf.boolean_mask(begins, valid))
      ends = tf.gather(boundaries, tf.boolean_mask(ends, valid))
      valid = tf.ones_like(begins, tf.bool)
    spans = tf.random.shuffle(tf.stack([tf.boolean_mask(begins, valid),
                                        tf.boolean_mask(ends, valid)], axis=1))
    return self._mark_spans(spans[:, 0], spans[:, 1], word_ids)

  def _factorize(self, word_ids: tf.Tensor, targets: tf.Tensor):
    """`(permutation_mask [n, n], targets [n])` of a random factorization order of one part.

    Context tokens (non-targets, [SEP]/[CLS], and leaked targets) see every context token; a
    target sees the context and the targets before it in the order (not itself).
    """
    params = self._params
    size = params.permutation_size
    length = tf.shape(word_ids)[0]
    positions = tf.range(length)
    order = tf.random.shuffle(tf.range(size))
    rank = (positions // size) * size + tf.gather(order, positions % size)
    targets = tf.logical_and(targets, self._is_content(word_ids))
    context = tf.logical_not(targets)
    if params.leak_ratio > 0:
      leaked = tf.random.uniform([length]) < params.leak_ratio
      context = tf.logical_or(context, tf.logical_and(targets, leaked))
    key = tf.where(context, -2, rank)  # what others compare against
    query = tf.where(context, -1, rank)  # what a token compares with
    return tf.cast(query[:, None] > key[None, :], tf.int32), targets

  def _parse(self, record: tf.Tensor) -> Dict[str, tf.Tensor]:
    params = self._params
    seq, reuse = params.seq_length, params.reuse_length
    parsed = tf.io.parse_single_example(record, {
        'input_word_ids': tf.io.FixedLenFeature([seq], tf.int64),
        'input_type_ids': tf.io.FixedLenFeature([seq], tf.int64),
        'boundary_indices': tf.io.VarLenFeature(tf.int64)})
    word_ids = tf.cast(parsed['input_word_ids'], tf.int32)
    boundaries = tf.cast(tf.sparse.to_dense(parsed['boundary_indices']), tf.int32)
    sampled = self._sample_targets(word_ids, boundaries)
    if reuse > 0:
      rest = seq - reuse
      mask_a, targets_a = self._factorize(word_ids[:reuse], sampled[:reuse])
      mask_b, targets_b = self._factorize(word_ids[reuse:], sampled[reuse:])
      # The reused part never sees the new tokens; the new tokens see all of the reused part.
      permutation_mask = tf.concat([
          tf.concat([mask_a, tf.zeros([reuse, rest], tf.int32)], axis=1),
          tf.concat([tf.ones([rest, reuse], tf.int32), mask_b], axis=1)], axis=0)
      targets = tf.concat([targets_a, targets_b], axis=0)
    else:
      permutation_mask, targets = self._factorize(word_ids, sampled)
    count = params.max_predictions_per_seq
    target_positions = tf.boolean_mask(tf.range(seq), targets)[:count]
    num_targets = tf.shape(target_positions)[0]
    padding = count - num_targets
    return {
        'input_word_ids': word_ids,
        'input_type_ids': tf.cast(parsed['input_type_ids'], tf.int32),
        'permutation_mask': tf.reshape(permutation_mask, [seq, seq]),
        'masked_tokens': tf.reshape(targets, [seq]),
        'target': tf.reshape(tf.pad(tf.gather(word_ids, target_positions), [[0, padding]]),
                             [count]),
        'target_mask': tf.reshape(tf.pad(tf.ones([num_targets], tf.int32), [[0, padding]]),
                                  [count]),
        'target_mapping': tf.reshape(
            tf.pad(tf.one_hot(target_positions, seq, dtype=tf.int32), [[0, padding], [0, 0]]),
            [count, seq]),
    }

  def load(self, input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns batches of the features above, batched per replica.

    Raises:
      ValueError: `max_predictions_per_seq` is None, or lengths that are not multiples of
        `permutation_size`.
    """
    self._check()
    params = self._params
    dataset, batch_size = record_stream(params, list_input_files(params.input_path), input_context)
    dataset = dataset.map(self._parse, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.batch(batch_size, drop_remainder=params.drop_remainder)
    return dataset.prefetch(params.prefetch_buffer_size or tf.data.AUTOTUNE)
