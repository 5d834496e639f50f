"""Sentence-pair and packed-row layouts and masked-LM selection of BERT pretraining instances.

Three layers share one implementation:
  * `pack_documents` decides instance boundaries from sentence offsets only (no tokens), vectorized
    over documents, so the same code serves lists of string tokens (the Model Garden API in
    `create_pretraining_data`) and the fast pipeline. `pack_rows` instead lays whole documents back
    to back into packed rows (pieces, see below).
  * `build_instance_arrays` (instances) and `build_packed_arrays` (packed rows) lay the rows' real
    tokens out flat (no padding); `mask_flat_rows`, the one masking of both, masks them there:
    masking units are ordered by random 16-bit keys with two radix sorts (only the ~40% of units
    with the smallest keys first; the rest for the rare rows the first pass leaves short), then a
    vectorized greedy fill. `select_masked_positions` (padded `[batch, seq]` arrays) serves the
    n-gram masking and the string-token API.

Semantics (Google BERT `create_pretraining_data.py`, with its known flaws fixed):
  * Packing: sentences of a document are accumulated up to a target length (`max_seq_length - 3`, or
    with probability `short_seq_prob` a random length in [2, max]; drawn once per document). Segment
    A is a random number of leading sentences of the chunk; B is the rest (label 0) or, with
    probability 0.5 (always when the chunk has one sentence), sentences from a random other document
    (uniform over the others) starting at a random sentence (label 1, the unused sentences of the
    chunk are put back). The pair is truncated to `max_seq_length - 3` by trimming the longer
    segment, each removed token coming from the front or the back with probability 0.5 (drawn as one
    binomial per segment).
  * `sentence_order=True` (ALBERT's sentence-order prediction): B is always the rest of the chunk
    (a one-sentence chunk is cut at a random token), and with probability 0.5 (when both segments
    are non-empty) A and B are swapped after truncation; the label is 1 for a swapped pair. No
    segment comes from another document.
  * `next_sentence=False` (RoBERTa style): the document is cut greedily at sentence boundaries into
    single segments of up to `max_seq_length - 2` tokens (a sentence longer than that is split), no
    NSP.
  * `pack=True` (packed rows, ModernBERT-style, no NSP): the documents of a work unit, in a random
    order, are laid one after another as pieces `[CLS] tokens [SEP]`; a document that does not fit
    in the room left in a row is cut, the part that fits ending the row and the rest starting the
    next one as a new piece. A row is closed early (padding) only when fewer than `MIN_PIECE_ROOM`
    (8) slots are left, so padding is nearly zero. `position_ids` restart at 0 on every piece's
    `[CLS]`: the encoder derives the document boundaries from them. Segment ids and labels are 0.
  * Masking: a budget of `min(max_predictions, max(1, round(len(tokens) * masked_lm_prob)))`
    tokens (`len` counts `[CLS]`/`[SEP]`) is filled greedily with units taken in random order,
    skipping units that do not fit. A unit is a token, or with whole-word masking a word with its
    continuations (WordPiece's `##` pieces; for other tokenizers the tokenizer's word boundaries,
    `SpecialIds.is_continuation` or per-token word starts: `WORD_START_FIELDS`). With
    `max_ngram_size` a unit is extended to a span of n consecutive units of one segment (or piece),
    n drawn with probability proportional to 1/n from the seeded generator (shrunk while it exceeds
    the budget; skipped if it overlaps a masked unit). `[CLS]`/`[SEP]` (of every piece of a packed
    row) are never masked, no position twice, positions are sorted. Each unit then becomes `[MASK]`
    (80%), a random vocabulary id (10%) or stays (10%): the decision is made once per unit, so all
    sub-words of a word share it.
"""

import dataclasses
from typing import Optional, Tuple

import numpy as np

ACTION_KEEP = 0
ACTION_MASK = 1
ACTION_RANDOM = 2


@dataclasses.dataclass
class PackedInstances:
  """Token ranges of packed instances, `[num_instances]` int64 arrays in corpus token coordinates.

  Instance i is `[CLS] tokens[a_start:a_end] [SEP] tokens[b_start:b_end] [SEP]` (without
  next-sentence prediction B is empty and the layout is `[CLS] A [SEP]`). `document` is the document
  A comes from, `b_document` the one B comes from; `is_random_next` is the label: 1 where B is a
  random segment (next-sentence prediction) or where A and B are swapped (sentence order).
  """
  document: np.ndarray
  a_start: np.ndarray
  a_end: np.ndarray
  b_document: np.ndarray
  b_start: np.ndarray
  b_end: np.ndarray
  is_random_next: np.ndarray

  def __len__(self) -> int:
    return self.a_start.size


def _truncation_counts(len_a: np.ndarray, len_b: np.ndarray, max_num_tokens: int):
  """Tokens Google BERT's truncate_seq_pair removes from A and B: the longer first, ties trim B."""
  excess = np.maximum(len_a + len_b - max_num_tokens, 0)
  cut_a = np.minimum(excess, np.maximum(len_a - len_b, 0))
  cut_b = np.minimum(excess, np.maximum(len_b - len_a, 0))
  rest = excess - cut_a - cut_b  # once balanced the trimming alternates, starting with B
  return cut_a + rest // 2, cut_b + (rest + 1) // 2


