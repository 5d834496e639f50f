"""Tests for official/nlp/data/full_tokenizer.py (Google BERT's Python tokenizer)."""

import collections

import pytest

from official.nlp.data import full_tokenizer as ft
from official.nlp.data import tokenization

WORDPIECE_VOCAB = ['[UNK]', '[CLS]', '[SEP]', 'want', '##want', '##ed', 'wa', 'un', 'runn',
                   '##ing', ',']


def _vocab_file(tmp_path, tokens, name='vocab.txt'):
  path = tmp_path / name
  path.write_text(''.join(t + '\n' for t in tokens), encoding='utf-8')
  return str(path)


def test_full_tokenizer_model_garden_case(tmp_path):
  tokenizer = ft.FullTokenizer(_vocab_file(tmp_path, WORDPIECE_VOCAB))
  tokens = tokenizer.tokenize('UNwant\u00e9d,running')
  assert tokens == ['un', '##want', '##ed', ',', 'runn', '##ing']
  assert tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]
  assert tokenizer.convert_ids_to_tokens([7, 4, 5]) == ['un', '##want', '##ed']
  assert tokenizer.tokenize(b'UNwant\xc3\xa9d') == ['un', '##want', '##ed']  # UTF-8 bytes


def test_basic_tokenizer_cases():
  assert ft.BasicTokenizer().tokenize('ah\u535a\u63a8zz') == ['ah', '\u535a', '\u63a8', 'zz']
  text = ' \tHeLLo!how  \n Are yoU?  '
  assert ft.BasicTokenizer(do_lower_case=True).tokenize(text) == [
      'hello', '!', 'how', 'are', 'you', '?']
  assert ft.BasicTokenizer(do_lower_case=True).tokenize('H\u00e9llo') == ['hello']
  assert ft.BasicTokenizer(do_lower_case=False).tokenize(text) == [
      'HeLLo', '!', 'how', 'Are', 'yoU', '?']
  assert ft.BasicTokenizer(do_lower_case=False).tokenize('H\u00e9llo') == ['H\u00e9llo']
  assert ft.BasicTokenizer(split_on_punc=False).tokenize(text) == ['hello!how', 'are', 'you?']
  # Control characters and U+FFFD vanish; a non-breaking space separates; a lone combining mark
  # stripped with the accents leaves no empty word.
  assert ft.BasicTokenizer().tokenize('a\x05b\ufffdc\u00a0d \u0301 e') == ['abc', 'd', 'e']
  assert ft.BasicTokenizer().tokenize('') == []


def test_wordpiece_tokenizer_cases():
  vocab = {t: i for i, t in enumerate(WORDPIECE_VOCAB[:-1] + ['##!', '!'])}
  tokenizer = ft.WordpieceTokenizer(vocab=vocab)
  assert tokenizer.tokenize('') == []
  assert tokenizer.tokenize('unwanted running') == ['un', '##want', '##ed', 'runn', '##ing']
  assert tokenizer.tokenize('unwanted running !') == ['un', '##want', '##ed', 'runn', '##ing',
                                                      '!']
  assert tokenizer.tokenize('unwanted running!') == ['un', '##want', '##ed', 'runn', '##ing',
                                                     '##!']
  assert tokenizer.tokenize('unwantedX running') == ['[UNK]', 'runn', '##ing']
  short = ft.WordpieceTokenizer(vocab=vocab, unk_token='<unk>', max_input_chars_per_word=5)
  assert short.tokenize('want unwanted') == ['want', '<unk>']  # 8 characters > 5
  assert ft.WordpieceTokenizer(vocab=vocab).max_input_chars_per_word == 400


def test_character_classes():
  for char in ' \t\r\n\u00a0':
    assert ft._is_whitespace(char), repr(char)
  for char in 'A-':
    assert not ft._is_whitespace(char)
  assert ft._is_control('\u0005') and ft._is_control('\u200b')  # Cc and Cf
  for char in 'A \t\r\U0001F4A9':
    assert not ft._is_control(char), repr(char)
  for char in '-$`.\u00bf\u3001':
    assert ft._is_punctuation(char), repr(char)
  for char in 'A 7\u00e9':
    assert not ft._is_punctuation(char), repr(char)


