"""Google BERT's Python tokenizer, as Model Garden's data scripts call it (`FullTokenizer`).

Pure Python, character for character the algorithm of the original BERT release:
`BasicTokenizer` cleans the text (drops NUL, U+FFFD and control characters, maps whitespace to a
space), puts spaces around CJK ideographs, splits at whitespace, optionally lower-cases and strips
accents (NFD, drop category Mn), and splits punctuation off; `WordpieceTokenizer` then splits each
word greedily into the longest vocabulary pieces (`##` marks a continuation), a word it cannot
cover becoming `[UNK]`. `FullTokenizer` chains the two. The SentencePiece helpers
(`FullSentencePieceTokenizer`, `encode_pieces`, ...) need the `sentencepiece` package.

This module is what `official.nlp.tools.tokenization` re-exports. For bulk data creation
`official.nlp.data.tokenization.WordPieceTokenizer` (Rust `tokenizers`) is much faster; the two
agree on ordinary text, this one is the reference for every corner case (Unicode categories come
from Python's `unicodedata`).

Example:
  >>> tokenizer = FullTokenizer('vocab.txt', do_lower_case=True)
  >>> tokenizer.tokenize('UNwant\u00e9d,running')
  ['un', '##want', '##ed', ',', 'runn', '##ing']
  >>> tokenizer.convert_tokens_to_ids(['un', '##want'])
  [7, 4]
"""

import collections
import os
import re
import unicodedata
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from official.common import file_utils
from official.nlp.data.tokenization import CONTINUATION_PREFIX
from official.nlp.data.tokenization import UNK_TOKEN

# SentencePiece marks the start of a word with this character (U+2581).
SPIECE_UNDERLINE = '\u2581'

# Google's released checkpoints whose casing is known from their directory name.
_UNCASED_CHECKPOINTS = ('uncased_L-24_H-1024_A-16', 'uncased_L-12_H-768_A-12',
                        'multilingual_L-12_H-768_A-12', 'chinese_L-12_H-768_A-12')
_CASED_CHECKPOINTS = ('cased_L-12_H-768_A-12', 'cased_L-24_H-1024_A-16',
                      'multi_cased_L-12_H-768_A-12')
_CHECKPOINT_NAME = re.compile(r'^.*?([A-Za-z0-9_-]+)/bert_model.ckpt')

# Code point ranges (inclusive) that BERT treats as CJK ideographs: each becomes a word of its own.
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))

Text = Union[str, bytes]


def validate_case_matches_checkpoint(do_lower_case: bool, init_checkpoint: Optional[str]) -> None:
  """Raises when `do_lower_case` contradicts the casing of a Google BERT checkpoint's name.

  Only Google's released checkpoints (`.../uncased_L-12_H-768_A-12/bert_model.ckpt` and the like)
  are recognised; any other path passes.

  Args:
    do_lower_case: the casing the data is tokenized with.
    init_checkpoint: the checkpoint path (None or '' passes).

  Raises:
    ValueError: an uncased checkpoint with `do_lower_case=False`, or a cased one with True.

  Example:
    >>> validate_case_matches_checkpoint(True, 'gs://b/uncased_L-12_H-768_A-12/bert_model.ckpt')
  """
  if not init_checkpoint:
    return
  match = _CHECKPOINT_NAME.match(init_checkpoint)
  if match is None:
    return
  name = match.group(1)
  if name in _UNCASED_CHECKPOINTS and not do_lower_case:
    found, kind, expected = False, 'lowercased', True
  elif name in _CASED_CHECKPOINTS and do_lower_case:
    found, kind, expected = True, 'cased', False
  else:
    return
  raise ValueError(
      f'do_lower_case={found} does not fit init_checkpoint={init_checkpoint!r}: {name!r} is a '
      f'{kind} model, so expected do_lower_case={expected} (the casing it was pretrained with)')


def convert_to_unicode(text: Text) -> str:
  """`text` as `str`; bytes are decoded as UTF-8, invalid sequences dropped.

  Raises:
    ValueError: `text` is neither str nor bytes (naming its type).
  """
  if isinstance(text, str):
    return text
  if isinstance(text, bytes):
    return text.decode('utf-8', 'ignore')
  raise ValueError(f'text: expected str or bytes, found {type(text).__name__}')


def printable_text(text: Text) -> str:
  """`text` as a `str` for printing or logging (the same conversion as `convert_to_unicode`)."""
  return convert_to_unicode(text)