def pack_documents(documents: np.ndarray, sentence_starts: np.ndarray, document_starts: np.ndarray,
                   max_seq_length: int, short_seq_prob: float, rng: np.random.Generator,
                   next_sentence: bool = True, sentence_order: bool = False) -> PackedInstances:
  """Cuts documents into instances (token ranges), Google BERT style, vectorized over documents.

  Each round takes the next chunk of every unfinished document at once, so the cost is a few numpy
  calls per round (rounds = most instances of one document), not Python per instance.

  Args:
    documents: `[k]` indices of the documents to cut.
    sentence_starts: `[num_sentences + 1]` token offsets of all sentences of the corpus.
    document_starts: `[num_documents + 1]` sentence offsets of all documents (random next segments
      may come from any document).
    max_seq_length: sequence length including `[CLS]`/`[SEP]`.
    short_seq_prob: probability of a random shorter target length for a document.
    rng: the random source.
    next_sentence: sentence pairs with NSP labels; False gives single segments (RoBERTa style).
    sentence_order: sentence pairs with sentence-order labels (ALBERT) instead of NSP's random
      segments; needs `next_sentence`.

  Returns:
    `PackedInstances`.

  Example:
    pack_documents(np.arange(2), np.array([0, 5, 9, 20]), np.array([0, 2, 3]), 128, 0.1,
                   np.random.default_rng(0))
  """
  if sentence_order and not next_sentence:
    raise ValueError('sentence_order=True needs segment pairs (next_sentence=True)')
  documents = np.asarray(documents, np.int64)
  num_documents = document_starts.size - 1
  max_num_tokens = max_seq_length - (3 if next_sentence else 2)
  short = rng.random(documents.size) < short_seq_prob
  targets = np.where(short, rng.integers(2, max_num_tokens, documents.size, endpoint=True),
                     max_num_tokens)
  ends = document_starts[documents + 1]  # sentence index after each document
  if next_sentence:
    position = document_starts[documents].copy()  # first sentence of the next chunk
  else:
    position = sentence_starts[document_starts[documents]]  # first token of the next chunk
  parts = []
  active = np.nonzero(position < (ends if next_sentence else sentence_starts[ends]))[0]
  while active.size:
    if sentence_order:
      part, position[active] = _ordered_pairs(documents[active], position[active], ends[active],
                                              targets[active], sentence_starts, max_num_tokens,
                                              rng)
      parts.append(part)
      active = active[position[active] < ends[active]]
    elif next_sentence:
      part, position[active] = _next_pairs(documents[active], position[active], ends[active],
                                           targets[active], sentence_starts, document_starts,
                                           num_documents, max_num_tokens, rng)
      parts.append(part)
      active = active[position[active] < ends[active]]
    else:
      start = position[active]
      doc_end = sentence_starts[ends[active]]
      limit = start + targets[active]
      boundary = sentence_starts[np.minimum(
          np.searchsorted(sentence_starts, limit, 'right') - 1, ends[active])]
      end = np.where(boundary > start, boundary, np.minimum(limit, doc_end))
      no_b = np.full(active.size, -1, np.int64)
      parts.append(PackedInstances(documents[active], start, end, no_b, np.zeros_like(start),
                                   np.zeros_like(start), np.zeros_like(start)))
      position[active] = end
      active = active[end < doc_end]
  if not parts:
    empty = np.zeros(0, np.int64)
    return PackedInstances(*([empty] * 7))
  return PackedInstances(*(np.concatenate([getattr(p, f.name) for p in parts])
                           for f in dataclasses.fields(PackedInstances)))


def _next_pairs(documents, first, ends, targets, sentence_starts, document_starts, num_documents,
                max_num_tokens, rng: np.random.Generator):
  """One sentence-pair instance per document from its chunk starting at sentence `first`."""
  count = documents.size
  chunk_start = sentence_starts[first]
  # The chunk ends with the first sentence reaching the target length, or the document's last one.
  last = np.clip(
      np.searchsorted(sentence_starts, chunk_start + targets, 'left') - 1, first, ends - 1)
  chunk_size = last - first + 1
  a_sentences = np.where(chunk_size >= 2,
                         1 + (rng.random(count) * (chunk_size - 1)).astype(np.int64), 1)
  a_start, a_end = chunk_start, sentence_starts[first + a_sentences]
  is_random = (chunk_size == 1) | (rng.random(count) < 0.5)
  # B from a random other document (uniform over the others), from a random sentence to the target.
  other = (rng.random(count) * max(num_documents - 1, 1)).astype(np.int64)
  other = np.where(num_documents > 1, other + (other >= documents), documents)
  other_first, other_end = document_starts[other], document_starts[other + 1]
  b_first = other_first + (rng.random(count) * (other_end - other_first)).astype(np.int64)
  random_start = sentence_starts[b_first]
  b_last = np.clip(
      np.searchsorted(sentence_starts, random_start + targets - (a_end - a_start), 'left'),
      b_first + 1, other_end)
  b_document = np.where(is_random, other, documents)
  b_start = np.where(is_random, random_start, a_end)
  b_end = np.where(is_random, sentence_starts[b_last], sentence_starts[last + 1])
  # A random B leaves the chunk's unused sentences for the next chunk.
  next_first = np.where(is_random, first + a_sentences, last + 1)
  cut_a, cut_b = _truncation_counts(a_end - a_start, b_end - b_start, max_num_tokens)
  front_a, front_b = rng.binomial(cut_a, 0.5), rng.binomial(cut_b, 0.5)  # each from a random end
  part = PackedInstances(documents, a_start + front_a, a_end - (cut_a - front_a), b_document,
                         b_start + front_b, b_end - (cut_b - front_b), is_random.astype(np.int64))
  return part, next_first


