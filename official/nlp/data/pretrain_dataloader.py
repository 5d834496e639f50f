"""Reads masked-LM pretraining TFRecords (Google-BERT schema) into batched feature dicts.

Files are checked before the pipeline is built: an empty glob, an unreadable file, a missing feature
or a feature of the wrong length fails at once with the file name, the feature and the expected
shape, instead of a parse error deep inside a run; records written by our data tool also carry a
metadata file whose sequence length, max predictions and vocabulary size must match the config, and
which lists every file of the set with its size and checksum: a missing, extra, truncated or foreign
file is refused before training (`verify_records`). Uncompressed files without a metadata file are
checked as they are read: a file cut inside a record fails at its end, naming it (TensorFlow alone
reads it as a shorter file).

The reading and checking of record files that every loader shares is `tfrecord_reader`, and
Model Garden's XLNet loader is `xlnet_pretrain_dataloader`; both are re-exported here.

Example:
  >>> params = BertPretrainDataConfig(input_path='data/train-*.tfrecord', seq_length=128,
  ...                                 max_predictions_per_seq=20, global_batch_size=32)
  >>> dataset = BertPretrainDataLoader(params).load()
  >>> batch = next(iter(dataset))
  >>> batch['input_word_ids'].shape, batch['masked_lm_positions'].shape
  (TensorShape([32, 128]), TensorShape([32, 20]))
"""

import dataclasses
import logging
from typing import Any, Dict, Optional, Sequence

import tensorflow as tf

from official.core import config_definitions as cfg
from official.core import dataset_options
from official.modeling import hyperparams
from official.nlp.data import data_loader_factory
from official.nlp.data import data_metadata
# The record helpers every loader uses, and the XLNet loader (Model Garden keeps it in this
# module): re-exported, so their old paths keep working.
from official.nlp.data.tfrecord_reader import (check_features, compression, list_input_files,  # noqa: F401
                                               load_records, record_error_line, record_stream,
                                               records_filling_the_file, verify_records)
from official.nlp.data.xlnet_pretrain_dataloader import (XLNET_SAMPLE_STRATEGIES,  # noqa: F401
                                                         XLNetPretrainDataConfig,
                                                         XLNetPretrainDataLoader)



@dataclasses.dataclass
class BertPretrainDataConfig(cfg.DataConfig):
  """Masked-LM pretraining data (Model Garden field names and defaults).

  Attributes:
    seq_length: tokens per example (`input_ids` length).
    max_predictions_per_seq: masked positions per example (`masked_lm_positions` length).
    use_next_sentence_label: read `next_sentence_labels`.
    use_position_id: read `position_ids`.
    use_v2_feature_names: `input_word_ids`/`input_type_ids` instead of `input_ids`/`segment_ids`.
    file_type: 'tfrecord' or 'tfrecord_compressed' (GZIP).
    verify_records: what is checked against the records' metadata file before training: 'size' (the
      set is complete, no extra file, every file of the listed size: cheap), 'checksum' (also each
      file's CRC-32: reads the files once) or 'none'. Records without a metadata file are not
      checked.
  """
  global_batch_size: int = hyperparams.field(512, ge=0)
  is_training: Optional[bool] = True
  seq_length: int = hyperparams.field(512, ge=2)
  max_predictions_per_seq: int = hyperparams.field(76, ge=1)
  use_next_sentence_label: bool = True
  use_position_id: bool = False
  use_v2_feature_names: bool = False
  file_type: str = hyperparams.field('tfrecord', choices=('tfrecord', 'tfrecord_compressed'))
  verify_records: str = hyperparams.field('size', choices=('size', 'checksum', 'none'))


def _feature_names(params: BertPretrainDataConfig) -> Dict[str, str]:
  """Maps the model's input names to the record's feature names."""
  v2 = params.use_v2_feature_names
  return {'input_word_ids': 'input_word_ids' if v2 else 'input_ids',
          'input_mask': 'input_mask',
          'input_type_ids': 'input_type_ids' if v2 else 'segment_ids',
          'masked_lm_positions': 'masked_lm_positions',
          'masked_lm_ids': 'masked_lm_ids',
          'masked_lm_weights': 'masked_lm_weights'}


