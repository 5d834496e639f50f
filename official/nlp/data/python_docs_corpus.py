"""Writes a plain-text pretraining corpus from the Python documentation sources of Debian's
`python3.X-doc`.

The reStructuredText sources (`/usr/share/doc/python3.11/html/_sources/**/*.rst.txt`) are read in
sorted order; each section (its heading, then the text up to the next heading) becomes one document.
Markup is reduced to its
text (roles such as :func:`name` keep `name`; tables, comments and non-prose directives are
dropped), paragraphs are joined and split into one sentence a line, with a blank line between
documents (the Google BERT input format); the lines of code examples (literal blocks, code
directives, doctests) are kept one a line; lines of fewer than two words are dropped. Used as the
benchmark corpus of `scripts/benchmark_create_pretraining_data.sh` (Python 3.11: 8.0 MB, about 4,500
documents and 106,000 lines). The output depends only on the source files.

The command line is `scripts/make_python_docs_corpus.py` (`main`).

Usage:
  python scripts/make_python_docs_corpus.py --output_file=/tmp/pydocs.txt

Example:
  >>> stats = write_corpus(DEFAULT_SOURCES, '/tmp/pydocs.txt')
  >>> stats['documents'], stats['sentences']
  (4498, 105612)
"""

import argparse
import glob
import os
import re
import sys
from typing import Dict, Iterator, List, Optional, Sequence

# Debian's python3.11-doc.
DEFAULT_SOURCES = "/usr/share/doc/python3.11/html/_sources"
_HEADING_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>_:.])\1{2,}\s*$")
_ROLE = re.compile(r":[\w:.-]+:`(?:[^`<]*<)?~?!?([^`>]*)>?`")
_LINK = re.compile(r"`([^`<]+?)\s*<[^`>]*>`_{1,2}")
_MARKUP = re.compile(r"``|\*\*|(?<!\w)\*(?=\S)|(?<=\S)\*(?!\w)|`_{0,2}|\|")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_MIN_WORDS = 2
_DIRECTIVE = re.compile(r"^\.\. ([\w:-]+)::(.*)$")
# Directives whose body is code, markup or navigation (dropped); the bodies of others (function,
# class, note, versionchanged, ...) are prose and kept.
_SKIPPED_DIRECTIVES = {"code-block", "sourcecode", "code", "doctest", "testcode", "testoutput",
                       "testsetup", "testcleanup", "productionlist", "toctree", "literalinclude",
                       "highlight", "index", "csv-table", "list-table", "table", "image", "figure",
                       "raw", "include", "only", "tabularcolumns", "sectionauthor", "moduleauthor",
                       "opcode", "cmdoption", "option", "program", "envvar", "audit-event",
                       "impl-detail", "availability", "c:macro"}
_CODE_DIRECTIVES = {"code-block", "sourcecode", "code", "doctest", "testcode", "testoutput"}
_TEXT_DIRECTIVES = {"note", "warning", "important", "tip", "caution", "attention", "seealso",
                    "versionadded", "versionchanged", "deprecated", "deprecated-removed"}


def _plain(text: str) -> str:
  text = _ROLE.sub(r"\1", text)
  text = _LINK.sub(r"\1", text)
  text = _MARKUP.sub("", text)
  return re.sub(r"\s+", " ", text).strip()


