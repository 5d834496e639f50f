"""Fine-tuning TFRecords from labelled text: sentence prediction (CSV/TSV/JSONL), tagging (CoNLL).

Sentence prediction: one example per row; columns `text`, optional `text_b` (a pair), `label`
(names configurable). Labels are class names mapped to ids through a label list (given, taken from
another split's metadata, or the sorted distinct labels: numerically when all are integers), or
floats for regression (`label_type='float'`). Layout `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`
(segment ids 0/1), the longer text truncated first; zero padding to `max_seq_length`.
Features: `input_ids`, `input_mask`, `segment_ids` int64[seq], `label_ids` int64[1] or float[1],
`example_id` int64[1] (the row index).

Tagging: CoNLL-style files, one `token ... tag` line per word (whitespace-separated; the first
column is the word, the last the tag), a blank line between sentences, `-DOCSTART-` lines skipped.
Each word is WordPiece-tokenized on its own; its tag id goes to its first sub-word and
`ignore_label_id` (-1) to every other position. A sentence longer than `max_seq_length - 2`
sub-words is split into several examples at word boundaries (`sub_sentence_id` 0, 1, ...).
Features: `input_ids`, `input_mask`, `segment_ids`, `label_ids` int64[seq], `sentence_id`,
`sub_sentence_id` int64[1].

SQuAD (task 'squad'): SQuAD v1.1 / v2.0 JSON to span windows and an eval sidecar, see `squad_lib`.

Next to the records, `<stem>.metadata.json` (see `data_metadata.metadata_path`) records the task,
`num_classes`, `label_list`, `max_seq_length`, counts and the vocabulary; the loaders compare it
with the config.

Example:
  >>> create_finetuning_data('sentence_prediction', 'train.tsv', 'out/train.tfrecord',
  ...                        vocab_file='vocab.txt', max_seq_length=128)
  {'num_classes': 2, 'label_list': ['0', '1'], ...}
"""

import csv
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from official.nlp.data import data_metadata
from official.nlp.data import squad_lib
from official.nlp.data import tfrecord_writer
from official.nlp.data import vocab_assets
from official.nlp.data.tokenization import CLS_TOKEN, SEP_TOKEN, UNK_TOKEN
from official.nlp.data.tokenization import WordPieceTokenizer

# The same as sentence_prediction_dataloader.FINETUNING_FORMAT.
FORMAT = 'mlm_garden.finetuning_data'
FORMAT_VERSION = 1
TASKS = ('sentence_prediction', 'tagging', 'squad')
INPUT_FORMATS = ('auto', 'csv', 'tsv', 'jsonl', 'conll')
_EXTENSIONS = {'.csv': 'csv', '.tsv': 'tsv', '.jsonl': 'jsonl', '.json': 'jsonl',
               '.conll': 'conll', '.iob': 'conll', '.bio': 'conll'}


class SentenceExample:
  """One row: `line` (1-based, for messages), `text`, `text_b` (or None), `label` (a string)."""

  def __init__(self, line: int, text: str, text_b: Optional[str], label: str):
    self.line, self.text, self.text_b, self.label = line, text, text_b, label


class TaggedSentence:
  """One CoNLL sentence: `line` of its first word, `words` and their `tags`."""

  def __init__(self, line: int, words: List[str], tags: List[str]):
    self.line, self.words, self.tags = line, words, tags


def detect_format(path: str, input_format: str, task: str) -> str:
  """`input_format`, or with 'auto' the format of `path`'s extension (tagging: 'conll')."""
  if input_format not in INPUT_FORMATS:
    raise ValueError(f'input_format must be one of {list(INPUT_FORMATS)}, found {input_format!r}')
  if input_format != 'auto':
    return input_format
  if task == 'tagging':
    return 'conll'
  extension = os.path.splitext(path)[1].lower()
  if extension not in _EXTENSIONS or _EXTENSIONS[extension] == 'conll':
    raise ValueError(f'{path}: cannot tell the format from the extension {extension!r}; set '
                     "input_format to 'csv', 'tsv' or 'jsonl'")
  return _EXTENSIONS[extension]


