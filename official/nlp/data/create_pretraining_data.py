"""Creates BERT pretraining TFRecords (masked LM + next sentence prediction) from raw text, fast.

Input: text files, one sentence a line, a blank line between documents (Google BERT convention).
Output: TFRecords of `tf.train.Example` with the Google BERT schema:
  `input_ids` (v2: `input_word_ids`), `input_mask`, `segment_ids` (v2: `input_type_ids`):
  int64[max_seq_length]; `masked_lm_positions`, `masked_lm_ids`: int64[max_predictions_per_seq];
  `masked_lm_weights`: float[max_predictions_per_seq]; `next_sentence_labels`: int64[1] (1 = B is a
  random segment). Layout `[CLS] A [SEP] B [SEP]`, zero padding. `dynamic=True` writes only the
  first three and `next_sentence_labels` (masks are drawn while training). `no_next_sentence=True`
  writes single segments `[CLS] tokens [SEP]` with segment ids 0 and `next_sentence_labels` 0 (the
  feature is kept so the schema does not change; metadata says `next_sentence: false`).
  `sentence_order=True` (ALBERT's sentence-order prediction) writes pairs of consecutive segments
  of one document instead, `next_sentence_labels` 1 where A and B were swapped (metadata:
  `sentence_order: true`; `num_random_next` then counts the swapped pairs). `pack=True` (the
  ModernBERT-class recipe, no NSP) fills each row with several documents back to back, each piece
  `[CLS] tokens [SEP]` (a document cut at a row end goes on in the next row), padding only where a
  row has fewer than 8 slots left and at the end of a work unit, and adds `position_ids`
  int64[max_seq_length] (0 at each piece's `[CLS]`, counting up; 0 on padding): the encoder confines
  attention to each piece from them. Segment ids and `next_sentence_labels` are 0 (metadata:
  `packed: true`, `next_sentence: false`).
Plus a metadata JSON next to the records (`data_metadata.metadata_path`, e.g.
`out/train.metadata.json`), read back with `load_metadata(path_or_glob)`.

Packing and masking follow Google BERT (see `pretraining_instances`) with its flaws fixed: n-gram
sizes come from the seeded generator, and whole-word masking decides [MASK]/random/keep once per
word.

Pipeline (`create_pretraining_data`): blocks of input lines are tokenized by worker processes (Rust
WordPiece through an exact word cache) into compact numpy arrays (a few bytes per token: the whole
corpus stays in memory, instances do not); documents are grouped by length into chunks of about
`_CHUNK_TOKENS` tokens, and each (dupe, chunk) unit is packed (`pack_documents`), masked on its real
tokens (`build_instance_arrays`) and serialized with TFRecord framing and CRC32C
(`tfrecord_writer.encode_pretraining_records`, no TensorFlow import) by a worker (forked: the token
arrays are shared copy-on-write) with a random generator seeded from `(random_seed, dupe, chunk)`.
Units are assigned to output shards by a seeded permutation; a shard's records are spilled to a file
as they come, then written in a seeded random order from that file (read a chunk at a time). Memory
is the token arrays plus a few work units, whatever the output layout; the output bytes do not
depend on `num_workers` (capped to the CPUs available).

Files are written as one set: into a hidden staging directory next to the outputs (created first, so
an unwritable output directory fails before any work), then moved into place by
`data_metadata.commit_record_set`, which replaces the files of a previous set and writes the
metadata last. The metadata lists every file with its record count, size and CRC-32 (computed while
writing), which the training data loaders check (`data_metadata.verify_record_files`).

Model Garden's functions (`create_masked_lm_predictions`, `create_instances_from_document`,
`create_training_instances`, `write_instance_to_example_files`) are available with their arguments;
they work on string tokens and in-memory instances and are meant for small data and tests.

Example:
  create_pretraining_data("corpus.txt", "out/train.tfrecord", vocab_file="vocab.txt", dupe_factor=5)
  load_metadata("out/train.tfrecord")["num_instances"]
"""

import collections
import dataclasses
import importlib.metadata
import logging
import os
import random
import shutil
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import tqdm

from official.nlp.data import data_metadata
from official.nlp.data import parallel
from official.nlp.data import pretraining_instances as pi
from official.nlp.data import tfrecord_writer
from official.nlp.data import tokenized_corpus
from official.nlp.data import vocab_assets
from official.nlp.data.data_metadata import load_metadata  # re-exported for the training task
from official.nlp.data.tokenization import (CLS_TOKEN, CONTINUATION_PREFIX, MASK_TOKEN, SEP_TOKEN,
                                            SPECIAL_TOKENS, WordPieceTokenizer)

__all__ = [
    'TrainingInstance', 'create_masked_lm_predictions', 'create_instances_from_document',
    'create_training_instances', 'write_instance_to_example_files', 'create_pretraining_data',
    'feature_names', 'load_metadata'
]

logger = logging.getLogger(__name__)
# Tokens per work unit (fixed: the output must not depend on the number of workers)
_CHUNK_TOKENS = 1 << 18
_TOOL = 'mlm-garden create_pretraining_data'


