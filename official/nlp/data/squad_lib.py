"""SQuAD v1.1 / v2.0 JSON -> span-labelling features (TFRecords + a JSON sidecar) and back to text.

Reading: `data[].paragraphs[].qas[]` of the SQuAD JSON; each context is split into words at
whitespace, and every character knows its word, so an answer's `answer_start` (a character offset)
and text give its first and last word. v2.0 questions with `is_impossible: true` have no answer.

Features (`convert_examples_to_features`): each word is WordPiece-tokenized on its own; a window is
`[CLS] question [SEP] context piece [SEP]` (question truncated to `max_query_length` tokens,
segment ids 0 for `[CLS] question [SEP]`, 1 for the context and its `[SEP]`); a context longer than
fits is covered by windows starting `doc_stride` tokens apart. `start_positions`/`end_positions`
are the window positions of the answer's first and last token, 0 (`[CLS]`) when the question is
impossible or the answer is not entirely inside the window. For each window, `token_to_word` maps
a context position to its word and `token_is_max_context` says whether this window gives that
token its most central view (the window whose prediction counts when windows overlap).

Records (Model Garden's feature keys): `unique_ids`, `input_ids`, `input_mask`, `segment_ids`,
`start_positions`, `end_positions`, `is_impossible` (int64). The eval sidecar
(`<stem>.squad_eval.json`, see `eval_sidecar_path`) keeps what `postprocess_predictions` needs to
turn logits into answer text: each example's id and gold answers, each context's words and the
word of each of its tokens, and each window's `unique_id`, example and first context token (from
which `token_to_word` and `token_is_max_context` are rebuilt).

Example:
  >>> examples = read_squad_examples('dev-v1.1.json', is_training=False)
  >>> features = convert_examples_to_features(examples, tokenizer, max_seq_length=384,
  ...                                         doc_stride=128, max_query_length=64)
  >>> predictions, _ = postprocess_predictions(examples, features, logits_by_unique_id)
"""

import dataclasses
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from official.common import file_utils
from official.nlp.data import data_metadata
from official.nlp.data import tfrecord_writer
from official.nlp.data.tokenization import CLS_TOKEN, SEP_TOKEN, UNK_TOKEN
from official.nlp.data.tokenization import WordPieceTokenizer

FIRST_UNIQUE_ID = 1_000_000_000  # Model Garden's first `unique_ids` value
SIDECAR_SUFFIX = '.squad_eval.json'
FEATURE_NAMES = ('unique_ids', 'input_ids', 'input_mask', 'segment_ids', 'start_positions',
                 'end_positions', 'is_impossible')


@dataclasses.dataclass
class SquadExample:
  """One question on one context.

  Attributes:
    qas_id: the question's `id`.
    question_text: the question.
    doc_words: the context split at whitespace.
    answers: the gold answer texts (empty for an impossible question).
    start_word: the first word of the (first) answer, -1 when there is none.
    end_word: its last word, -1 when there is none.
    is_impossible: v2.0: the context does not answer the question.
  """
  qas_id: str
  question_text: str
  doc_words: List[str]
  answers: List[str]
  start_word: int = -1
  end_word: int = -1
  is_impossible: bool = False


@dataclasses.dataclass
class SquadFeature:
  """One window of one example (see the module docstring).

  Attributes:
    unique_id: the record's `unique_ids`.
    example_index: index of its example in the list given to `convert_examples_to_features`.
    window_index: 0, 1, ... over the windows of the example.
    tokens: the window's WordPiece tokens (no padding).
    token_to_word: window position (of a context token) -> word index in the example.
    token_is_max_context: window position -> whether this window is the token's most central one.
    input_ids / input_mask / segment_ids: int lists of length max_seq_length.
    start_position / end_position: the answer's window positions (0: none in this window).
    is_impossible: no answer in this window.
    context_start: index (in the example's context tokens) of the window's first context token.
    token_to_chars: window position -> (begin, end) characters of its word that the token covers
      (answers are cut to them: '1887' of '1887,'); empty: whole words.
  """
  unique_id: int
  example_index: int
  window_index: int
  tokens: List[str]
  token_to_word: Dict[int, int]
  token_is_max_context: Dict[int, bool]
  input_ids: List[int]
  input_mask: List[int]
  segment_ids: List[int]
  start_position: int = 0
  end_position: int = 0
  is_impossible: bool = False
  context_start: int = 0
  token_to_chars: Dict[int, Tuple[int, int]] = dataclasses.field(default_factory=dict)


