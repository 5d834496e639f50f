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

import sys
from typing import Optional, Sequence

from absl import flags

from official.common import cli_utils
from official.nlp.data import tokenization
from official.nlp.data.vocab_builder import build_vocab  # the library function, re-exported


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
  flags.DEFINE_integer('sample_bytes', None, 'Learn from about this many bytes of the text '
                       '(blocks of whole lines at seeded places, each file\'s share by size) '
                       'instead of all of it: for a corpus too large to read whole.',
                       lower_bound=1, flag_values=fv)
  flags.DEFINE_integer('seed', 12345, 'The places of --sample_bytes\' blocks.', flag_values=fv)
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
                        fv.min_frequency, fv.limit_alphabet, show_progress=sys.stderr.isatty(),
                        sample_bytes=fv.sample_bytes, seed=fv.seed)
  except (ValueError, FileNotFoundError) as e:
    print(f'build_vocab: error: {e}', file=sys.stderr)
    return 1
  size = len(
      tokenization.WordPieceTokenizer.from_vocab_file(paths['vocab_file'], fv.do_lower_case).vocab)
  print(f"wrote {paths['vocab_file']} ({size} tokens) and {paths['tokenizer_json']}")
  return 0


if __name__ == '__main__':
  sys.exit(main())
