"""Reads text files (a sentence a line, a blank line between documents) into compact id arrays.

The whole corpus is kept as three numpy arrays (token ids, sentence boundaries, document
boundaries), a few bytes per token, so instance creation can sample random next segments from any
document without holding instances or Python token lists in memory.

Conventions (Google BERT): lines are stripped; a blank line ends a document; a line whose text
tokenizes to nothing is skipped; each input file starts a new document; empty documents are dropped.
Lines that are not valid UTF-8 are reported (file and line number) and skipped. A line longer than
about 1 MB is read and tokenized in pieces cut at whitespace (memory stays bounded; the tokens are
the same, and the pieces still make one sentence; `processor_text_fn` then sees each piece).

Example:
  corpus, stats = read_tokenized_corpus(["corpus.txt"], tokenizer)
  corpus.num_documents, stats.invalid_lines
"""

import dataclasses
import logging
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from official.nlp.data import text_files
from official.nlp.data import parallel
from official.nlp.data import pretraining_instances as pi
from official.nlp.data.tokenization import SubwordTokenizer

_BLOCK_BYTES = 1 << 18  # small enough to spread a few MB evenly over the workers
_MAX_LINE_PIECE = 1 << 20  # longer lines are read (and tokenized) in pieces of about this size
_MAX_REPORTED_INVALID = 20
logger = logging.getLogger(__name__)


@dataclasses.dataclass
class TokenizedCorpus:
  """Token ids of a corpus with sentence and document boundaries.

  Attributes:
    token_ids: `[num_tokens]` uint16 (vocab <= 65536) or int32 ids of all sentences, concatenated;
      read with `whole_words=True` from a tokenizer whose vocabulary does not tell word boundaries
      (byte-level BPE), a record array of the ids and per-token word starts
      (`pretraining_instances.WORD_START_FIELDS`), which the instance builders take as well.
    sentence_starts: `[num_sentences + 1]` int64 offsets into `token_ids`.
    document_starts: `[num_documents + 1]` int64 offsets into `sentence_starts` (sentence indices).
  """
  token_ids: np.ndarray
  sentence_starts: np.ndarray
  document_starts: np.ndarray

  @property
  def num_documents(self) -> int:
    return len(self.document_starts) - 1

  @property
  def num_tokens(self) -> int:
    return int(self.token_ids.size)

  def document_tokens(self) -> np.ndarray:
    """Number of tokens of every document, `[num_documents]`."""
    return np.diff(self.sentence_starts[self.document_starts])


@dataclasses.dataclass
class CorpusStats:
  """What reading the input found."""
  files: int = 0
  bytes: int = 0
  lines: int = 0
  blank_lines: int = 0
  invalid_lines: int = 0
  empty_token_lines: int = 0
  documents: int = 0
  sentences: int = 0
  tokens: int = 0


def expand_input_files(input_file: 'str | Sequence[str]') -> List[str]:
  """Files named by a comma-separated list (or a list) of paths and glob patterns, in that order
  (local, or URLs TensorFlow or Beam read: `text_files`).

  Raises:
    FileNotFoundError: a pattern matches no file.
  """
  patterns = input_file.split(',') if isinstance(input_file, str) else list(input_file)
  files = []
  for pattern in (p.strip() for p in patterns):
    if not pattern:
      continue
    matches = text_files.match(pattern)
    if not matches:
      raise FileNotFoundError(f'input_file: {pattern!r} matches no file')
    files.extend(matches)
  if not files:
    raise ValueError(f'input_file: no file given (found {input_file!r})')
  return files


def _piece_end(block: bytes, line_start: int) -> int:
  """Where to cut `block`, whose last line (from `line_start`) goes on: after its last space or tab
  if that leaves at most `_MAX_LINE_PIECE` bytes for the next block, else at a UTF-8 character
  boundary near the end.

  Cutting at whitespace keeps the tokens: the tokenizer splits words there anyway.
  """
  cut = max(block.rfind(b' ', line_start + 1), block.rfind(b'\t', line_start + 1))
  if cut > line_start + 1 and len(block) - cut <= _MAX_LINE_PIECE:
    return cut
  cut = len(block) - 1
  while cut > line_start + 1 and 0x80 <= block[cut] < 0xC0:  # not inside a multi-byte character
    cut -= 1
  return cut