def feature_names(use_v2_feature_names: bool = False, dynamic: bool = False,
                  pack: bool = False) -> List[str]:
  """Names of the features written, in order (`position_ids` for packed rows)."""
  names = ['input_word_ids' if use_v2_feature_names else 'input_ids', 'input_mask',
           'input_type_ids' if use_v2_feature_names else 'segment_ids']
  if pack:
    names.append('position_ids')
  if not dynamic:
    names += ['masked_lm_positions', 'masked_lm_ids', 'masked_lm_weights']
  return names + ['next_sentence_labels']


def _example_features(batch: pi.InstanceBatch, use_v2_feature_names: bool, dynamic: bool):
  names = feature_names(use_v2_feature_names, dynamic)
  ints = {names[0]: batch.input_ids, names[1]: batch.input_mask, names[2]: batch.segment_ids}
  floats = {}
  if not dynamic:
    ints['masked_lm_positions'] = batch.masked_lm_positions
    ints['masked_lm_ids'] = batch.masked_lm_ids
    floats['masked_lm_weights'] = batch.masked_lm_weights
  ints['next_sentence_labels'] = batch.next_sentence_labels.reshape(-1, 1)
  return ints, floats


# --------------------------------------------------------------------------------------------------
# Model Garden's API (string tokens, in memory).


@dataclasses.dataclass
class TrainingInstance:
  """One pretraining example as string tokens (Model Garden's `TrainingInstance`)."""
  tokens: List[str]
  segment_ids: List[int]
  masked_lm_positions: List[int]
  masked_lm_labels: List[str]
  is_random_next: bool


def create_masked_lm_predictions(
    tokens: Sequence[str], masked_lm_prob: float, max_predictions_per_seq: int,
    vocab_words: Sequence[str], rng: random.Random, do_whole_word_mask: bool = False,
    max_ngram_size: Optional[int] = None) -> Tuple[List[str], List[int], List[str]]:
  """Masks tokens for the masked-LM objective (Google BERT semantics, see `pretraining_instances`).

  Args:
    tokens: `[CLS] A [SEP] (B [SEP])` string tokens.
    masked_lm_prob: fraction of tokens to mask (budget `round(len(tokens) * masked_lm_prob)`, at
      least 1).
    max_predictions_per_seq: cap on the budget.
    vocab_words: the vocabulary (random replacements are drawn from it).
    rng: random source.
    do_whole_word_mask: mask a word with all its `##` pieces, one [MASK]/random/keep decision per
      word.
    max_ngram_size: mask spans of up to n words/tokens (p ~ 1/n).

  Returns:
    `(output_tokens, masked_lm_positions, masked_lm_labels)`, positions sorted.

  Example:
    create_masked_lm_predictions(["[CLS]", "a", "b", "[SEP]"], 0.15, 20, vocab, random.Random(0))
  """
  candidates = np.array([[t not in (CLS_TOKEN, SEP_TOKEN) for t in tokens]], bool)
  continuation = (np.array([[t.startswith(CONTINUATION_PREFIX) for t in tokens]], bool)
                  if do_whole_word_mask else None)
  budget = pi.num_predictions([len(tokens)], masked_lm_prob, max_predictions_per_seq)
  selection = pi.select_masked_positions(
      candidates, pi.unit_starts_for(candidates, continuation), budget, max_predictions_per_seq,
      len(vocab_words), np.random.default_rng(rng.getrandbits(64)), max_ngram_size)
  output = list(tokens)
  positions, labels = [], []
  for slot in range(int(selection.counts[0])):
    position = int(selection.positions[0, slot])
    positions.append(position)
    labels.append(tokens[position])
    action = selection.actions[0, slot]
    if action == pi.ACTION_MASK:
      output[position] = MASK_TOKEN
    elif action == pi.ACTION_RANDOM:
      output[position] = vocab_words[int(selection.random_ids[0, slot])]
  return output, positions, labels


def _window(items: Sequence[Any], size: int) -> Iterator[List[Any]]:
  """Every run of `size` consecutive items, in order (none when `size > len(items)`).

  Example:
    list(_window([1, 2, 3], 2)) == [[1, 2], [2, 3]]
  """
  items = list(items)
  for start in range(len(items) - size + 1):
    yield items[start:start + size]


def _tokens_to_grams(tokens: Sequence[str]) -> List[Tuple[int, int]]:
  """The `[start, end)` spans of whole words (a token and its `##` pieces), [CLS]/[SEP] excluded.

  The same grouping as `pretraining_instances.unit_starts_for` on string tokens (the unit of
  whole-word and n-gram masking).

  Example:
    _tokens_to_grams(["[CLS]", "Up", "##dog", "[SEP]"]) == [(1, 3)]
  """
  candidates = np.array([[t not in (CLS_TOKEN, SEP_TOKEN) for t in tokens]], bool)
  continuation = np.array([[t.startswith(CONTINUATION_PREFIX) for t in tokens]], bool)
  starts = np.flatnonzero(pi.unit_starts_for(candidates, continuation)[0]).tolist()
  spans = []
  for start in starts:
    end = start + 1
    while end < len(tokens) and candidates[0, end] and continuation[0, end]:
      end += 1
    spans.append((start, end))
  return spans