def _read_bytes(path: str, argument: str) -> bytes:
  """The bytes of a local file or a `tf.io.gfile` URL; FileNotFoundError names `argument`."""
  if file_utils.is_remote(path):
    # Function-level: keeps TensorFlow out of the data-creation workers; a URL needs tf.io.gfile.
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    with tf.io.gfile.GFile(path, 'rb') as f:
      return f.read()
  if not os.path.isfile(path):
    raise FileNotFoundError(f'{argument}: no such file: {path!r}')
  with open(path, 'rb') as f:
    return f.read()


def load_vocab(vocab_file: str) -> 'collections.OrderedDict[str, int]':
  """token -> id of a `vocab.txt` (one token a line, id = line number, surrounding space stripped).

  As in Google BERT: lines end at `\\n` only, a blank line is the token '' (it still takes an id),
  and a repeated token keeps the id of its last line.

  Args:
    vocab_file: a local path or a `tf.io.gfile` URL.

  Raises:
    FileNotFoundError: a local `vocab_file` that does not exist.

  Example:
    >>> load_vocab('vocab.txt')['[UNK]']
    100
  """
  text = _read_bytes(vocab_file, 'vocab_file').decode('utf-8', 'ignore')
  lines = text.split('\n')
  if lines[-1] == '':  # the final newline ends the last line, it does not start a new one
    lines.pop()
  vocab = collections.OrderedDict()
  for index, line in enumerate(lines):
    vocab[line.strip()] = index
  return vocab


def convert_by_vocab(vocab: Mapping[Any, Any], items: Iterable[Any]) -> List[Any]:
  """`[vocab[item] for item in items]`: tokens to ids with a vocab, ids to tokens with its inverse.

  Raises:
    KeyError: an item missing from `vocab`, naming it.
  """
  output = []
  for item in items:
    try:
      output.append(vocab[item])
    except KeyError:
      raise KeyError(f'{item!r} is not in the vocabulary ({len(vocab)} entries)') from None
  return output


def convert_tokens_to_ids(vocab: Mapping[str, int], tokens: Iterable[str]) -> List[int]:
  """Ids of `tokens` in `vocab` (token -> id); see `convert_by_vocab`."""
  return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab: Mapping[int, str], ids: Iterable[int]) -> List[str]:
  """Tokens of `ids` with `inv_vocab` (id -> token); see `convert_by_vocab`."""
  return convert_by_vocab(inv_vocab, ids)


def whitespace_tokenize(text: str) -> List[str]:
  """`text` split at runs of whitespace (`str.split()`), [] for blank text."""
  return text.split()


def _is_whitespace(char: str) -> bool:
  """Space, tab, newline, carriage return, or a Unicode space separator (Zs)."""
  return char in ' \t\n\r' or unicodedata.category(char) == 'Zs'


def _is_control(char: str) -> bool:
  """A control or format character (Cc, Cf), tab, newline and carriage return excepted."""
  if char in '\t\n\r':
    return False
  return unicodedata.category(char) in ('Cc', 'Cf')


def _is_punctuation(char: str) -> bool:
  """Any printable ASCII character that is not a letter or digit, or Unicode punctuation (P*)."""
  cp = ord(char)
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(char).startswith('P')


def _is_cjk(cp: int) -> bool:
  return any(low <= cp <= high for low, high in _CJK_RANGES)


