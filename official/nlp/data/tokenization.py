"""Subword tokenizers backed by the Rust `tokenizers` library: WordPiece, BPE, Unigram, WordLevel.

`WordPieceTokenizer` wraps a `tokenizers.Tokenizer` configured like Google BERT (BERT normalizer
with optional lower-casing and accent stripping, BERT pre-tokenizer, WordPiece with the `##`
continuation prefix). It is built from a `vocab.txt` (one token a line, the line number is the id)
or from a `tokenizer.json` with a WordPiece model and BERT's special tokens.

`SubwordTokenizer` (its base class) takes any Hugging Face `tokenizer.json` the `tokenizers` library
loads: byte-level BPE (GPT-2, RoBERTa, ModernBERT: `Ġ` marks a word after a space), SentencePiece
conversions (Unigram or BPE with `▁` word-start markers), WordLevel, WordPiece with other special
tokens. Neither adds special tokens by itself: the data pipeline places the tokens of the roles
`cls` and `sep`.

Special-token roles (`ROLES`: pad, unk, cls, sep, mask) of a `tokenizer.json`, first found wins:
  1. `special_tokens` given by the caller ({"mask": "<mask>", ...});
  2. `tokenizer_config.json` / `special_tokens_map.json` beside the file (Hugging Face's
     `cls_token`, `sep_token`, `mask_token`, `pad_token`, `unk_token`; a training model_dir's
     `tokenizer_config.json` carries the same keys);
  3. the post-processor: the special token before `$A` of a `TemplateProcessing` single template is
     `cls`, the one after it `sep` (`RobertaProcessing` / `BertProcessing`: their `cls` / `sep`);
  4. the model's `unk_token` / `unk_id`, the padding settings' `pad_token`;
  5. a conventional name among the special added tokens, then the vocabulary (`[MASK]`, `<mask>`).
`cls`, `sep` and `mask` are required (a ValueError names the file and the role); `pad` and `unk` may
be absent (byte-level BPE has no unknown token). A vocab.txt's roles are BERT's tokens by name.

Word boundaries (whole-word masking): `continuation_table()` is a per-id flag where the vocabulary
tells exactly whether a token continues a word: WordPiece's `##` (a BPE model's
`continuing_subword_prefix`), SentencePiece's `▁` word-start marker (when every text gets one at its
start), WordLevel (one token a word). Otherwise (byte-level BPE: a line's first word has no `Ġ`, and
`hello,` is two words) it is None and `encode_with_word_starts` gives per-token flags: a token
starts a word where it starts one of the pre-tokenizer's words (`Encoding.word_ids`).

Speed: ASCII lines of BERT's WordPiece and of byte-level BPE (GPT-2's pre-tokenizer regex, with a
normalizer that leaves ASCII unchanged or lower-cases it) are tokenized through an exact word ->
pieces cache; all other text goes through Rust.

Example:
  tok = WordPieceTokenizer.from_vocab_file("vocab.txt", do_lower_case=True)
  tok.tokenize("Hello world")             # ['hello', 'world']
  tok.encode_batch(["a line", "another"])  # [[id, id], [id]]
  bpe = load_tokenizer(tokenizer_json="ModernBERT-base/tokenizer.json")
  bpe.kind, bpe.mask_id                    # ('bpe', 50284)
"""

import hashlib
import json
import os
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

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
# The roles of special tokens, in the order of SPECIAL_TOKENS; BERT's token of each role names it
# in the records' metadata (`special_token_ids`), whatever the tokenizer's own token is.
ROLES = ('pad', 'unk', 'cls', 'sep', 'mask')
ROLE_TOKENS = dict(zip(ROLES, SPECIAL_TOKENS))
REQUIRED_ROLES = ('cls', 'sep', 'mask')
WORDPIECE, BPE, UNIGRAM, WORDLEVEL = 'wordpiece', 'bpe', 'unigram', 'wordlevel'
_MODEL_KINDS = {'WordPiece': WORDPIECE, 'BPE': BPE, 'Unigram': UNIGRAM, 'WordLevel': WORDLEVEL}
# Hugging Face's side files that name the special tokens (`<role>_token` keys).
SIDE_CONFIGS = ('special_tokens_map.json', 'tokenizer_config.json')
_CONVENTIONAL = {
    'pad': ('[PAD]', '<pad>', '<|padding|>', '<PAD>', '<|pad|>'),
    'unk': ('[UNK]', '<unk>', '<UNK>', '<|unk|>'),
    'cls': ('[CLS]', '<s>', '<cls>', '<CLS>'),
    'sep': ('[SEP]', '</s>', '<sep>', '<SEP>'),
    'mask': ('[MASK]', '<mask>', '<MASK>', '<|mask|>'),
}
SPIECE_MARKER = '\u2581'  # SentencePiece's word-start marker


