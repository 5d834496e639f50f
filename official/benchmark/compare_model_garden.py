"""Model Garden vs mlm-garden: the same YAML config and the same TFRecords through both frameworks.

Both run `official.nlp.train --experiment=bert/pretraining --mode=train_and_eval`; then a
side-by-side table (and JSON) of median steps/s and the eval masked_lm_accuracy
(`model_garden_results`).

Model Garden (`tf-models-official`, --mg_version) lives in a throwaway venv (--mg_venv, default
/tmp/mg-venv, created when missing, reused when present; never the project's .venv) and runs from
an empty directory with PYTHONPATH unset, so our `official` package is not importable there.
mlm-garden runs with this Python. Both get: configs/pretraining/bert_mini.yaml (4 layers, 256
hidden, 4 heads, 1024 intermediate, NSP head) then one generated override YAML per run
(`model_garden_configs.write_config`: vocab size of the records, data paths, seq 128, 20
predictions, batch 32, steps, steps_per_loop = summary_interval, validation_steps, checkpoint and
validation only at the end, the learning-rate schedule over --steps with 10% warmup, one_device
strategy, runtime.mixed_precision_dtype and runtime.enable_xla). Each framework first loads the
model YAML strictly into its own config classes; a key it does not know is dropped for that
framework only (printed as `dropped: ...`) and everything else stays identical. Thread pools are
pinned identically (TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS, OMP_NUM_THREADS = --threads).

Data (made once under --data_dir, reused): a corpus from the Python documentation (Debian's
python3.11-doc, installed with apt-get when missing and running as root;
scripts/make_python_docs_corpus.py, 8 MB, ~114k training sequences at dupe_factor 5: 1000 steps
of batch 32 read 28% of them) or, without it, the standard library docstrings
(data_tools/stdlib_corpus.py, 1.5 MB: many more repeats); 95/5 document split, a 16k WordPiece
vocabulary, whole-word masking.

Variants (--variants, comma list): FRAMEWORK-DTYPE[-xla] with FRAMEWORK mg|ours, DTYPE
float32|bfloat16|float16, or `ours-best` = ours with --ours_best (default bfloat16: with the code
of 2026-11-23 XLA on CPU is slower, e.g. bfloat16+XLA 0.72x of bfloat16 in scripts/benchmark.py;
pass --ours_best=bfloat16-xla when that changes). The variants named in --full (or `all`) train
--steps steps (their eval accuracy is the comparison's accuracy); the others train --speed_steps
steps (speed only; their eval accuracy is printed with its step). Model Garden's
runtime.enable_xla only acts with num_gpus > 0 (base_trainer), so `mg-...-xla` is refused.

Speed rounds (--speed_rounds, default 1): after those runs every variant trains --speed_steps
steps again, round by round, in reverse order in odd rounds (so mg-float32 runs first and last):
on a shared machine a slow or fast stretch then falls on both frameworks instead of on whichever
ran at the time. Steps/s of a run: the median of its per-loop `steps_per_second` TensorBoard
summaries (steps_per_loop steps each), the first loop (tracing, warm-up) left out
(--speed_steps=300: 5 loops). Steps/s of a variant: the median of its runs' figures (with 2 runs,
their mean); the table lists each run's figure too. Duration with the defaults on a quiet 2-core
machine: about 40 minutes (Model Garden float32 1000 steps ~10, Model Garden bfloat16 300 steps
~3, ours float32 300 steps ~3, ours best 1000 steps ~6, setup ~1; the speed round ~13).

Output: WORK/runs/VARIANT-STEPS/ and WORK/runs/VARIANT-speedROUND/
({train.log,variant.json,model/}), WORK/settings.json, WORK/results.json, the table on stdout.
--reuse keeps a variant's finished first run (same steps) instead of training it again.

Usage (scripts/compare_model_garden.sh runs `run` with the project's Python):
  scripts/compare_model_garden.sh [--steps=1000] [--speed_steps=300] [--speed_rounds=1]
      [--variants=LIST] [--full=LIST] [--ours_best=bfloat16] [--steps_per_loop=50]
      [--validation_steps=50] [--threads=N] [--work_dir=/tmp/mg-compare] [--data_dir=WORK/data]
      [--mg_venv=/tmp/mg-venv] [--corpus=auto] [--setup_only] [--reuse]
  python scripts/compare_model_garden.py summarize RUN_DIR... --json=results.json
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

from official.benchmark import model_garden_configs
from official.benchmark import model_garden_results
from official.common import cli_utils

# The checkout: official/benchmark/ is two folders below it.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE_CONFIG = os.path.join(REPO, 'configs', 'pretraining', 'bert_mini.yaml')
PYDOCS = '/usr/share/doc/python3.11/html/_sources'
BATCH_SIZE = 32
NAME = 'compare_model_garden'


class Variant(NamedTuple):
  """One variant of --variants: its name, framework, dtype, XLA and steps of its first run."""
  name: str
  framework: str  # 'model_garden' or 'mlm_garden'
  dtype: str
  xla: bool
  steps: int


def resolve_variants(variants: str, full: str, ours_best: str, steps: int,
                     speed_steps: int) -> List[Variant]:
  """The variants of the comma list `variants` (see the module docstring).

  Args:
    variants: e.g. 'mg-float32,mg-bfloat16,ours-float32,ours-best'.
    full: the variants (or 'all') that train `steps` steps; the others train `speed_steps`.
    ours_best: what `ours-best` stands for, e.g. 'bfloat16' or 'bfloat16-xla'.
    steps: steps of the full runs.
    speed_steps: steps of the others.

  Returns:
    The variants, in order.

  Raises:
    ValueError: a name that is not FRAMEWORK-DTYPE[-xla], or a Model Garden XLA variant.

  Example:
    >>> resolve_variants('mg-float32,ours-best', 'mg-float32', 'bfloat16', 1000, 300)[1]
    Variant(name='ours-best', framework='mlm_garden', dtype='bfloat16', xla=False, steps=300)
  """
  resolved = []
  for name in variants.split(','):
    spec = f'ours-{ours_best}' if name == 'ours-best' else name
    parts = spec.split('-')
    framework = {'mg': 'model_garden', 'ours': 'mlm_garden'}.get(parts[0])
    if framework is None:
      raise ValueError(f"--variants: '{name}': framework must be mg or ours")
    dtype = parts[1] if len(parts) > 1 else ''
    if dtype not in ('float32', 'bfloat16', 'float16'):
      raise ValueError(f"--variants: '{name}': dtype must be float32, bfloat16 or float16 "
                       f"(found '{dtype}')")
    if len(parts) > 3 or (len(parts) == 3 and parts[2] != 'xla'):
      raise ValueError(f"--variants: '{name}': expected FRAMEWORK-DTYPE[-xla], found '{spec}'")
    xla = len(parts) == 3
    if framework == 'model_garden' and xla:
      raise ValueError(f"--variants: '{name}': Model Garden applies runtime.enable_xla only with "
                       'num_gpus > 0; on CPU it would run without XLA')
    in_full = full == 'all' or name in full.split(',')
    resolved.append(Variant(name, framework, dtype, xla, steps if in_full else speed_steps))
  return resolved


def schedule(variants: Sequence[Variant], speed_rounds: int, speed_steps: int,
             runs_dir: str) -> List[Any]:
  """The runs in order: each variant once, then the speed rounds (reversed in odd rounds).

  Args:
    variants: `resolve_variants`' result.
    speed_rounds: rounds of --speed_steps runs after the first ones.
    speed_steps: steps of a speed-round run.
    runs_dir: WORK/runs.

  Returns:
    `(variant, run directory, round, steps)` tuples.

  Example:
    >>> [run[1] for run in schedule(variants, 1, 300, 'runs')]  # mg-float32, ours-best
    ['runs/mg-float32-1000', 'runs/ours-best-1000', 'runs/ours-best-speed1',
     'runs/mg-float32-speed1']
  """
  runs = [(v, os.path.join(runs_dir, f'{v.name}-{v.steps}'), 0, v.steps) for v in variants]
  for round_ in range(1, speed_rounds + 1):
    order = list(reversed(variants)) if round_ % 2 else list(variants)
    runs += [(v, os.path.join(runs_dir, f'{v.name}-speed{round_}'), round_, speed_steps)
             for v in order]
  return runs


def is_finished(run_dir: str, variant: Variant) -> bool:
  """Whether `run_dir` holds a finished run of `variant`'s dtype and XLA (for --reuse).

  Args:
    run_dir: a run directory.
    variant: the variant it should hold.

  Returns:
    True when its variant.json says finished, with the same dtype and XLA.

  Example:
    >>> is_finished('/tmp/mg-compare/runs/mg-float32-1000', variant)
  """
  try:
    with open(os.path.join(run_dir, 'variant.json'), encoding='utf-8') as f:
      info = json.load(f)
  except (OSError, ValueError):
    return False
  return bool(info.get('finished')) and (info.get('dtype'), info.get('xla')) == (
      variant.dtype, variant.xla)


def _now() -> str:
  return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def _loadavg() -> str:
  try:
    with open('/proc/loadavg', encoding='utf-8') as f:
      return ' '.join(f.read().split()[:3])
  except OSError:
    return '-'


class Comparison:
  """One comparison: its flags, the two frameworks' Pythons and the shared data."""

  def __init__(self, args: argparse.Namespace):
    self.args = args
    self.work = os.path.abspath(args.work_dir)
    self.data_dir = os.path.abspath(args.data_dir or os.path.join(self.work, 'data'))
    self.mg_cwd = os.path.join(self.work, 'mg-cwd')
    for directory in (os.path.join(self.work, 'runs'), self.mg_cwd, self.data_dir):
      os.makedirs(directory, exist_ok=True)
    self.python = sys.executable  # mlm-garden's
    self.mg_venv = os.path.realpath(args.mg_venv)
    self.mg_python = os.path.join(self.mg_venv, 'bin', 'python')
    self.env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
    for name in ('TF_NUM_INTRAOP_THREADS', 'TF_NUM_INTEROP_THREADS', 'OMP_NUM_THREADS'):
      self.env[name] = str(args.threads)
    self.mg_env = {k: v for k, v in self.env.items() if k != 'PYTHONPATH'}
    self.versions = self.vocab_size = self.num_train = None
    self.bases: Dict[str, str] = {}

  def command(self, framework: str, *args: str) -> Dict[str, Any]:
    """`subprocess.run` arguments for `args` under `framework`'s Python (Model Garden's from an
    empty folder, without PYTHONPATH; ours from the checkout)."""
    if framework == 'model_garden':
      return dict(args=[self.mg_python, *args], cwd=self.mg_cwd, env=self.mg_env)
    return dict(args=[self.python, *args], cwd=REPO, env=self.env)

  def check_command(self, framework: str, *args: str) -> Dict[str, Any]:
    """`command` for `model_garden_configs check-config ARGS` under `framework`'s Python (Model
    Garden's runs the file by path with -I: the checkout is not on its path)."""
    check = (['-I', model_garden_configs.__file__] if framework == 'model_garden'
             else ['-m', 'official.benchmark.model_garden_configs'])
    return self.command(framework, *check, 'check-config', *args)

  def setup_model_garden(self) -> None:
    """Creates the throwaway venv with tf-models-official when it cannot import Model Garden."""
    if self.mg_venv == os.path.realpath(os.path.join(REPO, '.venv')):
      raise SystemExit(f"{NAME}: error: --mg_venv must not be the project's .venv")
    probe = self.command('model_garden', '-c', 'import official, os; '
                         'print(os.path.dirname(official.__file__)); import official.nlp.train')
    found = (subprocess.run(**probe, capture_output=True, text=True, check=False)
             if os.access(self.mg_python, os.X_OK) else None)
    if not found or found.returncode:
      print(f'== installing tf-models-official=={self.args.mg_version} into {self.mg_venv} '
            '(a few minutes)', flush=True)
      subprocess.run(['python3', '-m', 'venv', self.mg_venv], check=True)
      for pip_args in (['--upgrade', 'pip'], [f'tf-models-official=={self.args.mg_version}']):
        subprocess.run([self.mg_python, '-m', 'pip', 'install', '--quiet', *pip_args], check=True)
      found = subprocess.run(**probe, capture_output=True, text=True, check=False)
    official_dir = (found.stdout.strip().splitlines() or [''])[0]
    if not official_dir.startswith(self.mg_venv + os.sep):
      raise SystemExit(f"{NAME}: error: Model Garden's python imports 'official' from "
                       f'{official_dir or "nowhere"}, not from {self.mg_venv}')
    code = ('import sys, importlib.metadata as m; '
            'print(*(f"{p} {m.version(p)}" for p in sys.argv[1:]))')
    versions = [subprocess.run(**self.command(framework, '-c', code, *packages),
                               capture_output=True, text=True, check=True).stdout.strip()
                for framework, packages in (('model_garden', ('tf-models-official', 'tensorflow',
                                                              'tf-keras')),
                                            ('mlm_garden', ('tensorflow', 'tf-keras')))]
    self.versions = f'{versions[0]}; mlm-garden: {versions[1]}'
    print(f'== Model Garden: {self.versions}', flush=True)

  def make_data(self) -> None:
    """The shared corpus, vocabulary and TFRecords under --data_dir (made once, then reused)."""
    data = self.data_dir
    vocab = os.path.join(data, 'vocab', 'vocab.txt')
    if not all(os.path.isfile(p) and os.path.getsize(p)
               for p in (os.path.join(data, 'train.tfrecord'),
                         os.path.join(data, 'eval.tfrecord'), vocab)):
      corpus = os.path.join(data, 'corpus.txt')
      if (self.args.corpus != 'stdlib' and not os.path.isdir(PYDOCS) and os.geteuid() == 0
          and shutil.which('apt-get')):
        print('== installing python3.11-doc (the corpus)', flush=True)
        install = 'apt-get install -y -qq python3.11-doc'
        if subprocess.run(f'{install} || (apt-get update -qq && {install})', shell=True,
                          capture_output=True, check=False).returncode:
          print('   (apt-get failed; falling back to the standard library corpus)')
      if self.args.corpus == 'pydocs' or (self.args.corpus == 'auto' and os.path.isdir(PYDOCS)):
        make = [os.path.join(REPO, 'scripts', 'make_python_docs_corpus.py')]
        dupe = 5
      else:
        make, dupe = ['-m', 'data_tools.stdlib_corpus'], 10
      self.run_ours(*make, f'--output_file={corpus}')
      split_corpus(corpus, data)
      self.run_ours('-m', 'data_tools.build_vocab', f'--input_file={data}/train.txt',
                    f'--output_dir={data}/vocab', '--vocab_size=16000')
      for split in ('train', 'eval'):
        output = self.run_ours(
            '-m', 'data_tools.create_pretraining_data', f'--input_file={data}/{split}.txt',
            f'--output_file={data}/{split}.tfrecord', f'--vocab_file={vocab}',
            '--do_whole_word_mask', '--max_seq_length=128', '--max_predictions_per_seq=20',
            f'--dupe_factor={dupe if split == "train" else 3}', '--random_seed=12345',
            capture=True)
        print('\n'.join(output.splitlines()[-2:]), flush=True)
    with open(vocab, encoding='utf-8') as f:
      self.vocab_size = sum(1 for _ in f)
    try:
      with open(os.path.join(data, 'train.metadata.json'), encoding='utf-8') as f:
        self.num_train = json.load(f)['num_instances']
    except (OSError, ValueError, KeyError):
      self.num_train = '?'
    steps = self.args.steps
    print(f'== data: {data} (vocab {self.vocab_size}, {self.num_train} training sequences; '
          f'{steps} steps x {BATCH_SIZE} = {steps * BATCH_SIZE})', flush=True)

  def run_ours(self, *args: str, capture: bool = False) -> str:
    """Runs `args` with our Python in the checkout; exits naming the command when it fails."""
    result = subprocess.run(**self.command('mlm_garden', *args), check=False, text=True,
                            stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.STDOUT if capture else None)
    if result.returncode:
      raise SystemExit(f'{NAME}: error: {" ".join(args)} failed (exit {result.returncode})'
                       + (f':\n{result.stdout[-2000:]}' if capture else ''))
    return result.stdout or ''

  def write_run_config(self, out: str, train_steps: int, dtype: str, xla: bool) -> None:
    """A run's override YAML (`model_garden_configs.write_config`) with the comparison's data."""
    model_garden_configs.write_config(
        out, os.path.join(self.data_dir, 'train.tfrecord'),
        os.path.join(self.data_dir, 'eval.tfrecord'), self.vocab_size, train_steps,
        self.args.steps, steps_per_loop=self.args.steps_per_loop,
        validation_steps=self.args.validation_steps, precision=dtype, xla=xla)

  def check_configs(self) -> None:
    """Each framework's base YAML: BASE_CONFIG without the keys it does not know."""
    override = os.path.join(self.work, 'check_override.yaml')
    self.write_run_config(override, self.args.steps, 'float32', False)
    for framework in ('model_garden', 'mlm_garden'):
      log = os.path.join(self.work, f'check_config_{framework}.log')
      with open(log, 'w', encoding='utf-8') as stderr:
        result = subprocess.run(
            **self.check_command(framework, BASE_CONFIG, override,
                           os.path.join(self.work, f'base_{framework}.yaml')),
            stdout=subprocess.PIPE, stderr=stderr, text=True, check=False)
      with open(log, encoding='utf-8') as f:
        lines = f.read().splitlines()
      if result.returncode:
        print('\n'.join(lines[-5:]), file=sys.stderr)
        raise SystemExit(f'{NAME}: error: {framework} cannot load {BASE_CONFIG} with the run '
                         f'overrides (see {log})')
      for line in lines:
        if line.startswith('dropped'):
          print(line, file=sys.stderr)
      self.bases[framework] = result.stdout.strip().splitlines()[-1]
    print(f"== config: Model Garden uses {self.bases['model_garden']}, mlm-garden uses "
          f"{self.bases['mlm_garden']}", flush=True)

  def run_variant(self, variant: Variant, run_dir: str, round_: int, steps: int) -> None:
    """Trains one run into `run_dir` (train.log, model/) and writes its variant.json."""
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    self.write_run_config(os.path.join(run_dir, 'run.yaml'), steps, variant.dtype, variant.xla)
    load_before, start, started = _loadavg(), _now(), time.time()
    log = os.path.join(run_dir, 'train.log')
    print(f'== {variant.name}: {variant.framework} {variant.dtype} '
          f'xla={str(variant.xla).lower()}, {steps} steps, round {round_} ({start}, load '
          f'{load_before}) -> {log}', flush=True)
    with open(log, 'w', encoding='utf-8') as f:
      status = subprocess.run(**self.command(
          variant.framework, '-m', 'official.nlp.train', '--experiment=bert/pretraining',
          '--mode=train_and_eval', f'--model_dir={run_dir}/model',
          f'--config_file={self.bases[variant.framework]}', f'--config_file={run_dir}/run.yaml'),
                              stdout=f, stderr=subprocess.STDOUT, check=False).returncode
    if status:
      with open(log, encoding='utf-8', errors='replace') as f:
        tail = f.read().splitlines()[-5:]
      print(f'   FAILED (exit {status}); the end of {log}:\n' + '\n'.join(tail), flush=True)
    info = {'variant': variant.name, 'framework': variant.framework, 'dtype': variant.dtype,
            'xla': variant.xla, 'train_steps': steps, 'round': round_,
            'steps_per_loop': self.args.steps_per_loop,
            'validation_steps': self.args.validation_steps, 'batch_size': BATCH_SIZE,
            'threads': self.args.threads, 'start': start,
            'wall_seconds': round(time.time() - started), 'loadavg_before': load_before,
            'loadavg_after': _loadavg(), 'exit_status': status, 'finished': status == 0,
            'versions': self.versions}
    with open(os.path.join(run_dir, 'variant.json'), 'w', encoding='utf-8') as f:
      json.dump(info, f)

  def settings(self) -> Dict[str, Any]:
    """The comparison's settings, for WORK/settings.json and the report."""
    a = self.args
    return {'date': _now(), 'steps': a.steps, 'speed_steps': a.speed_steps,
            'speed_rounds': a.speed_rounds, 'variants': a.variants, 'full': a.full,
            'ours_best': a.ours_best, 'steps_per_loop': a.steps_per_loop,
            'validation_steps': a.validation_steps, 'batch_size': BATCH_SIZE, 'seq_length': 128,
            'max_predictions_per_seq': 20, 'threads': a.threads, 'cores': _cores(),
            'base_config': BASE_CONFIG, 'config_model_garden': self.bases.get('model_garden'),
            'config_mlm_garden': self.bases.get('mlm_garden'), 'data_dir': self.data_dir,
            'vocab_size': self.vocab_size, 'train_sequences': str(self.num_train),
            'versions': self.versions}

  def run(self, variants: Sequence[Variant]) -> int:
    """Setup, the runs, then the table; returns 1 when a run failed, else 0."""
    self.setup_model_garden()
    self.make_data()
    self.check_configs()
    if self.args.setup_only:
      print('== setup done')
      return 0
    runs = schedule(variants, self.args.speed_rounds, self.args.speed_steps,
                    os.path.join(self.work, 'runs'))
    for variant, run_dir, round_, steps in runs:
      if round_ == 0 and self.args.reuse and is_finished(run_dir, variant):
        print(f'== {variant.name}: reusing {run_dir}', flush=True)
        continue
      self.run_variant(variant, run_dir, round_, steps)
    settings = os.path.join(self.work, 'settings.json')
    with open(settings, 'w', encoding='utf-8') as f:
      json.dump(self.settings(), f, indent=1)
    print(f'\n== results ({_now()}, load {_loadavg()}, {self.args.threads} threads, {_cores()} '
          'cores)', flush=True)
    model_garden_results.summarize([run[1] for run in runs],
                                   os.path.join(self.work, 'results.json'), settings)
    failed = [run_dir for variant, run_dir, _, _ in runs if not is_finished(run_dir, variant)]
    if failed:
      print(f'{NAME}: error: failed runs: {" ".join(failed)}', file=sys.stderr)
      return 1
    return 0


