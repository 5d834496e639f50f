"""One work unit of pretraining records, and one shard's file: what every engine of
`create_pretraining_data` runs (the local pool, `beam_engine`), so their records are the same.

A unit is the instances of one chunk of documents for one dupe (`build_unit`), its generator
seeded from `(random_seed, dupe, chunk)` only. A shard is its units' records back to back in a
spill file, written in an order seeded from `(random_seed, shard)` (`write_shard`).

Example:
  result = build_unit(shared, (0, 3))        # dupe 0, chunk 3
  write_shard('out/train.tfrecord-00000-of-00004', spill, lengths, 0, 12345, False)
"""

import dataclasses
import os
from typing import Any, Dict, Tuple

import numpy as np

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


def write_shard(path: str, spill: str, lengths: np.ndarray, shard: int, random_seed: int,
                gzip_compress: bool) -> Dict[str, int]:
  """Writes shard `shard`'s records, back to back in the file `spill` (its units in ascending
  order; `lengths` their framed sizes), to `path` in an order seeded by `(random_seed, shard)`;
  removes `spill`.

  Returns:
    `{'records', 'bytes', 'crc32'}` of the file written.
  """
  shard_rng = np.random.default_rng(np.random.SeedSequence([random_seed, 1 << 21, shard]))
  order = shard_rng.permutation(lengths.size)
  with tfrecord_writer.AtomicRecordFile(path, gzip_compress) as out:
    write_shuffled(out, spill, lengths, order)
  os.remove(spill)
  return {'records': int(order.size), 'bytes': out.size, 'crc32': out.crc32}


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
