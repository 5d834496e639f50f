#!/usr/bin/env python3
"""Model Garden vs mlm-garden, the same config and records through both frameworks.

The command line of official/benchmark/compare_model_garden.py (which says what it runs and
prints); scripts/compare_model_garden.sh runs its `run` subcommand with the project's Python.

Example:
  python scripts/compare_model_garden.py run --work_dir=/tmp/mg-compare --steps=600
  python scripts/compare_model_garden.py summarize /tmp/mg-compare/runs/* --json=results.json
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

from official.common import quiet  # pylint: disable=g-import-not-at-top,wrong-import-position
quiet.quiet_cli(__name__)  # hides TensorFlow's start-up lines here too (--verbose keeps them)
from official.benchmark import compare_model_garden  # pylint: disable=g-import-not-at-top,wrong-import-position

main = compare_model_garden.main  # tests/test_docs.py reads the flags of `main`

if __name__ == '__main__':
  sys.exit(main())
