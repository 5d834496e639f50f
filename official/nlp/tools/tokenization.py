"""Model Garden's path of Google BERT's Python tokenizer (code: `official.nlp.data.full_tokenizer`).

Example:
  >>> from official.nlp.tools import tokenization
  >>> tokenizer = tokenization.FullTokenizer('vocab.txt', do_lower_case=True)
  >>> tokenizer.tokenize('Hello, world!')
  ['hello', ',', 'world', '!']
"""

# pylint: disable=unused-import
from official.nlp.data.full_tokenizer import SPIECE_UNDERLINE
from official.nlp.data.full_tokenizer import BasicTokenizer
from official.nlp.data.full_tokenizer import FullSentencePieceTokenizer
from official.nlp.data.full_tokenizer import FullTokenizer
from official.nlp.data.full_tokenizer import WordpieceTokenizer
from official.nlp.data.full_tokenizer import _is_control
from official.nlp.data.full_tokenizer import _is_punctuation
from official.nlp.data.full_tokenizer import _is_whitespace
from official.nlp.data.full_tokenizer import convert_by_vocab
from official.nlp.data.full_tokenizer import convert_ids_to_tokens
from official.nlp.data.full_tokenizer import convert_to_unicode
from official.nlp.data.full_tokenizer import convert_tokens_to_ids
from official.nlp.data.full_tokenizer import encode_ids
from official.nlp.data.full_tokenizer import encode_pieces
from official.nlp.data.full_tokenizer import load_vocab
from official.nlp.data.full_tokenizer import preprocess_text
from official.nlp.data.full_tokenizer import printable_text
from official.nlp.data.full_tokenizer import validate_case_matches_checkpoint
from official.nlp.data.full_tokenizer import whitespace_tokenize
