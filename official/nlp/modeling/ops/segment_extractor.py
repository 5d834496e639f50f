"""Second segments and labels for BERT's next-sentence (NSP) and ALBERT's sentence-order (SOP)
objectives, drawn from a batch of documents split into sentences.

Both functions take `sentences`, a `RaggedTensor` [documents, (sentences)] (strings, or any values
`tf.gather` takes), and pair every sentence with a second one of the same shape:

- `get_next_sentence_labels`: the next sentence of the same document (label True), or a random
  sentence of another document (label False). The last sentence of a document always gets a random
  one.
- `get_sentence_order_labels`: a preceding sentence of the same document (label False: the order
  is swapped), or else a following sentence or a random one of another document (label True). The
  first sentence has no preceding one and the last no following one.

Random numbers come from `random_fn(shape=, minval=, maxval=, dtype=)` (default
`tf.random.uniform`); pass e.g. `functools.partial(tf.random.stateless_uniform, seed=(1, 2))` for
reproducible pairs. A batch needs at least two documents (a random sentence comes from another one).

Example:
  >>> docs = tf.ragged.constant([[b'a1', b'a2'], [b'b1', b'b2', b'b3']])
  >>> second, is_next = get_next_sentence_labels(docs, random_threshold=1.0)
  >>> is_next.to_list()
  [[True, False], [True, True, False]]
  >>> second.to_list()[1][:2]
  [b'b2', b'b3']
"""

from typing import Callable, Tuple

import tensorflow as tf

RandomFn = Callable[..., tf.Tensor]


class _Sentences:
  """Flat views of a [documents, (sentences)] ragged tensor: one entry per sentence."""

  def __init__(self, sentences: tf.RaggedTensor):
    if not isinstance(sentences, tf.RaggedTensor):
      raise TypeError(f'sentences must be a RaggedTensor [documents, (sentences)], found '
                      f'{type(sentences).__name__}')
    self.ragged = sentences
    self.docs = tf.cast(sentences.nrows(), tf.int64)
    self.doc_of = tf.cast(sentences.value_rowids(), tf.int64)          # [n]
    self.doc_starts = tf.cast(sentences.row_starts(), tf.int64)        # [docs]
    self.doc_lengths = tf.cast(sentences.row_lengths(), tf.int64)      # [docs]
    self.length = tf.gather(self.doc_lengths, self.doc_of)             # [n]
    self.position = tf.range(tf.size(self.doc_of, out_type=tf.int64)) - tf.gather(
        self.doc_starts, self.doc_of)                                  # [n], 0-based in the doc
    self.is_first = tf.equal(self.position, 0)
    self.is_last = tf.equal(self.position, self.length - 1)

  def flat_index(self, doc: tf.Tensor, position: tf.Tensor) -> tf.Tensor:
    return tf.gather(self.doc_starts, doc) + position

  def take(self, flat_index: tf.Tensor) -> tf.RaggedTensor:
    """The sentences at `flat_index` [n], shaped like the input."""
    return self.ragged.with_values(tf.gather(self.ragged.values, flat_index))

  def shaped(self, flat: tf.Tensor) -> tf.RaggedTensor:
    """A per-sentence [n] tensor shaped [documents, (sentences)]."""
    return tf.RaggedTensor.from_row_splits(flat, self.ragged.row_splits, validate=False)


def _coin(sentences: _Sentences, random_fn: RandomFn) -> tf.Tensor:
  """A U[0, 1) float per sentence."""
  return random_fn(shape=tf.shape(sentences.position), minval=0, maxval=1, dtype=tf.float32)


def _int_between(low: tf.Tensor, high: tf.Tensor, random_fn: RandomFn) -> tf.Tensor:
  """An integer in [low, high) per entry (floats truncated: the integer kernels do not broadcast
  tensor bounds)."""
  drawn = random_fn(shape=tf.shape(high), minval=tf.cast(low, tf.float32),
                    maxval=tf.cast(high, tf.float32))
  return tf.cast(drawn, high.dtype)


