"""Creates BERT pretraining TFRecords (masked LM + next sentence prediction) from raw text, fast.

Input: text files, one sentence a line, a blank line between documents (Google BERT convention).
Output: TFRecords of `tf.train.Example` with the Google BERT schema:
  `input_ids` (v2: `input_word_ids`), `input_mask`, `segment_ids` (v2: `input_type_ids`):
  int64[max_seq_length]; `masked_lm_positions`, `masked_lm_ids`: int64[max_predictions_per_seq];
  `masked_lm_weights`: float[max_predictions_per_seq]; `next_sentence_labels`: int64[1] (1 = B is a
  random segment). Layout `[CLS] A [SEP] B [SEP]`, zero padding (`[CLS]`, `[SEP]` and `[MASK]`
  stand for the tokenizer's tokens of those roles: a vocab.txt's by name, a `tokenizer.json`'s as
  `tokenization` finds them, e.g. `<s>`, `</s>`, `<mask>`). `dynamic=True` writes only the
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
`tokenizers`; ASCII text of WordPiece and byte-level BPE through an exact word cache) into compact
numpy arrays (a few bytes per token: the whole corpus stays in memory, instances do not); documents
are grouped by length into chunks of about `_CHUNK_TOKENS` tokens, and each (dupe, chunk) unit is
packed (`pack_documents`), masked on its real tokens (`build_instance_arrays`) and serialized with
TFRecord framing and CRC32C (`tfrecord_writer.encode_pretraining_records`, no TensorFlow import) by
a worker (forked: the token arrays are shared copy-on-write) with a random generator seeded from
`(random_seed, dupe, chunk)`. Units are assigned to output shards by a seeded permutation; a shard's
records are spilled to a file as they come, then written in a seeded random order from that file
(read a chunk at a time). Memory is the token arrays plus a few work units, whatever the output
layout; the output bytes do not depend on `num_workers` (capped to the CPUs available). With
`engine='beam'` the units are built and the shards written by an Apache Beam pipeline instead of
the pool (`beam_engine`), with the same functions (`pretraining_units`): the same bytes.

Files are written as one set: into a hidden staging directory next to the outputs (created first, so
an unwritable output directory fails before any work), then moved into place by
`data_metadata.commit_record_set`, which replaces the files of a previous set and writes the
metadata last. The metadata lists every file with its record count, size and CRC-32 (computed while
writing), which the training data loaders check (`data_metadata.verify_record_files`).

The run's options are one frozen `PretrainingDataOptions` (checked before any work).

Model Garden's functions (`create_masked_lm_predictions`, `create_instances_from_document`,
`create_training_instances`, `write_instance_to_example_files`) are importable from here with their
arguments; they live in `string_token_instances` (string tokens and in-memory instances, for small
data and tests).

Example:
  create_pretraining_data("corpus.txt", "out/train.tfrecord", vocab_file="vocab.txt", dupe_factor=5)
  load_metadata("out/train.tfrecord")["num_instances"]
"""

import collections
import dataclasses
import importlib.metadata
import logging
import os
import shutil
import sys
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import tqdm

from official.common import file_utils
from official.nlp.data import data_metadata
from official.nlp.data import parallel
from official.nlp.data import pretraining_instances as pi
from official.nlp.data import pretraining_units
from official.nlp.data import text_files
from official.nlp.data import tokenized_corpus
from official.nlp.data import vocab_assets
from official.nlp.data.data_metadata import load_metadata  # re-exported for the training task
# Model Garden's string-token API lives in its own module; its names stay importable from here
# (Model Garden's tests also call `_window` and `_tokens_to_grams`).
from official.nlp.data.string_token_instances import (TrainingInstance, _tokens_to_grams, _window,  # noqa: F401
                                                      create_instances_from_document,
                                                      create_masked_lm_predictions,
                                                      create_training_instances,
                                                      write_instance_to_example_files)
from official.nlp.data.tfrecord_writer import pretraining_feature_names as feature_names
from official.nlp.data.tokenization import SubwordTokenizer

__all__ = [
    'TrainingInstance', 'create_masked_lm_predictions', 'create_instances_from_document',
    'create_training_instances', 'write_instance_to_example_files', 'create_pretraining_data',
    'PretrainingDataOptions', 'feature_names', 'load_metadata'
]