def _ordered_pairs(documents, first, ends, targets, sentence_starts, max_num_tokens,
                   rng: np.random.Generator):
  """One sentence-order instance per document from its chunk starting at sentence `first`: A and
  B are consecutive text of the chunk, swapped (label 1) with probability 0.5."""
  count = documents.size
  chunk_start = sentence_starts[first]
  last = np.clip(
      np.searchsorted(sentence_starts, chunk_start + targets, 'left') - 1, first, ends - 1)
  chunk_size = last - first + 1
  chunk_end = sentence_starts[last + 1]
  a_sentences = np.where(chunk_size >= 2,
                         1 + (rng.random(count) * (chunk_size - 1)).astype(np.int64), 1)
  # A one-sentence chunk is cut at a random token (B is empty for a one-token sentence).
  length = chunk_end - chunk_start
  token_cut = chunk_start + np.where(
      length >= 2, 1 + (rng.random(count) * (length - 1)).astype(np.int64), length)
  a_end = np.where(chunk_size >= 2, sentence_starts[first + a_sentences], token_cut)
  a_start, b_start, b_end = chunk_start, a_end, chunk_end
  cut_a, cut_b = _truncation_counts(a_end - a_start, b_end - b_start, max_num_tokens)
  front_a, front_b = rng.binomial(cut_a, 0.5), rng.binomial(cut_b, 0.5)  # each from a random end
  a_start, a_end = a_start + front_a, a_end - (cut_a - front_a)
  b_start, b_end = b_start + front_b, b_end - (cut_b - front_b)
  swapped = (rng.random(count) < 0.5) & (a_end > a_start) & (b_end > b_start)
  part = PackedInstances(documents, np.where(swapped, b_start, a_start),
                         np.where(swapped, b_end, a_end), documents,
                         np.where(swapped, a_start, b_start), np.where(swapped, a_end, b_end),
                         swapped.astype(np.int64))
  return part, last + 1


@dataclasses.dataclass
class MaskSelection:
  """Masked positions of a batch, padded to `max_predictions`.

  Attributes:
    positions: `[batch, max_predictions]` int32 sorted positions, 0-padded.
    counts: `[batch]` number of real predictions per row.
    actions: `[batch, max_predictions]` int8: ACTION_MASK, ACTION_RANDOM or ACTION_KEEP.
    random_ids: `[batch, max_predictions]` int64 replacement ids (used where actions ==
      ACTION_RANDOM).
  """
  positions: np.ndarray
  counts: np.ndarray
  actions: np.ndarray
  random_ids: np.ndarray


def num_predictions(lengths: np.ndarray, masked_lm_prob: float, max_predictions: int) -> np.ndarray:
  """Masking budget per sequence: `min(max_predictions, max(1, round(length * masked_lm_prob)))`."""
  return np.minimum(max_predictions,
                    np.maximum(1, np.rint(np.asarray(lengths) * masked_lm_prob))).astype(np.int64)


def select_masked_positions(candidates: np.ndarray, unit_starts: np.ndarray, budgets: np.ndarray,
                            max_predictions: int, vocab_size: int, rng: np.random.Generator,
                            max_ngram_size: Optional[int] = None, mask_rate: float = 0.8,
                            random_rate: float = 0.1) -> MaskSelection:
  """Chooses masked positions and their 80/10/10 actions for a batch of sequences.

  Args:
    candidates: `[batch, seq]` bool, positions that may be masked (not `[CLS]`/`[SEP]`/padding).
    unit_starts: `[batch, seq]` bool, candidate positions that start a masking unit (every candidate
      without whole-word masking; word starts with it). A unit runs to the next start or
      non-candidate.
    budgets: `[batch]` number of tokens to mask (see `num_predictions`); must be <= max_predictions.
    max_predictions: width of the outputs.
    vocab_size: random replacement ids are drawn from `[0, vocab_size)`.
    rng: the random source.
    max_ngram_size: mask spans of up to this many consecutive units (None or 1: single units).
    mask_rate: fraction of units replaced by `[MASK]`.
    random_rate: fraction replaced by a random id (the rest keep their token).

  Returns:
    A `MaskSelection`.
  """
  batch, seq = candidates.shape
  unit_starts = unit_starts & candidates
  unit_of_token = np.cumsum(unit_starts, axis=1) - 1  # [batch, seq], valid where candidates
  num_units = unit_starts.sum(axis=1)
  max_units = max(int(num_units.max(initial=0)), 1)
  rows, cols = np.nonzero(candidates)
  unit_index = unit_of_token[rows, cols]
  unit_lengths = np.bincount(rows * max_units + unit_index,
                             minlength=batch * max_units).reshape(batch, max_units)
  keys = rng.random((batch, max_units))
  keys[np.arange(max_units)[None, :] >= num_units[:, None]] = 2.0  # padding units sort last
  order = np.argsort(keys, axis=1, kind='stable')
  if max_ngram_size is None or max_ngram_size <= 1:
    chosen_units = _greedy_units(order, unit_lengths, budgets)
  else:
    chosen_units = _greedy_ngrams(order, unit_lengths, num_units, budgets, candidates, unit_starts,
                                  max_ngram_size, rng)
  unit_draws = rng.random((batch, max_units))
  unit_actions = np.where(
      unit_draws < mask_rate, ACTION_MASK,
      np.where(unit_draws < mask_rate + random_rate, ACTION_RANDOM, ACTION_KEEP)).astype(np.int8)
  selected = np.zeros((batch, seq), bool)
  selected[rows, cols] = chosen_units[rows, unit_index]
  sel_rows, sel_cols = np.nonzero(selected)  # row-major: positions come out sorted within a row
  counts = selected.sum(axis=1)
  if counts.max(initial=0) > max_predictions:
    raise ValueError(
        f'budgets exceed max_predictions={max_predictions}: found {int(counts.max())} selections')
  row_starts = np.cumsum(counts) - counts
  slot = np.arange(sel_rows.size) - row_starts[sel_rows]
  positions = np.zeros((batch, max_predictions), np.int32)
  positions[sel_rows, slot] = sel_cols
  actions = np.full((batch, max_predictions), ACTION_KEEP, np.int8)
  actions[sel_rows, slot] = unit_actions[sel_rows, unit_of_token[sel_rows, sel_cols]]
  random_ids = rng.integers(0, vocab_size, size=(batch, max_predictions))
  return MaskSelection(positions, counts, actions, random_ids)


