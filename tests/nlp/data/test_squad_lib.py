"""Tests for official/nlp/data/squad_lib.py and official/nlp/data/question_answering_dataloader.py
on the made-up SQuAD-style fixtures in tests/testdata/squad/."""

import json
import os

import numpy as np
import pytest

from data_tools import create_finetuning_data as cli
from official.nlp.data import question_answering_dataloader as qa_loader
from official.nlp.data import squad_lib
from official.nlp.data.tokenization import WordPieceTokenizer
from official.nlp.tasks import squad_metrics
from tests.paths import ROOT

DATA = os.path.join(ROOT, 'tests', 'testdata', 'squad')
V1 = os.path.join(DATA, 'tiny_squad_v1.1.json')
V2 = os.path.join(DATA, 'tiny_squad_v2.0.json')
VOCAB = os.path.join(DATA, 'vocab.txt')
# Short windows so that every context needs several.
SEQ, STRIDE, QUERY = 24, 6, 8


@pytest.fixture(scope='module')
def tokenizer():
  return WordPieceTokenizer.from_vocab_file(VOCAB)


def test_read_examples_maps_answer_characters_to_words():
  examples = squad_lib.read_squad_examples(V1, is_training=True)
  assert [e.qas_id for e in examples] == [f'v{i}' for i in range(1, 9)]
  first = examples[0]
  assert first.doc_words[:4] == ['The', 'lighthouse', 'of', 'Varnel']
  for e in examples:
    located = ' '.join(e.doc_words[e.start_word:e.end_word + 1])
    # Whole words: 'Brede.' holds the answer 'Brede' (punctuation is dropped when scoring).
    assert squad_metrics.normalize_answer(located) == squad_metrics.normalize_answer(e.answers[0])
  v2 = squad_lib.read_squad_examples(V2, is_training=True, version_2_with_negative=True)
  assert [e.qas_id for e in v2 if e.is_impossible] == ['n1', 'n2', 'n3']
  assert all(e.start_word == -1 and e.answers == [] for e in v2 if e.is_impossible)


def test_read_examples_errors_name_the_file_and_question(tmp_path):
  path = tmp_path / 'bad.json'
  path.write_text(json.dumps({'version': '1.1', 'articles': []}))
  with pytest.raises(ValueError, match=r'bad.json: expected SQuAD JSON with a "data" list, found '
                     r"\['articles', 'version'\]"):
    squad_lib.read_squad_examples(str(path), is_training=True)
  path.write_text(json.dumps({'data': [{'paragraphs': [{'context': 'a b', 'qas': [
      {'id': 'q9', 'question': 'x?', 'answers': []}]}]}]}))
  with pytest.raises(ValueError, match="question 'q9': has no answers"):
    squad_lib.read_squad_examples(str(path), is_training=True)
  with pytest.raises(FileNotFoundError, match='input_file: no such file'):
    squad_lib.read_squad_examples(str(tmp_path / 'missing.json'), is_training=True)


def _windows(features, example_index):
  return [f for f in features if f.example_index == example_index]


