"""examples/word_senses.py runs on the tiny test model (random weights: structure, not quality)."""

import os
import re
import sys

import numpy as np
import pytest

from tests.nlp.serving import tiny_run
from tests.paths import ROOT

sys.path.insert(0, os.path.join(ROOT, 'examples'))

import word_senses  # pylint: disable=g-import-not-at-top,wrong-import-position


@pytest.mark.slow
def test_example_lists_neighbours_of_each_occurrence(tmp_path_factory, capsys):
  run = tiny_run.shared_run(tmp_path_factory)
  # The built-in sentences: most of their words are [UNK] to the tiny vocabulary, which is fine.
  assert word_senses.main([f'--model_dir={run["model_dir"]}', '--k=2']) == 0
  lines = capsys.readouterr().out.splitlines()
  words = list(dict.fromkeys(w for w, _, _ in word_senses.SENTENCES))
  assert [line[3:] for line in lines if line.startswith('== ')] == words
  occurrences = [line for line in lines if line.startswith('[')]
  assert len(occurrences) == len(word_senses.SENTENCES)
  hits_listed = 0
  for line, (_, sense, sentence) in zip(occurrences, word_senses.SENTENCES):
    match = re.fullmatch(r'\[(\w+)\] (.*) -> (\w+) (-?\d\.\d{3}) \| (\w+) (-?\d\.\d{3})', line)
    assert match, line
    assert match.group(1, 2) == (sense, sentence)
    assert float(match.group(4)) >= float(match.group(6))  # most similar first
    hits_listed += match.group(3) == sense
  summary = re.fullmatch(r'same-sense nearest neighbour: (\d\.\d{3}) \((\d+) of 32 occurrences; '
                         r'chance 0\.429; z-scored first sub-word vectors\)', lines[-1])
  assert summary, lines[-1]
  fraction, hits = float(summary.group(1)), int(summary.group(2))
  assert 0.0 <= fraction <= 1.0 and np.isclose(fraction, hits / 32, atol=5e-4)
  assert hits == hits_listed


@pytest.mark.slow
def test_example_sentences_file_and_errors(tmp_path_factory, tmp_path, capsys):
  run = tiny_run.shared_run(tmp_path_factory)
  sentences = tmp_path / 'senses.tsv'
  sentences.write_text('copy\tverb\tcopy the list\ncopy\tnoun\ta new copy\n\n'
                       'copy\tnoun\tthe copy of the file\nlist\ttype\ta new list\n')
  assert word_senses.main([f'--model_dir={run["model_dir"]}', f'--sentences_file={sentences}',
                           '--no-zscore', '--subword_pooling=mean']) == 0
  lines = capsys.readouterr().out.splitlines()
  assert lines[0] == '== copy' and len(lines) == 5  # 'list' occurs once: no neighbours to list
  assert lines[-1].endswith('of 3 occurrences; chance 0.333; raw mean sub-word vectors)')
  sentences.write_text('file\tnoun\tcopy the list\n')
  assert word_senses.main([f'--model_dir={run["model_dir"]}',
                           f'--sentences_file={sentences}']) == 1
  # The last line (TensorFlow may log a retracing warning before it in a process that built
  # five models before this one).
  assert capsys.readouterr().err.splitlines()[-1] == (
      "word_senses: error: the word 'file' is not a word of sentence 1: 'copy the list'")