def _blocks(path: str) -> Iterator[Tuple[bytes, bool]]:
  """The file in blocks of whole lines of about `_BLOCK_BYTES`, as `(block, cut)`.

  A line longer than about `_MAX_LINE_PIECE` is cut into pieces (at whitespace when it can be), so
  memory stays bounded whatever the line length: `cut` is True when the block's last line goes on in
  the next block.
  """
  with text_files.open_binary(path) as f:
    carry = b''
    while True:
      block = carry + f.read(_BLOCK_BYTES)
      carry = b''
      if not block:
        return
      if not block.endswith(b'\n'):
        block += f.readline(_MAX_LINE_PIECE)
      if not block.endswith(b'\n'):
        following = f.read(1)
        if following:  # the line goes on: cut it, the rest starts the next block
          cut = _piece_end(block, block.rfind(b'\n') + 1)
          carry = block[cut:] + following
          yield block[:cut], True
          continue
      yield block, False


def _decode_lines(block: bytes, first_line: int):
  """A block's lines as text (None: not valid UTF-8) and `[(line number, reason)]` of the bad."""
  lines = block.split(b'\n')
  if lines and not lines[-1]:
    lines.pop()
  try:
    return block.decode('utf-8').split('\n')[:len(lines)], []
  except UnicodeDecodeError:
    pass
  texts: List[Optional[str]] = []
  invalid = []
  for number, line in enumerate(lines, start=first_line):
    try:
      texts.append(line.decode('utf-8'))
    except UnicodeDecodeError as e:
      invalid.append((number, e.reason))
      texts.append(None)
  return texts, invalid


def _report_invalid(path: str, invalid, stats: CorpusStats) -> None:
  for number, reason in invalid:
    stats.invalid_lines += 1
    if stats.invalid_lines <= _MAX_REPORTED_INVALID:
      logger.warning('%s:%d: invalid UTF-8 (%s), line skipped', path, number, reason)
    elif stats.invalid_lines == _MAX_REPORTED_INVALID + 1:
      logger.warning('more invalid UTF-8 lines: not reported one by one (counted in the summary)')


def _numbered_blocks(paths: Sequence[str]) -> Iterator[Tuple[int, bytes, int, bool]]:
  """`(file index, block, number of its first line, cut)` for all files (see `_blocks`)."""
  for index, path in enumerate(paths):
    line_number = 1
    for block, cut in _blocks(path):
      yield index, block, line_number, cut
      line_number += block.count(b'\n')  # a block without a final newline is cut or the file's last


def iter_line_blocks(path: str,
                     stats: Optional[CorpusStats] = None) -> Iterator[List[Optional[str]]]:
  """Lines of a text file in blocks of about 1 MB; a line that is not valid UTF-8 is reported (file
  and line number), counted in `stats.invalid_lines` and given as None. Lines keep their whitespace
  (no newline); a line longer than about 1 MB comes as several pieces (cut at whitespace when it can
  be: see `_blocks`)."""
  stats = stats if stats is not None else CorpusStats()
  for _, block, first_line, cut in _numbered_blocks([path]):
    stats.bytes += len(block)
    lines, invalid = _decode_lines(block, first_line)
    _report_invalid(path, invalid, stats)
    stats.lines += len(lines) - cut  # a cut line is counted with its last piece
    yield lines


@dataclasses.dataclass
class _TokenizedBlock:
  file_index: int
  num_bytes: int
  kinds: bytes  # per line: 0 blank, 1 text, 2 invalid UTF-8
  lengths: np.ndarray  # int64, tokens of each text line
  ids: np.ndarray
  invalid: List[Tuple[int, str]]
  cut: bool  # the last line goes on in the next block


def _tokenize_block(task: Tuple[int, bytes, int, bool]) -> _TokenizedBlock:
  file_index, block, first_line, cut = task
  shared = parallel.state()
  tokenizer, processor_text_fn = shared['tokenizer'], shared['processor_text_fn']
  lines, invalid = _decode_lines(block, first_line)
  texts, kinds = [], bytearray()
  for line in lines:
    if line is None:
      kinds.append(2)
      continue
    line = line.strip()
    if not line:
      kinds.append(0)
      continue
    kinds.append(1)
    texts.append(processor_text_fn(line) if processor_text_fn else line)
  dtype = shared['dtype']
  if not texts:
    return _TokenizedBlock(file_index, len(block), bytes(kinds), np.zeros(0, np.int64),
                           np.zeros(0, dtype), invalid, cut)
  if dtype.names is None:
    ids, lengths = tokenizer.encode_to_arrays(texts)
    tokens = ids.astype(dtype)
  else:
    ids, lengths, starts = tokenizer.encode_with_word_starts(texts)
    tokens = np.empty(ids.size, dtype)
    tokens[pi.WORD_START_FIELDS[0]] = ids
    tokens[pi.WORD_START_FIELDS[1]] = starts
  return _TokenizedBlock(file_index, len(block), bytes(kinds), np.asarray(lengths, np.int64),
                         tokens, invalid, cut)


