"""Tests for official/nlp/modeling/layers/text_layers.py (tokenizers and packing in the graph).

Model Garden's own cases (text_layers_test.py) are repeated here: its file cannot run on
TensorFlow 2.21, which has no `tensorflow.estimator`; its Estimator cases become graph-mode cases.
"""

import json
import sys

import pytest
import tensorflow as tf
import tf_keras

from official.nlp.data import full_tokenizer
from official.nlp.modeling import layers
from official.nlp.modeling.layers import text_layers
from tests.testing import run_layer_test

VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'd', '##ef', 'abc', 'xy']
WORDPIECE_CLASSES = [text_layers.BertTokenizer, text_layers.FastWordpieceBertTokenizer]


def _vocab_file(tmp_path, vocab, name='vocab.txt'):
  path = tmp_path / name
  path.write_text('\n'.join(vocab + ['']), encoding='utf-8')
  return str(path)


def _ragged(values):
  return tf.ragged.constant(values).to_list()


def test_exported_from_layers_package():
  assert layers.BertTokenizer is text_layers.BertTokenizer
  assert layers.FastWordpieceBertTokenizer is text_layers.FastWordpieceBertTokenizer
  assert layers.SentencepieceTokenizer is text_layers.SentencepieceTokenizer
  assert layers.BertPackInputs is text_layers.BertPackInputs


@pytest.mark.parametrize('cls', WORDPIECE_CLASSES)
def test_wordpiece_uncased_with_and_without_offsets(tmp_path, cls):
  tokenizer = cls(vocab_file=_vocab_file(tmp_path, VOCAB), lower_case=True)
  inputs = tf.constant(['abc def', 'ABC DEF d'])
  ids = tokenizer(inputs)
  assert ids.dtype == tf.int32
  assert ids.to_list() == [[[6], [4, 5]], [[6], [4, 5], [4]]]
  tokenizer.tokenize_with_offsets = True
  ids_2, starts, limits = tokenizer(inputs)
  assert ids_2.to_list() == ids.to_list()
  assert starts.to_list() == [[[0], [4, 5]], [[0], [4, 5], [8]]]
  assert limits.to_list() == [[[3], [5, 7]], [[3], [5, 7], [9]]]
  assert int(tokenizer.vocab_size) == 8


@pytest.mark.parametrize('cls', WORDPIECE_CLASSES)
def test_wordpiece_cased(tmp_path, cls):
  vocab = VOCAB[:-1] + ['ABC']
  tokenizer = cls(vocab_file=_vocab_file(tmp_path, vocab), lower_case=False,
                  tokenize_with_offsets=True)
  ids, starts, limits = tokenizer(tf.constant(['abc def', 'ABC DEF']))
  assert ids.to_list() == [[[6], [4, 5]], [[7], [1]]]
  assert starts.to_list() == [[[0], [4, 5]], [[0], [4]]]
  assert limits.to_list() == [[[3], [5, 7]], [[3], [7]]]


@pytest.mark.parametrize('cls', WORDPIECE_CLASSES)
def test_wordpiece_special_tokens(tmp_path, cls):
  complete = cls(vocab_file=_vocab_file(tmp_path, ['foo', '[PAD]', '[UNK]', '[CLS]', '[SEP]',
                                                   '[MASK]', 'xy'], 'a.txt'), lower_case=True)
  assert complete.get_special_tokens_dict() == dict(
      padding_id=1, start_of_sequence_id=3, end_of_segment_id=4, mask_id=5, vocab_size=7)
  partial = cls(vocab_file=_vocab_file(tmp_path, ['[PAD]', '[CLS]', '[SEP]', '[UNK]'], 'b.txt'),
                lower_case=True)
  assert partial.get_special_tokens_dict() == dict(
      padding_id=0, start_of_sequence_id=1, end_of_segment_id=2, vocab_size=4)  # no mask_id


