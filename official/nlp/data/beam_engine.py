"""The Apache Beam engine of `create_pretraining_data` (`engine='beam'`, extra `mlm-garden[beam]`).

The local engine builds every (dupe, chunk) work unit in a pool of processes on one machine; this
one runs the same work as a Beam pipeline, so that a Beam runner (the portable runner on one
machine, Flink, Spark, Dataflow) spreads it over its workers:

  Create(units, as (shard, position in the shard, dupe, chunk))
    | Reshuffle                        (spread the units over the workers)
    | FlatMap(_BuildUnit)              `pretraining_units.build_unit`, its records to a file
    | GroupByKey(shard)
    | FlatMap(_WriteShard)             the units in ascending order, then `write_shard`

Each unit is built by the local engine's function from the same shared state, with its generator
seeded from `(random_seed, dupe, chunk)`; a shard's units are put back in their order after the
shuffle, and `write_shard` orders its records by a generator seeded from `(random_seed, shard)`.
Nothing depends on the runner, the number of workers, bundles or retries (a unit's file has a
fixed name, written atomically), so the records are those of the local engine, byte for byte, in
the same shards (tests/nlp/data/test_beam_engine.py). The metadata (records, bytes and CRC-32 of
every shard, computed while writing) and the commit of the set are the local engine's.

The shared state (the tokenized corpus, a few bytes a token, and the options) is pickled once
into the work directory and loaded once per worker process. The work directory sits beside the
output files, so on the filesystem the workers write them to: a local disk or a network
filesystem they share, or a bucket (`gs://...`, through `tf.io.gfile`) for workers that share
none (Dataflow). A worker gathers a shard's records in its local temporary directory before
writing it. Tokenizing runs in the launcher's worker pool. docs/data_at_scale.md has the runners'
options.

Example:
  create_pretraining_data('corpus.txt', 'out/train.tfrecord', vocab_file='vocab.txt',
                          engine='beam', beam_options=['--direct_num_workers=2'])
"""

import collections
import json
import logging
import os
import pickle
import shutil
import uuid
from typing import Any, Dict, Iterable, Iterator, List, Sequence, Tuple

import numpy as np

from official.common import file_utils
from official.nlp.data import pretraining_units

# Beam's portable runner in this process's machine, `--direct_num_workers` processes (the Direct
# runner would first try to download the Prism runner; FnApiRunner is the one it falls back to).
DEFAULT_RUNNER = 'FnApiRunner'
_SHARED = 'shared.pkl'
logger = logging.getLogger(__name__)
_loaded: Dict[str, Dict[str, Any]] = {}  # per worker process: work dir -> shared state


def _beam():
  """The `apache_beam` module, or an ImportError naming the extra to install."""
  try:
    # Function-level: Apache Beam is an extra, imported only by the 'beam' engine.
    import apache_beam  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(f"engine='beam' needs Apache Beam ({e}); install the extra: "
                      "pip install 'mlm-garden[beam]'") from None
  return apache_beam


def parse_pipeline_options(text: str) -> List[str]:
  """A command line's `--beam_pipeline_options` as Beam arguments.

  TensorFlow Datasets' form, comma-separated `name=value` (`runner=DataflowRunner,project=P`), or
  Beam's own, `--name=value` separated by spaces or commas. A value cannot hold a comma.

  Example:
    >>> parse_pipeline_options('runner=DataflowRunner,project=p')
    ['--runner=DataflowRunner', '--project=p']
    >>> parse_pipeline_options('--direct_num_workers=2 --direct_running_mode=multi_processing')
    ['--direct_num_workers=2', '--direct_running_mode=multi_processing']
  """
  items = [item for item in text.replace(',', ' ').split() if item]
  bad = [item for item in items if '=' not in item and not item.startswith('--')]
  if bad:
    raise ValueError(f'--beam_pipeline_options: expected name=value items (e.g. '
                     f'runner=DataflowRunner,project=P), found {bad}')
  return [item if item.startswith('--') else f'--{item}' for item in items]


def options_from_flags(engine: str, text: str) -> List[str]:
  """The Beam arguments of a command line's `--engine` and `--beam_pipeline_options`
  (`parse_pipeline_options`); a ValueError when options are given without `--engine=beam`.

  Example:
    >>> options_from_flags('beam', 'direct_num_workers=2')
    ['--direct_num_workers=2']
  """
  if text and engine != 'beam':
    raise ValueError('--beam_pipeline_options needs --engine=beam')
  return parse_pipeline_options(text)


