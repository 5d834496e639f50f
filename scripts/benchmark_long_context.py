#!/usr/bin/env python3
"""Long context: tokens/s and peak memory of ModernBERT against BERT of the same width and depth.

The command line of `official/benchmark/long_context.py` (the measurement, its flags and the
table are there). Each model and sequence length is measured in a child process.

Usage:
  .venv/bin/python scripts/benchmark_long_context.py --json=/tmp/long_context.json
  .venv/bin/python scripts/benchmark_long_context.py --seq_lengths=512,2048 --steps=3
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from official.benchmark import long_context  # pylint: disable=wrong-import-position

main = long_context.main  # `main(argv)`: what tests and the docs checks call in-process

if __name__ == '__main__':
  main()
