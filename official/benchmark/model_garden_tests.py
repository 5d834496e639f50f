"""Runs Model Garden's own unit tests against this checkout and prints pass counts per file.

Model Garden (`tf-models-official`) ships its unit tests inside its wheel. This module downloads
that wheel once into a cache (`--cache_dir`, never installed), copies the chosen test files into a
temporary folder (flat names, so nothing there shadows our `official` package) and runs each file
with pytest, with `PYTHONPATH` at this checkout. Not part of `make test`: it needs the network once
and takes several minutes. `scripts/run_model_garden_tests.py` is its command line.

`--peer` runs the same files against Model Garden itself instead (the unpacked wheel on
`PYTHONPATH`, with a Python that has Model Garden's dependencies, e.g. the throwaway venv of
`scripts/compare_model_garden.sh`), which gives the reference counts. This module imports only the
standard library, so that Python can run it.

Example:
    python scripts/run_model_garden_tests.py --set=core
    python scripts/run_model_garden_tests.py --set=wide --files=official/core/registry_test.py
    /tmp/mg-venv/bin/python scripts/run_model_garden_tests.py --peer --set=all
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
import zipfile

MG_VERSION = '2.20.0'
# The checkout: official/benchmark/ is two folders below it.
REPO = pathlib.Path(__file__).resolve().parents[2]
# Passed counts of Model Garden itself on these files (`--peer --save_counts=...`), the reference of
# the ratios.
PEER_COUNTS = REPO / 'scripts' / 'model_garden_test_counts.json'

# The eight files of issue 13's first acceptance point.
CORE_FILES = (
    'official/nlp/modeling/layers/masked_lm_test.py',
    'official/nlp/modeling/models/bert_pretrainer_test.py',
    'official/nlp/modeling/networks/bert_encoder_test.py',
    'official/nlp/tasks/masked_lm_test.py',
    'official/nlp/data/pretrain_dataloader_test.py',
    'official/nlp/data/create_pretraining_data_test.py',
    'official/modeling/hyperparams/base_config_test.py',
    'official/modeling/optimization/optimizer_factory_test.py',
)

# Model Garden's tests of the other modules we ship (layers, networks, models, configs, data
# loaders, tasks, hyperparams, optimization, tf_utils, activations, core, orbit).
WIDE_FILES = (
    'official/common/distribute_utils_test.py',
    'official/core/registry_test.py',
    'official/core/train_utils_test.py',
    'official/core/train_lib_test.py',
    'official/core/actions_test.py',
    'official/modeling/activations/gelu_test.py',
    'official/modeling/hyperparams/oneof_test.py',
    'official/modeling/hyperparams/params_dict_test.py',
    'official/modeling/optimization/configs/optimization_config_test.py',
    'official/modeling/optimization/lamb_test.py',
    'official/modeling/optimization/lr_schedule_test.py',
    'official/modeling/tf_utils_test.py',
    'official/nlp/configs/encoders_test.py',
    'official/nlp/data/pretrain_dynamic_dataloader_test.py',
    'official/nlp/data/sentence_prediction_dataloader_test.py',
    'official/nlp/data/tagging_dataloader_test.py',
    'official/nlp/modeling/layers/cls_head_test.py',
    'official/nlp/modeling/layers/masked_softmax_test.py',
    'official/nlp/modeling/layers/on_device_embedding_test.py',
    'official/nlp/modeling/layers/position_embedding_test.py',
    'official/nlp/modeling/layers/transformer_encoder_block_test.py',
    'official/nlp/modeling/models/bert_classifier_test.py',
    'official/nlp/modeling/models/bert_token_classifier_test.py',
    'official/nlp/serving/export_savedmodel_test.py',
    'official/nlp/tasks/sentence_prediction_test.py',
    'official/nlp/tasks/tagging_test.py',
    'orbit/controller_test.py',
    'orbit/standard_runner_test.py',
    'orbit/actions/conditional_action_test.py',
    'orbit/actions/export_saved_model_test.py',
    'orbit/actions/new_best_metric_test.py',
    'orbit/utils/common_test.py',
)

# Issue 21: the rest of Model Garden's modules a BERT-family user touches (encoders, their
# pretraining with MLM, NSP/SOP and ELECTRA, their fine-tuning incl. dual encoders, the text layers,
# core, orbit, utils). The README's compatibility section lists what is out of scope (XLNet,
# T5/seq2seq, other encoder types we refuse, TF Hub, ...).
SCOPE_FILES = (
    'official/nlp/modeling/layers/attention_test.py',
    'official/nlp/modeling/layers/factorized_embedding_test.py',
    'official/nlp/modeling/layers/gated_feedforward_test.py',
    'official/nlp/modeling/layers/gaussian_process_test.py',
    'official/nlp/modeling/layers/mat_mul_with_margin_test.py',
    'official/nlp/modeling/layers/pack_optimization_test.py',
    'official/nlp/modeling/layers/rezero_transformer_test.py',
    'official/nlp/modeling/layers/spectral_normalization_test.py',
    'official/nlp/modeling/layers/talking_heads_attention_test.py',
    'official/nlp/modeling/layers/text_layers_test.py',
    'official/nlp/modeling/layers/transformer_scaffold_test.py',
    'official/nlp/modeling/layers/transformer_test.py',
    'official/nlp/modeling/losses/weighted_sparse_categorical_crossentropy_test.py',
    'official/nlp/modeling/networks/albert_encoder_test.py',
    'official/nlp/modeling/networks/bert_dense_encoder_test.py',
    'official/nlp/modeling/networks/classification_test.py',
    'official/nlp/modeling/networks/encoder_scaffold_test.py',
    'official/nlp/modeling/networks/packed_sequence_embedding_test.py',
    'official/nlp/modeling/networks/span_labeling_test.py',
    'official/nlp/modeling/models/bert_span_labeler_test.py',
    'official/nlp/modeling/models/dual_encoder_test.py',
    'official/nlp/modeling/models/electra_pretrainer_test.py',
    'official/nlp/modeling/ops/segment_extractor_test.py',
    'official/nlp/data/classifier_data_lib_test.py',
    'official/nlp/data/data_loader_factory_test.py',
    'official/nlp/data/dual_encoder_dataloader_test.py',
    'official/nlp/data/question_answering_dataloader_test.py',
    'official/nlp/data/tagging_data_lib_test.py',
    'official/nlp/tasks/dual_encoder_test.py',
    'official/nlp/tasks/electra_task_test.py',
    'official/nlp/tasks/masked_lm_determinism_test.py',
    'official/nlp/tasks/question_answering_test.py',
    'official/nlp/tools/tokenization_test.py',
    'official/nlp/serving/serving_modules_test.py',
    'official/nlp/continuous_finetune_lib_test.py',
    'official/core/base_trainer_test.py',
    'official/core/export_base_test.py',
    'official/core/file_writers_test.py',
    'official/core/savedmodel_checkpoint_manager_test.py',
    'official/core/tf_example_builder_test.py',
    'official/core/tf_example_feature_key_test.py',
    'official/modeling/activations/mish_test.py',
    'official/modeling/activations/relu_test.py',
    'official/modeling/activations/sigmoid_test.py',
    'official/modeling/activations/swish_test.py',
    'official/modeling/grad_utils_test.py',
    'official/utils/flags/flags_test.py',
    'official/utils/misc/model_helpers_test.py',
    'orbit/examples/single_task/single_task_evaluator_test.py',
    'orbit/examples/single_task/single_task_trainer_test.py',
    'orbit/utils/tpu_summaries_test.py',
    'tensorflow_models/tensorflow_models_test.py',
)

# Runs pytest with sys.argv emptied: some of Model Garden's tests parse absl flags from sys.argv,
# where pytest's own options would be unknown flags.
_PYTEST_WITH_CLEAN_ARGV = ('import sys, pytest; args = sys.argv[1:]; del sys.argv[1:]; '
                           'sys.exit(pytest.main(args))')

# absltest.main parses absl flags before Model Garden's tests run (tf.test.TestCase.get_temp_dir
# reads --test_tmpdir); under pytest nobody does, so each test folder gets this conftest.
_CONFTEST = '''from absl import flags


def pytest_configure(config):
  if not flags.FLAGS.is_parsed():
    flags.FLAGS.mark_as_parsed()
'''

SETS = {'core': CORE_FILES, 'wide': WIDE_FILES, 'scope': SCOPE_FILES,
        'all': CORE_FILES + WIDE_FILES + SCOPE_FILES}


@dataclasses.dataclass
class FileResult:
  """Pytest's counts for one test file."""
  path: str
  passed: int = 0
  failed: int = 0
  errors: int = 0
  skipped: int = 0
  seconds: float = 0.0
  note: str = ''

  @property
  def total(self) -> int:
    """The tests that ran: passed, failed and errors (not skipped)."""
    return self.passed + self.failed + self.errors


