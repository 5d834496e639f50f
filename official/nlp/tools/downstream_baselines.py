"""The trivial and linear baselines every downstream table shows beside the fine-tuned models.

Sentence tasks (examples `(text, label)`):
  * `majority`: the training split's most frequent label for every example.
  * `bag_of_words`: an L2-regularised logistic regression on binary word unigrams and bigrams
    (lower-cased), its L2 strength picked on the dev split from `L2_GRID` (extended by a step
    of its spacing past an edge pick: `pick_on_dev`).
  * `surface_cues`: the same classifier on surface features only (length, punctuation, digits,
    capitals): a shortcut check. A task on which it scores well above `majority` has cues that do
    not need the words' meaning.
Tagging tasks (examples `(words, tags)`, scored per word):
  * `majority`: the most frequent tag for every word.
  * `word_tag_lookup`: each word's most frequent training tag (unknown words: the most frequent tag
    of their last three letters, else the majority tag): context-free.
  * `bag_of_words`: a logistic regression per word on the word, its affixes and shape and the two
    words on each side, L2 picked on dev.

The logistic regressions are scikit-learn's (`LogisticRegression`, lbfgs, on `CountVectorizer`'s
binary columns of the features of two or more training rows; the `[eval]` extra,
`pip install 'mlm-garden[eval]'`), minimising mean cross-entropy + l2 * |W|^2 to convergence.
All are deterministic: one number per task, no seed spread.
Each returns a `BaselineResult` with the per-example (per-word) correctness on the test split, for
the paired tests against the models.

Example:
  >>> result = bag_of_words_sentences(downstream_data.load_task('mr', data_dir))
  >>> result.dev, result.test, result.settings
  (0.7125, 0.72, {'l2': 1e-06})
"""

import collections
import dataclasses
import math
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

L2_GRID = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
# Steps added at most past an edge pick of the L2 grid (tenfold on `L2_GRID`).
L2_EXTENSIONS = 2
# scikit-learn's lbfgs: iterations at most, and the tolerance of its convergence check (its
# default).
MAX_ITERATIONS = 1000
TOLERANCE = 1e-4
# What a caller without scikit-learn (the optional `[eval]` extra) is told.
MISSING_SKLEARN = "the linear baselines need scikit-learn: pip install 'mlm-garden[eval]'"
_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclasses.dataclass
class BaselineResult:
  """One baseline's scores.

  Attributes:
    dev: accuracy on the dev split.
    test: accuracy on the test split.
    correct: per test example (sentence tasks) or per test word (tagging), 1.0 when right.
    settings: what was picked on dev (e.g. `{'l2': 1e-4}`).
  """
  dev: float
  test: float
  correct: List[float]
  settings: Dict[str, Any] = dataclasses.field(default_factory=dict)


def _accuracy(predicted: Sequence[Any], gold: Sequence[Any]) -> Tuple[float, List[float]]:
  correct = [float(p == g) for p, g in zip(predicted, gold)]
  return (sum(correct) / len(correct) if correct else 0.0), correct


def words_of(text: str) -> List[str]:
  """Lower-cased word and punctuation tokens.

  Example:
    >>> words_of("It's fine, isn't it?")
    ['it', "'", 's', 'fine', ',', 'isn', "'", 't', 'it', '?']
  """
  return _TOKEN.findall(text.lower())


def bag_of_words_features(text: str) -> List[str]:
  """Binary unigram and bigram features of a text.

  Example:
    >>> bag_of_words_features('Good film')
    ['w=good', 'w=film', 'b=good film']
  """
  words = words_of(text)
  return [f'w={w}' for w in words] + [f'b={a} {b}' for a, b in zip(words, words[1:])]


