"""The launcher's share of tokenizing: folding each tokenized block's lines into sentences and
documents (`tokenized_corpus._LineFolder`), with numpy against the line-by-line reference.

The text is tokenized once in this process (the workers' `_tokenize_block`), then both folds run
over the same blocks `--repeats` times, interleaved; the sentence and document boundaries are
checked equal. Prints the medians, the time a block, and the tokenizing time a block of one
worker, whose ratio to the fold's is how many workers one launcher keeps up with. Name the CPU
beside any figure you quote.

Usage:
  .venv/bin/python scripts/benchmark_line_fold.py --input_file=pydocs.txt \
      --vocab_file=vocab/vocab.txt
"""

import argparse
import statistics
import sys
import time
from typing import Dict, List, Optional

import numpy as np

from official.nlp.data import parallel
from official.nlp.data import tokenized_corpus
from official.nlp.data import vocab_assets


def _fold(blocks, fast: bool):
  folder = tokenized_corpus._LineFolder(tokenized_corpus.CorpusStats())  # pylint: disable=protected-access
  folder.new_file()
  for block in blocks:
    if fast:
      folder.add(block.kinds, block.lengths, block.cut)
    else:
      folder._fold_lines(block.kinds, block.lengths, block.cut)  # pylint: disable=protected-access
  return folder.sentence_starts(), folder.document_starts()


def measure(input_file: str, vocab_file: str, repeats: int = 7) -> Dict[str, float]:
  """Medians in seconds: `tokenize` (all blocks, one process), `line_by_line` and `numpy` (the
  folds); and `blocks`, `lines`."""
  tokenizer = vocab_assets.load_tokenizer_from_flags(vocab_file, None, True)
  dtype = np.dtype(np.uint16 if tokenizer.vocab_size <= 1 << 16 else np.int32)
  tasks = list(tokenized_corpus._numbered_blocks([input_file]))  # pylint: disable=protected-access
  with parallel.worker_pool(1, {'tokenizer': tokenizer, 'processor_text_fn': None, 'dtype': dtype}):
    started = time.perf_counter()
    blocks = [tokenized_corpus._tokenize_block(t) for t in tasks]  # pylint: disable=protected-access
    tokenize = time.perf_counter() - started
  fast, reference = _fold(blocks, True), _fold(blocks, False)
  if not all(np.array_equal(a, b) for a, b in zip(fast, reference)):
    raise AssertionError('the numpy fold differs from the line-by-line one')
  times: Dict[str, List[float]] = {'line_by_line': [], 'numpy': []}
  for _ in range(repeats):
    for name in times:
      started = time.perf_counter()
      _fold(blocks, name == 'numpy')
      times[name].append(time.perf_counter() - started)
  result = {name: statistics.median(values) for name, values in times.items()}
  return dict(result, tokenize=tokenize, blocks=len(blocks),
              lines=sum(len(b.kinds) for b in blocks))


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--input_file', required=True)
  parser.add_argument('--vocab_file', required=True)
  parser.add_argument('--repeats', type=int, default=7)
  args = parser.parse_args(argv)
  found = measure(args.input_file, args.vocab_file, args.repeats)
  blocks = found['blocks']
  per_block = found['tokenize'] / blocks
  print(f"{blocks} blocks, {found['lines']} lines; tokenizing {found['tokenize']:.3f} s "
        f'({per_block * 1e3:.1f} ms a block, one process, word cache cold)')
  for name in ('line_by_line', 'numpy'):
    fold = found[name] / blocks
    print(f'{name}: {found[name] * 1e3:.1f} ms ({fold * 1e3:.3f} ms a block; one launcher keeps '
          f'up with about {per_block / fold:.0f} workers)')
  return 0


if __name__ == '__main__':
  sys.exit(main())
