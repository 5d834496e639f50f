"""scripts/benchmark_line_fold.py on a tiny corpus: both folds agree, and the report names them."""

import importlib.util
import os

from tests.nlp.data.test_create_pretraining_data import corpus_dir
from tests.paths import ROOT

_spec = importlib.util.spec_from_file_location(
    'benchmark_line_fold_under_test', os.path.join(ROOT, 'scripts', 'benchmark_line_fold.py'))
benchmark_line_fold = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(benchmark_line_fold)


def test_the_benchmark_checks_both_folds_and_reports_them(tmp_path_factory, capsys):
  corpus = corpus_dir(tmp_path_factory, 'line_fold', num_docs=12)
  found = benchmark_line_fold.measure(str(corpus / 'corpus.txt'), str(corpus / 'vocab.txt'),
                                      repeats=1)
  text = (corpus / 'corpus.txt').read_text(encoding='utf-8')
  assert (found['blocks'], found['lines']) == (1, text.count('\n'))
  assert benchmark_line_fold.main([f"--input_file={corpus / 'corpus.txt'}",
                                   f"--vocab_file={corpus / 'vocab.txt'}", '--repeats=1']) == 0
  lines = capsys.readouterr().out.splitlines()
  assert lines[0].startswith(f"1 blocks, {text.count(chr(10))} lines; tokenizing ")
  assert [line.split(':')[0] for line in lines[1:]] == ['line_by_line', 'numpy']
