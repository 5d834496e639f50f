"""Reads masked-LM pretraining TFRecords (Google-BERT schema) into batched feature dicts.

Files are checked before the pipeline is built: an empty glob, an unreadable file, a missing feature
or a feature of the wrong length fails at once with the file name, the feature and the expected
shape, instead of a parse error deep inside a run; records written by our data tool also carry a
metadata file whose sequence length, max predictions and vocabulary size must match the config, and
which lists every file of the set with its size and checksum: a missing, extra, truncated or foreign
file is refused before training (`verify_records`). Uncompressed files without a metadata file are
checked as they are read: a file cut inside a record fails at its end, naming it (TensorFlow alone
reads it as a shorter file).

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
import os
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import tensorflow as tf

from official.core import config_definitions as cfg
from official.modeling import hyperparams
from official.nlp.data import data_loader_factory
from official.nlp.data import data_metadata

# How many files are opened to check their schema before training starts.
_FILES_CHECKED = 16
# Records counted together by `records_filling_the_file`.
_COUNT_BLOCK = 256


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


def list_input_files(input_path: Union[str, Sequence[str]]) -> List[str]:
  """Expands comma lists and globs into a sorted list of files (a glob's matches without the
  metadata files that `create_pretraining_data` writes next to the records, e.g. `out/*`).

  Raises:
    FileNotFoundError: when `input_path` is empty or a pattern matches no file.
  """
  patterns = [input_path] if isinstance(input_path, str) else list(input_path)
  patterns = [p.strip() for item in patterns for p in item.split(',') if p.strip()]
  if not patterns:
    raise FileNotFoundError('input_path is empty: set it to TFRecord files (globs and comma lists '
                            "allowed), or 'dummy' for synthetic data")
  files = []
  for pattern in patterns:
    matches = sorted(tf.io.gfile.glob(pattern))
    if any(c in pattern for c in '*?['):
      matches = [m for m in matches if not m.endswith(data_metadata.METADATA_SUFFIX)]
    if not matches:
      raise FileNotFoundError(f'input_path pattern {pattern!r} matches no files')
    files.extend(matches)
  return files


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


def compression(params: Any) -> Optional[str]:
  """The TFRecord compression of a data config's `file_type`."""
  return 'GZIP' if params.file_type == 'tfrecord_compressed' else None


def check_features(files: Sequence[str], spec: Dict[str, tf.io.FixedLenFeature], params: Any,
                   missing_hint: str, shape_hint: str) -> None:
  """Reads the first record of the first files and checks every feature of `spec`.

  Args:
    files: the record files.
    spec: feature name -> `FixedLenFeature` expected in every record.
    params: the data config (for `file_type`).
    missing_hint: appended to the error for a missing feature (what to check in the config).
    shape_hint: appended to the error for a feature of the wrong kind or length.

  Raises:
    ValueError: naming the file, the feature, the expected and the found shape or kind.
  """
  for path in files[:_FILES_CHECKED]:
    try:
      records = list(tf.data.TFRecordDataset(path, compression_type=compression(params)).take(1))
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
      hint = ('GZIP files need file_type: tfrecord_compressed' if params.file_type == 'tfrecord'
              else 'plain TFRecord files need file_type: tfrecord')
      raise ValueError(f'{path}: cannot be read as {params.file_type} ({hint}): '
                       f'{e.message.splitlines()[0]}') from None
    if not records:
      raise ValueError(f'{path}: holds no records')
    features = tf.train.Example.FromString(records[0].numpy()).features.feature
    for name, fixed in spec.items():
      expected_kind = {tf.float32: 'float_list', tf.string: 'bytes_list'}.get(fixed.dtype,
                                                                             'int64_list')
      expected = f'{fixed.dtype.name}{list(fixed.shape)}'
      if name not in features:
        raise ValueError(f'{path}: missing feature {name!r} (expected {expected}); the record has '
                         f'{sorted(features)}. {missing_hint}')
      kind = features[name].WhichOneof('kind')
      length = len(getattr(features[name], kind).value) if kind else 0
      if kind != expected_kind or length != fixed.shape[0]:
        found_dtype = {'int64_list': 'int64', 'float_list': 'float32',
                       'bytes_list': 'string'}.get(kind, kind)
        raise ValueError(f'{path}: feature {name!r} is {found_dtype}[{length}], expected {expected}'
                         f'{shape_hint}')


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