class BasicTokenizer:
  """Cleans text and splits it into words (and punctuation), before WordPiece.

  Args:
    do_lower_case: lower-case and strip accents (uncased models).
    split_on_punc: make every punctuation character a word of its own (BERT's default; False
      keeps `hello!how` whole, which eases detokenization).

  Example:
    >>> BasicTokenizer().tokenize(' \\tHeLLo!how  \\n Are yoU?  ')
    ['hello', '!', 'how', 'are', 'you', '?']
  """

  def __init__(self, do_lower_case: bool = True, split_on_punc: bool = True):
    self.do_lower_case = do_lower_case
    self.split_on_punc = split_on_punc

  def tokenize(self, text: Text) -> List[str]:
    """The words of `text` (str or UTF-8 bytes)."""
    text = self._tokenize_chinese_chars(self._clean_text(convert_to_unicode(text)))
    words = []
    for word in whitespace_tokenize(text):
      if self.do_lower_case:
        word = self._run_strip_accents(word.lower())
      if self.split_on_punc:
        words.extend(self._run_split_on_punc(word))
      else:
        words.append(word)
    # Stripping accents can leave an empty word (a lone combining mark): re-splitting drops it.
    return whitespace_tokenize(' '.join(words))

  def _run_strip_accents(self, text: str) -> str:
    """`text` in NFD without its nonspacing marks (Mn)."""
    return ''.join(c for c in unicodedata.normalize('NFD', text)
                   if unicodedata.category(c) != 'Mn')

  def _run_split_on_punc(self, text: str) -> List[str]:
    """`text` cut before and after every punctuation character."""
    pieces: List[str] = []
    current = ''
    for char in text:
      if _is_punctuation(char):
        if current:
          pieces.append(current)
          current = ''
        pieces.append(char)
      else:
        current += char
    if current:
      pieces.append(current)
    return pieces

  def _tokenize_chinese_chars(self, text: str) -> str:
    """`text` with a space on each side of every CJK ideograph."""
    return ''.join(f' {c} ' if _is_cjk(ord(c)) else c for c in text)

  def _clean_text(self, text: str) -> str:
    """`text` without NUL, U+FFFD and control characters, every whitespace character a space."""
    output = []
    for char in text:
      if char in '\x00\ufffd' or _is_control(char):
        continue
      output.append(' ' if _is_whitespace(char) else char)
    return ''.join(output)


class WordpieceTokenizer:
  """Splits words into the longest vocabulary pieces, left to right.

  Args:
    vocab: the tokens (a mapping token -> id, or any container supporting `in`).
    unk_token: what a word that the vocabulary cannot cover becomes.
    max_input_chars_per_word: longer words become `unk_token` directly.

  Example:
    >>> WordpieceTokenizer({'un': 0, '##aff': 1, '##able': 2}).tokenize('unaffable')
    ['un', '##aff', '##able']
  """

  def __init__(self, vocab: Mapping[str, int], unk_token: str = UNK_TOKEN,
               max_input_chars_per_word: int = 400):
    self.vocab = vocab
    self.unk_token = unk_token
    self.max_input_chars_per_word = max_input_chars_per_word

  def tokenize(self, text: Text) -> List[str]:
    """The pieces of the whitespace-separated words of `text` (already through BasicTokenizer)."""
    output = []
    for word in whitespace_tokenize(convert_to_unicode(text)):
      output.extend(self._word_pieces(word))
    return output

  def _word_pieces(self, word: str) -> List[str]:
    if len(word) > self.max_input_chars_per_word:
      return [self.unk_token]
    pieces = []
    start = 0
    while start < len(word):
      prefix = CONTINUATION_PREFIX if start else ''
      for end in range(len(word), start, -1):
        candidate = prefix + word[start:end]
        if candidate in self.vocab:
          pieces.append(candidate)
          start = end
          break
      else:  # no piece starts here: the whole word is unknown
        return [self.unk_token]
    return pieces


class FullTokenizer:
  """BERT's end-to-end tokenizer: `BasicTokenizer`, then `WordpieceTokenizer` on each word.

  Args:
    vocab_file: a `vocab.txt` (see `load_vocab`).
    do_lower_case: lower-case and strip accents (must match the checkpoint).
    split_on_punc: split punctuation into words of their own.

  Attributes:
    vocab: token -> id (ordered by id). inv_vocab: id -> token.

  Example:
    >>> tokenizer = FullTokenizer('vocab.txt')
    >>> tokenizer.convert_tokens_to_ids(tokenizer.tokenize('hello world'))
    [7592, 2088]
  """

  def __init__(self, vocab_file: str, do_lower_case: bool = True, split_on_punc: bool = True):
    self.vocab = load_vocab(vocab_file)
    self.inv_vocab = {index: token for token, index in self.vocab.items()}
    self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case,
                                          split_on_punc=split_on_punc)
    self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)

  def tokenize(self, text: Text) -> List[str]:
    """The WordPiece tokens of `text` (no [CLS]/[SEP] added)."""
    tokens = []
    for word in self.basic_tokenizer.tokenize(text):
      tokens.extend(self.wordpiece_tokenizer.tokenize(word))
    return tokens

  def convert_tokens_to_ids(self, tokens: Iterable[str]) -> List[int]:
    """Ids of `tokens` (KeyError naming an unknown token)."""
    return convert_by_vocab(self.vocab, tokens)

  def convert_ids_to_tokens(self, ids: Iterable[int]) -> List[str]:
    """Tokens of `ids` (KeyError naming an unknown id)."""
    return convert_by_vocab(self.inv_vocab, ids)


