"""Tests of official/nlp/data/pretraining_instances.py: packed rows (`pack_rows`,
`build_packed_arrays`) and the masking both layouts share (`mask_flat_rows`).

Token ids are numbers that say where a token comes from: corpus token k has id `FIRST + k`, so the
pieces of a row tell which tokens they hold.
"""

import numpy as np
import pytest

from official.nlp.data import pretraining_instances as pi

CLS, SEP, MASK, FIRST = 2, 3, 4, 10


def _corpus(num_documents=120, seed=0, max_length=300):
  """Sentence and document offsets of documents of 1-`max_length` tokens (sentences of 1-20)."""
  rng = np.random.default_rng(seed)
  sentence_lengths, document_starts = [], [0]
  for _ in range(num_documents):
    left = int(rng.integers(1, max_length + 1))
    while left:
      sentence_lengths.append(min(left, int(rng.integers(1, 21))))
      left -= sentence_lengths[-1]
    document_starts.append(len(sentence_lengths))
  sentence_starts = np.concatenate([[0], np.cumsum(sentence_lengths)]).astype(np.int64)
  token_ids = (FIRST + np.arange(sentence_starts[-1])).astype(np.int32)
  return token_ids, sentence_starts, np.array(document_starts, np.int64)


def _special(vocab_size, continuation_every=0):
  is_continuation = np.zeros(vocab_size, bool)
  if continuation_every:
    is_continuation[FIRST::continuation_every] = True  # every k-th token continues a word
  return pi.SpecialIds(CLS, SEP, MASK, vocab_size, is_continuation)


def _pieces(ids, length):
  """The token lists of the pieces `[CLS] ... [SEP]` of a row's first `length` ids."""
  pieces, start = [], None
  for column, token in enumerate(ids[:length].tolist()):
    if token == CLS:
      assert start is None, ids
      start = column
    elif token == SEP:
      pieces.append(ids[start + 1:column].tolist())
      start = None
  assert start is None, ids  # every piece closed
  return pieces


def _pack(seq, seed=0, **options):
  token_ids, sentence_starts, document_starts = _corpus(seed=seed)
  documents = np.arange(document_starts.size - 1)
  rows = pi.pack_rows(documents, sentence_starts, document_starts, seq,
                      np.random.default_rng(seed))
  options = pi.InstanceOptions(seq, options.pop('max_predictions_per_seq', seq), pack=True,
                               **options)
  special = _special(int(token_ids.max()) + 1, 3 if options.do_whole_word_mask else 0)
  arrays = pi.build_packed_arrays(token_ids, rows, options, special, np.random.default_rng(1))
  return token_ids, sentence_starts, document_starts, rows, arrays


@pytest.mark.parametrize('seq', [16, 128, 512])
def test_packed_rows_hold_the_documents_in_order(seq):
  token_ids, sentence_starts, document_starts, rows, arrays = _pack(seq, dynamic=True)
  assert len(arrays) == rows.num_rows and arrays.masked_lm_positions is None
  stream = []
  for row in range(len(arrays)):
    length = int(arrays.lengths[row])
    assert not arrays.input_ids[row, length:].any() and not arrays.position_ids[row, length:].any()
    stream += [token for piece in _pieces(arrays.input_ids[row], length) for token in piece]
  # The pieces' tokens, row after row, are the documents back to back in the packing's order.
  token_starts = sentence_starts[document_starts]
  documents = [token_ids[token_starts[d]:token_starts[d + 1]]
               for d in np.random.default_rng(0).permutation(document_starts.size - 1)]
  assert stream == np.concatenate(documents).tolist()
  assert (arrays.segment_starts == arrays.lengths).all() and not arrays.next_sentence_labels.any()


@pytest.mark.parametrize('seq', [16, 128])
def test_rows_are_filled_and_documents_cut_only_at_a_row_end(seq):
  _, sentence_starts, document_starts, rows, arrays = _pack(seq, dynamic=True)
  assert (arrays.lengths <= seq).all()
  # A row is closed early only when a piece (with its [CLS] and [SEP]) has less than 8 slots.
  assert (seq - arrays.lengths[:-1] < pi.MIN_PIECE_ROOM).all()
  document_ends = sentence_starts[document_starts[rows.document + 1]]
  cut = rows.end < document_ends  # the document goes on in the next row
  sizes = rows.end - rows.start + 2
  row_ends = np.cumsum(np.bincount(rows.row, weights=sizes)).astype(int)
  piece_ends = np.cumsum(sizes)
  assert np.isin(piece_ends[cut], row_ends).all() and (arrays.lengths[rows.row[cut]] == seq).all()
  assert (rows.start[1:][cut[:-1]] == rows.end[:-1][cut[:-1]]).all()  # continued from there
  assert (rows.row[1:][cut[:-1]] == rows.row[:-1][cut[:-1]] + 1).all()


