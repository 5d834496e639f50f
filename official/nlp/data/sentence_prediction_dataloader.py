"""Reads sentence-prediction TFRecords (classification or regression) as one dict per batch.

Record schema (Model Garden's, written by `data_tools/create_finetuning_data.py`): `input_ids`,
`input_mask`, `segment_ids` int64[seq_length], the label under `label_field` (default
`label_ids`) int64[1] (classes) or float[1] (regression, `label_type: float`), and optionally
`example_id` int64[1].

Each batch is a dict, as in Model Garden: the model inputs `input_word_ids`, `input_mask`,
`input_type_ids` int32 [batch, seq_length], the label under its record name (`label_field`)
int32 or float32 [batch], `example_id` int32 [batch] with `include_example_id`, and with
`label_name: (label_field, other_name)` the same label once more under `other_name`.

As in `pretrain_dataloader`, the first record of the first files is checked before the pipeline is
built: a missing feature or one of the wrong kind or length fails at once naming the file and the
feature; a metadata file written by our data tool must agree with the config's `seq_length`.

`SentencePredictionTextDataLoader` reads records of raw text instead (`text_fields`, string[1]
each) and tokenizes them in the pipeline with the text layers (`BertTokenizer` or
`SentencepieceTokenizer`, then `BertPackInputs`; they need `tensorflow-text`).

Example:
  >>> params = SentencePredictionDataConfig(input_path='glue/train.tfrecord', seq_length=128,
  ...                                       global_batch_size=32)
  >>> batch = next(iter(SentencePredictionDataLoader(params).load()))
  >>> batch['input_word_ids'].shape, batch['label_ids'].shape
  (TensorShape([32, 128]), TensorShape([32]))
"""

import dataclasses
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import tensorflow as tf

from official.core import config_definitions as cfg
from official.modeling import hyperparams
from official.nlp.data import data_loader_factory
from official.nlp.data import data_metadata
from official.nlp.data import pretrain_dataloader
from official.nlp.modeling import layers

# The `format` of the metadata file our data tool writes next to fine-tuning records.
FINETUNING_FORMAT = 'mlm_garden.finetuning_data'


@dataclasses.dataclass
class SentencePredictionDataConfig(cfg.DataConfig):
  """Sentence-prediction data (Model Garden field names and defaults).

  Attributes:
    seq_length: tokens per example.
    label_type: 'int' (classification) or 'float' (regression).
    include_example_id: also return `example_id` [batch].
    label_field: the record feature holding the label; the batch holds it under the same key.
    label_name: `(label_field, other_key)`: also return the label under `other_key` (e.g.
      `('label_ids', 'next_sentence_labels')`).
    file_type: 'tfrecord' or 'tfrecord_compressed' (GZIP).
  """
  global_batch_size: int = hyperparams.field(32, ge=0)
  is_training: Optional[bool] = True
  seq_length: int = hyperparams.field(128, ge=2)
  label_type: str = hyperparams.field('int', choices=('int', 'float'))
  include_example_id: bool = False
  label_field: str = 'label_ids'
  label_name: Optional[Tuple[str, str]] = None
  file_type: str = hyperparams.field('tfrecord', choices=('tfrecord', 'tfrecord_compressed'))


def check_record_schema(files: Sequence[str], spec: Dict[str, tf.io.FixedLenFeature], params: Any,
                        hint: str) -> None:
  """`pretrain_dataloader.check_features` with one hint (what to check in the config) for a
  missing feature and for one of the wrong shape."""
  pretrain_dataloader.check_features(files, spec, params, missing_hint=hint,
                                     shape_hint=f'. {hint}')


def load_finetuning_metadata(files: Sequence[str]) -> Optional[Dict[str, Any]]:
  """The metadata our data tool wrote next to the first of `files`, or None.

  Raises:
    ValueError: the metadata file is not fine-tuning metadata (e.g. pretraining records).
  """
  path = data_metadata.metadata_path(files[0])
  if not os.path.isfile(path):
    return None
  with open(path, encoding='utf-8') as f:
    try:
      metadata = json.load(f)
    except json.JSONDecodeError as e:
      raise ValueError(f'metadata file {path!r} is not valid JSON: {e}') from None
  if not isinstance(metadata, dict) or metadata.get('format') != FINETUNING_FORMAT:
    found = metadata.get('format') if isinstance(metadata, dict) else type(metadata).__name__
    raise ValueError(f'metadata file {path!r}: format should be {FINETUNING_FORMAT!r}, found '
                     f'{found!r} (are these fine-tuning records?)')
  metadata['metadata_path'] = path
  return metadata