def _sizes_to_check(files: Sequence[str], params: Any) -> Optional[List[int]]:
  """Sizes of the uncompressed files without a metadata file (-1 for the others); None if none.

  The metadata of our records lists every file's size, checked before training; other files are
  checked as they are read (`records_filling_the_file`).
  """
  if compression(params) or getattr(params, 'verify_records', 'size') == 'none':
    return None
  sizes = [
      -1 if os.path.isfile(data_metadata.metadata_path(path)) else _local_size(path)
      for path in files
  ]
  return sizes if any(size >= 0 for size in sizes) else None


def _local_size(path: str) -> int:
  try:
    return os.path.getsize(path)
  except OSError:  # a remote path (e.g. gs://): not checked
    return -1


def records_filling_the_file(path: tf.Tensor, size: tf.Tensor) -> tf.data.Dataset:
  """The records of an uncompressed TFRecord file, failing after the last if they do not fill it.

  `tf.data.TFRecordDataset` stops silently at a record cut short (a truncated file reads as a
  shorter one); this counts the bytes of the records read (each record plus 16 bytes of framing)
  and, at the end of the file, raises `tf.errors.InvalidArgumentError` naming the file, the bytes
  read and its size. `size < 0`: no check.

  Args:
    path: scalar string tensor, the file.
    size: scalar int64 tensor, the file's size in bytes.

  Example:
    tf.data.Dataset.from_tensor_slices((files, sizes)).interleave(records_filling_the_file)
  """
  # Counted a block of records at a time (per-record ops would slow the pipeline several times).
  blocks = tf.data.TFRecordDataset(path).batch(_COUNT_BLOCK).map(lambda block: (block, False))
  end = tf.data.Dataset.from_tensors((tf.constant([], tf.string), True))
  tagged = blocks.concatenate(end)

  def count(consumed, item):
    block, at_end = item
    consumed += tf.reduce_sum(tf.cast(tf.strings.length(block), tf.int64) + 16)
    check = tf.debugging.Assert(
        tf.logical_or(tf.logical_not(at_end), tf.logical_or(size < 0, tf.equal(consumed, size))),
        [tf.strings.join([path, ': truncated or corrupt: its complete TFRecords end at byte ',
                          tf.strings.as_string(consumed), ' but the file has ',
                          tf.strings.as_string(size), ' bytes'])])
    with tf.control_dependencies([check]):
      return tf.identity(consumed), (block, at_end)

  return (tagged.scan(tf.constant(0, tf.int64), count)
          .filter(lambda block, at_end: tf.logical_not(at_end))
          .map(lambda block, at_end: block).unbatch())


_TRUNCATED = re.compile(r'\[([^\[\]]*: truncated or corrupt: [^\[\]]*)\]')


def record_error_line(error: BaseException) -> Optional[str]:
  """The one-line message of a truncated-file error (`records_filling_the_file`), else None.

  For CLIs: the error comes out of the training loop as a `tf.errors.InvalidArgumentError` whose
  message is wrapped in TensorFlow's op context.

  Example:
    except tf.errors.InvalidArgumentError as e:
      # e.g. 'data/b.tfrecord: truncated or corrupt: ... but the file has 950 bytes'
      line = record_error_line(e)
  """
  match = _TRUNCATED.search(getattr(error, 'message', None) or str(error))
  return match.group(1) if match else None


