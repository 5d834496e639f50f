"""A finished run's figures, the best configuration of each cell and the tests over seeds."""

import dataclasses
import functools
import math
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from official.projects.recipe_comparison import grid
from official.projects.recipe_comparison import run_configs


def has_checkpoint(model_dir: str) -> bool:
  """Whether `model_dir` holds a checkpoint (a run that can resume)."""
  import tensorflow as tf  # Function-level: the runner itself does not need TensorFlow.
  return os.path.isdir(model_dir) and bool(tf.train.latest_checkpoint(model_dir))


def budget_plan(model_dir: str, name: str = 'planned_steps', default: Any = None) -> Any:
  """A value of the time budget in a run's latest checkpoint: `planned_steps` (the step it planned
  to end at) or `spent_seconds` (its training time over all sittings); `default` when the run has
  no checkpoint (else a missing checkpoint raises)."""
  import tensorflow as tf  # Function-level: the runner itself does not need TensorFlow.
  if default is not None and not has_checkpoint(model_dir):
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




def run_result(run: grid.Run, train: Mapping[str, Any], evaluation: Mapping[str, Any],
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
  tokens = steps * batch_size * grid.SEQ_LENGTH
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
                for name in grid.HELD_OUT_SETS})


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
    current_config = config_of(runs, current) if current else None
    if current is None or (current_config != config and
                           _mean(losses[config]) < _mean(losses[current_config])):
      best[result['cell']] = name
  return {cell.name: best[cell.name] for cell in grid.ALL_CELLS if cell.name in best}


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
  pairs = [(dict(a=a, b=b), config_of(runs, best[a]), config_of(runs, best[b]))
           for i, a in enumerate(cells) for b in cells[i + 1:] if a in best and b in best]
  return significance.welch_family(_loss_comparisons(runs, pairs))


def config_of(runs: Mapping[str, Mapping[str, Any]], name: str) -> str:
  """The configuration (the run without its seed) of the run called `name`."""
  return runs[name].get('config', name)


def _loss_comparisons(runs: Mapping[str, Mapping[str, Any]],
                      pairs: Sequence[Tuple[Dict[str, Any], str, str]]) -> List[tuple]:
  """`significance.welch_family`'s input: per held-out set, each `(fields, config a, config b)`
  of `pairs` with the seeds' losses of either side (`fields` + `held_out`, `seeds_a`, `seeds_b`)."""
  comparisons = []
  for held_out in grid.HELD_OUT_SETS:
    losses = config_losses(runs, held_out)
    for fields, a_config, b_config in pairs:
      la, lb = losses.get(a_config, []), losses.get(b_config, [])
      comparisons.append((dict(fields, held_out=held_out, seeds_a=len(la), seeds_b=len(lb)),
                          la, lb))
  return comparisons


@functools.lru_cache(maxsize=None)
def own_variant(arch: str) -> Optional[grid.OptimizerVariant]:
  """The optimizer/regularisation an architecture's YAML brings, as an `OptimizerVariant`: its
  AdamW beta_2 and epsilon (the optimizer config's defaults, 0.999 and 1e-7, where it is silent)
  and its encoder dropout; None when that is not one variant: another optimizer than AdamW, the
  dropout rates not both given, or the hidden and attention dropout different.

  Example:
    >>> own_variant('modern'), own_variant('bert')
    (OptimizerVariant(beta_2=0.98, dropout=0.0, epsilon=1e-06),
     OptimizerVariant(beta_2=0.999, dropout=0.1, epsilon=1e-07))
  """
  config = run_configs.architecture_yaml(arch)
  encoder = config['task']['model']['encoder']
  fields = encoder[encoder['type']]
  optimizer = config['trainer']['optimizer_config']['optimizer']
  rates = {fields.get('dropout_rate'), fields.get('attention_dropout_rate')}
  if optimizer.get('type') != 'adamw' or len(rates) != 1 or None in rates:
    return None
  adamw = optimizer.get('adamw') or {}
  return grid.OptimizerVariant(float(adamw.get('beta_2', 0.999)), float(rates.pop()),
                          float(adamw.get('epsilon', 1e-7)))


def run_variant(result: Mapping[str, Any]) -> Optional[grid.OptimizerVariant]:
  """The optimizer setting a run trained with: its `variant`, else its architecture's own."""
  variant = result.get('variant')
  return grid.OptimizerVariant(**variant) if variant else own_variant(result['arch'])


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
    at_variant = {cell.name: at_variant[cell.name] for cell in grid.CELLS
                  if cell.name in at_variant}  # the 2x2 ablation's cells only
    if len(at_variant) != len(grid.CELLS):
      continue
    chosen = {cell: config_of(runs, name) for cell, name in at_variant.items()}
    setting = f'{variant.beta_2:g} / {variant.dropout:g} / {variant.epsilon:g}'
    factors = [('architecture', f'bert-{data}', f'modern-{data}') for data in grid.DATA_RECIPES]
    factors += [('data recipe', f'{arch}-bert', f'{arch}-modern')
                for arch in grid.ABLATION_ARCHITECTURES]
    sides = [(factor, a, chosen[a], b, chosen[b]) for factor, a, b in factors]
    sides += [('optimizer/regularisation', cell, config_of(runs, best[cell]), cell, config)
              for cell, config in chosen.items()
              if cell in best and config_of(runs, best[cell]) != config]
    pairs += [(dict(factor=factor, setting=setting, a=a, b=b, a_config=a_config,
                    b_config=b_config), a_config, b_config)
              for factor, a, a_config, b, b_config in sides]
  return significance.welch_family(_loss_comparisons(runs, pairs))