def surface_features(text: str) -> List[str]:
  """Features that need no word's meaning: length, punctuation, digits, capitals.

  Example:
    >>> surface_features('It works.')
    ['len=2', 'last=.', 'caps=1', 'stop_inside=0', 'digits=0', 'punct=1', 'question=0', ...]
  """
  words = text.split()
  length = len(words)
  buckets = (5, 10, 15, 20, 30, 45)
  length_bucket = next((b for b in buckets if length <= b), 99)
  last = text.rstrip()[-1:] if text.strip() else ''
  inside = text.rstrip()[:-1]
  return [f'len={length_bucket}', f'last={last if not last.isalnum() else "alnum"}',
          f'caps={min(sum(w[:1].isupper() for w in words), 3)}',
          f'stop_inside={int(bool(re.search(r"[.!?] ", inside)))}',
          f'digits={int(any(c.isdigit() for c in text))}',
          f'punct={min(sum(not c.isalnum() and not c.isspace() for c in text), 5)}',
          f'question={int("?" in text)}', f'exclaim={int("!" in text)}',
          f'paren={int("(" in text)}', f'quote={int(chr(34) in text or "``" in text)}']


def _shape(word: str) -> str:
  shape = re.sub('[A-Z]', 'X', re.sub('[a-z]', 'x', re.sub('[0-9]', 'd', word)))
  return re.sub(r'(.)\1+', r'\1\1', shape)


def tagging_features(words: Sequence[str], index: int) -> List[str]:
  """Features of `words[index]` for the linear tagger: the word, affixes, shape, neighbours.

  Example:
    >>> tagging_features(['The', 'cats', 'sat'], 1)[:4]
    ['w=cats', 's1=s', 's2=ts', 's3=ats']
  """
  word = words[index]
  lower = word.lower()
  features = [f'w={lower}', f's1={lower[-1:]}', f's2={lower[-2:]}', f's3={lower[-3:]}',
              f'p1={lower[:1]}', f'shape={_shape(word)}', f'first={int(index == 0)}']
  neighbours = {offset: words[index + offset].lower() if 0 <= index + offset < len(words)
                else '<edge>' for offset in (-2, -1, 1, 2)}
  features += [f'w{offset:+d}={neighbour}' for offset, neighbour in neighbours.items()]
  features.append(f'w-1,w={neighbours[-1]}|{lower}')
  return features


def _sklearn() -> Tuple[Any, Any, Any]:
  """scikit-learn's `CountVectorizer` and `LogisticRegression`, and `threadpool_limits`.

  Raises:
    ImportError: scikit-learn is not installed (`MISSING_SKLEARN`).

  Example:
    >>> vectorizer_class, model_class, limits = _sklearn()
  """
  try:
    # Function-level: scikit-learn is the optional [eval] extra, named when it is missing.
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits
  except ImportError as e:
    raise ImportError(MISSING_SKLEARN) from e
  return CountVectorizer, LogisticRegression, threadpool_limits


def _as_given(features: Sequence[str]) -> Sequence[str]:
  """A row's feature strings as they are (the vectorizer's analyzer: no tokenizing).

  Example:
    >>> _as_given(['w=good', 'b=good film'])
    ['w=good', 'b=good film']
  """
  return features


def _inverse_c(l2: float, rows: int, classes: int) -> float:
  """scikit-learn's `C` for the objective mean cross-entropy + l2 * |W|^2.

  Its objective is `|W|^2 / 2 + C * sum(cross-entropy)`: the same minimum at `C = 1 / (2 l2 n)`.
  With two classes it fits one weight vector (the sigmoid's), the difference of the softmax's
  two, whose penalty at the optimum is half as large: `C = 1 / (l2 n)`.

  Example:
    >>> _inverse_c(1e-3, 500, 3), _inverse_c(1e-3, 500, 2)
    (1.0, 2.0)
  """
  return 1.0 / ((2.0 if classes > 2 else 1.0) * l2 * rows)


def _snap_1_3(rate: float) -> float:
  """The nearest (in log scale) of 1, 3 and 10 times a power of ten: 3.3e-3 -> 3e-3."""
  power = 10.0 ** math.floor(math.log10(rate))
  return float(f'{min((power, 3 * power, 10 * power), key=lambda c: abs(math.log(c / rate))):.3g}')