def read_sentence_examples(path: str, input_format: str = 'auto', text_column: str = 'text',
                           text_b_column: Optional[str] = 'text_b', label_column: str = 'label'
                           ) -> List[SentenceExample]:
  """Reads a CSV/TSV file with a header row, or a JSONL file of objects.

  Args:
    path: the file.
    input_format: 'auto' (by extension), 'csv', 'tsv' or 'jsonl'.
    text_column: the first text's column (key).
    text_b_column: the second text's column; used when the file has it (None/'': never).
    label_column: the label's column.

  Raises:
    FileNotFoundError: no such file.
    ValueError: a missing column, an empty text or label, or a bad JSON line, naming the file and
      the line.
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(f'input_file: no such file: {path!r}')
  input_format = detect_format(path, input_format, 'sentence_prediction')
  examples = []
  with open(path, encoding='utf-8', newline='') as f:
    if input_format == 'jsonl':
      rows = _jsonl_rows(f, path)
    else:
      rows = _table_rows(f, path, input_format, [text_column, label_column])
    for line, row in rows:
      text = row.get(text_column)
      if text is None:
        raise ValueError(f'{path}:{line}: no {text_column!r} field; found {sorted(row)}')
      label = row.get(label_column)
      if label is None or (isinstance(label, str) and not label.strip()):
        raise ValueError(f'{path}:{line}: empty or missing label {label_column!r}')
      text_b = row.get(text_b_column) if text_b_column else None
      if not str(text).strip():
        raise ValueError(f'{path}:{line}: empty text in {text_column!r}')
      examples.append(SentenceExample(line, str(text), None if text_b is None else str(text_b),
                                      _label_string(label)))
  if not examples:
    raise ValueError(f'{path}: holds no examples')
  return examples


def _label_string(label: Any) -> str:
  if isinstance(label, bool):
    return str(int(label))
  return str(label).strip()


def _jsonl_rows(f, path: str):
  for number, text in enumerate(f, 1):
    if not text.strip():
      continue
    try:
      row = json.loads(text)
    except json.JSONDecodeError as e:
      raise ValueError(f'{path}:{number}: not valid JSON: {e.msg}') from None
    if not isinstance(row, dict):
      raise ValueError(f'{path}:{number}: expected a JSON object, found {type(row).__name__}')
    yield number, row


def _table_rows(f, path: str, input_format: str, required: Sequence[str]):
  if input_format == 'tsv':
    reader = csv.reader(f, delimiter='\t', quoting=csv.QUOTE_NONE)
  else:
    reader = csv.reader(f)
  header = next(reader, None)
  if header is None:
    raise ValueError(f'{path}: is empty (expected a header row)')
  header = [name.strip() for name in header]
  missing = [name for name in required if name not in header]
  if missing:
    raise ValueError(f'{path}:1: header has no column {missing[0]!r}; found {header}')
  for row in reader:
    if not any(cell.strip() for cell in row):
      continue
    if len(row) != len(header):
      raise ValueError(f'{path}:{reader.line_num}: expected {len(header)} {input_format} fields '
                       f'({header}), found {len(row)}')
    yield reader.line_num, dict(zip(header, row))


def read_conll(path: str) -> List[TaggedSentence]:
  """Reads a CoNLL-style file (see the module docstring).

  Raises:
    FileNotFoundError: no such file.
    ValueError: a line without a tag, naming the file and the line.
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(f'input_file: no such file: {path!r}')
  sentences: List[TaggedSentence] = []
  words: List[str] = []
  tags: List[str] = []
  start = 0
  with open(path, encoding='utf-8') as f:
    for number, line in enumerate(f, 1):
      fields = line.split()
      if not fields or fields[0] == '-DOCSTART-':
        if words:
          sentences.append(TaggedSentence(start, words, tags))
        words, tags = [], []
        continue
      if len(fields) < 2:
        raise ValueError(f'{path}:{number}: expected "token ... tag" (whitespace-separated), found '
                         f'{line.strip()!r}')
      if not words:
        start = number
      words.append(fields[0])
      tags.append(fields[-1])
  if words:
    sentences.append(TaggedSentence(start, words, tags))
  if not sentences:
    raise ValueError(f'{path}: holds no sentences')
  return sentences


def _sorted_labels(labels: Sequence[str]) -> List[str]:
  distinct = sorted(set(labels))
  try:
    return sorted(distinct, key=int)
  except ValueError:
    return distinct


def _sorted_tags(tags: Sequence[str]) -> List[str]:
  """'O' first, then by entity type with B- before I-."""
  distinct = set(tags)
  rest = sorted(distinct - {'O'}, key=lambda t: (t[2:], t[:2]) if t[1:2] == '-' else (t, ''))
  return (['O'] if 'O' in distinct else []) + rest