def _split_words(context: str) -> Tuple[List[str], List[int]]:
  """Whitespace-separated words and, per character, the index of its word (a space belongs to the
  word before it; leading spaces to word 0)."""
  words: List[str] = []
  char_to_word: List[int] = []
  in_space = True
  for char in context:
    if char.isspace():
      in_space = True
    else:
      if in_space:
        words.append(char)
      else:
        words[-1] += char
      in_space = False
    char_to_word.append(max(len(words) - 1, 0))
  return words, char_to_word


def _field(entry: Mapping[str, Any], key: str, where: str) -> Any:
  if key not in entry:
    raise ValueError(f'{where}: no {key!r} field; found {sorted(entry)}')
  return entry[key]


def read_squad_examples(input_file: str, is_training: bool,
                        version_2_with_negative: bool = False) -> List[SquadExample]:
  """Reads a SQuAD JSON file (`{"data": [{"paragraphs": [{"context", "qas"}]}]}`).

  Args:
    input_file: the JSON file.
    is_training: training data: every answerable question needs an answer, and one whose text
      is not found at its `answer_start` is skipped (otherwise it is kept without positions).
    version_2_with_negative: SQuAD v2.0: read `is_impossible`.

  Returns:
    The examples, in file order.

  Raises:
    FileNotFoundError: no such file.
    ValueError: not SQuAD JSON, or a question without an answer, naming the question id.
  """
  if not os.path.isfile(input_file):
    raise FileNotFoundError(f'input_file: no such file: {input_file!r}')
  with open(input_file, encoding='utf-8') as f:
    try:
      dataset = json.load(f)
    except json.JSONDecodeError as e:
      raise ValueError(f'{input_file}: not valid JSON: {e}') from None
  if not isinstance(dataset, dict) or not isinstance(dataset.get('data'), list):
    raise ValueError(f'{input_file}: expected SQuAD JSON with a "data" list, found '
                     f'{sorted(dataset) if isinstance(dataset, dict) else type(dataset).__name__}')
  examples = []
  for article in dataset['data']:
    for paragraph in _field(article, 'paragraphs', input_file):
      context = _field(paragraph, 'context', input_file)
      words, char_to_word = _split_words(context)
      for qa in _field(paragraph, 'qas', input_file):
        qas_id = str(_field(qa, 'id', input_file))
        where = f'{input_file}: question {qas_id!r}'
        answers = list(qa.get('answers') or [])
        impossible = bool(qa.get('is_impossible', False)) if version_2_with_negative else False
        example = SquadExample(qas_id=qas_id, question_text=_field(qa, 'question', where),
                               doc_words=words, answers=[a['text'] for a in answers],
                               is_impossible=impossible)
        if not impossible and answers:
          first = answers[0]
          start_char = int(_field(first, 'answer_start', where))
          text = _field(first, 'text', where)
          if not 0 <= start_char < len(context) or not text:
            raise ValueError(f'{where}: answer_start {start_char} is outside the context '
                             f'({len(context)} characters) or the answer text is empty')
          example.start_word = char_to_word[start_char]
          example.end_word = char_to_word[min(start_char + len(text), len(context)) - 1]
          located = ' '.join(words[example.start_word:example.end_word + 1])
          if ' '.join(text.split()) not in located:
            if is_training:
              continue  # the answer is not where answer_start says: skipped, as SQuAD tools do
            example.start_word = example.end_word = -1  # scored by text only; no positions
        elif is_training and not impossible:
          raise ValueError(f'{where}: has no answers (set version_2_with_negative for SQuAD v2.0 '
                           'with is_impossible)')
        examples.append(example)
  return examples


