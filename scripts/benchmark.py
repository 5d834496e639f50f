#!/usr/bin/env python3
"""`python scripts/benchmark.py ...` is `mlm-benchmark ...`: see official/nlp/tools/benchmark.py."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from official.nlp.tools import benchmark  # pylint: disable=g-import-not-at-top,wrong-import-position

if __name__ == '__main__':
  sys.exit(benchmark.main())