def _csr(all_documents: Sequence[Sequence[Sequence[str]]]):
  """Sentence and document offsets of string-token documents (corpus token coordinates)."""
  sentence_lengths = [len(sentence) for document in all_documents for sentence in document]
  sentence_starts = np.concatenate([[0], np.cumsum(sentence_lengths,
                                                   dtype=np.int64)]).astype(np.int64)
  document_starts = np.concatenate([[0],
                                    np.cumsum([len(d) for d in all_documents], dtype=np.int64)])
  return sentence_starts, document_starts.astype(np.int64)


def _instances_from_packed(all_documents, packed: pi.PackedInstances, sentence_starts,
                           document_starts, masked_lm_prob, max_predictions_per_seq, vocab_words,
                           rng, do_whole_word_mask, max_ngram_size,
                           no_next_sentence) -> List[TrainingInstance]:
  flat_cache: Dict[int, List[str]] = {}

  def tokens(document: int, start: int, end: int) -> List[str]:
    if document not in flat_cache:
      flat_cache[document] = [t for sentence in all_documents[document] for t in sentence]
    offset = int(sentence_starts[document_starts[document]])
    return flat_cache[document][start - offset:end - offset]

  instances = []
  for i in range(len(packed)):
    tokens_a = tokens(int(packed.document[i]), int(packed.a_start[i]), int(packed.a_end[i]))
    sequence = [CLS_TOKEN] + tokens_a + [SEP_TOKEN]
    segment_ids = [0] * len(sequence)
    if not no_next_sentence:
      tokens_b = tokens(int(packed.b_document[i]), int(packed.b_start[i]), int(packed.b_end[i]))
      sequence += tokens_b + [SEP_TOKEN]
      segment_ids += [1] * (len(tokens_b) + 1)
    sequence, positions, labels = create_masked_lm_predictions(sequence, masked_lm_prob,
                                                               max_predictions_per_seq, vocab_words,
                                                               rng, do_whole_word_mask,
                                                               max_ngram_size)
    instances.append(
        TrainingInstance(sequence, segment_ids, positions, labels, bool(packed.is_random_next[i])))
  return instances


def create_instances_from_document(all_documents: Sequence[Sequence[Sequence[str]]],
                                   document_index: int, max_seq_length: int, short_seq_prob: float,
                                   masked_lm_prob: float, max_predictions_per_seq: int,
                                   vocab_words: Sequence[str], rng: random.Random,
                                   do_whole_word_mask: bool = False,
                                   max_ngram_size: Optional[int] = None,
                                   no_next_sentence: bool = False,
                                   sentence_order: bool = False) -> List[TrainingInstance]:
  """Instances of one document (Google BERT packing, see `pretraining_instances.pack_documents`).

  Args:
    all_documents: documents as lists of sentences as lists of string tokens (random next segments
      come from other documents); documents must not be empty.
    document_index: the document to cut.
    max_seq_length, short_seq_prob, masked_lm_prob, max_predictions_per_seq, vocab_words, rng,
      do_whole_word_mask, max_ngram_size: as in `create_masked_lm_predictions` / the module
        docstring.
    no_next_sentence: single segments `[CLS] tokens [SEP]` (RoBERTa style), `is_random_next` False.
    sentence_order: consecutive segments of the document, `is_random_next` True where they are
      swapped (ALBERT's sentence-order prediction).

  Returns:
    The `TrainingInstance`s.
  """
  sentence_starts, document_starts = _csr(all_documents)
  packed = pi.pack_documents(np.array([document_index]), sentence_starts, document_starts,
                             max_seq_length, short_seq_prob,
                             np.random.default_rng(rng.getrandbits(64)),
                             next_sentence=not no_next_sentence, sentence_order=sentence_order)
  return _instances_from_packed(all_documents, packed, sentence_starts, document_starts,
                                masked_lm_prob, max_predictions_per_seq, vocab_words, rng,
                                do_whole_word_mask, max_ngram_size, no_next_sentence)


def create_training_instances(input_files: Sequence[str], tokenizer: WordPieceTokenizer,
                              processor_text_fn: Optional[Callable[[str], str]],
                              max_seq_length: int, dupe_factor: int, short_seq_prob: float,
                              masked_lm_prob: float, max_predictions_per_seq: int,
                              rng: random.Random, do_whole_word_mask: bool = False,
                              max_ngram_size: Optional[int] = None,
                              no_next_sentence: bool = False,
                              sentence_order: bool = False) -> List[TrainingInstance]:
  """All instances of the input files, in memory, shuffled (Model Garden's function; small data).

  Args:
    input_files: text files (one sentence a line, blank line between documents).
    tokenizer: a `WordPieceTokenizer`.
    processor_text_fn: optional function applied to each line before tokenizing.
    dupe_factor: how many times each document is cut (with different random choices).
    Others: see `create_instances_from_document`.

  Returns:
    The shuffled `TrainingInstance`s.
  """
  corpus, _ = tokenized_corpus.read_tokenized_corpus(list(input_files), tokenizer,
                                                     processor_text_fn)
  vocab = tokenizer.vocab
  tokens = [vocab[i] for i in corpus.token_ids.tolist()]
  starts = corpus.sentence_starts.tolist()
  all_documents = []
  for d in range(corpus.num_documents):
    first, last = int(corpus.document_starts[d]), int(corpus.document_starts[d + 1])
    all_documents.append([tokens[starts[s]:starts[s + 1]] for s in range(first, last)])
  rng.shuffle(all_documents)
  sentence_starts, document_starts = _csr(all_documents)
  instances = []
  for _ in range(dupe_factor):
    packed = pi.pack_documents(np.arange(len(all_documents)), sentence_starts, document_starts,
                               max_seq_length, short_seq_prob,
                               np.random.default_rng(rng.getrandbits(64)),
                               next_sentence=not no_next_sentence, sentence_order=sentence_order)
    instances.extend(
        _instances_from_packed(all_documents, packed, sentence_starts, document_starts,
                               masked_lm_prob, max_predictions_per_seq, vocab, rng,
                               do_whole_word_mask, max_ngram_size, no_next_sentence))
  rng.shuffle(instances)
  return instances


