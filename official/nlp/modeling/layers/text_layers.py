"""Tokenization and input packing inside the TensorFlow graph (Model Garden's text layers).

Keras layers over `tensorflow_text` ops, so that a SavedModel can take raw strings:
- `BertTokenizer`: WordPiece from a `vocab.txt` (a lookup table, saved as an asset) ->
  int32 ids, ragged [batch, (words), (pieces)].
- `FastWordpieceBertTokenizer`: the same output through TF.Text's linear-time WordPiece.
- `SentencepieceTokenizer`: a SentencePiece model -> int32 ids, ragged [batch, (pieces)].
- `BertPackInputs`: one or more ragged segments -> `input_word_ids`, `input_mask`,
  `input_type_ids`, int32 [batch, seq_length]: `[CLS] a [SEP] b [SEP]` truncated to fit, padded.

With `tokenize_with_offsets=True` a tokenizer returns `(ids, start_offsets, limit_offsets)`, the
byte offsets (int64) of each piece in its input string. `get_special_tokens_dict()` gives the ids
that `BertPackInputs` needs (`start_of_sequence_id`, `end_of_segment_id`, `padding_id`, `mask_id`
when present, and `vocab_size`), as Python ints, also when the layer is built in a graph.

`tensorflow_text` is an optional dependency (`pip install 'mlm-garden[text]'`); it is imported
when a layer is built, and a clear ImportError names the extra when it is missing.

Example:
  >>> tokenizer = BertTokenizer(vocab_file='vocab.txt', lower_case=True)
  >>> pack = BertPackInputs(128, special_tokens_dict=tokenizer.get_special_tokens_dict())
  >>> inputs = pack([tokenizer(tf.constant(['hello world']))])
  >>> sorted(inputs)
  ['input_mask', 'input_type_ids', 'input_word_ids']
"""

import base64
import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import tensorflow as tf
import tf_keras

TEXT_EXTRA = "pip install 'mlm-garden[text]'  (tensorflow-text 2.21)"
TRUNCATORS = ('round_robin', 'waterfall')

# Special-token names of get_special_tokens_dict() and the WordPiece / SentencePiece tokens.
_WORDPIECE_SPECIALS = (('start_of_sequence_id', '[CLS]'), ('end_of_segment_id', '[SEP]'),
                       ('padding_id', '[PAD]'), ('mask_id', '[MASK]'))
_SENTENCEPIECE_SPECIALS = (('start_of_sequence_id', '[CLS]'), ('end_of_segment_id', '[SEP]'),
                           ('padding_id', '<pad>'), ('mask_id', '[MASK]'))
_PACKING_IDS = ('start_of_sequence_id', 'end_of_segment_id', 'padding_id')


def tf_text(user: str = 'the text layers') -> Any:
  """The `tensorflow_text` module.

  Args:
    user: who needs it, for the error message.

  Raises:
    ImportError: tensorflow-text is not installed (naming the extra that installs it).
  """
  try:
    # Function-level: tensorflow-text is an optional dependency (the [text] extra).
    import tensorflow_text  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(f'{user} need(s) tensorflow-text, which is not installed: '
                      f'{TEXT_EXTRA}') from e
  return tensorflow_text


def _read_lines(path: str) -> List[str]:
  """The lines of a text file (split at `\\n` only, the final newline ending the last line)."""
  with tf.io.gfile.GFile(path, 'rb') as f:
    lines = f.read().decode('utf-8').split('\n')
  if lines and lines[-1] == '':
    lines.pop()
  return lines


def _check_vocab_file(vocab_file: Any) -> str:
  if not isinstance(vocab_file, str) or not vocab_file:
    raise ValueError(f'vocab_file: expected the path of a vocab.txt, found {vocab_file!r}')
  if not tf.io.gfile.exists(vocab_file):
    raise FileNotFoundError(f'vocab_file: no such file: {vocab_file!r}')
  return vocab_file