# BERT's pre-tokenizer on ASCII text: runs of non-space non-punctuation characters, or one
# punctuation character (BERT counts every printable non-alphanumeric ASCII character as
# punctuation); "\n" marks a line end.
_ASCII_WORDS = re.compile(r'[^\s!-/:-@\[-`{-~]+|[!-/:-@\[-`{-~]|\n')
# GPT-2's byte-level pre-tokenizer regex on ASCII text (\p{L} is [A-Za-z] there, \p{N} [0-9]); a
# "\n" between stripped lines is a match of its own (`\s+`), the line end.
_ASCII_BYTE_LEVEL_WORDS = re.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")
# ASCII characters BERT's normalizer deletes (controls other than tab/newline/return), and that
# Python's and Rust's `\s` disagree on: such lines take the slow path.
_ASCII_CONTROL = re.compile(r'[\x00-\x08\x0b-\x1f\x7f]')
_MAX_CACHED_WORDS = 1 << 21
# Normalizers that leave ASCII text as it is (Lowercase: lower-cases it).
_ASCII_IDENTITY_NORMALIZERS = ('NFC', 'NFD', 'NFKC', 'NFKD')


class _AsciiWordCache:
  """Exact ids of ASCII lines through a word -> pieces cache.

  On ASCII text without control characters the normalizers this is used with only lower-case (or
  nothing), and the pre-tokenizer's split is reproduced by a regex (`pattern`: BERT's, or GPT-2's
  byte-level one); each distinct word is then encoded once by Rust (`encode_words`). Most words of
  a corpus repeat, so this is several times faster than encoding every line.

  Args:
    encode_words: words -> their piece ids, as the tokenizer's model encodes one pre-token.
    pattern: the pre-tokenizer's words on ASCII text; must match "\\n" alone between lines.
    lowercase: lower-case the text first.
    prefix: prepended to every line that does not start with it (byte-level BPE's
      `add_prefix_space`).
    trimmed_only: the pattern's "\n" between lines stands alone only when no whitespace is next
      to it (byte-level BPE): empty lines and lines with whitespace at an end must go elsewhere.
  """

  def __init__(self, encode_words: Callable[[List[str]], List[List[int]]],
               pattern: 're.Pattern[str]' = _ASCII_WORDS, lowercase: bool = False,
               prefix: str = '', trimmed_only: bool = False):
    self._encode_words = encode_words
    self._pattern = pattern
    self._lowercase = lowercase
    self._prefix = prefix
    self.trimmed_only = trimmed_only
    self._reset()

  def _reset(self) -> None:
    self._word_ids = {'\n': 0}  # word -> row of the piece table; row 0 (the line end) has no pieces
    self._piece_chunks = [np.zeros(0, np.int64)]
    self._length_chunks = [np.zeros(1, np.int64)]
    self._pieces = np.zeros(0, np.int64)
    self._piece_lengths = np.zeros(1, np.int64)
    self._piece_starts = np.zeros(1, np.int64)

  def _add_words(self, words: List[str]) -> None:
    ids = self._encode_words(words)
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

  def encode(self, lines: Sequence[str], word_starts: bool = False):
    """`(flat ids [total], tokens per line [len(lines)])` of ASCII lines without newlines; with
    `word_starts`, also `[total]` bool: the token is the first piece of a word."""
    prefix = self._prefix
    if prefix:
      lines = [line if line.startswith(prefix) else prefix + line for line in lines]
    text = '\n'.join(lines) + '\n'
    words = self._pattern.findall(text.lower() if self._lowercase else text)
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
    line_lengths = np.diff(line_ends, prepend=0)
    if not word_starts:
      return ids, line_lengths
    starts = np.zeros(ids.size, bool)
    firsts = np.cumsum(lengths) - lengths
    starts[firsts[lengths > 0]] = True
    return ids, line_lengths, starts


class _WordEncoder:
  """words -> their ids by a `tokenizers.Tokenizer` (a picklable callable: worker processes)."""

  def __init__(self, tokenizer: Tokenizer):
    self._tokenizer = tokenizer

  def __call__(self, words: List[str]) -> List[List[int]]:
    return [e.ids for e in self._tokenizer.encode_batch_fast(words, add_special_tokens=False)]


def _ascii_lowercase(normalizer: Optional[Mapping[str, Any]]) -> Optional[bool]:
  """Whether a normalizer lower-cases ASCII text (False: leaves it unchanged); None when it may do
  anything else to it."""
  if not normalizer:
    return False
  kind = normalizer.get('type')
  if kind in _ASCII_IDENTITY_NORMALIZERS:
    return False
  if kind == 'Lowercase':
    return True
  if kind == 'Sequence':
    found = [_ascii_lowercase(n) for n in normalizer.get('normalizers') or []]
    return None if None in found else any(found)
  return None


