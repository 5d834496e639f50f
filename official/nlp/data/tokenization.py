"""BERT WordPiece tokenizer backed by the Rust `tokenizers` library.

`WordPieceTokenizer` wraps a `tokenizers.Tokenizer` configured like Google BERT (BERT normalizer
with optional lower-casing and accent stripping, BERT pre-tokenizer, WordPiece with the `##`
continuation prefix). It is built from a `vocab.txt` (one token a line, the line number is the id)
or from a `tokenizer.json`, and never adds special tokens by itself: `[CLS]`/`[SEP]` are placed by
the data pipeline.

Example:
  tok = WordPieceTokenizer.from_vocab_file("vocab.txt", do_lower_case=True)
  tok.tokenize("Hello world")             # ['hello', 'world']
  tok.encode_batch(["a line", "another"])  # [[id, id], [id]]
"""

import hashlib
import json
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers
from tokenizers.models import WordPiece

from official.nlp.data.segment_ops import gather_segments

PAD_TOKEN = '[PAD]'
UNK_TOKEN = '[UNK]'
CLS_TOKEN = '[CLS]'
SEP_TOKEN = '[SEP]'
MASK_TOKEN = '[MASK]'
# BERT's special tokens in the order a freshly built vocabulary lists them (so [PAD] gets id 0).
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)
CONTINUATION_PREFIX = '##'


# BERT's pre-tokenizer on ASCII text: runs of non-space non-punctuation characters, or one
# punctuation character (BERT counts every printable non-alphanumeric ASCII character as
# punctuation); "\n" marks a line end.
_ASCII_WORDS = re.compile(r'[^\s!-/:-@\[-`{-~]+|[!-/:-@\[-`{-~]|\n')
# ASCII characters BERT's normalizer deletes (controls other than tab/newline/return): such lines
# take the slow path.
_ASCII_CONTROL = re.compile(r'[\x00-\x08\x0b-\x1f\x7f]')
_MAX_CACHED_WORDS = 1 << 21


