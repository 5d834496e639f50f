"""Trains a BERT WordPiece vocabulary from text files with the Rust `tokenizers` trainer.

Writes `vocab.txt` (one token a line, id = line number; `[PAD] [UNK] [CLS] [SEP] [MASK]` first, so
`[PAD]` is 0) and `tokenizer.json` (the same vocabulary with BERT's normalizer and pre-tokenizer)
into `--output_dir`. Either file can be given to `create_pretraining_data` (`--vocab_file` or
`--tokenizer_json`).

The default `--vocab_size` is 8000, sized for corpora of a few MB such as the stdlib docstring
corpus (BERT's English vocabularies have 30522 tokens, trained on billions of words). Invalid UTF-8
lines are reported and skipped.

Usage:
  python -m data_tools.build_vocab --input_file=corpus.txt --output_dir=vocab/ --vocab_size=8000
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import os
import sys
from typing import Dict, Iterator, List, Optional, Sequence, Union

from absl import flags
from tokenizers import trainers

from official.common import cli_utils
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


def _define_flags() -> flags.FlagValues:
  fv = flags.FlagValues()
  flags.DEFINE_string('input_file', None, 'Comma-separated text files or globs.', flag_values=fv)
  flags.DEFINE_string('output_dir', None, 'Where vocab.txt and tokenizer.json are written.',
                      flag_values=fv)
  flags.DEFINE_integer('vocab_size', 8000, 'Vocabulary size including special tokens.',
                       flag_values=fv)
  flags.DEFINE_bool('do_lower_case', True, 'Lower-case and strip accents.', flag_values=fv)
  flags.DEFINE_integer('min_frequency', 2, 'Minimum pair count to merge.', flag_values=fv)
  flags.DEFINE_integer('limit_alphabet', 1000, 'Maximum number of initial characters.',
                       flag_values=fv)
  flags.mark_flags_as_required(['input_file', 'output_dir'], flag_values=fv)
  return fv


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point (`data_tools.build_vocab:main`)."""
  fv = _define_flags()
  status = cli_utils.parse_flags(fv, argv, 'build_vocab', __doc__)
  if status is not None:
    return status
  try:
    paths = build_vocab(fv.input_file, fv.output_dir, fv.vocab_size, fv.do_lower_case,
                        fv.min_frequency, fv.limit_alphabet, show_progress=sys.stderr.isatty())
  except (ValueError, FileNotFoundError) as e:
    print(f'build_vocab: error: {e}', file=sys.stderr)
    return 1
  size = len(
      tokenization.WordPieceTokenizer.from_vocab_file(paths['vocab_file'], fv.do_lower_case).vocab)
  print(f"wrote {paths['vocab_file']} ({size} tokens) and {paths['tokenizer_json']}")
  return 0


if __name__ == '__main__':
  sys.exit(main())
