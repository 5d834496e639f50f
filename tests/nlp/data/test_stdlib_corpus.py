"""Tests of official/nlp/data/stdlib_corpus.py and its command line, data_tools/stdlib_corpus.py."""

import sysconfig

from data_tools import stdlib_corpus


def test_sentences_of_a_docstring():
  doc = """Return the thing.  Raise ValueError if it is missing.

      >>> thing()
      1

      A second paragraph
      spans two lines.
  """
  assert stdlib_corpus.docstring_sentences(doc) == [
      "Return the thing.", "Raise ValueError if it is missing.",
      "A second paragraph spans two lines."]


def test_walks_with_ast_and_skips_tests(tmp_path):
  package = tmp_path / "lib"
  (package / "test").mkdir(parents=True)
  (package / "site-packages").mkdir()
  (package / "mod.py").write_text(
      '"""Module doc says hello. It has two sentences."""\nraise SystemExit("never imported")\n'
      'class C:\n  """Class doc with words."""\n  def f(self):\n    """Method doc here too."""\n')
  (package / "test" / "test_x.py").write_text('"""Test doc must not appear."""\n')
  (package / "site-packages" / "y.py").write_text('"""Installed package doc must not appear."""\n')
  (package / "broken.py").write_text('"""Unparsable file"""\ndef (:\n')
  output = tmp_path / "corpus.txt"
  stats = stdlib_corpus.write_stdlib_corpus(str(output), stdlib_dir=str(package))
  assert output.read_text() == ("Module doc says hello.\nIt has two sentences.\n\n"
                                "Class doc with words.\n\nMethod doc here too.\n")
  assert stats["documents"] == 3 and stats["sentences"] == 4 and stats["unparsable_files"] == 1


def test_real_stdlib_is_deterministic(tmp_path):
  first, second = tmp_path / "a.txt", tmp_path / "b.txt"
  stats = stdlib_corpus.write_stdlib_corpus(str(first), max_documents=200)
  stdlib_corpus.write_stdlib_corpus(str(second), max_documents=200)
  text = first.read_text(encoding="utf-8")
  assert text == second.read_text(encoding="utf-8")
  assert stats["documents"] == 200 and text.count("\n\n") == 199
  assert stats["bytes"] == first.stat().st_size and sysconfig.get_paths()["stdlib"]
  assert stdlib_corpus.main(
      ["prog", f"--output_file={tmp_path / 'c.txt'}", "--max_documents=5"]) == 0
