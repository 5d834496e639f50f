"""Tests for official/nlp/tasks/squad_metrics.py against hand-computed scores."""

import pytest

from official.nlp.tasks import squad_metrics


def test_normalisation_drops_case_punctuation_articles_and_spaces():
  assert squad_metrics.normalize_answer('  The  Cat, an   Apple!  ') == 'cat apple'
  assert squad_metrics.normalize_answer('theory') == 'theory'  # 'the' only as a whole word


def test_exact_match_after_normalisation():
  assert squad_metrics.exact_match('the cat', 'cat') == 1.0
  assert squad_metrics.exact_match('Cat.', 'a cat') == 1.0
  assert squad_metrics.exact_match('black cat', 'cat') == 0.0


def test_f1_by_hand():
  # 'the black cat' -> [black, cat]; 'a cat sat' -> [cat, sat]; common {cat}: precision 1/2,
  # recall 1/2, F1 = 2 * 0.5 * 0.5 / (0.5 + 0.5) = 0.5.
  assert squad_metrics.f1('the black cat', 'a cat sat') == pytest.approx(0.5)
  # [in, 1887] vs [1887]: precision 1/2, recall 1 -> F1 = 2 * 0.5 * 1 / 1.5 = 2/3.
  assert squad_metrics.f1('in 1887', '1887') == pytest.approx(2 / 3)
  # Counts with multiplicity: [cat, cat, cat] vs [cat, dog]: common 1 -> P 1/3, R 1/2, F1 0.4.
  assert squad_metrics.f1('cat cat cat', 'cat dog') == pytest.approx(0.4)
  assert squad_metrics.f1('dog', 'cat') == 0.0
  assert squad_metrics.f1('', '') == 1.0 and squad_metrics.f1('the', 'cat') == 0.0


def test_evaluate_takes_the_best_gold_and_averages_questions():
  gold = {'q1': ['Paris', 'the city of Paris'], 'q2': ['blue sky'], 'q3': ['42']}
  predictions = {'q1': 'city of paris', 'q2': 'sky'}  # q3 unanswered: scores 0
  # q1: EM 1 (2nd gold), F1 1; q2: EM 0, F1: P 1, R 1/2 -> 2/3; q3: 0.
  assert squad_metrics.evaluate(gold, predictions) == pytest.approx(
      {'exact_match': 1 / 3, 'final_f1': (1 + 2 / 3) / 3})


def test_evaluate_v2_splits_answerable_and_unanswerable():
  gold = {'a1': ['red'], 'a2': ['green tea'], 'n1': [], 'n2': []}
  predictions = {'a1': 'red', 'a2': 'tea', 'n1': '', 'n2': 'blue'}
  # a1: 1/1; a2: EM 0, F1 2/3; n1 right (empty vs empty); n2 wrong.
  assert squad_metrics.evaluate(gold, predictions, version_2_with_negative=True) == pytest.approx(
      {'exact_match': 2 / 4, 'final_f1': (1 + 2 / 3 + 1 + 0) / 4,
       'has_answer_exact_match': 1 / 2, 'has_answer_f1': (1 + 2 / 3) / 2,
       'no_answer_exact_match': 1 / 2})