def _greedy_units(order: np.ndarray, unit_lengths: np.ndarray, budgets: np.ndarray) -> np.ndarray:
  """Takes units in `order`, each if it fits in the budget left, until it is used (vectorized)."""
  batch, max_units = order.shape
  sorted_lengths = np.take_along_axis(unit_lengths, order, axis=1)
  taken_sorted = np.zeros((batch, max_units), bool)
  used = np.zeros(batch, np.int64)
  for rank in range(max_units):
    length = sorted_lengths[:, rank]
    take = (used < budgets) & (length > 0) & (used + length <= budgets)
    taken_sorted[:, rank] = take
    used += np.where(take, length, 0)
    if not (used < budgets).any():
      break
  chosen = np.zeros((batch, max_units), bool)
  np.put_along_axis(chosen, order, taken_sorted, axis=1)
  return chosen


def _greedy_ngrams(order, unit_lengths, num_units, budgets, candidates, unit_starts, max_ngram_size,
                   rng: np.random.Generator) -> np.ndarray:
  """N-gram spans of units, sizes drawn with p ~ 1/n from `rng`; one Python loop per sequence."""
  batch, max_units = order.shape
  sizes = np.arange(1, max_ngram_size + 1)
  probs = 1.0 / sizes
  span_sizes = rng.choice(sizes, size=(batch, max_units), p=probs / probs.sum())
  # Units in one segment share the count of non-candidate tokens before them.
  segment_of_position = np.cumsum(~candidates, axis=1)
  chosen = np.zeros((batch, max_units), bool)
  for row in range(batch):
    n_units = int(num_units[row])
    lengths = unit_lengths[row, :n_units].tolist()
    cumulative = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    segments = segment_of_position[row][unit_starts[row]].tolist()
    covered = [False] * n_units
    budget, used = int(budgets[row]), 0
    for rank in range(n_units):
      if used >= budget:
        break
      first = int(order[row, rank])
      size = int(span_sizes[row, rank])
      while first + size > n_units or segments[first + size - 1] != segments[first]:
        size -= 1
      while size > 0 and used + cumulative[first + size] - cumulative[first] > budget:
        size -= 1
      if size == 0 or any(covered[first:first + size]):
        continue
      covered[first:first + size] = [True] * size
      used += cumulative[first + size] - cumulative[first]
    chosen[row, :n_units] = covered
  return chosen


def unit_starts_for(candidates: np.ndarray, is_continuation: Optional[np.ndarray]) -> np.ndarray:
  """Masking-unit starts: every candidate, or (whole-word masking) those not continuing a word.

  Args:
    candidates: `[batch, seq]` bool.
    is_continuation: `[batch, seq]` bool, the token continues a word (starts with `##`); None
      disables whole-word grouping.
  """
  if is_continuation is None:
    return candidates.copy()
  previous_candidate = np.zeros_like(candidates)
  previous_candidate[:, 1:] = candidates[:, :-1]
  return candidates & (~is_continuation | ~previous_candidate)


# A packed row whose room left is below this many slots is closed (the rest is padding): a piece
# spends two slots on its [CLS] and [SEP], so a smaller one would hold fewer than 6 tokens of text.
MIN_PIECE_ROOM = 8


@dataclasses.dataclass
class PackedRows:
  """Pieces of documents packed into rows (`pack_rows`), `[num_pieces]` int64 arrays.

  Piece i is `[CLS] tokens[start[i]:end[i]] [SEP]` (corpus token coordinates), a contiguous part of
  document `document[i]`, in row `row[i]`; pieces are listed in the order they are laid out (rows
  ascending, left to right within a row).
  """
  row: np.ndarray
  document: np.ndarray
  start: np.ndarray
  end: np.ndarray

  @property
  def num_rows(self) -> int:
    return int(self.row[-1]) + 1 if self.row.size else 0

  def __len__(self) -> int:
    return self.start.size


@dataclasses.dataclass(frozen=True)
class InstanceOptions:
  """Options of `build_instance_arrays` and `build_packed_arrays` (see the module docstring)."""
  max_seq_length: int = 128
  max_predictions_per_seq: int = 20
  masked_lm_prob: float = 0.15
  short_seq_prob: float = 0.1
  do_whole_word_mask: bool = False
  max_ngram_size: Optional[int] = None
  next_sentence: bool = True
  dynamic: bool = False  # no masking: only token ids, segments and NSP labels
  sentence_order: bool = False  # sentence-order labels (ALBERT) instead of NSP's
  pack: bool = False  # rows packed with pieces of several documents (`pack_rows`), no NSP