def write_instance_to_example_files(instances: Sequence[TrainingInstance],
                                    tokenizer: WordPieceTokenizer, max_seq_length: int,
                                    max_predictions_per_seq: int, output_files: Sequence[str],
                                    gzip_compress: bool = False,
                                    use_v2_feature_names: bool = False) -> int:
  """Writes instances round-robin to `output_files` as Google BERT TFRecords; returns the count."""
  count = len(instances)
  batch = pi.InstanceBatch(
      input_ids=np.zeros((count, max_seq_length), np.int64),
      input_mask=np.zeros((count, max_seq_length), np.int64),
      segment_ids=np.zeros((count, max_seq_length), np.int64),
      next_sentence_labels=np.array([int(i.is_random_next) for i in instances], np.int64),
      masked_lm_positions=np.zeros((count, max_predictions_per_seq), np.int64),
      masked_lm_ids=np.zeros((count, max_predictions_per_seq), np.int64),
      masked_lm_weights=np.zeros((count, max_predictions_per_seq), np.float32))
  for row, instance in enumerate(instances):
    if (len(instance.tokens) > max_seq_length
        or len(instance.masked_lm_positions) > max_predictions_per_seq):
      raise ValueError(
          f'instance {row}: {len(instance.tokens)} tokens / {len(instance.masked_lm_positions)} '
          f'predictions exceed max_seq_length={max_seq_length} / '
          f'max_predictions_per_seq={max_predictions_per_seq}')
    n, m = len(instance.tokens), len(instance.masked_lm_positions)
    batch.input_ids[row, :n] = tokenizer.convert_tokens_to_ids(instance.tokens)
    batch.input_mask[row, :n] = 1
    batch.segment_ids[row, :n] = instance.segment_ids
    batch.masked_lm_positions[row, :m] = instance.masked_lm_positions
    batch.masked_lm_ids[row, :m] = tokenizer.convert_tokens_to_ids(instance.masked_lm_labels)
    batch.masked_lm_weights[row, :m] = 1.0
  data, lengths = tfrecord_writer.frame_records(*tfrecord_writer.encode_examples(
      *_example_features(batch, use_v2_feature_names, dynamic=False)))
  for index, path in enumerate(output_files):
    with tfrecord_writer.AtomicRecordFile(path, gzip_compress) as f:
      f.write(
          tfrecord_writer.select_records(data, lengths, np.arange(index, count, len(output_files))))
  return count


# --------------------------------------------------------------------------------------------------
# The fast pipeline.

@dataclasses.dataclass
class _UnitResult:
  records: bytes  # framed TFRecords back to back
  record_lengths: np.ndarray
  documents: int
  instances: int
  tokens: int
  masked: int
  random_next: int
  pieces: int  # packed rows: pieces of documents; otherwise the instances


def _build_unit(unit: Tuple[int, int]) -> _UnitResult:
  """Packs, masks and serializes the documents of chunk `unit[1]` for dupe `unit[0]`."""
  dupe, chunk = unit
  shared = parallel.state()
  corpus: tokenized_corpus.TokenizedCorpus = shared['corpus']
  options: pi.InstanceOptions = shared['options']
  rng = np.random.default_rng(np.random.SeedSequence([shared['random_seed'], dupe, chunk]))
  documents = shared['chunk_documents'][chunk]
  if options.pack:
    packed = pi.pack_rows(documents, corpus.sentence_starts, corpus.document_starts,
                          options.max_seq_length, rng)
    build = pi.build_packed_arrays
  else:
    packed = pi.pack_documents(documents, corpus.sentence_starts, corpus.document_starts,
                               options.max_seq_length, options.short_seq_prob, rng,
                               options.next_sentence, options.sentence_order)
    build = pi.build_instance_arrays
  if not len(packed):
    return _UnitResult(b'', np.zeros(0, np.int64), documents.size, 0, 0, 0, 0, 0)
  arrays = build(corpus.token_ids, packed, options, shared['special'], rng)
  records, record_lengths = tfrecord_writer.encode_pretraining_records(
      arrays.input_ids, arrays.lengths, arrays.segment_starts, arrays.next_sentence_labels,
      arrays.masked_lm_positions, arrays.masked_lm_ids, arrays.masked_counts,
      shared['use_v2_feature_names'], shared['special'].vocab_size, arrays.position_ids)
  masked = 0 if options.dynamic else int(arrays.masked_counts.sum())
  return _UnitResult(records.tobytes(), record_lengths, documents.size, len(arrays),
                     int(arrays.lengths.sum()), masked, int(arrays.next_sentence_labels.sum()),
                     len(packed))