def pipeline_options(beam_options: Sequence[str], num_workers: int) -> List[str]:
  """Beam's pipeline arguments: `beam_options`, with the local defaults where they name none.

  Without `--runner`: `--runner=FnApiRunner`, `--direct_running_mode=multi_processing` (or
  `in_memory` for one worker), `--direct_num_workers=num_workers` and the workers' log level
  `--default_sdk_harness_log_level=WARNING`.

  Example:
    >>> pipeline_options([], 2)[:3]
    ['--runner=FnApiRunner', '--direct_running_mode=multi_processing', '--direct_num_workers=2']
    >>> pipeline_options(['--runner=DataflowRunner', '--project=p'], 2)
    ['--runner=DataflowRunner', '--project=p']
  """
  options = list(beam_options)
  bad = [o for o in options if not o.startswith('--')]
  if bad:
    raise ValueError(f'beam_options: expected --name=value pipeline options, found {bad}')
  names = {o[2:].split('=', 1)[0] for o in options}
  if 'runner' in names:
    return options
  defaults = [f'--runner={DEFAULT_RUNNER}']
  if 'direct_running_mode' not in names:
    mode = 'in_memory' if num_workers == 1 else 'multi_processing'
    defaults.append(f'--direct_running_mode={mode}')
  if 'direct_num_workers' not in names:
    defaults.append(f'--direct_num_workers={num_workers}')
  if 'default_sdk_harness_log_level' not in names:  # the workers' logs: warnings, not every bundle
    defaults.append('--default_sdk_harness_log_level=WARNING')
  return defaults + options


def write_shards(shared: Dict[str, Any], units: List[Tuple[int, int]],
                 shard_units: List[List[int]], staged_paths: List[str],
                 beam_options: Sequence[str], num_workers: int, random_seed: int,
                 gzip_compress: bool, description: str
                 ) -> Tuple[List[Dict[str, int]], collections.Counter]:
  """Builds the units and writes the shards in a Beam pipeline (the twin of
  `create_pretraining_data._write_shards_local`).

  Args:
    shared: `build_unit`'s shared state.
    units: the (dupe, chunk) units.
    shard_units: each shard's units (indices into `units`, ascending).
    staged_paths: each shard's record file (in the staging directory).
    beam_options: Beam's pipeline arguments (`pipeline_options` adds the local defaults).
    num_workers: worker processes of the local default runner.
    random_seed: the run's seed (the shards' record order).
    gzip_compress: GZIP-compressed record files.
    description: 'training' or 'validation' (for the log).

  Returns:
    Each shard's `{'records', 'bytes', 'crc32'}` and the totals
    (`pretraining_units.UNIT_COUNTS`).
  """
  beam = _beam()
  # Function-level: the extra's (present: `_beam` imported it).
  from apache_beam.options import pipeline_options as beam_pipeline_options  # pylint: disable=g-import-not-at-top
  # A name of its own per run: workers cache the state loaded from it (`_shared_state`).
  work_dir = os.path.join(os.path.dirname(staged_paths[0]),
                          f'beam-{description}-{uuid.uuid4().hex[:12]}')
  file_utils.makedirs(work_dir)
  with file_utils.open_file(os.path.join(work_dir, _SHARED), 'wb') as f:
    pickle.dump(shared, f, protocol=pickle.HIGHEST_PROTOCOL)
  elements = [(shard, position, *units[u]) for shard, part in enumerate(shard_units)
              for position, u in enumerate(part)]
  arguments = pipeline_options(beam_options, num_workers)
  logger.info('building %s instances with Beam: %d units, %d shards (%s)', description,
              len(elements), len(staged_paths), ' '.join(arguments))
  # Beam logs every worker's start-up and bundle at INFO; kept to warnings unless ours is DEBUG.
  beam_logger = logging.getLogger('apache_beam')
  beam_level = beam_logger.level
  if not logger.isEnabledFor(logging.DEBUG):
    beam_logger.setLevel(logging.WARNING)
  try:
    with beam.Pipeline(options=beam_pipeline_options.PipelineOptions(arguments)) as pipeline:
      _ = (pipeline
           | 'units' >> beam.Create(elements, reshuffle=False)
           | 'spread' >> beam.Reshuffle()
           | 'build' >> beam.FlatMap(_BuildUnit(work_dir))
           | 'by shard' >> beam.GroupByKey()
           | 'write' >> beam.FlatMap(_WriteShard(work_dir, staged_paths, random_seed,
                                                gzip_compress)))
    written, totals = [], collections.Counter()
    for shard, path in enumerate(staged_paths):
      if not shard_units[shard]:  # no unit, so no key reached the GroupByKey: an empty file
        spill = pretraining_units.spill_path(path)
        open(spill, 'wb').close()
        written.append(pretraining_units.write_shard(path, spill, np.zeros(0, np.int64), shard,
                                                     random_seed, gzip_compress))
        continue
      result = json.loads(file_utils.read_text(_shard_result_path(work_dir, shard)))
      written.append(result['file'])
      totals.update(result['totals'])
    return written, totals
  finally:
    beam_logger.setLevel(beam_level)
    _loaded.pop(work_dir, None)  # the in-process runner's cache
    file_utils.rmtree(work_dir)