def _tightest_span(context_tokens: Sequence[str], start: int, end: int,
                   answer_tokens: Sequence[str]) -> Tuple[int, int]:
  """The sub-span of `context_tokens[start:end + 1]` equal to `answer_tokens` (whole-word spans
  may be wider than the answer, e.g. '(1895)' for '1895'), else `(start, end)`."""
  n = len(answer_tokens)
  for new_start in range(start, end + 2 - n):
    if list(context_tokens[new_start:new_start + n]) == list(answer_tokens):
      return new_start, new_start + n - 1
  return start, end


def _window_starts(num_tokens: int, max_tokens: int, doc_stride: int) -> List[Tuple[int, int]]:
  """(start, length) of the windows covering `num_tokens` context tokens."""
  windows = []
  start = 0
  while True:
    length = min(max_tokens, num_tokens - start)
    windows.append((start, length))
    if start + length >= num_tokens:
      return windows
    start += min(length, doc_stride)


def _is_max_context(windows: Sequence[Tuple[int, int]], window: int, position: int) -> bool:
  """Whether `window` sees context token `position` with the most context on its shorter side
  (ties: the longer window, then the first)."""
  best, best_score = None, None
  for index, (start, length) in enumerate(windows):
    end = start + length - 1
    if not start <= position <= end:
      continue
    score = min(position - start, end - position) + 0.01 * length
    if best_score is None or score > best_score:
      best, best_score = index, score
  return best == window


def _subword_chars(tokenizer: WordPieceTokenizer,
                   words: Sequence[str]) -> List[List[Tuple[int, int]]]:
  """Per word, the (begin, end) characters of the word that each of its sub-words covers."""
  encodings = tokenizer.backend.encode_batch(list(words), add_special_tokens=False)
  return [[(int(b), int(e)) for b, e in encoding.offsets] for encoding in encodings]


def _tokenize_contexts(examples: Sequence[SquadExample], tokenizer: WordPieceTokenizer,
                       unk_id: int) -> Dict[int, Tuple[List[int], List[int], List[int],
                                                       List[Tuple[int, int]]]]:
  """Per distinct context (`id(doc_words)`): its token ids, the word of each token, the first
  token of each word and the characters of its word each token covers (each word tokenized on
  its own; an empty result becomes [UNK], covering the whole word)."""
  distinct: Dict[int, List[str]] = {}
  for e in examples:
    distinct.setdefault(id(e.doc_words), e.doc_words)
  flat = [w for words in distinct.values() for w in words]
  ids, lengths = tokenizer.encode_to_arrays(flat) if flat else (np.zeros(0), np.zeros(0))
  ids, lengths = ids.tolist(), lengths.tolist()
  # Character spans only for words of several sub-words (one sub-word covers its whole word).
  split = sorted({w for w, n in zip(flat, lengths) if n > 1})
  chars_of = dict(zip(split, _subword_chars(tokenizer, split))) if split else {}
  out = {}
  cursor, word_cursor = 0, 0
  for key, words in distinct.items():
    context_ids: List[int] = []
    token_word: List[int] = []
    word_first_token: List[int] = []
    token_chars: List[Tuple[int, int]] = []
    for word in range(len(words)):
      length = lengths[word_cursor + word]
      pieces = ids[cursor:cursor + length] or [unk_id]
      cursor += length
      word_first_token.append(len(context_ids))
      context_ids.extend(pieces)
      token_word.extend([word] * len(pieces))
      spans = chars_of.get(words[word]) if len(pieces) > 1 else None
      token_chars.extend(spans if spans and len(spans) == len(pieces)
                         else [(0, len(words[word]))] * len(pieces))
    word_cursor += len(words)
    out[key] = (context_ids, token_word, word_first_token, token_chars)
  return out