def test_load_vocab_follows_google_bert(tmp_path):
  path = tmp_path / 'vocab.txt'
  path.write_bytes(b'[PAD]\r\n  a  \n\nb\na\nlast')  # CRLF, padding, a blank line, a repeat
  vocab = ft.load_vocab(str(path))
  assert isinstance(vocab, collections.OrderedDict)
  assert vocab == {'[PAD]': 0, 'a': 4, '': 2, 'b': 3, 'last': 5}
  assert list(vocab) == ['[PAD]', 'a', '', 'b', 'last']  # first-seen order, last id wins
  path.write_bytes(b'x\ny\n')
  assert ft.load_vocab(str(path)) == {'x': 0, 'y': 1}
  with pytest.raises(FileNotFoundError, match="vocab_file: no such file: '.*missing.txt'"):
    ft.load_vocab(str(tmp_path / 'missing.txt'))


def test_conversions_and_errors():
  assert ft.convert_tokens_to_ids({'a': 3, 'b': 1}, ['b', 'a']) == [1, 3]
  assert ft.convert_ids_to_tokens({3: 'a'}, [3, 3]) == ['a', 'a']
  with pytest.raises(KeyError, match="'zz' is not in the vocabulary \\(2 entries\\)"):
    ft.convert_by_vocab({'a': 3, 'b': 1}, ['a', 'zz'])
  assert ft.convert_to_unicode(b'caf\xc3\xa9\xff') == 'caf\u00e9'  # invalid bytes dropped
  assert ft.printable_text('x') == 'x' and ft.printable_text(b'x') == 'x'
  with pytest.raises(ValueError, match='text: expected str or bytes, found int'):
    ft.convert_to_unicode(3)
  assert ft.whitespace_tokenize('  a \n b\t') == ['a', 'b'] and ft.whitespace_tokenize(' ') == []


def test_validate_case_matches_checkpoint():
  ft.validate_case_matches_checkpoint(False, None)
  ft.validate_case_matches_checkpoint(False, '/ckpt/my_model/bert_model.ckpt')
  ft.validate_case_matches_checkpoint(True, 'gs://b/uncased_L-12_H-768_A-12/bert_model.ckpt')
  ft.validate_case_matches_checkpoint(False, 'gs://b/cased_L-12_H-768_A-12/bert_model.ckpt')
  with pytest.raises(ValueError, match="do_lower_case=False .*'uncased_L-12_H-768_A-12' is a "
                     'lowercased model, so expected do_lower_case=True'):
    ft.validate_case_matches_checkpoint(False, 'gs://b/uncased_L-12_H-768_A-12/bert_model.ckpt')
  with pytest.raises(ValueError, match='is a cased model, so expected do_lower_case=False'):
    ft.validate_case_matches_checkpoint(True, '/x/multi_cased_L-12_H-768_A-12/bert_model.ckpt')


@pytest.mark.parametrize('do_lower_case', [True, False])
def test_agrees_with_the_rust_wordpiece_tokenizer(tmp_path, do_lower_case):
  """Two independent implementations of BERT's tokenizer give the same ids on ordinary text."""
  words = ['hello', 'world', 'it', "'", 's', '3', '.', '14', 'o', 'clock', 'cafe', 'naive',
           'un', '##aff', '##able', 'run', '##ning', ',', '!', '?', '\u535a', '\u63a8', 'Hello',
           'Caf', '##\u00e9', 'na', '##\u00ef', '##ve', '##s', 'r', '##e', '##sum']
  vocab = list(tokenization.SPECIAL_TOKENS) + words
  vocab_file = _vocab_file(tmp_path, vocab)
  python = ft.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
  rust = tokenization.WordPieceTokenizer.from_vocab_file(vocab_file, do_lower_case)
  texts = ["Hello, world! It's 3.14 o'clock.", 'Caf\u00e9 na\u00efve r\u00e9sum\u00e9s',
           'unaffable running?\tRUNNING\nhello\u535a\u63a8world', 'xyz unknownword  , !',
           '  ', 'HELLO   World']
  for text in texts:
    tokens = python.tokenize(text)
    assert tokens == rust.tokenize(text), text
    assert python.convert_tokens_to_ids(tokens) == rust.encode_batch([text])[0], text


