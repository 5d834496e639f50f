"""The padding fraction of the BERT recipe's records against the packed (ModernBERT-class) recipe's.

One corpus and one WordPiece vocabulary; the records are written with
`official.nlp.data.create_pretraining_data`, and each recipe's padding fraction (padding tokens
over all the tokens of its rows) is read back from the metadata file next to its records:

  * bert: sentence pairs with next-sentence prediction, 15% masked, 128 tokens a row, each row
    padded after its pair (Google BERT's data, `short_seq_prob` 0.1);
  * packed-128 and packed-512: `pack=True` (documents back to back, a document cut at a row end
    going on in the next row), 30% masked, 128 and 512 tokens a row.

The corpus is the Python documentation (`scripts/make_python_docs_corpus.py`, from Debian's
`python3.11-doc`) when its sources are installed, else the docstrings of the running
interpreter's standard library (`data_tools.stdlib_corpus`), which every machine has; the output
says which. Nothing is downloaded.

Usage:
  .venv/bin/python scripts/padding_fraction.py --work_dir=/tmp/padding_fraction
"""

import argparse
import glob
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional, Tuple

from data_tools import build_vocab
from data_tools import stdlib_corpus
from official.nlp.data import create_pretraining_data as cpd
from official.nlp.data import data_metadata

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_DOCS_SOURCES = '/usr/share/doc/python3.11/html/_sources'
# name, options of create_pretraining_data
RECIPES: List[Tuple[str, Dict[str, Any]]] = [
    ('bert', dict(max_seq_length=128, masked_lm_prob=0.15, max_predictions_per_seq=20)),
    ('packed-128', dict(max_seq_length=128, masked_lm_prob=0.3, max_predictions_per_seq=38,
                        pack=True)),
    ('packed-512', dict(max_seq_length=512, masked_lm_prob=0.3, max_predictions_per_seq=154,
                        pack=True)),
]


def make_corpus(work_dir: str, docs_sources: str = _DOCS_SOURCES) -> Tuple[str, str]:
  """Writes the corpus into `work_dir`: the Python documentation if its sources are there, else
  the standard library's docstrings.

  Returns:
    `(corpus path, what it is)`.

  Example:
    path, description = make_corpus('/tmp/padding_fraction')
  """
  if glob.glob(os.path.join(docs_sources, '**', '*.rst.txt'), recursive=True):
    path = os.path.join(work_dir, 'python_docs.txt')
    subprocess.run([sys.executable, os.path.join(_REPO, 'scripts', 'make_python_docs_corpus.py'),
                    f'--source_dir={docs_sources}', f'--output_file={path}'], check=True)
    return path, f'the Python documentation ({docs_sources}, make_python_docs_corpus.py)'
  path = os.path.join(work_dir, 'stdlib_docstrings.txt')
  stats = stdlib_corpus.write_stdlib_corpus(path)
  return path, (f'the standard library docstrings (data_tools.stdlib_corpus; no Python '
                f"documentation at {docs_sources}): {stats['documents']} documents, "
                f"{stats['bytes'] / 1e6:.1f} MB")


def measure(work_dir: str, vocab_size: int = 8000, dupe_factor: int = 1,
            num_workers: Optional[int] = None,
            docs_sources: str = _DOCS_SOURCES) -> Tuple[str, List[Dict[str, Any]]]:
  """Writes the corpus, the vocabulary and each recipe's records into `work_dir`.

  Returns:
    `(the corpus's description, one row per recipe)`: name, max_seq_length, masked_lm_prob,
    records, tokens, padding_fraction, pieces_per_row (packed), mask_rate, records_per_second.

  Example:
    corpus, rows = measure('/tmp/padding_fraction', vocab_size=8000)
  """
  os.makedirs(work_dir, exist_ok=True)
  corpus, description = make_corpus(work_dir, docs_sources)
  vocab = build_vocab.build_vocab(corpus, os.path.join(work_dir, 'vocab'), vocab_size=vocab_size)
  rows = []
  for name, options in RECIPES:
    metadata = cpd.create_pretraining_data(
        corpus, os.path.join(work_dir, name, 'train.tfrecord'), vocab['vocab_file'],
        dupe_factor=dupe_factor, num_workers=num_workers, **options)
    rows.append(dict(
        name=name, max_seq_length=metadata['max_seq_length'],
        masked_lm_prob=metadata['masked_lm_prob'], records=metadata['num_instances'],
        tokens=metadata['num_tokens'], padding_fraction=data_metadata.padding_fraction(metadata),
        pieces_per_row=(metadata['num_pieces'] / metadata['num_instances']
                        if metadata['packed'] else None),
        mask_rate=metadata['num_masked_tokens'] / metadata['num_tokens'],
        records_per_second=metadata['num_instances'] / metadata['elapsed_seconds']))
  return description, rows


def format_table(rows: List[Dict[str, Any]]) -> str:
  """The rows of `measure` as a Markdown table."""
  lines = ['| recipe | seq | masked | records | padding fraction | pieces/row | mask rate | '
           'records/s |', '|---|---:|---:|---:|---:|---:|---:|---:|']
  for row in rows:
    pieces = '-' if row['pieces_per_row'] is None else f"{row['pieces_per_row']:.2f}"
    lines.append(f"| {row['name']} | {row['max_seq_length']} | {row['masked_lm_prob']:.2f} | "
                 f"{row['records']} | {row['padding_fraction']:.4f} | {pieces} | "
                 f"{row['mask_rate']:.3f} | {row['records_per_second']:.0f} |")
  return '\n'.join(lines)


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--work_dir', default='/tmp/padding_fraction')
  parser.add_argument('--vocab_size', type=int, default=8000)
  parser.add_argument('--dupe_factor', type=int, default=1)
  parser.add_argument('--num_workers', type=int, default=None)
  parser.add_argument('--docs_sources', default=_DOCS_SOURCES,
                      help='the reStructuredText sources of the Python documentation')
  args = parser.parse_args(argv)
  description, rows = measure(args.work_dir, args.vocab_size, args.dupe_factor, args.num_workers,
                              args.docs_sources)
  print(f'corpus: {description}; vocabulary: {args.vocab_size} WordPiece tokens; dupe_factor '
        f'{args.dupe_factor}')
  print(format_table(rows))
  return 0


if __name__ == '__main__':
  sys.exit(main())