def _cores() -> int:
  return len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()


def split_corpus(corpus: str, out_dir: str) -> None:
  """Documents (blank-line separated) -> out_dir/train.txt (19 of 20) and out_dir/eval.txt (every
  20th document).

  Args:
    corpus: the corpus text file.
    out_dir: where train.txt and eval.txt go.

  Example:
    >>> split_corpus('/tmp/mg-compare/data/corpus.txt', '/tmp/mg-compare/data')
  """
  with open(corpus, encoding='utf-8') as f:
    docs = [d.strip('\n') for d in f.read().split('\n\n') if d.strip()]
  os.makedirs(out_dir, exist_ok=True)
  for name, keep in (('train', lambda i: i % 20 != 0), ('eval', lambda i: i % 20 == 0)):
    with open(os.path.join(out_dir, f'{name}.txt'), 'w', encoding='utf-8') as f:
      f.write('\n\n'.join(d for i, d in enumerate(docs) if keep(i)) + '\n')
  print(f'{corpus}: {len(docs)} documents -> {len(docs) - (len(docs) + 19) // 20} train, '
        f'{(len(docs) + 19) // 20} eval')


def _positive(text: str) -> int:
  value = int(text)
  if value < 1:
    raise argparse.ArgumentTypeError(f'expected a positive integer, found {text!r}')
  return value