logger = logging.getLogger(__name__)
# Tokens per work unit (fixed: the output must not depend on the number of workers)
_CHUNK_TOKENS = 1 << 18
_TOOL = 'mlm-garden create_pretraining_data'
ENGINES = ('local', 'beam')


# --------------------------------------------------------------------------------------------------
# The fast pipeline.

def _build_unit(unit: Tuple[int, int]) -> pretraining_units.UnitResult:
  """`pretraining_units.build_unit` in a worker of the local pool (the state `parallel` shares)."""
  return pretraining_units.build_unit(parallel.state(), unit)


def _chunk_documents(corpus: tokenized_corpus.TokenizedCorpus,
                     chunk_tokens: Optional[int] = None) -> List[np.ndarray]:
  """The documents of each work chunk (about `chunk_tokens`, default `_CHUNK_TOKENS`, tokens each),
  grouped by length.

  Packing takes one vectorized round per instance of the chunk's longest document, so documents of
  similar length go together (a long document does not keep a chunk of short ones looping).
  """
  chunk_tokens = chunk_tokens or _CHUNK_TOKENS
  tokens = corpus.document_tokens()
  by_length = np.argsort(tokens, kind='stable')
  tokens_before = np.cumsum(tokens[by_length]) - tokens[by_length]
  _, starts = np.unique(tokens_before // chunk_tokens, return_index=True)
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


@dataclasses.dataclass(frozen=True)
class PretrainingDataOptions:
  """The options of one `create_pretraining_data` run (its keyword arguments of the same names).

  Attributes:
    max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob, do_whole_word_mask,
      max_ngram_size: packing and masking, see `pretraining_instances`.
    random_seed: the output depends only on the inputs, these options and this seed.
    dupe_factor: times each document is cut and masked.
    gzip_compress: GZIP-compressed TFRecords.
    use_v2_feature_names: `input_word_ids`/`input_type_ids` instead of `input_ids`/`segment_ids`.
    num_workers: worker processes (the output does not depend on it).
    no_next_sentence: single segments without NSP.
    dynamic: no masks stored.
    sentence_order: ALBERT's sentence-order prediction.
    pack: packed rows, several documents a row (implies `no_next_sentence`).
    processor_text_fn: optional function applied to each line before tokenizing.
    show_progress: progress bars and a summary on stderr.
    validation_fraction: the fraction of documents held out (drawn by `random_seed`) and written
      once (dupe factor 1) as a validation set of its own; 0 holds none out.
    engine: 'local' (a pool of `num_workers` processes) or 'beam' (an Apache Beam pipeline,
      `beam_engine`); the records are the same.
    beam_options: Beam pipeline options (`--runner=...`, ...) of the 'beam' engine.

  Example:
    >>> options = PretrainingDataOptions(max_seq_length=64, pack=True)
    >>> options.check()
    >>> options.next_sentence
    False
  """
  max_seq_length: int = 128
  max_predictions_per_seq: int = 20
  masked_lm_prob: float = 0.15
  short_seq_prob: float = 0.1
  do_whole_word_mask: bool = False
  max_ngram_size: Optional[int] = None
  random_seed: int = 12345
  dupe_factor: int = 10
  gzip_compress: bool = False
  use_v2_feature_names: bool = False
  num_workers: int = 1
  no_next_sentence: bool = False
  dynamic: bool = False
  sentence_order: bool = False
  pack: bool = False
  processor_text_fn: Optional[Callable[[str], str]] = None
  show_progress: bool = False
  validation_fraction: float = 0.0
  engine: str = 'local'
  beam_options: Tuple[str, ...] = ()

  @property
  def next_sentence(self) -> bool:
    """Whether instances are segment pairs (NSP or sentence order): not with `no_next_sentence`
    or `pack`."""
    return not (self.no_next_sentence or self.pack)

  def instance_options(self) -> pi.InstanceOptions:
    """The packing and masking options of the workers."""
    return pi.InstanceOptions(self.max_seq_length, self.max_predictions_per_seq,
                              self.masked_lm_prob, self.short_seq_prob, self.do_whole_word_mask,
                              self.max_ngram_size, self.next_sentence, self.dynamic,
                              self.sentence_order, self.pack)

  def check(self) -> None:
    """Refuses bad values; warns when `max_predictions_per_seq` caps a full row's budget.

    Raises:
      ValueError: naming the option, the expected and the found value, or two options that
        cannot be combined.
    """
    if self.sentence_order and self.pack:
      raise ValueError('pack and sentence_order cannot be combined: packed rows hold whole '
                       'documents back to back without segment pairs; drop one of them')
    if self.sentence_order and self.no_next_sentence:
      raise ValueError('sentence_order needs segment pairs; it cannot be combined with '
                       'no_next_sentence (single segments)')
    min_length = pi.MIN_PIECE_ROOM if self.pack else 3 if self.no_next_sentence else 5
    seq, predictions, prob = self.max_seq_length, self.max_predictions_per_seq, self.masked_lm_prob
    checks = [
        ('max_seq_length', seq, seq >= min_length,
         f'>= {min_length}' + (' with pack (MIN_PIECE_ROOM)' if self.pack else '')),
        ('max_predictions_per_seq', predictions, self.dynamic or predictions >= 1, '>= 1'),
        ('masked_lm_prob', prob, self.dynamic or 0.0 < prob < 1.0, 'in (0, 1)'),
        ('short_seq_prob', self.short_seq_prob, 0.0 <= self.short_seq_prob <= 1.0, 'in [0, 1]'),
        ('dupe_factor', self.dupe_factor, self.dupe_factor >= 1, '>= 1'),
        ('max_ngram_size', self.max_ngram_size,
         self.max_ngram_size is None or self.max_ngram_size >= 1, 'None or >= 1'),
        ('random_seed', self.random_seed, self.random_seed >= 0, '>= 0'),
        ('num_workers', self.num_workers, self.num_workers >= 1, '>= 1'),
        ('validation_fraction', self.validation_fraction, 0.0 <= self.validation_fraction < 1.0,
         'in [0, 1)'),
        ('engine', self.engine, self.engine in ENGINES, f'one of {ENGINES}'),
    ]
    for name, value, ok, expected in checks:
      if not ok:
        raise ValueError(f'{name} must be {expected}, found {value!r}')
    full_budget = int(np.rint(seq * prob))
    if not self.dynamic and full_budget > predictions:
      # Google BERT's semantics: the budget is capped (Model Garden's 512 tokens, 76 predictions
      # and 0.15 are capped by one), so this is a warning, not an error.
      logger.warning(
          'max_predictions_per_seq=%d caps the masking budget of a full row: masked_lm_prob=%g of '
          'max_seq_length=%d is %d tokens, so full rows mask %d (a rate of %.3f); raise '
          'max_predictions_per_seq to %d to mask %g of every row', predictions, prob, seq,
          full_budget, predictions, predictions / seq, full_budget, prob)


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
                            tokenizer: Optional[SubwordTokenizer] = None,
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
                            show_progress: bool = False, validation_fraction: float = 0.0,
                            validation_output_file: Optional[str] = None,
                            engine: str = 'local',
                            beam_options: Sequence[str] = ()) -> Dict[str, Any]:
  """Writes pretraining TFRecords and their metadata file from text files (module docstring).

  Args:
    input_file: comma-separated list (or list) of text files and globs.
    output_file: comma-separated list (or list) of output files; each gets a random share of the
      instances. Local paths or URLs TensorFlow writes (`gs://bucket/data/train.tfrecord`).
    vocab_file: BERT `vocab.txt` (or give `tokenizer_json` or a ready `tokenizer`).
    tokenizer_json: Hugging Face `tokenizer.json` of any model `tokenizers` loads (WordPiece, BPE,
      Unigram, WordLevel; its normalizer decides lower-casing): the tokens of the roles cls, sep,
      mask come from it (`tokenization` module docstring), whole-word masking follows its word
      boundaries, and the metadata stores the file's text (`tokenizer_json`) for training to write
      into the model_dir.
    tokenizer: a ready `tokenization.SubwordTokenizer` (or `WordPieceTokenizer`).
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
    num_output_shards: split a single `output_file` into `<output_file>-0000i-of-0000n` shards
      (fewer, renumbered, where the text does not fill that many: no shard is written empty).
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
    validation_fraction: hold out this fraction of the documents (drawn by `random_seed`; none of
      their text is in the training records, not even as a random next segment) and write them
      once (dupe factor 1) to `validation_output_file`, a record set with its own metadata.
    validation_output_file: the held-out records (default: `validation.tfrecord` beside the first
      output file).
    engine: where instances are built and shards written: 'local' (a pool of `num_workers`
      processes) or 'beam' (an Apache Beam pipeline, `official.nlp.data.beam_engine`; the extra
      `mlm-garden[beam]`). The same records either way.
    beam_options: the Beam pipeline options of `engine='beam'`, e.g. `['--runner=FlinkRunner',
      '--flink_master=host:8081', '--environment_type=LOOPBACK']` (default: Beam's portable
      runner on this machine, `num_workers` processes; `beam_engine.pipeline_options`). The
      workers must reach the outputs' filesystem: a shared disk, or a bucket
      (docs/data_at_scale.md).

  Returns:
    The metadata written (see `data_metadata`), plus `elapsed_seconds`; with a validation split,
    also `validation` (the held-out set's metadata).

  Raises:
    FileNotFoundError: an input or vocabulary file is missing.
    ValueError: bad options, a vocabulary without BERT's special tokens (a tokenizer.json without
      a cls, sep or mask token), or input without text.
  """
  started = time.perf_counter()
  cpus = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1)
  options = PretrainingDataOptions(
      max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq,
      masked_lm_prob=masked_lm_prob, short_seq_prob=short_seq_prob,
      do_whole_word_mask=do_whole_word_mask, max_ngram_size=max_ngram_size,
      random_seed=random_seed, dupe_factor=dupe_factor, gzip_compress=gzip_compress,
      use_v2_feature_names=use_v2_feature_names,
      num_workers=cpus if num_workers is None else num_workers,
      no_next_sentence=no_next_sentence, dynamic=dynamic, sentence_order=sentence_order,
      pack=pack, processor_text_fn=processor_text_fn, show_progress=show_progress,
      validation_fraction=validation_fraction, engine=engine, beam_options=tuple(beam_options))
  options.check()
  if options.num_workers > cpus:
    logger.warning(
        'num_workers=%d is more than the %d CPU(s) available: using %d (the output does not '
        'depend on it)', options.num_workers, cpus, cpus)
    options = dataclasses.replace(options, num_workers=cpus)
  input_files = tokenized_corpus.expand_input_files(input_file)
  output_paths = _output_paths(output_file, num_output_shards)
  renumber = num_output_shards is not None and len(_output_paths(output_file, None)) == 1
  validation_path = _validation_path(validation_output_file, output_paths, validation_fraction)
  if tokenizer is None:
    tokenizer = vocab_assets.load_tokenizer_from_flags(vocab_file, tokenizer_json, do_lower_case)
  # An unwritable output directory fails here, before any work.
  with _Staging(output_paths + ([validation_path] if validation_path else [])) as staging:
    return _create(input_files, output_paths, staging, tokenizer, options, started, renumber,
                   validation_path)