def test_bert_tokenizer_equals_the_python_tokenizer(tmp_path):
  vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'hello', 'world', ',', '!', 'un',
           '##aff', '##able', 'cafe', '\u535a', "'", 's']
  vocab_file = _vocab_file(tmp_path, vocab)
  python = full_tokenizer.FullTokenizer(vocab_file, do_lower_case=True)
  texts = ["Hello, world! It's unaffable.", 'Caf\u00e9 \u535aWORLD', '  ', 'x']
  for cls in WORDPIECE_CLASSES:
    ids = cls(vocab_file=vocab_file, lower_case=True)(tf.constant(texts))
    flat = ids.merge_dims(1, -1).to_list()
    for text, row in zip(texts, flat):
      assert row == python.convert_tokens_to_ids(python.tokenize(text)), (cls.__name__, text)


def _pack(truncator, inputs):
  pack = text_layers.BertPackInputs(10, start_of_sequence_id=1001, end_of_segment_id=1002,
                                    padding_id=999, truncator=truncator)
  return {k: v.numpy().tolist() for k, v in pack(inputs).items()}


SEGMENT_A = [[[111], [112, 113]], [[121, 122, 123], [124, 125, 126], [127, 128]]]
SEGMENT_B = [[[211, 212], [213]], [[221, 222], [223, 224, 225], [226, 227, 228]]]


@pytest.mark.parametrize('truncator', ['round_robin', 'waterfall'])
def test_pack_one_segment(truncator):
  out = _pack(truncator, tf.ragged.constant([[11, 12, 13], list(range(21, 31))]))
  assert out['input_word_ids'] == [[1001, 11, 12, 13, 1002] + [999] * 5,
                                   [1001] + list(range(21, 29)) + [1002]]
  assert out['input_mask'] == [[1] * 5 + [0] * 5, [1] * 10]
  assert out['input_type_ids'] == [[0] * 10, [0] * 10]


def test_pack_round_robin_two_and_three_segments():
  out = _pack('round_robin', [tf.ragged.constant(SEGMENT_A), tf.ragged.constant(SEGMENT_B)])
  assert out['input_word_ids'] == [[1001, 111, 112, 113, 1002, 211, 212, 213, 1002, 999],
                                   [1001, 121, 122, 123, 124, 1002, 221, 222, 223, 1002]]
  assert out['input_mask'] == [[1] * 9 + [0], [1] * 10]
  assert out['input_type_ids'] == [[0] * 5 + [1] * 4 + [0], [0] * 6 + [1] * 4]
  segment_c = [[[311, 312], [313]], [[321, 322], [323, 324, 325], [326, 327, 328]]]
  out = _pack('round_robin', [tf.ragged.constant(s) for s in (SEGMENT_A, SEGMENT_B, segment_c)])
  assert out['input_word_ids'] == [[1001, 111, 112, 1002, 211, 212, 1002, 311, 312, 1002],
                                   [1001, 121, 122, 1002, 221, 222, 1002, 321, 322, 1002]]


def test_pack_waterfall_two_and_three_segments():
  out = _pack('waterfall', [tf.ragged.constant(SEGMENT_A), tf.ragged.constant(SEGMENT_B)])
  assert out['input_word_ids'] == [[1001, 111, 112, 113, 1002, 211, 212, 213, 1002, 999],
                                   [1001, 121, 122, 123, 124, 125, 126, 127, 1002, 1002]]
  assert out['input_type_ids'] == [[0] * 5 + [1] * 4 + [0], [0] * 9 + [1]]
  out = _pack('waterfall', [tf.ragged.constant(SEGMENT_A),
                            tf.ragged.constant([[[211], [212]], SEGMENT_B[1]]),
                            tf.ragged.constant([[[311, 312], [313]],
                                                [[321, 322], [323, 324, 325], [326, 327]]])])
  assert out['input_word_ids'] == [[1001, 111, 112, 113, 1002, 211, 212, 1002, 311, 1002],
                                   [1001, 121, 122, 123, 124, 125, 126, 1002, 1002, 1002]]
  assert out['input_type_ids'] == [[0] * 5 + [1] * 3 + [2] * 2, [0] * 8 + [1, 2]]