def preprocess_text(inputs: Text, remove_space: bool = True, lower: bool = False) -> str:
  """ALBERT-style normalization before SentencePiece: collapse spaces, NFKD, drop combining marks.

  Args:
    inputs: the text.
    remove_space: strip the ends and collapse runs of whitespace to one space.
    lower: lower-case (after the normalization).

  Example:
    >>> preprocess_text('  Caf\\u00e9  au lait ', lower=True)
    'cafe au lait'
  """
  outputs = convert_to_unicode(inputs)
  if remove_space:
    outputs = ' '.join(outputs.split())
  outputs = ''.join(c for c in unicodedata.normalize('NFKD', outputs)
                    if not unicodedata.combining(c))
  return outputs.lower() if lower else outputs


def encode_pieces(sp_model: Any, text: Text, sample: bool = False) -> List[str]:
  """SentencePiece pieces of `text`, a number followed by a comma split as ALBERT does.

  A piece such as `'▁1990,'` is re-encoded without its comma and the comma appended as a piece of
  its own (so `1990` gets the same pieces with or without a trailing comma).

  Args:
    sp_model: a `sentencepiece.SentencePieceProcessor`.
    text: the text.
    sample: sample a segmentation (nbest 64, alpha 0.1) instead of the best one.

  Example:
    >>> encode_pieces(sp, 'in 1990, then')   # ['▁in', '▁1990', ',', '▁then'] for a suitable model
  """
  text = convert_to_unicode(text)
  if sample:
    pieces = sp_model.SampleEncodeAsPieces(text, 64, 0.1)
  else:
    pieces = sp_model.EncodeAsPieces(text)
  output: List[str] = []
  for piece in map(printable_text, pieces):
    if len(piece) < 2 or piece[-1] != ',' or not piece[-2].isdigit():
      output.append(piece)
      continue
    number_pieces = list(sp_model.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, '')))
    if not piece.startswith(SPIECE_UNDERLINE) and number_pieces[0].startswith(SPIECE_UNDERLINE):
      # The piece continued a word: the re-encoded number must not start a new one.
      if len(number_pieces[0]) == 1:
        number_pieces = number_pieces[1:]
      else:
        number_pieces[0] = number_pieces[0][1:]
    output.extend(number_pieces)
    output.append(',')
  return output


def encode_ids(sp_model: Any, text: Text, sample: bool = False) -> List[int]:
  """Ids of `encode_pieces(sp_model, text, sample)`."""
  return [sp_model.PieceToId(piece) for piece in encode_pieces(sp_model, text, sample=sample)]


def _sentencepiece() -> Any:
  try:
    # Function-level: sentencepiece is optional (only SentencePiece vocabularies need it).
    import sentencepiece  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError('FullSentencePieceTokenizer needs the sentencepiece package: '
                      'pip install sentencepiece') from e
  return sentencepiece


class FullSentencePieceTokenizer:
  """`FullTokenizer`'s interface over a SentencePiece model (`encode_pieces`).

  Args:
    sp_model_file: the `.model` file.

  Attributes:
    sp_model: the `sentencepiece.SentencePieceProcessor`. vocab: piece -> id.

  Example:
    >>> tokenizer = FullSentencePieceTokenizer('spm.model')
    >>> tokenizer.convert_tokens_to_ids(tokenizer.tokenize('hello'))
  """

  def __init__(self, sp_model_file: str):
    proto = _read_bytes(sp_model_file, 'sp_model_file')
    self.sp_model = _sentencepiece().SentencePieceProcessor()
    self.sp_model.LoadFromSerializedProto(proto)
    self.vocab: Dict[str, int] = {self.sp_model.IdToPiece(i): i
                                  for i in range(self.sp_model.GetPieceSize())}

  def tokenize(self, text: Text) -> List[str]:
    """The pieces of `text` (see `encode_pieces`)."""
    return encode_pieces(self.sp_model, text)

  def convert_tokens_to_ids(self, tokens: Sequence[Text]) -> List[int]:
    """Ids of pieces (an unknown piece gets the model's unknown id)."""
    return [self.sp_model.PieceToId(printable_text(token)) for token in tokens]

  def convert_ids_to_tokens(self, ids: Sequence[int]) -> List[str]:
    """Pieces of ids."""
    return [self.sp_model.IdToPiece(int(i)) for i in ids]
