#!/usr/bin/env python3
"""Training speed of mlm-garden and of Hugging Face `transformers` (PyTorch) in one run (issue 30).

The command line of official/benchmark/compare_hf.py (which says what is timed and how: each
framework in its own child process, taking turns, each against its own matmul roofline).
`--dtypes`, the old name of `--precisions`, still works (with a note on stderr).

Usage (torch and transformers come with the test extra):
  .venv/bin/python scripts/compare_hf.py --output_json=/tmp/compare_hf.json
  # smoke run at tiny sizes (under 2 minutes on 2 loaded cores; each compiled variant adds
  # about a minute of torch.compile):
  .venv/bin/python scripts/compare_hf.py --models=bert_tiny,modernbert_tiny --batch_size=4 \
      --seq_length=32 --rounds=2 --steps_per_round=2 --matmul_size=256 --modes=eager
  # short runs at the real sizes, one model and mode at a time on a 2-core machine:
  .venv/bin/python scripts/compare_hf.py --models=modernbert_mini --modes=eager --rounds=2 \
      --steps_per_round=3 --warmup_steps=1
  .venv/bin/python scripts/compare_hf.py --models=modernbert_mini --precisions=bfloat16 \
      --modes=compile --rounds=2 --steps_per_round=3 --warmup_steps=1 --threads=1
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from official.benchmark.compare_hf import main  # pylint: disable=g-import-not-at-top,wrong-import-position

if __name__ == '__main__':
  sys.exit(main())
