"""Tests of official/nlp/modeling/layers/masked_lm_mask_generator.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling.layers.masked_lm_mask_generator import MaskedLMMaskGenerator

VOCAB, MASK_ID, CLS_ID, SEP_ID = 1000, 4, 2, 3


def _batch(rng, batch=2000, seq=64):
  """Random ids in [5, VOCAB) with [CLS] first, [SEP] last and 0-padding of random length."""
  ids = rng.integers(5, VOCAB, size=(batch, seq))
  lengths = rng.integers(seq // 2, seq + 1, size=batch)
  ids[np.arange(seq)[None, :] >= lengths[:, None]] = 0
  ids[:, 0] = CLS_ID
  ids[np.arange(batch), lengths - 1] = SEP_ID
  return ids, lengths


def _generator(**kwargs):
  options = dict(vocabulary_size=VOCAB, mask_selection_rate=0.15, mask_token_id=MASK_ID,
                 mask_selection_length=20, unselectable_token_ids=[0, CLS_ID, SEP_ID], seed=1)
  options.update(kwargs)
  return MaskedLMMaskGenerator(**options)


def test_rates_positions_and_unselectable():
  ids, lengths = _batch(np.random.default_rng(0))
  out = {k: v.numpy() for k, v in _generator()(tf.constant(ids, tf.int32)).items()}
  assert out["token_ids"].shape == ids.shape and out["mask_positions"].shape == (len(ids), 20)
  assert out["mask_ids"].dtype == np.int32 and out["mask_weights"].dtype == np.float32
  selectable = lengths - 2
  counts = out["mask_weights"].sum(axis=1)
  assert abs(counts.sum() / selectable.sum() - 0.15) < 0.01
  masked = kept = total = 0
  for row in range(len(ids)):
    count = int(counts[row])
    assert out["mask_weights"][row, :count].all() and not out["mask_weights"][row, count:].any()
    positions = out["mask_positions"][row, :count]
    assert (np.diff(positions) > 0).all()  # unique and sorted
    assert not out["mask_positions"][row, count:].any() and not out["mask_ids"][row, count:].any()
    original = ids[row, positions]
    assert not np.isin(original, [0, CLS_ID, SEP_ID]).any()
    np.testing.assert_array_equal(out["mask_ids"][row, :count], original)
    untouched = np.ones(ids.shape[1], bool)
    untouched[positions] = False
    np.testing.assert_array_equal(out["token_ids"][row, untouched], ids[row, untouched])
    now = out["token_ids"][row, positions]
    masked += int((now == MASK_ID).sum())
    kept += int((now == original).sum())
    total += count
  assert abs(masked / total - 0.8) < 0.02
  assert abs(kept / total - 0.1) < 0.02
  assert abs((total - masked - kept) / total - 0.1) < 0.02


def test_selection_capped_and_default_width():
  ids = np.arange(5, 105)[None, :].repeat(4, axis=0)
  out = _generator(mask_selection_rate=0.5, mask_selection_length=10)(tf.constant(ids))
  assert (out["mask_weights"].numpy().sum(axis=1) == 10).all()
  wide = _generator(mask_selection_length=None)(tf.constant(ids))
  assert wide["mask_positions"].shape == (4, 100)
  assert abs(wide["mask_weights"].numpy().sum() / 400 - 0.15) < 0.05


def test_works_in_dataset_map_and_on_ragged_input():
  ids, _ = _batch(np.random.default_rng(1), batch=8, seq=16)
  generator = _generator(mask_selection_length=4)
  dataset = tf.data.Dataset.from_tensor_slices(ids).batch(4).map(generator)
  outputs = list(dataset)
  assert len(outputs) == 2 and outputs[0]["mask_positions"].shape == (4, 4)
  single = tf.data.Dataset.from_tensor_slices(ids).map(generator)
  assert next(iter(single))["mask_positions"].shape == (4,)
  ragged = tf.ragged.constant([[CLS_ID, 10, 11, 12, 13, SEP_ID], [CLS_ID, 20, SEP_ID]])
  out = _generator(mask_selection_rate=0.5, mask_selection_length=3)(ragged)
  assert isinstance(out["token_ids"], tf.RaggedTensor)
  assert out["token_ids"].row_lengths().numpy().tolist() == [6, 3]
  positions, weights = out["mask_positions"].numpy(), out["mask_weights"].numpy()
  assert (positions[1][weights[1] > 0] == 1).all()


def test_get_config_round_trip():
  generator = _generator(mask_token_rate=0.7, random_token_rate=0.2, name="mlm_masker")
  config = generator.get_config()
  clone = MaskedLMMaskGenerator.from_config(config)
  assert clone.get_config() == config
  restored = tf_keras.layers.deserialize(tf_keras.layers.serialize(generator))
  assert isinstance(restored, MaskedLMMaskGenerator) and restored.get_config() == config


def test_bad_arguments_raise():
  with pytest.raises(ValueError, match="mask_token_id"):
    MaskedLMMaskGenerator(vocabulary_size=10, mask_selection_rate=0.15, mask_token_id=10)
  with pytest.raises(ValueError, match="random_token_rate"):
    MaskedLMMaskGenerator(vocabulary_size=10, mask_selection_rate=0.15, mask_token_id=1,
                          mask_token_rate=0.9, random_token_rate=0.2)