def _sections(lines: List[str]) -> Iterator[List[str]]:
  """Paragraph texts of each section of one rst file."""
  paragraphs: List[str] = []
  current: List[str] = []
  # Inside a directive body or a literal block: skip lines indented deeper than this.
  skip_indent = None
  code = False  # the skipped block is code: its lines are kept, one a line
  for index, raw in enumerate(lines):
    line = raw.rstrip()
    indent = len(line) - len(line.lstrip())
    if skip_indent is not None:
      if not line or indent > skip_indent:
        if code and line.strip():
          paragraphs.append(line.strip())
        continue
      skip_indent, code = None, False
    next_line = lines[index + 1].rstrip() if index + 1 < len(lines) else ""
    if _HEADING_UNDERLINE.match(line) or (_HEADING_UNDERLINE.match(next_line) and line and
                                          len(next_line) >= len(line.strip())):
      if current:
        paragraphs.append(" ".join(current))
        current = []
      if _HEADING_UNDERLINE.match(line):
        continue
      if paragraphs:
        yield paragraphs
      paragraphs = [line.strip()]  # the heading opens the section's document
      continue
    stripped = line.strip()
    if not stripped:
      if current:
        paragraphs.append(" ".join(current))
        current = []
      continue
    if stripped.startswith(".. "):
      if current:
        paragraphs.append(" ".join(current))
        current = []
      directive = _DIRECTIVE.match(stripped)
      if directive is None or directive.group(1) in _SKIPPED_DIRECTIVES:
        # Comments, targets, code: drop the body (code lines are kept as lines).
        skip_indent = indent
        code = directive is not None and directive.group(1) in _CODE_DIRECTIVES
      elif directive.group(2).strip() and directive.group(1) in _TEXT_DIRECTIVES:
        # E.g. ".. note:: text", ".. versionadded:: 3.2 text".
        current = [directive.group(2).strip()]
      continue
    if stripped.startswith((">>>", "...", "$ ")):
      if current:
        paragraphs.append(" ".join(current))
        current = []
      paragraphs.append(stripped)
      continue
    if stripped.startswith(("+--", "|")) or re.match(r"^[=+\-]{3,}(\s+[=+\-]{3,})*$", stripped):
      if current:
        paragraphs.append(" ".join(current))
        current = []
      skip_indent = indent
      continue
    if stripped.startswith(("* ", "- ", "#. ")) or re.match(r"^\d+\. ", stripped):
      if current:
        paragraphs.append(" ".join(current))
      current = [re.sub(r"^(\*|-|#\.|\d+\.)\s+", "", stripped)]
      continue
    if stripped.endswith("::"):
      current.append(stripped[:-1] if not stripped == "::" else "")
      paragraphs.append(" ".join(current))
      current = []
      skip_indent, code = indent, True
      continue
    current.append(stripped)
  if current:
    paragraphs.append(" ".join(current))
  if paragraphs:
    yield paragraphs


def corpus_documents(source_dir: str) -> Iterator[List[str]]:
  """Documents (lists of sentences) of all `*.rst.txt` files under `source_dir`.

  The files are read in sorted path order.
  """
  paths = sorted(glob.glob(os.path.join(source_dir, "**", "*.rst.txt"), recursive=True))
  if not paths:
    raise FileNotFoundError(f"no *.rst.txt files under {source_dir!r} "
                            "(install Debian's python3.11-doc)")
  for path in paths:
    with open(path, encoding="utf-8", errors="replace") as f:
      lines = f.read().splitlines()
    for paragraphs in _sections(lines):
      sentences = []
      for paragraph in paragraphs:
        for sentence in _SENTENCE_END.split(_plain(paragraph)):
          if len(sentence.split()) >= _MIN_WORDS:
            sentences.append(sentence)
      if sentences:
        yield sentences


def write_corpus(source_dir: str, output_file: str) -> Dict[str, int]:
  """Writes the documents of `source_dir` (`corpus_documents`) to `output_file`: one sentence a
  line, a blank line between documents. The file's directory is created if needed.

  Args:
    source_dir: a tree of `*.rst.txt` files (Debian's `python3.X-doc` sources).
    output_file: the text file written.

  Returns:
    `documents`, `sentences` and `bytes` (the file's size).

  Example:
    >>> write_corpus(DEFAULT_SOURCES, '/tmp/pydocs.txt')['bytes']
    7960500
  """
  documents = sentences = 0
  os.makedirs(os.path.dirname(os.path.abspath(output_file)), exist_ok=True)
  with open(output_file, "w", encoding="utf-8") as f:
    for document in corpus_documents(source_dir):
      if documents:
        f.write("\n")
      f.write("".join(s + "\n" for s in document))
      documents += 1
      sentences += len(document)
  return {"documents": documents, "sentences": sentences, "bytes": os.path.getsize(output_file)}


def main(argv: Optional[Sequence[str]] = None) -> int:
  """The command line (`scripts/make_python_docs_corpus.py`): writes `--output_file`, then one
  line on stderr (size, documents, sentences).

  Args:
    argv: the flags (default: `sys.argv[1:]`).

  Returns:
    The exit status (0).

  Example:
    >>> main(["--output_file=/tmp/pydocs.txt"])
    0   # and on stderr: wrote /tmp/pydocs.txt: 8.0 MB, 4498 documents, 105612 sentences
  """
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--source_dir", default=DEFAULT_SOURCES)
  parser.add_argument("--output_file", required=True)
  args = parser.parse_args(argv)
  stats = write_corpus(args.source_dir, args.output_file)
  print(f"wrote {args.output_file}: {stats['bytes'] / 1e6:.1f} MB, {stats['documents']} documents, "
        f"{stats['sentences']} sentences", file=sys.stderr)
  return 0
