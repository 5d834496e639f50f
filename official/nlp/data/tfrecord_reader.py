"""Reads TFRecord files for every data loader: lists the input files, checks them, streams them.

`list_input_files` expands globs and comma lists (without our metadata files); `check_features`
reads the first record of the first files and names a missing feature or one of the wrong shape;
`verify_records` checks a set of files against its metadata (sizes, or checksums too);
`record_stream` shards, shuffles, interleaves and repeats the records (an uncompressed file without
metadata is checked to its end as it is read, `records_filling_the_file`), and `load_records`
batches and parses them. The loaders (`pretrain_dataloader`, `xlnet_pretrain_dataloader`, the
fine-tuning loaders) build on these; `pretrain_dataloader` re-exports them under their old names.

Example:
  >>> files = list_input_files('data/train-*.tfrecord')
  >>> dataset, batch_size = record_stream(params, files, input_context)
  >>> dataset = dataset.map(parse_one).batch(batch_size)
"""

import os
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import tensorflow as tf

from official.core import dataset_options
from official.nlp.data import data_metadata

# How many files are opened to check their schema before training starts.
_FILES_CHECKED = 16
# Records counted together by `records_filling_the_file`.
_COUNT_BLOCK = 256


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
  to their end), cached, then repeated and shuffled when training. tf.data's autotuner is off
  (`dataset_options.without_autotune`); the options carry on to every dataset built from this one.

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
  return dataset_options.without_autotune(dataset), batch_size


def verify_records(files: Sequence[str], params: Any) -> None:
  """Checks the record files against their metadata as the config's `verify_records` says.

  Raises:
    ValueError: one line naming a missing, extra, truncated or foreign file
      (`data_metadata.verify_record_files`).
  """
  mode = getattr(params, 'verify_records', 'size')
  if mode != 'none':
    data_metadata.verify_record_files(files, checksum=mode == 'checksum')
