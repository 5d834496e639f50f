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

All are deterministic (full-batch training from zeros): one number per task, no seed spread.
Each returns a `BaselineResult` with the per-example (per-word) correctness on the test split, for
the paired tests against the models.

Example:
  >>> result = bag_of_words_sentences(downstream_data.load_task('mr', data_dir))
  >>> result.dev, result.test, result.settings
  (0.705, 0.72375, {'l2': 1e-05})
"""

import collections
import dataclasses
import math
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

L2_GRID = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
# Steps added at most past an edge pick of the L2 grid (tenfold on `L2_GRID`).
L2_EXTENSIONS = 2
TRAIN_STEPS = 400
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


class _FeatureIndex:
  """Feature strings -> ids, fitted on the training split (features seen once are dropped)."""

  def __init__(self, rows: Sequence[Sequence[str]], min_count: int = 2):
    counts = collections.Counter(f for row in rows for f in set(row))
    self.ids = {f: i for i, f in enumerate(sorted(f for f, c in counts.items() if c >= min_count))}

  def padded(self, rows: Sequence[Sequence[str]]) -> np.ndarray:
    """int32 [rows, most features]: each row's distinct known feature ids, padded with -1."""
    known = [sorted({self.ids[f] for f in row if f in self.ids}) for row in rows]
    out = np.full((len(rows), max([len(k) for k in known] + [1])), -1, np.int32)
    for i, ids in enumerate(known):
      out[i, :len(ids)] = ids
    return out


def _logits(weights: tf.Tensor, bias: tf.Tensor, ids: tf.Tensor) -> tf.Tensor:
  """Sum of the weight rows of each example's feature ids (-1: none) plus the bias."""
  mask = tf.cast(ids >= 0, weights.dtype)[:, :, None]
  return tf.reduce_sum(tf.gather(weights, tf.maximum(ids, 0)) * mask, axis=1) + bias


class _LogisticRegression:
  """Multinomial logistic regression on padded feature ids, trained full-batch from zeros.

  `fit` runs Adam (lr 0.05) on mean cross-entropy + l2 * |W|^2 for a fixed number of steps; it is
  compiled once per instance, so one instance serves a whole L2 sweep on the same data.
  """

  def __init__(self, ids: np.ndarray, labels: np.ndarray, num_features: int, num_classes: int):
    self.ids = tf.constant(ids)
    self.labels = tf.constant(labels, tf.int32)
    self.weights = tf.Variable(tf.zeros([num_features, num_classes]))
    self.bias = tf.Variable(tf.zeros([num_classes]))
    self.moments = [tf.Variable(tf.zeros_like(v)) for v in (self.weights, self.weights,
                                                             self.bias, self.bias)]

  @tf.function
  def _fit(self, l2: tf.Tensor, steps: tf.Tensor) -> None:
    for variable in [self.weights, self.bias] + self.moments:
      variable.assign(tf.zeros_like(variable))
    for step in tf.range(1, steps + 1):
      with tf.GradientTape() as tape:
        logits = _logits(self.weights, self.bias, self.ids)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(self.labels, logits))
        loss += l2 * tf.reduce_sum(self.weights * self.weights)
      grads = tape.gradient(loss, [self.weights, self.bias])
      t = tf.cast(step, tf.float32)
      for variable, grad, m, v in zip((self.weights, self.bias), grads, self.moments[0::2],
                                      self.moments[1::2]):
        grad = tf.convert_to_tensor(grad)
        m.assign(0.9 * m + 0.1 * grad)
        v.assign(0.999 * v + 0.001 * grad * grad)
        variable.assign_sub(0.05 * (m / (1.0 - 0.9 ** t)) /
                            (tf.sqrt(v / (1.0 - 0.999 ** t)) + 1e-7))

  def fit(self, l2: float, steps: int = TRAIN_STEPS) -> '_LogisticRegression':
    self._fit(tf.constant(l2, tf.float32), tf.constant(steps))
    return self

  def predict(self, ids: np.ndarray) -> np.ndarray:
    return tf.argmax(_logits(self.weights, self.bias, tf.constant(ids)), axis=-1).numpy()


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
  index = _FeatureIndex([f for f, _ in train])
  x = {name: index.padded([f for f, _ in rows]) for name, rows in
       (('train', train), ('dev', dev), ('test', test))}
  y_train = np.asarray([label_id[label] for _, label in train])
  model = _LogisticRegression(x['train'], y_train, max(len(index.ids), 1), len(labels))

  def dev_score(l2: float) -> float:
    return _accuracy([labels[i] for i in model.fit(l2).predict(x['dev'])],
                     [label for _, label in dev])[0]

  l2, dev_accuracy = pick_on_dev(l2_grid, dev_score)
  test_accuracy, correct = _accuracy([labels[i] for i in model.fit(l2).predict(x['test'])],
                                     [label for _, label in test])
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