def _shared_state(work_dir: str) -> Dict[str, Any]:
  """The shared state pickled in `work_dir`, loaded once per process."""
  if work_dir not in _loaded:
    with file_utils.open_file(os.path.join(work_dir, _SHARED), 'rb') as f:
      _loaded[work_dir] = pickle.load(f)
  return _loaded[work_dir]


def _unit_path(work_dir: str, shard: int, position: int) -> str:
  return os.path.join(work_dir, f'unit-{shard:05d}-{position:07d}')


def _shard_result_path(work_dir: str, shard: int) -> str:
  return os.path.join(work_dir, f'shard-{shard:05d}.json')


def _write_atomically(path: str, *parts: bytes) -> None:
  """`parts`, back to back, to `path` through a temporary name (a retried or duplicated bundle
  rewrites it)."""
  temporary = f'{path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}'
  with file_utils.open_file(temporary, 'wb') as f:
    for part in parts:
      f.write(part)
  file_utils.replace(temporary, path)


class _BuildUnit:
  """FlatMap function: builds one unit (`pretraining_units.build_unit`), its records and
  lengths to the unit's file; yields `(shard, (position, counts))`."""

  def __init__(self, work_dir: str):
    self.work_dir = work_dir

  def __call__(self, element: Tuple[int, int, int, int]) -> Iterator[Tuple[int, Tuple[int, Any]]]:
    shard, position, dupe, chunk = element
    result = pretraining_units.build_unit(_shared_state(self.work_dir), (dupe, chunk))
    lengths = np.asarray(result.record_lengths, np.int64)
    header = np.array([lengths.size], np.int64).tobytes()
    _write_atomically(_unit_path(self.work_dir, shard, position), header, lengths.tobytes(),
                      result.records)
    counts = {key: int(getattr(result, key)) for key in pretraining_units.UNIT_COUNTS}
    yield shard, (position, counts)


class _WriteShard:
  """FlatMap function: a shard's units in ascending order into its spill file, then
  `write_shard`; the file's records, bytes, CRC-32 and the units' counts to the shard's result
  file (a shard already written is skipped: a retry)."""

  def __init__(self, work_dir: str, staged_paths: Sequence[str], random_seed: int,
               gzip_compress: bool):
    self.work_dir = work_dir
    self.staged_paths = list(staged_paths)
    self.random_seed = random_seed
    self.gzip_compress = gzip_compress

  def __call__(self, element: Tuple[int, Iterable[Tuple[int, Dict[str, int]]]]) -> Iterator[int]:
    shard, built = element
    if file_utils.exists(_shard_result_path(self.work_dir, shard)):  # a retry of a finished shard
      yield shard
      return
    built = sorted(built, key=lambda item: item[0])
    path = self.staged_paths[shard]
    spill = pretraining_units.spill_path(path, f'-{os.getpid()}')
    lengths, totals = [], collections.Counter()
    with open(spill, 'wb', buffering=1 << 20) as out:
      for position, counts in built:
        with file_utils.open_file(_unit_path(self.work_dir, shard, position), 'rb') as f:
          count = int(np.frombuffer(f.read(8), np.int64)[0])
          lengths.append(np.frombuffer(f.read(8 * count), np.int64))
          shutil.copyfileobj(f, out, 1 << 20)
        totals.update(counts)
    lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    written = pretraining_units.write_shard(path, spill, lengths, shard, self.random_seed,
                                            self.gzip_compress)
    result = json.dumps({'file': written, 'totals': dict(totals)}).encode()
    _write_atomically(_shard_result_path(self.work_dir, shard), result)
    for position, _ in built:
      file_utils.remove(_unit_path(self.work_dir, shard, position))
    yield shard