def _random_other_document(sentences: _Sentences, random_fn: RandomFn) -> tf.Tensor:
  """Flat index of a random sentence of another document, per sentence."""
  check = tf.debugging.assert_greater(
      sentences.docs, tf.constant(1, tf.int64),
      message='sentences: expected at least 2 documents (a random second segment comes from '
              'another document)')
  with tf.control_dependencies([check]):
    # A document among the other docs - 1, then shifted past the sentence's own document.
    doc = random_fn(shape=tf.shape(sentences.doc_of), minval=0, maxval=sentences.docs - 1,
                    dtype=tf.int64)
  doc += tf.cast(doc >= sentences.doc_of, tf.int64)
  length = tf.gather(sentences.doc_lengths, doc)
  return sentences.flat_index(doc, _int_between(tf.zeros_like(length), length, random_fn))


def _check_threshold(name: str, value: float) -> None:
  if isinstance(value, (int, float)) and not 0.0 <= value <= 1.0:
    raise ValueError(f'{name} must be in [0, 1], found {value}')


def get_next_sentence_labels(sentences: tf.RaggedTensor, random_threshold: float = 0.5,
                             random_fn: RandomFn = tf.random.uniform
                             ) -> Tuple[tf.RaggedTensor, tf.RaggedTensor]:
  """Pairs every sentence with its next sentence or a random one of another document (NSP).

  Args:
    sentences: [documents, (sentences)], at least 2 documents.
    random_threshold: a sentence gets a random second segment when its U[0, 1) draw exceeds this
      (so 1.0: always the next sentence where there is one; 0.0: always random).
    random_fn: the uniform sampler (see the module docstring).

  Returns:
    `(second_segments, is_next)`, both [documents, (sentences)]: the paired sentences and bools,
    True where the pair is the true next sentence.

  Example:
    >>> docs = tf.ragged.constant([[b'a1', b'a2'], [b'b1']])
    >>> get_next_sentence_labels(docs, 1.0)[0].to_list()[0][0]
    b'a2'
  """
  _check_threshold('random_threshold', random_threshold)
  flat = _Sentences(sentences)
  next_index = flat.flat_index(flat.doc_of, (flat.position + 1) % flat.length)
  random_index = _random_other_document(flat, random_fn)
  is_random = (_coin(flat, random_fn) > random_threshold) | flat.is_last
  second = flat.take(tf.where(is_random, random_index, next_index))
  return second, flat.shaped(tf.logical_not(is_random))


def get_sentence_order_labels(sentences: tf.RaggedTensor, random_threshold: float = 0.5,
                              random_next_threshold: float = 0.5,
                              random_fn: RandomFn = tf.random.uniform
                              ) -> Tuple[tf.RaggedTensor, tf.RaggedTensor]:
  """Pairs every sentence with a preceding, a following or a random sentence (ALBERT's SOP).

  A sentence first chooses between "random or following" and "preceding": it takes the preceding
  side when its draw is at most `random_next_threshold` (never for a document's first sentence).
  On the other side it takes a random sentence of another document when a second draw exceeds
  `random_threshold` (always for the last sentence), else a following one. Preceding and following
  sentences are chosen uniformly among all those before / after it in its document.

  Args:
    sentences: [documents, (sentences)], at least 2 documents.
    random_threshold: see above; higher favours following sentences over random ones.
    random_next_threshold: see above; higher favours preceding sentences.
    random_fn: the uniform sampler (see the module docstring).

  Returns:
    `(second_segments, is_following_or_random)`, both [documents, (sentences)]; the label is False
    where the second segment precedes the sentence.

  Example:
    >>> docs = tf.ragged.constant([[b'a1', b'a2'], [b'b1', b'b2']])
    >>> _, labels = get_sentence_order_labels(docs, 1.0, 1.0)
    >>> labels.to_list()   # only first sentences cannot look back
    [[True, False], [True, False]]
  """
  _check_threshold('random_threshold', random_threshold)
  _check_threshold('random_next_threshold', random_next_threshold)
  flat = _Sentences(sentences)
  preceding = flat.flat_index(
      flat.doc_of, _int_between(tf.zeros_like(flat.position), flat.position, random_fn))
  # The last sentence's draw points past its document; it always takes a random one instead.
  following = flat.flat_index(
      flat.doc_of, _int_between(flat.position + 1, flat.length, random_fn))
  random_index = _random_other_document(flat, random_fn)
  take_random = (_coin(flat, random_fn) > random_threshold) | flat.is_last
  random_or_following = tf.where(take_random, random_index, following)
  not_preceding = (_coin(flat, random_fn) > random_next_threshold) | flat.is_first
  second = flat.take(tf.where(not_preceding, random_or_following, preceding))
  return second, flat.shaped(not_preceding)