def _special_ids_of_tokens(tokens: Sequence[str], vocab_size: int, source: str
                           ) -> Dict[str, int]:
  """`get_special_tokens_dict()` of a WordPiece vocabulary (token list, index = id)."""
  first = {}
  for index, token in enumerate(tokens):
    first.setdefault(token, index)
  result = {'vocab_size': int(vocab_size)}
  for name, token in _WORDPIECE_SPECIALS:
    if token in first:
      result[name] = first[token]
    else:
      logging.warning('%s: no %s token %r; get_special_tokens_dict() omits %s', source, name,
                      token, name)
  return result


def _with_static_batch(ragged: tf.RaggedTensor, batch_size: tf.Tensor) -> tf.RaggedTensor:
  """`ragged` with its outer row_splits reshaped to [batch_size + 1] (helps shape inference)."""
  row_splits = tf.reshape(ragged.row_splits, [batch_size + 1])
  return tf.RaggedTensor.from_row_splits(ragged.values, row_splits, validate=False)


def _outputs(results: Union[tf.RaggedTensor, Sequence[tf.RaggedTensor]], inputs: tf.Tensor
             ) -> Union[tf.RaggedTensor, tuple]:
  batch_size = tf.shape(inputs)[0]
  if isinstance(results, tf.RaggedTensor):
    return _with_static_batch(results, batch_size)
  return tuple(_with_static_batch(r, batch_size) for r in results)