def _train_sentencepiece(tmp_path):
  spm = pytest.importorskip('sentencepiece')  # the [test] extra installs it
  corpus = tmp_path / 'corpus.txt'
  corpus.write_text('\n'.join(['in 1990, the city grew', 'the city of paris in 1990',
                               'a new city, a new year', 'paris grew in the year 1990'] * 5))
  prefix = str(tmp_path / 'sp')
  spm.SentencePieceTrainer.Train(
      f'--input={corpus} --model_prefix={prefix} --vocab_size=40 --model_type=bpe '
      '--character_coverage=1.0 --minloglevel=2')
  return prefix + '.model', spm


def test_full_sentencepiece_tokenizer(tmp_path):
  model_file, spm = _train_sentencepiece(tmp_path)
  tokenizer = ft.FullSentencePieceTokenizer(model_file)
  reference = spm.SentencePieceProcessor(model_file=model_file)
  assert len(tokenizer.vocab) == reference.GetPieceSize() == 40
  assert all(reference.IdToPiece(i) == piece for piece, i in tokenizer.vocab.items())
  text = 'the city grew'
  pieces = tokenizer.tokenize(text)
  assert pieces == reference.EncodeAsPieces(text)
  ids = tokenizer.convert_tokens_to_ids(pieces)
  assert ids == reference.EncodeAsIds(text) == ft.encode_ids(tokenizer.sp_model, text)
  assert tokenizer.convert_ids_to_tokens(ids) == pieces
  with pytest.raises(FileNotFoundError, match='sp_model_file: no such file'):
    ft.FullSentencePieceTokenizer(str(tmp_path / 'missing.model'))


class _FakeSentencePiece:
  """Fixed pieces per text, to exercise encode_pieces' number-comma rule deterministically."""

  def __init__(self, pieces):
    self._pieces = pieces

  def EncodeAsPieces(self, text):  # pylint: disable=invalid-name
    return list(self._pieces[text])

  def PieceToId(self, piece):  # pylint: disable=invalid-name
    return len(piece)


def test_encode_pieces_splits_a_trailing_comma_off_a_number():
  u = ft.SPIECE_UNDERLINE
  fake = _FakeSentencePiece({'in 1990, x': [u + 'in', u + '1990,', u + 'x'], '1990': [u + '1990'],
                             'ab90, x': [u + 'ab', '90,', u + 'x'], '90': [u + '90'],
                             'c7,': [u + 'c', '7,'], '7': [u, '7'], 'a,': [u + 'a,']})
  # A word-initial number keeps its marker; a number continuing a word must not gain one (the
  # marker is cut off, or dropped when it was a piece of its own); 'a,' has no digit: unchanged.
  assert ft.encode_pieces(fake, 'in 1990, x') == [u + 'in', u + '1990', ',', u + 'x']
  assert ft.encode_pieces(fake, 'ab90, x') == [u + 'ab', '90', ',', u + 'x']
  assert ft.encode_pieces(fake, 'c7,') == [u + 'c', '7', ',']
  assert ft.encode_pieces(fake, 'a,') == [u + 'a,']
  assert ft.encode_ids(fake, 'c7,') == [2, 1, 1]


def test_encode_pieces_on_a_trained_model(tmp_path):
  model_file, spm = _train_sentencepiece(tmp_path)
  pieces = ft.encode_pieces(spm.SentencePieceProcessor(model_file=model_file), 'in 1990, the')
  assert ''.join(pieces).replace(ft.SPIECE_UNDERLINE, ' ').strip() == 'in 1990, the'
  assert not any(len(p) > 1 and p.endswith(',') and p[-2].isdigit() for p in pieces)


def test_preprocess_text():
  assert ft.preprocess_text('  Caf\u00e9  au\tlait ') == 'Cafe au lait'
  assert ft.preprocess_text('  Caf\u00e9 ', lower=True) == 'cafe'
  assert ft.preprocess_text(' a  b ', remove_space=False) == ' a  b '
  assert ft.preprocess_text('\ufb01') == 'fi'  # NFKD folds the ligature