def _feature_spec(params: BertPretrainDataConfig,
                  with_masks: bool = True) -> Dict[str, tf.io.FixedLenFeature]:
  seq, preds = params.seq_length, params.max_predictions_per_seq
  names = _feature_names(params)
  spec = {names['input_word_ids']: tf.io.FixedLenFeature([seq], tf.int64),
          names['input_mask']: tf.io.FixedLenFeature([seq], tf.int64),
          names['input_type_ids']: tf.io.FixedLenFeature([seq], tf.int64)}
  if with_masks:
    spec.update({names['masked_lm_positions']: tf.io.FixedLenFeature([preds], tf.int64),
                 names['masked_lm_ids']: tf.io.FixedLenFeature([preds], tf.int64),
                 names['masked_lm_weights']: tf.io.FixedLenFeature([preds], tf.float32)})
  if params.use_next_sentence_label:
    spec['next_sentence_labels'] = tf.io.FixedLenFeature([1], tf.int64)
  if params.use_position_id:
    spec['position_ids'] = tf.io.FixedLenFeature([seq], tf.int64)
  return spec


def check_record_schema(files: Sequence[str], params: BertPretrainDataConfig,
                        with_masks: bool = True) -> None:
  """`check_features` with the pretraining records' features.

  Args:
    files: the record files.
    params: the data config (sequence length, max predictions, feature names).
    with_masks: whether the records must hold the masked-LM features (static masking).

  Raises:
    ValueError: naming the file, the feature, the expected and the found shape or kind.
  """
  check_features(files, _feature_spec(params, with_masks), params,
                 missing_hint='Check use_v2_feature_names, use_next_sentence_label and '
                 'use_position_id.',
                 shape_hint=' (seq_length / max_predictions_per_seq of the data config must match '
                 'the records)')


def check_metadata(files: Sequence[str], params: BertPretrainDataConfig,
                   vocab_size: Optional[int] = None,
                   with_masks: bool = True) -> Optional[Dict[str, Any]]:
  """Verifies the record files (`verify_records`) and checks their metadata against the config.

  The metadata file is the one our data tool writes next to the records.

  Records without a metadata file (e.g. Model Garden's) are accepted as they are.

  Args:
    files: the record files.
    params: the data config.
    vocab_size: the model's vocabulary size, checked when given.
    with_masks: whether the records must hold static masks (False: dynamic masking).

  Returns:
    The metadata, or None when the records have none.

  Raises:
    ValueError: a mismatch, naming the metadata file, the config field and both values (packed
      records read with `use_position_id: false` included, see `check_packed`).
  """
  verify_records(files, params)
  metadata = data_metadata.load_metadata(list(files))
  if metadata is None:
    return None
  check_packed(metadata, params)
  source = metadata['metadata_path']
  checks = [('seq_length', params.seq_length, 'max_seq_length'),
            ('use_v2_feature_names', params.use_v2_feature_names, 'use_v2_feature_names')]
  if with_masks:
    if metadata.get('dynamic'):
      raise ValueError(f'{source}: these records hold no masks (written with --dynamic); train '
                       'them with the bert/pretraining_dynamic experiment')
    checks.append(('max_predictions_per_seq', params.max_predictions_per_seq,
                   'max_predictions_per_seq'))
  if vocab_size is not None:
    checks.append(('model.encoder.bert.vocab_size', vocab_size, 'vocab_size'))
  for field_name, configured, key in checks:
    if key in metadata and metadata[key] != configured:
      raise ValueError(f'{field_name} is {configured!r} in the config but the records were written '
                       f'with {key}={metadata[key]!r} ({source}); make them match')
  if params.use_next_sentence_label and metadata.get('next_sentence') is False:
    logging.warning('%s: records have no next-sentence pairs (labels are all 0) but '
                    'use_next_sentence_label is true', source)
  return metadata


def check_packed(metadata: Optional[Dict[str, Any]], params: Any) -> None:
  """Refuses packed records (several documents a row) read without their `position_ids`.

  The encoder confines attention to each document from the position ids restarting at 0; without
  them it would attend across the documents of a row, silently.

  Args:
    metadata: the records' metadata (`data_metadata.load_metadata`), or None.
    params: the data config (`use_position_id`).

  Raises:
    ValueError: one line naming the metadata file and the field.

  Example:
    check_packed(data_metadata.load_metadata(files), params)
  """
  if metadata and metadata.get('packed') and not params.use_position_id:
    raise ValueError(
        f"{metadata['metadata_path']}: the records are packed (several documents a row) and need "
        f'use_position_id: true in the data config (the encoder separates the documents by their '
        f'position_ids); found use_position_id: false')