def _labels_from_file(label_map_file: str) -> List[str]:
  if not os.path.isfile(label_map_file):
    raise FileNotFoundError(f'label_map_file: no such file: {label_map_file!r}')
  with open(label_map_file, encoding='utf-8') as f:
    metadata = json.load(f)
  if not isinstance(metadata, dict) or not metadata.get('label_list'):
    raise ValueError(f'label_map_file {label_map_file!r}: has no label_list (expected the '
                     'metadata of another split)')
  return list(metadata['label_list'])


def pad_rows(rows: Sequence[Sequence[int]], width: int, value: int = 0) -> np.ndarray:
  """int64 [len(rows), width]: each row padded with `value` (no row may be longer than `width`).

  Example:
    >>> pad_rows([[1, 2], [3]], 3, -1)
    array([[ 1,  2, -1],
           [ 3, -1, -1]])
  """
  out = np.full((len(rows), width), value, np.int64)
  for i, row in enumerate(rows):
    out[i, :len(row)] = row
  return out


def pack_pair(tokens_a: Sequence[Any], tokens_b: Optional[Sequence[Any]], max_seq_length: int,
              cls: Any, sep: Any) -> Tuple[List[Any], List[int], bool]:
  """`[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]` and its segment ids, cut to `max_seq_length`.

  A single text loses its end; of a pair, the longer text loses its last token until both fit.
  Works on token strings and on ids alike (no padding).

  Args:
    tokens_a: the first text's tokens.
    tokens_b: the second text's tokens, or None for a single text.
    max_seq_length: the longest result, with the special tokens (>= 3 for a pair, 2 otherwise).
    cls: the `[CLS]` token (or id).
    sep: the `[SEP]` token (or id).

  Returns:
    `(tokens, segment ids: 0 up to the first [SEP], 1 after, truncated?)`.

  Example:
    >>> pack_pair(['a', 'b', 'c'], ['d'], 6, '[CLS]', '[SEP]')
    (['[CLS]', 'a', 'b', '[SEP]', 'd', '[SEP]'], [0, 0, 0, 0, 1, 1], True)
  """
  tokens_a = list(tokens_a)
  if tokens_b is None:
    budget = max_seq_length - 2
    truncated = len(tokens_a) > budget
    row = [cls] + tokens_a[:budget] + [sep]
    return row, [0] * len(row), truncated
  tokens_b = list(tokens_b)
  budget = max_seq_length - 3
  truncated = len(tokens_a) + len(tokens_b) > budget
  while len(tokens_a) + len(tokens_b) > budget:
    (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()
  row = [cls] + tokens_a + [sep] + tokens_b + [sep]
  return row, [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1), truncated


def encode_sentence_examples(examples: Sequence[SentenceExample], tokenizer: WordPieceTokenizer,
                             max_seq_length: int, label_list: Optional[List[str]],
                             label_type: str = 'int', source: str = 'input'
                             ) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray], int]:
  """Token ids, masks, segments and labels of sentence(-pair) examples.

  Args:
    examples: the rows.
    tokenizer: the WordPiece tokenizer.
    max_seq_length: sequence length (including [CLS] and [SEP]s).
    label_list: class names, index = label id (ignored for 'float').
    label_type: 'int' (classes) or 'float' (regression).
    source: the input file, for messages.

  Returns:
    `(int features, float features, number of truncated examples)`, arrays of [n, width].

  Raises:
    ValueError: an unknown label or a non-numeric regression label, naming the file and line.
  """
  cls_id, sep_id = tokenizer.convert_tokens_to_ids([CLS_TOKEN, SEP_TOKEN])
  texts_a = tokenizer.encode_batch([e.text for e in examples])
  pair_rows = [i for i, e in enumerate(examples) if e.text_b is not None]
  texts_b = dict(zip(pair_rows, tokenizer.encode_batch([examples[i].text_b for i in pair_rows])))
  ids, segments, truncated = [], [], 0
  for i, tokens_a in enumerate(texts_a):
    row, segment, cut = pack_pair(tokens_a, texts_b.get(i), max_seq_length, cls_id, sep_id)
    ids.append(row)
    segments.append(segment)
    truncated += cut
  int_features = {'input_ids': pad_rows(ids, max_seq_length),
                  'input_mask': pad_rows([[1] * len(r) for r in ids], max_seq_length),
                  'segment_ids': pad_rows(segments, max_seq_length)}
  float_features = {}
  if label_type == 'float':
    values = []
    for e in examples:
      try:
        values.append(float(e.label))
      except ValueError:
        raise ValueError(f'{source}:{e.line}: label {e.label!r} is not a number (label_type '
                         'float)') from None
    float_features['label_ids'] = np.asarray(values, np.float32)[:, None]
  else:
    index = {name: i for i, name in enumerate(label_list)}
    for e in examples:
      if e.label not in index:
        raise ValueError(f'{source}:{e.line}: label {e.label!r} is not in the label list '
                         f'{label_list}')
    int_features['label_ids'] = np.asarray([index[e.label] for e in examples], np.int64)[:, None]
  int_features['example_id'] = np.arange(len(examples), dtype=np.int64)[:, None]
  return int_features, float_features, truncated