def extend_grid(rates: Sequence[float], best: float) -> Optional[float]:
  """The value (a learning rate, an L2 strength) to add when `best` is at an edge of a grid of two
  or more: one step (the grid's spacing at that edge, on the 1-3-10 ladder) beyond it; None when
  `best` is inside.

  Example:
    >>> extend_grid([1e-4, 3e-4, 1e-3], 1e-3), extend_grid([1e-4, 3e-4, 1e-3], 1e-4)
    (0.003, 3e-05)
    >>> extend_grid([1e-4, 3e-4, 1e-3], 3e-4) is None
    True
  """
  rates = sorted(rates)
  if len(rates) < 2 or rates[0] < best < rates[-1]:
    return None
  if best == rates[-1]:
    return _snap_1_3(rates[-1] * rates[-1] / rates[-2])
  return _snap_1_3(rates[0] * rates[0] / rates[1])


def pick_on_dev(grid: Sequence[float], dev_score: Callable[[float], float],
                extensions: int = L2_EXTENSIONS) -> Tuple[float, float]:
  """The value of `grid` with the best `dev_score` (the first of a tie), the grid extended by a
  step past an edge pick (`extend_grid`; up to `extensions` times) so that the pick is bracketed.

  Returns:
    `(value, its dev score)`.

  Example:
    >>> pick_on_dev([1e-3, 1e-2], lambda l2: 1 / (1 + abs(math.log10(l2) + 5)))  # best: 1e-5
    (1e-05, 1.0)
  """
  scores = {value: dev_score(value) for value in grid}
  for _ in range(extensions):
    value = extend_grid(list(scores), max(scores, key=scores.get))
    if value is None or value in scores:
      break
    scores[value] = dev_score(value)
  best = max(scores, key=scores.get)
  return best, scores[best]


def linear_classifier(train: Sequence[Tuple[Sequence[str], Any]],
                      dev: Sequence[Tuple[Sequence[str], Any]],
                      test: Sequence[Tuple[Sequence[str], Any]],
                      l2_grid: Sequence[float] = L2_GRID) -> BaselineResult:
  """A logistic regression on binary features, its L2 strength the best on dev.

  Args:
    train, dev, test: `(feature strings, label)` pairs.
    l2_grid: the L2 strengths tried.

  Example:
    >>> linear_classifier([(['w=good'], 'pos'), ...], dev, test).settings
    {'l2': 1e-05}
  """
  labels = sorted({label for _, label in train}, key=str)
  label_id = {label: i for i, label in enumerate(labels)}
  y_train = np.asarray([label_id[label] for _, label in train])
  count_vectorizer, logistic_regression, threadpool_limits = _sklearn()
  # Binary columns of the features of 2 or more training rows (rarer ones are dropped).
  vectorizer = count_vectorizer(analyzer=_as_given, binary=True, lowercase=False, min_df=2,
                                dtype=np.float64)
  rows = {'dev': dev, 'test': test}
  try:
    x_train = vectorizer.fit_transform([f for f, _ in train])
  except ValueError:  # no feature in two training rows: the model is its prior, the majority
    x_train = None
  majority = labels[int(np.argmax(np.bincount(y_train, minlength=len(labels))))]
  # One model, refitted for each L2 strength from the last one's weights (the optimum is one;
  # this only gets there in fewer steps). One thread: the data are small, and the solver's
  # threads slow it tenfold when the cores are busy.
  model = logistic_regression(max_iter=MAX_ITERATIONS, tol=TOLERANCE, warm_start=True)
  predictions: Dict[float, Dict[str, List[Any]]] = {}

  def predict(l2: float) -> Dict[str, List[Any]]:
    if l2 not in predictions:
      if x_train is None or len(labels) < 2:
        predictions[l2] = {name: [majority] * len(split) for name, split in rows.items()}
      else:
        with threadpool_limits(limits=1):
          model.set_params(C=_inverse_c(l2, x_train.shape[0], len(labels))).fit(x_train, y_train)
          predictions[l2] = {name: [labels[i] for i in model.predict(
              vectorizer.transform([f for f, _ in split]))] for name, split in rows.items()}
    return predictions[l2]

  def dev_score(l2: float) -> float:
    return _accuracy(predict(l2)['dev'], [label for _, label in dev])[0]

  l2, dev_accuracy = pick_on_dev(l2_grid, dev_score)
  test_accuracy, correct = _accuracy(predict(l2)['test'], [label for _, label in test])
  return BaselineResult(dev_accuracy, test_accuracy, correct, {'l2': l2})


