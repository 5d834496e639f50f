"""TFRecord files of `tf.train.Example`s written with numpy only (no TensorFlow import).

Importing TensorFlow costs seconds and a few hundred MB per process; the data pipeline needs
neither, so this module encodes `tf.train.Example` protos (int64 and float features) and the
TFRecord framing (length, masked CRC32C) itself, vectorized over a batch of records: a batch of
records is one flat uint8 array plus the length of each record. The output is read by
`tf.data.TFRecordDataset` and `tf.io.parse_single_example` like records written by
`tf.io.TFRecordWriter` (checked in the tests).

`encode_pretraining_records` is a faster encoder for the BERT pretraining schema: each record is a
row of a byte matrix (varints in fixed slots, compacted once); the fixed-size features
(`input_mask`, `segment_ids`, `masked_lm_weights`, `next_sentence_labels`) end the record, so their
CRC contribution comes from small tables indexed by the run lengths, and only the variable part
(ids, positions) is looked up byte by byte.

Example:
  data, lengths = encode_examples({"input_ids": ids}, {"masked_lm_weights": weights})
  framed, _ = frame_records(data, lengths)
  with AtomicRecordFile("out.tfrecord", gzip_compress=False) as f:
    f.write(framed)
"""

import gzip
import os
import zlib
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from official.nlp.data.segment_ops import gather_segments

_CRC32C_POLY = 0x82F63B78  # Castagnoli, reflected
_MASK_DELTA = 0xA282EAD8
PARTIAL_SUFFIX = '.partial'


def _byte_table() -> np.ndarray:
  table = np.arange(256, dtype=np.uint32)
  for _ in range(8):
    table = np.where(table & 1, (table >> 1) ^ np.uint32(_CRC32C_POLY),
                     table >> 1).astype(np.uint32)
  return table


_TABLE = _byte_table()
# _DISTANCE[k, b]: the CRC register contribution (init 0) of byte b followed by k more bytes. The
# CRC is linear, so the raw CRC of a message is the XOR of its bytes' contributions; this vectorizes
# over many records.
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
    # Per byte: its distance to the end of its segment (a running max spreads each segment's last
    # index), then the table index distance * 256 + byte; the raw CRC is the XOR of the looked-up
    # contributions.
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
  return ((((crc >> np.uint64(15)) | (crc << np.uint64(17))) + np.uint64(_MASK_DELTA)) &
          np.uint64(0xFFFFFFFF)).astype(np.uint32)


def _exclusive_cumsum(lengths: np.ndarray) -> np.ndarray:
  return np.cumsum(lengths) - lengths


