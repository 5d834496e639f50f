"""TFRecord files of `tf.train.Example`s written with numpy only (no TensorFlow import).

Importing TensorFlow costs seconds and a few hundred MB per process; the data pipeline needs neither, so this
module encodes `tf.train.Example` protos (int64 and float features) and the TFRecord framing (length, masked
CRC32C) itself, vectorized over a batch of records: a batch of records is one flat uint8 array plus the length
of each record. The output is read by `tf.data.TFRecordDataset` and `tf.io.parse_single_example` like records
written by `tf.io.TFRecordWriter` (checked in the tests).

Example:
  data, lengths = encode_examples({"input_ids": ids}, {"masked_lm_weights": weights})
  framed, _ = frame_records(data, lengths)
  with AtomicRecordFile("out.tfrecord", gzip_compress=False) as f:
    f.write(framed)
"""

import gzip
import os
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np

from official.nlp.data.segment_ops import gather_segments

_CRC32C_POLY = 0x82F63B78  # Castagnoli, reflected
_MASK_DELTA = 0xA282EAD8
PARTIAL_SUFFIX = ".partial"


def _byte_table() -> np.ndarray:
  table = np.arange(256, dtype=np.uint32)
  for _ in range(8):
    table = np.where(table & 1, (table >> 1) ^ np.uint32(_CRC32C_POLY), table >> 1).astype(np.uint32)
  return table


_TABLE = _byte_table()
# _DISTANCE[k, b]: the CRC register contribution (init 0) of byte b followed by k more bytes. The CRC is linear,
# so the raw CRC of a message is the XOR of its bytes' contributions; this vectorizes over many records.
_DISTANCE = np.zeros((0, 256), np.uint32)
# _INIT[n]: the contribution of the initial register 0xFFFFFFFF after n bytes.
_INIT = np.zeros(0, np.uint32)


def _grow_tables(max_length: int) -> None:
  global _DISTANCE, _INIT
  if max_length <= _DISTANCE.shape[0]:
    return
  size = max(max_length, 2 * _DISTANCE.shape[0], 1024)
  distance = np.empty((size, 256), np.uint32)
  distance[0] = _TABLE
  for k in range(1, size):
    distance[k] = _TABLE[distance[k - 1] & 0xFF] ^ (distance[k - 1] >> 8)
  init = [0xFFFFFFFF]
  table = _TABLE.tolist()
  for _ in range(size):
    init.append(table[init[-1] & 0xFF] ^ (init[-1] >> 8))
  _DISTANCE, _INIT = distance, np.array(init, np.uint32)


