#!/usr/bin/env python3
"""The embedded demo (`make demo`): pretrain BERT-tiny on the Python standard library's docstrings.

The command line of official/nlp/tools/demo.py, which says what the demo does and prints (about 3
minutes, no download).

Usage:
  python scripts/demo.py [--output_dir=demo_output] [--minutes=3] [--batch_size=64]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

from official.common import quiet  # pylint: disable=g-import-not-at-top,wrong-import-position
quiet.quiet_cli(__name__)  # hides TensorFlow's start-up lines here too (--verbose keeps them)
from official.nlp.tools import demo  # pylint: disable=g-import-not-at-top,wrong-import-position

main = demo.main  # tests/test_docs.py reads the flags of `main`

if __name__ == '__main__':
  sys.exit(main())