def frame_records(data: np.ndarray, lengths: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """TFRecord framing of records laid out back to back in `data` (uint8) with `lengths` [k].

  Each record becomes: uint64 length, masked CRC32C of those 8 bytes, the data, masked CRC32C of the
  data.

  Returns:
    `(framed uint8 array, framed length of each record [k] = lengths + 16)`.
  """
  lengths = np.asarray(lengths, np.int64)
  count = lengths.size
  starts = _exclusive_cumsum(lengths)
  length_fields = lengths.astype('<u8').view(np.uint8)
  length_crcs = _masked(crc32c_segments(length_fields, np.arange(count) * 8, np.full(count, 8)))
  data_crcs = _masked(crc32c_segments(data, starts, lengths))
  heads = np.empty((count, 12), np.uint8)
  heads[:, :8] = length_fields.reshape(count, 8)
  heads[:, 8:] = length_crcs.astype('<u4').view(np.uint8).reshape(count, 4)
  pool = np.concatenate(
      [heads.ravel(),
       np.asarray(data, np.uint8),
       data_crcs.astype('<u4').view(np.uint8)])
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
  """Protobuf varints of `values` [rows, cols], row-major, and each row's encoded size [rows]."""
  rows = values.shape[0]
  # One byte each: the values themselves.
  if values.size and values.min() >= 0 and values.max() < 0x80:
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
  """Proto bytes before a feature's packed values in `Features.feature` (cached by payload size).

  Layout: Features.feature map entry (field 1) {key (1): name, value (2): Feature {int64_list (3) or
  float_list (2): {value (1), packed}}}.
  """

  def __init__(self, name: str, kind_field: int):
    self._key = name.encode('utf-8')
    self._kind_tag = bytes([(kind_field << 3) | 2])
    self._cache: Dict[int, bytes] = {}

  def __call__(self, payload_size: int) -> bytes:
    header = self._cache.get(payload_size)
    if header is None:
      values = b'\x0a' + _varint(payload_size)
      value_list_size = len(values) + payload_size
      feature = self._kind_tag + _varint(value_list_size) + values
      feature_size = len(feature) + payload_size
      entry = (b'\x0a' + _varint(len(self._key)) + self._key + b'\x12' + _varint(feature_size)
               + feature)
      header = b'\x0a' + _varint(len(entry) + payload_size) + entry
      self._cache[payload_size] = header
    return header


_HEADERS: Dict[Tuple[str, int], _FeatureHeaders] = {}


def _headers(name: str, kind_field: int) -> _FeatureHeaders:
  key = (name, kind_field)
  if key not in _HEADERS:
    _HEADERS[key] = _FeatureHeaders(name, kind_field)
  return _HEADERS[key]


def encode_examples(
    int_features: Mapping[str, np.ndarray],
    float_features: Optional[Mapping[str, np.ndarray]] = None) -> Tuple[np.ndarray, np.ndarray]:
  """Serialized `tf.train.Example`s, one per row, laid out back to back.

  Args:
    int_features: name -> `[batch, width]` integer array (an Int64List per row).
    float_features: name -> `[batch, width]` float array (a FloatList of float32 per row).

  Returns:
    `(data uint8 array, length of each serialized proto [batch])`; features in the given order, ints
    first.
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
    offset = add(np.frombuffer(b''.join(table), np.uint8))
    return offset + _exclusive_cumsum(table_lengths)[which], table_lengths[which]

  columns = []  # (starts [batch], lengths [batch]) per piece of a record, in order
  for name, values in int_features.items():
    values = np.asarray(values)
    blob, payload_sizes = _varints(values.reshape(values.shape[0], -1))
    payload_offset = add(blob)
    columns.append(header_pieces(_headers(name, 3), payload_sizes))
    columns.append((payload_offset + _exclusive_cumsum(payload_sizes), payload_sizes))
  for name, values in (float_features or {}).items():
    values = np.asarray(values, '<f4')
    values = values.reshape(values.shape[0], -1)
    payload_sizes = np.full(values.shape[0], values.shape[1] * 4, np.int64)
    payload_offset = add(values.ravel().view(np.uint8))
    columns.append(header_pieces(_headers(name, 2), payload_sizes))
    columns.append((payload_offset + _exclusive_cumsum(payload_sizes), payload_sizes))
  if not columns:
    return np.zeros(0, np.uint8), np.zeros(0, np.int64)
  body_sizes = sum(lengths for _, lengths in columns)
  # Example.features (field 1) + its size.
  columns.insert(0, header_pieces(_ExampleHeader(), body_sizes))
  starts = np.stack([c[0] for c in columns], axis=1).ravel()
  lengths = np.stack([c[1] for c in columns], axis=1)
  return gather_segments(np.concatenate(pools), starts, lengths.ravel()), lengths.sum(axis=1)


class _ExampleHeader:
  def __call__(self, size: int) -> bytes:
    return b'\x0a' + _varint(size)


class _ChecksummedFile:
  """A binary file keeping the size and the zlib CRC-32 of the bytes written (for the metadata)."""

  def __init__(self, raw):
    self._raw = raw
    self.size = 0
    self.crc32 = 0

  def write(self, data) -> int:
    self.crc32 = zlib.crc32(data, self.crc32)
    self.size += memoryview(data).nbytes
    return self._raw.write(data)

  def writelines(self, pieces: Sequence[bytes]) -> None:
    self.write(b''.join(pieces))  # one checksum call and one write per block of records

  def flush(self) -> None:
    self._raw.flush()

  def close(self) -> None:
    self._raw.close()


class AtomicRecordFile:
  """A record file written as `path + '.partial'`, renamed to `path` only when closed without error.

  An interrupted run therefore never leaves a truncated file under the final name. GZIP output uses
  a fixed header (no file name, mtime 0) so equal records give equal bytes. After closing, `size`
  and `crc32` (zlib CRC-32) describe the bytes of the file, computed while writing.

  Example:
    with AtomicRecordFile("train.tfrecord", gzip_compress=True) as f:
      f.write(frame_records(*encode_examples({"input_ids": ids}))[0])
    f.size, f.crc32
  """

  def __init__(self, path: str, gzip_compress: bool = False):
    self.path = path
    self.partial_path = path + PARTIAL_SUFFIX
    self._gzip_compress = gzip_compress
    self._raw = None
    self._out = None
    self.size = 0
    self.crc32 = 0

  def __enter__(self) -> 'AtomicRecordFile':
    directory = os.path.dirname(os.path.abspath(self.path))
    os.makedirs(directory, exist_ok=True)
    self._raw = _ChecksummedFile(open(self.partial_path, 'wb', buffering=1 << 20))
    self._out = (gzip.GzipFile(filename='', mode='wb', fileobj=self._raw, compresslevel=6, mtime=0)
                 if self._gzip_compress else self._raw)
    return self

  def write(self, data: bytes) -> None:
    self._out.write(data)

  def writelines(self, pieces: Sequence[bytes]) -> None:
    """Writes bytes-like pieces back to back (views are fine: only compression joins them)."""
    if self._out is self._raw:
      self._out.writelines(pieces)
    else:  # one compressor call per block rather than per record
      self._out.write(b''.join(pieces))

  def __exit__(self, exc_type, exc, tb) -> None:
    try:
      if self._out is not self._raw:
        self._out.close()
      self._raw.close()
      self.size, self.crc32 = self._raw.size, self._raw.crc32
    finally:
      if exc_type is None:
        os.replace(self.partial_path, self.path)
      elif os.path.exists(self.partial_path):
        os.remove(self.partial_path)


# --------------------------------------------------------------------------------------------------
# Pretraining records: a specialized encoder (Google BERT schema) with the CRC computed from tables.


def _varint_slots(values: np.ndarray, width: int) -> Tuple[np.ndarray, np.ndarray]:
  """Varint bytes of non-negative `values` [...] in `width` fixed slots:
  `(bytes [..., width] uint8, valid)`.

  Unused slots hold 0 (a zero byte adds nothing to a CRC computed from `_DISTANCE`), `valid` marks
  used slots.
  """
  values = np.asarray(values)
  values = values.astype(np.uint32, copy=False)
  out = np.empty(values.shape + (width,), np.uint8)
  valid = np.empty(values.shape + (width,), bool)
  valid[..., 0] = True
  for k in range(width):
    group = values >> (7 * k) if k else values
    if k + 1 < width:
      np.greater_equal(values, 1 << (7 * (k + 1)), out=valid[..., k + 1])
      out[..., k] = (group & 0x7F) | (valid[..., k + 1].view(np.uint8) << 7)
    else:
      out[..., k] = group & 0x7F
  return out, valid


def _varint_width(max_value: int) -> int:
  return max(1, (int(max_value).bit_length() + 6) // 7)


class _Columns:
  """Columns of a `[batch, width]` byte matrix with a `valid` mask (unused varint slots: later)."""

  def __init__(self, batch: int):
    self.batch = batch
    self.parts: List[np.ndarray] = []
    self.valid: List[np.ndarray] = []

  def const(self, data: bytes) -> None:
    row = np.frombuffer(data, np.uint8)
    self.parts.append(np.broadcast_to(row, (self.batch, row.size)))
    self.valid.append(np.broadcast_to(True, (self.batch, row.size)))

  def slots(self, data: np.ndarray, valid: np.ndarray) -> None:
    self.parts.append(data.reshape(self.batch, -1))
    self.valid.append(valid.reshape(self.batch, -1))

  def varint(self, values: np.ndarray, width: int = 3) -> None:
    self.slots(*_varint_slots(values, width))

  def matrices(self) -> Tuple[np.ndarray, np.ndarray]:
    return np.concatenate(self.parts, axis=1), np.concatenate(self.valid, axis=1)


def _varint_size(value: np.ndarray) -> np.ndarray:
  value = np.asarray(value, np.int64)
  return 1 + (value >= 1 << 7) + (value >= 1 << 14) + (value >= 1 << 21) + (value >= 1 << 28)


def _feature_entry_sizes(key: bytes, payload: np.ndarray):
  """Sizes in a `Features.feature` map entry around a packed value list of `payload` bytes."""
  value_list = 1 + _varint_size(payload) + payload      # Int64List/FloatList {value (1): packed}
  feature = 1 + _varint_size(value_list) + value_list   # Feature {int64_list (3) / float_list (2)}
  # {key (1), value (2)}
  entry = 1 + _varint_size(len(key)) + len(key) + 1 + _varint_size(feature) + feature
  return value_list, feature, entry


def _entry_header(key: bytes, kind_field: int, payload: int) -> bytes:
  value_list, feature, entry = (int(x) for x in _feature_entry_sizes(key, np.array(payload)))
  return (b'\x0a' + _varint(entry) + b'\x0a' + _varint(len(key)) + key + b'\x12' + _varint(feature)
          + bytes([(kind_field << 3) | 2]) + _varint(value_list) + b'\x0a' + _varint(payload))


class _TailLayout:
  """The fixed-size end of a pretraining record and the tables giving its CRC contribution.

  The tail holds `input_mask` (ones on `[0, n)`), `segment_ids` (ones on `[s, n)`), optionally
  `masked_lm_weights` (`count` 1.0s) and `next_sentence_labels` (one byte), each behind a constant
  header. Since it ends the record, every byte's distance to the record end is fixed, and the
  (register-0) CRC contribution of the tail is the XOR of a few precomputed table entries.
  """

  def __init__(self, names: Sequence[str], seq: int, max_predictions: int, weights: bool):
    pieces = [(names[1], 3, seq), (names[2], 3, seq)]
    if weights:
      pieces.append(('masked_lm_weights', 2, 4 * max_predictions))
    pieces.append(('next_sentence_labels', 3, 1))
    template, offsets = b'', []
    for name, kind, payload in pieces:
      template += _entry_header(name.encode('utf-8'), kind, payload)
      offsets.append(len(template))
      template += bytes(payload)
    self.template = np.frombuffer(template, np.uint8)
    self.size = len(template)
    self.mask_offset, self.segment_offset = offsets[0], offsets[1]
    self.weight_offset = offsets[2] if weights else None
    self.label_offset = offsets[-1]
    _grow_tables(self.size + 1)
    distance = _DISTANCE
    end = self.size - 1

    def prefix_xor(offset: int, count: int, byte: int) -> np.ndarray:
      contributions = distance[end - offset - np.arange(count), byte]
      return np.concatenate([[0], np.bitwise_xor.accumulate(contributions)]).astype(np.uint32)

    self.const = np.bitwise_xor.reduce(distance[end - np.arange(self.size),
                                                self.template]).astype(np.uint32)
    self.mask_prefix = prefix_xor(self.mask_offset, seq, 1)
    self.segment_prefix = prefix_xor(self.segment_offset, seq, 1)
    if weights:  # 1.0f is 00 00 80 3f
      high = distance[end - self.weight_offset - 4 * np.arange(max_predictions) - 2, 0x80]
      top = distance[end - self.weight_offset - 4 * np.arange(max_predictions) - 3, 0x3F]
      self.weight_prefix = np.concatenate(
          [[0], np.bitwise_xor.accumulate(high ^ top)]).astype(np.uint32)
      one = np.zeros(4 * max_predictions, np.uint8)
      one[2::4], one[3::4] = 0x80, 0x3F
      self.weight_rows = np.stack([np.where(np.arange(4 * max_predictions) < 4 * c, one, 0)
                                   for c in range(max_predictions + 1)]).astype(np.uint8)
    self.label_crc = distance[end - self.label_offset, :2].copy()

  def bytes_and_crc(self, lengths, segment_starts, counts, labels) -> Tuple[np.ndarray, np.ndarray]:
    batch = lengths.size
    seq = self.mask_prefix.size - 1
    tail = np.empty((batch, self.size), np.uint8)
    tail[:] = self.template
    col = np.arange(seq)
    tail[:, self.mask_offset:self.mask_offset + seq] = col < lengths[:, None]
    tail[:, self.segment_offset:self.segment_offset + seq] = (
        (col >= segment_starts[:, None]) & (col < lengths[:, None]))
    crc = (self.const ^ self.mask_prefix[lengths] ^ self.segment_prefix[lengths]
           ^ self.segment_prefix[np.minimum(segment_starts, lengths)] ^ self.label_crc[labels])
    if self.weight_offset is not None:
      weight_end = self.weight_offset + self.weight_rows.shape[1]
      tail[:, self.weight_offset:weight_end] = self.weight_rows[counts]
      crc ^= self.weight_prefix[counts]
    tail[:, self.label_offset] = labels
    return tail, crc


_TAILS: Dict[tuple, _TailLayout] = {}


def pretraining_feature_names(use_v2_feature_names: bool = False, dynamic: bool = False,
                              pack: bool = False) -> List[str]:
  """Names of the pretraining records' features, in order (`position_ids` for packed rows).

  Example:
    >>> pretraining_feature_names(dynamic=True)
    ['input_ids', 'input_mask', 'segment_ids', 'next_sentence_labels']
  """
  names = ['input_word_ids' if use_v2_feature_names else 'input_ids', 'input_mask',
           'input_type_ids' if use_v2_feature_names else 'segment_ids']
  if pack:
    names.append('position_ids')
  if not dynamic:
    names += ['masked_lm_positions', 'masked_lm_ids', 'masked_lm_weights']
  return names + ['next_sentence_labels']


def encode_pretraining_records(input_ids: np.ndarray, lengths: np.ndarray,
                               segment_starts: np.ndarray, next_sentence_labels: np.ndarray,
                               masked_lm_positions: Optional[np.ndarray] = None,
                               masked_lm_ids: Optional[np.ndarray] = None,
                               masked_counts: Optional[np.ndarray] = None,
                               use_v2_feature_names: bool = False,
                               vocab_size: Optional[int] = None,
                               position_ids: Optional[np.ndarray] = None
                               ) -> Tuple[np.ndarray, np.ndarray]:
  """Framed TFRecords of pretraining `tf.train.Example`s (Google BERT schema), back to back.

  Faster than `frame_records(*encode_examples(...))` for this schema: `input_mask`, `segment_ids`
  and `masked_lm_weights` are given as runs, the record is a byte matrix compacted once, and the
  CRC32C comes from tables (see `_TailLayout`). Features are written in the order `input_ids`,
  (`position_ids`), `masked_lm_positions`, `masked_lm_ids` (variable size), then `input_mask`,
  `segment_ids`, `masked_lm_weights`, `next_sentence_labels` (map order does not matter to
  `tf.io.parse_example`).

  Args:
    input_ids: `[batch, seq]` non-negative ids, zero after `lengths`.
    lengths: `[batch]` real tokens (input_mask is 1 on `[0, length)`).
    segment_starts: `[batch]` first position of segment 1 (segment_ids is 1 on `[start, length)`);
      `lengths` for single segments.
    next_sentence_labels: `[batch]` 0 or 1.
    masked_lm_positions, masked_lm_ids: `[batch, max_predictions]` zero-padded, or None (dynamic
      records: no masked-LM features).
    masked_counts: `[batch]` real predictions (masked_lm_weights is 1.0 on `[0, count)`).
    use_v2_feature_names: `input_word_ids`/`input_type_ids`.
    vocab_size: bound of the ids (default: their maximum + 1); fixes the varint slot width.
    position_ids: `[batch, seq]` values in `[0, seq)` written as the `position_ids` feature (packed
      rows), or None (no such feature).

  Returns:
    `(framed records uint8 [total], framed length of each record [batch])`.

  Example:
    framed, lengths = encode_pretraining_records(ids, lengths, lengths, np.zeros(len(ids), int),
                                                 position_ids=positions)
  """
  input_ids = np.asarray(input_ids)
  batch, seq = input_ids.shape
  lengths = np.asarray(lengths, np.int64)
  segment_starts = np.asarray(segment_starts, np.int64)
  labels = np.asarray(next_sentence_labels, np.int64).reshape(-1)
  dynamic = masked_lm_positions is None
  names = pretraining_feature_names(use_v2_feature_names)[:3]  # ids, mask, segment ids
  if batch == 0:
    return np.zeros(0, np.uint8), np.zeros(0, np.int64)
  if input_ids.min() < 0 or labels.min() < 0 or labels.max() > 1:
    raise ValueError('encode_pretraining_records: ids must be >= 0 and next_sentence_labels 0 or 1')
  if position_ids is not None and (np.shape(position_ids) != (batch, seq) or
                                   np.min(position_ids) < 0 or np.max(position_ids) >= seq):
    raise ValueError(f'encode_pretraining_records: position_ids must be [batch, seq] = '
                     f'{[batch, seq]} with values in [0, {seq}); found shape '
                     f'{list(np.shape(position_ids))}, values in [{np.min(position_ids)}, '
                     f'{np.max(position_ids)}]')
  max_predictions = 0 if dynamic else masked_lm_positions.shape[1]
  key = (tuple(names), seq, max_predictions, not dynamic)
  if key not in _TAILS:
    _TAILS[key] = _TailLayout(names, seq, max_predictions, not dynamic)
  tail_layout = _TAILS[key]
  id_width = _varint_width(max(int(input_ids.max()), (vocab_size or 1) - 1))
  head_features = [(names[0].encode('utf-8'), input_ids, id_width)]
  if position_ids is not None:
    head_features.append((b'position_ids', np.asarray(position_ids), _varint_width(seq - 1)))
  if not dynamic:
    counts = np.asarray(masked_counts, np.int64)
    head_features.append(
        (b'masked_lm_positions', np.asarray(masked_lm_positions), _varint_width(seq - 1)))
    head_features.append((b'masked_lm_ids', np.asarray(masked_lm_ids), id_width))
  else:
    counts = np.zeros(batch, np.int64)

  # Head: Example.features header, then each variable-size feature (entry header with varint sizes +
  # values).
  encoded = [_varint_slots(values, width) for _, values, width in head_features]
  payloads = [valid.reshape(batch, -1).sum(axis=1) for _, valid in encoded]
  entry_sizes = [
      _feature_entry_sizes(name, payload) for (name, _, _), payload in zip(head_features, payloads)
  ]
  features_size = tail_layout.size + sum(
      1 + _varint_size(entry) + entry for _, _, entry in entry_sizes)
  head = _Columns(batch)
  head.const(b'\x0a')
  head.varint(features_size)
  for (name, _, _), (data, valid), payload, (value_list, feature,
                                             entry) in zip(head_features, encoded, payloads,
                                                           entry_sizes):
    head.const(b'\x0a')
    head.varint(entry)
    head.const(b'\x0a' + _varint(len(name)) + name + b'\x12')
    head.varint(feature)
    head.const(b'\x1a')
    head.varint(value_list)
    head.const(b'\x0a')
    head.varint(payload)
    head.slots(data, valid)
  head_bytes, head_valid = head.matrices()
  data_lengths = head_valid.sum(axis=1) + tail_layout.size
  _grow_tables(int(data_lengths.max()) + 1)

  # CRC of the data: head bytes at their distance to the record end (valid slots after them + the
  # tail), XOR the tail's table contribution; unused slots hold 0 and contribute nothing.
  index = np.cumsum(head_valid, axis=1, dtype=np.int32)
  np.subtract(data_lengths[:, None].astype(np.int32), index,
              out=index)  # distance to the end of the data
  index <<= 8
  index |= head_bytes
  head_crc = np.bitwise_xor.reduce(_DISTANCE.ravel()[index], axis=1)
  tail, tail_crc = tail_layout.bytes_and_crc(lengths, segment_starts, counts, labels)
  data_crcs = _masked(head_crc ^ tail_crc ^ _INIT[data_lengths] ^ np.uint32(0xFFFFFFFF))
  length_fields = data_lengths.astype('<u8').view(np.uint8).reshape(batch, 8)
  length_raw = np.bitwise_xor.reduce(_DISTANCE[7 - np.arange(8), length_fields], axis=1)
  length_crcs = _masked(length_raw ^ _INIT[8] ^ np.uint32(0xFFFFFFFF))

  framed = np.concatenate([
      length_fields,
      length_crcs.astype('<u4').view(np.uint8).reshape(batch, 4), head_bytes, tail,
      data_crcs.astype('<u4').view(np.uint8).reshape(batch, 4)
  ], axis=1)
  keep = np.ones(framed.shape, bool)
  keep[:, 12:12 + head_valid.shape[1]] = head_valid
  return framed[keep], data_lengths + 16