def fetch_wheel(cache_dir: pathlib.Path, python: str) -> pathlib.Path:
  """The folder holding Model Garden's unpacked wheel, downloaded with pip on first use.

  Args:
    cache_dir: where the wheel is downloaded and unpacked (reused by later runs).
    python: the Python whose pip downloads it.

  Returns:
    `cache_dir/tf-models-official-MG_VERSION`, holding `official/`, `orbit/`, ...

  Example:
    >>> fetch_wheel(pathlib.Path('~/.cache/mlm-garden/model-garden').expanduser(), sys.executable)
  """
  unpacked = cache_dir / f'tf-models-official-{MG_VERSION}'
  if (unpacked / 'official').is_dir():
    return unpacked
  cache_dir.mkdir(parents=True, exist_ok=True)
  wheels = list(cache_dir.glob(f'tf_models_official-{MG_VERSION}-*.whl'))
  if not wheels:
    print(f'Downloading tf-models-official=={MG_VERSION} (wheel only, not installed) to '
          f'{cache_dir}')
    subprocess.run([python, '-m', 'pip', 'download', '--quiet', '--no-deps', '-d', str(cache_dir),
                    f'tf-models-official=={MG_VERSION}'], check=True)
    wheels = list(cache_dir.glob(f'tf_models_official-{MG_VERSION}-*.whl'))
  if not wheels:
    sys.exit(f'error: no tf_models_official-{MG_VERSION} wheel in {cache_dir} after pip download')
  partial = cache_dir / f'{unpacked.name}.partial-{os.getpid()}'
  shutil.rmtree(partial, ignore_errors=True)
  with zipfile.ZipFile(wheels[0]) as wheel:
    wheel.extractall(partial)
  try:
    partial.rename(unpacked)
  except OSError:  # Another run unpacked it first.
    shutil.rmtree(partial, ignore_errors=True)
  return unpacked