def convert_examples_to_features(examples: Sequence[SquadExample], tokenizer: WordPieceTokenizer,
                                 max_seq_length: int = 384, doc_stride: int = 128,
                                 max_query_length: int = 64) -> List[SquadFeature]:
  """Windows of every example (see the module docstring).

  Args:
    examples: from `read_squad_examples`.
    tokenizer: the WordPiece tokenizer.
    max_seq_length: tokens per window, `[CLS]` and both `[SEP]`s included.
    doc_stride: tokens between the starts of consecutive windows of a long context.
    max_query_length: question tokens kept.

  Returns:
    The features, example by example, window by window; `unique_id` counts from 1000000000.

  Raises:
    ValueError: the question leaves no room for the context, or a bad stride.
  """
  if doc_stride < 1:
    raise ValueError(f'doc_stride must be >= 1, found {doc_stride}')
  if max_seq_length - max_query_length - 3 < 1:
    raise ValueError(f'max_seq_length ({max_seq_length}) must exceed max_query_length '
                     f'({max_query_length}) + 3 to leave room for the context')
  cls_id, sep_id, unk_id = tokenizer.convert_tokens_to_ids([CLS_TOKEN, SEP_TOKEN, UNK_TOKEN])
  # Tokenized in three large batches (one call per example is several times slower).
  questions = tokenizer.encode_batch([e.question_text for e in examples])
  answer_rows = [i for i, e in enumerate(examples) if e.start_word >= 0 and not e.is_impossible]
  answers = dict(zip(answer_rows, tokenizer.encode_batch([examples[i].answers[0]
                                                          for i in answer_rows])))
  contexts = _tokenize_contexts(examples, tokenizer, unk_id)
  features: List[SquadFeature] = []
  unique_id = FIRST_UNIQUE_ID
  for example_index, example in enumerate(examples):
    query_ids = questions[example_index][:max_query_length]
    context_ids, token_word, word_first_token, token_chars = contexts[id(example.doc_words)]
    context_tokens = tokenizer.convert_ids_to_tokens(context_ids)
    answer_span = None
    if example.start_word >= 0 and not example.is_impossible:
      start = word_first_token[example.start_word]
      end = (word_first_token[example.end_word + 1] - 1
             if example.end_word + 1 < len(word_first_token) else len(context_ids) - 1)
      answer_tokens = tokenizer.convert_ids_to_tokens(answers[example_index])
      answer_span = _tightest_span(context_tokens, start, end, answer_tokens)
    max_tokens = max_seq_length - len(query_ids) - 3
    windows = _window_starts(len(context_ids), max_tokens, doc_stride)
    for window_index, (start, length) in enumerate(windows):
      ids = [cls_id] + list(query_ids) + [sep_id]
      offset = len(ids)
      ids += context_ids[start:start + length] + [sep_id]
      segment = [0] * offset + [1] * (length + 1)
      token_to_word = {offset + i: token_word[start + i] for i in range(length)}
      token_to_chars = {offset + i: token_chars[start + i] for i in range(length)}
      max_context = {offset + i: _is_max_context(windows, window_index, start + i)
                     for i in range(length)}
      start_position = end_position = 0
      if answer_span is not None and start <= answer_span[0] and answer_span[1] < start + length:
        start_position = answer_span[0] - start + offset
        end_position = answer_span[1] - start + offset
      padding = [0] * (max_seq_length - len(ids))
      features.append(SquadFeature(
          unique_id=unique_id, example_index=example_index, window_index=window_index,
          tokens=tokenizer.convert_ids_to_tokens(ids), token_to_word=token_to_word,
          token_is_max_context=max_context, input_ids=ids + padding,
          input_mask=[1] * len(ids) + padding, segment_ids=segment + padding,
          start_position=start_position, end_position=end_position,
          is_impossible=start_position == 0, context_start=start, token_to_chars=token_to_chars))
      unique_id += 1
  return features


def feature_arrays(features: Sequence[SquadFeature]) -> Dict[str, np.ndarray]:
  """The record columns (`FEATURE_NAMES`) of `features`: int64 [n, seq] or [n, 1]."""
  def column(values):
    return np.asarray(values, np.int64).reshape(len(features), -1)
  return {'unique_ids': column([f.unique_id for f in features]),
          'input_ids': column([f.input_ids for f in features]),
          'input_mask': column([f.input_mask for f in features]),
          'segment_ids': column([f.segment_ids for f in features]),
          'start_positions': column([f.start_position for f in features]),
          'end_positions': column([f.end_position for f in features]),
          'is_impossible': column([int(f.is_impossible) for f in features])}


def eval_sidecar_path(record_path: str) -> str:
  """`<dir>/<stem>.squad_eval.json` next to `<dir>/<stem>.tfrecord` (the metadata file's stem)."""
  meta = data_metadata.metadata_path(record_path)
  return meta[:-len(data_metadata.METADATA_SUFFIX)] + SIDECAR_SUFFIX