def check_metadata(metadata: Optional[Dict[str, Any]], task: str,
                   checks: Sequence[Tuple[str, Any, str]]) -> None:
  """Compares metadata values with config values.

  Args:
    metadata: from `load_finetuning_metadata` (None: nothing to check).
    task: the task the records must have been written for ('sentence_prediction' or 'tagging').
    checks: `(config field name, configured value, metadata key)` triples.

  Raises:
    ValueError: naming the metadata file, the config field and both values.
  """
  if metadata is None:
    return
  source = metadata['metadata_path']
  if metadata.get('task') != task:
    raise ValueError(f'{source}: these records were written for task {metadata.get("task")!r}, '
                     f'not {task!r}')
  for field_name, configured, key in checks:
    if key in metadata and metadata[key] != configured:
      raise ValueError(f'{field_name} is {configured!r} in the config but the records were written '
                       f'with {key}={metadata[key]!r} ({source}); make them match')


def _feature_spec(params: SentencePredictionDataConfig) -> Dict[str, tf.io.FixedLenFeature]:
  seq = params.seq_length
  label_dtype = tf.float32 if params.label_type == 'float' else tf.int64
  spec = {'input_ids': tf.io.FixedLenFeature([seq], tf.int64),
          'input_mask': tf.io.FixedLenFeature([seq], tf.int64),
          'segment_ids': tf.io.FixedLenFeature([seq], tf.int64),
          params.label_field: tf.io.FixedLenFeature([1], label_dtype)}
  if params.include_example_id:
    spec['example_id'] = tf.io.FixedLenFeature([1], tf.int64)
  return spec


# Record feature -> batch key of the model inputs (Model Garden's encoder input names).
_INPUT_KEYS = {'input_ids': 'input_word_ids', 'input_mask': 'input_mask',
               'segment_ids': 'input_type_ids'}