class _AsciiWordCache:
  """Exact BERT WordPiece ids of ASCII lines through a word -> pieces cache.

  On ASCII text without control characters BERT's normalizer only lower-cases and its pre-tokenizer
  splits at whitespace and punctuation, which a regex reproduces; each distinct word is then
  WordPiece-encoded once by the Rust tokenizer. Most words of a corpus repeat, so this is several
  times faster than encoding every line.
  """

  def __init__(self, tokenizer: Tokenizer, lowercase: bool):
    self._tokenizer = tokenizer
    self._lowercase = lowercase
    self._reset()

  def _reset(self) -> None:
    self._word_ids = {'\n': 0}  # word -> row of the piece table; row 0 (the line end) has no pieces
    self._piece_chunks = [np.zeros(0, np.int64)]
    self._length_chunks = [np.zeros(1, np.int64)]
    self._pieces = np.zeros(0, np.int64)
    self._piece_lengths = np.zeros(1, np.int64)
    self._piece_starts = np.zeros(1, np.int64)

  def _add_words(self, words: List[str]) -> None:
    encodings = self._tokenizer.encode_batch_fast(words, add_special_tokens=False)
    ids = [e.ids for e in encodings]
    lengths = np.fromiter(map(len, ids), np.int64, count=len(ids))
    self._piece_chunks.append(
        np.fromiter((i for row in ids for i in row), np.int64, count=int(lengths.sum())))
    self._length_chunks.append(lengths)
    for word in words:
      self._word_ids[word] = len(self._word_ids)
    self._pieces = np.concatenate(self._piece_chunks)
    self._piece_chunks = [self._pieces]
    self._piece_lengths = np.concatenate(self._length_chunks)
    self._length_chunks = [self._piece_lengths]
    self._piece_starts = np.cumsum(self._piece_lengths) - self._piece_lengths

  def encode(self, lines: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """`(flat ids [total], tokens per line [len(lines)])` of ASCII lines without newlines."""
    text = '\n'.join(lines) + '\n'
    words = _ASCII_WORDS.findall(text.lower() if self._lowercase else text)
    new_words = [w for w in dict.fromkeys(words) if w not in self._word_ids]
    if new_words:
      if len(self._word_ids) + len(new_words) > _MAX_CACHED_WORDS:
        self._reset()
        new_words = [w for w in dict.fromkeys(words) if w not in self._word_ids]
      self._add_words(new_words)
    rows = np.fromiter(map(self._word_ids.__getitem__, words), np.int64, count=len(words))
    lengths = self._piece_lengths[rows]
    ids = gather_segments(self._pieces, self._piece_starts[rows], lengths)
    line_ends = np.cumsum(lengths)[rows == 0]
    return ids, np.diff(line_ends, prepend=0)


def _ascii_cache_for(tokenizer: Tokenizer) -> Optional[_AsciiWordCache]:
  """The ASCII fast path if the tokenizer is exactly BERT's pipeline (None: all goes to Rust)."""
  spec = json.loads(tokenizer.to_str())
  normalizer = spec.get('normalizer') or {}
  pre_tokenizer = spec.get('pre_tokenizer') or {}
  model = spec['model']
  if (normalizer.get('type') != 'BertNormalizer' or not normalizer.get('clean_text')
      or pre_tokenizer.get('type') != 'BertPreTokenizer' or model.get('type') != 'WordPiece'):
    return None
  return _AsciiWordCache(tokenizer, bool(normalizer.get('lowercase')))


def bert_wordpiece_tokenizer(vocab: Optional[Dict[str, int]] = None,
                             do_lower_case: bool = True) -> Tokenizer:
  """A `tokenizers.Tokenizer` with Google BERT's normalizer, pre-tokenizer and WordPiece model.

  Args:
    vocab: token -> id; None gives an empty model (for training a vocabulary).
    do_lower_case: lower-case and strip accents, as in the uncased BERT models.
  """
  kwargs = {} if vocab is None else {'vocab': vocab}
  tokenizer = Tokenizer(WordPiece(unk_token=UNK_TOKEN, max_input_chars_per_word=100, **kwargs))
  tokenizer.normalizer = normalizers.BertNormalizer(
      clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=do_lower_case)
  tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
  tokenizer.decoder = decoders.WordPiece(prefix=CONTINUATION_PREFIX)
  return tokenizer


def read_vocab(vocab_file: str) -> List[str]:
  """The tokens of a BERT `vocab.txt` (index = id); a repeated token raises ValueError naming it."""
  if not os.path.isfile(vocab_file):
    raise FileNotFoundError(f'vocab_file: no such file: {vocab_file!r}')
  with open(vocab_file, 'r', encoding='utf-8') as f:
    tokens = [line.strip() for line in f]
  while tokens and not tokens[-1]:  # tolerate trailing blank lines
    tokens.pop()
  seen: Dict[str, int] = {}
  for index, token in enumerate(tokens):
    if token in seen:
      raise ValueError(
          f'vocab_file {vocab_file!r}: token {token!r} appears twice (lines {seen[token] + 1} and '
          f'{index + 1}); expected each token once, the line number being its id')
    seen[token] = index
  return tokens


def _check_special_tokens(vocab: Sequence[str], source: str) -> None:
  present = set(vocab)
  missing = [t for t in SPECIAL_TOKENS if t not in present]
  if missing:
    raise ValueError(
        f"vocabulary {source!r} lacks the special token(s) {', '.join(missing)}; expected all of "
        f"{', '.join(SPECIAL_TOKENS)} (build one with data_tools/build_vocab.py)")


class WordPieceTokenizer:
  """A BERT WordPiece tokenizer (Rust `tokenizers`) with the vocabulary as a list.

  Attributes:
    vocab: the tokens, index = id.
    token_to_id: token -> id.
    do_lower_case: whether the normalizer lower-cases (None when a tokenizer.json has no BERT
      normalizer).
    source: the file the vocabulary came from.
  """

  def __init__(self, tokenizer: Tokenizer, vocab: List[str], source: str,
               do_lower_case: Optional[bool]):
    _check_special_tokens(vocab, source)
    self._tokenizer = tokenizer
    self.vocab = vocab
    self.token_to_id = {t: i for i, t in enumerate(vocab)}
    self.source = source
    self.do_lower_case = do_lower_case
    self._ascii_cache = _ascii_cache_for(tokenizer)
    # Texts with an added token (e.g. [MASK] of a tokenizer.json) go to Rust: it matches them whole.
    self._added_tokens = [t.content for t in tokenizer.get_added_tokens_decoder().values()]

  @classmethod
  def from_vocab_file(cls, vocab_file: str, do_lower_case: bool = True) -> 'WordPieceTokenizer':
    """Builds the tokenizer from a BERT `vocab.txt` (one token a line; line number = id)."""
    vocab = read_vocab(vocab_file)
    tokenizer = bert_wordpiece_tokenizer({t: i for i, t in enumerate(vocab)}, do_lower_case)
    return cls(tokenizer, vocab, vocab_file, do_lower_case)

  @classmethod
  def from_tokenizer_json(cls, tokenizer_json: str) -> 'WordPieceTokenizer':
    """Builds the tokenizer from a Hugging Face `tokenizer.json` with a WordPiece model."""
    if not os.path.isfile(tokenizer_json):
      raise FileNotFoundError(f'tokenizer_json: no such file: {tokenizer_json!r}')
    tokenizer = Tokenizer.from_file(tokenizer_json)
    spec = json.loads(tokenizer.to_str())
    model_type = spec.get('model', {}).get('type')
    if model_type != 'WordPiece':
      raise ValueError(
          f"tokenizer_json {tokenizer_json!r}: model type is {model_type!r}; expected 'WordPiece'")
    token_to_id = tokenizer.get_vocab(with_added_tokens=True)
    vocab = [''] * len(token_to_id)
    for token, index in token_to_id.items():
      if index >= len(vocab):
        raise ValueError(
            f'tokenizer_json {tokenizer_json!r}: ids are not contiguous (token {token!r} has id '
            f'{index}, vocabulary size {len(vocab)})')
      vocab[index] = token
    normalizer = spec.get('normalizer') or {}
    is_bert = normalizer.get('type') == 'BertNormalizer'
    do_lower_case = normalizer.get('lowercase') if is_bert else None
    return cls(tokenizer, vocab, tokenizer_json, do_lower_case)

  @property
  def vocab_size(self) -> int:
    return len(self.vocab)

  @property
  def backend(self) -> Tokenizer:
    """The underlying `tokenizers.Tokenizer`."""
    return self._tokenizer

  def tokenize(self, text: str) -> List[str]:
    """Splits one text into WordPiece tokens (no special tokens added)."""
    return self._tokenizer.encode(text, add_special_tokens=False).tokens

  def encode_batch(self, texts: Sequence[str]) -> List[List[int]]:
    """Token ids of many texts at once (Rust, multi-threaded); no special tokens added."""
    encodings = self._tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
    return [e.ids for e in encodings]

  def encode_to_arrays(self, texts: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """Token ids of many texts as `(flat ids [total] int64, tokens per text [len(texts)] int64)`.

    Same ids as `encode_batch`; ASCII texts go through an exact word cache (much faster), others
    through Rust.
    """
    texts = list(texts)
    fast = [t.isascii() for t in texts] if self._ascii_cache is not None else [False] * len(texts)
    joined = '\n'.join(t for t, f in zip(texts, fast) if f)
    if _ASCII_CONTROL.search(joined) or any(a in joined for a in self._added_tokens):
      fast = [f and not _ASCII_CONTROL.search(t) and not any(a in t for a in self._added_tokens)
              for t, f in zip(texts, fast)]
    fast_texts = [t for t, f in zip(texts, fast) if f]
    slow_texts = [t for t, f in zip(texts, fast) if not f]
    lengths = np.zeros(len(texts), np.int64)
    fast_mask = np.array(fast, bool)
    fast_ids, fast_lengths = (self._ascii_cache.encode(fast_texts) if fast_texts
                              else (np.zeros(0, np.int64), np.zeros(0, np.int64)))
    slow_ids = self.encode_batch(slow_texts) if slow_texts else []
    slow_lengths = np.fromiter(map(len, slow_ids), np.int64, count=len(slow_ids))
    if not slow_texts:
      return fast_ids, fast_lengths
    slow_flat = np.fromiter((i for row in slow_ids for i in row), np.int64,
                            count=int(slow_lengths.sum()))
    if not fast_texts:
      return slow_flat, slow_lengths
    lengths[fast_mask] = fast_lengths
    lengths[~fast_mask] = slow_lengths
    starts = np.zeros(len(texts), np.int64)
    starts[fast_mask] = np.cumsum(fast_lengths) - fast_lengths
    starts[~fast_mask] = fast_ids.size + np.cumsum(slow_lengths) - slow_lengths
    return gather_segments(np.concatenate([fast_ids, slow_flat]), starts, lengths), lengths

  def convert_tokens_to_ids(self, tokens: Sequence[str]) -> List[int]:
    """Ids of tokens; an unknown token raises KeyError naming it."""
    try:
      return [self.token_to_id[t] for t in tokens]
    except KeyError as e:
      raise KeyError(f'token {e.args[0]!r} is not in the vocabulary {self.source!r}') from None

  def convert_ids_to_tokens(self, ids: Sequence[int]) -> List[str]:
    """Tokens of ids."""
    return [self.vocab[i] for i in ids]

  def metadata_fields(self) -> Dict[str, Any]:
    """What records metadata stores of this tokenizer, its tokens included (`"vocab"`), so that
    training can give the model_dir its vocabulary (`vocab_assets.write_model_dir_vocab`)."""
    return {'vocab_size': self.vocab_size, 'vocab_sha256': self.vocab_sha256(),
            'vocab_source': os.path.basename(self.source), 'do_lower_case': self.do_lower_case,
            'vocab': list(self.vocab)}

  def vocab_sha256(self) -> str:
    """sha256 of the vocabulary as a `vocab.txt` (tokens joined by newlines, plus a final one)."""
    return vocab_sha256(self.vocab)


def vocab_sha256(vocab: Sequence[str]) -> str:
  """sha256 hex digest of `vocab` as a `vocab.txt`; equal for a vocab.txt and its tokenizer.json."""
  return hashlib.sha256(('\n'.join(vocab) + '\n').encode('utf-8')).hexdigest()


def load_tokenizer(vocab_file: Optional[str] = None, tokenizer_json: Optional[str] = None,
                   do_lower_case: bool = True) -> WordPieceTokenizer:
  """Builds a `WordPieceTokenizer` from exactly one of `vocab_file` and `tokenizer_json`.

  Both are files; `vocab_assets.load_tokenizer_from_flags` also takes a directory that carries a
  vocabulary (a training model_dir, a SavedModel export).

  Example:
    tok = load_tokenizer(vocab_file="vocab.txt", do_lower_case=True)
  """
  if bool(vocab_file) == bool(tokenizer_json):
    raise ValueError(
        f'give exactly one of vocab_file and tokenizer_json; found vocab_file={vocab_file!r}, '
        f'tokenizer_json={tokenizer_json!r}')
  if tokenizer_json:
    return WordPieceTokenizer.from_tokenizer_json(tokenizer_json)
  return WordPieceTokenizer.from_vocab_file(vocab_file, do_lower_case)
