#!/usr/bin/env python3
"""Writes a plain-text pretraining corpus from the Python documentation sources of Debian's
`python3.X-doc`.

The command line of `official/nlp/data/python_docs_corpus.py` (the reading of the sources and the
corpus format are described there).

Usage:
  python scripts/make_python_docs_corpus.py --output_file=/tmp/pydocs.txt
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from official.nlp.data import python_docs_corpus  # pylint: disable=wrong-import-position

main = python_docs_corpus.main  # `main(argv)`: what tests and the docs checks call in-process

if __name__ == "__main__":
  sys.exit(main())