def test_windows_cover_the_context_and_positions_point_at_the_answer(tokenizer):
  examples = squad_lib.read_squad_examples(V1, is_training=True)
  features = squad_lib.convert_examples_to_features(examples, tokenizer, SEQ, STRIDE, QUERY)
  assert [f.unique_id for f in features] == list(range(10**9, 10**9 + len(features)))
  for index, example in enumerate(examples):
    windows = _windows(features, index)
    assert len(windows) > 1  # 24-token windows are shorter than every context
    context = tokenizer.tokenize(' '.join(example.doc_words))
    question = tokenizer.tokenize(example.question_text)[:QUERY]
    answer = tokenizer.tokenize(example.answers[0])
    offset = len(question) + 2
    answer_ranges, max_context_tokens = set(), []
    for k, w in enumerate(windows):
      length = sum(w.input_mask)
      tokens = w.tokens
      assert tokens[:offset] == ['[CLS]'] + question + ['[SEP]']
      assert tokens[-1] == '[SEP]' and len(tokens) == length <= SEQ
      assert w.segment_ids[:length] == [0] * offset + [1] * (length - offset)
      assert w.input_ids[length:] == [0] * (SEQ - length)
      # Window k holds context tokens [k * STRIDE, k * STRIDE + its length).
      first = k * STRIDE
      window_context = tokens[offset:-1]
      assert window_context == context[first:first + len(window_context)]
      max_context_tokens += [first + p - offset for p, best in w.token_is_max_context.items()
                             if best]
      if w.start_position:
        assert tokens[w.start_position:w.end_position + 1] == answer
        answer_ranges.add((first + w.start_position - offset, first + w.end_position - offset))
        assert not w.is_impossible
      else:
        assert w.end_position == 0 and w.is_impossible
    assert first + len(window_context) == len(context)  # the last window reaches the end
    # One answer span in context coordinates, found by every window that holds all of it.
    assert len(answer_ranges) == 1
    (a_start, a_end), = answer_ranges
    assert context[a_start:a_end + 1] == answer
    holding = [k for k, w in enumerate(windows)
               if k * STRIDE <= a_start and a_end < k * STRIDE + sum(w.input_mask) - offset - 1]
    assert holding == [k for k, w in enumerate(windows) if w.start_position]
    # Each context token has exactly one max-context window.
    assert sorted(max_context_tokens) == list(range(len(context)))


def test_impossible_questions_have_position_zero_everywhere(tokenizer):
  examples = squad_lib.read_squad_examples(V2, is_training=True, version_2_with_negative=True)
  features = squad_lib.convert_examples_to_features(examples, tokenizer, SEQ, STRIDE, QUERY)
  for index, example in enumerate(examples):
    windows = _windows(features, index)
    if example.is_impossible:
      assert all(w.start_position == w.end_position == 0 and w.is_impossible for w in windows)
    else:
      assert any(w.start_position > 0 for w in windows)


def test_postprocess_decodes_peaked_logits_back_to_the_answers(tokenizer):
  examples = squad_lib.read_squad_examples(V2, is_training=False, version_2_with_negative=True)
  features = squad_lib.convert_examples_to_features(examples, tokenizer, SEQ, STRIDE, QUERY)
  logits = {}
  for f in features:
    start, end = np.zeros(SEQ), np.zeros(SEQ)
    start[f.start_position] = end[f.end_position] = 5.0
    logits[f.unique_id] = (start, end)
  predictions, diffs = squad_lib.postprocess_predictions(
      examples, features, logits, version_2_with_negative=True)
  gold = squad_metrics.gold_answers_of(examples, version_2_with_negative=True)
  # The text the answer's tokens cover: the context word 'Brede.' ends with a '.' token.
  assert predictions['v1'] == 'Tomas Brede'
  assert predictions['v7'] == 'every twelve minutes'
  assert predictions['n1'] == '' and diffs['n1'] > 0
  assert squad_metrics.evaluate(gold, predictions, True) == {
      'exact_match': 1.0, 'final_f1': 1.0, 'has_answer_exact_match': 1.0, 'has_answer_f1': 1.0,
      'no_answer_exact_match': 1.0}
  # A high threshold keeps the best span instead of the null answer.
  predictions, _ = squad_lib.postprocess_predictions(
      examples, features, logits, version_2_with_negative=True, null_score_diff_threshold=100.0)
  assert predictions['n1'] != ''
  # max_answer_length 1 rules out the 2-token answer: another span is chosen.
  predictions, _ = squad_lib.postprocess_predictions(examples, features, logits,
                                                     max_answer_length=1)
  assert predictions['v1'] != 'Tomas Brede'


def test_answer_text_cuts_the_first_and_last_word_to_their_tokens():
  words = ['(in', '1887),', 'said', 'he.']
  assert squad_lib.answer_text(words, (0.0, 0, 1, 1, 4)) == 'in 1887'
  assert squad_lib.answer_text(words, (0.0, 1, 1, 0, 4)) == '1887'
  assert squad_lib.answer_text(words, (0.0, 2, 3, 0, None)) == 'said he.'  # no character spans


