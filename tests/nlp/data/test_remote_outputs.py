"""Record sets written to a URL (`gs://...`): TensorFlow's in-memory filesystem (ram://) stands in.

Both engines of create_pretraining_data write the same files to a URL as to a local directory
(the shards, both metadata files, the held-out set), commit them as one set, leave nothing behind
(no staging directory there, no spill file in the local temporary directory), and training reads
and verifies the set there. Tests official/common/file_utils.py (the URL half),
official/nlp/data/{create_pretraining_data, pretraining_units, beam_engine, data_metadata}.py.
"""

import os
import uuid

import pytest
import tensorflow as tf

from data_tools import create_pretraining_data as cli
from official.common import file_utils
from official.nlp.data import create_pretraining_data as cpd
from official.nlp.data import data_metadata
from official.nlp.data import pretrain_dataloader
from tests.nlp.data.test_create_pretraining_data import corpus_dir

SEQ, MAX_PRED = 32, 5


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
  return corpus_dir(tmp_path_factory, 'remote', num_docs=20)


@pytest.fixture
def local_tmp(tmp_path, monkeypatch):
  """The local temporary directory (where spills of remote shards go), empty and checked."""
  directory = tmp_path / 'tmpdir'
  directory.mkdir()
  monkeypatch.setattr('tempfile.tempdir', str(directory))
  return directory


def _remote_dir() -> str:
  return f'ram://outputs-{uuid.uuid4().hex[:8]}'


def _create(inputs, output, monkeypatch, **kwargs):
  options = dict(dupe_factor=2, max_seq_length=SEQ, max_predictions_per_seq=MAX_PRED, num_workers=1,
                 num_output_shards=4, validation_fraction=0.2)
  options.update(kwargs)
  with monkeypatch.context() as patch:
    patch.setattr(cpd, '_CHUNK_TOKENS', 500)  # enough work units for four shards
    return cpd.create_pretraining_data(str(inputs / 'corpus.txt'), output,
                                       str(inputs / 'vocab.txt'), **options)


def _files(directory: str):
  """Every file under `directory` (local or remote), relative name -> bytes."""
  found = {}
  for root, _, names in tf.io.gfile.walk(directory):
    for name in names:
      path = os.path.join(root, name)
      with tf.io.gfile.GFile(path, 'rb') as f:
        found[os.path.relpath(path, directory)] = f.read()
  return found


@pytest.mark.parametrize('engine', ['local', 'beam'])
def test_a_remote_set_has_the_local_sets_files(inputs, tmp_path, local_tmp, monkeypatch, engine):
  if engine == 'beam':
    pytest.importorskip('apache_beam')
  local = tmp_path / 'local'
  remote = _remote_dir()
  # The held-out set in a subdirectory: the metadata names it relative to the training set.
  _create(inputs, str(local / 'train.tfrecord'), monkeypatch,
          validation_output_file=str(local / 'valid' / 'v.tfrecord'))
  metadata = _create(inputs, f'{remote}/train.tfrecord', monkeypatch, engine=engine,
                     validation_output_file=f'{remote}/valid/v.tfrecord')
  local_files, remote_files = _files(str(local)), _files(remote)
  assert len([n for n in remote_files if n.startswith('train.tfrecord-')]) == 4
  # The same bytes, metadata included (shard entries and validation_files are relative).
  assert remote_files == local_files
  assert metadata['validation_files'] == ['valid/v.tfrecord']
  # Nothing left: no staging directory beside the outputs, no spill in the local temp directory.
  assert not [n for n in tf.io.gfile.listdir(remote) if n.startswith('.')]
  assert not os.listdir(local_tmp)
  # Training's view of the set there: its metadata and every shard's size and CRC-32.
  found = data_metadata.load_metadata(f'{remote}/train.tfrecord*')
  assert found['num_instances'] == metadata['num_instances'] > 0
  data_metadata.verify_record_files(data_metadata.record_paths(f'{remote}/train.tfrecord*'),
                                    checksum=True)


def test_training_reads_a_remote_set_and_refuses_a_truncated_shard(inputs, local_tmp,
                                                                   monkeypatch):
  remote = _remote_dir()
  _create(inputs, f'{remote}/train.tfrecord', monkeypatch, validation_fraction=0.0)
  config = pretrain_dataloader.BertPretrainDataConfig(
      input_path=f'{remote}/train.tfrecord*', seq_length=SEQ, max_predictions_per_seq=MAX_PRED,
      global_batch_size=2)
  batch = next(iter(pretrain_dataloader.BertPretrainDataLoader(config).load()))
  assert batch['input_word_ids'].shape == (2, SEQ)
  shard = f'{remote}/train.tfrecord-00001-of-00004'
  with tf.io.gfile.GFile(shard, 'rb') as f:
    data = f.read()
  tf.io.gfile.remove(shard)  # ram:// appends to an existing file opened for writing
  with tf.io.gfile.GFile(shard, 'wb') as f:
    f.write(data[:-10])
  with pytest.raises(ValueError) as error:
    pretrain_dataloader.BertPretrainDataLoader(config).load()
  assert str(error.value).startswith(
      f'{shard}: {len(data) - 10} bytes, expected {len(data)} (listed in '
      f'{remote}/train.metadata.json)')