def test_pack_special_tokens_dict_and_config_round_trip():
  special = dict(start_of_sequence_id=1001, end_of_segment_id=1002, padding_id=999,
                 extraneous_key=666)
  pack = text_layers.BertPackInputs(10, special_tokens_dict=special)
  out = pack(tf.ragged.constant([[11, 12, 13]]))
  assert out['input_word_ids'].numpy().tolist() == [[1001, 11, 12, 13, 1002] + [999] * 5]
  outputs = run_layer_test(
      text_layers.BertPackInputs,
      dict(seq_length=6, start_of_sequence_id=2, end_of_segment_id=3, padding_id=0,
           truncator='waterfall'),
      [[tf.ragged.constant([[7, 8], [9]]), tf.ragged.constant([[5], [6, 4]])]],
      {'input_word_ids': (2, 6), 'input_mask': (2, 6), 'input_type_ids': (2, 6)},
      expected_output_dtype=tf.int32)
  assert outputs['input_word_ids'].numpy().tolist() == [[2, 7, 8, 3, 5, 3], [2, 9, 3, 6, 4, 3]]


def test_pack_errors():
  with pytest.raises(ValueError, match="truncator: expected one of .*found 'greedy'"):
    text_layers.BertPackInputs(8, special_tokens_dict=dict(start_of_sequence_id=1,
                                                           end_of_segment_id=2, padding_id=0),
                               truncator='greedy')
  with pytest.raises(ValueError, match='missing padding_id'):
    text_layers.BertPackInputs(8, start_of_sequence_id=1, end_of_segment_id=2)
  with pytest.raises(ValueError, match='not both'):
    text_layers.BertPackInputs(8, padding_id=0, special_tokens_dict={})
  with pytest.raises(ValueError, match='special_tokens_dict: lacks end_of_segment_id'):
    text_layers.BertPackInputs(8, special_tokens_dict=dict(start_of_sequence_id=1, padding_id=0))
  with pytest.raises(ValueError, match='same known rank; found ranks \\[2, 3\\]'):
    text_layers.BertPackInputs.bert_pack_inputs(
        [tf.ragged.constant([[1]]), tf.ragged.constant([[[1]]])], 8, 1, 2, 0)
  with pytest.raises(ValueError, match='no segment'):
    text_layers.BertPackInputs.bert_pack_inputs([], 8, 1, 2, 0)


@pytest.mark.parametrize('cls', WORDPIECE_CLASSES)
def test_wordpiece_config_round_trip(tmp_path, cls):
  tokenizer = cls(vocab_file=_vocab_file(tmp_path, VOCAB), lower_case=True,
                  tokenize_with_offsets=True, name='tok')
  config = json.loads(json.dumps(tokenizer.get_config()))
  assert config['vocab_file'].endswith('vocab.txt') and config['tokenize_with_offsets']
  rebuilt = cls.from_config(config)
  assert rebuilt.get_config() == tokenizer.get_config()
  clone = tf_keras.layers.deserialize(tf_keras.layers.serialize(tokenizer))
  assert type(clone) is cls
  inputs = tf.constant(['ABC DEF d'])
  for a, b in zip(tokenizer(inputs), clone(inputs)):
    assert a.to_list() == b.to_list()


def test_bad_vocab_file(tmp_path):
  with pytest.raises(FileNotFoundError, match='vocab_file: no such file'):
    text_layers.BertTokenizer(vocab_file=str(tmp_path / 'missing.txt'))
  with pytest.raises(ValueError, match='vocab_file: expected the path of a vocab.txt'):
    text_layers.FastWordpieceBertTokenizer(vocab_file='', lower_case=True)


def test_missing_tensorflow_text_names_the_extra(tmp_path, monkeypatch):
  monkeypatch.setitem(sys.modules, 'tensorflow_text', None)  # import now raises ImportError
  with pytest.raises(ImportError, match=r"BertTokenizer need\(s\) tensorflow-text.*"
                     r"mlm-garden\[text\]"):
    text_layers.BertTokenizer(vocab_file=_vocab_file(tmp_path, VOCAB))
  with pytest.raises(ImportError, match=r'mlm-garden\[text\]'):
    text_layers.BertPackInputs(8, start_of_sequence_id=1, end_of_segment_id=2, padding_id=0)


