"""Tests for official/nlp/modeling/ops/segment_extractor.py ."""

import functools

import pytest
import tensorflow as tf

from official.nlp.modeling import ops
from official.nlp.modeling.ops import segment_extractor

DOCS = [[b'a0', b'a1', b'a2', b'a3'], [b'b0', b'b1'], [b'c0', b'c1', b'c2']]


def _where(sentence):
  """(document, position) of a sentence of DOCS."""
  for d, doc in enumerate(DOCS):
    if sentence in doc:
      return d, doc.index(sentence)
  raise AssertionError(sentence)


def test_exported_from_the_ops_package():
  assert ops.get_next_sentence_labels is segment_extractor.get_next_sentence_labels
  assert ops.get_sentence_order_labels is segment_extractor.get_sentence_order_labels


def test_next_sentence_always_next_where_there_is_one():
  second, is_next = ops.get_next_sentence_labels(tf.ragged.constant(DOCS), random_threshold=1.0)
  assert is_next.to_list() == [[True, True, True, False], [True, False], [True, True, False]]
  second = second.to_list()
  assert second[0][:3] == [b'a1', b'a2', b'a3'] and second[1][0] == b'b1'
  assert second[2][:2] == [b'c1', b'c2']
  # Last sentences get a sentence of another document.
  for d, doc in enumerate(second):
    assert _where(doc[-1])[0] != d


@pytest.mark.parametrize('seed', range(5))
def test_next_sentence_labels_agree_with_the_segments(seed):
  second, is_next = ops.get_next_sentence_labels(
      tf.ragged.constant(DOCS), random_threshold=0.5,
      random_fn=functools.partial(tf.random.stateless_uniform, seed=(seed, 7)))
  assert second.row_lengths().numpy().tolist() == [4, 2, 3]
  for d, (segments, labels) in enumerate(zip(second.to_list(), is_next.to_list())):
    for j, (segment, label) in enumerate(zip(segments, labels)):
      doc, position = _where(segment)
      if label:
        assert (doc, position) == (d, j + 1)
      else:
        assert doc != d


def test_next_sentence_all_random():
  _, is_next = ops.get_next_sentence_labels(tf.ragged.constant(DOCS), random_threshold=0.0)
  assert not any(sum(is_next.to_list(), []))


@pytest.mark.parametrize('seed', range(5))
def test_sentence_order_labels_agree_with_the_segments(seed):
  second, label = ops.get_sentence_order_labels(
      tf.ragged.constant(DOCS), random_threshold=0.5, random_next_threshold=0.5,
      random_fn=functools.partial(tf.random.stateless_uniform, seed=(seed, 3)))
  for d, (segments, labels) in enumerate(zip(second.to_list(), label.to_list())):
    assert labels[0]  # a first sentence has nothing before it
    for j, (segment, not_preceding) in enumerate(zip(segments, labels)):
      doc, position = _where(segment)
      if not_preceding:
        assert doc != d or position > j  # random, or following
      else:
        assert doc == d and position < j


def test_sentence_order_thresholds():
  sentences = tf.ragged.constant(DOCS)
  # random_next_threshold 1: every sentence but the first takes a preceding one.
  second, label = ops.get_sentence_order_labels(sentences, 1.0, 1.0)
  assert label.to_list() == [[True, False, False, False], [True, False], [True, False, False]]
  # ... and the first sentences (random_threshold 1) a following one of their document.
  for d, doc in enumerate(second.to_list()):
    assert _where(doc[0])[0] == d and _where(doc[0])[1] >= 1
  # random_threshold 0: the non-preceding ones are all random.
  second, label = ops.get_sentence_order_labels(sentences, 0.0, 0.0)
  assert all(sum(label.to_list(), []))
  for d, doc in enumerate(second.to_list()):
    assert all(_where(s)[0] != d for s in doc)


def test_runs_in_a_tf_function():
  @tf.function
  def pairs(sentences):
    return ops.get_next_sentence_labels(sentences, 1.0)[1].flat_values

  expected = [True, True, True, False, True, False, True, True, False]
  assert pairs(tf.ragged.constant(DOCS)).numpy().tolist() == expected


def test_errors():
  with pytest.raises(TypeError, match='sentences must be a RaggedTensor'):
    ops.get_next_sentence_labels(tf.constant([[b'a', b'b']]))
  with pytest.raises(ValueError, match=r'random_threshold must be in \[0, 1\], found 1.5'):
    ops.get_next_sentence_labels(tf.ragged.constant(DOCS), random_threshold=1.5)
  with pytest.raises(ValueError, match=r'random_next_threshold must be in \[0, 1\], found -0.1'):
    ops.get_sentence_order_labels(tf.ragged.constant(DOCS), random_next_threshold=-0.1)
  with pytest.raises(tf.errors.InvalidArgumentError, match='expected at least 2 documents'):
    ops.get_next_sentence_labels(tf.ragged.constant([[b'a', b'b']]))
