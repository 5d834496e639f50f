"""Tiny Hugging Face folders made locally with `transformers` (a test-only dependency), shared by
the tests of continued pretraining, the BPE round trip and the docs' shell blocks.

Example:
  >>> folder = write_bert(tmp_path / 'bert', ['w0', 'w1'])   # BertForMaskedLM + vocab.txt
  >>> folder = write_modernbert(tmp_path / 'modern')          # ModernBERT + BPE tokenizer.json
"""

import os
import pathlib
from typing import Sequence

os.environ.setdefault('USE_TF', '0')  # transformers must not reach for TensorFlow itself

# The tiny ModernBERT's sizes; its token ids are those of bpe_tokenizers.BERT_SPECIALS:
# [CLS] 0, [SEP] 1, [MASK] 2, [PAD] 3.
MODERNBERT_VOCAB_SIZE = 300
MODERNBERT_TOKEN_IDS = dict(cls_token_id=0, bos_token_id=0, sep_token_id=1, eos_token_id=1,
                            pad_token_id=3)
MODERNBERT = dict(vocab_size=MODERNBERT_VOCAB_SIZE, hidden_size=32, intermediate_size=48,
                  num_hidden_layers=2, num_attention_heads=4, local_attention=8,
                  global_attn_every_n_layers=2, max_position_embeddings=64, **MODERNBERT_TOKEN_IDS)


def write_bert(folder: pathlib.Path, words: Sequence[str]) -> pathlib.Path:
  """A BertForMaskedLM (2 layers of 32, random weights) with a WordPiece vocab.txt of BERT's
  special tokens, '.' and `words`, saved in `folder`."""
  import transformers  # pylint: disable=g-import-not-at-top
  folder = pathlib.Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', '.'] + list(words)
  (folder / 'vocab.txt').write_text(''.join(t + '\n' for t in vocab), encoding='utf-8')
  config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                   num_attention_heads=2, intermediate_size=64,
                                   max_position_embeddings=64)
  transformers.BertForMaskedLM(config).save_pretrained(str(folder))
  return folder


def write_modernbert(root: pathlib.Path) -> pathlib.Path:
  """A ModernBertForMaskedLM (sizes `MODERNBERT`, weights spread out so that predictions differ)
  with a byte-level BPE tokenizer saved as transformers saves one (tokenizer.json +
  tokenizer_config.json, no vocab.txt), in `root`/hf; its training text is `root`/corpus.txt."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  from tests.nlp.data import bpe_tokenizers as bt  # pylint: disable=g-import-not-at-top
  root = pathlib.Path(root)
  root.mkdir(parents=True, exist_ok=True)
  lines = bt.corpus_lines(200)
  (root / 'corpus.txt').write_text(bt.documents_text(lines), encoding='utf-8')
  tokenizer_json = bt.byte_level_bpe(root / 'tok' / 'tokenizer.json', lines,
                                     vocab_size=MODERNBERT_VOCAB_SIZE)
  folder = root / 'hf'
  torch.manual_seed(0)
  model = transformers.ModernBertForMaskedLM(transformers.ModernBertConfig(**MODERNBERT)).eval()
  generator = torch.Generator().manual_seed(0)
  with torch.no_grad():
    for name, parameter in model.named_parameters():
      noise = torch.randn(parameter.shape, generator=generator)
      parameter.copy_(1.0 + 0.2 * noise if 'norm' in name else 0.3 * noise)
  model.save_pretrained(folder)
  transformers.PreTrainedTokenizerFast(
      tokenizer_file=tokenizer_json, cls_token='[CLS]', sep_token='[SEP]', mask_token='[MASK]',
      pad_token='[PAD]', unk_token='[UNK]').save_pretrained(folder)
  return folder
