"""Trains a BERT WordPiece vocabulary from text files with the Rust `tokenizers` trainer.

Writes `vocab.txt` (one token a line, id = line number; `[PAD] [UNK] [CLS] [SEP] [MASK]` first, so
`[PAD]` is 0) and `tokenizer.json` (the same vocabulary with BERT's normalizer and pre-tokenizer).
The command line is `data_tools/build_vocab.py` (`mlm-build-vocab`); `mlm-pretrain` calls it too.

Example:
  paths = build_vocab("corpus.txt", "/tmp/vocab", vocab_size=2000)
  WordPieceTokenizer.from_vocab_file(paths["vocab_file"])
"""

import os
from typing import Dict, Iterator, List, Sequence, Union

from tokenizers import trainers

from official.nlp.data import tokenization
from official.nlp.data import tokenized_corpus


def _text_batches(files: Sequence[str]) -> Iterator[List[str]]:
  for path in files:
    for lines in tokenized_corpus.iter_line_blocks(path):
      yield [line for line in lines if line is not None and line.strip()]


def build_vocab(input_file: Union[str, Sequence[str]], output_dir: str, vocab_size: int = 8000,
                do_lower_case: bool = True, min_frequency: int = 2, limit_alphabet: int = 1000,
                show_progress: bool = False) -> Dict[str, str]:
  """Trains a WordPiece vocabulary and writes `vocab.txt` and `tokenizer.json` into `output_dir`.

  Args:
    input_file: comma-separated list (or list) of text files and globs.
    output_dir: created if missing.
    vocab_size: target size including the special tokens and the alphabet.
    do_lower_case: lower-case and strip accents before training (as uncased BERT).
    min_frequency: minimum count of a pair to be merged.
    limit_alphabet: maximum number of distinct initial characters kept.
    show_progress: the trainer's progress bar.

  Returns:
    `{"vocab_file": path, "tokenizer_json": path}`.

  Example:
    paths = build_vocab("corpus.txt", "/tmp/vocab", vocab_size=2000)
    WordPieceTokenizer.from_vocab_file(paths["vocab_file"])
  """
  if vocab_size < len(tokenization.SPECIAL_TOKENS) + 1:
    raise ValueError(f'vocab_size must be > {len(tokenization.SPECIAL_TOKENS)}, found {vocab_size}')
  files = tokenized_corpus.expand_input_files(input_file)
  tokenizer = tokenization.bert_wordpiece_tokenizer(None, do_lower_case)
  trainer = trainers.WordPieceTrainer(
      vocab_size=vocab_size, min_frequency=min_frequency, show_progress=show_progress,
      special_tokens=list(tokenization.SPECIAL_TOKENS), limit_alphabet=limit_alphabet,
      continuing_subword_prefix=tokenization.CONTINUATION_PREFIX)
  tokenizer.train_from_iterator(_text_batches(files), trainer)
  token_to_id = tokenizer.get_vocab()
  vocab = sorted(token_to_id, key=token_to_id.get)
  if len(vocab) <= len(tokenization.SPECIAL_TOKENS):
    raise ValueError(f'input_file {files}: no text to learn a vocabulary from')
  os.makedirs(output_dir, exist_ok=True)
  vocab_file = os.path.join(output_dir, 'vocab.txt')
  with open(vocab_file, 'w', encoding='utf-8') as f:
    f.write(''.join(token + '\n' for token in vocab))
  tokenizer_json = os.path.join(output_dir, 'tokenizer.json')
  tokenizer.save(tokenizer_json)
  return {'vocab_file': vocab_file, 'tokenizer_json': tokenizer_json}
