"""One work unit of pretraining records, and one shard's file: what every engine of
`create_pretraining_data` runs (the local pool, `beam_engine`), so their records are the same.

A unit is the instances of one chunk of documents for one dupe (`build_unit`), its generator
seeded from `(random_seed, dupe, chunk)` only. A shard is its units' records back to back in a
spill file, written in an order seeded from `(random_seed, shard)` (`write_shard`); given a
worker pool, an uncompressed shard is written by the workers in parts of that order, each at its
place in the file, and its CRC-32 combined from theirs (`crc32_combine`): the same bytes.

Example:
  result = build_unit(shared, (0, 3))        # dupe 0, chunk 3
  write_shard('out/train.tfrecord-00000-of-00004', spill, lengths, 0, 12345, False)
"""

import dataclasses
import multiprocessing.pool
import os
import tempfile
import uuid
import zlib
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from official.common import file_utils
from official.nlp.data import pretraining_instances as pi
from official.nlp.data import tfrecord_writer
from official.nlp.data import tokenized_corpus

# The counts of a unit (`UnitResult` fields) that a record set's metadata sums.
UNIT_COUNTS = ('documents', 'instances', 'tokens', 'masked', 'random_next', 'pieces')


@dataclasses.dataclass
class UnitResult:
  """One work unit's records (framed, back to back) and counts."""
  records: bytes  # framed TFRecords back to back
  record_lengths: np.ndarray
  documents: int
  instances: int
  tokens: int
  masked: int
  random_next: int
  pieces: int  # packed rows: pieces of documents; otherwise the instances


def build_unit(shared: Dict[str, Any], unit: Tuple[int, int]) -> UnitResult:
  """Packs, masks and serializes the documents of chunk `unit[1]` for dupe `unit[0]`.

  Every engine builds a unit with this function, from the same `shared` state
  (`create_pretraining_data._write_set`'s:
  the corpus, the instance options, the special ids, the seed, the chunks' documents, the feature
  names) and a generator seeded from `(random_seed, dupe, chunk)` only: a unit's records do not
  depend on where or when it is built.
  """
  dupe, chunk = unit
  corpus: tokenized_corpus.TokenizedCorpus = shared['corpus']
  options: pi.InstanceOptions = shared['options']
  rng = np.random.default_rng(np.random.SeedSequence([shared['random_seed'], dupe, chunk]))
  documents = shared['chunk_documents'][chunk]
  if options.pack:
    packed = pi.pack_rows(documents, corpus.sentence_starts, corpus.document_starts,
                          options.max_seq_length, rng)
    build = pi.build_packed_arrays
  else:
    packed = pi.pack_documents(documents, corpus.sentence_starts, corpus.document_starts,
                               options.max_seq_length, options.short_seq_prob, rng,
                               options.next_sentence, options.sentence_order)
    build = pi.build_instance_arrays
  if not len(packed):
    return UnitResult(b'', np.zeros(0, np.int64), documents.size, 0, 0, 0, 0, 0)
  arrays = build(corpus.token_ids, packed, options, shared['special'], rng)
  records, record_lengths = tfrecord_writer.encode_pretraining_records(
      arrays.input_ids, arrays.lengths, arrays.segment_starts, arrays.next_sentence_labels,
      arrays.masked_lm_positions, arrays.masked_lm_ids, arrays.masked_counts,
      shared['use_v2_feature_names'], shared['special'].vocab_size, arrays.position_ids)
  masked = 0 if options.dynamic else int(arrays.masked_counts.sum())
  return UnitResult(records.tobytes(), record_lengths, documents.size, len(arrays),
                     int(arrays.lengths.sum()), masked, int(arrays.next_sentence_labels.sum()),
                     len(packed))


# Below this many records a shard is written by the calling process alone (parts cost a round
# trip to the workers each).
PARALLEL_WRITE_MIN_RECORDS = 1 << 12