def encode_tagged_sentences(sentences: Sequence[TaggedSentence], tokenizer: WordPieceTokenizer,
                            max_seq_length: int, label_list: List[str], ignore_label_id: int = -1,
                            source: str = 'input') -> Tuple[Dict[str, np.ndarray], int]:
  """Token ids and first-sub-word labels of CoNLL sentences (long ones split into several).

  Returns:
    `(int features [examples, width], number of sentences that were split)`.

  Raises:
    ValueError: a tag not in `label_list`, naming the file and line.
  """
  if ignore_label_id in range(len(label_list)):
    raise ValueError(f'ignore_label_id {ignore_label_id} is a tag id (0..{len(label_list) - 1}); '
                     'use a negative id')
  index = {name: i for i, name in enumerate(label_list)}
  for sentence in sentences:
    for offset, (word, tag) in enumerate(zip(sentence.words, sentence.tags)):
      if tag not in index:
        raise ValueError(f'{source}:{sentence.line + offset}: tag {tag!r} of word {word!r} is not '
                         f'in the label list {label_list}')
  return encode_word_labels([(s.words, [index[t] for t in s.tags]) for s in sentences], tokenizer,
                            max_seq_length, ignore_label_id)


def encode_word_labels(sentences: Sequence[Tuple[Sequence[str], Sequence[int]]], tokenizer: Any,
                       max_seq_length: int, ignore_label_id: int = -1,
                       sentence_ids: Optional[Sequence[int]] = None,
                       long_word: str = 'truncate') -> Tuple[Dict[str, np.ndarray], int]:
  """Token ids and first-sub-word labels of pre-split sentences with label ids.

  Each word is tokenized on its own; its label goes to its first sub-word, `ignore_label_id` to
  every other position. A sentence longer than `max_seq_length - 2` sub-words becomes several
  examples, split at word boundaries (`sub_sentence_id` 0, 1, ...).

  Args:
    sentences: `(words, label ids)` per sentence.
    tokenizer: has `encode_batch(texts) -> id lists` and `convert_tokens_to_ids(tokens)` (e.g. our
      `WordPieceTokenizer`).
    max_seq_length: sequence length, with [CLS] and [SEP].
    ignore_label_id: the label of positions without a loss.
    sentence_ids: the `sentence_id` of each sentence (default: its index).
    long_word: a word of more sub-words than fit in a sequence: 'truncate' keeps its start, 'unk'
      writes it as one [UNK] (Model Garden's tagging_data_lib).

  Returns:
    `(int features [examples, width]: input_ids, input_mask, segment_ids, label_ids, sentence_id,
    sub_sentence_id; number of sentences that were split)`.

  Example:
    >>> features, _ = encode_word_labels([(['the', 'playing'], [0, 1])], tokenizer, 6)
    >>> features['label_ids']  # 'playing' -> 'play', '##ing'
    array([[-1,  0,  1, -1, -1, -1]])
  """
  if long_word not in ('truncate', 'unk'):
    raise ValueError(f"long_word must be 'truncate' or 'unk', found {long_word!r}")
  if sentence_ids is not None and len(sentence_ids) != len(sentences):
    raise ValueError(f'sentence_ids has {len(sentence_ids)} ids for {len(sentences)} sentences')
  cls_id, sep_id, unk_id = tokenizer.convert_tokens_to_ids([CLS_TOKEN, SEP_TOKEN, UNK_TOKEN])
  flat_words = [w for words, _ in sentences for w in words]
  pieces = tokenizer.encode_batch(flat_words) if flat_words else []
  budget = max_seq_length - 2
  ids, labels, out_sentence_ids, sub_ids, num_split = [], [], [], [], 0
  cursor = 0
  for number, (words, word_labels) in enumerate(sentences):
    chunks: List[Tuple[List[int], List[int]]] = [([], [])]
    for offset, label in enumerate(word_labels):
      word_pieces = list(pieces[cursor + offset]) or [unk_id]
      if len(word_pieces) > budget:  # a single word longer than a sequence
        word_pieces = [unk_id] if long_word == 'unk' else word_pieces[:budget]
      if len(chunks[-1][0]) + len(word_pieces) > budget:
        chunks.append(([], []))
      chunks[-1][0].extend(word_pieces)
      chunks[-1][1].extend([label] + [ignore_label_id] * (len(word_pieces) - 1))
    cursor += len(words)
    num_split += len(chunks) > 1
    for sub, (chunk_ids, chunk_labels) in enumerate(chunks):
      ids.append([cls_id] + chunk_ids + [sep_id])
      labels.append([ignore_label_id] + chunk_labels + [ignore_label_id])
      out_sentence_ids.append(number if sentence_ids is None else sentence_ids[number])
      sub_ids.append(sub)
  features = {'input_ids': pad_rows(ids, max_seq_length),
              'input_mask': pad_rows([[1] * len(r) for r in ids], max_seq_length),
              'segment_ids': np.zeros((len(ids), max_seq_length), np.int64),
              'label_ids': pad_rows(labels, max_seq_length, ignore_label_id),
              'sentence_id': np.asarray(out_sentence_ids, np.int64).reshape(-1, 1),
              'sub_sentence_id': np.asarray(sub_ids, np.int64).reshape(-1, 1)}
  return features, num_split