class _LineFolder:
  """Folds the lines of tokenized blocks, in order, into sentence lengths and document starts
  (the conventions of the module docstring), counting lines in `stats`.

  A block whose lines are all whole (no cut line pending or ending it: nearly every block) is
  folded with numpy; the pieces of a cut line go through the line-by-line path (`_fold_lines`),
  which is the reference the fast one is tested against.

  Example:
    folder = _LineFolder(stats)
    folder.new_file()
    folder.add(b'\x01\x01\x00\x01', np.array([3, 2, 4]), cut=False)
    folder.sentence_starts(), folder.document_starts()  # [0, 3, 5, 9], [0, 2, 3]
  """

  def __init__(self, stats: CorpusStats):
    self._stats = stats
    self._lengths: List[np.ndarray] = []
    self._starts: List[np.ndarray] = []
    self._sentences = 0
    self._new_document = True
    # A line cut over blocks: its kind so far (-1: none) and its tokens.
    self._pending_kind, self._pending_length = -1, 0

  def new_file(self) -> None:
    """Each file starts a new document."""
    self._new_document = True

  def add(self, kinds: bytes, lengths: np.ndarray, cut: bool) -> None:
    """One block: `kinds` per line (0 blank, 1 text, 2 invalid), `lengths` the tokens of its
    text lines, `cut` when its last line goes on in the next block."""
    if cut or self._pending_kind != -1:
      self._fold_lines(kinds, lengths, cut)
    else:
      self._fold_whole_lines(np.frombuffer(kinds, np.uint8), lengths)

  def _fold_whole_lines(self, kinds: np.ndarray, lengths: np.ndarray) -> None:
    stats = self._stats
    stats.lines += kinds.size
    blank = kinds == 0
    stats.blank_lines += int(blank.sum())
    text = np.flatnonzero(kinds == 1)
    empty = lengths == 0
    stats.empty_token_lines += int(empty.sum())
    sentences, kept = text[~empty], lengths[~empty]
    blanks_before = np.cumsum(blank)  # blank lines up to and including each line
    if sentences.size:
      before = blanks_before[sentences]
      starts = np.empty(sentences.size, bool)
      starts[0] = self._new_document or before[0] > 0
      starts[1:] = before[1:] > before[:-1]
      self._starts.append(self._sentences + np.flatnonzero(starts))
      self._lengths.append(kept)
      self._sentences += sentences.size
      self._new_document = bool(blanks_before[-1] > before[-1])
    elif kinds.size:
      self._new_document = self._new_document or bool(blanks_before[-1])

  def _fold_lines(self, kinds: bytes, lengths: np.ndarray, cut: bool) -> None:
    stats = self._stats
    lengths = iter(lengths.tolist())
    starts, kept = [], []
    for index, kind in enumerate(kinds):
      # The pieces of a cut line make one line: invalid if any piece is, blank if all are.
      self._pending_kind = max(self._pending_kind, kind)
      if kind == 1:
        self._pending_length += next(lengths)
      if cut and index == len(kinds) - 1:
        continue
      kind, length = self._pending_kind, self._pending_length
      self._pending_kind, self._pending_length = -1, 0
      stats.lines += 1
      if kind == 0:
        stats.blank_lines += 1
        self._new_document = True
      elif kind == 1:
        if length == 0:
          stats.empty_token_lines += 1
          continue
        if self._new_document:
          starts.append(self._sentences + len(kept))
          self._new_document = False
        kept.append(length)
    self._starts.append(np.array(starts, np.int64))
    self._lengths.append(np.array(kept, np.int64))
    self._sentences += len(kept)

  def sentence_starts(self) -> np.ndarray:
    """`[sentences + 1]` token offsets of the sentences folded so far."""
    starts = np.zeros(self._sentences + 1, np.int64)
    if self._lengths:
      np.cumsum(np.concatenate(self._lengths), out=starts[1:])
    return starts

  def document_starts(self) -> np.ndarray:
    """`[documents + 1]` sentence offsets of the documents (the last: the sentence count)."""
    starts = [np.zeros(0, np.int64)] + self._starts
    return np.append(np.concatenate(starts).astype(np.int64), self._sentences)