def test_cli_writes_records_sidecar_and_metadata_the_loader_reads(tmp_path):
  out = tmp_path / 'squad_dev.tfrecord'
  status = cli.main(['create_finetuning_data', '--task=squad', f'--input_file={V2}',
                     f'--output_file={out}', f'--vocab_file={VOCAB}', f'--max_seq_length={SEQ}',
                     f'--doc_stride={STRIDE}', f'--max_query_length={QUERY}',
                     '--version_2_with_negative'])
  assert status == 0
  metadata = json.loads((tmp_path / 'squad_dev.metadata.json').read_text())
  assert metadata['task'] == 'squad' and metadata['num_questions'] == 11
  assert metadata['version_2_with_negative'] is True and metadata['max_seq_length'] == SEQ
  assert metadata['eval_sidecar'] == 'squad_dev.squad_eval.json'
  examples, features, version_2 = squad_lib.read_eval_sidecar(
      squad_lib.eval_sidecar_path(str(out)))
  assert version_2 and len(features) == metadata['num_examples']
  # The sidecar rebuilds what postprocessing reads, equal to the features as converted.
  original = squad_lib.read_squad_examples(V2, False, True)
  converted = squad_lib.convert_examples_to_features(
      original, WordPieceTokenizer.from_vocab_file(VOCAB), SEQ, STRIDE, QUERY)
  assert [(e.qas_id, e.doc_words, e.answers, e.is_impossible) for e in examples] == [
      (e.qas_id, e.doc_words, e.answers, e.is_impossible) for e in original]
  assert [(f.unique_id, f.example_index, f.window_index, f.token_to_word, f.token_is_max_context,
           f.token_to_chars) for f in features] == [
              (f.unique_id, f.example_index, f.window_index, f.token_to_word,
               f.token_is_max_context, f.token_to_chars) for f in converted]
  # Each token's characters, cut from its word, are the token's text (lower-cased, no ##).
  for feature in converted[:3]:
    words = original[feature.example_index].doc_words
    for position, word in feature.token_to_word.items():
      begin, end = feature.token_to_chars[position]
      token = feature.tokens[position]
      if token != '[UNK]':
        assert words[word][begin:end].lower() == token.removeprefix('##'), (words[word], token)

  train = qa_loader.QADataConfig(input_path=str(out), seq_length=SEQ, global_batch_size=4,
                                 version_2_with_negative=True, drop_remainder=False,
                                 is_training=False)
  batches = list(qa_loader.QuestionAnsweringDataLoader(train).load())
  ids = np.concatenate([f['unique_ids'].numpy() for f, _ in batches])
  assert ids.tolist() == [f.unique_id for f in features]
  starts = np.concatenate([labels['start_positions'].numpy() for _, labels in batches])
  impossible = np.concatenate([labels['is_impossible'].numpy() for _, labels in batches])
  np.testing.assert_array_equal(impossible, starts == 0)
  features_0, labels_0 = batches[0]
  assert set(features_0) == {'input_word_ids', 'input_mask', 'input_type_ids', 'unique_ids'}
  assert features_0['input_word_ids'].shape == (4, SEQ)
  assert set(labels_0) == {'start_positions', 'end_positions', 'is_impossible'}

  mismatch = qa_loader.QADataConfig(input_path=str(out), seq_length=SEQ, global_batch_size=4)
  with pytest.raises(ValueError, match='version_2_with_negative is False in the config but the '
                     'records were written with version_2_with_negative=True'):
    qa_loader.QuestionAnsweringDataLoader(mismatch).load()


def test_loader_refuses_json_input():
  with pytest.raises(ValueError, match='the loader reads TFRecords; convert SQuAD JSON'):
    qa_loader.QuestionAnsweringDataLoader(qa_loader.QADataConfig(input_path=V1)).load()
