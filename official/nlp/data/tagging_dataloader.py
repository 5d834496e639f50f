"""Reads tagging (token classification) TFRecords into `(features, labels)` batches.

Record schema (Model Garden's, written by `data_tools/create_finetuning_data.py`): `input_ids`,
`input_mask`, `segment_ids`, `label_ids` int64[seq_length], where `label_ids` holds the tag id of
each word's first sub-word and an ignore id (-1) on every other position (later sub-words,
`[CLS]`, `[SEP]`, padding); optionally `sentence_id` and `sub_sentence_id` int64[1].

Example:
  >>> params = TaggingDataConfig(input_path='conll/train.tfrecord', seq_length=128)
  >>> features, labels = next(iter(TaggingDataLoader(params).load()))
  >>> labels.shape  # -1 where no loss is taken
  TensorShape([32, 128])
"""

import dataclasses
from typing import Any, Dict, Optional, Tuple

import tensorflow as tf

from official.core import config_definitions as cfg
from official.modeling import hyperparams
from official.nlp.data import data_loader_factory
from official.nlp.data import pretrain_dataloader
from official.nlp.data import sentence_prediction_dataloader as sp_loader

# The label id the loader emits for positions without a loss.
IGNORE_LABEL_ID = -1


@dataclasses.dataclass
class TaggingDataConfig(cfg.DataConfig):
  """Tagging data (Model Garden field names and defaults, plus `ignore_label_id`).

  Attributes:
    seq_length: tokens per example.
    include_sentence_id: also return `sentence_id` and `sub_sentence_id` [batch] in the features.
    file_type: 'tfrecord' or 'tfrecord_compressed' (GZIP).
    ignore_label_id: the label id that marks positions without a loss in the records; mapped to
      -1 by the loader (mlm-garden addition; Model Garden's records use -1).
  """
  global_batch_size: int = hyperparams.field(32, ge=0)
  is_training: Optional[bool] = True
  seq_length: int = hyperparams.field(128, ge=2)
  include_sentence_id: bool = False
  file_type: str = hyperparams.field('tfrecord', choices=('tfrecord', 'tfrecord_compressed'))
  ignore_label_id: int = -1


def _feature_spec(params: TaggingDataConfig) -> Dict[str, tf.io.FixedLenFeature]:
  seq = params.seq_length
  spec = {name: tf.io.FixedLenFeature([seq], tf.int64)
          for name in ('input_ids', 'input_mask', 'segment_ids', 'label_ids')}
  if params.include_sentence_id:
    spec['sentence_id'] = tf.io.FixedLenFeature([1], tf.int64)
    spec['sub_sentence_id'] = tf.io.FixedLenFeature([1], tf.int64)
  return spec


@data_loader_factory.register_data_loader_cls(TaggingDataConfig)
class TaggingDataLoader:
  """Builds the `tf.data` pipeline for `TaggingDataConfig`."""

  def __init__(self, params: TaggingDataConfig):
    self._params = params
    self.metadata: Optional[Dict[str, Any]] = None

  def _parse_batch(self, records: tf.Tensor) -> Tuple[Dict[str, tf.Tensor], tf.Tensor]:
    params = self._params
    parsed = tf.io.parse_example(records, _feature_spec(params))
    features = {'input_word_ids': tf.cast(parsed['input_ids'], tf.int32),
                'input_mask': tf.cast(parsed['input_mask'], tf.int32),
                'input_type_ids': tf.cast(parsed['segment_ids'], tf.int32)}
    if params.include_sentence_id:
      features['sentence_id'] = tf.cast(parsed['sentence_id'][:, 0], tf.int32)
      features['sub_sentence_id'] = tf.cast(parsed['sub_sentence_id'][:, 0], tf.int32)
    labels = tf.cast(parsed['label_ids'], tf.int32)
    if params.ignore_label_id != IGNORE_LABEL_ID:
      labels = tf.where(labels == params.ignore_label_id, IGNORE_LABEL_ID, labels)
    return features, labels

  def load(self, input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns `(features, labels)` batches.

    Returns:
      `features`: `input_word_ids`, `input_mask`, `input_type_ids` int32 [batch, seq_length]
      (and `sentence_id`, `sub_sentence_id` int32 [batch]); `labels`: int32 [batch, seq_length]
      with -1 where no loss is taken.
    """
    params = self._params
    files = pretrain_dataloader.list_input_files(params.input_path)
    self.metadata = sp_loader.load_finetuning_metadata(files)
    sp_loader.check_metadata(self.metadata, 'tagging',
                             [('seq_length', params.seq_length, 'max_seq_length'),
                              ('ignore_label_id', params.ignore_label_id, 'ignore_label_id')])
    sp_loader.check_record_schema(files, _feature_spec(params), params,
                                  'Check seq_length and include_sentence_id.')
    return pretrain_dataloader.load_records(params, files, self._parse_batch, input_context)