def _chunk_documents(corpus: tokenized_corpus.TokenizedCorpus) -> List[np.ndarray]:
  """The documents of each work chunk (about `_CHUNK_TOKENS` tokens each), grouped by length.

  Packing takes one vectorized round per instance of the chunk's longest document, so documents of
  similar length go together (a long document does not keep a chunk of short ones looping).
  """
  tokens = corpus.document_tokens()
  by_length = np.argsort(tokens, kind='stable')
  tokens_before = np.cumsum(tokens[by_length]) - tokens[by_length]
  _, starts = np.unique(tokens_before // _CHUNK_TOKENS, return_index=True)
  return np.split(by_length, starts[1:])


def _output_paths(output_file: Union[str, Sequence[str]],
                  num_output_shards: Optional[int]) -> List[str]:
  paths = [
      p.strip() for p in (output_file.split(',') if isinstance(output_file, str) else output_file)
  ]
  paths = [p for p in paths if p]
  if not paths:
    raise ValueError(f'output_file: no file given (found {output_file!r})')
  if num_output_shards is None or num_output_shards == len(paths):
    return paths
  if num_output_shards < 1:
    raise ValueError(f'num_output_shards must be >= 1, found {num_output_shards}')
  if len(paths) > 1:
    raise ValueError(
        f'num_output_shards={num_output_shards} needs a single output_file; found {len(paths)} '
        f'files (give one name to shard, or as many names as shards)')
  return [f'{paths[0]}-{i:05d}-of-{num_output_shards:05d}' for i in range(num_output_shards)]


def _check_options(max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob,
                   dupe_factor, max_ngram_size, random_seed, num_workers, no_next_sentence,
                   dynamic, sentence_order=False, pack=False) -> None:
  if sentence_order and pack:
    raise ValueError('pack and sentence_order cannot be combined: packed rows hold whole documents '
                     'back to back without segment pairs; drop one of them')
  if sentence_order and no_next_sentence:
    raise ValueError('sentence_order needs segment pairs; it cannot be combined with '
                     'no_next_sentence (single segments)')
  min_length = pi.MIN_PIECE_ROOM if pack else 3 if no_next_sentence else 5
  checks = [
      ('max_seq_length', max_seq_length, max_seq_length >= min_length,
       f'>= {min_length}' + (' with pack (MIN_PIECE_ROOM)' if pack else '')),
      ('max_predictions_per_seq', max_predictions_per_seq, dynamic or
       max_predictions_per_seq >= 1, '>= 1'),
      ('masked_lm_prob', masked_lm_prob, dynamic or 0.0 < masked_lm_prob < 1.0, 'in (0, 1)'),
      ('short_seq_prob', short_seq_prob, 0.0 <= short_seq_prob <= 1.0, 'in [0, 1]'),
      ('dupe_factor', dupe_factor, dupe_factor >= 1, '>= 1'),
      ('max_ngram_size', max_ngram_size, max_ngram_size is None or
       max_ngram_size >= 1, 'None or >= 1'),
      ('random_seed', random_seed, random_seed >= 0, '>= 0'),
      ('num_workers', num_workers, num_workers >= 1, '>= 1'),
  ]
  for name, value, ok, expected in checks:
    if not ok:
      raise ValueError(f'{name} must be {expected}, found {value!r}')
  full_budget = int(np.rint(max_seq_length * masked_lm_prob))
  if not dynamic and full_budget > max_predictions_per_seq:
    # Google BERT's semantics: the budget is capped (Model Garden's 512 tokens, 76 predictions and
    # 0.15 are capped by one), so this is a warning, not an error.
    logger.warning(
        'max_predictions_per_seq=%d caps the masking budget of a full row: masked_lm_prob=%g of '
        'max_seq_length=%d is %d tokens, so full rows mask %d (a rate of %.3f); raise '
        'max_predictions_per_seq to %d to mask %g of every row', max_predictions_per_seq,
        masked_lm_prob, max_seq_length, full_budget, max_predictions_per_seq,
        max_predictions_per_seq / max_seq_length, full_budget, masked_lm_prob)


def _tool_version() -> str:
  for name in ('mlm-garden', 'mlm_garden'):
    try:
      return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      pass
  return '0+local'


def _no_text_error(input_files: Sequence[str], stats: tokenized_corpus.CorpusStats) -> ValueError:
  return ValueError(
      f'no instances: the input files {list(input_files)} hold no tokenizable text '
      f'({stats.bytes} bytes, {stats.lines} lines: {stats.blank_lines} blank, '
      f'{stats.invalid_lines} invalid UTF-8, {stats.empty_token_lines} that tokenize to nothing); '
      f'expected one sentence a line with a blank line between documents')


def create_pretraining_data(input_file: Union[str, Sequence[str]],
                            output_file: Union[str, Sequence[str]],
                            vocab_file: Optional[str] = None, *,
                            tokenizer_json: Optional[str] = None,
                            tokenizer: Optional[WordPieceTokenizer] = None,
                            do_lower_case: bool = True, do_whole_word_mask: bool = False,
                            max_ngram_size: Optional[int] = None, max_seq_length: int = 128,
                            max_predictions_per_seq: int = 20, random_seed: int = 12345,
                            dupe_factor: int = 10, masked_lm_prob: float = 0.15,
                            short_seq_prob: float = 0.1, gzip_compress: bool = False,
                            use_v2_feature_names: bool = False, num_workers: Optional[int] = None,
                            num_output_shards: Optional[int] = None, no_next_sentence: bool = False,
                            dynamic: bool = False, sentence_order: bool = False,
                            pack: bool = False,
                            processor_text_fn: Optional[Callable[[str], str]] = None,
                            show_progress: bool = False) -> Dict[str, Any]:
  """Writes pretraining TFRecords and their metadata file from text files (module docstring).

  Args:
    input_file: comma-separated list (or list) of text files and globs.
    output_file: comma-separated list (or list) of output files; each gets a random share of the
      instances.
    vocab_file: BERT `vocab.txt` (or give `tokenizer_json` or a ready `tokenizer`).
    tokenizer_json: Hugging Face `tokenizer.json` with a WordPiece model (its normalizer decides
      lower-casing).
    tokenizer: a ready `WordPieceTokenizer`.
    do_lower_case: lower-case and strip accents (with `vocab_file`).
    do_whole_word_mask, max_ngram_size, max_seq_length, max_predictions_per_seq, masked_lm_prob,
      short_seq_prob: packing and masking, see `pretraining_instances`.
    random_seed: the output depends only on the inputs, the options and this seed (not on
      `num_workers`).
    dupe_factor: times each document is cut and masked, with different random choices.
    gzip_compress: GZIP-compressed TFRecords
      (`tf.data.TFRecordDataset(..., compression_type="GZIP")`).
    use_v2_feature_names: `input_word_ids`/`input_type_ids` instead of `input_ids`/`segment_ids`.
    num_workers: worker processes for tokenizing and for instances (default: all CPUs).
    num_output_shards: split a single `output_file` into `<output_file>-0000i-of-0000n` shards.
    no_next_sentence: single segments without NSP (RoBERTa style).
    dynamic: no masks stored (for on-the-fly masking with `MaskedLMMaskGenerator`).
    sentence_order: ALBERT's sentence-order prediction: `next_sentence_labels` is 1 where the two
      consecutive segments were swapped (instead of NSP's random segment from another document).
    pack: packed rows (module docstring): several documents a row, `position_ids` written, no NSP
      (implies `no_next_sentence`; refused with `sentence_order`; `short_seq_prob` is not used).
      Masking is unchanged; `max_predictions_per_seq` caps each row's budget, so with a higher
      `masked_lm_prob` (e.g. 0.3) raise it to `round(max_seq_length * masked_lm_prob)` (a warning
      says so when it is lower).
    processor_text_fn: optional function applied to each line before tokenizing.
    show_progress: progress bars (documents/s, ETA) and a summary on stderr.

  Returns:
    The metadata written (see `data_metadata`), plus `elapsed_seconds`.

  Raises:
    FileNotFoundError: an input or vocabulary file is missing.
    ValueError: bad options, a vocabulary without BERT's special tokens, or input without text.
  """
  started = time.perf_counter()
  cpus = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1)
  if num_workers is None:
    num_workers = cpus
  _check_options(max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob,
                 dupe_factor, max_ngram_size, random_seed, num_workers, no_next_sentence, dynamic,
                 sentence_order, pack)
  no_next_sentence = no_next_sentence or pack
  if num_workers > cpus:
    logger.warning(
        'num_workers=%d is more than the %d CPU(s) available: using %d (the output does not '
        'depend on it)', num_workers, cpus, cpus)
    num_workers = cpus
  input_files = tokenized_corpus.expand_input_files(input_file)
  output_paths = _output_paths(output_file, num_output_shards)
  if tokenizer is None:
    tokenizer = vocab_assets.load_tokenizer_from_flags(vocab_file, tokenizer_json, do_lower_case)
  # An unwritable output directory fails here, before any work.
  with _Staging(output_paths) as staging:
    return _create(input_files, output_paths, staging, tokenizer, started, do_whole_word_mask,
                   max_ngram_size, max_seq_length, max_predictions_per_seq, random_seed,
                   dupe_factor, masked_lm_prob, short_seq_prob, gzip_compress, use_v2_feature_names,
                   num_workers, no_next_sentence, dynamic, processor_text_fn, show_progress,
                   sentence_order, pack)


