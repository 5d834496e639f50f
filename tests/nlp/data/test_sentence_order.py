"""Sentence-order prediction (ALBERT) in pretraining-data creation: `sentence_order=True` of
official/nlp/data/{pretraining_instances,create_pretraining_data}.py and data_tools'
--sentence_order.

The corpus numbers its tokens: document d holds `t<d*40>`, `t<d*40+1>`, ... in reading order, so a
record's segments tell where they came from and in which order they were written.
"""

import random

import numpy as np
import pytest
import tensorflow as tf

from data_tools import create_pretraining_data as cli
from official.nlp.data import create_pretraining_data as cpd
from official.nlp.data import pretraining_instances as pi

NUM_DOCS, PER_DOC = 12, 40
SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
VOCAB = SPECIALS + [f't{i}' for i in range(NUM_DOCS * PER_DOC)]
CLS, SEP = 2, 3


def _number(token_id):
  return token_id - len(SPECIALS)


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  root = tmp_path_factory.mktemp('sop')
  rng = random.Random(0)
  documents = []
  for d in range(NUM_DOCS):
    number, sentences = d * PER_DOC, []
    while True:
      length = rng.randint(2, 7)
      if number + length > (d + 1) * PER_DOC:
        break
      sentences.append(' '.join(f't{i}' for i in range(number, number + length)))
      number += length
    documents.append('\n'.join(sentences))
  (root / 'corpus.txt').write_text('\n\n'.join(documents) + '\n', encoding='utf-8')
  (root / 'vocab.txt').write_text(''.join(t + '\n' for t in VOCAB), encoding='utf-8')
  return root


def _records(path):
  spec = {'input_ids': tf.io.FixedLenFeature([32], tf.int64),
          'next_sentence_labels': tf.io.FixedLenFeature([1], tf.int64)}
  for raw in tf.data.TFRecordDataset(path):
    example = tf.io.parse_single_example(raw, spec)
    yield example['input_ids'].numpy(), int(example['next_sentence_labels'][0])


def _segments(ids):
  """The token numbers of A and B of `[CLS] A [SEP] B [SEP] 0...`."""
  assert ids[0] == CLS
  seps = np.flatnonzero(ids == SEP)
  assert len(seps) == 2, ids
  return [_number(t) for t in ids[1:seps[0]]], [_number(t) for t in ids[seps[0] + 1:seps[1]]]


def _check_pair(a, b, label):
  """A and B: consecutive runs of one document, in reading order unless the label says swapped."""
  for segment in (a, b):
    assert segment and segment == list(range(segment[0], segment[0] + len(segment))), segment
  assert a[0] // PER_DOC == b[0] // PER_DOC  # never a segment of another document
  if label:
    assert b[-1] < a[0], (a, b)
  else:
    assert a[-1] < b[0], (a, b)


def test_records_hold_ordered_or_swapped_segments_of_one_document(data_dir):
  output = str(data_dir / 'sop.tfrecord')
  metadata = cpd.create_pretraining_data(
      str(data_dir / 'corpus.txt'), output, str(data_dir / 'vocab.txt'), max_seq_length=32,
      dupe_factor=20, dynamic=True, sentence_order=True, short_seq_prob=0.3, num_workers=1)
  labels = []
  for ids, label in _records(output):
    _check_pair(*_segments(ids), label)
    labels.append(label)
  assert len(labels) == metadata['num_instances'] > 100
  assert metadata['sentence_order'] is True and metadata['next_sentence'] is True
  assert metadata['num_random_next'] == sum(labels)  # the swapped pairs
  assert 0.35 < np.mean(labels) < 0.65


