"""The Beam engine of create_pretraining_data writes the local engine's records (same bytes)."""

import glob
import os

import pytest

from official.nlp.data import beam_engine
from official.nlp.data import create_pretraining_data as cpd
from official.nlp.data import data_metadata
from data_tools import create_pretraining_data as cli
from tests.nlp.data.test_create_pretraining_data import VOCAB, _corpus_text, corpus_dir

pytest.importorskip('apache_beam')

# Per kind of record: the options. Four shards and dupe 3 make 6 work units (2 chunks) to spread.
KINDS = {
    'nsp_pairs': dict(),
    'packed': dict(pack=True, masked_lm_prob=0.3, max_predictions_per_seq=20),
    'dynamic': dict(dynamic=True, do_whole_word_mask=True),
}


@pytest.fixture(scope='module')
def corpus(tmp_path_factory):
  return corpus_dir(tmp_path_factory, 'beam', num_docs=24)


def _create(corpus, name, **options):
  output = str(corpus / name / 'train.tfrecord')
  metadata = cpd.create_pretraining_data(
      str(corpus / 'corpus.txt'), output, str(corpus / 'vocab.txt'), dupe_factor=3,
      max_seq_length=64, num_output_shards=4, num_workers=1, validation_fraction=0.1,
      **options)
  return output, metadata


def _files(output):
  """Every file the run left beside `output` (records and metadata), name -> bytes."""
  directory = os.path.dirname(output)
  return {os.path.basename(p): open(p, 'rb').read()
          for p in sorted(glob.glob(os.path.join(directory, '*')))}


@pytest.mark.parametrize('kind', sorted(KINDS))
def test_beam_writes_the_local_engines_files(corpus, kind):
  local, local_metadata = _create(corpus, f'{kind}_local', **KINDS[kind])
  beam, beam_metadata = _create(corpus, f'{kind}_beam', engine='beam', **KINDS[kind])
  local_files = _files(local)
  # Every file the same: the shards byte for byte, the metadata of both sets (validation too).
  assert _files(beam) == local_files
  assert len([n for n in local_files if n.startswith('train.tfrecord-')]) == 4
  assert local_metadata['shards'] == beam_metadata['shards']
  # What training checks before reading: every file listed, its size and CRC-32.
  found = data_metadata.load_metadata(beam + '*')
  data_metadata.verify_record_files(data_metadata.record_paths(beam + '*'), checksum=True)
  assert found['num_instances'] == beam_metadata['num_instances'] > 0
  # No work files left behind.
  assert not [n for n in os.listdir(os.path.dirname(beam)) if n.startswith('.')]


def test_worker_processes_change_nothing(corpus):
  """Two worker processes of Beam's portable runner (a process boundary: pickled functions,
  state loaded per process)."""
  local, _ = _create(corpus, 'mp_local')
  beam, _ = _create(corpus, 'mp_beam', engine='beam',
                    beam_options=['--direct_running_mode=multi_processing',
                                  '--direct_num_workers=2'])
  assert _files(local) == _files(beam)


def test_pipeline_options_fill_the_local_defaults_only_without_a_runner():
  quiet = '--default_sdk_harness_log_level=WARNING'
  assert beam_engine.pipeline_options([], 1) == [
      '--runner=FnApiRunner', '--direct_running_mode=in_memory', '--direct_num_workers=1', quiet]
  assert beam_engine.pipeline_options(['--direct_num_workers=3'], 2) == [
      '--runner=FnApiRunner', '--direct_running_mode=multi_processing', quiet,
      '--direct_num_workers=3']
  assert beam_engine.pipeline_options(['--runner=DataflowRunner', '--region=r'], 2) == [
      '--runner=DataflowRunner', '--region=r']
  with pytest.raises(ValueError, match=r"beam_options: expected --name=value pipeline options, "
                     r"found \['runner=X'\]"):
    beam_engine.pipeline_options(['runner=X'], 1)


def test_an_unknown_engine_is_refused_naming_it(corpus):
  with pytest.raises(ValueError, match=r"engine must be one of \('local', 'beam'\), found 'spark'"):
    _create(corpus, 'bad', engine='spark')


