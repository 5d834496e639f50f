"""Packed rows in pretraining-data creation: `pack=True` of
official/nlp/data/{create_pretraining_data,tfrecord_writer,data_metadata}.py and data_tools'
--pack (the layout itself: tests/nlp/data/test_pretraining_instances.py).

The corpus numbers its tokens: document d holds `t<first>`, `t<first + 1>`, ... in reading order,
so every piece of a record tells which tokens of which document it holds.
"""

import logging
import random

import numpy as np
import pytest
import tensorflow as tf

from data_tools import create_pretraining_data as cli
from official.nlp.data import create_pretraining_data as cpd
from official.nlp.data import data_metadata
from official.nlp.data import tfrecord_writer

SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
CLS, SEP, MASK = 2, 3, 4
SEQ = 32


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  """40 documents of 3-150 tokens in sentences of 2-9; returns the directory and the documents'
  token numbers."""
  root = tmp_path_factory.mktemp('pack')
  rng = random.Random(0)
  documents, texts, number = [], [], 0
  for _ in range(40):
    length = rng.randint(3, 150)
    documents.append(list(range(number, number + length)))
    sentences, start = [], number
    while start < number + length:
      end = min(start + rng.randint(2, 9), number + length)
      sentences.append(' '.join(f't{i}' for i in range(start, end)))
      start = end
    texts.append('\n'.join(sentences))
    number += length
  (root / 'corpus.txt').write_text('\n\n'.join(texts) + '\n', encoding='utf-8')
  vocab = SPECIALS + [f't{i}' for i in range(number)]
  (root / 'vocab.txt').write_text(''.join(t + '\n' for t in vocab), encoding='utf-8')
  return root, documents


def _create(root, name, **kwargs):
  options = dict(max_seq_length=SEQ, max_predictions_per_seq=10, masked_lm_prob=0.3, pack=True,
                 dupe_factor=1, num_workers=1)
  options.update(kwargs)
  output = str(root / name)
  metadata = cpd.create_pretraining_data(str(root / 'corpus.txt'), output, str(root / 'vocab.txt'),
                                         **options)
  return output, metadata


def _parse(path, metadata):
  """All records, parsed as one batch by `tf.io.parse_example` (numpy arrays)."""
  spec = {name: tf.io.FixedLenFeature([SEQ], tf.int64) for name in metadata['feature_names']}
  spec['next_sentence_labels'] = tf.io.FixedLenFeature([1], tf.int64)
  if not metadata['dynamic']:
    width = metadata['max_predictions_per_seq']
    spec.update({'masked_lm_positions': tf.io.FixedLenFeature([width], tf.int64),
                 'masked_lm_ids': tf.io.FixedLenFeature([width], tf.int64),
                 'masked_lm_weights': tf.io.FixedLenFeature([width], tf.float32)})
  records = tf.stack(list(tf.data.TFRecordDataset(path)))
  return {name: value.numpy() for name, value in tf.io.parse_example(records, spec).items()}


def _pieces(ids, mask):
  """Each piece `[CLS] tokens [SEP]` of a row as its token numbers."""
  pieces, start = [], None
  for column, token in enumerate(ids[mask == 1].tolist()):
    if token == CLS:
      assert start is None
      start = column
    elif token == SEP:
      pieces.append([t - len(SPECIALS) for t in ids[start + 1:column].tolist()])
      start = None
  assert start is None
  return pieces


def _check_layout(batch, documents, copies=1):
  """Every piece is a run of tokens of one document, the pieces hold every token `copies` times
  (the documents exactly: nothing lost, cut off or repeated), `position_ids` restart at every
  [CLS]; returns the number of pieces."""
  document_of = {n: d for d, numbers in enumerate(documents) for n in numbers}
  pieces = []
  for ids, mask, positions in zip(batch['input_ids'], batch['input_mask'], batch['position_ids']):
    length = int(mask.sum())
    assert mask[:length].all() and not ids[length:].any() and not positions[length:].any()
    starts = np.flatnonzero(ids[:length] == CLS)
    assert starts[0] == 0
    last_start = starts[np.searchsorted(starts, np.arange(length), 'right') - 1]
    np.testing.assert_array_equal(positions[:length], np.arange(length) - last_start)
    pieces += _pieces(ids, mask)
  for piece in pieces:
    assert piece == list(range(piece[0], piece[0] + len(piece))), piece
    assert document_of[piece[0]] == document_of[piece[-1]]
  counts = np.bincount(np.concatenate(pieces), minlength=len(document_of))
  assert (counts == copies).all()
  assert not batch['segment_ids'].any() and not batch['next_sentence_labels'].any()
  return len(pieces)


def test_dynamic_packed_records_hold_the_documents_exactly(data_dir):
  root, documents = data_dir
  path, metadata = _create(root, 'dynamic.tfrecord', dynamic=True)
  assert metadata['feature_names'] == ['input_ids', 'input_mask', 'segment_ids', 'position_ids',
                                       'next_sentence_labels']
  assert metadata['packed'] is True and metadata['next_sentence'] is False
  batch = _parse(path, metadata)
  assert _check_layout(batch, documents) == metadata['num_pieces'] > len(documents)
  padding = int((batch['input_mask'] == 0).sum())
  assert padding == metadata['num_padding_tokens'] == batch['input_mask'].size - metadata[
      'num_tokens']
  assert data_metadata.padding_fraction(metadata) == padding / batch['input_mask'].size < 0.03


