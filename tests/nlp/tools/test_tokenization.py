"""official/nlp/tools/tokenization.py is Model Garden's path of official/nlp/data/full_tokenizer."""

from official.nlp.data import full_tokenizer
from official.nlp.tools import tokenization

NAMES = ['FullTokenizer', 'BasicTokenizer', 'WordpieceTokenizer', 'FullSentencePieceTokenizer',
         'load_vocab', 'convert_to_unicode', 'printable_text', 'convert_by_vocab',
         'convert_tokens_to_ids', 'convert_ids_to_tokens', 'whitespace_tokenize',
         'validate_case_matches_checkpoint', 'preprocess_text', 'encode_pieces', 'encode_ids',
         'SPIECE_UNDERLINE', '_is_whitespace', '_is_control', '_is_punctuation']


def test_reexports_the_implementation():
  for name in NAMES:
    assert getattr(tokenization, name) is getattr(full_tokenizer, name), name


def test_tokenizes_through_model_garden_path(tmp_path):
  vocab = tmp_path / 'vocab.txt'
  vocab.write_text('[UNK]\nhello\n,\nworld\n!\n')
  tokenizer = tokenization.FullTokenizer(str(vocab), do_lower_case=True)
  tokens = tokenizer.tokenize('Hello, World!')
  assert tokens == ['hello', ',', 'world', '!']
  assert tokenizer.convert_tokens_to_ids(tokens) == [1, 2, 3, 4]