def _validation_path(validation_output_file: Optional[str], output_paths: List[str],
                     validation_fraction: float) -> Optional[str]:
  """The held-out set's record file, or None without a split; refuses one that clashes."""
  if not validation_fraction:
    if validation_output_file:
      raise ValueError(f'validation_output_file={validation_output_file!r} needs '
                       f'validation_fraction > 0 (the fraction of documents to hold out)')
    return None
  path = validation_output_file or os.path.join(os.path.dirname(output_paths[0]),
                                                'validation.tfrecord')
  train_metadata = {data_metadata.metadata_path(p) for p in output_paths}
  if data_metadata.metadata_path(path) in train_metadata:
    raise ValueError(
        f'validation_output_file: {path!r} would share the metadata file '
        f'{data_metadata.metadata_path(path)!r} with output_file; expected another name '
        f'(e.g. validation.tfrecord)')
  return path


def _create(input_files: List[str], output_paths: List[str], staging: '_Staging',
            tokenizer: SubwordTokenizer, options: PretrainingDataOptions, started: float,
            renumber_shards: bool = False,
            validation_path: Optional[str] = None) -> Dict[str, Any]:
  """The body of `create_pretraining_data`: writes into `staging`, then commits the set(s).

  Args:
    input_files: the text files (globs expanded).
    output_paths: one record file per shard.
    staging: where the files are written before the commit.
    tokenizer: the tokenizer (WordPiece, BPE, Unigram, ...).
    options: the run's options (checked; `num_workers` capped to the CPUs).
    started: `time.perf_counter()` when the run started (for the summary).
    renumber_shards: the shard names were made from one name (`-0000i-of-0000n`): shards left
      empty are dropped and the others renumbered; else an empty shard is an error.
    validation_path: the record file of the held-out documents (with `validation_fraction`).
  """
  num_workers, show_progress = options.num_workers, options.show_progress
  total_bytes = sum(text_files.size(f) for f in input_files)
  with tqdm.tqdm(total=total_bytes, unit='B', unit_scale=True, desc='tokenizing',
                 disable=not show_progress) as bar:
    corpus, stats = tokenized_corpus.read_tokenized_corpus(input_files, tokenizer,
                                                           options.processor_text_fn, bar.update,
                                                           num_workers, options.do_whole_word_mask)
  if corpus.num_documents == 0:
    raise _no_text_error(input_files, stats)
  train_corpus, validation_corpus = _split_documents(corpus, options)
  if train_corpus.num_documents == 1 and options.next_sentence and not options.sentence_order:
    logger.warning(
        'the input has a single document (no blank line between documents): random next segments '
        'come from the same document')
  read_seconds = time.perf_counter() - started

  # The tokenizer's tokens of the roles cls, sep and mask; word boundaries from its vocabulary
  # (WordPiece's `##`), or else carried per token by the corpus (`read_tokenized_corpus`).
  special = pi.SpecialIds(
      cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, mask_id=tokenizer.mask_id,
      vocab_size=tokenizer.vocab_size, is_continuation=tokenizer.continuation_table())
  common = {
      'format': data_metadata.FORMAT,
      'format_version': data_metadata.FORMAT_VERSION,
      'tool': _TOOL,
      'tool_version': _tool_version(),
      'max_seq_length': options.max_seq_length,
      'max_predictions_per_seq': 0 if options.dynamic else options.max_predictions_per_seq,
      'feature_names': feature_names(options.use_v2_feature_names, options.dynamic, options.pack),
      'use_v2_feature_names': options.use_v2_feature_names,
      'dynamic': options.dynamic,
      'next_sentence': options.next_sentence,
      'sentence_order': options.sentence_order,
      'packed': options.pack,
      **tokenizer.metadata_fields(),
      'special_token_ids': tokenizer.special_token_ids(),
      'do_whole_word_mask': options.do_whole_word_mask,
      'max_ngram_size': options.max_ngram_size,
      'masked_lm_prob': options.masked_lm_prob,
      'short_seq_prob': options.short_seq_prob,
      'random_seed': options.random_seed,
      'compression': 'GZIP' if options.gzip_compress else '',
      'validation_fraction': options.validation_fraction,
  }
  written = _write_set(train_corpus, output_paths, staging, options, special, options.dupe_factor,
                       renumber_shards, 'training')
  if written['totals']['instances'] == 0:
    raise _no_text_error(input_files, stats)
  metadata = _set_metadata(common, written, train_corpus, options.dupe_factor, 'train',
                           input_files, stats)
  validation = None
  if validation_corpus is not None:
    # One pass (dupe_factor 1): evaluation needs each held-out document once, not new masks.
    validation_written = _write_set(validation_corpus, [validation_path], staging, options,
                                    special, 1, False, 'validation')
    validation = _set_metadata(common, validation_written, validation_corpus, 1, 'validation',
                               input_files, None)
    metadata['validation_files'] = [
        file_utils.relative(validation_path,
                            os.path.dirname(file_utils.absolute(output_paths[0])))]
  paths = written['paths']
  data_metadata.commit_record_set({path: staging.path(path) for path in paths}, metadata,
                                  written['shards'])
  metadata['shards'] = data_metadata.shard_entries(data_metadata.metadata_path(paths[0]),
                                                   written['shards'])
  if validation is not None:
    data_metadata.commit_record_set({validation_path: staging.path(validation_path)}, validation,
                                    validation_written['shards'])
  elapsed = time.perf_counter() - started
  summary = _summary(metadata, stats, elapsed, read_seconds, num_workers)
  if validation is not None:
    summary += (f"\n  validation: {validation['num_documents']} held-out documents "
                f"({options.validation_fraction:g}), {validation['num_instances']} instances in "
                f'{validation_path} (metadata {data_metadata.metadata_path(validation_path)})')
  logger.info(summary)
  if show_progress:
    print(summary, file=sys.stderr)
  result = dict(metadata, elapsed_seconds=elapsed)
  if validation is not None:
    result['validation'] = validation
  return result