@data_loader_factory.register_data_loader_cls(BertPretrainDataConfig)
class BertPretrainDataLoader:
  """Builds the `tf.data` pipeline for `BertPretrainDataConfig`.

  Records are batched before they are parsed (one `parse_example` per batch), files are read in
  parallel with `interleave`, and each input pipeline (worker) reads its own shard of files.
  """

  # Whether the records hold the masked-LM features (False for dynamic masking).
  stores_masks = True

  def __init__(self, params: BertPretrainDataConfig, vocab_size: Optional[int] = None):
    self._params = params
    self._names = _feature_names(params)
    self._vocab_size = vocab_size
    self._metadata: Optional[Dict[str, Any]] = None

  def _parse_batch(self, records: tf.Tensor) -> Dict[str, tf.Tensor]:
    parsed = tf.io.parse_example(records, _feature_spec(self._params, self.stores_masks))
    features = {model_name: parsed[record_name] for model_name, record_name in self._names.items()
                if record_name in parsed}
    for extra in ('next_sentence_labels', 'position_ids'):
      if extra in parsed:
        features[extra] = parsed[extra]
    return {name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
            for name, value in features.items()}

  def load(self, input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns a dataset of feature dicts, batched per replica.

    Args:
      input_context: from `distribute_datasets_from_function`; sets the per-replica batch size and
        this pipeline's shard.

    Returns:
      Batches with `input_word_ids`, `input_mask`, `input_type_ids` int32 [batch, seq_length],
      `masked_lm_positions`, `masked_lm_ids` int32 and `masked_lm_weights` float32
      [batch, max_predictions_per_seq], `next_sentence_labels` int32 [batch, 1] and
      `position_ids` int32 [batch, seq_length] when used.
    """
    params = self._params
    files = list_input_files(params.input_path)
    self._metadata = check_metadata(files, params, self._vocab_size, self.stores_masks)
    check_record_schema(files, params, self.stores_masks)
    return load_records(params, files, self._parse_batch, input_context)


def dummy_dataset(params: BertPretrainDataConfig, vocab_size: int,
                  input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
  """Endless synthetic batches with the loader's shapes (`input_path: dummy`).

  Token ids are pseudo-random in [0, vocab_size) and the masked-LM labels are the tokens at the
  masked positions, so the loss falls when the model trains: a smoke test and a benchmark input.
  """
  batch_size = params.global_batch_size
  if input_context:
    batch_size = input_context.get_per_replica_batch_size(params.global_batch_size)
  seq, preds = params.seq_length, params.max_predictions_per_seq
  if preds > seq:
    raise ValueError(f'max_predictions_per_seq {preds} exceeds seq_length {seq}')

  def make_batch(index):
    seed = tf.stack([index, tf.constant(7, tf.int64)])
    word_ids = tf.random.stateless_uniform([batch_size, seq], seed, 0, vocab_size, dtype=tf.int32)
    scores = tf.random.stateless_uniform([batch_size, seq], seed + 1)
    positions = tf.sort(tf.math.top_k(scores, k=preds).indices, axis=-1)
    batch = {'input_word_ids': word_ids,
             'input_mask': tf.ones([batch_size, seq], tf.int32),
             'input_type_ids': tf.zeros([batch_size, seq], tf.int32),
             'masked_lm_positions': positions,
             'masked_lm_ids': tf.gather(word_ids, positions, batch_dims=1),
             'masked_lm_weights': tf.ones([batch_size, preds], tf.float32)}
    if params.use_next_sentence_label:
      batch['next_sentence_labels'] = tf.random.stateless_uniform(
          [batch_size, 1], seed + 2, 0, 2, dtype=tf.int32)
    if params.use_position_id:
      batch['position_ids'] = tf.tile(tf.range(seq)[None], [batch_size, 1])
    return batch

  dataset = dataset_options.without_autotune(tf.data.Dataset.range(1_000_000_000))  # as records
  if not params.is_training:
    dataset = dataset.take(64)
  return dataset.map(make_batch, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