def test_the_command_line_takes_the_engine_and_beams_options(corpus, capsys):
  local, _ = _create(corpus, 'cli_local', use_v2_feature_names=True)
  output = str(corpus / 'cli_beam' / 'train.tfrecord')
  assert cli.main(['prog', f'--input_file={corpus / "corpus.txt"}', f'--output_file={output}',
                   f'--vocab_file={corpus / "vocab.txt"}', '--dupe_factor=3',
                   '--max_seq_length=64', '--num_output_shards=4', '--num_workers=1',
                   '--validation_fraction=0.1', '--use_v2_feature_names', '--engine=beam',
                   '--beam_pipeline_options=direct_running_mode=in_memory']) == 0
  assert _files(local) == _files(output)


def test_beam_options_without_the_beam_engine_are_refused(corpus, capsys):
  output = str(corpus / 'refused' / 'train.tfrecord')
  assert cli.main(['prog', f'--input_file={corpus / "corpus.txt"}', f'--output_file={output}',
                   f'--vocab_file={corpus / "vocab.txt"}',
                   '--beam_pipeline_options=runner=DataflowRunner']) == 1
  assert ('create_pretraining_data: error: --beam_pipeline_options needs --engine=beam'
          in capsys.readouterr().err)


def test_pipeline_options_parse_both_forms():
  assert beam_engine.parse_pipeline_options('runner=DataflowRunner,project=p') == [
      '--runner=DataflowRunner', '--project=p']
  assert beam_engine.parse_pipeline_options('--a=1 --b=2,--c=3') == ['--a=1', '--b=2', '--c=3']
  assert beam_engine.parse_pipeline_options('') == []
  with pytest.raises(ValueError, match=r"--beam_pipeline_options: expected name=value items "
                     r".*found \['runner'\]"):
    beam_engine.parse_pipeline_options('runner')


def test_beams_portable_path_writes_the_same_files(corpus):
  """The pipeline submitted through Beam's job API (PortableRunner) to its local job service:
  the portable path Flink, Spark and Dataflow take, on a runner this machine can start."""
  from apache_beam.runners.portability import local_job_service  # Function-level: the extra's.
  service = local_job_service.LocalJobServicer()
  port = service.start_grpc_server(0)
  try:
    local, _ = _create(corpus, 'portable_local', pack=True)
    portable, _ = _create(corpus, 'portable_beam', pack=True, engine='beam', beam_options=[
        '--runner=PortableRunner', f'--job_endpoint=localhost:{port}',
        '--environment_type=LOOPBACK'])
  finally:
    service.stop()
  assert _files(local) == _files(portable)


def test_shards_without_a_unit_are_dropped_as_the_local_engine_drops_them(tmp_path):
  (tmp_path / 'vocab.txt').write_text(''.join(t + '\n' for t in VOCAB), encoding='utf-8')
  (tmp_path / 'two.txt').write_text(_corpus_text(num_docs=2), encoding='utf-8')
  written = {}
  for engine in ('local', 'beam'):
    output = str(tmp_path / engine / 'train.tfrecord')
    cpd.create_pretraining_data(str(tmp_path / 'two.txt'), output, str(tmp_path / 'vocab.txt'),
                                dupe_factor=1, max_seq_length=64, num_output_shards=4,
                                num_workers=1, engine=engine)
    written[engine] = _files(output)
  assert written['beam'] == written['local']
  assert len([n for n in written['local'] if n.startswith('train.tfrecord-')]) < 4


def test_a_second_run_into_the_same_place_uses_its_own_text(corpus, tmp_path):
  """The in-process runner caches each run's shared state: not across runs."""
  (tmp_path / 'other.txt').write_text(_corpus_text(seed=5, num_docs=24), encoding='utf-8')
  output = str(tmp_path / 'out' / 'train.tfrecord')
  options = dict(dupe_factor=2, max_seq_length=64, num_workers=1)
  cpd.create_pretraining_data(str(corpus / 'corpus.txt'), output, str(corpus / 'vocab.txt'),
                              engine='beam', **options)
  cpd.create_pretraining_data(str(tmp_path / 'other.txt'), output, str(corpus / 'vocab.txt'),
                              engine='beam', **options)
  local = str(tmp_path / 'local' / 'train.tfrecord')
  cpd.create_pretraining_data(str(tmp_path / 'other.txt'), local, str(corpus / 'vocab.txt'),
                              **options)
  assert open(output, 'rb').read() == open(local, 'rb').read()