def _split_documents(
    corpus: tokenized_corpus.TokenizedCorpus, options: PretrainingDataOptions
) -> Tuple[tokenized_corpus.TokenizedCorpus, Optional[tokenized_corpus.TokenizedCorpus]]:
  """The training and held-out corpora: `validation_fraction` of the documents, drawn by the seed.

  Raises:
    ValueError: the split would leave either side without a document.
  """
  fraction = options.validation_fraction
  if not fraction:
    return corpus, None
  count = corpus.num_documents
  held_out = int(round(fraction * count))
  if held_out < 1 or held_out >= count:
    raise ValueError(
        f'validation_fraction={fraction:g} of {count} document(s) holds out {held_out}; expected '
        f'at least 1 held-out and 1 training document (more documents: a blank line between '
        f'them; or a larger/smaller fraction)')
  rng = np.random.default_rng(np.random.SeedSequence([options.random_seed, 1 << 22]))
  picked = np.zeros(count, bool)
  picked[rng.choice(count, held_out, replace=False)] = True
  return (tokenized_corpus.corpus_subset(corpus, np.flatnonzero(~picked)),
          tokenized_corpus.corpus_subset(corpus, np.flatnonzero(picked)))


def _write_set(corpus: tokenized_corpus.TokenizedCorpus, output_paths: List[str],
               staging: '_Staging', options: PretrainingDataOptions, special: pi.SpecialIds,
               dupe_factor: int, renumber_shards: bool, description: str) -> Dict[str, Any]:
  """Writes the records of `corpus` into the staged `output_paths`; none is left empty.

  Returns:
    `paths` (the final record paths: fewer than `output_paths` where empty shards were dropped and
    the rest renumbered), `shards` (path -> records, bytes, crc32), `instances_per_file` and
    `totals` (a Counter of documents, instances, tokens, masked, random_next, pieces).

  Raises:
    ValueError: an explicitly named output file would be empty (too little text for that many).
  """
  random_seed = options.random_seed
  chunk_documents, units, shard_units = plan_units(corpus, dupe_factor, len(output_paths),
                                                   random_seed)
  shared = dict(corpus=corpus, options=options.instance_options(), special=special,
                random_seed=random_seed, chunk_documents=chunk_documents,
                use_v2_feature_names=options.use_v2_feature_names)
  staged = [staging.path(path) for path in output_paths]
  if options.engine == 'beam':
    # Function-level: the local engine does not load Beam's module (nor its extra).
    from official.nlp.data import beam_engine  # pylint: disable=g-import-not-at-top
    written, totals = beam_engine.write_shards(
        shared, units, shard_units, staged, options.beam_options, options.num_workers,
        options.random_seed, options.gzip_compress, description)
  else:
    written, totals = _write_shards_local(shared, units, shard_units, staged, options,
                                          description)
  shards = dict(zip(output_paths, written))
  paths = _drop_empty_shards(output_paths, shards, staging, renumber_shards, totals['instances'])
  return dict(paths=paths, shards={p: shards[p] for p in paths}, totals=totals,
              instances_per_file={os.path.basename(p): shards[p]['records'] for p in paths})