def run_file(source: pathlib.Path, rel: str, work: pathlib.Path, env: dict[str, str], python: str,
             timeout: float) -> FileResult:
  """Copies one test file into its own folder under `work` and runs it with pytest.

  Args:
    source: the unpacked wheel (`fetch_wheel`).
    rel: the test file's path inside it, e.g. 'official/core/registry_test.py'.
    work: the folder that gets one sub-folder per file (the copy, a conftest, pytest's output).
    env: the child's environment (`PYTHONPATH` names the package under test).
    python: the Python that runs pytest.
    timeout: seconds before the file counts as timed out.

  Returns:
    The file's counts; a file that collects nothing counts as one error.

  Example:
    >>> run_file(wheel, 'official/core/registry_test.py', work, env, sys.executable, 900).passed
  """
  flat = rel.replace('/', '__')
  folder = work / flat[:-3]
  folder.mkdir()
  shutil.copy(source / rel, folder / flat)
  (folder / 'conftest.py').write_text(_CONFTEST)
  report = folder / 'report.xml'
  started = time.time()
  result = FileResult(rel)
  try:
    proc = subprocess.run(
        [python, '-c', _PYTEST_WITH_CLEAN_ARGV, '-q', '-p', 'no:cacheprovider', '-o', 'addopts=',
         '--rootdir', str(folder), f'--junitxml={report}', flat],
        cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / 'output.txt').write_text(proc.stdout + proc.stderr)
  except subprocess.TimeoutExpired:
    result.note = f'timed out after {timeout:.0f} s'
  result.seconds = time.time() - started
  if report.exists():
    suites = ElementTree.parse(report).getroot()
    for case in suites.iter('testcase'):
      kinds = {child.tag for child in case}
      if 'skipped' in kinds:
        result.skipped += 1
      elif 'error' in kinds:
        result.errors += 1
      elif 'failure' in kinds:
        result.failed += 1
      else:
        result.passed += 1
    if not result.total and not result.skipped:
      result.note = result.note or 'collected nothing (import error?)'
      result.errors = 1
  elif not result.note:
    result.note = 'no report (pytest crashed)'
  return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
  """The command line's flags; a bad value exits 2 naming the flag.

  Args:
    argv: the arguments (default: `sys.argv[1:]`).

  Returns:
    The parsed flags.

  Example:
    >>> parse_args(['--set=core', '--jobs=1']).set
    'core'
  """
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--set', choices=sorted(SETS), default='all',
                      help='which group of test files to run')
  parser.add_argument('--files', default='',
                      help='comma-separated paths inside the wheel (overrides --set)')
  parser.add_argument('--peer', action='store_true', help="run against Model Garden's own package")
  parser.add_argument('--cache_dir', default=os.path.expanduser('~/.cache/mlm-garden/model-garden'),
                      help='where the wheel is downloaded and unpacked')
  parser.add_argument('--keep', default='',
                      help='keep the temporary folder (pytest output per file) here')
  parser.add_argument('--jobs', type=int, default=2, help='test files run at once')
  parser.add_argument('--timeout', type=float, default=900, help='seconds per test file')
  parser.add_argument('--save_counts', default='',
                      help='write the per-file counts to this JSON file')
  parser.add_argument('--peer_counts', default=str(PEER_COUNTS),
                      help="JSON of Model Garden's own per-file counts (from --peer "
                      '--save_counts), for the ratios')
  args = parser.parse_args(argv)
  if args.jobs < 1:
    parser.error(f'--jobs must be >= 1, got {args.jobs}')
  return args