def _evaluate_outside_graph(build: Callable[[], Any]) -> Any:
  """numpy values of `build()`, run eagerly, or in a session when the init context is a graph
  (a model built under Estimator or `tf.compat.v1` graph mode)."""
  with tf.init_scope():
    if tf.executing_eagerly():
      return tf.nest.map_structure(lambda t: t.numpy(), build())
  with tf.Graph().as_default():
    tensors = build()
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.tables_initializer())
      return session.run(tensors)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertTokenizer(tf_keras.layers.Layer):
  """WordPiece tokenization of strings with `tensorflow_text.BertTokenizer`.

  The vocabulary is a `tf.lookup.StaticHashTable` initialized from `vocab_file` (token = whole
  line, id = line number); a SavedModel holding this layer carries the file as an asset.

  Args:
    vocab_file: the `vocab.txt`.
    lower_case: lower-case and strip accents (overrides `tokenizer_kwargs['lower_case']`).
    tokenize_with_offsets: also return the byte offsets of every piece (may be changed later
      through the attribute of the same name).
    tokenizer_kwargs: more arguments of `tensorflow_text.BertTokenizer`.
    **kwargs: the arguments of a Keras `Layer`.

  Call:
    inputs: string [batch]. Returns int32 ids, ragged [batch, (words), (pieces)], and with
    offsets also int64 `start_offsets`, `limit_offsets` of the same shape.

  Raises:
    ImportError: tensorflow-text is missing. FileNotFoundError: no `vocab_file`.

  Example:
    >>> BertTokenizer(vocab_file='vocab.txt', lower_case=True)(tf.constant(['abc def']))
    <tf.RaggedTensor [[[6], [4, 5]]]>
  """

  def __init__(self, *, vocab_file: str, lower_case: Optional[bool] = None,
               tokenize_with_offsets: bool = False,
               tokenizer_kwargs: Optional[Mapping[str, Any]] = None, **kwargs):
    text = tf_text('BertTokenizer')
    super().__init__(**kwargs)
    self._vocab_file = _check_vocab_file(vocab_file)
    self._lower_case = lower_case
    self._tokenizer_kwargs = dict(tokenizer_kwargs or {})
    self.tokenize_with_offsets = tokenize_with_offsets
    initializer = tf.lookup.TextFileInitializer(
        vocab_file, key_dtype=tf.string, key_index=tf.lookup.TextFileIndex.WHOLE_LINE,
        value_dtype=tf.int64, value_index=tf.lookup.TextFileIndex.LINE_NUMBER)
    self._vocab_table = tf.lookup.StaticHashTable(initializer, default_value=-1)
    # Tracked on its own too: a SavedModel reloaded and saved again keeps the vocabulary asset.
    self._vocab_initializer = initializer
    lines = _read_lines(vocab_file)
    self._special_tokens_dict = _special_ids_of_tokens(lines, len(set(lines)), vocab_file)
    arguments = dict(self._tokenizer_kwargs)
    if lower_case is not None:
      arguments['lower_case'] = lower_case
    self._bert_tokenizer = text.BertTokenizer(self._vocab_table, **arguments)

  @property
  def vocab_size(self) -> tf.Tensor:
    """The number of tokens in the vocabulary (a scalar tensor)."""
    return self._vocab_table.size()

  def call(self, inputs: tf.Tensor):
    """Token ids (and offsets) of `inputs`, string [batch]; see the class docstring."""
    if self.tokenize_with_offsets:
      ids, starts, limits = self._bert_tokenizer.tokenize_with_offsets(inputs)
      return _outputs((tf.cast(ids, tf.int32), starts, limits), inputs)
    return _outputs(tf.cast(self._bert_tokenizer.tokenize(inputs), tf.int32), inputs)

  def get_special_tokens_dict(self) -> Dict[str, int]:
    """Ids of `[CLS]` (start_of_sequence_id), `[SEP]` (end_of_segment_id), `[PAD]` (padding_id),
    `[MASK]` (mask_id), and `vocab_size`; a token missing from the vocabulary is left out."""
    return dict(self._special_tokens_dict)

  def get_config(self) -> Dict[str, Any]:
    """The constructor arguments (the vocabulary by its path)."""
    config = super().get_config()
    config.update(vocab_file=self._vocab_file, lower_case=self._lower_case,
                  tokenize_with_offsets=self.tokenize_with_offsets,
                  tokenizer_kwargs=dict(self._tokenizer_kwargs) or None)
    return config


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class FastWordpieceBertTokenizer(tf_keras.layers.Layer):
  """BERT tokenization with TF.Text's basic tokenizer and `FastWordpieceTokenizer`.

  Same outputs as `BertTokenizer`; the vocabulary (which must hold `[UNK]`) is compiled into the
  op, so no lookup table or asset is involved.

  Args:
    vocab_file: the `vocab.txt` (trailing whitespace of each line ignored).
    lower_case: lower-case and strip accents.
    tokenize_with_offsets: also return the byte offsets of every piece.
    **kwargs: the arguments of a Keras `Layer`.

  Call:
    inputs: string [batch]. Returns int32 ids, ragged [batch, (words), (pieces)] (and offsets).

  Example:
    >>> FastWordpieceBertTokenizer(vocab_file='vocab.txt', lower_case=True).vocab_size
    8
  """

  def __init__(self, *, vocab_file: str, lower_case: bool, tokenize_with_offsets: bool = False,
               **kwargs):
    text = tf_text('FastWordpieceBertTokenizer')
    super().__init__(**kwargs)
    self._vocab_file = _check_vocab_file(vocab_file)
    self._lower_case = lower_case
    self.tokenize_with_offsets = tokenize_with_offsets
    self._vocab = [line.rstrip() for line in _read_lines(vocab_file)]
    # Function-level: tensorflow-text is optional; its basic tokenizer lives in this submodule.
    from tensorflow_text.python.ops import bert_tokenizer  # pylint: disable=g-import-not-at-top
    self._basic_tokenizer = bert_tokenizer.BasicTokenizer(lower_case=lower_case)
    self._fast_wp_tokenizer = text.FastWordpieceTokenizer(
        vocab=self._vocab, token_out_type=tf.int32, no_pretokenization=True)
    self._special_tokens_dict = _special_ids_of_tokens(self._vocab, len(self._vocab), vocab_file)

  @property
  def vocab_size(self) -> int:
    """The number of tokens in the vocabulary."""
    return len(self._vocab)

  def call(self, inputs: tf.Tensor):
    """Token ids (and offsets) of `inputs`, string [batch]; see the class docstring."""
    if not self.tokenize_with_offsets:
      words = self._basic_tokenizer.tokenize(inputs)
      return _outputs(self._fast_wp_tokenizer.tokenize(words), inputs)
    words, word_starts, _ = self._basic_tokenizer.tokenize_with_offsets(inputs)
    ids, starts, limits = self._fast_wp_tokenizer.tokenize_with_offsets(words)
    # Piece offsets are relative to their word: shift them by the word's start in the string.
    word_starts = tf.expand_dims(word_starts, axis=2)
    return _outputs((ids, word_starts + starts, word_starts + limits), inputs)

  def get_special_tokens_dict(self) -> Dict[str, int]:
    """As `BertTokenizer.get_special_tokens_dict`."""
    return dict(self._special_tokens_dict)

  def get_config(self) -> Dict[str, Any]:
    """The constructor arguments (the vocabulary by its path)."""
    config = super().get_config()
    config.update(vocab_file=self._vocab_file, lower_case=self._lower_case,
                  tokenize_with_offsets=self.tokenize_with_offsets)
    return config


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class SentencepieceTokenizer(tf_keras.layers.Layer):
  """SentencePiece tokenization of strings with `tensorflow_text.SentencepieceTokenizer`.

  Args:
    lower_case: case-fold the text first (`tensorflow_text.case_fold_utf8`).
    model_file_path: the `.model` file; or
    model_serialized_proto: its bytes (exactly one of the two).
    tokenize_with_offsets: also return the byte offsets of every piece (not with
      `strip_diacritics`).
    nbest_size: 0 or 1: the best segmentation; > 1: sample among the n best; < 0: sample among
      all.
    alpha: the inverse temperature of sampling.
    strip_diacritics: NFD-normalize and drop nonspacing marks (Mn) first.
    **kwargs: the arguments of a Keras `Layer`.

  Call:
    inputs: string [batch]. Returns int32 ids, ragged [batch, (pieces)] (and offsets).

  Raises:
    ValueError: both or neither model argument; offsets together with `strip_diacritics`.

  Example:
    >>> SentencepieceTokenizer(model_file_path='sp.model', lower_case=True)(tf.constant(['abc']))
  """

  def __init__(self, *, lower_case: bool, model_file_path: Optional[str] = None,
               model_serialized_proto: Optional[Union[bytes, str]] = None,
               tokenize_with_offsets: bool = False, nbest_size: int = 0, alpha: float = 1.0,
               strip_diacritics: bool = False, **kwargs):
    tf_text('SentencepieceTokenizer')
    super().__init__(**kwargs)
    if bool(model_file_path) == bool(model_serialized_proto):
      raise ValueError('SentencepieceTokenizer: give exactly one of model_file_path and '
                       f'model_serialized_proto; found model_file_path={model_file_path!r} and '
                       f'{"a" if model_serialized_proto else "no"} model_serialized_proto')
    if tokenize_with_offsets and strip_diacritics:
      raise ValueError('SentencepieceTokenizer: tokenize_with_offsets=True cannot go with '
                       'strip_diacritics=True (stripping changes the byte offsets)')
    if model_file_path:
      if not tf.io.gfile.exists(model_file_path):
        raise FileNotFoundError(f'model_file_path: no such file: {model_file_path!r}')
      with tf.io.gfile.GFile(model_file_path, 'rb') as f:
        model_serialized_proto = f.read()
    self._model_file_path = model_file_path
    self._model_serialized_proto = model_serialized_proto
    self._lower_case = lower_case
    self.tokenize_with_offsets = tokenize_with_offsets
    self._nbest_size = nbest_size
    self._alpha = alpha
    self._strip_diacritics = strip_diacritics
    self._tokenizer = self._make_tokenizer()
    self._special_tokens_dict = self._find_special_tokens()

  def _make_tokenizer(self) -> Any:
    return tf_text('SentencepieceTokenizer').SentencepieceTokenizer(
        model=self._model_serialized_proto, out_type=tf.int32, nbest_size=self._nbest_size,
        alpha=self._alpha)

  @property
  def vocab_size(self) -> tf.Tensor:
    """The number of pieces of the model (a scalar tensor)."""
    return self._tokenizer.vocab_size()

  def _find_special_tokens(self) -> Dict[str, int]:
    names = [name for name, _ in _SENTENCEPIECE_SPECIALS]
    pieces = [piece for _, piece in _SENTENCEPIECE_SPECIALS]

    def lookup():
      tokenizer = self._make_tokenizer()
      ids = tokenizer.string_to_id(tf.constant(pieces))
      return ids, tokenizer.id_to_string(ids), tokenizer.vocab_size()

    ids, back, vocab_size = _evaluate_outside_graph(lookup)
    result = {'vocab_size': int(vocab_size)}
    for name, piece, token_id, token in zip(names, pieces, ids, back):
      # An unknown piece maps to the unknown id, whose piece differs.
      if token == piece.encode('utf-8'):
        result[name] = int(token_id)
      else:
        logging.warning('SentencepieceTokenizer: the model has no piece %r (%s); '
                        'get_special_tokens_dict() omits it', piece, name)
    return result

  def call(self, inputs: tf.Tensor):
    """Token ids (and offsets) of `inputs`, string [batch]; see the class docstring."""
    text = tf_text('SentencepieceTokenizer')
    if self._strip_diacritics:
      if self.tokenize_with_offsets:
        raise ValueError('SentencepieceTokenizer: tokenize_with_offsets=True cannot go with '
                         'strip_diacritics=True (stripping changes the byte offsets)')
      inputs = tf.strings.regex_replace(text.normalize_utf8(inputs, 'NFD'), r'\p{Mn}', '')
    if self._lower_case:
      inputs = text.case_fold_utf8(inputs)
    if self.tokenize_with_offsets:
      return _outputs(self._tokenizer.tokenize_with_offsets(inputs), inputs)
    return _outputs(self._tokenizer.tokenize(inputs), inputs)

  def get_special_tokens_dict(self) -> Dict[str, int]:
    """Ids of `[CLS]` (start_of_sequence_id), `[SEP]` (end_of_segment_id), `<pad>` (padding_id),
    `[MASK]` (mask_id), and `vocab_size`; a piece missing from the model is left out."""
    return dict(self._special_tokens_dict)

  def get_config(self) -> Dict[str, Any]:
    """The constructor arguments; a model given as bytes is stored base64-encoded."""
    config = super().get_config()
    config.update(lower_case=self._lower_case, tokenize_with_offsets=self.tokenize_with_offsets,
                  nbest_size=self._nbest_size, alpha=self._alpha,
                  strip_diacritics=self._strip_diacritics)
    if self._model_file_path:
      config['model_file_path'] = self._model_file_path
    else:
      proto = self._model_serialized_proto
      proto = proto.encode('latin-1') if isinstance(proto, str) else proto
      config['model_serialized_proto_base64'] = base64.b64encode(proto).decode('ascii')
    return config

  @classmethod
  def from_config(cls, config: Dict[str, Any]) -> 'SentencepieceTokenizer':
    """Rebuilds the layer from `get_config()`."""
    config = dict(config)
    encoded = config.pop('model_serialized_proto_base64', None)
    if encoded is not None:
      config['model_serialized_proto'] = base64.b64decode(encoded)
    return cls(**config)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertPackInputs(tf_keras.layers.Layer):
  """Packs tokenized segments into BERT's inputs: `[CLS] a [SEP] b [SEP] [PAD]...`.

  Segments too long for `seq_length` (with one `[CLS]` and a `[SEP]` per segment) are truncated
  by `truncator`: 'round_robin' gives the room one token at a time to each segment still in need;
  'waterfall' fills the segments left to right.

  Args:
    seq_length: the length of the outputs.
    start_of_sequence_id, end_of_segment_id, padding_id: the ids of `[CLS]`, `[SEP]`, `[PAD]`;
      or
    special_tokens_dict: a dict with those three keys (e.g. a tokenizer's
      `get_special_tokens_dict()`; other keys are ignored).
    truncator: 'round_robin' or 'waterfall'.
    **kwargs: the arguments of a Keras `Layer`.

  Call:
    inputs: one ragged int tensor, or a list of them (one per segment), each [batch, (tokens)] or
    [batch, (words), (pieces)]. Returns a dict of int32 [batch, seq_length]: `input_word_ids`,
    `input_mask` (1 on tokens, 0 on padding), `input_type_ids` (segment index, 0 on padding).

  Raises:
    ValueError: an unknown truncator, or the ids given both or neither way (or incomplete).

  Example:
    >>> pack = BertPackInputs(6, start_of_sequence_id=2, end_of_segment_id=3, padding_id=0)
    >>> pack(tf.ragged.constant([[7, 8]]))['input_word_ids']
    [[2, 7, 8, 3, 0, 0]]
  """

  def __init__(self, seq_length: int, *, start_of_sequence_id: Optional[int] = None,
               end_of_segment_id: Optional[int] = None, padding_id: Optional[int] = None,
               special_tokens_dict: Optional[Mapping[str, int]] = None,
               truncator: str = 'round_robin', **kwargs):
    tf_text('BertPackInputs')
    super().__init__(**kwargs)
    if truncator not in TRUNCATORS:
      raise ValueError(f'truncator: expected one of {TRUNCATORS}, found {truncator!r}')
    self.seq_length = seq_length
    self.truncator = truncator
    given = dict(zip(_PACKING_IDS, (start_of_sequence_id, end_of_segment_id, padding_id)))
    if special_tokens_dict is None:
      missing = [name for name, value in given.items() if value is None]
      if missing:
        raise ValueError(f'BertPackInputs: give all of {", ".join(_PACKING_IDS)} or a '
                         f'special_tokens_dict with them; missing {", ".join(missing)}')
      ids = given
    else:
      if any(value is not None for value in given.values()):
        raise ValueError('BertPackInputs: give either special_tokens_dict or the separate '
                         f'{", ".join(_PACKING_IDS)} arguments, not both')
      missing = [name for name in _PACKING_IDS if name not in special_tokens_dict]
      if missing:
        raise ValueError(f'special_tokens_dict: lacks {", ".join(missing)}; found keys '
                         f'{sorted(special_tokens_dict)}')
      ids = {name: special_tokens_dict[name] for name in _PACKING_IDS}
    self.start_of_sequence_id = int(ids['start_of_sequence_id'])
    self.end_of_segment_id = int(ids['end_of_segment_id'])
    self.padding_id = int(ids['padding_id'])

  def call(self, inputs: Union[tf.RaggedTensor, Sequence[tf.RaggedTensor]]
           ) -> Dict[str, tf.Tensor]:
    """The packed inputs of one or more segments; see the class docstring."""
    return BertPackInputs.bert_pack_inputs(
        inputs, self.seq_length, start_of_sequence_id=self.start_of_sequence_id,
        end_of_segment_id=self.end_of_segment_id, padding_id=self.padding_id,
        truncator=self.truncator)

  def get_config(self) -> Dict[str, Any]:
    """The constructor arguments (the three ids given separately)."""
    config = super().get_config()
    config.update(seq_length=self.seq_length, start_of_sequence_id=self.start_of_sequence_id,
                  end_of_segment_id=self.end_of_segment_id, padding_id=self.padding_id,
                  truncator=self.truncator)
    return config

  @staticmethod
  def bert_pack_inputs(inputs: Union[tf.RaggedTensor, Sequence[tf.RaggedTensor]],
                       seq_length: Union[int, tf.Tensor],
                       start_of_sequence_id: Union[int, tf.Tensor],
                       end_of_segment_id: Union[int, tf.Tensor],
                       padding_id: Union[int, tf.Tensor],
                       truncator: str = 'round_robin') -> Dict[str, tf.Tensor]:
    """The packing of `BertPackInputs` as a function (same arguments and outputs).

    Raises:
      ValueError: no segment, segments of unknown or different ranks, or an unknown truncator.
    """
    text = tf_text('BertPackInputs')
    segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    if not segments:
      raise ValueError('bert_pack_inputs: inputs holds no segment; expected at least one')
    ranks = [segment.shape.rank for segment in segments]
    if None in ranks or len(set(ranks)) > 1:
      raise ValueError(f'bert_pack_inputs: every segment needs the same known rank; found ranks '
                       f'{ranks}')
    if ranks[0] > 2:  # words of pieces -> pieces
      segments = [segment.merge_dims(1, -1) for segment in segments]
    budget = seq_length - (len(segments) + 1)  # room left by [CLS] and one [SEP] per segment
    if truncator == 'round_robin':
      trimmed = text.RoundRobinTrimmer(budget).trim(segments)
    elif truncator == 'waterfall':
      trimmed = text.WaterfallTrimmer(budget).trim(segments)
    else:
      raise ValueError(f'truncator: expected one of {TRUNCATORS}, found {truncator!r}')
    combined, segment_ids = text.combine_segments(
        trimmed, start_of_sequence_id=start_of_sequence_id, end_of_segment_id=end_of_segment_id)
    word_ids, _ = text.pad_model_inputs(combined, seq_length, pad_value=padding_id)
    type_ids, mask = text.pad_model_inputs(segment_ids, seq_length, pad_value=0)
    # pad_model_inputs loses the static shape: restore [batch, seq_length].
    shape = tf.stack([segments[0].nrows(out_type=tf.int32), tf.cast(seq_length, tf.int32)])
    outputs = {'input_word_ids': word_ids, 'input_mask': mask, 'input_type_ids': type_ids}
    return {name: tf.cast(tf.reshape(value, shape), tf.int32) for name, value in outputs.items()}