def plan_units(corpus: tokenized_corpus.TokenizedCorpus, dupe_factor: int, num_shards: int,
               random_seed: int) -> Tuple[List[np.ndarray], List[Tuple[int, int]], List[List[int]]]:
  """The work of one record set: the chunks' documents, the (dupe, chunk) units, and each shard's
  units (indices into the units, ascending) from a permutation seeded by `random_seed`.

  Example:
    >>> chunks, units, shard_units = plan_units(corpus, 2, 3, 12345)
    >>> sorted(u for part in shard_units for u in part) == list(range(len(units)))
    True
  """
  chunk_documents = _chunk_documents(corpus, _chunk_tokens(corpus, dupe_factor, num_shards))
  units = [(d, c) for d in range(dupe_factor) for c in range(len(chunk_documents))]
  unit_rng = np.random.default_rng(np.random.SeedSequence([random_seed, 1 << 20]))
  permutation = unit_rng.permutation(len(units))
  shard_units = [sorted(part.tolist()) for part in np.array_split(permutation, num_shards)]
  return chunk_documents, units, shard_units


def _write_shards_local(shared: Dict[str, Any], units: List[Tuple[int, int]],
                        shard_units: List[List[int]], staged_paths: List[str],
                        options: PretrainingDataOptions, description: str
                        ) -> Tuple[List[Dict[str, int]], collections.Counter]:
  """Builds every unit in the local worker pool and writes each shard
  (`pretraining_units.write_shard`).

  Returns:
    Each shard's `{'records', 'bytes', 'crc32'}` and the totals (`pretraining_units.UNIT_COUNTS`).
  """
  totals = collections.Counter()
  written = []
  documents = sum(shared['chunk_documents'][chunk].size for _, chunk in units)
  with tqdm.tqdm(total=documents, unit='doc', desc=f'creating {description} instances',
                 disable=not options.show_progress) as bar, \
      parallel.worker_pool(options.num_workers, shared) as pool:
    results = parallel.ordered_map(pool, _build_unit,
                                   [units[u] for part in shard_units for u in part])
    for shard, (path, part) in enumerate(zip(staged_paths, shard_units)):
      spill = pretraining_units.spill_path(path)
      record_lengths = []
      with open(spill, 'wb', buffering=1 << 20) as f:
        for _ in part:  # the records go to disk as they come: memory does not grow with the output
          result = next(results)
          f.write(result.records)
          record_lengths.append(result.record_lengths)
          for key in pretraining_units.UNIT_COUNTS:
            totals[key] += getattr(result, key)
          bar.update(result.documents)
          _after_unit_hook(f.tell())
      lengths = np.concatenate(record_lengths) if record_lengths else np.zeros(0, np.int64)
      written.append(pretraining_units.write_shard(path, spill, lengths, shard, options.random_seed,
                                                   options.gzip_compress, pool))
  return written, totals