def load_records(params: Any, files: Sequence[str], parse_batch: Callable[[tf.Tensor], Any],
                 input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
  """The record pipeline of the batch-parsing loaders: `record_stream`, batched per replica, then
  whole batches parsed.

  Args:
    params: the data config (batch size, sharding, shuffling, interleave and prefetch fields).
    files: the record files.
    parse_batch: serialized records [batch] -> the batch's features.
    input_context: from `distribute_datasets_from_function`.
  """
  dataset, batch_size = record_stream(params, files, input_context)
  dataset = dataset.batch(batch_size, drop_remainder=params.drop_remainder)
  dataset = dataset.map(parse_batch, num_parallel_calls=tf.data.AUTOTUNE)
  return dataset.prefetch(params.prefetch_buffer_size or tf.data.AUTOTUNE)


def record_stream(params: Any, files: Sequence[str],
                  input_context: Optional[tf.distribute.InputContext] = None
                  ) -> Tuple[tf.data.Dataset, int]:
  """Serialized records of every loader: files (or, with fewer files than input pipelines, records)
  sharded over input pipelines, shuffled, interleaved (uncompressed files without metadata checked
  to their end), cached, then repeated and shuffled when training.

  Args:
    params: the data config (batch size, sharding, shuffling, interleave and cache fields).
    files: the record files.
    input_context: from `distribute_datasets_from_function`.

  Returns:
    (scalar-string dataset, the per-replica batch size).

  Example:
    >>> dataset, batch_size = record_stream(params, list_input_files(params.input_path))
    >>> dataset = dataset.map(parse_one).batch(batch_size)
  """
  batch_size = params.global_batch_size
  num_pipelines, pipeline_id = 1, 0
  if input_context:
    batch_size = input_context.get_per_replica_batch_size(params.global_batch_size)
    num_pipelines, pipeline_id = input_context.num_input_pipelines, input_context.input_pipeline_id
  shard_files = params.sharding and num_pipelines > 1 and len(files) >= num_pipelines
  sizes = _sizes_to_check(files, params)
  if sizes is None:
    dataset = tf.data.Dataset.from_tensor_slices(list(files))
    read_file = lambda path: tf.data.TFRecordDataset(path, compression_type=compression(params))
  else:
    dataset = tf.data.Dataset.from_tensor_slices((list(files), tf.constant(sizes, tf.int64)))
    read_file = records_filling_the_file
  if shard_files:
    dataset = dataset.shard(num_pipelines, pipeline_id)
  if params.is_training:
    dataset = dataset.shuffle(len(files), seed=params.seed)
  dataset = dataset.interleave(read_file, cycle_length=params.cycle_length or min(len(files), 16),
                               block_length=params.block_length,
                               num_parallel_calls=tf.data.AUTOTUNE,
                               deterministic=params.deterministic)
  if params.sharding and num_pipelines > 1 and not shard_files:
    dataset = dataset.shard(num_pipelines, pipeline_id)
  if params.cache:
    dataset = dataset.cache()
  if params.is_training:
    dataset = dataset.repeat()
    if params.shuffle_buffer_size > 1:
      dataset = dataset.shuffle(params.shuffle_buffer_size, seed=params.seed)
  return dataset, batch_size


def verify_records(files: Sequence[str], params: Any) -> None:
  """Checks the record files against their metadata as the config's `verify_records` says.

  Raises:
    ValueError: one line naming a missing, extra, truncated or foreign file
      (`data_metadata.verify_record_files`).
  """
  mode = getattr(params, 'verify_records', 'size')
  if mode != 'none':
    data_metadata.verify_record_files(files, checksum=mode == 'checksum')


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

  dataset = tf.data.Dataset.range(1_000_000_000)
  if not params.is_training:
    dataset = dataset.take(64)
  return dataset.map(make_batch, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


# --------------------------------------------------------------------------------------------------
# XLNet pretraining inputs (Model Garden's `XLNetPretrainDataConfig` / `XLNetPretrainDataLoader`).

XLNET_SAMPLE_STRATEGIES = ('single_token', 'whole_word', 'token_span', 'word_span')


@dataclasses.dataclass
class XLNetPretrainDataConfig(cfg.DataConfig):
  """XLNet pretraining records (`input_word_ids`, `input_type_ids` int64[seq_length],
  `boundary_indices` int64[any]: word starts) with targets and factorization orders sampled online.

  Attributes:
    seq_length: tokens per example.
    max_predictions_per_seq: targets per example (required by the loader; None is refused).
    reuse_length: tokens at the start reused as memory from the previous segment (0: none); the
      two parts get separate factorization orders and the reused part never sees the rest.
    sample_strategy: how targets are chosen: 'single_token', 'whole_word' (whole words from
      `boundary_indices`), 'token_span' or 'word_span' (spans whose lengths follow p(n) ~ 1/(n+1)).
    min_num_tokens, max_num_tokens: span lengths in tokens ('token_span').
    min_num_words, max_num_words: span lengths in words ('word_span').
    permutation_size: the factorization order permutes blocks of this many tokens (the same
      permutation in every block); `seq_length` and `reuse_length` must be multiples of it.
    leak_ratio: fraction of targets that may see themselves (as BERT keeps some tokens).
    segment_sep_id, segment_cls_id: the [SEP] and [CLS] ids, never targets.
  """
  global_batch_size: int = hyperparams.field(512, ge=0)
  is_training: Optional[bool] = True
  seq_length: int = hyperparams.field(512, ge=1)
  max_predictions_per_seq: Optional[int] = hyperparams.field(76, ge=1)
  reuse_length: int = hyperparams.field(256, ge=0)
  sample_strategy: str = hyperparams.field('word_span', choices=XLNET_SAMPLE_STRATEGIES)
  min_num_tokens: int = hyperparams.field(1, ge=1)
  max_num_tokens: int = hyperparams.field(5, ge=1)
  min_num_words: int = hyperparams.field(1, ge=1)
  max_num_words: int = hyperparams.field(5, ge=1)
  permutation_size: int = hyperparams.field(256, ge=1)
  leak_ratio: float = hyperparams.field(0.1, ge=0.0, le=1.0)
  segment_sep_id: int = 4
  segment_cls_id: int = 3
  file_type: str = hyperparams.field('tfrecord', choices=('tfrecord', 'tfrecord_compressed'))


def _zipf_span_lengths(low: int, high: int, count: int) -> tf.Tensor:
  """`count` span lengths in [low, high] drawn with p(n) proportional to 1 / (n + 1)."""
  lengths = tf.range(low, high + 1, dtype=tf.float32)
  log_probs = tf.math.log(1.0 / (lengths + 1.0))
  return tf.random.categorical(log_probs[None], count, dtype=tf.int32)[0] + low


def _spread_spans(span_lengths: tf.Tensor, density: float) -> tf.Tensor:
  """Begin offsets of spans laid out left to right, each followed and preceded by context so that
  about `1 / density` of the units are covered: a span of n units takes round(n * density) slots,
  a random part of the (density - 1) * n context slots going before it."""
  lengths = tf.cast(span_lengths, tf.float32)
  before = tf.cast(tf.round(tf.random.uniform(tf.shape(lengths)) * lengths * (density - 1.0)),
                   tf.int32)
  slots = tf.cast(tf.round(lengths * density), tf.int32)
  return tf.cumsum(slots, exclusive=True) + before


@data_loader_factory.register_data_loader_cls(XLNetPretrainDataConfig)
class XLNetPretrainDataLoader:
  """Builds the XLNet pretraining pipeline of `XLNetPretrainDataConfig`.

  Each example gets `permutation_mask` int32 [seq, seq] (1: token i may attend to token j),
  `input_word_ids`, `input_type_ids` int32 [seq], `masked_tokens` bool [seq] (the targets), and
  `target`, `target_mask` int32 [max_predictions_per_seq] with `target_mapping` int32
  [max_predictions_per_seq, seq] (one-hot positions of the targets, zero rows as padding).

  Args:
    params: the data config.
  """

  def __init__(self, params: XLNetPretrainDataConfig):
    self._params = params

  def _check(self) -> None:
    params = self._params
    if params.max_predictions_per_seq is None:
      raise ValueError('XLNetPretrainDataConfig.max_predictions_per_seq must be set (found None): '
                       'it is the number of targets sampled per example')
    size, seq, reuse = params.permutation_size, params.seq_length, params.reuse_length
    if reuse > seq:
      raise ValueError(f'reuse_length {reuse} exceeds seq_length {seq}')
    if seq % size or reuse % size:
      raise ValueError(
          f'`reuse_length` ({reuse}) and `seq_length` ({seq}) should both be a multiple '
          f'of `permutation_size` ({size})')
    if reuse and size > reuse:
      logging.warning('permutation_size %d > reuse_length %d may leak targets', size, reuse)

  def _is_content(self, word_ids: tf.Tensor) -> tf.Tensor:
    params = self._params
    return tf.logical_and(tf.not_equal(word_ids, params.segment_sep_id),
                          tf.not_equal(word_ids, params.segment_cls_id))

  def _mark_spans(self, begins: tf.Tensor, ends: tf.Tensor, word_ids: tf.Tensor) -> tf.Tensor:
    """bool [seq]: content tokens inside the spans `[begins, ends)`, taken span by span (in the
    given order) until `max_predictions_per_seq` tokens are marked."""
    positions = tf.range(self._params.seq_length)
    inside = tf.logical_and(positions[None, :] >= begins[:, None],
                            positions[None, :] < ends[:, None])
    inside = tf.logical_and(inside, self._is_content(word_ids)[None, :])
    running = tf.reshape(tf.cumsum(tf.reshape(tf.cast(inside, tf.int32), [-1])), tf.shape(inside))
    kept = tf.logical_and(inside, running <= self._params.max_predictions_per_seq)
    return tf.reduce_any(kept, axis=0)

  def _sample_targets(self, word_ids: tf.Tensor, boundaries: tf.Tensor) -> tf.Tensor:
    """bool [seq]: the prediction targets of one example (see `sample_strategy`)."""
    params = self._params
    seq, count = params.seq_length, params.max_predictions_per_seq
    strategy = params.sample_strategy
    if strategy == 'single_token':
      candidates = tf.boolean_mask(tf.range(seq), self._is_content(word_ids))
      chosen = tf.random.shuffle(candidates)[:count]
      return tf.scatter_nd(chosen[:, None], tf.ones_like(chosen, tf.bool), [seq])
    if strategy == 'whole_word':
      words = tf.stack([boundaries[:-1], boundaries[1:]], axis=1)
      words = tf.random.shuffle(words)[:count]
      return self._mark_spans(words[:, 0], words[:, 1], word_ids)
    if strategy == 'token_span':
      lengths = _zipf_span_lengths(params.min_num_tokens, params.max_num_tokens, count)
      begins = _spread_spans(lengths, seq / count)
      ends = begins + lengths
      valid = ends < seq
    else:  # word_span: spans of words, mapped to tokens through the word boundaries
      lengths = _zipf_span_lengths(params.min_num_words, params.max_num_words, count)
      begins = _spread_spans(lengths, seq / count / 1.2)  # about 1.2 tokens a word
      ends = begins + lengths
      valid = ends < tf.shape(boundaries)[0] - 1
      begins = tf.gather(boundaries, tf.boolean_mask(begins, valid))
      ends = tf.gather(boundaries, tf.boolean_mask(ends, valid))
      valid = tf.ones_like(begins, tf.bool)
    spans = tf.random.shuffle(tf.stack([tf.boolean_mask(begins, valid),
                                        tf.boolean_mask(ends, valid)], axis=1))
    return self._mark_spans(spans[:, 0], spans[:, 1], word_ids)

  def _factorize(self, word_ids: tf.Tensor, targets: tf.Tensor):
    """`(permutation_mask [n, n], targets [n])` of a random factorization order of one part.

    Context tokens (non-targets, [SEP]/[CLS], and leaked targets) see every context token; a
    target sees the context and the targets before it in the order (not itself).
    """
    params = self._params
    size = params.permutation_size
    length = tf.shape(word_ids)[0]
    positions = tf.range(length)
    order = tf.random.shuffle(tf.range(size))
    rank = (positions // size) * size + tf.gather(order, positions % size)
    targets = tf.logical_and(targets, self._is_content(word_ids))
    context = tf.logical_not(targets)
    if params.leak_ratio > 0:
      leaked = tf.random.uniform([length]) < params.leak_ratio
      context = tf.logical_or(context, tf.logical_and(targets, leaked))
    key = tf.where(context, -2, rank)  # what others compare against
    query = tf.where(context, -1, rank)  # what a token compares with
    return tf.cast(query[:, None] > key[None, :], tf.int32), targets

  def _parse(self, record: tf.Tensor) -> Dict[str, tf.Tensor]:
    params = self._params
    seq, reuse = params.seq_length, params.reuse_length
    parsed = tf.io.parse_single_example(record, {
        'input_word_ids': tf.io.FixedLenFeature([seq], tf.int64),
        'input_type_ids': tf.io.FixedLenFeature([seq], tf.int64),
        'boundary_indices': tf.io.VarLenFeature(tf.int64)})
    word_ids = tf.cast(parsed['input_word_ids'], tf.int32)
    boundaries = tf.cast(tf.sparse.to_dense(parsed['boundary_indices']), tf.int32)
    sampled = self._sample_targets(word_ids, boundaries)
    if reuse > 0:
      rest = seq - reuse
      mask_a, targets_a = self._factorize(word_ids[:reuse], sampled[:reuse])
      mask_b, targets_b = self._factorize(word_ids[reuse:], sampled[reuse:])
      # The reused part never sees the new tokens; the new tokens see all of the reused part.
      permutation_mask = tf.concat([
          tf.concat([mask_a, tf.zeros([reuse, rest], tf.int32)], axis=1),
          tf.concat([tf.ones([rest, reuse], tf.int32), mask_b], axis=1)], axis=0)
      targets = tf.concat([targets_a, targets_b], axis=0)
    else:
      permutation_mask, targets = self._factorize(word_ids, sampled)
    count = params.max_predictions_per_seq
    target_positions = tf.boolean_mask(tf.range(seq), targets)[:count]
    num_targets = tf.shape(target_positions)[0]
    padding = count - num_targets
    return {
        'input_word_ids': word_ids,
        'input_type_ids': tf.cast(parsed['input_type_ids'], tf.int32),
        'permutation_mask': tf.reshape(permutation_mask, [seq, seq]),
        'masked_tokens': tf.reshape(targets, [seq]),
        'target': tf.reshape(tf.pad(tf.gather(word_ids, target_positions), [[0, padding]]),
                             [count]),
        'target_mask': tf.reshape(tf.pad(tf.ones([num_targets], tf.int32), [[0, padding]]),
                                  [count]),
        'target_mapping': tf.reshape(
            tf.pad(tf.one_hot(target_positions, seq, dtype=tf.int32), [[0, padding], [0, 0]]),
            [count, seq]),
    }

  def load(self, input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns batches of the features above, batched per replica.

    Raises:
      ValueError: `max_predictions_per_seq` is None, or lengths that are not multiples of
        `permutation_size`.
    """
    self._check()
    params = self._params
    dataset, batch_size = record_stream(params, list_input_files(params.input_path), input_context)
    dataset = dataset.map(self._parse, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.batch(batch_size, drop_remainder=params.drop_remainder)
    return dataset.prefetch(params.prefetch_buffer_size or tf.data.AUTOTUNE)
