"""How often the run-level tests call a difference that is not there, by simulation.

Two recipes with the same mean accuracy over documents are compared on a test set of documents,
as `compare_recipes.py` compares them downstream: each recipe has `--runs` pretraining runs, each
run's per-item correctness is averaged over 3 fine-tuning seeds. A recipe may do better on some
documents and worse on others (`--interactions`: the spread, in logits, of a recipe's per-document
effect); on the population of documents the recipes tie. Welch's t-test over the runs holds the
test documents fixed, so it answers "on these documents?"; `significance.two_level_test` adds the
documents' sampling and answers "on documents like these?". The script prints how often each
rejects at 0.05: near 0.05 is calibrated; above it, a difference claimed too often.

Pure numpy with a fixed seed: the figures do not depend on the machine.

Usage:
  .venv/bin/python -m official.projects.recipe_comparison.two_level_calibration --simulations=1000
"""

import argparse
import sys
from typing import Optional, Sequence, Tuple

import numpy as np

from official.nlp.tools import significance


def simulated_runs(rng: np.random.Generator, base_logit: np.ndarray, clusters: np.ndarray,
                   recipe_effect: np.ndarray, runs: int, run_spread: float,
                   finetune_seeds: int = 3) -> np.ndarray:
  """`[runs, items]`: each run's per-item correctness averaged over its fine-tuning seeds.

  A run shifts every logit by its own `N(0, run_spread)` offset; the recipe adds its per-document
  `recipe_effect[cluster]`.
  """
  scores = []
  for _ in range(runs):
    logit = base_logit + recipe_effect[clusters] + rng.normal(0.0, run_spread)
    probability = 1.0 / (1.0 + np.exp(-logit))
    scores.append(np.mean(rng.random((finetune_seeds, len(probability))) < probability, axis=0))
  return np.array(scores)


def rejection_rates(interaction: float, simulations: int, runs: int = 3, documents: int = 33,
                    items_per_document: int = 37, run_spread: float = 0.05,
                    seed: int = 0) -> Tuple[float, float]:
  """`(Welch over runs, two-level)`: the fraction of simulations each rejects at 0.05 when the
  recipes tie on the population of documents.

  Example:
    >>> rejection_rates(1.0, 200)  # per-document effects of N(0, 1) logits; about 4 s
    (0.58, 0.05)
  """
  rng = np.random.default_rng(seed)
  clusters = np.repeat(np.arange(documents), items_per_document)
  welch = two_level = 0
  for _ in range(simulations):
    base = rng.normal(0.0, 1.0, documents)[clusters] + rng.normal(0.0, 1.0, len(clusters))
    a, b = (simulated_runs(rng, base, clusters, rng.normal(0.0, interaction, documents), runs,
                           run_spread) for _ in range(2))
    run_a, run_b = a.mean(axis=1), b.mean(axis=1)
    welch += significance.welch_t_test(run_a, run_b)['p'] < 0.05
    two_level += significance.two_level_test(run_a, run_b, a.mean(axis=0), b.mean(axis=0),
                                             clusters)['p'] < 0.05
  return welch / simulations, two_level / simulations


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--simulations', type=int, default=1000)
  parser.add_argument('--runs', type=int, default=3, help='pretraining runs a recipe')
  parser.add_argument('--documents', type=int, default=33, help='test documents (Brown: 33)')
  parser.add_argument('--items_per_document', type=int, default=37,
                      help='test items a document (Brown genre: 1,211 passages / 33)')
  parser.add_argument('--run_spread', type=float, default=0.05,
                      help='standard deviation of a run\'s logit offset')
  parser.add_argument('--interactions', default='0,0.5,1',
                      help='spreads of a recipe\'s per-document effect (logits), comma-separated')
  parser.add_argument('--seed', type=int, default=0)
  args = parser.parse_args(argv)
  try:
    interactions = [float(x) for x in args.interactions.split(',') if x]
  except ValueError:
    parser.error(f'--interactions: expected numbers separated by commas, found '
                 f'{args.interactions!r}')
  if args.simulations < 1 or args.runs < 2 or args.documents < 2:
    parser.error('expected --simulations >= 1, --runs >= 2 and --documents >= 2, found '
                 f'{args.simulations}, {args.runs} and {args.documents}')
  print('| per-document interaction (logits) | Welch over runs | two-level |')
  print('|---|---|---|')
  for interaction in interactions:
    welch, two_level = rejection_rates(interaction, args.simulations, args.runs, args.documents,
                                       args.items_per_document, args.run_spread, args.seed)
    print(f'| {interaction:g} | {welch:.3f} | {two_level:.3f} |')
  return 0


if __name__ == '__main__':
  sys.exit(main())