def main(argv: list[str] | None = None) -> int:
  """Runs the chosen test files (see the module docstring) and prints the table.

  Args:
    argv: the command line's arguments (default: `sys.argv[1:]`), see `parse_args`.

  Returns:
    The exit status (0); an unknown file or a failed download exits with a message.

  Example:
    >>> main(['--set=core'])  # downloads the wheel on first use, then ~5 minutes
  """
  args = parse_args(argv)
  python = sys.executable
  wheel_dir = fetch_wheel(pathlib.Path(args.cache_dir), python)
  files = tuple(f for f in args.files.split(',') if f) or SETS[args.set]
  missing = [f for f in files if not (wheel_dir / f).is_file()]
  if missing:
    sys.exit(f'error: --files: not in tf-models-official {MG_VERSION}: {", ".join(missing)}')

  env = dict(os.environ)
  env['PYTHONPATH'] = str(wheel_dir if args.peer else REPO)
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  env.setdefault('CUDA_VISIBLE_DEVICES', '')
  work = (pathlib.Path(args.keep) if args.keep
          else pathlib.Path(tempfile.mkdtemp(prefix='mg-tests-')))
  if args.keep:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
  against = (f'Model Garden {MG_VERSION} ({wheel_dir})' if args.peer
             else f'this checkout ({REPO})')
  print(f'Running {len(files)} Model Garden test files against {against}')
  with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
    results = list(pool.map(lambda f: run_file(wheel_dir, f, work, env, python, args.timeout),
                            files))
  if not args.keep:
    shutil.rmtree(work, ignore_errors=True)

  if args.save_counts:
    pathlib.Path(args.save_counts).write_text(json.dumps(
        {'model_garden_version': MG_VERSION, 'peer': args.peer,
         'files': {r.path: dataclasses.asdict(r) for r in results}}, indent=1) + '\n')
  peer = load_peer_counts(args.peer_counts) if not args.peer else {}
  print(format_table(results, peer, SETS))
  return 0


def load_peer_counts(path: str) -> dict[str, int]:
  """{file: passed} of a `--save_counts` JSON.

  Args:
    path: the JSON file; empty or missing gives {}.

  Returns:
    Model Garden's passed count per test file.

  Example:
    >>> load_peer_counts(str(PEER_COUNTS))['official/core/registry_test.py']
  """
  if not path or not os.path.isfile(path):
    return {}
  try:
    return {name: counts['passed']
            for name, counts in json.loads(pathlib.Path(path).read_text())['files'].items()}
  except (ValueError, KeyError, TypeError) as error:
    sys.exit(f'error: --peer_counts {path}: expected the JSON written by --save_counts '
             f'({error!r})')


def format_table(results: list[FileResult], peer: dict[str, int],
                 groups: dict[str, tuple[str, ...]]) -> str:
  """The per-file table, then totals per group of files (a group only when all its files ran).

  Args:
    results: the files' counts, in the table's order.
    peer: Model Garden's own passed count per file ({}: no such column or share).
    groups: group name -> its files (`SETS`); 'run' (the files run) is always added.

  Returns:
    The table's lines; the totals include the share of the peer's passes when known.

  Example:
    >>> print(format_table([FileResult('a_test.py', passed=3)], {'a_test.py': 4}, {}))
  """
  width = max(len(r.path) for r in results)
  with_peer = bool(peer)
  lines = [f'{"file":<{width}}  passed  failed  errors  skipped  seconds'
           + ('  peer passed' if with_peer else '')]
  for r in results:
    line = (f'{r.path:<{width}}  {r.passed:6d}  {r.failed:6d}  {r.errors:6d}  {r.skipped:7d}  '
            f'{r.seconds:7.0f}')
    if with_peer:
      line += f'  {peer.get(r.path, 0):11d}'
    lines.append(line + (f'  {r.note}' if r.note else ''))
  by_path = {r.path: r for r in results}
  for name, files in list(groups.items()) + [('run', tuple(by_path))]:
    chosen = [by_path[f] for f in files if f in by_path]
    if (not chosen or (name != 'run' and len(chosen) != len(files)) or
        (name == 'all' and len(groups) > 1)):
      continue
    passed = sum(r.passed for r in chosen)
    total = sum(r.total for r in chosen)
    line = (f'TOTAL {name} ({len(chosen)} files): passed {passed} of {total}, '
            f'skipped {sum(r.skipped for r in chosen)}')
    if with_peer:
      reference = sum(peer.get(r.path, 0) for r in chosen)
      line += (f'; Model Garden itself passes {reference}: '
               f'{100 * passed / max(reference, 1):.1f}% of it')
    lines.append(line)
  return '\n'.join(lines)


if __name__ == '__main__':
  sys.exit(main())