def write_eval_sidecar(path: str, examples: Sequence[SquadExample],
                       features: Sequence[SquadFeature], version_2_with_negative: bool) -> None:
  """Writes what `postprocess_predictions` needs (JSON, compact: each context's words and the word
  of each of its tokens once; per window only where it starts; max-context flags are recomputed
  when read)."""
  contexts: List[Dict[str, Any]] = []
  context_index: Dict[int, int] = {}
  by_example: Dict[int, List[SquadFeature]] = {}
  for feature in features:
    by_example.setdefault(feature.example_index, []).append(feature)
  example_rows = []
  for index, e in enumerate(examples):
    if id(e.doc_words) not in context_index:
      token_word: Dict[int, int] = {}
      token_chars: Dict[int, Tuple[int, int]] = {}
      for f in by_example.get(index, []):
        offset = min(f.token_to_word, default=0)
        for position, word in f.token_to_word.items():
          token_word[f.context_start + position - offset] = word
          token_chars[f.context_start + position - offset] = f.token_to_chars.get(
              position, (0, len(e.doc_words[word])))
      context_index[id(e.doc_words)] = len(contexts)
      contexts.append({'words': e.doc_words,
                       'token_word': [token_word[i] for i in range(len(token_word))],
                       'token_chars': [list(token_chars[i]) for i in range(len(token_chars))]})
    example_rows.append({'qas_id': e.qas_id, 'context': context_index[id(e.doc_words)],
                         'answers': e.answers, 'is_impossible': e.is_impossible})
  payload = {
      'version_2_with_negative': version_2_with_negative, 'contexts': contexts,
      'examples': example_rows,
      'features': [[f.unique_id, f.example_index, min(f.token_to_word, default=0), f.context_start,
                    len(f.token_to_word)] for f in features]}
  file_utils.atomic_write_text(path, json.dumps(payload))