def test_masked_records_and_nsp_records(data_dir):
  sop = cpd.create_pretraining_data(
      str(data_dir / 'corpus.txt'), str(data_dir / 'masked.tfrecord'), str(data_dir / 'vocab.txt'),
      max_seq_length=32, max_predictions_per_seq=5, dupe_factor=4, sentence_order=True,
      num_workers=1)
  assert sop['sentence_order'] is True and sop['num_masked_tokens'] > 0
  # Without the option: NSP, whose label-1 B segments come from other documents.
  nsp_path = str(data_dir / 'nsp.tfrecord')
  nsp = cpd.create_pretraining_data(
      str(data_dir / 'corpus.txt'), nsp_path, str(data_dir / 'vocab.txt'), max_seq_length=32,
      dupe_factor=4, dynamic=True, num_workers=1)
  assert nsp['sentence_order'] is False
  other_document = [label for ids, label in _records(nsp_path)
                    if (lambda a, b: a[0] // PER_DOC != b[0] // PER_DOC)(*_segments(ids))]
  assert other_document and all(other_document)


def test_pack_documents_sentence_order_ranges():
  # Documents of sentence lengths [3, 4, 2, 5], [6] (cut at a token), [1] (one token: B empty).
  lengths = [[3, 4, 2, 5], [6], [1]]
  sentence_starts = np.concatenate([[0], np.cumsum([n for doc in lengths for n in doc])])
  document_starts = np.concatenate([[0], np.cumsum([len(doc) for doc in lengths])])
  seen = set()
  for seed in range(20):
    packed = pi.pack_documents(np.arange(3), sentence_starts, document_starts, 64, 0.0,
                               np.random.default_rng(seed), sentence_order=True)
    np.testing.assert_array_equal(packed.document, packed.b_document)
    for i in range(len(packed)):
      a = (packed.a_start[i], packed.a_end[i])
      b = (packed.b_start[i], packed.b_end[i])
      first, last = sentence_starts[document_starts[packed.document[i]]], sentence_starts[
          document_starts[packed.document[i] + 1]]
      if packed.document[i] == 2:
        assert (a, b, packed.is_random_next[i]) == ((20, 21), (21, 21), 0)
        continue
      # Together A and B are the whole document (it fits in one instance), cut in two.
      earlier, later = sorted([a, b])
      assert (earlier[0], earlier[1], later[1]) == (first, later[0], last)
      assert packed.is_random_next[i] == (b[0] < a[0])
      seen.add((int(packed.document[i]), int(packed.is_random_next[i])))
  assert seen == {(0, 0), (0, 1), (1, 0), (1, 1)}


def test_string_token_api_sentence_order():
  documents = [[['a1', 'a2'], ['a3'], ['a4', 'a5']], [['b1', 'b2', 'b3']]]
  rng = random.Random(3)
  labels = set()
  for _ in range(10):
    for instance in cpd.create_instances_from_document(
        documents, 0, 32, 0.0, 0.15, 5, ['a1', 'a2', 'a3', 'a4', 'a5'], rng,
        sentence_order=True):
      assert instance.tokens[0] == '[CLS]' and instance.tokens.count('[SEP]') == 2
      labels.add(instance.is_random_next)
      assert 'b1' not in instance.tokens
  assert labels == {False, True}


def test_options_conflict_and_cli_flag(data_dir, capsys):
  with pytest.raises(ValueError, match='sentence_order needs segment pairs; it cannot be combined '
                     'with no_next_sentence'):
    cpd.create_pretraining_data(str(data_dir / 'corpus.txt'), str(data_dir / 'x.tfrecord'),
                                str(data_dir / 'vocab.txt'), sentence_order=True,
                                no_next_sentence=True)
  with pytest.raises(ValueError, match=r'sentence_order=True needs segment pairs'):
    pi.pack_documents(np.arange(1), np.array([0, 3]), np.array([0, 1]), 16, 0.0,
                      np.random.default_rng(0), next_sentence=False, sentence_order=True)
  output = str(data_dir / 'cli.tfrecord')
  status = cli.main(['create_pretraining_data', f'--input_file={data_dir / "corpus.txt"}',
                     f'--output_file={output}', f'--vocab_file={data_dir / "vocab.txt"}',
                     '--max_seq_length=32', '--dupe_factor=2', '--num_workers=1',
                     '--sentence_order'])
  assert status == 0
  assert 'swapped segments (sentence order):' in capsys.readouterr().err
  assert cpd.load_metadata(output)['sentence_order'] is True
  status = cli.main(['create_pretraining_data', f'--input_file={data_dir / "corpus.txt"}',
                     f'--output_file={output}', f'--vocab_file={data_dir / "vocab.txt"}',
                     '--sentence_order', '--no_next_sentence'])
  assert status == 1
  assert 'cannot be combined with no_next_sentence' in capsys.readouterr().err