@dataclasses.dataclass
class InstanceBatch:
  """Padded arrays of a batch of instances (Google BERT TFRecord layout).

  Attributes:
    input_ids, input_mask, segment_ids: `[batch, max_seq_length]` int64 (0-padded).
    masked_lm_positions, masked_lm_ids: `[batch, max_predictions]` int64; masked_lm_weights float32.
      None in dynamic mode.
    next_sentence_labels: `[batch]` int64 (1 = B is random, or with sentence order A and B are
      swapped; 0 without next-sentence prediction).
  """
  input_ids: np.ndarray
  input_mask: np.ndarray
  segment_ids: np.ndarray
  next_sentence_labels: np.ndarray
  masked_lm_positions: Optional[np.ndarray] = None
  masked_lm_ids: Optional[np.ndarray] = None
  masked_lm_weights: Optional[np.ndarray] = None

  def __len__(self) -> int:
    return self.input_ids.shape[0]


@dataclasses.dataclass(frozen=True)
class SpecialIds:
  """Ids the pipeline needs from the vocabulary (the tokenizer's tokens of the roles cls, sep and
  mask, whatever their names).

  Attributes:
    is_continuation: `[vocab_size]` bool, the token continues the word of the token before it
      (WordPiece's `##`; `tokenization.SubwordTokenizer.continuation_table`), or None when only the
      text tells: whole-word masking then needs token arrays with word starts
      (`WORD_START_FIELDS`).
  """
  cls_id: int
  sep_id: int
  mask_id: int
  vocab_size: int
  is_continuation: Optional[np.ndarray]


# The fields of a corpus token array that carries per-token word starts (a numpy record array,
# `tokenized_corpus.read_tokenized_corpus(..., whole_words=True)`): the id, and whether the token
# starts a word. The builders below take either kind of array.
WORD_START_FIELDS = ('id', 'word_start')


def word_start_dtype(id_dtype: 'np.typing.DTypeLike') -> np.dtype:
  """The record dtype of token ids with word starts (`WORD_START_FIELDS`).

  Example:
    >>> word_start_dtype(np.uint16).names
    ('id', 'word_start')
  """
  return np.dtype([(WORD_START_FIELDS[0], id_dtype), (WORD_START_FIELDS[1], bool)])


def _gather_tokens(token_ids: np.ndarray, source: np.ndarray, options: 'InstanceOptions'
                   ) -> Tuple[np.ndarray, Optional[np.ndarray]]:
  """`(int32 ids, continuation flags or None)` of `token_ids[source]` (plain ids, or a record
  array with word starts: see `WORD_START_FIELDS`)."""
  values = token_ids[source]
  if values.dtype.names is None:
    return values.astype(np.int32), None
  continuation = ~values[WORD_START_FIELDS[1]] if options.do_whole_word_mask else None
  return values[WORD_START_FIELDS[0]].astype(np.int32), continuation


def _continuation_of(ids: np.ndarray, continuation: Optional[np.ndarray],
                     special: SpecialIds) -> np.ndarray:
  """Per-token continuation flags: given with the tokens, else from the vocabulary's table."""
  if continuation is not None:
    return continuation
  if special.is_continuation is None:
    raise ValueError('whole-word masking needs word boundaries: this tokenizer has no per-id '
                     'continuation table (SpecialIds.is_continuation is None), so the token array '
                     f'must carry word starts (fields {WORD_START_FIELDS})')
  return special.is_continuation[ids]


@dataclasses.dataclass
class InstanceArrays:
  """A batch of instances in the compact form `tfrecord_writer.encode_pretraining_records` takes.

  Attributes:
    input_ids: `[batch, max_seq_length]` int32, masked tokens replaced, 0-padded.
    lengths: `[batch]` real tokens (`[CLS]` to the last `[SEP]`).
    segment_starts: `[batch]` first position of segment B (`lengths` without B).
    next_sentence_labels: `[batch]` int64.
    masked_lm_positions, masked_lm_ids: `[batch, max_predictions]` int32, 0-padded (None in dynamic
      mode).
    masked_counts: `[batch]` real predictions (None in dynamic mode).
    position_ids: `[batch, max_seq_length]` int32 position of each token within its piece (packed
      rows only; None otherwise).
  """
  input_ids: np.ndarray
  lengths: np.ndarray
  segment_starts: np.ndarray
  next_sentence_labels: np.ndarray
  masked_lm_positions: Optional[np.ndarray] = None
  masked_lm_ids: Optional[np.ndarray] = None
  masked_counts: Optional[np.ndarray] = None
  position_ids: Optional[np.ndarray] = None

  def __len__(self) -> int:
    return self.input_ids.shape[0]


def _empty_arrays(options: InstanceOptions) -> InstanceArrays:
  empty = np.zeros(0, np.int64)
  masks = ((None,) * 3 if options.dynamic else
           (np.zeros((0, options.max_predictions_per_seq), np.int32),) * 2 + (empty,))
  positions = np.zeros((0, options.max_seq_length), np.int32) if options.pack else None
  return InstanceArrays(np.zeros((0, options.max_seq_length), np.int32), empty, empty, empty,
                        *masks, position_ids=positions)


_KEY_BITS = 16
# Units whose random key falls below this are ordered and taken first; the others only for rows
# whose budget the first pass left unfilled. This gives the same result as ordering all units (the
# first pass is a prefix of the full order), while sorting about 40% of them.
_FIRST_PASS_KEYS = int(0.4 * (1 << _KEY_BITS))


