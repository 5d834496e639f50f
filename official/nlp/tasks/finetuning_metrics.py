"""Whole-eval-set metrics of the fine-tuning tasks, in numpy (no sklearn/scipy/seqeval needed).

Classification: accuracy, F1 (binary: of class 1; multiclass: macro average), Matthews correlation
(multiclass form). Regression: Pearson and Spearman correlation (ties get average ranks).
Tagging: spans from BIO tags, conlleval-style (an `I-X` after `O` or another type opens a span),
and micro span precision / recall / F1.

Example:
  >>> f1_score(np.array([1, 0, 1]), np.array([1, 1, 1]))
  0.8
  >>> bio_spans(['B-PER', 'I-PER', 'O', 'I-LOC'])
  [('PER', 0, 2), ('LOC', 3, 4)]
"""

from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np


def collect_step_logs(state: Optional[Dict[str, List[np.ndarray]]],
                      step_logs: Optional[Mapping[str, Any]],
                      keys: Sequence[str]) -> Dict[str, List[np.ndarray]]:
  """Appends the `keys` of one eval step's logs (one array, or a list/tuple of per-replica arrays)
  to `state` (created when None): the body of the fine-tuning tasks' `aggregate_logs`.

  Example:
    >>> collect_step_logs(None, {'labels': [np.array([1]), np.array([0])]}, ['labels'])
    {'labels': [array([1]), array([0])]}
  """
  state = state if state is not None else {key: [] for key in keys}
  if step_logs:
    for key in keys:
      values = step_logs[key]
      per_replica = values if isinstance(values, (list, tuple)) else [values]
      state[key].extend(np.asarray(v) for v in per_replica)
  return state


def confusion_matrix(labels: np.ndarray, predictions: np.ndarray, num_classes: int) -> np.ndarray:
  """Counts [num_classes, num_classes]: row = true class, column = predicted class."""
  labels = np.asarray(labels, np.int64).reshape(-1)
  predictions = np.asarray(predictions, np.int64).reshape(-1)
  return np.bincount(labels * num_classes + predictions,
                     minlength=num_classes * num_classes).reshape(num_classes, num_classes)


def _safe_divide(numerator: float, denominator: float) -> float:
  return float(numerator) / float(denominator) if denominator else 0.0


def f1_score(labels: np.ndarray, predictions: np.ndarray, num_classes: int = 2) -> float:
  """F1 of class 1 when `num_classes == 2`, else the unweighted mean F1 over classes (macro).

  A class with no true and no predicted examples has F1 0 in the macro mean.
  """
  matrix = confusion_matrix(labels, predictions, num_classes).astype(np.float64)
  true_pos = np.diag(matrix)
  f1 = [_safe_divide(2 * true_pos[c], matrix[c].sum() + matrix[:, c].sum())
        for c in range(num_classes)]
  return f1[1] if num_classes == 2 else float(np.mean(f1))


def matthews_corrcoef(labels: np.ndarray, predictions: np.ndarray, num_classes: int) -> float:
  """Matthews correlation coefficient (Gorodkin's multiclass form; 0 when undefined)."""
  matrix = confusion_matrix(labels, predictions, num_classes).astype(np.float64)
  total = matrix.sum()
  correct = np.trace(matrix)
  true_counts, pred_counts = matrix.sum(axis=1), matrix.sum(axis=0)
  numerator = correct * total - np.dot(true_counts, pred_counts)
  denominator = np.sqrt(total ** 2 - np.dot(pred_counts, pred_counts)) * np.sqrt(
      total ** 2 - np.dot(true_counts, true_counts))
  return _safe_divide(numerator, denominator)


def pearson_corr(x: np.ndarray, y: np.ndarray) -> float:
  """Pearson correlation (0 when either input is constant)."""
  x = np.asarray(x, np.float64).reshape(-1)
  y = np.asarray(y, np.float64).reshape(-1)
  x, y = x - x.mean(), y - y.mean()
  return _safe_divide(np.dot(x, y), np.sqrt(np.dot(x, x) * np.dot(y, y)))