def test_position_ids_restart_at_every_cls():
  *_, arrays = _pack(64, dynamic=True)
  for ids, positions, length in zip(arrays.input_ids, arrays.position_ids, arrays.lengths):
    starts = np.flatnonzero(ids[:length] == CLS)
    last_start = starts[np.searchsorted(starts, np.arange(length), 'right') - 1]
    np.testing.assert_array_equal(positions[:length], np.arange(length) - last_start)


@pytest.mark.parametrize('whole_word, ngram', [(False, None), (True, None), (True, 3)])
def test_packed_masking_skips_specials_and_meets_the_rate(whole_word, ngram):
  *_, unmasked = _pack(128, dynamic=True)
  *_, arrays = _pack(128, masked_lm_prob=0.3, do_whole_word_mask=whole_word, max_ngram_size=ngram,
                     max_predictions_per_seq=40)
  np.testing.assert_array_equal(arrays.position_ids, unmasked.position_ids)
  budgets = pi.num_predictions(arrays.lengths, 0.3, 40)
  for row in range(len(arrays)):
    count = int(arrays.masked_counts[row])
    positions = arrays.masked_lm_positions[row, :count]
    original = arrays.input_ids[row].copy()
    original[positions] = arrays.masked_lm_ids[row, :count]
    np.testing.assert_array_equal(original, unmasked.input_ids[row])
    assert not np.isin(original[positions], [CLS, SEP]).any() and (np.diff(positions) > 0).all()
    assert positions.min(initial=1) > 0 and count <= budgets[row]
    assert not arrays.masked_lm_positions[row, count:].any()
  assert arrays.masked_counts.sum() / arrays.lengths.sum() == pytest.approx(0.3, abs=0.01)
  actions = arrays.input_ids[np.arange(len(arrays))[:, None], arrays.masked_lm_positions]
  valid = np.arange(40) < arrays.masked_counts[:, None]
  assert np.mean(actions[valid] == MASK) == pytest.approx(0.8, abs=0.03)


def test_padding_is_nearly_zero():
  for seq in (128, 512):
    *_, arrays = _pack(seq, dynamic=True)
    padding = 1 - arrays.lengths.sum() / (len(arrays) * seq)
    assert padding < 0.02, (seq, padding)


def test_masking_is_one_function_for_both_layouts():
  """An unpacked row and a packed row of one piece are the same flat layout: same masks."""
  token_ids, sentence_starts, document_starts = _corpus(num_documents=1, max_length=60)
  special = _special(int(token_ids.max()) + 1)
  options = pi.InstanceOptions(64, 12, 0.2, 0.0, next_sentence=False)
  instances = pi.pack_documents(np.arange(1), sentence_starts, document_starts, 64, 0.0,
                                np.random.default_rng(0), next_sentence=False)
  single = pi.build_instance_arrays(token_ids, instances, options, special,
                                    np.random.default_rng(3))
  rows = pi.pack_rows(np.arange(1), sentence_starts, document_starts, 64, np.random.default_rng(0))
  packed = pi.build_packed_arrays(token_ids, rows, options, special, np.random.default_rng(3))
  assert len(single) == len(packed) == 1
  for name in ('input_ids', 'lengths', 'masked_lm_positions', 'masked_lm_ids', 'masked_counts'):
    np.testing.assert_array_equal(getattr(single, name), getattr(packed, name), err_msg=name)


def test_pack_rows_refuses_rows_too_short_for_a_piece():
  _, sentence_starts, document_starts = _corpus(num_documents=2)
  with pytest.raises(ValueError, match='max_seq_length must be >= min_room >= 3 .* found '
                     'max_seq_length=6, min_room=8'):
    pi.pack_rows(np.arange(2), sentence_starts, document_starts, 6, np.random.default_rng(0))
