"""Whole-eval-set metrics against hand-computed values and independent numpy references."""

import itertools

import numpy as np
import pytest

from official.nlp.tasks import finetuning_metrics as fm


def test_binary_f1_and_mcc_by_hand():
  labels = np.array([1, 1, 1, 0, 0, 0, 0, 1])
  preds = np.array([1, 1, 0, 0, 1, 0, 0, 1])
  # TP=3, FN=1, FP=1, TN=3: precision 3/4, recall 3/4, F1 0.75; MCC = (9 - 1) / sqrt(4*4*4*4) = 0.5.
  assert fm.f1_score(labels, preds, 2) == pytest.approx(0.75)
  assert fm.matthews_corrcoef(labels, preds, 2) == pytest.approx(0.5)
  metrics = fm.classification_metrics(labels, np.eye(2)[preds] * 3.0)
  assert metrics == pytest.approx({'accuracy': 0.75, 'f1': 0.75, 'matthews_corrcoef': 0.5})


def test_macro_f1_and_multiclass_mcc_by_hand():
  labels = np.array([0, 0, 1, 1, 2, 2])
  preds = np.array([0, 1, 1, 1, 2, 0])
  # Per class F1: c0: TP1 FP1 FN1 -> 0.5; c1: TP2 FP1 FN0 -> 0.8; c2: TP1 FP0 FN1 -> 2/3.
  assert fm.f1_score(labels, preds, 3) == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)
  # Gorodkin: c = 4 correct, s = 6, t = [2, 2, 2], p = [2, 3, 1].
  expected = (4 * 6 - (2 * 2 + 2 * 3 + 2 * 1)) / np.sqrt((36 - (4 + 9 + 1)) * (36 - 12))
  assert fm.matthews_corrcoef(labels, preds, 3) == pytest.approx(expected)


def test_degenerate_cases_are_zero_not_nan():
  assert fm.matthews_corrcoef(np.array([1, 1]), np.array([1, 1]), 2) == 0.0
  assert fm.f1_score(np.array([0, 0]), np.array([0, 0]), 2) == 0.0
  assert fm.pearson_corr(np.ones(4), np.arange(4)) == 0.0


def _reference_ranks(values):
  """Average ranks by brute force: 1 + #smaller + (#equal - 1) / 2."""
  values = np.asarray(values)
  return np.array([1 + np.sum(values < v) + (np.sum(values == v) - 1) / 2 for v in values])


def test_pearson_and_spearman_against_numpy():
  rng = np.random.default_rng(0)
  x = rng.normal(size=50)
  y = 0.5 * x + rng.normal(size=50)
  y[:10] = np.round(y[:10])  # ties
  y[10:13] = y[0]
  assert fm.pearson_corr(x, y) == pytest.approx(np.corrcoef(x, y)[0, 1])
  np.testing.assert_allclose(fm.average_ranks(y), _reference_ranks(y))
  expected = np.corrcoef(_reference_ranks(x), _reference_ranks(y))[0, 1]
  assert fm.spearman_corr(x, y) == pytest.approx(expected)
  metrics = fm.regression_metrics(y, x)
  assert metrics['pearson_spearman_corr'] == pytest.approx((metrics['pearson'] + expected) / 2)
  assert metrics['mean_squared_error'] == pytest.approx(np.mean((x - y) ** 2))


def test_spearman_of_monotone_map_is_one():
  x = np.array([3.0, 1.0, 2.0, 5.0])
  assert fm.spearman_corr(x, np.exp(x)) == pytest.approx(1.0)
  assert fm.spearman_corr(x, -x ** 3) == pytest.approx(-1.0)


@pytest.mark.parametrize('tags, spans', [
    (['B-PER', 'I-PER', 'O', 'I-LOC'], [('PER', 0, 2), ('LOC', 3, 4)]),
    (['B-PER', 'B-PER', 'I-PER'], [('PER', 0, 1), ('PER', 1, 3)]),
    (['B-PER', 'I-LOC', 'I-LOC', 'O'], [('PER', 0, 1), ('LOC', 1, 3)]),
    (['O', 'O'], []),
    (['I-ORG'], [('ORG', 0, 1)]),
])
def test_bio_spans(tags, spans):
  assert fm.bio_spans(tags) == spans


def test_span_metrics_by_hand():
  gold = [['B-PER', 'I-PER', 'O', 'B-LOC'], ['B-ORG', 'O']]
  pred = [['B-PER', 'I-PER', 'O', 'B-ORG'], ['B-ORG', 'B-LOC']]
  # gold spans: PER(0,2), LOC(3,4), ORG(0,1) = 3; predicted: PER, ORG(3,4), ORG(0,1), LOC(1,2) = 4;
  # correct: PER(0,2) and ORG(0,1) = 2.
  metrics = fm.span_metrics(gold, pred)
  assert metrics['precision'] == pytest.approx(0.5)
  assert metrics['recall'] == pytest.approx(2 / 3)
  assert metrics['f1'] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
  assert fm.span_metrics(gold, gold) == {'precision': 1.0, 'recall': 1.0, 'f1': 1.0}


def test_span_metrics_rejects_length_mismatch():
  with pytest.raises(ValueError, match='sentence 0 has 2 gold tags but 1 predicted'):
    fm.span_metrics([['O', 'O']], [['O']])


def test_confusion_matrix_counts():
  labels, preds = [0, 1, 2, 2], [0, 2, 2, 1]
  expected = np.zeros((3, 3), int)
  for label, pred in zip(labels, preds):
    expected[label, pred] += 1
  np.testing.assert_array_equal(fm.confusion_matrix(labels, preds, 3), expected)
  assert list(itertools.chain(*fm.confusion_matrix([], [], 2).tolist())) == [0, 0, 0, 0]