def _order_by_row_then_key(rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
  """Indices sorting by `(rows, keys)`, ties by index; `keys` uint16 (radix sorts: rows < 2**16)."""
  order = np.argsort(keys, kind='stable')
  if rows.size and int(rows.max()) < 1 << 16:
    return order[np.argsort(rows.astype(np.uint16)[order], kind='stable')]
  return order[np.argsort(rows[order], kind='stable')]


def _greedy_take(rows: np.ndarray, lengths: np.ndarray, budgets: np.ndarray, count: int):
  """Greedy fill in the given order: each unit is taken if it fits in its row's remaining budget.

  Args:
    rows: `[k]` row of each unit, grouped (non-decreasing).
    lengths: `[k]` unit lengths.
    budgets: `[count]` budget of each row.

  Returns:
    `(taken [k] bool, used [count])`.
  """
  row_first = np.searchsorted(rows, np.arange(count))
  within = np.cumsum(lengths)
  within -= np.concatenate([[0], within])[row_first][rows]
  taken = within <= budgets[rows]  # the prefix that fits
  prefix = np.bincount(rows[taken], minlength=count)
  used = np.where(prefix > 0, within[np.maximum(row_first + prefix - 1, 0)], 0)
  # After the first unit that does not fit, greedy takes the next unit that fits, repeatedly.
  pointer = row_first + prefix
  pending = np.flatnonzero(~taken & (used[rows] < budgets[rows]))
  while pending.size:
    pending_rows = rows[pending]
    pending = pending[(lengths[pending] <= budgets[pending_rows] - used[pending_rows])
                      & (pending >= pointer[pending_rows])]
    if not pending.size:
      break
    pending_rows = rows[pending]
    first = np.ones(pending.size, bool)
    first[1:] = pending_rows[1:] != pending_rows[:-1]
    chosen = pending[first]
    taken[chosen] = True
    used[rows[chosen]] += lengths[chosen]
    pointer[rows[chosen]] = chosen + 1
    pending = pending[~first]
  return taken, used


def build_instance_arrays(token_ids: np.ndarray, instances: PackedInstances,
                          options: InstanceOptions, special: SpecialIds,
                          rng: np.random.Generator) -> InstanceArrays:
  """Materializes and masks sentence-pair (or single-segment) instances (see the module docstring).

  The instances' real tokens are laid out flat (no padding), then masked by `mask_flat_rows`.

  Args:
    token_ids: `[num_tokens]` flat token ids the instances' ranges index into.
    instances: ranges from `pack_documents`.
    options: sequence length, masking options.
    special: special-token ids and the `##` table.
    rng: random source for masking.

  Returns:
    `InstanceArrays`.

  Example:
    build_instance_arrays(corpus.token_ids, pack_documents(...), InstanceOptions(), special, rng)
  """
  count = len(instances)
  if count == 0:
    return _empty_arrays(options)
  len_a = instances.a_end - instances.a_start
  len_b = instances.b_end - instances.b_start
  has_b = options.next_sentence
  totals = len_a + 2 + (len_b + 1 if has_b else 0)
  segment_starts = len_a + 2 if has_b else totals.copy()
  # Flat layout: row r's tokens are at [offsets[r], offsets[r] + totals[r]). The corpus index of
  # each flat token steps by one, except at a row start (A; [CLS] reads a dummy) and at B's start: a
  # cumulative sum of steps.
  offsets = np.cumsum(totals) - totals
  size = int(totals.sum())
  a_first = instances.a_start - 1
  steps = np.ones(size, np.int64)
  # Corpus index read by each row's last token.
  last_source = instances.b_end if has_b else a_first + totals - 1
  steps[offsets[1:]] = a_first[1:] - last_source[:-1]
  steps[0] = a_first[0]
  if has_b:
    steps[offsets + len_a + 2] += instances.b_start - instances.a_end - 1
  source = np.cumsum(steps)
  np.clip(source, 0, max(token_ids.size - 1, 0), out=source)
  ids, continuation = _gather_tokens(token_ids, source, options)
  del steps, source
  ids[offsets] = special.cls_id
  sep_positions = np.concatenate([offsets + len_a + 1, offsets + totals - 1] if has_b
                                 else [offsets + totals - 1])
  ids[sep_positions] = special.sep_id
  arrays = InstanceArrays(None, totals, segment_starts,
                          instances.is_random_next.astype(np.int64))
  return mask_flat_rows(arrays, ids, np.concatenate([offsets, sep_positions]), options, special,
                        rng, continuation)


def pack_rows(documents: np.ndarray, sentence_starts: np.ndarray, document_starts: np.ndarray,
              max_seq_length: int, rng: np.random.Generator,
              min_room: int = MIN_PIECE_ROOM) -> PackedRows:
  """Lays documents back to back into rows of `max_seq_length` tokens, as pieces (see `PackedRows`).

  The documents are taken in a random order. Each piece is `[CLS] tokens [SEP]`; a document that
  does not fit in the room left in a row is cut: the part that fits ends the row and the rest goes
  on as a new piece at the start of the next row (several rows for a long document). A row is closed
  (its end left as padding) only when fewer than `min_room` slots are left, and the last row ends
  where the documents end.

  Args:
    documents: `[k]` indices of the documents to pack.
    sentence_starts: `[num_sentences + 1]` token offsets of all sentences of the corpus.
    document_starts: `[num_documents + 1]` sentence offsets of all documents.
    max_seq_length: tokens per row, `[CLS]`/`[SEP]` of every piece included; >= `min_room`.
    rng: the random source (the document order).
    min_room: the fewest slots a piece may start in (its `[CLS]` and `[SEP]` included).

  Returns:
    `PackedRows`.

  Raises:
    ValueError: `max_seq_length` below `min_room` or `min_room` below 3.

  Example:
    pack_rows(np.arange(2), np.array([0, 5, 9, 20]), np.array([0, 2, 3]), 16,
              np.random.default_rng(0))
  """
  if min_room < 3 or max_seq_length < min_room:
    raise ValueError(f'pack_rows: max_seq_length must be >= min_room >= 3 (a piece needs [CLS], '
                     f'a token and [SEP]); found max_seq_length={max_seq_length}, '
                     f'min_room={min_room}')
  order = rng.permutation(np.asarray(documents, np.int64))
  token_starts = sentence_starts[document_starts[order]].tolist()
  token_ends = sentence_starts[document_starts[order + 1]].tolist()
  rows, owners, starts, ends = [], [], [], []
  row, room = 0, max_seq_length
  # One step per piece (a few per row): plain Python ints are faster than numpy here.
  for document, start, end in zip(order.tolist(), token_starts, token_ends):
    while start < end:
      if room < min_room:
        row, room = row + 1, max_seq_length
      take = min(end - start, room - 2)
      rows.append(row)
      owners.append(document)
      starts.append(start)
      ends.append(start + take)
      start += take
      room -= take + 2
  return PackedRows(*(np.array(values, np.int64) for values in (rows, owners, starts, ends)))


def build_packed_arrays(token_ids: np.ndarray, packed: PackedRows, options: InstanceOptions,
                        special: SpecialIds, rng: np.random.Generator) -> InstanceArrays:
  """Materializes and masks packed rows: pieces `[CLS] tokens [SEP]` back to back, then padding.

  `position_ids` count from 0 at each piece's `[CLS]` (0 on padding); segment ids and
  `next_sentence_labels` are 0. Masking is `mask_flat_rows` (never on a `[CLS]`/`[SEP]`; the budget
  counts all the real tokens of a row).

  Args:
    token_ids: `[num_tokens]` flat token ids the pieces' ranges index into.
    packed: the pieces, from `pack_rows`.
    options: sequence length, masking options.
    special: special-token ids and the `##` table.
    rng: random source for masking.

  Returns:
    `InstanceArrays` with `position_ids`.

  Example:
    rows = pack_rows(documents, corpus.sentence_starts, corpus.document_starts, 128, rng)
    build_packed_arrays(corpus.token_ids, rows, InstanceOptions(pack=True), special, rng)
  """
  count = packed.num_rows
  if count == 0:
    return _empty_arrays(options)
  sizes = packed.end - packed.start + 2
  piece_offsets = np.cumsum(sizes) - sizes
  totals = np.bincount(packed.row, weights=sizes, minlength=count).astype(np.int64)
  if totals.max() > options.max_seq_length:
    raise ValueError(f'packed rows hold up to {int(totals.max())} tokens, expected at most '
                     f'max_seq_length={options.max_seq_length}')
  # The pieces are in row order, so the flat layout of the rows is the pieces back to back.
  within = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(piece_offsets, sizes)
  source = np.repeat(packed.start - 1, sizes) + within
  np.clip(source, 0, max(token_ids.size - 1, 0), out=source)
  ids, continuation = _gather_tokens(token_ids, source, options)
  del source
  piece_ends = piece_offsets + sizes - 1
  ids[piece_offsets] = special.cls_id
  ids[piece_ends] = special.sep_id
  position_ids = np.zeros((count, options.max_seq_length), np.int32)
  position_ids[np.arange(options.max_seq_length) < totals[:, None]] = within
  arrays = InstanceArrays(None, totals, totals.copy(), np.zeros(count, np.int64),
                          position_ids=position_ids)
  return mask_flat_rows(arrays, ids, np.concatenate([piece_offsets, piece_ends]), options,
                        special, rng, continuation)


def mask_flat_rows(arrays: InstanceArrays, ids: np.ndarray, special_positions: np.ndarray,
                   options: InstanceOptions, special: SpecialIds, rng: np.random.Generator,
                   continuation: Optional[np.ndarray] = None) -> InstanceArrays:
  """Masks rows laid out flat and pads them: the masking of both layouts (module docstring).

  Args:
    arrays: the rows' `lengths`, `segment_starts`, `next_sentence_labels` (and `position_ids`);
      its `input_ids` and masked-LM fields are filled in (in place).
    ids: `[sum(lengths)]` int32, the real tokens of the rows back to back (row r from
      `sum(lengths[:r])`); masked in place.
    special_positions: indices into `ids` of the `[CLS]`/`[SEP]` tokens (never masked).
    options: sequence length, masking options (`dynamic`: no masking).
    special: special-token ids and the `##` table.
    rng: random source for masking.
    continuation: `[sum(lengths)]` bool, the token continues a word (whole-word masking with
      per-token word starts); None: `special.is_continuation` of the ids.

  Returns:
    `arrays`, completed.

  Example:
    mask_flat_rows(InstanceArrays(None, np.array([4]), np.array([4]), np.zeros(1, np.int64)),
                   np.array([2, 7, 8, 3], np.int32), np.array([0, 3]), options, special, rng)
  """
  totals = arrays.lengths
  count = totals.size
  offsets = np.cumsum(totals) - totals
  # The real tokens of the padded [count, seq] matrix, in row-major order: the flat layout.
  real = np.arange(options.max_seq_length) < totals[:, None]
  if not options.dynamic:
    size = ids.size
    candidates = np.ones(size + 1, bool)  # plus a sentinel non-candidate at the end
    candidates[special_positions] = False
    candidates[size] = False
    budgets = num_predictions(totals, options.masked_lm_prob, options.max_predictions_per_seq)
    if options.max_ngram_size is not None and options.max_ngram_size > 1:
      selected, selected_rows, action, random_ids = _select_ngrams(
          ids, offsets, real, candidates, budgets, options, special, rng, continuation)
    else:
      selected, selected_rows, action, random_ids = _select_units(
          ids, totals, candidates, budgets, options, special, rng, continuation)
    counts = np.bincount(selected_rows, minlength=count)
    if counts.max(initial=0) > options.max_predictions_per_seq:
      raise ValueError(f'budgets exceed max_predictions_per_seq={options.max_predictions_per_seq}')
    slots = np.arange(selected.size) - (np.cumsum(counts) - counts)[selected_rows]
    flat_slots = selected_rows.astype(np.int64) * options.max_predictions_per_seq + slots
    positions = np.zeros((count, options.max_predictions_per_seq), np.int32)
    positions.ravel()[flat_slots] = selected - offsets[selected_rows]
    masked_ids = np.zeros((count, options.max_predictions_per_seq), np.int32)
    masked_ids.ravel()[flat_slots] = ids[selected]
    ids[selected] = np.where(action == ACTION_MASK, special.mask_id,
                             np.where(action == ACTION_RANDOM, random_ids, ids[selected]))
    arrays.masked_lm_positions, arrays.masked_lm_ids = positions, masked_ids
    arrays.masked_counts = counts.astype(np.int64)
  arrays.input_ids = np.zeros((count, options.max_seq_length), np.int32)
  arrays.input_ids[real] = ids
  return arrays


def _select_units(ids, totals, candidates, budgets, options: InstanceOptions, special: SpecialIds,
                  rng: np.random.Generator, continuation: Optional[np.ndarray] = None):
  """Masked tokens of the flat layout (single units: tokens or whole words), their actions and
  random ids: `(selected [n] flat indices by row then position, their rows, actions, random ids)`.
  """
  count, size = totals.size, ids.size
  unit_start = candidates.copy()
  if options.do_whole_word_mask:
    unit_start[1:size] &= ~(_continuation_of(ids, continuation, special)[1:]
                            & candidates[:size - 1])
  # A unit runs from its start to the next start or non-candidate (the next "break").
  breaks = np.flatnonzero(unit_start | ~candidates)
  is_start = unit_start[breaks]
  start_index = np.flatnonzero(is_start)
  starts = breaks[start_index]
  unit_lengths = breaks[start_index + 1] - starts
  unit_rows = np.repeat(np.arange(count, dtype=np.int32), totals)[starts]

  # Units in random order within each row; take each that fits in the remaining budget (greedy).
  keys = rng.integers(0, 1 << _KEY_BITS, starts.size, dtype=np.uint16)
  early = keys < _FIRST_PASS_KEYS
  order = np.flatnonzero(early)
  order = order[_order_by_row_then_key(unit_rows[order], keys[order])]
  taken, used = _greedy_take(unit_rows[order], unit_lengths[order], budgets, count)
  unit_taken = np.zeros(starts.size, bool)
  unit_taken[order[taken]] = True
  unfilled = used < budgets
  late = np.flatnonzero(~early & unfilled[unit_rows])
  # Continue the same order with the other units, for rows the first pass left unfilled.
  if late.size:
    late = late[_order_by_row_then_key(unit_rows[late], keys[late])]
    late_taken, _ = _greedy_take(unit_rows[late], unit_lengths[late], budgets - used, count)
    unit_taken[late[late_taken]] = True
  chosen_units = np.flatnonzero(unit_taken)  # by row, then position
  # One 80/10/10 decision per unit.
  draws = rng.random(chosen_units.size)
  unit_action = np.where(draws < 0.8, ACTION_MASK,
                         np.where(draws < 0.9, ACTION_RANDOM, ACTION_KEEP))
  chosen_lengths = unit_lengths[chosen_units]
  chosen_first = np.cumsum(chosen_lengths) - chosen_lengths
  selected = (np.repeat(starts[chosen_units] - chosen_first, chosen_lengths)
              + np.arange(int(chosen_lengths.sum())))
  action = np.repeat(unit_action, chosen_lengths)
  selected_rows = np.repeat(unit_rows[chosen_units], chosen_lengths)
  random_ids = rng.integers(0, special.vocab_size, selected.size)
  return selected, selected_rows, action, random_ids


def _select_ngrams(ids, offsets, real, candidates, budgets, options: InstanceOptions,
                   special: SpecialIds, rng: np.random.Generator,
                   continuation: Optional[np.ndarray] = None):
  """`_select_units` for n-gram masking, through `select_masked_positions` on padded rows."""
  count, seq = real.shape
  padded_candidates = np.zeros((count, seq), bool)
  padded_candidates[real] = candidates[:ids.size]
  padded_continuation = None
  if options.do_whole_word_mask:
    padded_continuation = np.zeros((count, seq), bool)
    padded_continuation[real] = _continuation_of(ids, continuation, special)
  selection = select_masked_positions(
      padded_candidates, unit_starts_for(padded_candidates, padded_continuation), budgets,
      options.max_predictions_per_seq, special.vocab_size, rng, options.max_ngram_size)
  rows, slots = np.nonzero(np.arange(selection.positions.shape[1]) < selection.counts[:, None])
  selected = offsets[rows] + selection.positions[rows, slots]
  return selected, rows, selection.actions[rows, slots], selection.random_ids[rows, slots]
