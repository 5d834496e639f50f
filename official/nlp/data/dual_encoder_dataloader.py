"""Reads text pairs for the dual encoder (retrieval) task and tokenizes them while reading.

Record schema (Model Garden's): one string feature per text field, e.g. `left_input` (a query)
and `right_input` (its matching passage). The left fields are packed into one BERT input
(`[CLS] a [SEP] b [SEP]` with several fields), the right fields into another, with the WordPiece
vocabulary `vocab_file` (`layers.BertTokenizer` and `layers.BertPackInputs`; they need
`tensorflow-text`).

Each batch is a dict of `left_word_ids`, `left_mask`, `left_type_ids`, `right_word_ids`,
`right_mask`, `right_type_ids`, int32 [batch, seq_length]: the inputs of `models.DualEncoder`.
There are no labels: right text i is the positive of left text i, the rest of the batch its
negatives.

Example:
  >>> params = DualEncoderDataConfig(input_path='pairs.tfrecord', vocab_file='vocab.txt',
  ...                                seq_length=64, global_batch_size=32)
  >>> batch = next(iter(DualEncoderDataLoader(params).load()))
  >>> batch['left_word_ids'].shape
  TensorShape([32, 64])
"""

import dataclasses
from typing import Dict, Optional, Sequence, Tuple

import tensorflow as tf

from official.core import config_definitions as cfg
from official.modeling import hyperparams
from official.nlp.data import data_loader_factory
from official.nlp.data import pretrain_dataloader
from official.nlp.data import sentence_prediction_dataloader

_NO_HUB = ('TF Hub preprocessing models are not supported by mlm-garden: set vocab_file (and '
           'lower_case) instead')
_SIDES = ('left', 'right')


@dataclasses.dataclass
class DualEncoderDataConfig(cfg.DataConfig):
  """Dual-encoder text pairs (Model Garden's field names and defaults).

  Attributes:
    input_path: the TFRecord files of the texts.
    global_batch_size: pairs per batch (each pair's negatives are the batch's other pairs).
    vocab_file: the WordPiece vocabulary (vocab.txt).
    lower_case: lower-case the text first.
    left_text_fields: the string features packed into the left input.
    right_text_fields: the string features packed into the right input.
    is_training: shuffle and repeat.
    seq_length: tokens per input.
    file_type: 'tfrecord' or 'tfrecord_compressed' (GZIP).
  """
  input_path: str = ''
  global_batch_size: int = hyperparams.field(32, ge=0)
  vocab_file: str = ''
  lower_case: bool = True
  preprocessing_hub_module_url: str = hyperparams.unsupported('', _NO_HUB)
  left_text_fields: Tuple[str, ...] = ('left_input',)
  right_text_fields: Tuple[str, ...] = ('right_input',)
  is_training: Optional[bool] = True
  seq_length: int = hyperparams.field(128, ge=2)
  file_type: str = hyperparams.field('tfrecord', choices=('tfrecord', 'tfrecord_compressed'))


@data_loader_factory.register_data_loader_cls(DualEncoderDataConfig)
class DualEncoderDataLoader:
  """Builds the `tf.data` pipeline for `DualEncoderDataConfig` (one dict per batch).

  Args:
    params: the data config.

  Raises:
    ValueError: TFDS input, no `input_path`, no `vocab_file` (or a TF Hub preprocessing model),
      no text fields, or a field on both sides.

  Example:
    >>> sorted(next(iter(DualEncoderDataLoader(params).load())))
    ['left_mask', 'left_type_ids', 'left_word_ids', 'right_mask', 'right_type_ids',
     'right_word_ids']
  """

  def __init__(self, params: DualEncoderDataConfig):
    if params.tfds_name or params.tfds_split:
      raise ValueError(f'tfds_name={params.tfds_name!r}: TFDS input is not supported by '
                       'mlm-garden; write the texts to TFRecords and set input_path')
    if not params.input_path:
      raise ValueError('input_path: expected the TFRecord files of the text pairs, found none')
    if params.preprocessing_hub_module_url:
      raise ValueError(f'preprocessing_hub_module_url={params.preprocessing_hub_module_url!r}: '
                       f'{_NO_HUB}')
    if not params.vocab_file:
      raise ValueError('vocab_file: expected the WordPiece vocabulary (vocab.txt), found none')
    self._fields = {'left': tuple(params.left_text_fields or ()),
                    'right': tuple(params.right_text_fields or ())}
    for side, fields in self._fields.items():
      if not fields:
        raise ValueError(f'{side}_text_fields: expected the names of the text features, found '
                         f'{fields!r}')
    shared = sorted(set(self._fields['left']) & set(self._fields['right']))
    if shared:
      raise ValueError(f'left_text_fields and right_text_fields share {shared}; expected '
                       'different features for the two sides')
    self._params = params
    self._text_processor = sentence_prediction_dataloader.TextProcessor(
        seq_length=params.seq_length, vocab_file=params.vocab_file, tokenization='WordPiece',
        lower_case=params.lower_case)

  def name_to_features_spec(self) -> Dict[str, tf.io.FixedLenFeature]:
    """The record features read: every text field, string[1]."""
    return {field: tf.io.FixedLenFeature([1], tf.string)
            for side in _SIDES for field in self._fields[side]}

  def _encode(self, parsed: Dict[str, tf.Tensor], side: str) -> Dict[str, tf.Tensor]:
    packed = self._text_processor([parsed[field] for field in self._fields[side]])
    # input_word_ids -> left_word_ids, input_mask -> left_mask, ...
    return {f'{side}_{key[len("input_"):]}': value for key, value in packed.items()}

  def _parse_batch(self, records: tf.Tensor) -> Dict[str, tf.Tensor]:
    parsed = tf.io.parse_example(records, self.name_to_features_spec())
    parsed = {name: value[:, 0] for name, value in parsed.items()}
    return {**self._encode(parsed, 'left'), **self._encode(parsed, 'right')}

  def load(self, input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns the batches: `{left,right}_{word_ids,mask,type_ids}` int32 [batch, seq_length]."""
    params = self._params
    files: Sequence[str] = pretrain_dataloader.list_input_files(params.input_path)
    sentence_prediction_dataloader.check_record_schema(
        files, self.name_to_features_spec(), params,
        'Check left_text_fields and right_text_fields.')
    return pretrain_dataloader.load_records(params, files, self._parse_batch, input_context)