def crc32c_segments(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
  """CRC32C (Castagnoli) of each segment `data[starts[i]:starts[i] + lengths[i]]`, `[k]` uint32.

  Segments must be laid out back to back (`starts` = exclusive cumulative sum of `lengths`).
  """
  data = np.asarray(data, np.uint8)
  lengths = np.asarray(lengths, np.int64)
  starts = np.asarray(starts, np.int64)
  raw = np.zeros(lengths.size, np.uint32)
  nonempty = lengths > 0
  if lengths.size == 0:
    return raw
  _grow_tables(int(lengths.max()))
  if nonempty.any():
    # Per byte: its distance to the end of its segment (a running max spreads each segment's last index), then
    # the table index distance * 256 + byte; the raw CRC is the XOR of the looked-up contributions.
    size = int(starts[-1] + lengths[-1])
    index = np.zeros(size, np.int64 if size >= 2**23 else np.int32)
    index[starts[nonempty]] = (starts + lengths - 1)[nonempty]
    np.maximum.accumulate(index, out=index)
    index -= np.arange(size, dtype=index.dtype)
    index <<= 8
    index |= data[:size]
    raw[nonempty] = np.bitwise_xor.reduceat(_DISTANCE.ravel()[index], starts[nonempty])
  return raw ^ _INIT[lengths] ^ np.uint32(0xFFFFFFFF)


def crc32c(data: bytes) -> int:
  """CRC32C of one byte string."""
  return int(crc32c_segments(np.frombuffer(data, np.uint8), np.zeros(1), np.array([len(data)]))[0])


def _masked(crc: np.ndarray) -> np.ndarray:
  crc = crc.astype(np.uint64)
  return ((((crc >> np.uint64(15)) | (crc << np.uint64(17))) + np.uint64(_MASK_DELTA)) & np.uint64(0xFFFFFFFF)
          ).astype(np.uint32)


def _exclusive_cumsum(lengths: np.ndarray) -> np.ndarray:
  return np.cumsum(lengths) - lengths


def frame_records(data: np.ndarray, lengths: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """TFRecord framing of records laid out back to back in `data` (uint8) with `lengths` [k].

  Each record becomes: uint64 length, masked CRC32C of those 8 bytes, the data, masked CRC32C of the data.

  Returns:
    `(framed uint8 array, framed length of each record [k] = lengths + 16)`.
  """
  lengths = np.asarray(lengths, np.int64)
  count = lengths.size
  starts = _exclusive_cumsum(lengths)
  length_fields = lengths.astype("<u8").view(np.uint8)
  length_crcs = _masked(crc32c_segments(length_fields, np.arange(count) * 8, np.full(count, 8)))
  data_crcs = _masked(crc32c_segments(data, starts, lengths))
  heads = np.empty((count, 12), np.uint8)
  heads[:, :8] = length_fields.reshape(count, 8)
  heads[:, 8:] = length_crcs.astype("<u4").view(np.uint8).reshape(count, 4)
  pool = np.concatenate([heads.ravel(), np.asarray(data, np.uint8), data_crcs.astype("<u4").view(np.uint8)])
  piece_starts = np.stack([np.arange(count) * 12, 12 * count + starts,
                           12 * count + int(lengths.sum()) + np.arange(count) * 4], axis=1)
  piece_lengths = np.stack([np.full(count, 12), lengths, np.full(count, 4)], axis=1)
  return gather_segments(pool, piece_starts.ravel(), piece_lengths.ravel()), lengths + 16


def select_records(data: np.ndarray, lengths: np.ndarray, order: np.ndarray) -> np.ndarray:
  """The records of a back-to-back layout in a new `order` (indices), concatenated."""
  lengths = np.asarray(lengths, np.int64)
  return gather_segments(data, _exclusive_cumsum(lengths)[order], lengths[order])


def split_records(data: np.ndarray, lengths: np.ndarray) -> List[bytes]:
  """A back-to-back layout as a list of byte strings."""
  blob = np.asarray(data, np.uint8).tobytes()
  ends = np.cumsum(lengths).tolist()
  return [blob[end - length:end] for end, length in zip(ends, np.asarray(lengths).tolist())]


def _varint(value: int) -> bytes:
  out = bytearray()
  while True:
    bits = value & 0x7F
    value >>= 7
    if value:
      out.append(bits | 0x80)
    else:
      out.append(bits)
      return bytes(out)


def _varints(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """Protobuf varints of `values` [rows, cols], row-major, and the encoded size of each row [rows]."""
  rows = values.shape[0]
  if values.size and values.min() >= 0 and values.max() < 0x80:  # one byte each: the values themselves
    return values.astype(np.uint8).ravel(), np.full(rows, values.shape[1], np.int64)
  flat = values.ravel()
  if flat.size and flat.min() >= 0 and flat.max() < 2**32:
    flat, dtype = flat.astype(np.uint32), np.uint32
  else:  # negative int64 -> 10-byte two's complement
    flat, dtype = flat.astype(np.int64).view(np.uint64), np.uint64
  num_bytes = 1
  while num_bytes < 10 and (flat >> dtype(7 * num_bytes)).any():
    num_bytes += 1
  sizes = np.ones(flat.shape, np.int64)
  for k in range(1, num_bytes):
    sizes += flat >= dtype(1 << (7 * k))
  encoded = np.empty((flat.size, num_bytes), np.uint8)
  for k in range(num_bytes):
    group = ((flat >> dtype(7 * k)) & dtype(0x7F)).astype(np.uint8)
    if k < num_bytes - 1:
      group |= (sizes > k + 1).view(np.uint8) << 7  # continuation bit
    encoded[:, k] = group
  keep = np.arange(num_bytes)[None, :] < sizes[:, None]
  return encoded[keep], sizes.reshape(rows, -1).sum(axis=1)


class _FeatureHeaders:
  """Proto bytes that precede a feature's packed values inside `Features.feature` (cached by payload size).

  Layout: Features.feature map entry (field 1) {key (1): name, value (2): Feature {int64_list (3) or
  float_list (2): {value (1), packed}}}.
  """

  def __init__(self, name: str, kind_field: int):
    self._key = name.encode("utf-8")
    self._kind_tag = bytes([(kind_field << 3) | 2])
    self._cache: Dict[int, bytes] = {}

  def __call__(self, payload_size: int) -> bytes:
    header = self._cache.get(payload_size)
    if header is None:
      values = b"\x0a" + _varint(payload_size)
      value_list_size = len(values) + payload_size
      feature = self._kind_tag + _varint(value_list_size) + values
      feature_size = len(feature) + payload_size
      entry = b"\x0a" + _varint(len(self._key)) + self._key + b"\x12" + _varint(feature_size) + feature
      header = b"\x0a" + _varint(len(entry) + payload_size) + entry
      self._cache[payload_size] = header
    return header


_HEADERS: Dict[Tuple[str, int], _FeatureHeaders] = {}


def _headers(name: str, kind_field: int) -> _FeatureHeaders:
  key = (name, kind_field)
  if key not in _HEADERS:
    _HEADERS[key] = _FeatureHeaders(name, kind_field)
  return _HEADERS[key]


def encode_examples(int_features: Mapping[str, np.ndarray],
                    float_features: Optional[Mapping[str, np.ndarray]] = None) -> Tuple[np.ndarray, np.ndarray]:
  """Serialized `tf.train.Example`s, one per row, laid out back to back.

  Args:
    int_features: name -> `[batch, width]` integer array (an Int64List per row).
    float_features: name -> `[batch, width]` float array (a FloatList of float32 per row).

  Returns:
    `(data uint8 array, length of each serialized proto [batch])`; features in the given order, ints first.
  """
  pools: List[np.ndarray] = []
  pool_size = 0

  def add(array: np.ndarray) -> int:
    nonlocal pool_size
    pools.append(array)
    pool_size += array.size
    return pool_size - array.size

  def header_pieces(headers: _FeatureHeaders, payload_sizes: np.ndarray):
    distinct, which = np.unique(payload_sizes, return_inverse=True)
    table = [headers(int(size)) for size in distinct.tolist()]
    table_lengths = np.fromiter(map(len, table), np.int64, count=len(table))
    offset = add(np.frombuffer(b"".join(table), np.uint8))
    return offset + _exclusive_cumsum(table_lengths)[which], table_lengths[which]

  columns = []  # (starts [batch], lengths [batch]) per piece of a record, in order
  for name, values in int_features.items():
    values = np.asarray(values)
    blob, payload_sizes = _varints(values.reshape(values.shape[0], -1))
    payload_offset = add(blob)
    columns.append(header_pieces(_headers(name, 3), payload_sizes))
    columns.append((payload_offset + _exclusive_cumsum(payload_sizes), payload_sizes))
  for name, values in (float_features or {}).items():
    values = np.asarray(values, "<f4")
    values = values.reshape(values.shape[0], -1)
    payload_sizes = np.full(values.shape[0], values.shape[1] * 4, np.int64)
    payload_offset = add(values.ravel().view(np.uint8))
    columns.append(header_pieces(_headers(name, 2), payload_sizes))
    columns.append((payload_offset + _exclusive_cumsum(payload_sizes), payload_sizes))
  if not columns:
    return np.zeros(0, np.uint8), np.zeros(0, np.int64)
  body_sizes = sum(lengths for _, lengths in columns)
  columns.insert(0, header_pieces(_ExampleHeader(), body_sizes))  # Example.features (field 1) + its size
  starts = np.stack([c[0] for c in columns], axis=1).ravel()
  lengths = np.stack([c[1] for c in columns], axis=1)
  return gather_segments(np.concatenate(pools), starts, lengths.ravel()), lengths.sum(axis=1)


class _ExampleHeader:
  def __call__(self, size: int) -> bytes:
    return b"\x0a" + _varint(size)


class AtomicRecordFile:
  """A record file written under `path + ".partial"` and renamed to `path` only when closed without error.

  An interrupted run therefore never leaves a truncated file under the final name. GZIP output uses a fixed
  header (no file name, mtime 0) so equal records give equal bytes.

  Example:
    with AtomicRecordFile("train.tfrecord", gzip_compress=True) as f:
      f.write(frame_records(*encode_examples({"input_ids": ids}))[0])
  """

  def __init__(self, path: str, gzip_compress: bool = False):
    self.path = path
    self.partial_path = path + PARTIAL_SUFFIX
    self._gzip_compress = gzip_compress
    self._raw = None
    self._out = None

  def __enter__(self) -> "AtomicRecordFile":
    directory = os.path.dirname(os.path.abspath(self.path))
    os.makedirs(directory, exist_ok=True)
    self._raw = open(self.partial_path, "wb")
    self._out = (gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, compresslevel=6, mtime=0)
                 if self._gzip_compress else self._raw)
    return self

  def write(self, data: bytes) -> None:
    self._out.write(data)

  def __exit__(self, exc_type, exc, tb) -> None:
    try:
      if self._out is not self._raw:
        self._out.close()
      self._raw.close()
    finally:
      if exc_type is None:
        os.replace(self.partial_path, self.path)
      elif os.path.exists(self.partial_path):
        os.remove(self.partial_path)