def encode_words(words: Sequence[str], tokenizer: WordPieceTokenizer, max_seq_length: int
                 ) -> Dict[str, np.ndarray]:
  """Tagging-model inputs of one pre-split sentence, with the word index of every position.

  Feed `input_ids`, `input_mask`, `segment_ids` to the model and map its per-position predictions
  back to words with `tagging.subword_to_word_labels(predictions, word_ids)`. Words that do not fit
  in `max_seq_length - 2` sub-words are left out (`word_ids` stops before them).

  Returns:
    `input_ids`, `input_mask`, `segment_ids`, `word_ids` (-1 on [CLS], [SEP], padding) int64[seq].

  Example:
    >>> encode_words(['the', 'playing'], tokenizer, 6)['word_ids']
    array([-1,  0,  1,  1, -1, -1])
  """
  cls_id, sep_id, unk_id = tokenizer.convert_tokens_to_ids([CLS_TOKEN, SEP_TOKEN, UNK_TOKEN])
  ids, word_ids = [cls_id], [-1]
  for index, pieces in enumerate(tokenizer.encode_batch(list(words)) if words else []):
    pieces = list(pieces) or [unk_id]
    if len(ids) + len(pieces) > max_seq_length - 1:
      break
    ids += pieces
    word_ids += [index] * len(pieces)
  ids.append(sep_id)
  word_ids.append(-1)
  return {'input_ids': pad_rows([ids], max_seq_length)[0],
          'input_mask': pad_rows([[1] * len(ids)], max_seq_length)[0],
          'segment_ids': np.zeros(max_seq_length, np.int64),
          'word_ids': pad_rows([word_ids], max_seq_length, -1)[0]}


def write_examples(path: str, int_features: Dict[str, np.ndarray],
                   float_features: Optional[Dict[str, np.ndarray]] = None,
                   gzip_compress: bool = False) -> None:
  """Writes one `tf.train.Example` per row of the feature arrays to a TFRecord file (no rows: an
  empty file)."""
  arrays = list(int_features.values()) + list((float_features or {}).values())
  rows = arrays[0].shape[0] if arrays else 0
  with tfrecord_writer.AtomicRecordFile(path, gzip_compress=gzip_compress) as f:
    if rows:
      data, lengths = tfrecord_writer.encode_examples(int_features, float_features or {})
      framed, _ = tfrecord_writer.frame_records(data, lengths)
      f.write(framed.tobytes())


