"""Tests for official/nlp/data/xlnet_pretrain_dataloader.py (also importable from
pretrain_dataloader, Model Garden's path)."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import pretrain_dataloader
from official.nlp.data import xlnet_pretrain_dataloader as pd

SEQ, CLS, SEP = 16, 3, 4


def _write(path, num_examples=6):
  rng = np.random.default_rng(0)
  with tf.io.TFRecordWriter(str(path)) as writer:
    for _ in range(num_examples):
      ids = rng.integers(5, 50, SEQ)
      ids[0], ids[7], ids[-1] = CLS, SEP, SEP
      boundaries = np.array([0, 1, 3, 4, 6, 7, 9, 12, 13, 15])
      feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))
                 for name, values in (('input_word_ids', ids), ('input_type_ids', ids * 0),
                                      ('boundary_indices', boundaries))}
      writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def _config(path, **kwargs):
  defaults = dict(input_path=str(path), seq_length=SEQ, max_predictions_per_seq=5,
                  global_batch_size=3, is_training=False, reuse_length=0, permutation_size=8,
                  leak_ratio=0.0, min_num_tokens=1, max_num_tokens=3, min_num_words=1,
                  max_num_words=2)
  defaults.update(kwargs)
  return pd.XLNetPretrainDataConfig(**defaults)


@pytest.mark.slow
@pytest.mark.parametrize('strategy', pd.XLNET_SAMPLE_STRATEGIES)
@pytest.mark.parametrize('reuse_length', [0, 8])
def test_targets_and_factorization_order(tmp_path, strategy, reuse_length):
  _write(tmp_path / 'x.tfrecord')
  config = _config(tmp_path / 'x.tfrecord', sample_strategy=strategy, reuse_length=reuse_length)
  batch = {k: v.numpy() for k, v in
           next(iter(pd.XLNetPretrainDataLoader(config).load())).items()}
  assert batch['permutation_mask'].shape == (3, SEQ, SEQ)
  assert batch['target_mapping'].shape == (3, 5, SEQ)
  for i in range(3):
    ids, targets, mask = (batch['input_word_ids'][i], batch['masked_tokens'][i],
                          batch['permutation_mask'][i])
    positions = np.flatnonzero(targets)
    assert 1 <= len(positions) <= 5
    assert not np.isin(ids[positions], [CLS, SEP]).any()
    n = len(positions)
    np.testing.assert_array_equal(batch['target_mask'][i], [1] * n + [0] * (5 - n))
    np.testing.assert_array_equal(batch['target'][i][:n], ids[positions])
    np.testing.assert_array_equal(batch['target_mapping'][i][:n], np.eye(SEQ, dtype=int)[positions])
    assert not batch['target_mapping'][i][n:].any()
    parts = [np.arange(SEQ)] if not reuse_length else [np.arange(8), np.arange(8, SEQ)]
    for part in parts:
      block = mask[np.ix_(part, part)]
      is_target = targets[part]
      context = ~is_target
      # Context sees all context and no target; a target sees all context, not itself, and of
      # two targets exactly one sees the other (a strict order).
      assert block[np.ix_(context, context)].all() and not block[np.ix_(context, is_target)].any()
      assert block[np.ix_(is_target, context)].all()
      t = block[np.ix_(is_target, is_target)]
      assert not np.diag(t).any()
      np.testing.assert_array_equal(t + t.T, 1 - np.eye(len(t), dtype=int))
    if reuse_length:
      assert not mask[:8, 8:].any() and mask[8:, :8].all()


def test_whole_word_targets_are_whole_words(tmp_path):
  _write(tmp_path / 'x.tfrecord')
  config = _config(tmp_path / 'x.tfrecord', sample_strategy='whole_word')
  targets = next(iter(pd.XLNetPretrainDataLoader(config).load()))['masked_tokens'].numpy()
  # The content tokens of the words of `boundaries` ([SEP] at 7 is never a target).
  words = [(1, 3), (3, 4), (4, 6), (6, 7), (8, 9), (9, 12), (12, 13), (13, 15)]
  for row in targets:
    assert not row[[0, 7, 15]].any()
    touched = [row[b:e].all() for b, e in words if row[b:e].any()]
    assert sum(not whole for whole in touched) <= 1  # only where the budget ran out


def test_config_errors(tmp_path):
  _write(tmp_path / 'x.tfrecord')
  with pytest.raises(ValueError, match='max_predictions_per_seq must be set'):
    pd.XLNetPretrainDataLoader(
        _config(tmp_path / 'x.tfrecord', max_predictions_per_seq=None)).load()
  with pytest.raises(ValueError, match='multiple of `permutation_size`'):
    pd.XLNetPretrainDataLoader(_config(tmp_path / 'x.tfrecord', permutation_size=5)).load()


def test_model_gardens_path_names_the_same_loader():
  assert pretrain_dataloader.XLNetPretrainDataConfig is pd.XLNetPretrainDataConfig
  assert pretrain_dataloader.XLNetPretrainDataLoader is pd.XLNetPretrainDataLoader