@pytest.mark.slow
def test_preprocessing_in_graph_mode_and_in_tf_data(tmp_path):
  """Special tokens come out as Python ints also when the layer is built in a graph (Model
  Garden's Estimator case), and the layers run inside `tf.data.Dataset.map`."""
  vocab_file = _vocab_file(tmp_path, VOCAB)
  expected = [[2, 6, 3, 0], [2, 4, 5, 3]]
  for cls in WORDPIECE_CLASSES:
    with tf.Graph().as_default():
      tokenizer = cls(vocab_file=vocab_file, lower_case=True)
      special = tokenizer.get_special_tokens_dict()
      assert all(type(v) is int for v in special.values()), special
      packed = text_layers.BertPackInputs(4, special_tokens_dict=special)(
          tokenizer(tf.constant(['abc', 'DEF'])))
      with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.tables_initializer())
        assert session.run(packed['input_word_ids']).tolist() == expected

    sentences = tf_keras.layers.Input(shape=[], dtype=tf.string)
    tokenizer = cls(vocab_file=vocab_file, lower_case=True)
    pack = text_layers.BertPackInputs(4, special_tokens_dict=tokenizer.get_special_tokens_dict())
    preprocessing = tf_keras.Model(sentences, pack(tokenizer(sentences)))
    dataset = tf.data.Dataset.from_tensors(tf.constant(['abc', 'DEF'])).map(preprocessing)
    assert next(iter(dataset))['input_word_ids'].numpy().tolist() == expected


@pytest.mark.slow
def test_keras_model_with_text_layers_saves_and_reloads(tmp_path):
  vocab_file = _vocab_file(tmp_path, VOCAB)
  sentences = tf_keras.layers.Input(shape=[], dtype=tf.string)
  tokenizer = text_layers.BertTokenizer(vocab_file=vocab_file, lower_case=True)
  pack = text_layers.BertPackInputs(6, special_tokens_dict=tokenizer.get_special_tokens_dict())
  model = tf_keras.Model(sentences, pack(tokenizer(sentences)))
  export = str(tmp_path / 'export')
  model.save(export)
  (tmp_path / 'vocab.txt').unlink()  # the SavedModel carries its own copy (an asset)
  loaded = tf.saved_model.load(export)
  outputs = loaded(tf.constant(['abc def xy', 'DEF']))
  assert outputs['input_word_ids'].numpy().tolist() == [[2, 6, 4, 5, 7, 3], [2, 4, 5, 3, 0, 0]]
  assert outputs['input_mask'].numpy().tolist() == [[1] * 6, [1, 1, 1, 1, 0, 0]]


# SentencePiece: a word model of 9 words + 7 special pieces, as in Model Garden's test.
@pytest.fixture(name='spm_path', scope='module')
def _spm_path(tmp_path_factory):
  spm = pytest.importorskip('sentencepiece')  # the [test] extra installs it
  tmp = tmp_path_factory.mktemp('spm')
  words = ['a', 'b', 'c', 'd', 'e', 'abc', 'def', 'ABC', 'DEF']
  (tmp / 'train.txt').write_text(' '.join(words + ['\n']))
  size = len(words) + 7  # <pad>, <unk>, [CLS], [SEP], [MASK], <s>, </s>
  spm.SentencePieceTrainer.Train(
      f'--model_prefix={tmp / "spm"} --model_type=word --input={tmp / "train.txt"} --pad_id=0 '
      f'--unk_id=1 --control_symbols=[CLS],[SEP],[MASK] --vocab_size={size} '
      f'--bos_id={size - 2} --eos_id={size - 1} --minloglevel=2')
  return str(tmp / 'spm.model')


@pytest.mark.parametrize('lower_case, expected', [(True, [[8, 12], [8, 12, 11]]),
                                                  (False, [[8, 12], [5, 6, 11]])])
def test_sentencepiece_tokenizer(spm_path, lower_case, expected):
  tokenizer = text_layers.SentencepieceTokenizer(model_file_path=spm_path, lower_case=lower_case,
                                                 nbest_size=0)
  inputs = tf.constant(['abc def', 'ABC DEF d'])
  ids = tokenizer(inputs)
  assert ids.dtype == tf.int32 and ids.to_list() == expected
  tokenizer.tokenize_with_offsets = True
  ids_2, starts, limits = tokenizer(inputs)
  assert ids_2.to_list() == expected
  assert starts.to_list() == [[0, 3], [0, 3, 7]] and limits.to_list() == [[3, 7], [3, 7, 9]]
  assert int(tokenizer.vocab_size) == 16
  assert tokenizer.get_special_tokens_dict() == dict(
      padding_id=0, start_of_sequence_id=2, end_of_segment_id=3, mask_id=4, vocab_size=16)