def create_finetuning_data(task: str, input_file: str, output_file: str,
                           vocab_file: Optional[str] = None, *,
                           tokenizer_json: Optional[str] = None,
                           tokenizer: Optional[WordPieceTokenizer] = None,
                           do_lower_case: bool = True, max_seq_length: int = 128,
                           input_format: str = 'auto', text_column: str = 'text',
                           text_b_column: Optional[str] = 'text_b', label_column: str = 'label',
                           label_type: str = 'int', label_list: Optional[Sequence[str]] = None,
                           label_map_file: Optional[str] = None, ignore_label_id: int = -1,
                           gzip_compress: bool = False, doc_stride: int = 128,
                           max_query_length: int = 64,
                           version_2_with_negative: bool = False) -> Dict[str, Any]:
  """Writes fine-tuning TFRecords and their metadata file (see the module docstring).

  Args:
    task: 'sentence_prediction', 'tagging' or 'squad' (SQuAD JSON; see `squad_lib`).
    input_file: the labelled text file.
    output_file: the TFRecord file to write.
    vocab_file: BERT vocab.txt (or give `tokenizer_json` or `tokenizer`).
    tokenizer_json: a Hugging Face tokenizer.json.
    tokenizer: a ready tokenizer.
    do_lower_case: lower-case (with `vocab_file`).
    max_seq_length: sequence length.
    input_format: 'auto', 'csv', 'tsv', 'jsonl' (sentence prediction) or 'conll' (tagging).
    text_column: sentence prediction: the first text's column.
    text_b_column: sentence prediction: the second text's column, used when present.
    label_column: sentence prediction: the label's column.
    label_type: sentence prediction: 'int' (classes) or 'float' (regression).
    label_list: the class names / tags in id order (default: from `label_map_file`, else sorted
      distinct labels of the file). Give the train split's list to the other splits.
    label_map_file: a metadata JSON of another split to take `label_list` from.
    ignore_label_id: tagging: the label of positions without a loss.
    gzip_compress: GZIP the records (read with `file_type: tfrecord_compressed`).
    doc_stride: squad: tokens between consecutive windows of a long context.
    max_query_length: squad: question tokens kept.
    version_2_with_negative: squad: SQuAD v2.0 (read `is_impossible`).

  Returns:
    The metadata written next to the records.
  """
  if task not in TASKS:
    raise ValueError(f'task must be one of {list(TASKS)}, found {task!r}')
  if label_type not in ('int', 'float'):
    raise ValueError(f"label_type must be 'int' or 'float', found {label_type!r}")
  if max_seq_length < 3:
    raise ValueError(f'max_seq_length must be >= 3, found {max_seq_length}')
  if tokenizer is None:
    tokenizer = vocab_assets.load_tokenizer_from_flags(vocab_file, tokenizer_json, do_lower_case)
  if task == 'squad':
    return squad_lib.write_squad_data(
        input_file, output_file, tokenizer, max_seq_length, doc_stride, max_query_length,
        version_2_with_negative, gzip_compress,
        metadata={'format': FORMAT, 'format_version': FORMAT_VERSION,
                  'tool': 'create_finetuning_data'})
  if label_list is None and label_map_file:
    label_list = _labels_from_file(label_map_file)
  label_list = list(label_list) if label_list else None
  metadata: Dict[str, Any] = {'format': FORMAT, 'format_version': FORMAT_VERSION, 'task': task,
                              'tool': 'create_finetuning_data', 'max_seq_length': max_seq_length}
  float_features: Dict[str, np.ndarray] = {}
  if task == 'sentence_prediction':
    examples = read_sentence_examples(input_file, input_format, text_column, text_b_column,
                                      label_column)
    if label_type == 'int' and label_list is None:
      label_list = _sorted_labels([e.label for e in examples])
    int_features, float_features, truncated = encode_sentence_examples(
        examples, tokenizer, max_seq_length, label_list, label_type, input_file)
    metadata.update(
        label_type=label_type, num_classes=1 if label_type == 'float' else len(label_list),
        label_list=None if label_type == 'float' else label_list,
        num_examples=len(examples), num_pairs=sum(e.text_b is not None for e in examples),
        num_truncated=truncated,
        columns={'text': text_column, 'text_b': text_b_column or None, 'label': label_column})
  else:
    sentences = read_conll(input_file)
    if label_list is None:
      label_list = _sorted_tags([t for s in sentences for t in s.tags])
    int_features, num_split = encode_tagged_sentences(
        sentences, tokenizer, max_seq_length, label_list, ignore_label_id, input_file)
    metadata.update(num_classes=len(label_list), label_list=label_list,
                    ignore_label_id=ignore_label_id, num_sentences=len(sentences),
                    num_words=sum(len(s.words) for s in sentences),
                    num_examples=int(int_features['input_ids'].shape[0]),
                    num_split_sentences=num_split)
  write_examples(output_file, int_features, float_features, gzip_compress)
  metadata.update(
      feature_names=list(int_features) + list(float_features),
      **tokenizer.metadata_fields(),
      compression='GZIP' if gzip_compress else '', input_file=input_file,
      files=[os.path.basename(output_file)])
  data_metadata.write_metadata(data_metadata.metadata_path(output_file), metadata)
  return metadata