def _byte_level_of(pre_tokenizer: Optional[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
  """The ByteLevel pre-tokenizer (alone, or alone in a Sequence) with GPT-2's regex, or None."""
  if pre_tokenizer and pre_tokenizer.get('type') == 'Sequence':
    parts = pre_tokenizer.get('pretokenizers') or []
    pre_tokenizer = parts[0] if len(parts) == 1 else None
  if pre_tokenizer and pre_tokenizer.get('type') == 'ByteLevel' and \
      pre_tokenizer.get('use_regex', True):
    return pre_tokenizer
  return None


def _ascii_cache_for(tokenizer: Tokenizer, spec: Dict[str, Any]) -> Optional[_AsciiWordCache]:
  """The ASCII fast path if the tokenizer (`spec`: its JSON) is exactly BERT's pipeline or a
  byte-level BPE with GPT-2's regex (None: all goes to Rust)."""
  normalizer = spec.get('normalizer') or {}
  pre_tokenizer = spec.get('pre_tokenizer') or {}
  model = spec['model']
  if (normalizer.get('type') == 'BertNormalizer' and normalizer.get('clean_text')
      and pre_tokenizer.get('type') == 'BertPreTokenizer' and model.get('type') == 'WordPiece'):
    return _AsciiWordCache(_WordEncoder(tokenizer), _ASCII_WORDS, bool(normalizer.get('lowercase')))
  byte_level = _byte_level_of(pre_tokenizer)
  lowercase = _ascii_lowercase(normalizer)
  if (model.get('type') != 'BPE' or model.get('dropout') or byte_level is None
      or lowercase is None):
    return None
  # Each word alone through the same model: no normalizer, the byte mapping without a split.
  spec.update(normalizer=None, post_processor=None, truncation=None, padding=None,
              pre_tokenizer={'type': 'ByteLevel', 'add_prefix_space': False,
                             'trim_offsets': False, 'use_regex': False})
  words_tokenizer = Tokenizer.from_str(json.dumps(spec))
  return _AsciiWordCache(_WordEncoder(words_tokenizer), _ASCII_BYTE_LEVEL_WORDS, lowercase,
                         ' ' if byte_level.get('add_prefix_space') else '', trimmed_only=True)


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


def _vocab_of(tokenizer: Tokenizer, source: str) -> List[str]:
  """The tokens of a `tokenizers.Tokenizer` by id (added tokens included); holes raise."""
  token_to_id = tokenizer.get_vocab(with_added_tokens=True)
  vocab = [''] * len(token_to_id)
  for token, index in token_to_id.items():
    if index >= len(vocab):
      raise ValueError(
          f'tokenizer_json {source!r}: ids are not contiguous (token {token!r} has id '
          f'{index}, vocabulary size {len(vocab)}); expected ids 0 to {len(vocab) - 1}')
    vocab[index] = token
  return vocab


def tokenizer_json_vocab(tokenizer_json: str) -> List[str]:
  """The tokens (index = id) of a Hugging Face `tokenizer.json`, added tokens included.

  Raises:
    FileNotFoundError: no such file.
    ValueError: a file `tokenizers` cannot load, or ids with holes.

  Example:
    >>> tokenizer_json_vocab('ModernBERT-base/tokenizer.json')[:2]
    ['<|endoftext|>', '<|padding|>']
  """
  if not os.path.isfile(tokenizer_json):
    raise FileNotFoundError(f'tokenizer_json: no such file: {tokenizer_json!r}')
  return _vocab_of(_read_tokenizer(tokenizer_json)[0], tokenizer_json)


def _read_tokenizer(tokenizer_json: str) -> Tuple[Tokenizer, str]:
  """(the tokenizer, the file's text); a file `tokenizers` cannot load is a ValueError."""
  with open(tokenizer_json, encoding='utf-8') as f:
    text = f.read()
  try:
    return Tokenizer.from_str(text), text
  except Exception as e:  # pylint: disable=broad-except  (tokenizers raises plain Exception)
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    raise ValueError(f'tokenizer_json {tokenizer_json!r}: not a tokenizer the tokenizers '
                     f'library loads ({first}); expected a Hugging Face tokenizer.json') from None


def _side_config_tokens(directory: str) -> Dict[str, str]:
  """`<role>_token` of Hugging Face's `special_tokens_map.json` / `tokenizer_config.json` in
  `directory` (the first file naming a role wins; unreadable files are skipped)."""
  found: Dict[str, str] = {}
  for name in SIDE_CONFIGS:
    path = os.path.join(directory, name)
    if not os.path.isfile(path):
      continue
    try:
      with open(path, encoding='utf-8') as f:
        config = json.load(f)
    except (OSError, ValueError):
      continue
    if not isinstance(config, dict):
      continue
    for role in ROLES:
      value = config.get(f'{role}_token')
      if isinstance(value, dict):  # a serialized AddedToken
        value = value.get('content')
      if isinstance(value, str) and value and role not in found:
        found[role] = value
  return found


def _post_processor_tokens(processor: Optional[Mapping[str, Any]]) -> Dict[str, str]:
  """`cls` / `sep` of a post-processor: the special tokens around `$A` of a template, or the `cls`
  and `sep` of `RobertaProcessing` / `BertProcessing` (searched inside a `Sequence`)."""
  if not processor:
    return {}
  kind = processor.get('type')
  if kind == 'Sequence':
    found: Dict[str, str] = {}
    for part in processor.get('processors') or []:
      for role, token in _post_processor_tokens(part).items():
        found.setdefault(role, token)
    return found
  if kind in ('RobertaProcessing', 'BertProcessing'):
    return {role: processor[role][0] for role in ('cls', 'sep')
            if isinstance(processor.get(role), list) and processor[role]}
  if kind != 'TemplateProcessing':
    return {}
  items = processor.get('single') or []
  sequence = [i for i, item in enumerate(items) if 'Sequence' in item]
  if not sequence:
    return {}
  found = {}
  before, after = sequence[0] - 1, sequence[0] + 1
  if before >= 0 and 'SpecialToken' in items[before]:
    found['cls'] = items[before]['SpecialToken']['id']
  if after < len(items) and 'SpecialToken' in items[after]:
    found['sep'] = items[after]['SpecialToken']['id']
  return found


def special_token_roles(tokenizer: Tokenizer, source: str,
                        special_tokens: Optional[Mapping[str, str]] = None,
                        side_config_dir: Optional[str] = None) -> Dict[str, Optional[str]]:
  """The token of each role (`ROLES`) of a `tokenizers.Tokenizer` (module docstring, first wins).

  Args:
    tokenizer: the tokenizer.
    source: its file, for messages.
    special_tokens: role -> token given by the caller (wins over everything).
    side_config_dir: where Hugging Face's `tokenizer_config.json` / `special_tokens_map.json`
      may be (None: not looked for).

  Returns:
    role -> token (None for an absent optional role), in the order of `ROLES`.

  Raises:
    ValueError: an unknown role, a token not in the vocabulary, or no token for a required role
      (`REQUIRED_ROLES`), naming the file and the role.

  Example:
    >>> special_token_roles(Tokenizer.from_file('tokenizer.json'), 'tokenizer.json')['mask']
    '<mask>'
  """
  spec = json.loads(tokenizer.to_str())
  token_to_id = tokenizer.get_vocab(with_added_tokens=True)
  unknown = sorted(set(special_tokens or {}) - set(ROLES))
  if unknown:
    raise ValueError(f'special_tokens: unknown role(s) {unknown} for {source!r}; expected some of '
                     f'{list(ROLES)}')
  sources = [('special_tokens', dict(special_tokens or {}))]
  if side_config_dir:
    sources.append(('tokenizer_config.json', _side_config_tokens(side_config_dir)))
  sources.append(('post_processor', _post_processor_tokens(spec.get('post_processor'))))
  model, padding = spec.get('model') or {}, spec.get('padding') or {}
  implied: Dict[str, str] = {}
  unk = model.get('unk_token')
  if isinstance(model.get('unk_id'), int) and model['unk_id'] < len(model.get('vocab') or []):
    unk = model['vocab'][model['unk_id']][0]  # Unigram: [piece, score] pairs
  if isinstance(unk, str) and unk:
    implied['unk'] = unk
  if isinstance(padding.get('pad_token'), str):
    implied['pad'] = padding['pad_token']
  sources.append(('model', implied))
  specials = [t['content'] for t in spec.get('added_tokens') or [] if t.get('special')]
  roles: Dict[str, Optional[str]] = {}
  for role in ROLES:
    token = next((found[role] for _, found in sources if found.get(role)), None)
    if token is None:
      names = _CONVENTIONAL[role]
      token = next((t for t in names if t in specials), None) or next(
          (t for t in names if t in token_to_id), None)
    if token is not None and token not in token_to_id:
      where = next(name for name, found in sources if found.get(role) == token)
      raise ValueError(f'tokenizer_json {source!r}: the {role} token {token!r} (from {where}) is '
                       'not in its vocabulary; expected a token of the tokenizer')
    if token is None and role in REQUIRED_ROLES:
      raise ValueError(
          f'tokenizer_json {source!r}: no {role} token; expected a special token such as '
          f'{" or ".join(_CONVENTIONAL[role][:2])}, a post-processor naming it, or '
          f'tokenizer_config.json\'s {role}_token (or pass special_tokens={{"{role}": ...}})')
    roles[role] = token
  return roles


def _continuation_prefix(model: Mapping[str, Any]) -> Optional[str]:
  prefix = model.get('continuing_subword_prefix')
  return prefix if isinstance(prefix, str) and prefix else None


def _spiece_marker(spec: Mapping[str, Any]) -> Tuple[Optional[str], bool]:
  """(SentencePiece's word-start marker when the tokenizer uses one, whether every text gets one at
  its start): a Metaspace pre-tokenizer, or a normalizer replacing spaces with it."""
  def parts(node, key):
    if not node:
      return []
    if node.get('type') == 'Sequence':
      return [p for child in node.get(key) or [] for p in parts(child, key)]
    return [node]
  for pre in parts(spec.get('pre_tokenizer'), 'pretokenizers'):
    if pre.get('type') == 'Metaspace':
      scheme = pre.get('prepend_scheme', 'always' if pre.get('add_prefix_space', True) else 'never')
      return pre.get('replacement', SPIECE_MARKER), scheme in ('always', 'first')
  marker, prepended = None, False
  for norm in parts(spec.get('normalizer'), 'normalizers'):
    if norm.get('type') == 'Replace' and norm.get('content') == SPIECE_MARKER:
      marker = SPIECE_MARKER
    if norm.get('type') == 'Prepend' and norm.get('prepend') == SPIECE_MARKER:
      prepended = True
  return marker, marker is not None and prepended


class SubwordTokenizer:
  """Any `tokenizers.Tokenizer` with its vocabulary as a list and its special-token roles.

  Attributes:
    vocab: the tokens, index = id.
    token_to_id: token -> id.
    kind: the model: 'wordpiece', 'bpe', 'unigram' or 'wordlevel'.
    special_tokens: role (`ROLES`) -> token, None for an absent optional role.
    do_lower_case: whether the normalizer lower-cases (None when that is not BERT's setting).
    source: the file the vocabulary came from.
    tokenizer_json: the `tokenizer.json` text (as read from the file), None for a vocab.txt.

  Example:
    >>> tok = SubwordTokenizer.from_tokenizer_json('roberta/tokenizer.json')
    >>> tok.special_tokens['cls'], tok.cls_id
    ('<s>', 0)
  """

  def __init__(self, tokenizer: Tokenizer, vocab: List[str], source: str,
               do_lower_case: Optional[bool], special_tokens: Mapping[str, Optional[str]],
               tokenizer_json: Optional[str] = None, kind: Optional[str] = None):
    spec = json.loads(tokenizer.to_str())
    tokenizer.no_truncation()  # data creation needs every token: no settings of a tokenizer.json
    tokenizer.no_padding()
    self._tokenizer = tokenizer
    self.vocab = vocab
    self.token_to_id = {t: i for i, t in enumerate(vocab)}
    self.source = source
    self.do_lower_case = do_lower_case
    self.kind = kind or _MODEL_KINDS.get(spec['model'].get('type'), spec['model'].get('type'))
    self.special_tokens = {role: special_tokens.get(role) for role in ROLES}
    self.tokenizer_json = tokenizer_json
    self._spec_model = spec['model']
    self._spiece = _spiece_marker(spec)
    self._ascii_cache = _ascii_cache_for(tokenizer, spec)
    # Texts with an added token (e.g. [MASK] of a tokenizer.json) go to Rust: it matches them whole.
    self._added_tokens = [t.content for t in tokenizer.get_added_tokens_decoder().values()]

  @classmethod
  def from_tokenizer_json(cls, tokenizer_json: str,
                          special_tokens: Optional[Mapping[str, str]] = None
                          ) -> 'SubwordTokenizer':
    """Builds the tokenizer of any Hugging Face `tokenizer.json` (a `WordPieceTokenizer` for BERT's
    WordPiece with BERT's special tokens).

    Args:
      tokenizer_json: the file; `tokenizer_config.json` / `special_tokens_map.json` beside it may
        name the special tokens.
      special_tokens: role -> token, over what the files say (e.g. `{"mask": "<mask>"}`).

    Raises:
      FileNotFoundError: no such file.
      ValueError: a file `tokenizers` cannot load, ids with holes, or no token for a required
        role (naming the file and the role).

    Example:
      >>> SubwordTokenizer.from_tokenizer_json('ModernBERT-base/tokenizer.json').kind
      'bpe'
    """
    if not os.path.isfile(tokenizer_json):
      raise FileNotFoundError(f'tokenizer_json: no such file: {tokenizer_json!r}')
    tokenizer, text = _read_tokenizer(tokenizer_json)
    spec = json.loads(tokenizer.to_str())
    vocab = _vocab_of(tokenizer, tokenizer_json)
    if (spec['model'].get('type') == 'WordPiece' and not special_tokens
        and all(t in tokenizer.get_vocab(with_added_tokens=True) for t in SPECIAL_TOKENS)):
      return WordPieceTokenizer.from_tokenizer_json(tokenizer_json)
    roles = special_token_roles(tokenizer, tokenizer_json, special_tokens,
                                os.path.dirname(os.path.abspath(tokenizer_json)))
    normalizer = spec.get('normalizer') or {}
    do_lower_case = normalizer.get('lowercase') if normalizer.get('type') == 'BertNormalizer' \
        else None
    return cls(tokenizer, vocab, tokenizer_json, do_lower_case, roles, text)

  @property
  def vocab_size(self) -> int:
    return len(self.vocab)

  @property
  def backend(self) -> Tokenizer:
    """The underlying `tokenizers.Tokenizer`."""
    return self._tokenizer

  def _role_id(self, role: str) -> Optional[int]:
    token = self.special_tokens.get(role)
    return None if token is None else self.token_to_id[token]

  @property
  def cls_id(self) -> int:
    """Id of the token that starts a sequence (`[CLS]`, `<s>`)."""
    return self._role_id('cls')

  @property
  def sep_id(self) -> int:
    """Id of the token that ends a segment (`[SEP]`, `</s>`)."""
    return self._role_id('sep')

  @property
  def mask_id(self) -> int:
    """Id of the mask token (`[MASK]`, `<mask>`)."""
    return self._role_id('mask')

  @property
  def pad_id(self) -> Optional[int]:
    """Id of the padding token, None when the tokenizer has none."""
    return self._role_id('pad')

  @property
  def unk_id(self) -> Optional[int]:
    """Id of the unknown token, None when the tokenizer has none (byte-level BPE)."""
    return self._role_id('unk')

  def special_token_ids(self) -> Dict[str, int]:
    """BERT's token of each role present -> the id of this tokenizer's token of that role, in the
    order of `SPECIAL_TOKENS` (the records' metadata `special_token_ids`).

    Example:
      >>> roberta.special_token_ids()
      {'[PAD]': 1, '[UNK]': 3, '[CLS]': 0, '[SEP]': 2, '[MASK]': 50264}
    """
    return {ROLE_TOKENS[role]: self.token_to_id[token]
            for role, token in self.special_tokens.items() if token is not None}

  def tokenize(self, text: str) -> List[str]:
    """Splits one text into tokens (no special tokens added)."""
    return self._tokenizer.encode(text, add_special_tokens=False).tokens

  def encode(self, text: str) -> List[int]:
    """Token ids of one text (special tokens written in it are matched; none added)."""
    return self._tokenizer.encode(text, add_special_tokens=False).ids

  def encode_batch(self, texts: Sequence[str]) -> List[List[int]]:
    """Token ids of many texts at once (Rust, multi-threaded); no special tokens added."""
    encodings = self._tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
    return [e.ids for e in encodings]

  def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
    """The text of `ids` through the tokenizer's decoder (`Ġ` -> space, `##` joined, ...)."""
    return self._tokenizer.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

  def continuation_table(self) -> Optional[np.ndarray]:
    """`[vocab_size]` bool: the token continues the word of the token before it, where the
    vocabulary tells that exactly (module docstring); None where only the text does.

    Example:
      >>> wordpiece.continuation_table()[wordpiece.token_to_id['##ing']]
      True
    """
    model = self._spec_model
    if self.kind == WORDLEVEL:
      return np.zeros(len(self.vocab), bool)
    prefix = _continuation_prefix(model)
    if self.kind == WORDPIECE and prefix is None:
      prefix = CONTINUATION_PREFIX
    if prefix is not None and not model.get('end_of_word_suffix'):
      return np.array([t.startswith(prefix) for t in self.vocab], bool)
    marker, prepended = self._spiece
    if marker is not None and prepended:
      # An added special token in the text is a word of its own; the unknown token is a piece.
      specials = {t for role, t in self.special_tokens.items() if t is not None and role != 'unk'}
      return np.array([not t.startswith(marker) and t not in specials for t in self.vocab], bool)
    return None

  def _fast_split(self, texts: List[str]) -> List[bool]:
    """Which texts the ASCII word cache encodes exactly."""
    if self._ascii_cache is None:
      return [False] * len(texts)
    if self._ascii_cache.trimmed_only:
      fast = [t.isascii() and t != '' and not t[0].isspace() and not t[-1].isspace()
              for t in texts]
    else:
      fast = [t.isascii() for t in texts]
    joined = '\n'.join(t for t, f in zip(texts, fast) if f)
    if (_ASCII_CONTROL.search(joined) or any(a in joined for a in self._added_tokens)
        or joined.count('\n') != sum(fast) - 1):
      fast = [f and not _ASCII_CONTROL.search(t) and '\n' not in t
              and not any(a in t for a in self._added_tokens) for t, f in zip(texts, fast)]
    return fast

  def encode_to_arrays(self, texts: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """Token ids of many texts as `(flat ids [total] int64, tokens per text [len(texts)] int64)`.

    Same ids as `encode_batch`; ASCII texts go through an exact word cache where the tokenizer
    allows (much faster), others through Rust.
    """
    ids, lengths, _ = self._encode_arrays(list(texts), False)
    return ids, lengths

  def encode_with_word_starts(self, texts: Sequence[str]
                              ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`encode_to_arrays` plus `[total]` bool: the token starts a word (the first token of a
    pre-tokenizer word, `Encoding.word_ids`; with SentencePiece's marker also a token starting
    with it; an added token is a word of its own).

    Example:
      >>> ids, lengths, starts = tok.encode_with_word_starts(['Hello, world'])
      >>> starts.tolist()   # Hello , Ġworld
      [True, True, True]
    """
    return self._encode_arrays(list(texts), True)

  def _slow_word_starts(self, texts: List[str]) -> Tuple[List[List[int]], np.ndarray]:
    encodings = self._tokenizer.encode_batch(texts, add_special_tokens=False)
    marker = self._spiece[0]
    starts: List[bool] = []
    for encoding in encodings:
      previous = object()
      for word, token in zip(encoding.word_ids, encoding.tokens):
        starts.append(word is None or word != previous
                      or (marker is not None and token.startswith(marker)))
        previous = word
    return [e.ids for e in encodings], np.array(starts, bool)

  def _encode_arrays(self, texts: List[str], word_starts: bool):
    fast = self._fast_split(texts)
    fast_texts = [t for t, f in zip(texts, fast) if f]
    slow_texts = [t for t, f in zip(texts, fast) if not f]
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool))
    fast_result = (self._ascii_cache.encode(fast_texts, True) if word_starts else
                   self._ascii_cache.encode(fast_texts) + (None,)) if fast_texts else empty
    fast_ids, fast_lengths, fast_starts = fast_result
    if not slow_texts:
      return fast_ids, fast_lengths, fast_starts
    if word_starts:
      slow_ids, slow_starts = self._slow_word_starts(slow_texts)
    else:
      slow_ids, slow_starts = self.encode_batch(slow_texts), None
    slow_lengths = np.fromiter(map(len, slow_ids), np.int64, count=len(slow_ids))
    slow_flat = np.fromiter((i for row in slow_ids for i in row), np.int64,
                            count=int(slow_lengths.sum()))
    if not fast_texts:
      return slow_flat, slow_lengths, slow_starts
    fast_mask = np.array(fast, bool)
    lengths = np.zeros(len(texts), np.int64)
    lengths[fast_mask] = fast_lengths
    lengths[~fast_mask] = slow_lengths
    starts = np.zeros(len(texts), np.int64)
    starts[fast_mask] = np.cumsum(fast_lengths) - fast_lengths
    starts[~fast_mask] = fast_ids.size + np.cumsum(slow_lengths) - slow_lengths
    ids = gather_segments(np.concatenate([fast_ids, slow_flat]), starts, lengths)
    flags = None
    if word_starts:
      flags = gather_segments(np.concatenate([fast_starts, slow_starts]), starts, lengths)
    return ids, lengths, flags

  def convert_tokens_to_ids(self, tokens: Sequence[str]) -> List[int]:
    """Ids of tokens; an unknown token raises KeyError naming it."""
    try:
      return [self.token_to_id[t] for t in tokens]
    except KeyError as e:
      raise KeyError(f'token {e.args[0]!r} is not in the vocabulary {self.source!r}') from None

  def convert_ids_to_tokens(self, ids: Sequence[int]) -> List[str]:
    """Tokens of ids."""
    return [self.vocab[i] for i in ids]

  def tokenizer_json_sha256(self) -> Optional[str]:
    """sha256 of the `tokenizer.json` text (UTF-8), None for a vocab.txt."""
    if self.tokenizer_json is None:
      return None
    return hashlib.sha256(self.tokenizer_json.encode('utf-8')).hexdigest()

  def metadata_fields(self) -> Dict[str, Any]:
    """What records metadata stores of this tokenizer, so that training can give the model_dir its
    tokenizer (`vocab_assets.write_model_dir_vocab`): the tokens (`"vocab"`), the kind, the token
    of each role, and the `tokenizer.json` itself (its text and sha256)."""
    return {'vocab_size': self.vocab_size, 'vocab_sha256': self.vocab_sha256(),
            'vocab_source': os.path.basename(self.source), 'do_lower_case': self.do_lower_case,
            'tokenizer_type': self.kind, 'special_tokens': dict(self.special_tokens),
            'vocab': list(self.vocab), 'tokenizer_json_sha256': self.tokenizer_json_sha256(),
            'tokenizer_json': self.tokenizer_json}

  def vocab_sha256(self) -> str:
    """sha256 of the vocabulary as a `vocab.txt` (tokens joined by newlines, plus a final one)."""
    return vocab_sha256(self.vocab)


class WordPieceTokenizer(SubwordTokenizer):
  """A BERT WordPiece tokenizer (Rust `tokenizers`) with the vocabulary as a list.

  Its special tokens are BERT's, by name; its records' metadata is WordPiece's (no
  `tokenizer_json`: training writes a `vocab.txt`).

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
    super().__init__(tokenizer, vocab, source, do_lower_case, ROLE_TOKENS, kind=WORDPIECE)

  @classmethod
  def from_vocab_file(cls, vocab_file: str, do_lower_case: bool = True) -> 'WordPieceTokenizer':
    """Builds the tokenizer from a BERT `vocab.txt` (one token a line; line number = id)."""
    vocab = read_vocab(vocab_file)
    tokenizer = bert_wordpiece_tokenizer({t: i for i, t in enumerate(vocab)}, do_lower_case)
    return cls(tokenizer, vocab, vocab_file, do_lower_case)

  @classmethod
  def from_tokenizer_json(cls, tokenizer_json: str,
                          special_tokens: Optional[Mapping[str, str]] = None
                          ) -> 'WordPieceTokenizer':
    """Builds the tokenizer from a Hugging Face `tokenizer.json` with a WordPiece model (other
    models: `SubwordTokenizer.from_tokenizer_json`)."""
    if not os.path.isfile(tokenizer_json):
      raise FileNotFoundError(f'tokenizer_json: no such file: {tokenizer_json!r}')
    if special_tokens:
      raise ValueError('WordPieceTokenizer: special_tokens are BERT\'s by name; expected none '
                       '(SubwordTokenizer.from_tokenizer_json takes other special tokens)')
    tokenizer = Tokenizer.from_file(tokenizer_json)
    spec = json.loads(tokenizer.to_str())
    model_type = spec.get('model', {}).get('type')
    if model_type != 'WordPiece':
      raise ValueError(
          f"tokenizer_json {tokenizer_json!r}: model type is {model_type!r}; expected 'WordPiece' "
          '(load other models with SubwordTokenizer.from_tokenizer_json or load_tokenizer)')
    vocab = _vocab_of(tokenizer, tokenizer_json)
    normalizer = spec.get('normalizer') or {}
    is_bert = normalizer.get('type') == 'BertNormalizer'
    do_lower_case = normalizer.get('lowercase') if is_bert else None
    return cls(tokenizer, vocab, tokenizer_json, do_lower_case)

  def continuation_table(self) -> np.ndarray:
    """`[vocab_size]` bool: the token starts with `##`."""
    return np.array([t.startswith(CONTINUATION_PREFIX) for t in self.vocab], bool)

  def metadata_fields(self) -> Dict[str, Any]:
    """What records metadata stores of this tokenizer, its tokens included (`"vocab"`), so that
    training can give the model_dir its vocabulary (`vocab_assets.write_model_dir_vocab`)."""
    return {'vocab_size': self.vocab_size, 'vocab_sha256': self.vocab_sha256(),
            'vocab_source': os.path.basename(self.source), 'do_lower_case': self.do_lower_case,
            'vocab': list(self.vocab)}


def vocab_sha256(vocab: Sequence[str]) -> str:
  """sha256 hex digest of `vocab` as a `vocab.txt`; equal for a vocab.txt and its tokenizer.json."""
  return hashlib.sha256(('\n'.join(vocab) + '\n').encode('utf-8')).hexdigest()


def load_tokenizer(vocab_file: Optional[str] = None, tokenizer_json: Optional[str] = None,
                   do_lower_case: bool = True,
                   special_tokens: Optional[Mapping[str, str]] = None) -> SubwordTokenizer:
  """Builds the tokenizer of exactly one of `vocab_file` and `tokenizer_json`.

  A `vocab.txt` gives a `WordPieceTokenizer`; a `tokenizer.json` of any model a
  `SubwordTokenizer` (a `WordPieceTokenizer` for BERT's WordPiece). Both are files;
  `vocab_assets.load_tokenizer_from_flags` also takes a directory that carries a vocabulary (a
  training model_dir, a SavedModel export).

  Args:
    vocab_file: a BERT `vocab.txt`.
    tokenizer_json: a Hugging Face `tokenizer.json`.
    do_lower_case: lower-case (a vocab.txt only).
    special_tokens: role -> token of a tokenizer.json (module docstring), e.g. {"mask": "<mask>"}.

  Example:
    tok = load_tokenizer(vocab_file="vocab.txt", do_lower_case=True)
    bpe = load_tokenizer(tokenizer_json="roberta/tokenizer.json")
  """
  if bool(vocab_file) == bool(tokenizer_json):
    raise ValueError(
        f'give exactly one of vocab_file and tokenizer_json; found vocab_file={vocab_file!r}, '
        f'tokenizer_json={tokenizer_json!r}')
  if tokenizer_json:
    return SubwordTokenizer.from_tokenizer_json(tokenizer_json, special_tokens)
  return WordPieceTokenizer.from_vocab_file(vocab_file, do_lower_case)
