"""The shard writer of `pretraining_units`: the workers' parts give the calling process's bytes."""

import multiprocessing
import os
import zlib

import numpy as np
import pytest

from official.nlp.data import pretraining_units
from official.nlp.data import tfrecord_writer


def test_crc32_combine_equals_the_crc_of_the_joined_bytes():
  rng = np.random.default_rng(0)
  for length_a, length_b in ((0, 0), (0, 5), (7, 0), (1, 1), (100, 3), (13, 4097), (5000, 65537)):
    a = rng.bytes(length_a)
    b = rng.bytes(length_b)
    combined = pretraining_units.crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b))
    assert combined == zlib.crc32(a + b)


@pytest.fixture(name='spill')
def _spill(tmp_path):
  """A spill file of 5,000 records of 1 to 300 bytes, and their lengths."""
  rng = np.random.default_rng(1)
  lengths = rng.integers(1, 301, size=5000)
  path = tmp_path / 'records.spill'
  path.write_bytes(rng.bytes(int(lengths.sum())))
  return str(path), lengths


def _serial(path, spill, lengths, order):
  with tfrecord_writer.AtomicRecordFile(path) as out:
    pretraining_units.write_shuffled(out, spill, lengths, order)
  return {'records': int(order.size), 'bytes': out.size, 'crc32': out.crc32}


def test_parts_written_by_workers_equal_the_serial_write(tmp_path, spill):
  path, lengths = spill
  order = np.random.default_rng(2).permutation(lengths.size)
  serial = _serial(str(tmp_path / 'serial.tfrecord'), path, lengths, order)
  with multiprocessing.get_context('fork').Pool(2) as pool:
    for parts in (1, 3, 7):  # uneven parts too; more parts than a chunk holds is not needed
      out = str(tmp_path / f'parts{parts}.tfrecord')
      assert pretraining_units.write_in_parts(out, path, lengths, order, pool, parts) == serial
      assert open(out, 'rb').read() == open(tmp_path / 'serial.tfrecord', 'rb').read()
      assert not os.path.exists(out + tfrecord_writer.PARTIAL_SUFFIX)
  assert serial['crc32'] == zlib.crc32(open(tmp_path / 'serial.tfrecord', 'rb').read())


def test_write_shard_with_a_pool_equals_it_without(tmp_path, spill):
  path, lengths = spill
  data = open(path, 'rb').read()
  written = {}
  with multiprocessing.get_context('fork').Pool(2) as pool:
    for name, worker_pool in (('alone', None), ('pool', pool)):
      spill_copy = tmp_path / f'{name}.spill'
      spill_copy.write_bytes(data)
      out = str(tmp_path / f'{name}.tfrecord')
      written[name] = pretraining_units.write_shard(out, str(spill_copy), lengths, shard=3,
                                                    random_seed=12345, gzip_compress=False,
                                                    pool=worker_pool)
      assert not spill_copy.exists()  # the spill is removed once written
  assert written['pool'] == written['alone'] and written['pool']['records'] == 5000
  assert open(tmp_path / 'pool.tfrecord', 'rb').read() == open(tmp_path / 'alone.tfrecord',
                                                                 'rb').read()


def test_a_failed_part_leaves_no_file(tmp_path, spill):
  _, lengths = spill
  out = str(tmp_path / 'out.tfrecord')
  with multiprocessing.get_context('fork').Pool(2) as pool:
    with pytest.raises(FileNotFoundError):
      pretraining_units.write_in_parts(out, str(tmp_path / 'missing.spill'), lengths,
                                       np.arange(lengths.size), pool)
  assert os.listdir(tmp_path) == ['records.spill']