def _at_least_zero(text: str) -> int:
  value = int(text)
  if value < 0:
    raise argparse.ArgumentTypeError(f'expected an integer >= 0, found {text!r}')
  return value


def _add_run_flags(p: argparse.ArgumentParser) -> None:
  p.add_argument('--steps', type=_positive, default=1000, help='steps of the --full variants')
  p.add_argument('--speed_steps', type=_positive, default=300,
                 help='steps of the other variants and of every speed-round run')
  p.add_argument('--speed_rounds', type=_at_least_zero, default=1)
  p.add_argument('--variants', default='mg-float32,mg-bfloat16,ours-float32,ours-best')
  p.add_argument('--full', default='mg-float32,ours-best')
  p.add_argument('--ours_best', default='bfloat16')
  p.add_argument('--steps_per_loop', type=_positive, default=50)
  p.add_argument('--validation_steps', type=_positive, default=50)
  p.add_argument('--threads', type=_positive, default=_cores())
  p.add_argument('--work_dir', default='/tmp/mg-compare')
  p.add_argument('--data_dir', default='', help='default: WORK/data')
  p.add_argument('--mg_venv', default='/tmp/mg-venv')
  p.add_argument('--mg_version', default=os.environ.get('MG_VERSION', '2.20.0'))
  p.add_argument('--corpus', choices=('auto', 'pydocs', 'stdlib'), default='auto')
  p.add_argument('--setup_only', action='store_true')
  p.add_argument('--reuse', action='store_true')


