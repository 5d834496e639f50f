"""Where the repository is, for tests that read its files or run its scripts.

Example:
  >>> from tests.paths import ROOT
  >>> os.path.join(ROOT, 'configs', 'pretraining', 'bert_tiny.yaml')
"""

import os

# The repository root (the directory holding `official`, `orbit`, `tests`, `scripts`, ...).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