def read_tokenized_corpus(input_files: Sequence[str], tokenizer: SubwordTokenizer,
                          processor_text_fn: Optional[Callable[[str], str]] = None,
                          progress: Optional[Callable[[int], None]] = None, num_workers: int = 1,
                          whole_words: bool = False) -> Tuple[TokenizedCorpus, CorpusStats]:
  """Reads and tokenizes text files into a `TokenizedCorpus`, blocks of lines in parallel.

  Args:
    input_files: text files, one sentence a line, blank line between documents.
    tokenizer: the tokenizer (`tokenization.SubwordTokenizer`: WordPiece, BPE, Unigram, ...).
    processor_text_fn: optional function applied to each stripped non-blank line before tokenizing.
    progress: called with the number of bytes of each block read.
    num_workers: processes tokenizing blocks (the result does not depend on it).
    whole_words: whole-word masking will follow: where the tokenizer's vocabulary does not tell
      word boundaries (`continuation_table()` is None), `token_ids` also records each token's word
      start (a record array, see `TokenizedCorpus`).

  Returns:
    `(corpus, stats)`.

  Example:
    corpus, stats = read_tokenized_corpus(['corpus.txt'], tokenizer, num_workers=2)
  """
  dtype = np.dtype(np.uint16 if tokenizer.vocab_size <= 1 << 16 else np.int32)
  if whole_words and tokenizer.continuation_table() is None:
    dtype = pi.word_start_dtype(dtype)
  stats = CorpusStats(files=len(input_files))
  id_chunks: List[np.ndarray] = []
  folder = _LineFolder(stats)
  shared = {'tokenizer': tokenizer, 'processor_text_fn': processor_text_fn, 'dtype': dtype}
  current_file = -1
  with parallel.worker_pool(num_workers, shared) as pool:
    for block in parallel.ordered_map(pool, _tokenize_block, _numbered_blocks(input_files)):
      if block.file_index != current_file:
        current_file = block.file_index
        folder.new_file()
      stats.bytes += block.num_bytes
      _report_invalid(input_files[block.file_index], block.invalid, stats)
      folder.add(block.kinds, block.lengths, block.cut)
      if block.ids.size:
        id_chunks.append(block.ids)
      if progress:
        progress(block.num_bytes)
  corpus = TokenizedCorpus(
      token_ids=np.concatenate(id_chunks) if id_chunks else np.zeros(0, dtype),
      sentence_starts=folder.sentence_starts(), document_starts=folder.document_starts())
  stats.documents = corpus.num_documents
  stats.sentences = len(corpus.sentence_starts) - 1
  stats.tokens = corpus.num_tokens
  return corpus, stats


def concatenated_ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
  """`np.concatenate([np.arange(s, e) for s, e in zip(starts, ends)])`, vectorized (int64).

  Example:
    >>> concatenated_ranges(np.array([0, 5]), np.array([2, 8])).tolist()
    [0, 1, 5, 6, 7]
  """
  starts, ends = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
  lengths = ends - starts
  offsets = np.cumsum(lengths) - lengths
  return np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


def corpus_subset(corpus: TokenizedCorpus, documents: np.ndarray) -> TokenizedCorpus:
  """A corpus of the given documents of `corpus`, in the order given (token ids copied).

  Args:
    corpus: the whole corpus.
    documents: `[k]` document indices.

  Returns:
    A `TokenizedCorpus` of `k` documents.

  Example:
    >>> whole = TokenizedCorpus(np.arange(6, dtype=np.uint16), np.array([0, 2, 3, 6]),
    ...                         np.array([0, 2, 3]))
    >>> corpus_subset(whole, np.array([1])).token_ids.tolist()
    [3, 4, 5]
  """
  documents = np.asarray(documents, np.int64)
  first, end = corpus.document_starts[documents], corpus.document_starts[documents + 1]
  sentences = concatenated_ranges(first, end)
  sentence_lengths = np.diff(corpus.sentence_starts)[sentences]
  token_ids = corpus.token_ids[concatenated_ranges(corpus.sentence_starts[sentences],
                                                   corpus.sentence_starts[sentences + 1])]
  sentence_starts = np.concatenate([[0], np.cumsum(sentence_lengths)]).astype(np.int64)
  document_starts = np.concatenate([[0], np.cumsum(end - first)]).astype(np.int64)
  return TokenizedCorpus(token_ids, sentence_starts, document_starts)
