"""The plan of runs (what a rerun skips) and each run's config overrides and commands."""

import dataclasses
import itertools
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from official.common import file_utils
from official.utils.misc import cpu_info
from official.projects.recipe_comparison import corpus_data
from official.projects.recipe_comparison import grid


@dataclasses.dataclass
class RunPlan:
  """What a run still needs: `stages` of ('train', 'evaluate'); () when finished."""
  run: grid.Run
  stages: Tuple[str, ...]


def plan_runs(work_dir: str, cells: Sequence[grid.Cell], learning_rates: Sequence[float],
              seeds: int = 1,
              variants: Sequence[Optional[grid.OptimizerVariant]] = (None,)) -> List[RunPlan]:
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
      run = grid.Run(cell, rate, seed, variant)
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




def write_yaml(data: dict, path: str) -> str:
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


def architecture_yaml(arch: str) -> dict:
  """The architecture's YAML (`ARCHITECTURES`), parsed afresh (the caller may change it)."""
  import yaml  # Function-level: as above.
  with open(os.path.join(grid.REPO, grid.ARCHITECTURES[arch])) as f:
    return yaml.safe_load(f)


def _yaml_model(cell: grid.Cell) -> dict:
  """`task.model` of the cell's architecture YAML."""
  return architecture_yaml(cell.arch)['task']['model']


def encoder_config(cell: grid.Cell, vocab: str) -> dict:
  """The cell's encoder block: its architecture's YAML, our vocabulary, BERT packed if needed,
  and an architecture of `grid.ENCODER_SWITCHES` as the ablation family with its switches.

  Example:
    >>> encoder_config(Cell('rotary', 'bert'), 'vocab.txt')['ablation']['positions']
    'rotary'
  """
  encoder = architecture_yaml(cell.arch)['task']['model']['encoder']
  encoder[encoder['type']]['vocab_size'] = _vocab_size(vocab)
  if cell.arch in grid.BERT_FAMILY and grid.DATA_RECIPES[cell.data].packed:
    encoder['bert']['packed_documents'] = True
  if cell.arch in grid.ENCODER_SWITCHES:
    encoder = ablation_encoder_block(encoder['bert'], grid.ENCODER_SWITCHES[cell.arch])
  return encoder


def ablation_encoder_block(bert_fields: Mapping[str, Any],
                           switches: Optional[Mapping[str, Any]] = None) -> dict:
  """An encoder block of the `ablation_encoder` family: BERT's encoder fields and `switches`.

  Example:
    >>> ablation_encoder_block({'num_layers': 4}, {'positions': 'rotary'})
    {'type': 'ablation', 'ablation': {'num_layers': 4, 'positions': 'rotary'}}
  """
  return {'type': 'ablation', 'ablation': {**bert_fields, **(switches or {})}}


def run_overrides(cell: grid.Cell, data: Mapping[str, Any], steps: int, evals: int,
                  learning_rate: float, batch_size: int, warmup_fraction: float = 0.1,
                  dtype: str = 'float32', budget_minutes: float = 0.0, seed: Optional[int] = None,
                  variant: Optional[grid.OptimizerVariant] = None) -> dict:
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
  recipe = grid.DATA_RECIPES[cell.data]
  interval = max(steps // evals, 1)
  steps = interval * evals
  nsp = cell.arch in grid.BERT_FAMILY and not recipe.packed
  train_data = dict(input_path=data['records'][cell.data], seq_length=grid.SEQ_LENGTH,
                    max_predictions_per_seq=recipe.max_predictions, global_batch_size=batch_size,
                    use_next_sentence_label=nsp, use_position_id=recipe.packed)
  held_out = dict(input_path=data['records']['in_domain'], seq_length=grid.SEQ_LENGTH,
                  max_predictions_per_seq=grid.HELD_OUT_MAX_PREDICTIONS,
                  global_batch_size=batch_size,
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


def train_command(cell: grid.Cell, model_dir: str, override: str) -> List[str]:
  return [corpus_data.python_executable(), '-m', 'official.nlp.train',
          '--experiment=bert/pretraining',
          f'--config_file={grid.ARCHITECTURES[cell.arch]}', f'--params_override={override}',
          '--mode=train_and_eval', f'--model_dir={model_dir}',
          *(f'--experiment_module={module}' for module in grid.experiment_modules(cell.arch))]


def evaluate_command(model_dir: str, data: Mapping[str, Any], output_json: str,
                     batch_size: int, arch: str = 'bert') -> List[str]:
  inputs = ','.join(f'{name}={data["records"][name]}' for name in grid.HELD_OUT_SETS)
  return [corpus_data.python_executable(), '-m', 'official.nlp.tools.evaluate_mlm',
          f'--model_dir={model_dir}',
          f'--input_paths={inputs}', f'--output_json={output_json}',
          f'--batch_size={batch_size}',
          *(f'--experiment_module={module}' for module in grid.experiment_modules(arch))]
