"""Reads SQuAD-style span records into `(features, labels)` batches (`bert/squad`).

Record schema (Model Garden's keys, written by `create_finetuning_data --task=squad`, see
`squad_lib`): `input_ids`, `input_mask`, `segment_ids` int64[seq_length], `start_positions`,
`end_positions`, `unique_ids`, `is_impossible` int64[1]. Training reads the first five (and
`is_impossible` with `version_2_with_negative`); evaluation also `unique_ids`, returned in the
features so that predictions can be matched with the eval sidecar.

Example:
  >>> params = QADataConfig(input_path='squad/train.tfrecord', seq_length=384)
  >>> features, labels = next(iter(QuestionAnsweringDataLoader(params).load()))
  >>> labels['start_positions'].shape
  TensorShape([48])
"""

import dataclasses
from typing import Any, Dict, Optional, Tuple

import tensorflow as tf

from official.core import config_definitions as cfg
from official.modeling import hyperparams
from official.nlp.data import data_loader_factory
from official.nlp.data import pretrain_dataloader
from official.nlp.data import sentence_prediction_dataloader as sp_loader


@dataclasses.dataclass
class QADataConfig(cfg.DataConfig):
  """Question answering data (Model Garden's field names and defaults).

  Attributes:
    input_path: training: TFRecords. Evaluation: TFRecords with their eval sidecar, or (as in
      Model Garden) the raw SQuAD JSON, converted at the start with `vocab_file`, `seq_length`,
      `doc_stride`, `query_length` and `do_lower_case`.
    seq_length: tokens per window.
    version_2_with_negative: SQuAD v2.0 (questions may have no answer).
    input_preprocessed_data_path: evaluation from JSON: directory for the converted records
      (default: the model_dir).
    doc_stride: evaluation from JSON: tokens between consecutive windows.
    query_length: evaluation from JSON: question tokens kept.
    vocab_file: evaluation from JSON: the WordPiece vocabulary (or a model_dir holding one).
    do_lower_case: evaluation from JSON: lower-case the text.
    file_type: 'tfrecord' or 'tfrecord_compressed' (GZIP).
  """
  input_path: str = ''
  global_batch_size: int = hyperparams.field(48, ge=0)
  is_training: Optional[bool] = True
  seq_length: int = hyperparams.field(384, ge=4)
  version_2_with_negative: bool = False
  input_preprocessed_data_path: str = ''
  doc_stride: int = hyperparams.field(128, ge=1)
  query_length: int = hyperparams.field(64, ge=1)
  vocab_file: str = ''
  tokenization: str = hyperparams.unsupported(
      'WordPiece', 'only WordPiece tokenization is supported by mlm-garden')
  do_lower_case: bool = True
  xlnet_format: bool = hyperparams.unsupported(False, 'XLNet is not supported by mlm-garden')
  file_type: str = hyperparams.field('tfrecord', choices=('tfrecord', 'tfrecord_compressed'))


def _feature_spec(params: QADataConfig) -> Dict[str, tf.io.FixedLenFeature]:
  seq = params.seq_length
  spec = {name: tf.io.FixedLenFeature([seq], tf.int64)
          for name in ('input_ids', 'input_mask', 'segment_ids')}
  names = ['start_positions', 'end_positions']
  if params.version_2_with_negative:
    names.append('is_impossible')
  if not params.is_training:
    names.append('unique_ids')
  spec.update({name: tf.io.FixedLenFeature([1], tf.int64) for name in names})
  return spec


@data_loader_factory.register_data_loader_cls(QADataConfig)
class QuestionAnsweringDataLoader:
  """Builds the `tf.data` pipeline for `QADataConfig` (TFRecords only; the task converts JSON)."""

  def __init__(self, params: QADataConfig):
    self._params = params
    self.metadata: Optional[Dict[str, Any]] = None

  def _parse_batch(self, records: tf.Tensor
                   ) -> Tuple[Dict[str, tf.Tensor], Dict[str, tf.Tensor]]:
    params = self._params
    parsed = tf.io.parse_example(records, _feature_spec(params))
    features = {'input_word_ids': tf.cast(parsed['input_ids'], tf.int32),
                'input_mask': tf.cast(parsed['input_mask'], tf.int32),
                'input_type_ids': tf.cast(parsed['segment_ids'], tf.int32)}
    if 'unique_ids' in parsed:
      features['unique_ids'] = parsed['unique_ids'][:, 0]  # int64: ids start at 1e9
    labels = {name: tf.cast(parsed[name][:, 0], tf.int32)
              for name in ('start_positions', 'end_positions', 'is_impossible') if name in parsed}
    return features, labels

  def load(self, input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns `(features, labels)` batches.

    Returns:
      `features`: `input_word_ids`, `input_mask`, `input_type_ids` int32 [batch, seq_length]
      (evaluation: and `unique_ids` int64 [batch]); `labels`: `start_positions`,
      `end_positions` (v2.0: and `is_impossible`) int32 [batch].
    """
    params = self._params
    files = pretrain_dataloader.list_input_files(params.input_path)
    if any(f.endswith('.json') for f in files):
      raise ValueError(f'input_path {params.input_path!r}: the loader reads TFRecords; convert '
                       'SQuAD JSON with create_finetuning_data --task=squad (the question '
                       'answering task converts an evaluation JSON itself)')
    self.metadata = sp_loader.load_finetuning_metadata(files)
    sp_loader.check_metadata(self.metadata, 'squad',
                             [('seq_length', params.seq_length, 'max_seq_length'),
                              ('version_2_with_negative', params.version_2_with_negative,
                               'version_2_with_negative')])
    sp_loader.check_record_schema(files, _feature_spec(params), params,
                                  'Check seq_length and version_2_with_negative.')
    return pretrain_dataloader.load_records(params, files, self._parse_batch, input_context)
