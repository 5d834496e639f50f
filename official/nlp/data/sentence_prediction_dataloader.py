"""Reads sentence-prediction TFRecords (classification or regression) as `(features, labels)`.

Record schema (Model Garden's, written by `data_tools/create_finetuning_data.py`): `input_ids`,
`input_mask`, `segment_ids` int64[seq_length], `label_ids` int64[1] (classes) or float[1]
(regression, `label_type: float`), and optionally `example_id` int64[1].

As in `pretrain_dataloader`, the first record of the first files is checked before the pipeline is
built: a missing feature or one of the wrong kind or length fails at once naming the file and the
feature; a metadata file written by our data tool must agree with the config's `seq_length`.

Example:
  >>> params = SentencePredictionDataConfig(input_path='glue/train.tfrecord', seq_length=128,
  ...                                       global_batch_size=32)
  >>> features, labels = next(iter(SentencePredictionDataLoader(params).load()))
  >>> features['input_word_ids'].shape, labels.shape
  (TensorShape([32, 128]), TensorShape([32]))
"""

import dataclasses
import json
import os
from typing import Any, Dict, Optional, Sequence, Tuple

import tensorflow as tf

from official.core import config_definitions as cfg
from official.modeling import hyperparams
from official.nlp.data import data_loader_factory
from official.nlp.data import data_metadata
from official.nlp.data import pretrain_dataloader

# The `format` of the metadata file our data tool writes next to fine-tuning records.
FINETUNING_FORMAT = 'mlm_garden.finetuning_data'


@dataclasses.dataclass
class SentencePredictionDataConfig(cfg.DataConfig):
  """Sentence-prediction data (Model Garden field names and defaults).

  Attributes:
    seq_length: tokens per example.
    label_type: 'int' (classification) or 'float' (regression).
    include_example_id: also return `example_id` [batch] in the features.
    label_field: the record feature holding the label.
    file_type: 'tfrecord' or 'tfrecord_compressed' (GZIP).
  """
  global_batch_size: int = hyperparams.field(32, ge=0)
  is_training: Optional[bool] = True
  seq_length: int = hyperparams.field(128, ge=2)
  label_type: str = hyperparams.field('int', choices=('int', 'float'))
  include_example_id: bool = False
  label_field: str = 'label_ids'
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


@data_loader_factory.register_data_loader_cls(SentencePredictionDataConfig)
class SentencePredictionDataLoader:
  """Builds the `tf.data` pipeline for `SentencePredictionDataConfig`.

  Args:
    params: the data config.
  """

  def __init__(self, params: SentencePredictionDataConfig):
    self._params = params
    self.metadata: Optional[Dict[str, Any]] = None

  def _parse_batch(self, records: tf.Tensor) -> Tuple[Dict[str, tf.Tensor], tf.Tensor]:
    params = self._params
    parsed = tf.io.parse_example(records, _feature_spec(params))
    features = {'input_word_ids': tf.cast(parsed['input_ids'], tf.int32),
                'input_mask': tf.cast(parsed['input_mask'], tf.int32),
                'input_type_ids': tf.cast(parsed['segment_ids'], tf.int32)}
    if params.include_example_id:
      features['example_id'] = tf.cast(parsed['example_id'][:, 0], tf.int32)
    labels = parsed[params.label_field][:, 0]
    labels = tf.cast(labels, tf.float32 if params.label_type == 'float' else tf.int32)
    return features, labels

  def load(self, input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns `(features, labels)` batches.

    Returns:
      `features`: `input_word_ids`, `input_mask`, `input_type_ids` int32 [batch, seq_length] (and
      `example_id` int32 [batch]); `labels`: int32 [batch] or float32 [batch] (`label_type`).
    """
    params = self._params
    files = pretrain_dataloader.list_input_files(params.input_path)
    self.metadata = load_finetuning_metadata(files)
    check_metadata(self.metadata, 'sentence_prediction',
                   [('seq_length', params.seq_length, 'max_seq_length'),
                    ('label_type', params.label_type, 'label_type')])
    check_record_schema(files, _feature_spec(params), params,
                        'Check seq_length, label_type (int or float) and include_example_id.')
    return pretrain_dataloader.load_records(params, files, self._parse_batch, input_context)