def _create(input_files, output_paths, staging, tokenizer, started, do_whole_word_mask,
            max_ngram_size, max_seq_length, max_predictions_per_seq, random_seed, dupe_factor,
            masked_lm_prob, short_seq_prob, gzip_compress, use_v2_feature_names, num_workers,
            no_next_sentence, dynamic, processor_text_fn, show_progress,
            sentence_order=False, pack=False) -> Dict[str, Any]:
  """The body of `create_pretraining_data`: writes into `staging`, then commits the set."""

  total_bytes = sum(os.path.getsize(f) for f in input_files)
  with tqdm.tqdm(total=total_bytes, unit='B', unit_scale=True, desc='tokenizing',
                 disable=not show_progress) as bar:
    corpus, stats = tokenized_corpus.read_tokenized_corpus(input_files, tokenizer,
                                                           processor_text_fn, bar.update,
                                                           num_workers)
  if corpus.num_documents == 0:
    raise _no_text_error(input_files, stats)
  if corpus.num_documents == 1 and not no_next_sentence and not sentence_order:
    logger.warning(
        'the input has a single document (no blank line between documents): random next segments '
        'come from the same document')
  read_seconds = time.perf_counter() - started

  vocab = tokenizer.vocab
  special = pi.SpecialIds(
      cls_id=tokenizer.token_to_id[CLS_TOKEN], sep_id=tokenizer.token_to_id[SEP_TOKEN],
      mask_id=tokenizer.token_to_id[MASK_TOKEN], vocab_size=len(vocab),
      is_continuation=np.array([t.startswith(CONTINUATION_PREFIX) for t in vocab], bool))
  options = pi.InstanceOptions(max_seq_length, max_predictions_per_seq, masked_lm_prob,
                               short_seq_prob, do_whole_word_mask, max_ngram_size,
                               not no_next_sentence, dynamic, sentence_order, pack)
  chunk_documents = _chunk_documents(corpus)
  units = [(d, c) for d in range(dupe_factor) for c in range(len(chunk_documents))]
  unit_rng = np.random.default_rng(np.random.SeedSequence([random_seed, 1 << 20]))
  permutation = unit_rng.permutation(len(units))
  shard_units = [sorted(part.tolist()) for part in np.array_split(permutation, len(output_paths))]
  shared = dict(corpus=corpus, options=options, special=special, random_seed=random_seed,
                chunk_documents=chunk_documents, use_v2_feature_names=use_v2_feature_names)
  totals = collections.Counter()
  instances_per_file = {}
  shards = {}
  with tqdm.tqdm(total=corpus.num_documents * dupe_factor, unit='doc', desc='creating instances',
                 disable=not show_progress) as bar, \
      parallel.worker_pool(num_workers, shared) as pool:
    results = parallel.ordered_map(pool, _build_unit,
                                   [units[u] for part in shard_units for u in part])
    for shard, (path, part) in enumerate(zip(output_paths, shard_units)):
      spill = staging.path(path) + '.spill'
      record_lengths = []
      with open(spill, 'wb', buffering=1 << 20) as f:
        for _ in part:  # the records go to disk as they come: memory does not grow with the output
          result = next(results)
          f.write(result.records)
          record_lengths.append(result.record_lengths)
          for key in ('documents', 'instances', 'tokens', 'masked', 'random_next', 'pieces'):
            totals[key] += getattr(result, key)
          bar.update(result.documents)
          _after_unit_hook(f.tell())
      lengths = np.concatenate(record_lengths) if record_lengths else np.zeros(0, np.int64)
      shard_rng = np.random.default_rng(np.random.SeedSequence([random_seed, 1 << 21, shard]))
      order = shard_rng.permutation(lengths.size)
      with tfrecord_writer.AtomicRecordFile(staging.path(path), gzip_compress) as out:
        _write_shuffled(out, spill, lengths, order)
      os.remove(spill)
      instances_per_file[os.path.basename(path)] = int(order.size)
      shards[path] = {'records': int(order.size), 'bytes': out.size, 'crc32': out.crc32}
  if totals['instances'] == 0:
    raise _no_text_error(input_files, stats)

  metadata = {
      'format': data_metadata.FORMAT,
      'format_version': data_metadata.FORMAT_VERSION,
      'tool': _TOOL,
      'tool_version': _tool_version(),
      'max_seq_length': max_seq_length,
      'max_predictions_per_seq': 0 if dynamic else max_predictions_per_seq,
      'feature_names': feature_names(use_v2_feature_names, dynamic, pack),
      'use_v2_feature_names': use_v2_feature_names,
      'dynamic': dynamic,
      'next_sentence': not no_next_sentence,
      'sentence_order': sentence_order,
      'packed': pack,
      **tokenizer.metadata_fields(),
      'special_token_ids': {t: tokenizer.token_to_id[t] for t in SPECIAL_TOKENS},
      'do_whole_word_mask': do_whole_word_mask,
      'max_ngram_size': max_ngram_size,
      'masked_lm_prob': masked_lm_prob,
      'short_seq_prob': short_seq_prob,
      'dupe_factor': dupe_factor,
      'random_seed': random_seed,
      'compression': 'GZIP' if gzip_compress else '',
      'files': [os.path.basename(p) for p in output_paths],
      'instances_per_file': instances_per_file,
      'num_instances': totals['instances'],
      'num_tokens': totals['tokens'],
      'num_padding_tokens': totals['instances'] * max_seq_length - totals['tokens'],
      'num_pieces': totals['pieces'],
      'num_masked_tokens': totals['masked'],
      'num_random_next': totals['random_next'],
      'num_documents': corpus.num_documents,
      'num_sentences': stats.sentences,
      'num_corpus_tokens': stats.tokens,
      'num_invalid_lines': stats.invalid_lines,
      'input_files': input_files,
  }
  data_metadata.commit_record_set({path: staging.path(path) for path in output_paths}, metadata,
                                  shards)
  metadata['shards'] = data_metadata.shard_entries(data_metadata.metadata_path(output_paths[0]),
                                                   shards)
  elapsed = time.perf_counter() - started
  summary = _summary(metadata, stats, elapsed, read_seconds, num_workers)
  logger.info(summary)
  if show_progress:
    print(summary, file=sys.stderr)
  return dict(metadata, elapsed_seconds=elapsed)


