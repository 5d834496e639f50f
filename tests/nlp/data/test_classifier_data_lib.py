"""Tests for official/nlp/data/classifier_data_lib.py (Model Garden's classification data lib)."""

import sys
import types

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import classifier_data_lib as cdl
from official.nlp.data import full_tokenizer
from official.nlp.data import sentence_prediction_dataloader as sp_loader

VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'the', 'cat', 'sat', 'on', 'mat', 'play',
         '##ing', 'a', 'dog', 'bank', 'river']
ID = {token: i for i, token in enumerate(VOCAB)}


@pytest.fixture
def tokenizer(tmp_path):
  path = tmp_path / 'vocab.txt'
  path.write_text('\n'.join(VOCAB) + '\n')
  return full_tokenizer.FullTokenizer(str(path), do_lower_case=True)


def _ids(*tokens):
  return [ID[t] for t in tokens]


def _read(path):
  """Every record as a dict of lists (independent of our loaders)."""
  out = []
  for record in tf.data.TFRecordDataset(str(path)):
    feature = tf.train.Example.FromString(record.numpy()).features.feature
    out.append({k: list(getattr(v, v.WhichOneof('kind')).value) for k, v in feature.items()})
  return out


def test_convert_single_example_layout_and_truncation(tokenizer):
  single = cdl.InputExample('a', 'The cat sat', label='1')
  features = cdl.convert_single_example(0, single, ['0', '1'], 8, tokenizer)
  assert features.input_ids == _ids('[CLS]', 'the', 'cat', 'sat', '[SEP]') + [0] * 3
  assert features.input_mask == [1] * 5 + [0] * 3
  assert features.segment_ids == [0] * 8
  assert features.label_id == 1 and features.is_real_example
  # A pair over budget: the longer text ('playing on the mat' = 5 pieces) loses its end first.
  pair = cdl.InputExample('b', 'playing on the mat', 'a dog', label='0', weight=0.5,
                          example_id=7)
  features = cdl.convert_single_example(1, pair, ['0', '1'], 8, tokenizer)
  # Budget 8 - 3 = 5 pieces: 5 + 2 -> 3 + 2.
  assert features.input_ids == _ids('[CLS]', 'play', '##ing', 'on', '[SEP]', 'a', 'dog', '[SEP]')
  assert features.segment_ids == [0, 0, 0, 0, 0, 1, 1, 1]
  assert features.input_mask == [1] * 8
  assert (features.weight, features.example_id) == (0.5, 7)
  # No label list: the label is kept as it is (regression, ids).
  assert cdl.convert_single_example(0, cdl.InputExample('c', 'cat', label=2.5), [], 4,
                                    tokenizer).label_id == 2.5
  with pytest.raises(ValueError, match=r"b: label '0' is not in the label list \['x'\]"):
    cdl.convert_single_example(0, pair, ['x'], 8, tokenizer)


def test_records_round_trip_through_the_sentence_loader(tmp_path, tokenizer):
  examples = [cdl.InputExample('t-0', 'the cat', 'sat on the mat', label='pos'),
              cdl.InputExample('t-1', 'a dog', label='neg'),
              cdl.InputExample('t-2', 'the river bank', label='pos')]
  path = tmp_path / 'out' / 'train.tfrecord'
  cdl.file_based_convert_examples_to_features(examples, ['neg', 'pos'], 10, tokenizer, str(path))
  records = _read(path)
  assert sorted(records[0]) == ['example_id', 'input_ids', 'input_mask', 'is_real_example',
                                'label_ids', 'segment_ids']
  assert [r['label_ids'] for r in records] == [[1], [0], [1]]
  assert [r['example_id'] for r in records] == [[0], [1], [2]]
  params = sp_loader.SentencePredictionDataConfig(
      input_path=str(path), seq_length=10, global_batch_size=3, is_training=False,
      include_example_id=True)
  batch = next(iter(sp_loader.SentencePredictionDataLoader(params).load()))
  expected = [cdl.convert_single_example(i, e, ['neg', 'pos'], 10, tokenizer)
              for i, e in enumerate(examples)]
  np.testing.assert_array_equal(batch['input_word_ids'], [f.input_ids for f in expected])
  np.testing.assert_array_equal(batch['input_type_ids'], [f.segment_ids for f in expected])
  np.testing.assert_array_equal(batch['label_ids'], [1, 0, 1])