# Old flag names -> the names shared by the tools (`official.common.cli_utils.renamed_flags`).
RENAMED_FLAGS = {'dtype': 'precision'}


def main(argv: Optional[List[str]] = None) -> int:
  """The comparison's command line: `run` (the whole comparison) and its steps.

  Args:
    argv: the arguments (default: `sys.argv[1:]`): `run [flags]`, `split CORPUS OUT_DIR`,
      `write-config ...`, `check-config BASE OVERRIDE OUT` or `summarize RUN_DIR... --json F`.

  Returns:
    The exit status: 1 when a run failed (bad flags exit 2).

  Example:
    >>> main(['run', '--work_dir=/tmp/mg-compare', '--steps=600'])
  """
  argv = cli_utils.renamed_flags(list(sys.argv[1:] if argv is None else argv), RENAMED_FLAGS,
                                 NAME)
  parser = argparse.ArgumentParser(prog=NAME, description=__doc__.split('\n')[0])
  sub = parser.add_subparsers(dest='command', required=True)
  run = sub.add_parser('run', help='the whole comparison', description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
  _add_run_flags(run)
  p = sub.add_parser('split', help='a corpus -> train.txt and eval.txt (`split_corpus`)')
  p.add_argument('corpus')
  p.add_argument('out_dir')
  model_garden_configs.add_subcommands(sub)
  p = sub.add_parser('summarize', help='the table and JSON of run directories')
  p.add_argument('run_dirs', nargs='+')
  p.add_argument('--json', required=True)
  p.add_argument('--settings',
                 help='a JSON file of the comparison settings, copied into the report')
  args = parser.parse_args(argv)
  if args.command == 'run':
    try:
      variants = resolve_variants(args.variants, args.full, args.ours_best, args.steps,
                                  args.speed_steps)
    except ValueError as error:
      run.error(str(error))
    return Comparison(args).run(variants)
  if args.command == 'split':
    split_corpus(args.corpus, args.out_dir)
  elif args.command == 'summarize':
    for run_dir in args.run_dirs:
      if not os.path.exists(os.path.join(run_dir, 'variant.json')):
        parser.error(f'summarize: {run_dir}: no variant.json; expected a run directory written by '
                     'scripts/compare_model_garden.sh')
    model_garden_results.summarize(args.run_dirs, args.json, args.settings)
  else:
    model_garden_configs.run_subcommand(args)
  return 0


if __name__ == '__main__':
  sys.exit(main())
