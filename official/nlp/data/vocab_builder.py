"""Trains a BERT WordPiece vocabulary from text files with the Rust `tokenizers` trainer.

Writes `vocab.txt` (one token a line, id = line number; `[PAD] [UNK] [CLS] [SEP] [MASK]` first, so
`[PAD]` is 0) and `tokenizer.json` (the same vocabulary with BERT's normalizer and pre-tokenizer).
The command line is `data_tools/build_vocab.py` (`mlm-build-vocab`); `mlm-pretrain` calls it too.

Example:
  paths = build_vocab("corpus.txt", "/tmp/vocab", vocab_size=2000)
  WordPieceTokenizer.from_vocab_file(paths["vocab_file"])
"""

import os
from typing import Dict, Iterator, List, Optional, Sequence, Union

import numpy as np

from tokenizers import trainers

from official.nlp.data import text_files
from official.nlp.data import tokenization
from official.nlp.data import tokenized_corpus


def _text_batches(files: Sequence[str]) -> Iterator[List[str]]:
  for path in files:
    for lines in tokenized_corpus.iter_line_blocks(path):
      yield [line for line in lines if line is not None and line.strip()]


# Bytes a sampled read takes from one place of a file (whole lines around it).
SAMPLE_BLOCK_BYTES = 1 << 20


def _sampled_batches(files: Sequence[str], sample_bytes: int, seed: int,
                     block_bytes: int = SAMPLE_BLOCK_BYTES) -> Iterator[List[str]]:
  """About `sample_bytes` of whole lines from `files`: blocks of `block_bytes` at offsets drawn by
  `seed`, each file's share in proportion to its size; a file no larger than its share is read
  whole. Only the blocks read pass through memory.
  """
  sizes = np.array([text_files.size(path) for path in files], np.int64)
  fraction = min(1.0, sample_bytes / max(int(sizes.sum()), 1))
  rng = np.random.default_rng(np.random.SeedSequence([seed, 1 << 23]))
  for path, size in zip(files, sizes.tolist()):
    blocks = int(np.ceil(size * fraction / block_bytes))
    if blocks * block_bytes >= size:
      yield from _text_batches([path])
      continue
    # Block starts: sorted, drawn from the file's block grid (no overlap).
    starts = np.sort(rng.choice(size // block_bytes, blocks, replace=False)) * block_bytes
    with text_files.open_binary(path) as f:
      for start in starts.tolist():
        f.seek(start)
        data = f.read(block_bytes)
        if start:  # drop the partial line the block starts in
          data = data.partition(b'\n')[2]
        data = data.rpartition(b'\n')[0]  # and the one it ends in
        lines = data.decode('utf-8', errors='replace').split('\n')
        yield [line for line in lines if line.strip()]


def build_vocab(input_file: Union[str, Sequence[str]], output_dir: str, vocab_size: int = 8000,
                do_lower_case: bool = True, min_frequency: int = 2, limit_alphabet: int = 1000,
                show_progress: bool = False, sample_bytes: Optional[int] = None,
                seed: int = 12345) -> Dict[str, str]:
  """Trains a WordPiece vocabulary and writes `vocab.txt` and `tokenizer.json` into `output_dir`.

  Args:
    input_file: comma-separated list (or list) of text files and globs.
    output_dir: created if missing.
    vocab_size: target size including the special tokens and the alphabet.
    do_lower_case: lower-case and strip accents before training (as uncased BERT).
    min_frequency: minimum count of a pair to be merged.
    limit_alphabet: maximum number of distinct initial characters kept.
    show_progress: the trainer's progress bar.
    sample_bytes: learn from about this many bytes of the text (blocks of whole lines at places
      drawn by `seed`, each file's share in proportion to its size) instead of all of it: for a
      corpus too large to read in reasonable time. The trainer's memory grows with the distinct
      words it sees, not with the text. (How close a sample's vocabulary comes to the whole
      text's is not measured here.) None: all the text.
    seed: the sample's places.

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
  if sample_bytes is not None and sample_bytes < 1:
    raise ValueError(f'sample_bytes must be >= 1 (or None for all the text), found {sample_bytes}')
  batches = (_text_batches(files) if sample_bytes is None
             else _sampled_batches(files, sample_bytes, seed))
  tokenizer.train_from_iterator(batches, trainer)
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
