"""Tests of the downstream baselines: features, majority, word lookup, the linear classifier."""

import math
import re
import sys

import numpy as np
import pytest

from official.nlp.tools import downstream_baselines as baselines


def test_features():
  assert baselines.words_of("It's fine, isn't it?") == [
      'it', "'", 's', 'fine', ',', 'isn', "'", 't', 'it', '?']
  assert baselines.bag_of_words_features('Good film') == ['w=good', 'w=film', 'b=good film']
  surface = baselines.surface_features('It works. Fine!')
  assert surface[:4] == ['len=5', 'last=!', 'caps=2', 'stop_inside=1']
  assert baselines.surface_features('no end')[1] == 'last=alnum'
  features = baselines.tagging_features(['The', 'cats', 'sat'], 1)
  assert features[:6] == ['w=cats', 's1=s', 's2=ts', 's3=ats', 'p1=c', 'shape=xx']
  assert features[7:] == ['w-2=<edge>', 'w-1=the', 'w+1=sat', 'w+2=<edge>', 'w-1,w=the|cats']


def _sentence_splits(rng, n, signal):
  """Texts of random filler words plus one of two cue words (when `signal`) at random places."""
  filler = [f'x{i}' for i in range(30)]
  splits = {}
  for name, count in (('train', n), ('dev', n // 4), ('test', n // 4)):
    rows = []
    for _ in range(count):
      label = int(rng.integers(2))
      words = list(rng.choice(filler, size=6))
      if signal:
        words.insert(int(rng.integers(7)), 'good' if label else 'bad')
      rows.append((' '.join(words) + ' .', 'pos' if label else 'neg'))
    splits[name] = rows
  return splits


@pytest.mark.slow
def test_bag_of_words_learns_cue_words_and_surface_cues_cannot():
  splits = _sentence_splits(np.random.default_rng(0), 400, signal=True)
  bow = baselines.bag_of_words_sentences(splits)
  assert bow.test == 1.0 and bow.dev == 1.0 and bow.settings['l2'] in baselines.L2_GRID
  assert bow.correct == [1.0] * 100
  surface = baselines.surface_cues_sentences(splits)  # every text has the same surface
  majority = baselines.majority_sentences(splits)
  assert surface.test == pytest.approx(majority.test, abs=0.08)
  assert len(surface.correct) == 100


def test_majority_sentences_counts_the_training_labels():
  splits = {'train': [('a', 'x'), ('b', 'y'), ('c', 'y')], 'dev': [('d', 'y'), ('e', 'x')],
            'test': [('f', 'x'), ('g', 'y'), ('h', 'y'), ('i', 'y')]}
  result = baselines.majority_sentences(splits)
  assert (result.dev, result.test, result.correct) == (0.5, 0.75, [0.0, 1.0, 1.0, 1.0])
  assert result.settings == {'label': 'y'}


@pytest.mark.slow
def test_linear_classifier_matches_a_numpy_reference():
  """Dev and test accuracies equal a numpy logistic regression trained to convergence."""
  rng = np.random.default_rng(1)
  weights = rng.normal(size=(12, 3))
  rows = {}
  for name, count in (('train', 300), ('dev', 100), ('test', 100)):
    x = rng.random((count, 12)) < 0.3
    y = np.argmax(x @ weights + rng.normal(0, 0.5, (count, 3)), axis=1)
    rows[name] = [([f'f{j}' for j in np.flatnonzero(xi)], int(yi)) for xi, yi in zip(x, y)]
  result = baselines.linear_classifier(rows['train'], rows['dev'], rows['test'], l2_grid=(1e-3,))

  def dense(split):
    x = np.zeros((len(rows[split]), 12))
    for i, (features, _) in enumerate(rows[split]):
      x[i, [int(f[1:]) for f in features]] = 1.0
    return x, np.asarray([label for _, label in rows[split]])

  x, y = dense('train')
  w, b = np.zeros((12, 3)), np.zeros(3)
  for _ in range(20000):  # plain gradient descent on the same objective
    logits = x @ w + b
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1
    w -= 0.5 * (x.T @ p / len(y) + 2e-3 * w)
    b -= 0.5 * p.mean(axis=0)
  for split, accuracy in (('dev', result.dev), ('test', result.test)):
    xs, ys = dense(split)
    assert accuracy == pytest.approx(np.mean(np.argmax(xs @ w + b, axis=1) == ys), abs=0.021)


def test_tagging_baselines():
  train = [(['the', 'dog', 'runs'], ['DT', 'NN', 'VBZ']), (['the', 'run'], ['DT', 'NN']),
           (['dogs', 'run'], ['NNS', 'VBP']), (['the', 'cat', 'runs'], ['DT', 'NN', 'VBZ'])]
  test = [(['the', 'bat', 'runs', 'jogs'], ['DT', 'NN', 'VBZ', 'VBZ'])]
  splits = {'train': train, 'dev': test, 'test': test}
  majority = baselines.majority_tagging(splits)
  assert majority.settings == {'tag': 'DT'} and majority.correct == [1.0, 0.0, 0.0, 0.0]
  lookup = baselines.word_tag_lookup(splits)
  # 'bat' is unknown and has no known suffix ('bat'): the majority tag; 'jogs' is unknown but
  # 'ogs' is the suffix of 'dogs' (NNS): wrong, as a context-free rule is.
  assert lookup.correct == [1.0, 0.0, 1.0, 0.0] and lookup.test == 0.5
  result = baselines.run_baselines('tagging', splits)
  assert sorted(result) == ['bag_of_words', 'majority', 'word_tag_lookup']
  assert len(result['bag_of_words'].correct) == 4
  with pytest.raises(ValueError, match="kind must be 'sentence' or 'tagging', found 'span'"):
    baselines.run_baselines('span', splits)


def test_extend_grid_steps_on_the_1_3_ladder():
  assert baselines.extend_grid([1e-4, 3e-4, 1e-3], 1e-3) == 3e-3
  assert baselines.extend_grid([1e-4, 3e-4, 1e-3, 3e-3], 3e-3) == 1e-2
  assert baselines.extend_grid([3e-5, 1e-4, 3e-4], 3e-5) == 1e-5
  assert baselines.extend_grid([2e-5, 5e-5], 5e-5) == 1e-4  # x2.5 -> the ladder's 1e-4
  assert baselines.extend_grid([1e-4, 3e-4, 1e-3], 3e-4) is None
  assert baselines.extend_grid([1e-3], 1e-3) is None


def test_pick_on_dev_extends_the_grid_past_an_edge_pick():
  tried = []

  def score(peak):
    def dev_score(l2):
      tried.append(l2)
      return 1 / (1 + abs(math.log10(l2) - math.log10(peak)))
    return dev_score

  # The best is below the grid: two tenfold steps down reach it.
  assert baselines.pick_on_dev([1e-3, 1e-2], score(1e-5)) == (1e-5, 1.0)
  assert tried == [1e-3, 1e-2, 1e-4, 1e-5]
  # Two steps up, but the best lies three steps away: the pick stays at the new edge.
  tried.clear()
  assert baselines.pick_on_dev([1e-3, 1e-2], score(1.0))[0] == pytest.approx(1.0)
  assert tried == pytest.approx([1e-3, 1e-2, 1e-1, 1.0])
  assert baselines.pick_on_dev([1e-3, 1e-2], score(10.0), extensions=2)[0] == pytest.approx(1.0)
  # Inside the grid: nothing added; a tie keeps the first value, which ends the extension.
  tried.clear()
  assert baselines.pick_on_dev([1e-4, 1e-3, 1e-2], score(1e-3)) == (1e-3, 1.0)
  assert tried == [1e-4, 1e-3, 1e-2]
  assert baselines.pick_on_dev([1e-4, 1e-3], lambda l2: 0.5) == (1e-4, 0.5)
  # A single value is the caller's choice: never extended.
  assert baselines.pick_on_dev([1e-3], score(1e-5)) == (1e-3, pytest.approx(1 / 3))


def test_two_classes_get_the_softmax_objectives_weights():
  """With two classes scikit-learn fits one sigmoid: `_inverse_c` gives it the minimum of the
  two-class softmax objective (mean cross-entropy + l2 |W|^2), whose logit difference it is."""
  from sklearn.linear_model import LogisticRegression
  rng = np.random.default_rng(2)
  x = (rng.random((200, 6)) < 0.4).astype(float)
  y = (x @ rng.normal(size=6) + rng.normal(0, 0.5, 200) > 0).astype(int)
  l2 = 1e-2
  w, b = np.zeros((6, 2)), np.zeros(2)
  for _ in range(20000):  # gradient descent on the softmax objective
    logits = x @ w + b
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(200), y] -= 1
    w -= 0.5 * (x.T @ p / 200 + 2 * l2 * w)
    b -= 0.5 * p.mean(axis=0)
  model = LogisticRegression(C=baselines._inverse_c(l2, 200, 2), tol=1e-10, max_iter=1000)
  model.fit(x, y)
  assert model.coef_[0] == pytest.approx(w[:, 1] - w[:, 0], abs=1e-6)
  assert model.intercept_[0] == pytest.approx(b[1] - b[0], abs=1e-6)
  assert baselines._inverse_c(1e-3, 500, 3) == pytest.approx(1.0)


def test_tagger_learns_a_tag_that_needs_the_previous_word():
  # 'x' after 'to' is a verb, elsewhere a noun; the other words have one tag each. A word's own
  # most frequent tag cannot tell the two 'x's apart; the linear tagger sees the neighbour.
  rng = np.random.default_rng(3)
  fixed = {'to': 'TO', 'the': 'DT', 'big': 'JJ', 'runs': 'VBZ'}

  def sentences(count):
    rows = []
    for _ in range(count):
      words = list(rng.choice(list(fixed), size=4)) + ['x']
      rng.shuffle(words)
      rows.append((words, [fixed.get(w) or ('VB' if i and words[i - 1] == 'to' else 'NN')
                           for i, w in enumerate(words)]))
    return rows

  splits = {'train': sentences(300), 'dev': sentences(60), 'test': sentences(60)}
  tagger = baselines.bag_of_words_tagging(splits)
  lookup = baselines.word_tag_lookup(splits)
  majority = baselines.majority_tagging(splits)
  assert tagger.test == 1.0 and tagger.dev == 1.0
  assert lookup.test < 0.97 and majority.test < 0.4
  assert len(tagger.correct) == 300


def test_without_sklearn_the_error_names_the_extra(monkeypatch):
  monkeypatch.setitem(sys.modules, 'sklearn.linear_model', None)
  with pytest.raises(ImportError, match=re.escape("pip install 'mlm-garden[eval]'")):
    baselines.linear_classifier([(['a'], 0), (['a'], 1)], [(['a'], 0)], [(['a'], 1)])
  assert baselines.words_of('Fine.') == ['fine', '.']  # the rest needs no scikit-learn


def test_degenerate_training_data_predicts_the_majority():
  # No feature in two training rows, or a single label: the prior, i.e. the majority label.
  train = [(['a'], 'x'), (['b'], 'y'), (['c'], 'y')]
  result = baselines.linear_classifier(train, [(['a'], 'y')], [(['d'], 'y'), (['a'], 'x')])
  assert (result.dev, result.test, result.correct) == (1.0, 0.5, [1.0, 0.0])
  single = baselines.linear_classifier([(['a'], 'x'), (['a'], 'x')], [(['a'], 'x')],
                                       [(['a'], 'x')])
  assert single.test == 1.0