class TextProcessor(tf.Module):
  """Raw text segments -> BERT inputs: a tokenizer and `BertPackInputs` (Model Garden's helper of
  text data and text serving signatures).

  Args:
    seq_length: the length of the packed inputs.
    vocab_file: the `vocab.txt` (WordPiece) or the SentencePiece `.model`.
    tokenization: 'WordPiece' (`BertTokenizer`) or 'SentencePiece' (`SentencepieceTokenizer`
      with diacritics stripped, as ALBERT).
    lower_case: lower-case the text (must match the vocabulary).
    preprocessing_hub_module_url: a TF Hub preprocessing model; not supported (TF Hub is not a
      dependency): must stay empty.

  Call:
    segments: a list of string tensors [batch], one per segment. Returns the dict of
    `BertPackInputs` (int32 [batch, seq_length]).

  Raises:
    ValueError: an unknown tokenization, no vocab_file, a TF Hub URL, or a bad seq_length.

  Example:
    >>> processor = TextProcessor(seq_length=16, vocab_file='vocab.txt')
    >>> processor([tf.constant(['hello world'])])['input_word_ids'].shape
    TensorShape([1, 16])
  """

  TOKENIZATIONS = ('WordPiece', 'SentencePiece')

  def __init__(self, seq_length: int, vocab_file: Optional[str] = None,
               tokenization: Optional[str] = 'WordPiece', lower_case: Optional[bool] = True,
               preprocessing_hub_module_url: Optional[str] = None):
    super().__init__()
    if preprocessing_hub_module_url:
      raise ValueError(
          f'preprocessing_hub_module_url={preprocessing_hub_module_url!r}: TF Hub preprocessing '
          'models are not supported; give vocab_file (and lower_case) instead')
    if not isinstance(seq_length, int) or seq_length < 2:
      raise ValueError(f'seq_length: expected an int >= 2 (room for [CLS] and [SEP]), found '
                       f'{seq_length!r}')
    if not vocab_file:
      raise ValueError('TextProcessor: vocab_file is empty; expected a vocab.txt (WordPiece) or '
                       'a SentencePiece .model')
    if tokenization == 'WordPiece':
      self.tokenizer = BertTokenizer(vocab_file=vocab_file, lower_case=lower_case)
    elif tokenization == 'SentencePiece':
      self.tokenizer = SentencepieceTokenizer(model_file_path=vocab_file, lower_case=lower_case,
                                              strip_diacritics=True)
    else:
      raise ValueError(f'tokenization: expected one of {self.TOKENIZATIONS}, found '
                       f'{tokenization!r}')
    self.pack_inputs = BertPackInputs(
        seq_length=seq_length, special_tokens_dict=self.tokenizer.get_special_tokens_dict())

  def __call__(self, segments: Sequence[tf.Tensor]) -> Dict[str, tf.Tensor]:
    tokenized = []
    for segment in segments:
      ids = self.tokenizer(segment)
      tokenized.append(tf.cast(ids.merge_dims(1, -1) if ids.shape.rank > 2 else ids, tf.int32))
    return self.pack_inputs(tokenized)
