"""Tests of official/nlp/data/python_docs_corpus.py (`scripts/make_python_docs_corpus.py`)."""

import os

import pytest

from official.nlp.data import python_docs_corpus
from tests import cli

ZLIB = """:mod:`zlib` --- Compression
===========================

The :func:`compress` function packs data. See `the manual <https://zlib.net>`_ for more.
It is **fast** and *small*. Use ``level`` to choose.

.. note:: Levels go from 0 to 9.

.. code-block:: python

   import zlib
   zlib.compress(b"abc")

.. index:: single: deflate
   hidden index text

Functions
---------

An example follows::

   data = zlib.compress(raw)
   x

>>> print(len(zlib.compress(b"ab")))
11

+-------+-------+
| a b   | c d   |
+-------+-------+

* First item of a list.
#. Numbered item here.
1. Another numbered item.

Word

.. _target:

Last words of the section. Another sentence here!
"""
ABOUT = """About these documents
=====================

These documents are generated from sources. They use Sphinx.
"""
# Sorted paths: about.rst.txt before library/zlib.rst.txt; one document per section; markup
# reduced to its text; dropped: the index directive, tables, the target, lines of one word
# ("Functions", "x", "11", "Word", the code line `zlib.compress(b"abc")`).
EXPECTED = [
    ['About these documents', 'These documents are generated from sources.', 'They use Sphinx.'],
    ['zlib --- Compression', 'The compress function packs data.', 'See the manual for more.',
     'It is fast and small.', 'Use level to choose.', 'Levels go from 0 to 9.', 'import zlib'],
    ['An example follows:', 'data = zlib.compress(raw)',
     '>>> print(len(zlib.compress(b"ab")))', 'First item of a list.', 'Numbered item here.',
     'Another numbered item.', 'Last words of the section.', 'Another sentence here!'],
]


@pytest.fixture(name='sources')
def _sources(tmp_path):
  """A tree in the layout of Debian's python3.X-doc sources."""
  root = tmp_path / '_sources'
  (root / 'library').mkdir(parents=True)
  (root / 'library' / 'zlib.rst.txt').write_text(ZLIB, encoding='utf-8')
  (root / 'about.rst.txt').write_text(ABOUT, encoding='utf-8')
  (root / 'notes.txt').write_text('Not a source file at all.\n', encoding='utf-8')
  return str(root)


def test_sections_become_documents_of_plain_sentences(sources):
  assert list(python_docs_corpus.corpus_documents(sources)) == EXPECTED


def test_a_paragraph_ends_where_a_heading_directive_doctest_or_table_starts(tmp_path):
  (tmp_path / 'abc.rst.txt').write_text("""abc heading here
================

Text before a heading without a gap.
Next heading
------------
Text before a directive here.
.. versionadded:: 3.2 Added in this version.
Text before a doctest here.
>>> abc.ABC()
Text before a table here.
+-----+
| t u |
+-----+
""", encoding='utf-8')
  assert list(python_docs_corpus.corpus_documents(str(tmp_path))) == [
      ['abc heading here', 'Text before a heading without a gap.'],
      ['Next heading', 'Text before a directive here.', '3.2 Added in this version.',
       'Text before a doctest here.', '>>> abc.ABC()', 'Text before a table here.']]


def test_no_sources_is_a_clear_error(tmp_path):
  with pytest.raises(FileNotFoundError, match=r"no \*\.rst\.txt files under .*python3\.11-doc"):
    list(python_docs_corpus.corpus_documents(str(tmp_path)))


def test_write_corpus_writes_the_bert_input_format(sources, tmp_path):
  output = tmp_path / 'new_dir' / 'corpus.txt'
  stats = python_docs_corpus.write_corpus(sources, str(output))
  text = output.read_text(encoding='utf-8')
  assert text == '\n'.join(''.join(s + '\n' for s in document) for document in EXPECTED)
  assert stats == {'documents': 3, 'sentences': sum(map(len, EXPECTED)),
                   'bytes': os.path.getsize(output)}


def test_the_command_line_writes_the_file_and_says_what(sources, tmp_path):
  output = tmp_path / 'corpus.txt'
  result = cli.call_main(python_docs_corpus.main,
                         [f'--source_dir={sources}', f'--output_file={output}'])
  assert result.returncode == 0 and result.stdout == ''
  assert result.stderr == (f'wrote {output}: 0.0 MB, 3 documents, '
                           f'{sum(map(len, EXPECTED))} sentences\n')
  assert output.read_text(encoding='utf-8').startswith('About these documents\n')
  result = cli.call_main(python_docs_corpus.main, [f'--source_dir={sources}'])
  assert result.returncode == 2
  assert 'the following arguments are required: --output_file' in result.stderr
  help_text = cli.call_main(python_docs_corpus.main, ['--help']).stdout
  assert 'Python documentation sources' in help_text and '--source_dir' in help_text
