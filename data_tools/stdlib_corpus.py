"""Writes a pretraining corpus of the docstrings of the running interpreter's standard library.

The command line of official/nlp/data/stdlib_corpus.py, which says how the corpus is made
(one sentence a line, a blank line between documents; no download).

Usage:
  python -m data_tools.stdlib_corpus --output_file=/tmp/stdlib.txt
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import sys
from typing import Optional, Sequence

from absl import flags

from official.common import cli_utils
# The library functions, re-exported.
from official.nlp.data.stdlib_corpus import docstring_sentences  # noqa: F401
from official.nlp.data.stdlib_corpus import iter_documents  # noqa: F401
from official.nlp.data.stdlib_corpus import write_stdlib_corpus


def _define_flags() -> flags.FlagValues:
  fv = flags.FlagValues()
  flags.DEFINE_string('output_file', None, 'The corpus file to write.', flag_values=fv)
  flags.DEFINE_integer('max_documents', None, 'Stop after this many documents.', flag_values=fv)
  flags.mark_flag_as_required('output_file', flag_values=fv)
  return fv


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point (`data_tools.stdlib_corpus:main`)."""
  fv = _define_flags()
  status = cli_utils.parse_flags(fv, argv, 'stdlib_corpus', __doc__)
  if status is not None:
    return status
  stats = write_stdlib_corpus(fv.output_file, fv.max_documents)
  print(f"wrote {fv.output_file}: {stats['documents']} documents, {stats['sentences']} sentences, "
        f"{stats['bytes'] / 1e6:.1f} MB from {stats['files']} files "
        f"({stats['unparsable_files']} unparsable)")
  return 0


if __name__ == '__main__':
  sys.exit(main())