def spill_path(path: str, tag: str = '') -> str:
  """The local file where the records of the shard `path` are gathered before `write_shard`:
  `path + '.spill' + tag` beside a local shard; for a remote one (`gs://...`), a unique name in
  the local temporary directory (`TMPDIR`), which then holds a shard's records twice at most
  (the spill and the shard before its upload).

  Example:
    >>> spill_path('out/train.tfrecord-00000-of-00004')
    'out/train.tfrecord-00000-of-00004.spill'
  """
  if not file_utils.is_remote(path):
    return f'{path}.spill{tag}'
  return os.path.join(tempfile.gettempdir(), f'create_pretraining_data-{os.getpid()}-'
                      f'{uuid.uuid4().hex[:8]}-{os.path.basename(path)}.spill{tag}')


def write_shard(path: str, spill: str, lengths: np.ndarray, shard: int, random_seed: int,
                gzip_compress: bool,
                pool: Optional[multiprocessing.pool.Pool] = None) -> Dict[str, int]:
  """Writes shard `shard`'s records, back to back in the local file `spill` (its units in
  ascending order; `lengths` their framed sizes), to `path` in an order seeded by
  `(random_seed, shard)`; removes `spill`.

  With `pool` (and no compression, and at least `PARALLEL_WRITE_MIN_RECORDS` records), its
  workers write the file in parts (`write_in_parts`): the same bytes, in a fraction of the time.
  A remote `path` (`gs://...`) is written beside `spill`, then copied there.

  Returns:
    `{'records', 'bytes', 'crc32'}` of the file written.
  """
  shard_rng = np.random.default_rng(np.random.SeedSequence([random_seed, 1 << 21, shard]))
  order = shard_rng.permutation(lengths.size)
  local = f'{spill}.shard' if file_utils.is_remote(path) else path
  try:
    if pool is not None and not gzip_compress and order.size >= PARALLEL_WRITE_MIN_RECORDS:
      written = write_in_parts(local, spill, lengths, order, pool)
    else:
      with tfrecord_writer.AtomicRecordFile(local, gzip_compress) as out:
        write_shuffled(out, spill, lengths, order)
      written = {'records': int(order.size), 'bytes': out.size, 'crc32': out.crc32}
    if local != path:
      file_utils.copy_to(local, path)
  finally:
    for leftover in {spill, local} - {path}:
      if os.path.exists(leftover):
        os.remove(leftover)
  return written


def write_in_parts(path: str, spill: str, lengths: np.ndarray, order: np.ndarray,
                   pool: multiprocessing.pool.Pool, parts: Optional[int] = None
                   ) -> Dict[str, int]:
  """Writes the records of `spill` in `order` to `path` (uncompressed), `pool`'s workers each
  writing contiguous parts of the order at their offsets in the file.

  The file is made at its final size as `path + '.partial'` and renamed to `path` once every
  part is in (removed if one fails); each part's CRC-32 is combined in order into the file's.

  Args:
    path: the record file.
    spill: the records back to back (`lengths` their framed sizes).
    order: record indices, the file's order.
    pool: the workers.
    parts: how many parts (default: twice the workers, to even out their loads).

  Returns:
    `{'records', 'bytes', 'crc32'}` of the file written.

  Example:
    >>> with multiprocessing.Pool(2) as pool:
    ...   write_in_parts('out.tfrecord', 'out.spill', lengths, np.arange(lengths.size), pool)
    {'records': 4096, 'bytes': 1843200, 'crc32': 2893212581}
  """
  starts = np.cumsum(lengths) - lengths
  sizes = lengths[order]
  offsets = np.cumsum(sizes) - sizes
  total = int(sizes.sum())
  parts = parts or 2 * pool._processes  # pylint: disable=protected-access
  partial = path + tfrecord_writer.PARTIAL_SUFFIX
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  try:
    with open(partial, 'wb') as f:
      f.truncate(total)
    tasks = [(spill, partial, int(offsets[part[0]]), starts[order[part]], sizes[part])
             for part in np.array_split(np.arange(order.size), parts) if part.size]
    crc = 0
    for part_crc, part_bytes in pool.map(_write_part, tasks, chunksize=1):
      crc = crc32_combine(crc, part_crc, part_bytes)
    os.replace(partial, path)
  finally:
    if os.path.exists(partial):
      os.remove(partial)
  return {'records': int(order.size), 'bytes': total, 'crc32': crc}