def majority_sentences(splits: Dict[str, list]) -> BaselineResult:
  """The training split's most frequent label for every example."""
  counts = collections.Counter(label for _, label in splits['train'])
  label = min(counts, key=lambda name: (-counts[name], str(name)))
  dev, _ = _accuracy([label] * len(splits['dev']), [g for _, g in splits['dev']])
  test, correct = _accuracy([label] * len(splits['test']), [g for _, g in splits['test']])
  return BaselineResult(dev, test, correct, {'label': label})


def _sentence_rows(splits: Dict[str, list], featurize: Callable[[str], List[str]]):
  return [[(featurize(text), label) for text, label in splits[name]]
          for name in ('train', 'dev', 'test')]


def bag_of_words_sentences(splits: Dict[str, list]) -> BaselineResult:
  """Logistic regression on word unigrams and bigrams (see the module docstring)."""
  return linear_classifier(*_sentence_rows(splits, bag_of_words_features))


def surface_cues_sentences(splits: Dict[str, list]) -> BaselineResult:
  """Logistic regression on `surface_features` only (a shortcut check)."""
  return linear_classifier(*_sentence_rows(splits, surface_features))


def _words_and_tags(sentences: Sequence[Tuple[Sequence[str], Sequence[str]]]):
  return [w for words, _ in sentences for w in words], [t for _, tags in sentences for t in tags]


def majority_tagging(splits: Dict[str, list]) -> BaselineResult:
  """The most frequent training tag for every word."""
  _, tags = _words_and_tags(splits['train'])
  tag = collections.Counter(tags).most_common(1)[0][0]
  scores = {}
  for name in ('dev', 'test'):
    _, gold = _words_and_tags(splits[name])
    scores[name] = _accuracy([tag] * len(gold), gold)
  return BaselineResult(scores['dev'][0], scores['test'][0], scores['test'][1], {'tag': tag})


def word_tag_lookup(splits: Dict[str, list]) -> BaselineResult:
  """Each word's most frequent training tag; unknown words by their last three letters."""
  words, tags = _words_and_tags(splits['train'])
  by_word: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
  by_suffix: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
  for word, tag in zip(words, tags):
    by_word[word][tag] += 1
    by_suffix[word.lower()[-3:]][tag] += 1
  fallback = collections.Counter(tags).most_common(1)[0][0]

  def tag_of(word: str) -> str:
    counts = by_word.get(word) or by_suffix.get(word.lower()[-3:])
    return counts.most_common(1)[0][0] if counts else fallback

  scores = {}
  for name in ('dev', 'test'):
    test_words, gold = _words_and_tags(splits[name])
    scores[name] = _accuracy([tag_of(w) for w in test_words], gold)
  return BaselineResult(scores['dev'][0], scores['test'][0], scores['test'][1])


def bag_of_words_tagging(splits: Dict[str, list]) -> BaselineResult:
  """Logistic regression per word on `tagging_features` (see the module docstring)."""
  rows = [[(tagging_features(words, i), tag) for words, tags in splits[name]
           for i, tag in enumerate(tags)] for name in ('train', 'dev', 'test')]
  return linear_classifier(*rows)


SENTENCE_BASELINES = (('majority', majority_sentences),
                      ('surface_cues', surface_cues_sentences),
                      ('bag_of_words', bag_of_words_sentences))
TAGGING_BASELINES = (('majority', majority_tagging), ('word_tag_lookup', word_tag_lookup),
                     ('bag_of_words', bag_of_words_tagging))


def run_baselines(kind: str, splits: Dict[str, list]) -> Dict[str, BaselineResult]:
  """Every baseline of a task kind ('sentence' or 'tagging') on its splits, by name."""
  if kind not in ('sentence', 'tagging'):
    raise ValueError(f"kind must be 'sentence' or 'tagging', found {kind!r}")
  baselines = SENTENCE_BASELINES if kind == 'sentence' else TAGGING_BASELINES
  return {name: function(splits) for name, function in baselines}