def test_regression_labels_weights_and_errors(tmp_path, tokenizer):
  examples = [cdl.InputExample('r-0', 'the cat', label=4.5, weight=2.0),
              cdl.InputExample('r-1', 'a dog', label=0.25, weight=1.0)]
  path = tmp_path / 'stsb.tfrecord'
  cdl.file_based_convert_examples_to_features(examples, [], 6, tokenizer, str(path),
                                              label_type=float)
  records = _read(path)
  assert [r['label_ids'] for r in records] == [[4.5], [0.25]]
  assert [r['weight'] for r in records] == [[2.0], [1.0]]
  params = sp_loader.SentencePredictionDataConfig(input_path=str(path), seq_length=6,
                                                  global_batch_size=2, label_type='float',
                                                  is_training=False)
  batch = next(iter(sp_loader.SentencePredictionDataLoader(params).load()))
  np.testing.assert_allclose(batch['label_ids'], [4.5, 0.25])

  examples[1].weight = None
  with pytest.raises(ValueError, match=r'example 1 has no weight but others have one'):
    cdl.file_based_convert_examples_to_features(examples, [], 6, tokenizer, str(path), float)
  # Unlabelled examples: no label_ids feature at all.
  cdl.file_based_convert_examples_to_features([cdl.InputExample('u', 'cat')], [], 6, tokenizer,
                                              str(path))
  assert 'label_ids' not in _read(path)[0]
  cdl.file_based_convert_examples_to_features([], ['a'], 6, tokenizer, str(path))
  assert _read(path) == []


def _fake_tfds(monkeypatch, rows_by_name):
  """Installs a stand-in `tensorflow_datasets` whose `load` serves `rows_by_name[name][split]`."""
  calls = []

  def load(name, split, try_gcs=False):
    del try_gcs
    calls.append((name, split))
    rows = rows_by_name[name][split]
    return types.SimpleNamespace(as_numpy_iterator=lambda: iter(rows))

  monkeypatch.setitem(sys.modules, 'tensorflow_datasets', types.SimpleNamespace(load=load))
  return calls


def test_tfds_processors_map_fields_and_labels(monkeypatch):
  cb_rows = [{'idx': 1, 'premise': b'a dog', 'hypothesis': b'the cat', 'label': 2},
             {'idx': 0, 'premise': b'the mat', 'hypothesis': b'a cat', 'label': 1}]
  calls = _fake_tfds(monkeypatch, {
      'super_glue/cb': {'train': cb_rows, 'test': [dict(cb_rows[0], label=-1)]},
      'super_glue/boolq': {'test': [{'idx': 0, 'question': b'q', 'passage': b'p', 'label': -1}]},
      'glue/stsb': {'validation': [{'idx': 0, 'sentence1': b'x', 'sentence2': b'y',
                                    'label': 3.2}]},
      'glue/mnli': {'validation_mismatched': [{'idx': 0, 'premise': b'p', 'hypothesis': b'h',
                                               'label': 0}]},
  })
  processor = cdl.CBProcessor()
  examples = processor.get_train_examples(None)
  assert [(e.guid, e.text_a, e.text_b, e.label) for e in examples] == [
      ('train-0', 'the mat', 'a cat', 'neutral'), ('train-1', 'a dog', 'the cat', 'contradiction')]
  assert processor.get_test_examples(None)[0].label == 'entailment'  # placeholder
  assert cdl.BoolQProcessor().get_test_examples(None)[0].label == 'False'
  stsb = cdl.StsBProcessor()
  assert stsb.is_regression and stsb.label_type is float
  assert stsb.get_dev_examples(None)[0].label == pytest.approx(3.2)
  mnli = cdl.MnliProcessor(mnli_type='mismatched').get_dev_examples(None)[0]
  assert (mnli.text_a, mnli.text_b, mnli.label) == ('h', 'p', 'contradiction')
  assert calls[-1] == ('glue/mnli', 'validation_mismatched')
  assert [cls.get_processor_name() for cls in (cdl.CBProcessor, cdl.MrpcProcessor,
                                               cdl.SuperGLUERTEProcessor)] == [
                                                   'CB', 'MRPC', 'RTESuperGLUE']
  with pytest.raises(ValueError, match=r"mnli_type must be 'matched' or 'mismatched', found 'x'"):
    cdl.MnliProcessor(mnli_type='x')