def read_eval_sidecar(path: str) -> Tuple[List[SquadExample], List[SquadFeature], bool]:
  """`(examples, features, version_2_with_negative)` from `write_eval_sidecar`'s file (the
  features carry only the fields postprocessing reads).

  Raises:
    FileNotFoundError: no such file (naming the tool that writes it).
    ValueError: the file is not an eval sidecar.
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(f'{path}: no SQuAD eval sidecar; expected the file that '
                            '`create_finetuning_data --task=squad` writes next to the records')
  with open(path, encoding='utf-8') as f:
    try:
      payload = json.load(f)
    except json.JSONDecodeError as e:
      raise ValueError(f'{path}: not valid JSON ({e}); expected a SQuAD eval sidecar') from None
  if not isinstance(payload, dict) or not {'contexts', 'examples', 'features'} <= set(payload):
    raise ValueError(f'{path}: expected a SQuAD eval sidecar with contexts, examples and '
                     'features')
  contexts = payload['contexts']
  rows = payload['examples']
  examples = [SquadExample(qas_id=e['qas_id'], question_text='',
                           doc_words=contexts[e['context']]['words'], answers=e['answers'],
                           is_impossible=e['is_impossible']) for e in rows]
  windows: Dict[int, List[Tuple[int, int]]] = {}
  for _, example_index, _, start, length in payload['features']:
    windows.setdefault(example_index, []).append((start, length))
  features, seen = [], {}
  for unique_id, example_index, offset, start, length in payload['features']:
    window_index = seen.get(example_index, 0)
    seen[example_index] = window_index + 1
    context = contexts[rows[example_index]['context']]
    token_word = context['token_word']
    token_chars = context.get('token_chars')  # absent in sidecars of whole-word answers
    spans = windows[example_index]
    features.append(SquadFeature(
        unique_id=unique_id, example_index=example_index, window_index=window_index, tokens=[],
        token_to_word={offset + i: token_word[start + i] for i in range(length)},
        token_is_max_context={offset + i: _is_max_context(spans, window_index, start + i)
                              for i in range(length)},
        input_ids=[], input_mask=[], segment_ids=[], context_start=start,
        token_to_chars=({offset + i: tuple(token_chars[start + i]) for i in range(length)}
                        if token_chars else {})))
  return examples, features, bool(payload['version_2_with_negative'])


def write_squad_data(input_file: str, output_file: str, tokenizer: WordPieceTokenizer,
                     max_seq_length: int = 384, doc_stride: int = 128, max_query_length: int = 64,
                     version_2_with_negative: bool = False, gzip_compress: bool = False,
                     metadata: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
  """SQuAD JSON -> TFRecords, their eval sidecar and their metadata file.

  The same records serve training and evaluation.

  Args:
    input_file: SQuAD v1.1 / v2.0 JSON.
    output_file: the TFRecord file to write.
    tokenizer: the WordPiece tokenizer.
    max_seq_length: tokens per window.
    doc_stride: tokens between consecutive windows of a long context.
    max_query_length: question tokens kept.
    version_2_with_negative: read `is_impossible` (SQuAD v2.0).
    gzip_compress: GZIP the records.
    metadata: fields to start the metadata with (format, tool, ...).

  Returns:
    The metadata written next to the records.

  Example:
    >>> write_squad_data('train-v1.1.json', 'out/train.tfrecord', tokenizer)['num_features']
  """
  examples = read_squad_examples(input_file, is_training=False,
                                 version_2_with_negative=version_2_with_negative)
  if not examples:
    raise ValueError(f'{input_file}: holds no questions')
  features = convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                          max_query_length)
  arrays = feature_arrays(features)
  data, lengths = tfrecord_writer.encode_examples(arrays, {})
  framed, _ = tfrecord_writer.frame_records(data, lengths)
  with tfrecord_writer.AtomicRecordFile(output_file, gzip_compress=gzip_compress) as f:
    f.write(framed.tobytes())
  sidecar = eval_sidecar_path(output_file)
  write_eval_sidecar(sidecar, examples, features, version_2_with_negative)
  metadata = dict(metadata or {})
  metadata.update(
      task='squad', max_seq_length=max_seq_length, doc_stride=doc_stride,
      max_query_length=max_query_length, version_2_with_negative=version_2_with_negative,
      num_questions=len(examples), num_examples=len(features),
      num_impossible_questions=sum(e.is_impossible for e in examples),
      num_unlocated_answers=sum(not e.is_impossible and e.answers and e.start_word < 0
                                for e in examples),
      num_windows_without_answer=sum(f.is_impossible for f in features),
      feature_names=list(arrays), eval_sidecar=os.path.basename(sidecar),
      **tokenizer.metadata_fields(), compression='GZIP' if gzip_compress else '',
      input_file=input_file, files=[os.path.basename(output_file)])
  data_metadata.write_metadata(data_metadata.metadata_path(output_file), metadata)
  return metadata


def _top_indices(logits: np.ndarray, n: int) -> List[int]:
  return [int(i) for i in np.argsort(-logits, kind='stable')[:n]]


Candidate = Tuple[float, int, int, int, Optional[int]]


def _span_candidates(features: Sequence[SquadFeature],
                     logits: Mapping[int, Tuple[np.ndarray, np.ndarray]], n_best_size: int,
                     max_answer_length: int) -> Tuple[List[Candidate], Optional[float]]:
  """The valid spans of one example's windows as `(start + end logit, first word, last word,
  first character in the first word, end character in the last word or None)`, best first, and
  the lowest null score `start[0] + end[0]` over its windows (None: no logits)."""
  candidates: List[Candidate] = []
  null_score = None
  for feature in features:
    if feature.unique_id not in logits:
      continue
    start_logits, end_logits = (np.asarray(x, np.float64) for x in logits[feature.unique_id])
    window_null = float(start_logits[0] + end_logits[0])
    null_score = window_null if null_score is None else min(null_score, window_null)
    for start in _top_indices(start_logits, n_best_size):
      if start not in feature.token_to_word or not feature.token_is_max_context.get(start):
        continue
      for end in _top_indices(end_logits, n_best_size):
        if end not in feature.token_to_word or end < start or end - start + 1 > max_answer_length:
          continue
        candidates.append((float(start_logits[start] + end_logits[end]),
                           feature.token_to_word[start], feature.token_to_word[end],
                           feature.token_to_chars.get(start, (0, None))[0],
                           feature.token_to_chars.get(end, (0, None))[1]))
  candidates.sort(key=lambda c: -c[0])
  return candidates, null_score


def answer_text(words: Sequence[str], candidate: Candidate) -> str:
  """The text of a span: its words joined by spaces, the first cut from the first token's
  character and the last up to the last token's end ('1887' rather than '1887,')."""
  _, first, last, begin, end = candidate
  chosen = list(words[first:last + 1])
  chosen[-1] = chosen[-1][:end] if end is not None else chosen[-1]
  chosen[0] = chosen[0][begin:]
  return ' '.join(chosen)


def postprocess_predictions(examples: Sequence[SquadExample], features: Sequence[SquadFeature],
                            logits: Mapping[int, Tuple[np.ndarray, np.ndarray]],
                            n_best_size: int = 20, max_answer_length: int = 30,
                            version_2_with_negative: bool = False,
                            null_score_diff_threshold: float = 0.0,
                            nbest: Optional[Dict[str, List[Dict[str, Any]]]] = None
                            ) -> Tuple[Dict[str, str], Dict[str, float]]:
  """Answer text per question from the start/end logits of its windows.

  For each window, the `n_best_size` best starts and ends make candidate spans (start <= end,
  both context tokens, start in its max-context window, at most `max_answer_length` tokens);
  the best-scoring span (start + end logit) over all windows wins, and its text is the context
  text its tokens cover (`answer_text`: words joined by spaces, the first and last cut to the
  characters of the first and last token). v2.0: the null score is the lowest
  `start[0] + end[0]` over the windows; the answer is '' when `null - best > threshold`.

  Args:
    examples: the examples (index = `SquadFeature.example_index`).
    features: their windows.
    logits: unique_id -> (start logits [seq], end logits [seq]); windows without logits are
      skipped.
    n_best_size: starts and ends considered per window (and answers kept in `nbest`).
    max_answer_length: longest answer in tokens.
    version_2_with_negative: allow the null answer.
    null_score_diff_threshold: v2.0 threshold on `null score - best span score`.
    nbest: when given, filled with qas_id -> up to `n_best_size` distinct answers
      `{'text', 'score', 'probability'}`, best first (probabilities: softmax over them).

  Returns:
    `(predictions, score_diffs)`: qas_id -> answer text, and qas_id -> `null - best` (v2.0 only).
  """
  by_example: Dict[int, List[SquadFeature]] = {}
  for feature in features:
    by_example.setdefault(feature.example_index, []).append(feature)
  predictions: Dict[str, str] = {}
  score_diffs: Dict[str, float] = {}
  for example_index, example in enumerate(examples):
    candidates, null_score = _span_candidates(by_example.get(example_index, []), logits,
                                              n_best_size, max_answer_length)
    best_score = candidates[0][0] if candidates else None
    text = answer_text(example.doc_words, candidates[0]) if candidates else ''
    if version_2_with_negative:
      null = null_score if null_score is not None else 0.0
      diff = null - (best_score if best_score is not None else -np.inf)
      score_diffs[example.qas_id] = float(diff)
      if diff > null_score_diff_threshold:
        text = ''
    predictions[example.qas_id] = text
    if nbest is not None:
      nbest[example.qas_id] = _nbest_entries(example, candidates, n_best_size)
  return predictions, score_diffs


def _nbest_entries(example: SquadExample, candidates: Sequence[Candidate],
                   n_best_size: int) -> List[Dict[str, Any]]:
  entries: List[Dict[str, Any]] = []
  seen = set()
  for candidate in candidates:
    score, text = candidate[0], answer_text(example.doc_words, candidate)
    if text in seen:
      continue
    seen.add(text)
    entries.append({'text': text, 'score': score})
    if len(entries) == n_best_size:
      break
  if not entries:
    entries.append({'text': '', 'score': 0.0})
  scores = np.array([e['score'] for e in entries])
  probabilities = np.exp(scores - scores.max())
  probabilities /= probabilities.sum()
  for entry, probability in zip(entries, probabilities):
    entry['probability'] = float(probability)
  return entries
