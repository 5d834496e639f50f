#!/usr/bin/env python3
"""Runs Model Garden's own unit tests against this checkout and prints pass counts per file.

The command line of official/benchmark/model_garden_tests.py (which says how); `--peer` runs the
same files against Model Garden itself, with a Python that has it (e.g. the throwaway venv of
scripts/compare_model_garden.sh).

Example:
    python scripts/run_model_garden_tests.py --set=core
    python scripts/run_model_garden_tests.py --set=wide --files=official/core/registry_test.py
    /tmp/mg-venv/bin/python scripts/run_model_garden_tests.py --peer --set=all
"""

import os
import sys

# The checkout first: under Model Garden's Python (--peer) `official` would be Model Garden's.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from official.benchmark import model_garden_tests  # pylint: disable=g-import-not-at-top,wrong-import-position

main = model_garden_tests.main  # tests/test_docs.py reads the flags of `main`

if __name__ == '__main__':
  sys.exit(main())