def test_wic_puts_the_word_in_a_third_segment(monkeypatch, tmp_path, tokenizer):
  _fake_tfds(monkeypatch, {'super_glue/wic': {'train': [
      {'idx': 0, 'sentence1': b'the river bank', 'sentence2': b'a bank on the mat',
       'word': b'bank', 'label': 1}]}})
  processor = cdl.WiCProcessor()
  example = processor.get_train_examples(None)[0]
  assert isinstance(example, cdl.WiCInputExample) and example.word == 'bank'
  features = processor.featurize_example(0, example, processor.get_labels(), 10, tokenizer)
  # 10 - 4 special tokens - 1 word token = 5 sentence tokens: 'a bank on the mat' is cut first.
  assert features.input_ids == _ids('[CLS]', 'the', 'river', 'bank', '[SEP]', 'a', 'bank', '[SEP]',
                                    'bank', '[SEP]')
  assert features.segment_ids == [0, 0, 0, 0, 0, 1, 1, 1, 2, 2]
  assert features.label_id == 1
  metadata = cdl.generate_tf_record_from_data_file(
      processor, None, tokenizer, train_data_output_path=str(tmp_path / 'wic.tfrecord'),
      max_seq_length=10)
  assert metadata == {'processor_type': 'RTESuperGLUE', 'train_data_size': 1,
                      'max_seq_length': 10, 'task_type': 'bert_classification', 'num_labels': 0}
  assert _read(tmp_path / 'wic.tfrecord')[0]['segment_ids'] == features.segment_ids


def test_generate_tf_record_from_data_file_metadata(tmp_path, tokenizer):

  class Toy(cdl.DataProcessor):
    """Two train, one dev and per-language test examples."""

    def get_train_examples(self, data_dir):
      return [cdl.InputExample('t0', 'the cat', label='b'), cdl.InputExample('t1', 'a dog',
                                                                             label='a')]

    def get_dev_examples(self, data_dir):
      return [cdl.InputExample('d0', 'the mat', label='a')]

    def get_test_examples(self, data_dir):
      return {'en': [cdl.InputExample('e0', 'cat', label='a')], 'de': []}

    def get_labels(self):
      return ['a', 'b']

    @staticmethod
    def get_processor_name():
      return 'TOY'

  metadata = cdl.generate_tf_record_from_data_file(
      Toy(), str(tmp_path), tokenizer, train_data_output_path=str(tmp_path / 'train.tfrecord'),
      eval_data_output_path=str(tmp_path / 'eval.tfrecord'),
      test_data_output_path=str(tmp_path / 'test_{}.tfrecord'), max_seq_length=6)
  assert metadata == {'processor_type': 'TOY', 'train_data_size': 2, 'max_seq_length': 6,
                      'eval_data_size': 1, 'test_en_data_size': 1, 'test_de_data_size': 0,
                      'task_type': 'bert_classification', 'num_labels': 2}
  assert [r['label_ids'] for r in _read(tmp_path / 'train.tfrecord')] == [[1], [0]]
  assert len(_read(tmp_path / 'test_en.tfrecord')) == 1
  with pytest.raises(ValueError, match='give train_data_output_path or eval_data_output_path'):
    cdl.generate_tf_record_from_data_file(Toy(), None, tokenizer)


def test_missing_tfds_is_a_clear_error(monkeypatch):
  monkeypatch.setitem(sys.modules, 'tensorflow_datasets', None)  # import fails
  with pytest.raises(ImportError, match=r"reading 'glue/cola' needs TensorFlow Datasets: pip "
                     r'install tensorflow-datasets'):
    cdl.ColaProcessor().get_train_examples(None)