def _chunk_tokens(corpus: tokenized_corpus.TokenizedCorpus, dupe_factor: int,
                  num_shards: int) -> int:
  """Tokens per work chunk: `_CHUNK_TOKENS`, or fewer where that leaves fewer (dupe, chunk) work
  units than shards (a small corpus into many shards), so that every shard gets a unit."""
  chunks_needed = -(-num_shards // dupe_factor)
  if corpus.num_tokens // _CHUNK_TOKENS + 1 >= chunks_needed:
    return _CHUNK_TOKENS
  return max(1, corpus.num_tokens // chunks_needed)


def _drop_empty_shards(output_paths: List[str], shards: Dict[str, Dict[str, int]],
                       staging: '_Staging', renumber: bool, instances: int) -> List[str]:
  """The output paths with records: empty shards' files removed, the rest renumbered (staged).

  Raises:
    ValueError: `renumber` is False and a named output file got no record.
  """
  empty = [p for p in output_paths if shards[p]['records'] == 0]
  if not empty or not instances:
    return output_paths
  if not renumber:
    raise ValueError(
        f'output_file: {len(empty)} of the {len(output_paths)} files named would be empty '
        f'({", ".join(os.path.basename(p) for p in empty)}): the text makes only {instances} '
        f'instance(s) in {len(output_paths) - len(empty)} work unit(s); name fewer files')
  kept = [p for p in output_paths if shards[p]['records']]
  base = data_metadata.SHARD_SUFFIX.sub('', output_paths[0])
  renamed = [f'{base}-{i:05d}-of-{len(kept):05d}' for i in range(len(kept))]
  for path in empty:
    file_utils.remove(staging.path(path))
  for old, new in zip(kept, renamed):
    file_utils.replace(staging.path(old), staging.path(new))
    shards[new] = shards.pop(old)
  logger.warning(
      'num_output_shards=%d: the text fills only %d shard(s) (%d instances); wrote %s-*-of-%05d',
      len(output_paths), len(kept), instances, os.path.basename(base), len(kept))
  return renamed


def _set_metadata(common: Dict[str, Any], written: Dict[str, Any],
                  corpus: tokenized_corpus.TokenizedCorpus, dupe_factor: int, split: str,
                  input_files: List[str],
                  stats: Optional[tokenized_corpus.CorpusStats]) -> Dict[str, Any]:
  """The metadata of one record set (see `data_metadata`); `stats` of the whole input, or None
  for a held-out split (its sentence and token counts come from `corpus`)."""
  totals, paths = written['totals'], written['paths']
  max_seq_length = common['max_seq_length']
  return {
      **common,
      'split': split,
      'dupe_factor': dupe_factor,
      'files': [os.path.basename(p) for p in paths],
      'instances_per_file': written['instances_per_file'],
      'num_instances': totals['instances'],
      'num_tokens': totals['tokens'],
      'num_padding_tokens': totals['instances'] * max_seq_length - totals['tokens'],
      'num_pieces': totals['pieces'],
      'num_masked_tokens': totals['masked'],
      'num_random_next': totals['random_next'],
      'num_documents': corpus.num_documents,
      'num_sentences': len(corpus.sentence_starts) - 1,
      'num_corpus_tokens': corpus.num_tokens,
      'num_invalid_lines': stats.invalid_lines if stats is not None else 0,
      'input_files': input_files,
  }


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


class _Staging:
  """Sibling staging directories where a run writes its files, then moves them into place as a set.

  One hidden directory per output directory (`.create_pretraining_data-<pid>.tmp`), created before
  any work so an unwritable output directory fails at once; directories left by runs that were
  killed are removed; the directories are removed when the run ends (the files in them were moved
  out, or the run failed). On a remote filesystem (`gs://...`) the directory is
  `.create_pretraining_data-<pid>-<random>.tmp` (the pid says nothing of a process on another
  machine), and one left by a killed run is not removed by the next: its name says which to delete.

  Example:
    with _Staging(["out/train.tfrecord"]) as staging:
      staging.path("out/train.tfrecord")  # "out/.create_pretraining_data-123.tmp/train.tfrecord"
  """

  PREFIX = '.create_pretraining_data-'
  SUFFIX = '.tmp'

  def __init__(self, output_paths: Sequence[str]):
    self._dirs: Dict[str, str] = {}
    for directory in sorted({os.path.dirname(file_utils.absolute(p)) for p in output_paths}):
      remote = file_utils.is_remote(directory)
      try:
        file_utils.makedirs(directory)
        if remote:
          name = f'{self.PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}{self.SUFFIX}'
        else:
          _remove_stale_staging(directory)
          name = f'{self.PREFIX}{os.getpid()}{self.SUFFIX}'
        staging = os.path.join(directory, name)
        file_utils.rmtree(staging)
        file_utils.makedirs(staging)
      except Exception as e:  # pylint: disable=broad-except
        # OSError; for a URL, TensorFlow's errors (not OSErrors). Anything else is a bug: raised.
        if not isinstance(e, OSError) and not file_utils.is_tensorflow_error(e):
          raise
        self.close()
        reason = getattr(e, 'strerror', None) or getattr(e, 'message', None) or e
        raise ValueError(
            f'output_file: cannot write to the directory {directory!r} ({reason}); '
            f'expected a writable directory') from None
      self._dirs[directory] = staging

  def path(self, output_path: str) -> str:
    """Where `output_path` is written before the commit."""
    return os.path.join(self._dirs[os.path.dirname(file_utils.absolute(output_path))],
                        os.path.basename(output_path))

  def close(self) -> None:
    for staging in self._dirs.values():
      file_utils.rmtree(staging)

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
