"""Tests for official/nlp/tools/fill_mask.py."""

import pytest

from official.nlp.data import tokenization
from official.nlp.modeling import layers
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.tools import fill_mask

WORDS = ['return', 'a', 'copy', 'of', 'the', 'list', '.']


@pytest.fixture(name='tokenizer')
def _tokenizer(tmp_path):
  path = tmp_path / 'vocab.txt'
  path.write_text('\n'.join(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + WORDS) + '\n')
  return tokenization.WordPieceTokenizer.from_vocab_file(str(path))


def test_encode_keeps_mask_tokens(tokenizer):
  inputs, counts = fill_mask.encode_masked_texts(
      tokenizer, ['Return a [MASK] of the list.', '[MASK] [MASK] .'], seq_length=12)
  ids = tokenizer.token_to_id
  assert counts == [1, 2]
  assert list(inputs['input_word_ids'][0, :9]) == [ids[t] for t in [
      '[CLS]', 'return', 'a', '[MASK]', 'of', 'the', 'list', '.', '[SEP]']]
  assert list(inputs['masked_lm_positions'][0]) == [3, 0]
  assert list(inputs['masked_lm_positions'][1]) == [1, 2]
  assert inputs['input_mask'][0].sum() == 9
  with pytest.raises(ValueError, match='has no \\[MASK\\]'):
    fill_mask.encode_masked_texts(tokenizer, ['no mask here'], 12)
  with pytest.raises(ValueError, match='seq_length is 4'):
    fill_mask.encode_masked_texts(tokenizer, ['Return a [MASK] of the list.'], 4)


def test_fill_mask_returns_sorted_probabilities(tokenizer):
  encoder = networks.BertEncoder(vocab_size=len(tokenizer.vocab), hidden_size=8, num_layers=1,
                                 num_attention_heads=2, inner_dim=16, max_sequence_length=16,
                                 dict_outputs=True)
  pretrainer = models.BertPretrainerV2(encoder, classification_heads=[
      layers.ClassificationHead(8, 2, name='next_sentence')])
  results = fill_mask.fill_mask(pretrainer, tokenizer, ['Return a [MASK] of the list.'], top_k=3,
                                seq_length=16)
  (guesses,), = results
  assert len(guesses) == 3
  probabilities = [p for _, p in guesses]
  assert probabilities == sorted(probabilities, reverse=True)
  assert all(token in tokenizer.vocab for token, _ in guesses)
  assert 0 < sum(probabilities) <= 1.0 + 1e-6
