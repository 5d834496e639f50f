"""SQuAD exact match and F1 (the official scoring rules, our own code).

Answers are compared after normalisation: lower-case, punctuation removed, the articles
'a', 'an', 'the' removed, whitespace collapsed. Exact match is 1 when the normalised texts are
equal; F1 is the harmonic mean of token precision and recall (tokens counted with multiplicity).
Each question scores its best over the gold answers; a question without gold answers (SQuAD v2.0
impossible) has the single gold answer '' (right only when the prediction is empty too).

Scores are fractions in [0, 1] (Model Garden's v1.1 `exact_match` and `final_f1` scale).

Example:
  >>> exact_match('The cat.', 'cat'), f1('the black cat', 'a cat sat')
  (1.0, 0.5)
"""

import collections
import re
import string
from typing import Dict, List, Mapping, Sequence

_ARTICLES = re.compile(r'\b(a|an|the)\b')
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
  """Lower-case, drop punctuation and articles, collapse whitespace."""
  text = ''.join(c for c in text.lower() if c not in _PUNCTUATION)
  return ' '.join(_ARTICLES.sub(' ', text).split())


def exact_match(prediction: str, gold: str) -> float:
  """1.0 when the normalised texts are equal, else 0.0."""
  return float(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction: str, gold: str) -> float:
  """Token F1 of the normalised texts (two empty texts: 1.0; one empty: 0.0)."""
  predicted = normalize_answer(prediction).split()
  expected = normalize_answer(gold).split()
  if not predicted or not expected:
    return float(predicted == expected)
  common = sum((collections.Counter(predicted) & collections.Counter(expected)).values())
  if common == 0:
    return 0.0
  precision, recall = common / len(predicted), common / len(expected)
  return 2 * precision * recall / (precision + recall)


def _mean(values: List[float]) -> float:
  return sum(values) / len(values) if values else 0.0


def evaluate(gold_answers: Mapping[str, Sequence[str]], predictions: Mapping[str, str],
             version_2_with_negative: bool = False) -> Dict[str, float]:
  """Mean exact match and F1 over the questions of `gold_answers`.

  Args:
    gold_answers: qas_id -> gold answer texts ([] for an impossible question).
    predictions: qas_id -> predicted text ('' = no answer); a missing question scores 0.
    version_2_with_negative: also report the answerable / unanswerable parts.

  Returns:
    `exact_match` and `final_f1` (Model Garden's names); with v2.0 also `has_answer_exact_match`,
    `has_answer_f1` and `no_answer_exact_match` (the fraction of unanswerable questions predicted
    as such). All in [0, 1].

  Example:
    >>> evaluate({'q1': ['Paris'], 'q2': ['blue sky']}, {'q1': 'paris', 'q2': 'sky'})
    {'exact_match': 0.5, 'final_f1': 0.8333333333333333}
  """
  exact: Dict[str, float] = {}
  f1s: Dict[str, float] = {}
  for qas_id, golds in gold_answers.items():
    golds = [g for g in golds if normalize_answer(g)] or ['']
    prediction = predictions.get(qas_id)
    if prediction is None:
      exact[qas_id] = f1s[qas_id] = 0.0
      continue
    exact[qas_id] = max(exact_match(prediction, g) for g in golds)
    f1s[qas_id] = max(f1(prediction, g) for g in golds)
  metrics = {'exact_match': _mean(list(exact.values())), 'final_f1': _mean(list(f1s.values()))}
  if version_2_with_negative:
    has_answer = [q for q, golds in gold_answers.items() if any(normalize_answer(g) for g in golds)]
    no_answer = [q for q in gold_answers if q not in set(has_answer)]
    metrics['has_answer_exact_match'] = _mean([exact[q] for q in has_answer])
    metrics['has_answer_f1'] = _mean([f1s[q] for q in has_answer])
    metrics['no_answer_exact_match'] = _mean([exact[q] for q in no_answer])
  return metrics


def gold_answers_of(examples: Sequence, version_2_with_negative: bool = False
                    ) -> Dict[str, List[str]]:
  """qas_id -> gold texts of `squad_lib.SquadExample`s (impossible questions: [])."""
  gold: Dict[str, List[str]] = {}
  for example in examples:
    impossible = version_2_with_negative and example.is_impossible
    gold[example.qas_id] = [] if impossible else list(example.answers)
  return gold