def test_masked_packed_records(data_dir):
  root, documents = data_dir
  path, metadata = _create(root, 'masked.tfrecord', dupe_factor=3)
  batch = _parse(path, metadata)
  counts = batch['masked_lm_weights'].sum(axis=1).astype(int)
  rows = np.arange(len(counts))[:, None]
  valid = np.arange(10) < counts[:, None]
  positions = batch['masked_lm_positions']
  assert not np.isin(batch['masked_lm_ids'][valid], [CLS, SEP]).any()
  assert (batch['input_ids'][rows, positions][valid] == MASK).mean() == pytest.approx(0.8, abs=0.1)
  assert metadata['num_masked_tokens'] == counts.sum()
  assert counts.sum() / batch['input_mask'].sum() == pytest.approx(0.3, abs=0.02)
  # With the masked tokens restored, the rows hold the documents, once per dupe.
  original = batch['input_ids'].copy()
  original[rows, positions] = np.where(valid, batch['masked_lm_ids'], original[rows, positions])
  _check_layout(dict(batch, input_ids=original), documents, copies=3)
  again, _ = _create(root, 'again.tfrecord', dupe_factor=3)
  with open(again, 'rb') as a, open(path, 'rb') as b:
    assert a.read() == b.read()  # deterministic for the seed


def test_pack_refusals_and_budget_warning(data_dir, caplog):
  root, _ = data_dir
  with pytest.raises(ValueError, match='^pack and sentence_order cannot be combined'):
    _create(root, 'x.tfrecord', sentence_order=True)
  with pytest.raises(ValueError, match=r'max_seq_length must be >= 8 with pack \(MIN_PIECE_ROOM\), '
                     'found 7'):
    _create(root, 'x.tfrecord', max_seq_length=7)
  with caplog.at_level(logging.WARNING):
    _create(root, 'capped.tfrecord', max_predictions_per_seq=6)
  assert ('max_predictions_per_seq=6 caps the masking budget of a full row: masked_lm_prob=0.3 of '
          'max_seq_length=32 is 10 tokens, so full rows mask 6 (a rate of 0.188); raise '
          'max_predictions_per_seq to 10') in caplog.text


def test_cli_pack(data_dir, capsys):
  root, _ = data_dir
  common = ['prog', f"--input_file={root / 'corpus.txt'}", f"--vocab_file={root / 'vocab.txt'}",
            '--pack', f'--max_seq_length={SEQ}', '--num_workers=1', '--dupe_factor=1']
  assert cli.main(common + [f"--output_file={root / 'cli.tfrecord'}"]) == 0
  metadata = data_metadata.load_metadata(str(root / 'cli.tfrecord'))
  assert metadata['packed'] and 'position_ids' in metadata['feature_names']
  assert 'padding fraction' in capsys.readouterr().err
  assert cli.main(common + [f"--output_file={root / 'bad.tfrecord'}", '--sentence_order']) == 1
  assert ('error: pack and sentence_order cannot be combined'
          in capsys.readouterr().err.splitlines()[-1])


def test_encoder_writes_position_ids_as_tensorflow_does():
  rng = np.random.default_rng(0)
  batch, seq, width = 5, 40, 6
  lengths = rng.integers(10, seq + 1, batch)
  inside = np.arange(seq) < lengths[:, None]
  ids = np.where(inside, rng.integers(5, 3000, (batch, seq)), 0)
  positions = np.where(inside, np.arange(seq) % 17, 0)
  masked_positions = np.sort(rng.integers(1, 10, (batch, width)), axis=1)
  masked_ids = rng.integers(5, 3000, (batch, width))
  counts = np.full(batch, width)
  framed, framed_lengths = tfrecord_writer.encode_pretraining_records(
      ids, lengths, lengths, np.zeros(batch, int), masked_positions, masked_ids, counts,
      vocab_size=3000, position_ids=positions)
  for row, record in enumerate(tfrecord_writer.split_records(framed, framed_lengths)):
    ints = {'input_ids': ids[row], 'input_mask': inside[row], 'segment_ids': np.zeros(seq),
            'position_ids': positions[row], 'masked_lm_positions': masked_positions[row],
            'masked_lm_ids': masked_ids[row], 'next_sentence_labels': [0]}
    feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))
               for name, values in ints.items()}
    feature['masked_lm_weights'] = tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * 6))
    expected = tf.train.Example(features=tf.train.Features(feature=feature))
    assert tf.train.Example.FromString(record[12:-4]) == expected
  with pytest.raises(ValueError, match=r'position_ids must be \[batch, seq\] = \[5, 40\] with '
                     r'values in \[0, 40\); found shape \[5, 40\], values in \[0, 40\]'):
    tfrecord_writer.encode_pretraining_records(ids, lengths, lengths, np.zeros(batch, int),
                                               position_ids=np.where(inside, 40, 0))