def test_sentencepiece_strip_diacritics_and_its_offsets_error(spm_path):
  tokenizer = text_layers.SentencepieceTokenizer(model_file_path=spm_path, lower_case=True,
                                                 strip_diacritics=True)
  ids = tokenizer(tf.constant(['a b c d e', '\u0103 \u1e05 \u010d \u1e13 \u00e9']))
  assert ids.to_list() == [[7, 9, 10, 11, 13]] * 2
  with pytest.raises(ValueError, match='tokenize_with_offsets=True cannot go with '
                     'strip_diacritics=True'):
    text_layers.SentencepieceTokenizer(model_file_path=spm_path, lower_case=True,
                                       strip_diacritics=True, tokenize_with_offsets=True)
  tokenizer.tokenize_with_offsets = True
  with pytest.raises(ValueError, match='cannot go with strip_diacritics'):
    tokenizer(tf.constant(['abc']))
  with pytest.raises(ValueError, match='exactly one of model_file_path and '
                     'model_serialized_proto'):
    text_layers.SentencepieceTokenizer(lower_case=True)


def test_sentencepiece_graph_mode_config_and_saving(spm_path, tmp_path):
  with tf.Graph().as_default():  # special tokens through a session, as under Estimator
    tokenizer = text_layers.SentencepieceTokenizer(model_file_path=spm_path, lower_case=True)
    special = tokenizer.get_special_tokens_dict()
    assert special['start_of_sequence_id'] == 2 and type(special['vocab_size']) is int

  with open(spm_path, 'rb') as f:
    proto = f.read()
  for kwargs in (dict(model_file_path=spm_path), dict(model_serialized_proto=proto)):
    tokenizer = text_layers.SentencepieceTokenizer(lower_case=False, **kwargs)
    config = json.loads(json.dumps(tokenizer.get_config()))
    rebuilt = text_layers.SentencepieceTokenizer.from_config(config)
    assert rebuilt.get_config() == tokenizer.get_config()
    clone = tf_keras.layers.deserialize(tf_keras.layers.serialize(tokenizer))
    inputs = tf.constant(['ABC DEF d'])
    assert clone(inputs).to_list() == rebuilt(inputs).to_list() == tokenizer(inputs).to_list()

  inputs = tf_keras.layers.Input([], dtype=tf.string)
  model = tf_keras.Model(inputs, text_layers.SentencepieceTokenizer(
      model_file_path=spm_path, lower_case=True)(inputs))
  model.save(str(tmp_path / 'sp_export'), signatures={})
  loaded = tf.saved_model.load(str(tmp_path / 'sp_export'))
  assert loaded(tf.constant(['abc def'])).to_list() == [[8, 12]]


def test_text_processor(tmp_path, spm_path):
  vocab_file = _vocab_file(tmp_path, VOCAB)
  processor = text_layers.TextProcessor(seq_length=8, vocab_file=vocab_file)
  out = processor([tf.constant(['abc def']), tf.constant(['xy'])])
  assert out['input_word_ids'].numpy().tolist() == [[2, 6, 4, 5, 3, 7, 3, 0]]
  assert out['input_type_ids'].numpy().tolist() == [[0, 0, 0, 0, 0, 1, 1, 0]]
  sp = text_layers.TextProcessor(seq_length=5, vocab_file=spm_path, tokenization='SentencePiece')
  assert sp([tf.constant(['ABC \u00e9'])])['input_word_ids'].numpy().tolist() == [[2, 8, 13, 3, 0]]
  with pytest.raises(ValueError, match="tokenization: expected one of .*found 'BPE'"):
    text_layers.TextProcessor(seq_length=8, vocab_file=vocab_file, tokenization='BPE')
  with pytest.raises(ValueError, match='TF Hub preprocessing models are not supported'):
    text_layers.TextProcessor(seq_length=8, preprocessing_hub_module_url='https://tfhub.dev/x')
  with pytest.raises(ValueError, match='vocab_file is empty'):
    text_layers.TextProcessor(seq_length=8)
  with pytest.raises(ValueError, match='seq_length: expected an int >= 2'):
    text_layers.TextProcessor(seq_length=1, vocab_file=vocab_file)