def _summary(metadata, stats, elapsed, read_seconds, num_workers) -> str:
  instances = metadata['num_instances']
  lines = [
      f"wrote {instances} instances to {len(metadata['files'])} file(s) in {elapsed:.1f} s "
      f'({instances / max(elapsed, 1e-9):.0f} records/s; {num_workers} worker(s); reading and '
      f'tokenizing {read_seconds:.1f} s)',
      f'  input: {stats.files} file(s), {stats.bytes / 1e6:.1f} MB, {stats.lines} lines, '
      f'{stats.documents} documents, {stats.sentences} sentences, {stats.tokens} tokens; '
      f'{stats.invalid_lines} invalid UTF-8 line(s) skipped; '
      f"{stats.documents * metadata['dupe_factor'] / max(elapsed, 1e-9):.0f} documents/s, "
      f'{stats.bytes / 1e6 / max(elapsed, 1e-9):.1f} MB/s',
      f"  output: {metadata['num_tokens']} tokens "
      f"({metadata['num_tokens'] / max(instances, 1):.1f} per instance), padding fraction "
      f'{data_metadata.padding_fraction(metadata):.4f}',
  ]
  if metadata.get('packed'):
    lines.append(f"  packed: {metadata['num_pieces']} pieces of documents "
                 f"({metadata['num_pieces'] / max(instances, 1):.2f} per row)")
  if not metadata['dynamic']:
    lines.append(f"  masked: {metadata['num_masked_tokens']} tokens, mask rate "
                 f"{metadata['num_masked_tokens'] / max(metadata['num_tokens'], 1):.4f}")
  if metadata.get('sentence_order'):
    lines.append(f"  swapped segments (sentence order): "
                 f"{metadata['num_random_next'] / max(instances, 1):.3f}")
  elif metadata['next_sentence']:
    lines.append(f"  random next segments: {metadata['num_random_next'] / max(instances, 1):.3f}")
  return '\n'.join(lines)


