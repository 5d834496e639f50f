"""What the three how-to examples share: the model-size flags and their tiny pretraining records.

The how-to (masked-LM pretraining with Model Garden's API) builds BERT-base on TFRecords of its
own. The examples in this directory run its code as printed, with two changes only: the model size
is a flag (default: a small model that trains in seconds on a CPU; the how-to's sizes are noted
on each flag) and the records are local files made here with our data tool: a corpus of the Python
standard library's docstrings (no download), a WordPiece vocabulary of `--vocab_size` tokens, and
masked-LM records (`official.nlp.data.create_pretraining_data`) for training and validation.

Usage (the examples call it themselves when no records are given):
  python examples/howto_common.py --output_dir=/tmp/howto [--max_documents=600] \
      [--vocab_size=1000] [--seq_length=64] [--max_predictions_per_seq=10]
"""

import argparse
import os
import sys
from typing import Dict, List, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)

from official.common import quiet  # pylint: disable=g-import-not-at-top,wrong-import-position
quiet.quiet_cli(__name__)  # hides TensorFlow's start-up lines (--verbose keeps them)

from data_tools import build_vocab  # pylint: disable=g-import-not-at-top,wrong-import-position
from data_tools import stdlib_corpus  # pylint: disable=g-import-not-at-top,wrong-import-position
from official.nlp.data import create_pretraining_data  # pylint: disable=wrong-import-position

DEFAULT_OUTPUT_DIR = '/tmp/howto_data'
# The vocabulary the records are made with; the examples' `--vocab_size` must match it.
VOCAB_SIZE = 1000
# One document in ten goes to the validation records.
VALIDATION_SHARE = 10


def add_size_flags(parser: argparse.ArgumentParser) -> None:
  """Adds the model and data size flags (defaults: small; the how-to's sizes in the help).

  Example:
    >>> parser = argparse.ArgumentParser()
    >>> add_size_flags(parser)
    >>> parser.parse_args([]).hidden_size
    128
  """
  parser.add_argument('--hidden_size', type=int, default=128, help='the how-to: 768')
  parser.add_argument('--num_layers', type=int, default=2, help='the how-to: 12')
  parser.add_argument('--num_heads', type=int, default=2, help='the how-to: 12')
  parser.add_argument('--intermediate_size', type=int, default=512, help='the how-to: 3072')


def add_data_flags(parser: argparse.ArgumentParser) -> None:
  """Adds the record paths (default: made here) and their sizes.

  Example:
    >>> parser = argparse.ArgumentParser()
    >>> add_data_flags(parser)
    >>> parser.parse_args([]).seq_length
    64
  """
  parser.add_argument('--train_path', default=None,
                      help='training TFRecords (default: made in --output_dir)')
  parser.add_argument('--validation_path', default=None, help='validation TFRecords')
  parser.add_argument('--output_dir', default=DEFAULT_OUTPUT_DIR,
                      help='where the records are made when no paths are given')
  parser.add_argument('--vocab_size', type=int, default=VOCAB_SIZE,
                      help="the records' vocabulary size (the how-to: 30522)")
  parser.add_argument('--seq_length', type=int, default=64, help='the how-to: 512')
  parser.add_argument('--max_predictions_per_seq', type=int, default=10, help='the how-to: 76')
  parser.add_argument('--global_batch_size', type=int, default=16, help='the how-to: 128')


def resolve_records(args: argparse.Namespace) -> None:
  """Makes the records in `args.output_dir` unless `--train_path` is given (in place).

  Example:
    >>> resolve_records(args)
    >>> args.train_path
    '/tmp/howto_data/train.tfrecord'
  """
  if args.train_path:
    args.validation_path = args.validation_path or args.train_path
    return
  paths = prepare_data(args.output_dir, vocab_size=args.vocab_size, seq_length=args.seq_length,
                       max_predictions_per_seq=args.max_predictions_per_seq)
  args.train_path, args.validation_path = paths['train'], paths['validation']


def _write_documents(path: str, documents: List[List[str]]) -> None:
  """One sentence a line, a blank line between documents (the BERT corpus format)."""
  with open(path, 'w', encoding='utf-8', newline='\n') as f:
    f.write('\n'.join(''.join(sentence + '\n' for sentence in doc) for doc in documents))


def prepare_data(output_dir: str, max_documents: int = 600, vocab_size: int = VOCAB_SIZE,
                 seq_length: int = 64, max_predictions_per_seq: int = 10) -> Dict[str, str]:
  """Writes a tiny corpus, its vocabulary and masked-LM records for training and validation.

  Args:
    output_dir: created if missing; gets `train.txt`, `validation.txt`, `vocab/vocab.txt`,
      `train.tfrecord` and `validation.tfrecord` (each with its metadata file).
    max_documents: docstrings of the standard library taken (one in ten for validation).
    vocab_size: the WordPiece vocabulary's size (exactly; fewer learnable tokens raise).
    seq_length, max_predictions_per_seq: the records' shapes.

  Returns:
    `{'train': path, 'validation': path, 'vocab_file': path}`.

  Raises:
    ValueError: the corpus is too small for a vocabulary of `vocab_size` tokens.

  Example:
    >>> prepare_data('/tmp/howto_data')['train']
    '/tmp/howto_data/train.tfrecord'
  """
  os.makedirs(output_dir, exist_ok=True)
  documents = []
  for document in stdlib_corpus.iter_documents():
    if len(documents) >= max_documents:
      break
    documents.append(document)
  splits = {'train': [d for i, d in enumerate(documents) if i % VALIDATION_SHARE],
            'validation': documents[::VALIDATION_SHARE]}
  for split, docs in splits.items():
    _write_documents(os.path.join(output_dir, f'{split}.txt'), docs)
  vocab_file = build_vocab.build_vocab(os.path.join(output_dir, 'train.txt'),
                                       os.path.join(output_dir, 'vocab'),
                                       vocab_size=vocab_size)['vocab_file']
  with open(vocab_file, encoding='utf-8') as f:
    learnt = sum(1 for _ in f)
  if learnt != vocab_size:
    raise ValueError(f'{max_documents} documents give a vocabulary of {learnt} tokens, not '
                     f'{vocab_size}: take more documents or a smaller vocab_size')
  paths = {'vocab_file': vocab_file}
  for split, seed in (('train', 12345), ('validation', 54321)):
    paths[split] = os.path.join(output_dir, f'{split}.tfrecord')
    create_pretraining_data.create_pretraining_data(
        os.path.join(output_dir, f'{split}.txt'), paths[split], vocab_file=vocab_file,
        max_seq_length=seq_length, max_predictions_per_seq=max_predictions_per_seq,
        dupe_factor=2, random_seed=seed)
  return paths


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--output_dir', default=DEFAULT_OUTPUT_DIR)
  parser.add_argument('--max_documents', type=int, default=600)
  parser.add_argument('--vocab_size', type=int, default=VOCAB_SIZE)
  parser.add_argument('--seq_length', type=int, default=64)
  parser.add_argument('--max_predictions_per_seq', type=int, default=10)
  args = parser.parse_args(argv)
  paths = prepare_data(args.output_dir, args.max_documents, args.vocab_size, args.seq_length,
                       args.max_predictions_per_seq)
  for name, path in paths.items():
    print(f'{name}: {path}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
