"""Tests for official/nlp/data/pretrain_dataloader.py."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import pretrain_dataloader
from tests.nlp.data import pretraining_records


def _config(path, **kwargs):
  defaults = dict(input_path=path, seq_length=16, max_predictions_per_seq=4, global_batch_size=4,
                  is_training=False, drop_remainder=False)
  defaults.update(kwargs)
  return pretrain_dataloader.BertPretrainDataConfig(**defaults)


def _values(example, name):
  feature = example.features.feature[name]
  return list(getattr(feature, feature.WhichOneof('kind')).value)


@pytest.mark.parametrize('v2_names, gzip', [(False, False), (True, False), (False, True)])
def test_reads_v1_v2_and_gzip_records(tmp_path, v2_names, gzip):
  path = str(tmp_path / 'data.tfrecord')
  examples = pretraining_records.write_records(path, 6, v2_names=v2_names, gzip=gzip)
  params = _config(path, use_v2_feature_names=v2_names,
                   file_type='tfrecord_compressed' if gzip else 'tfrecord')
  batches = list(pretrain_dataloader.BertPretrainDataLoader(params).load())
  assert [b['input_word_ids'].shape.as_list() for b in batches] == [[4, 16], [2, 16]]
  first = batches[0]
  assert first['masked_lm_positions'].shape == (4, 4)
  assert first['next_sentence_labels'].shape == (4, 1)
  assert first['input_word_ids'].dtype == tf.int32
  assert first['masked_lm_weights'].dtype == tf.float32
  word_name = 'input_word_ids' if v2_names else 'input_ids'
  type_name = 'input_type_ids' if v2_names else 'segment_ids'
  np.testing.assert_array_equal(first['input_word_ids'][1], _values(examples[1], word_name))
  np.testing.assert_array_equal(first['input_type_ids'][2], _values(examples[2], type_name))
  np.testing.assert_array_equal(first['masked_lm_ids'][3], _values(examples[3], 'masked_lm_ids'))
  np.testing.assert_allclose(first['masked_lm_weights'][0], _values(examples[0],
                                                                    'masked_lm_weights'))


def test_globs_and_comma_lists_and_training_repeat(tmp_path):
  for i in range(3):
    pretraining_records.write_records(str(tmp_path / f'train-{i}.tfrecord'), 5, seed=i)
  params = _config(f'{tmp_path}/train-0*.tfrecord,{tmp_path}/train-[12].tfrecord',
                   is_training=True, drop_remainder=True, shuffle_buffer_size=8, seed=1)
  assert len(pretrain_dataloader.list_input_files(params.input_path)) == 3
  batches = list(pretrain_dataloader.BertPretrainDataLoader(params).load().take(10))
  assert len(batches) == 10  # 15 records repeat forever in training
  params = _config([str(tmp_path / 'train-0.tfrecord'), str(tmp_path / 'train-1.tfrecord')])
  total = sum(b['input_mask'].shape[0] for b in pretrain_dataloader.BertPretrainDataLoader(
      params).load())
  assert total == 10


def test_per_replica_batch_and_sharding(tmp_path):
  for i in range(2):
    pretraining_records.write_records(str(tmp_path / f'd-{i}.tfrecord'), 4, seed=i)
  params = _config(str(tmp_path / 'd-*.tfrecord'), global_batch_size=4)
  context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1,
                                       num_replicas_in_sync=2)
  batches = list(pretrain_dataloader.BertPretrainDataLoader(params).load(context))
  # One file of 4 records for this pipeline, per-replica batch 2.
  assert [b['input_word_ids'].shape[0] for b in batches] == [2, 2]


def test_without_next_sentence_labels(tmp_path):
  path = str(tmp_path / 'd.tfrecord')
  pretraining_records.write_records(path, 4, next_sentence=False)
  params = _config(path, use_next_sentence_label=False)
  batch = next(iter(pretrain_dataloader.BertPretrainDataLoader(params).load()))
  assert 'next_sentence_labels' not in batch


def test_empty_glob_names_the_pattern(tmp_path):
  params = _config(str(tmp_path / 'nothing-*.tfrecord'))
  with pytest.raises(FileNotFoundError, match=r"pattern '.*nothing-\*.tfrecord' matches no files"):
    pretrain_dataloader.BertPretrainDataLoader(params).load()
  with pytest.raises(FileNotFoundError, match='input_path is empty'):
    pretrain_dataloader.BertPretrainDataLoader(_config('')).load()


def test_wrong_sequence_length_names_file_feature_and_shape(tmp_path):
  path = str(tmp_path / 'seq16.tfrecord')
  pretraining_records.write_records(path, 2, seq_length=16)
  params = _config(path, seq_length=32)
  with pytest.raises(ValueError) as e:
    pretrain_dataloader.BertPretrainDataLoader(params).load()
  assert str(e.value).startswith(f"{path}: feature 'input_ids' is int64[16], expected int64[32]")


def test_missing_feature_names_file_and_feature(tmp_path):
  path = str(tmp_path / 'v1.tfrecord')
  pretraining_records.write_records(path, 2)
  params = _config(path, use_v2_feature_names=True)
  with pytest.raises(ValueError) as e:
    pretrain_dataloader.BertPretrainDataLoader(params).load()
  assert str(e.value).startswith(f"{path}: missing feature 'input_word_ids' (expected int64[16])")
  assert 'use_v2_feature_names' in str(e.value)


def test_gzip_read_as_plain_is_explained(tmp_path):
  path = str(tmp_path / 'z.tfrecord')
  pretraining_records.write_records(path, 2, gzip=True)
  with pytest.raises(ValueError, match='tfrecord_compressed'):
    pretrain_dataloader.BertPretrainDataLoader(_config(path)).load()


def test_empty_file_is_reported(tmp_path):
  path = tmp_path / 'empty.tfrecord'
  path.write_bytes(b'')
  with pytest.raises(ValueError, match='empty.tfrecord: holds no records'):
    pretrain_dataloader.BertPretrainDataLoader(_config(str(path))).load()


def test_dummy_dataset_shapes_and_labels():
  params = _config('dummy', global_batch_size=3, is_training=True)
  batch = next(iter(pretrain_dataloader.dummy_dataset(params, vocab_size=30)))
  assert batch['input_word_ids'].shape == (3, 16)
  assert batch['masked_lm_positions'].shape == (3, 4)
  assert int(tf.reduce_max(batch['input_word_ids'])) < 30
  np.testing.assert_array_equal(
      tf.gather(batch['input_word_ids'], batch['masked_lm_positions'], batch_dims=1),
      batch['masked_lm_ids'])


def _write_with_our_tool(tmp_path, **kwargs):
  from official.nlp.data import create_pretraining_data  # pylint: disable=g-import-not-at-top
  vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + [f'w{i}' for i in range(40)]
  vocab_file = tmp_path / 'vocab.txt'
  vocab_file.write_text('\n'.join(vocab) + '\n')
  text = tmp_path / 'corpus.txt'
  rng = np.random.default_rng(0)
  documents = ['\n'.join(' '.join(f'w{i}' for i in rng.integers(0, 40, 8)) for _ in range(6))
               for _ in range(10)]
  text.write_text('\n\n'.join(documents) + '\n')
  output = tmp_path / 'train.tfrecord'
  create_pretraining_data.create_pretraining_data(
      str(text), str(output), str(vocab_file), max_seq_length=16, max_predictions_per_seq=4,
      dupe_factor=2, num_workers=1, **kwargs)
  return str(output), len(vocab)


def test_records_of_our_tool_load_and_match_their_metadata(tmp_path):
  path, vocab_size = _write_with_our_tool(tmp_path)
  loader = pretrain_dataloader.BertPretrainDataLoader(_config(path), vocab_size=vocab_size)
  batch = next(iter(loader.load()))
  assert batch['input_word_ids'].shape == (4, 16)
  assert int(tf.reduce_max(batch['input_word_ids'])) < vocab_size


@pytest.mark.parametrize('config_kwargs, vocab_delta, message', [
    (dict(seq_length=32), 0, 'seq_length is 32 in the config but the records were written with '
     'max_seq_length=16'),
    (dict(max_predictions_per_seq=8), 0, 'max_predictions_per_seq is 8 in the config but the '
     'records were written with max_predictions_per_seq=4'),
    ({}, 5, 'model.encoder.bert.vocab_size is 50 in the config but the records were written with '
     'vocab_size=45'),
])
def test_metadata_mismatch_is_refused_before_reading(tmp_path, config_kwargs, vocab_delta,
                                                     message):
  path, vocab_size = _write_with_our_tool(tmp_path)
  loader = pretrain_dataloader.BertPretrainDataLoader(_config(path, **config_kwargs),
                                                      vocab_size=vocab_size + vocab_delta)
  with pytest.raises(ValueError) as e:
    loader.load()
  assert message in str(e.value)
  assert 'train.metadata.json' in str(e.value)


def test_dynamic_records_are_masked_on_the_fly(tmp_path):
  from official.nlp.data import pretrain_dynamic_dataloader  # pylint: disable=g-import-not-at-top
  # No global seed (an earlier test in this process may have set one: with it, every new dataset
  # would draw the same masks, as determinism asks).
  tf.random.set_seed(None)
  path, vocab_size = _write_with_our_tool(tmp_path, dynamic=True)
  params = pretrain_dynamic_dataloader.BertPretrainDynamicDataConfig(
      input_path=path, seq_length=16, max_predictions_per_seq=4, global_batch_size=64,
      is_training=False, drop_remainder=False)
  loader = pretrain_dynamic_dataloader.BertPretrainDynamicDataLoader(params, vocab_size)
  first = next(iter(loader.load()))
  second = next(iter(loader.load()))
  assert first['masked_lm_positions'].shape[1] == 4
  ids, positions = first['input_word_ids'].numpy(), first['masked_lm_positions'].numpy()
  weights = first['masked_lm_weights'].numpy()
  # [CLS] (id 2), [SEP] (id 3) and padding are never selected; selected positions are unique.
  for row, pos, w in zip(ids, positions, weights):
    chosen = pos[w > 0]
    assert len(set(chosen)) == len(chosen) and 0 not in chosen
  original = np.where(weights > 0, first['masked_lm_ids'].numpy(), -1)
  assert (original != 2).all() and (original != 3).all()
  # About 80% of the selected tokens are [MASK] (id 4) in the inputs.
  selected_inputs = np.take_along_axis(ids, positions, 1)[weights > 0]
  assert 0.6 < np.mean(selected_inputs == 4) < 0.95
  # New masks on each pass.
  assert not np.array_equal(first['masked_lm_positions'], second['masked_lm_positions'])
  # Static loaders refuse dynamic records.
  with pytest.raises(ValueError, match='bert/pretraining_dynamic'):
    pretrain_dataloader.BertPretrainDataLoader(_config(path), vocab_size).load()


def test_packed_records_load_with_position_ids_and_are_refused_without(tmp_path):
  path, vocab_size = _write_with_our_tool(tmp_path, pack=True)
  params = _config(path, use_position_id=True, use_next_sentence_label=False,
                   global_batch_size=64)
  batch = next(iter(pretrain_dataloader.BertPretrainDataLoader(params, vocab_size).load()))
  ids, mask, positions = (batch[k].numpy() for k in ('input_word_ids', 'input_mask',
                                                     'position_ids'))
  assert positions.shape == (64, 16) and batch['position_ids'].dtype == tf.int32
  # Each piece [CLS] ... [SEP] counts from 0 (masked tokens restored: a random one may be [CLS]);
  # a row holds several pieces.
  np.put_along_axis(ids, batch['masked_lm_positions'].numpy(), np.where(
      batch['masked_lm_weights'] > 0, batch['masked_lm_ids'],
      np.take_along_axis(ids, batch['masked_lm_positions'].numpy(), 1)), 1)
  np.testing.assert_array_equal(positions == 0, (ids == 2) | (mask == 0))
  assert ((ids == 2).sum(axis=1) >= 2).any()
  with pytest.raises(ValueError) as e:
    pretrain_dataloader.BertPretrainDataLoader(_config(path), vocab_size).load()
  assert str(e.value) == (
      f"{tmp_path / 'train.metadata.json'}: the records are packed (several documents a row) and "
      'need use_position_id: true in the data config (the encoder separates the documents by their '
      'position_ids); found use_position_id: false')


def test_dynamic_packed_records_are_masked_on_the_fly(tmp_path):
  from official.nlp.data import pretrain_dynamic_dataloader  # pylint: disable=g-import-not-at-top
  path, vocab_size = _write_with_our_tool(tmp_path, pack=True, dynamic=True)
  params = pretrain_dynamic_dataloader.BertPretrainDynamicDataConfig(
      input_path=path, seq_length=16, max_predictions_per_seq=8, global_batch_size=64,
      is_training=False, drop_remainder=False, use_position_id=True, mask_selection_rate=0.3,
      use_next_sentence_label=False)
  batch = next(iter(pretrain_dynamic_dataloader.BertPretrainDynamicDataLoader(
      params, vocab_size).load()))
  weights = batch['masked_lm_weights'].numpy() > 0
  labels = batch['masked_lm_ids'].numpy()[weights]
  assert not np.isin(labels, [0, 2, 3]).any()  # never [PAD], [CLS] or [SEP] of any piece
  original = batch['input_word_ids'].numpy().copy()
  np.put_along_axis(original, batch['masked_lm_positions'].numpy(),
                    np.where(weights, batch['masked_lm_ids'], np.take_along_axis(
                        original, batch['masked_lm_positions'].numpy(), 1)), 1)
  selectable = (~np.isin(original, [0, 2, 3])).sum()
  assert weights.sum() / selectable == pytest.approx(0.3, abs=0.05)
  np.testing.assert_array_equal(batch['position_ids'].numpy() == 0,
                                (original == 2) | (batch['input_mask'].numpy() == 0))
  with pytest.raises(ValueError, match='need use_position_id: true'):
    pretrain_dynamic_dataloader.BertPretrainDynamicDataLoader(
        dataclasses.replace(params, use_position_id=False), vocab_size).load()


def test_loaders_build_inputs_without_the_autotuner(tmp_path):
  """`record_stream` (every record loader) and the dummy input turn tf.data's autotuner off
  (`official.core.dataset_options`), and the batches built on them keep it off."""
  path = str(tmp_path / 'data.tfrecord')
  pretraining_records.write_records(path, 6)
  for params in (_config(path), _config(path, is_training=True, shuffle_buffer_size=4)):
    dataset = pretrain_dataloader.BertPretrainDataLoader(params).load()
    assert dataset.options().autotune.enabled is False
  dummy = pretrain_dataloader.dummy_dataset(_config(''), vocab_size=30)
  assert dummy.options().autotune.enabled is False
  assert next(iter(dummy))['input_word_ids'].shape == (4, 16)