def _after_unit_hook(spilled_bytes: int) -> None:
  """Called after each work unit's records are spilled, with the spill file's size (a test hook)."""


def _write_shuffled(f: tfrecord_writer.AtomicRecordFile, spill: str, lengths: np.ndarray,
                    order: np.ndarray, chunk: int = 1 << 14) -> None:
  """Writes the back-to-back records of the file `spill` in `order` (record indices), by chunks.

  Each record is read with one `pread` (the spill file was just written: it is in the page cache),
  so memory holds one chunk of records whatever the size of the output. (A memory map would not
  bound the resident size: each random access maps the pages around it.)
  """
  starts = np.cumsum(lengths) - lengths
  with open(spill, 'rb', buffering=0) as source:
    fd = source.fileno()
    for begin in range(0, order.size, chunk):
      picked = order[begin:begin + chunk]
      f.writelines(
          [os.pread(fd, n, s) for s, n in zip(starts[picked].tolist(), lengths[picked].tolist())])


class _Staging:
  """Sibling staging directories where a run writes its files, then moves them into place as a set.

  One hidden directory per output directory (`.create_pretraining_data-<pid>.tmp`), created before
  any work so an unwritable output directory fails at once; directories left by runs that were
  killed are removed; the directories are removed when the run ends (the files in them were moved
  out, or the run failed).

  Example:
    with _Staging(["out/train.tfrecord"]) as staging:
      staging.path("out/train.tfrecord")  # "out/.create_pretraining_data-123.tmp/train.tfrecord"
  """

  PREFIX = '.create_pretraining_data-'
  SUFFIX = '.tmp'

  def __init__(self, output_paths: Sequence[str]):
    self._dirs: Dict[str, str] = {}
    for directory in sorted({os.path.dirname(os.path.abspath(p)) for p in output_paths}):
      try:
        os.makedirs(directory, exist_ok=True)
        _remove_stale_staging(directory)
        staging = os.path.join(directory, f'{self.PREFIX}{os.getpid()}{self.SUFFIX}')
        shutil.rmtree(staging, ignore_errors=True)
        os.mkdir(staging)
      except OSError as e:
        self.close()
        raise ValueError(
            f'output_file: cannot write to the directory {directory!r} ({e.strerror or e}); '
            f'expected a writable directory') from None
      self._dirs[directory] = staging

  def path(self, output_path: str) -> str:
    """Where `output_path` is written before the commit."""
    return os.path.join(self._dirs[os.path.dirname(os.path.abspath(output_path))],
                        os.path.basename(output_path))

  def close(self) -> None:
    for staging in self._dirs.values():
      shutil.rmtree(staging, ignore_errors=True)

  def __enter__(self) -> '_Staging':
    return self

  def __exit__(self, *exc) -> None:
    self.close()


def _remove_stale_staging(directory: str) -> None:
  """Removes staging directories of runs that no longer exist (killed: their pid is gone)."""
  for name in os.listdir(directory):
    if not (name.startswith(_Staging.PREFIX) and name.endswith(_Staging.SUFFIX)):
      continue
    pid = name[len(_Staging.PREFIX):-len(_Staging.SUFFIX)]
    if pid.isdigit() and not _process_exists(int(pid)):
      shutil.rmtree(os.path.join(directory, name), ignore_errors=True)


def _process_exists(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True
