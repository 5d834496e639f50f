"""A pretraining corpus of the docstrings of the running interpreter's standard library.

Every machine with Python has it, so the demo needs no download. The standard library directory
(`sysconfig.get_paths()["stdlib"]`) is walked in sorted order (skipping tests, idlelib,
site-packages and caches); each `.py` file is parsed with `ast` (nothing is imported) and every
module, class and function docstring becomes one document: its paragraphs are joined, doctests (from
`>>>` to the paragraph's end) are dropped, and the text is split into one sentence a line, with a
blank line between documents (the Google BERT input format). The output only depends on the
interpreter's files. `python -m data_tools.stdlib_corpus` is its command line.

Example:
  >>> from official.nlp.data import stdlib_corpus
  >>> stdlib_corpus.write_stdlib_corpus('/tmp/stdlib.txt', max_documents=1000)['documents']
  1000
"""

import ast
import inspect
import os
import re
import sysconfig
from typing import Dict, Iterator, List, Optional

_SKIP_DIRS = {
    'test', 'tests', 'idlelib', 'site-packages', 'dist-packages', '__pycache__', '_bundled'
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])")
_MIN_WORDS = 3


def _python_files(root: str) -> Iterator[str]:
  for directory, subdirs, files in os.walk(root):
    subdirs[:] = sorted(d for d in subdirs if d not in _SKIP_DIRS and not d.startswith('test'))
    for name in sorted(files):
      if name.endswith('.py') and not name.startswith('test_'):
        yield os.path.join(directory, name)


def _docstrings(tree: ast.Module) -> Iterator[str]:
  """Module, class and function docstrings in source order."""
  nodes = [tree]
  while nodes:
    node = nodes.pop(0)
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
      text = ast.get_docstring(node, clean=False)
      if text:
        yield text
    children = [child for child in ast.iter_child_nodes(node)
                if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    nodes[0:0] = children


def docstring_sentences(docstring: str) -> List[str]:
  """One docstring as sentences (paragraphs joined, doctest lines dropped, whitespace collapsed).

  Args:
    docstring: the docstring's raw text (as `ast.get_docstring(node, clean=False)` gives it).

  Returns:
    Its sentences, in order.

  Example:
    docstring_sentences("Return x.  Raise if y.\\n\\n>>> f()\\n1")  # ['Return x.', 'Raise if y.']
  """
  sentences = []
  for paragraph in re.split(r'\n\s*\n', inspect.cleandoc(docstring)):
    lines = [line.strip() for line in paragraph.splitlines()]
    doctest = next((i for i, line in enumerate(lines) if line.startswith('>>>')), len(lines))
    text = ' '.join(lines[:doctest])  # a doctest (and its output) runs to the end of the paragraph
    text = re.sub(r'\s+', ' ', text).strip()
    if text:
      sentences.extend(s for s in _SENTENCE_END.split(text) if s)
  return sentences


def iter_documents(stdlib_dir: Optional[str] = None, stats: Optional[Dict[str, int]] = None
                   ) -> Iterator[List[str]]:
  """Documents (lists of sentences) from the standard library's docstrings, in a fixed order.

  Args:
    stdlib_dir: the directory to scan (default: the running interpreter's standard library).
    stats: counts to update: `files`, `unparsable_files`.

  Yields:
    One document (its sentences) a docstring of at least 3 words.

  Example:
    >>> next(iter_documents())[0]  # the first sentence of the first docstring
  """
  stats = stats if stats is not None else {}
  root = stdlib_dir or sysconfig.get_paths()['stdlib']
  for path in _python_files(root):
    try:
      with open(path, 'rb') as f:
        tree = ast.parse(f.read(), filename=path)
    except (SyntaxError, ValueError, UnicodeDecodeError):
      stats['unparsable_files'] = stats.get('unparsable_files', 0) + 1
      continue
    stats['files'] = stats.get('files', 0) + 1
    for docstring in _docstrings(tree):
      sentences = docstring_sentences(docstring)
      if sum(len(s.split()) for s in sentences) >= _MIN_WORDS:
        yield sentences


def write_stdlib_corpus(output_path: str, max_documents: Optional[int] = None,
                        stdlib_dir: Optional[str] = None) -> Dict[str, int]:
  """Writes the stdlib docstring corpus (one sentence a line, blank line between documents).

  Args:
    output_path: the text file to write (its directory is created).
    max_documents: stop after this many documents (None: all).
    stdlib_dir: the directory to scan (default: the running interpreter's standard library).

  Returns:
    Counts: `files`, `unparsable_files`, `documents`, `sentences`, `bytes`.

  Example:
    stats = write_stdlib_corpus("/tmp/stdlib.txt", max_documents=1000)
  """
  stats = {'files': 0, 'unparsable_files': 0, 'documents': 0, 'sentences': 0, 'bytes': 0}
  os.makedirs(os.path.dirname(os.path.abspath(output_path)), exist_ok=True)
  with open(output_path, 'w', encoding='utf-8', newline='\n') as f:
    for sentences in iter_documents(stdlib_dir, stats):
      if max_documents is not None and stats['documents'] >= max_documents:
        break
      if stats['documents']:
        f.write('\n')
      f.write(''.join(s + '\n' for s in sentences))
      stats['documents'] += 1
      stats['sentences'] += len(sentences)
  stats['bytes'] = os.path.getsize(output_path)
  return stats