def _write_part(task: Tuple[str, str, int, np.ndarray, np.ndarray], chunk: int = 1 << 14
                ) -> Tuple[int, int]:
  """In a worker: copies records of `spill` (at `starts`, of `sizes`) back to back into `partial`
  from `offset` on, by chunks; returns the CRC-32 and the size of the bytes written."""
  spill, partial, offset, starts, sizes = task
  crc, written = 0, 0
  with open(spill, 'rb', buffering=0) as source, open(partial, 'r+b', buffering=0) as target:
    for begin in range(0, sizes.size, chunk):
      block = b''.join([os.pread(source.fileno(), n, s) for s, n in
                        zip(starts[begin:begin + chunk].tolist(),
                            sizes[begin:begin + chunk].tolist())])
      view = memoryview(block)
      while view:  # pwrite may write less than asked
        done = os.pwrite(target.fileno(), view, offset + written)
        view = view[done:]
        written += done
      crc = zlib.crc32(block, crc)
  return crc, written


def _gf2_times(matrix: List[int], vector: int) -> int:
  """The 32x32 matrix over GF(2) (`matrix[i]`: the image of bit i) times the 32-bit `vector`."""
  total, bit = 0, 0
  while vector:
    if vector & 1:
      total ^= matrix[bit]
    vector >>= 1
    bit += 1
  return total


def _gf2_square(matrix: List[int]) -> List[int]:
  return [_gf2_times(matrix, row) for row in matrix]


def crc32_combine(crc_a: int, crc_b: int, length_b: int) -> int:
  """The zlib CRC-32 of `a + b` from `crc32(a)`, `crc32(b)` and `len(b)`: `crc_a` is carried
  through `length_b` zero bytes (the CRC's shift operator, squared up by the bits of the
  length), then combined with `crc_b`.

  Example:
    >>> crc32_combine(zlib.crc32(b'hello '), zlib.crc32(b'world'), 5) == zlib.crc32(b'hello world')
    True
  """
  if length_b <= 0:
    return crc_a
  # The operator of one zero bit: the reflected polynomial on bit 0, a shift on the others.
  one_bit = [0xEDB88320] + [1 << bit for bit in range(31)]
  operator = _gf2_square(_gf2_square(_gf2_square(one_bit)))  # one zero byte
  while length_b:
    if length_b & 1:
      crc_a = _gf2_times(operator, crc_a)
    length_b >>= 1
    if length_b:
      operator = _gf2_square(operator)
  return crc_a ^ crc_b


def write_shuffled(f: tfrecord_writer.AtomicRecordFile, spill: str, lengths: np.ndarray,
                    order: np.ndarray, chunk: int = 1 << 14) -> None:
  """Writes the back-to-back records of the file `spill` in `order` (record indices), by chunks.

  Each record is read with one `pread` (the spill file was just written: it is in the page cache),
  so memory holds one chunk of records whatever the size of the output. (A memory map would not
  bound the resident size: each random access maps the pages around it.)
  """
  starts = np.cumsum(lengths) - lengths
  with open(spill, 'rb', buffering=0) as source:
    fd = source.fileno()
    for begin in range(0, order.size, chunk):
      picked = order[begin:begin + chunk]
      f.writelines(
          [os.pread(fd, n, s) for s, n in zip(starts[picked].tolist(), lengths[picked].tolist())])