def test_a_rerun_replaces_a_remote_set_as_one(inputs, local_tmp, monkeypatch):
  """Four shards, then two under the same name: the old shards the new set does not list go."""
  remote = _remote_dir()
  _create(inputs, f'{remote}/train.tfrecord', monkeypatch, validation_fraction=0.0)
  _create(inputs, f'{remote}/train.tfrecord', monkeypatch, validation_fraction=0.0,
          num_output_shards=2)
  assert sorted(tf.io.gfile.listdir(remote)) == [
      'train.metadata.json', 'train.tfrecord-00000-of-00002', 'train.tfrecord-00001-of-00002']
  data_metadata.verify_record_files(data_metadata.record_paths(f'{remote}/train.tfrecord*'),
                                    checksum=True)


def test_a_failed_upload_is_one_line_and_keeps_the_old_set(inputs, local_tmp, monkeypatch,
                                                            capsys):
  """A shard's upload refused (TensorFlow's error, not an OSError): one line, the old set intact,
  no staging directory or spill left."""
  remote = _remote_dir()
  _create(inputs, f'{remote}/train.tfrecord', monkeypatch, validation_fraction=0.0)
  before = _files(remote)

  def refused(local_path, path):
    raise tf.errors.PermissionDeniedError(None, None, f'{path}: permission denied')

  monkeypatch.setattr(file_utils, 'copy_to', refused)
  code = cli.main(['prog', f"--input_file={inputs / 'corpus.txt'}",
                   f'--output_file={remote}/train.tfrecord', f"--vocab_file={inputs / 'vocab.txt'}",
                   '--num_workers=1', '--dupe_factor=1'])
  err = capsys.readouterr().err
  assert code == 1 and 'Traceback' not in err
  last = err.strip().splitlines()[-1]
  assert last.startswith(f'create_pretraining_data: error: {remote}/.create_pretraining_data-')
  assert last.endswith('/train.tfrecord: permission denied')
  assert _files(remote) == before
  assert not os.listdir(local_tmp)


def test_an_unknown_url_scheme_fails_before_tokenizing(inputs, monkeypatch):
  monkeypatch.setattr(cpd.tokenized_corpus, 'read_tokenized_corpus',
                      lambda *a, **k: pytest.fail('tokenized before checking the output'))
  with pytest.raises(ValueError) as error:
    _create(inputs, 'nosuchfs://bucket/train.tfrecord', monkeypatch)
  message = str(error.value)
  assert message.startswith("output_file: cannot write to the directory 'nosuchfs://bucket' (")
  assert 'nosuchfs' in message.split('(', 1)[1] and message.endswith(
      'expected a writable directory')


# ------------------------------------------------------------------------------ file_utils on URLs


def test_url_paths_resolve_like_local_ones():
  assert file_utils.absolute('gs://b/data/../x/./t.tfrecord') == 'gs://b/x/t.tfrecord'
  assert file_utils.absolute('data/t') == os.path.join(os.getcwd(), 'data', 't')
  assert file_utils.relative('gs://b/data/valid/v.tfrecord', 'gs://b/data') == 'valid/v.tfrecord'
  assert file_utils.relative('gs://b/valid/v.tfrecord', 'gs://b/data') == '../valid/v.tfrecord'
  assert file_utils.join_relative('gs://b/data', '../valid/v.tfrecord') == 'gs://b/valid/v.tfrecord'
  assert file_utils.relative('/d/a/b', '/d') == 'a/b'
  assert file_utils.join_relative('/d/x', '../a') == '/d/a'
  with pytest.raises(ValueError, match="'/d/a' is not on the filesystem of 'gs://b'"):
    file_utils.relative('/d/a', 'gs://b')


@pytest.mark.parametrize('where', ['local', 'remote'])
def test_file_operations_on_both_kinds_of_path(tmp_path, where):
  base = str(tmp_path) if where == 'local' else _remote_dir()
  directory = f'{base}/d'
  file_utils.makedirs(directory)
  with file_utils.open_file(f'{directory}/a.bin', 'wb') as f:
    f.write(b'abcde')
  assert file_utils.isfile(f'{directory}/a.bin') and not file_utils.isfile(directory)
  assert not file_utils.isfile(f'{directory}/missing')
  assert file_utils.file_size(f'{directory}/a.bin') == 5
  assert file_utils.file_size(f'{directory}/missing') is None
  assert file_utils.file_size(directory) is None
  file_utils.replace(f'{directory}/a.bin', f'{directory}/b.bin')
  local_file = tmp_path / 'c.bin'
  local_file.write_bytes(b'xyz')
  file_utils.copy_to(str(local_file), f'{directory}/c.bin')
  assert file_utils.glob(f'{directory}/*.bin') == [f'{directory}/b.bin', f'{directory}/c.bin']
  with file_utils.open_file(f'{directory}/c.bin', 'rb') as f:
    assert f.read() == b'xyz'
  file_utils.remove(f'{directory}/c.bin')
  assert file_utils.glob(f'{directory}/*.bin') == [f'{directory}/b.bin']
  file_utils.rmtree(directory)
  assert not file_utils.exists(directory)
  file_utils.rmtree(directory)  # a missing directory is no error