def average_ranks(values: np.ndarray) -> np.ndarray:
  """1-based ranks; tied values share the mean of their ranks."""
  values = np.asarray(values).reshape(-1)
  order = np.argsort(values, kind='mergesort')
  sorted_values = values[order]
  # Start index of each run of equal values, in sorted order.
  new_run = np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]])
  run_ids = np.cumsum(new_run) - 1
  run_starts = np.flatnonzero(new_run)
  run_ends = np.append(run_starts[1:], values.size)
  ranks = np.empty(values.size, np.float64)
  ranks[order] = (run_starts + run_ends + 1)[run_ids] / 2.0
  return ranks


def spearman_corr(x: np.ndarray, y: np.ndarray) -> float:
  """Spearman rank correlation: Pearson correlation of the average ranks."""
  return pearson_corr(average_ranks(x), average_ranks(y))


def classification_metrics(labels: np.ndarray, logits: np.ndarray) -> Dict[str, float]:
  """`accuracy`, `f1` and `matthews_corrcoef` of logits [n, num_classes] against labels [n]."""
  num_classes = logits.shape[-1]
  predictions = np.argmax(logits, axis=-1)
  labels = np.asarray(labels).reshape(-1)
  return {'accuracy': float(np.mean(predictions == labels)) if labels.size else 0.0,
          'f1': f1_score(labels, predictions, num_classes),
          'matthews_corrcoef': matthews_corrcoef(labels, predictions, num_classes)}


def regression_metrics(labels: np.ndarray, predictions: np.ndarray) -> Dict[str, float]:
  """`pearson`, `spearman`, their mean `pearson_spearman_corr`, and `mean_squared_error`."""
  labels = np.asarray(labels, np.float64).reshape(-1)
  predictions = np.asarray(predictions, np.float64).reshape(-1)
  pearson, spearman = pearson_corr(predictions, labels), spearman_corr(predictions, labels)
  return {'pearson': pearson, 'spearman': spearman,
          'pearson_spearman_corr': (pearson + spearman) / 2,
          'mean_squared_error': float(np.mean((predictions - labels) ** 2)) if labels.size else 0.0}


def _split_tag(tag: str) -> Tuple[str, Optional[str]]:
  """`('B', 'PER')` for 'B-PER', `('O', None)` for 'O'; a tag without a prefix counts as `I-tag`."""
  if tag == 'O' or not tag:
    return 'O', None
  if len(tag) > 2 and tag[1] == '-' and tag[0] in 'BI':
    return tag[0], tag[2:]
  return 'I', tag


def bio_spans(tags: Sequence[str]) -> List[Tuple[str, int, int]]:
  """Spans `(type, start, end)` (end exclusive) of a BIO tag sequence.

  A span starts at `B-X`, or at `I-X` when the previous tag is not of type X; it ends before `O`,
  any `B-`, or a tag of another type.
  """
  spans = []
  current_type, start = None, 0
  for i, tag in enumerate(list(tags) + ['O']):
    prefix, tag_type = _split_tag(tag)
    if current_type is not None and (prefix != 'I' or tag_type != current_type):
      spans.append((current_type, start, i))
      current_type = None
    if prefix != 'O' and current_type is None:
      current_type, start = tag_type, i
  return spans


def span_metrics(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]
                 ) -> Dict[str, float]:
  """Micro `precision`, `recall` and `f1` of predicted vs gold spans over many sentences.

  Args:
    gold: per sentence, the gold word tags.
    predicted: per sentence, the predicted word tags (same lengths).

  Raises:
    ValueError: the two lists differ in sentences or a sentence in length.
  """
  if len(gold) != len(predicted):
    raise ValueError(f'span_metrics: {len(gold)} gold sentences but {len(predicted)} predicted')
  num_gold = num_predicted = num_correct = 0
  for index, (gold_tags, pred_tags) in enumerate(zip(gold, predicted)):
    if len(gold_tags) != len(pred_tags):
      raise ValueError(f'span_metrics: sentence {index} has {len(gold_tags)} gold tags but '
                       f'{len(pred_tags)} predicted')
    gold_spans: Set[Tuple[str, int, int]] = set(bio_spans(gold_tags))
    pred_spans = set(bio_spans(pred_tags))
    num_gold += len(gold_spans)
    num_predicted += len(pred_spans)
    num_correct += len(gold_spans & pred_spans)
  precision = _safe_divide(num_correct, num_predicted)
  recall = _safe_divide(num_correct, num_gold)
  return {'precision': precision, 'recall': recall,
          'f1': _safe_divide(2 * precision * recall, precision + recall)}