@data_loader_factory.register_data_loader_cls(SentencePredictionDataConfig)
class SentencePredictionDataLoader:
  """Builds the `tf.data` pipeline for `SentencePredictionDataConfig` (one dict per batch).

  Args:
    params: the data config.

  Raises:
    ValueError: `label_name` is not a `(label_field, other_key)` pair.

  Example:
    >>> batch = next(iter(SentencePredictionDataLoader(params).load()))
    >>> sorted(batch)
    ['input_mask', 'input_type_ids', 'input_word_ids', 'label_ids']
  """

  def __init__(self, params: SentencePredictionDataConfig):
    if params.label_name is not None:
      label_name = tuple(params.label_name)
      if len(label_name) != 2 or label_name[0] != params.label_field:
        raise ValueError(f'label_name must be (label_field, other_key) = ({params.label_field!r}, '
                         f'...), found {label_name!r}')
    self._params = params
    self.metadata: Optional[Dict[str, Any]] = None

  def name_to_features_spec(self) -> Dict[str, tf.io.FixedLenFeature]:
    """The record features read: `{name: tf.io.FixedLenFeature}` (labels and ids of length 1)."""
    return _feature_spec(self._params)

  def _parse_batch(self, records: tf.Tensor) -> Dict[str, tf.Tensor]:
    params = self._params
    parsed = tf.io.parse_example(records, self.name_to_features_spec())
    batch = {}
    for name, value in parsed.items():
      if name not in _INPUT_KEYS:
        value = value[:, 0]  # labels and ids: [batch, 1] -> [batch]
      if value.dtype == tf.int64:
        value = tf.cast(value, tf.int32)
      batch[_INPUT_KEYS.get(name, name)] = value
    if params.label_name is not None:
      batch[params.label_name[1]] = batch[params.label_field]
    return batch

  def load(self, input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns the batches (see the module docstring for their keys).

    Returns:
      dicts of `input_word_ids`, `input_mask`, `input_type_ids` int32 [batch, seq_length], the label
      (`label_field`) int32 or float32 [batch] (`label_type`), and `example_id` int32 [batch] with
      `include_example_id`.
    """
    params = self._params
    files = pretrain_dataloader.list_input_files(params.input_path)
    self.metadata = load_finetuning_metadata(files)
    check_metadata(self.metadata, 'sentence_prediction',
                   [('seq_length', params.seq_length, 'max_seq_length'),
                    ('label_type', params.label_type, 'label_type')])
    check_record_schema(files, self.name_to_features_spec(), params,
                        'Check seq_length, label_type (int or float), label_field and '
                        'include_example_id.')
    return pretrain_dataloader.load_records(params, files, self._parse_batch, input_context)


_NO_HUB = ('TF Hub preprocessing models are not supported by mlm-garden: set vocab_file (and '
           'tokenization, lower_case) instead')


@dataclasses.dataclass
class SentencePredictionTextDataConfig(cfg.DataConfig):
  """Sentence-prediction records of raw text, tokenized while reading (Model Garden's fields).

  Attributes:
    text_fields: the string features of the texts, packed in this order (`[CLS] a [SEP] b [SEP]`).
    label_field: the record feature holding the label; the batch holds it under the same key.
    label_type: 'int' (classification) or 'float' (regression).
    seq_length: tokens per example.
    tokenization: 'WordPiece' (`vocab_file` is a vocab.txt) or 'SentencePiece' (`vocab_file` is
      a SentencePiece model).
    vocab_file: the vocabulary or SentencePiece model.
    lower_case: lower-case the text first.
    include_example_id: also return `example_id` [batch].
    file_type: 'tfrecord' or 'tfrecord_compressed' (GZIP).
  """
  input_path: str = ''
  label_type: str = hyperparams.field('int', choices=('int', 'float'))
  text_fields: Optional[List[str]] = None
  label_field: str = 'label'
  global_batch_size: int = hyperparams.field(32, ge=0)
  seq_length: int = hyperparams.field(128, ge=2)
  is_training: Optional[bool] = True
  tokenization: str = hyperparams.field('WordPiece', choices=('WordPiece', 'SentencePiece'))
  vocab_file: str = ''
  lower_case: bool = True
  preprocessing_hub_module_url: str = hyperparams.unsupported('', _NO_HUB)
  file_type: str = hyperparams.field('tfrecord', choices=('tfrecord', 'tfrecord_compressed'))
  include_example_id: bool = False


class TextProcessor(tf.Module):
  """Raw text segments -> BERT inputs: a tokenizer layer, then `BertPackInputs`.

  Args:
    seq_length: tokens per example.
    vocab_file: a vocab.txt (WordPiece) or a SentencePiece model.
    tokenization: 'WordPiece' or 'SentencePiece'.
    lower_case: lower-case the text first.
    preprocessing_hub_module_url: not supported (Model Garden's TF Hub option).

  Call args:
    segments: string tensors [batch], one per text field.

  Returns:
    `input_word_ids`, `input_mask`, `input_type_ids` int32 [batch, seq_length].

  Example:
    >>> processor = TextProcessor(128, 'vocab.txt', 'WordPiece')
    >>> processor([tf.constant(['a question']), tf.constant(['an answer'])])['input_word_ids']
  """

  def __init__(self, seq_length: int, vocab_file: Optional[str] = None,
               tokenization: Optional[str] = None, lower_case: Optional[bool] = True,
               preprocessing_hub_module_url: Optional[str] = None):
    super().__init__()
    if preprocessing_hub_module_url:
      raise ValueError(f'preprocessing_hub_module_url={preprocessing_hub_module_url!r}: {_NO_HUB}')
    if tokenization == 'WordPiece':
      self._tokenizer = layers.BertTokenizer(vocab_file=vocab_file, lower_case=lower_case)
    elif tokenization == 'SentencePiece':
      # ALBERT's preprocessing: accents stripped as well.
      self._tokenizer = layers.SentencepieceTokenizer(model_file_path=vocab_file,
                                                      lower_case=lower_case,
                                                      strip_diacritics=True)
    else:
      raise ValueError(f"tokenization must be 'WordPiece' or 'SentencePiece', found "
                       f'{tokenization!r}')
    self._pack_inputs = layers.BertPackInputs(
        seq_length=seq_length, special_tokens_dict=self._tokenizer.get_special_tokens_dict())

  def __call__(self, segments: Sequence[tf.Tensor]) -> Dict[str, tf.Tensor]:
    pieces = []
    for segment in segments:
      ids = self._tokenizer(segment)
      if ids.shape.rank > 2:  # WordPiece: [batch, words, pieces] -> [batch, pieces]
        ids = ids.merge_dims(1, -1)
      pieces.append(tf.cast(ids, tf.int32))
    return self._pack_inputs(pieces)


@data_loader_factory.register_data_loader_cls(SentencePredictionTextDataConfig)
class SentencePredictionTextDataLoader:
  """Builds the `tf.data` pipeline for `SentencePredictionTextDataConfig`: batch dicts like
  `SentencePredictionDataLoader`'s, tokenized in the pipeline.

  Args:
    params: the data config.

  Raises:
    ValueError: no `input_path` (TFDS input is not supported), no `text_fields` or no
      `vocab_file`.

  Example:
    >>> params = SentencePredictionTextDataConfig(input_path='raw.tfrecord',
    ...     text_fields=['sentence1', 'sentence2'], vocab_file='vocab.txt', seq_length=128)
    >>> sorted(next(iter(SentencePredictionTextDataLoader(params).load())))
    ['input_mask', 'input_type_ids', 'input_word_ids', 'label']
  """

  def __init__(self, params: SentencePredictionTextDataConfig):
    if params.tfds_name or params.tfds_split:
      raise ValueError(f'tfds_name={params.tfds_name!r}: TFDS input is not supported by '
                       'mlm-garden; write the texts to TFRecords and set input_path')
    if not params.input_path:
      raise ValueError('input_path: expected the TFRecord files of the texts, found none')
    if not params.text_fields:
      raise ValueError('text_fields: expected the names of the text features, found '
                       f'{params.text_fields!r}')
    if not params.vocab_file and not params.preprocessing_hub_module_url:
      raise ValueError(f'vocab_file: expected the {params.tokenization} vocabulary, found none')
    self._params = params
    self._text_processor = TextProcessor(
        seq_length=params.seq_length, vocab_file=params.vocab_file,
        tokenization=params.tokenization, lower_case=params.lower_case,
        preprocessing_hub_module_url=params.preprocessing_hub_module_url)

  def name_to_features_spec(self) -> Dict[str, tf.io.FixedLenFeature]:
    """The record features read: the texts (string[1]), the label and `example_id`."""
    params = self._params
    spec = {field: tf.io.FixedLenFeature([1], tf.string) for field in params.text_fields}
    spec[params.label_field] = tf.io.FixedLenFeature(
        [1], tf.float32 if params.label_type == 'float' else tf.int64)
    if params.include_example_id:
      spec['example_id'] = tf.io.FixedLenFeature([1], tf.int64)
    return spec

  def _parse_batch(self, records: tf.Tensor) -> Dict[str, tf.Tensor]:
    parsed = tf.io.parse_example(records, self.name_to_features_spec())
    parsed = {name: value[:, 0] for name, value in parsed.items()}
    batch = self._text_processor([parsed[field] for field in self._params.text_fields])
    for name, value in parsed.items():
      if name not in self._params.text_fields:
        batch[name] = tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
    return batch

  def load(self, input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns the batches: `input_word_ids`, `input_mask`, `input_type_ids` int32
    [batch, seq_length], the label (`label_field`) [batch] and, with `include_example_id`,
    `example_id` [batch]."""
    params = self._params
    files = pretrain_dataloader.list_input_files(params.input_path)
    check_record_schema(files, self.name_to_features_spec(), params,
                        'Check text_fields, label_field, label_type and include_example_id.')
    return pretrain_dataloader.load_records(params, files, self._parse_batch, input_context)
