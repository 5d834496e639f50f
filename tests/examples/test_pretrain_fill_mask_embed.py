"""examples/pretrain_fill_mask_embed.py runs as documented (a few steps, a small corpus)."""

import os
import re
import subprocess
import sys

import pytest

from tests.paths import ROOT


@pytest.mark.slow
def test_example_runs_end_to_end(tmp_path):
  result = subprocess.run(
      [sys.executable, os.path.join(ROOT, 'examples', 'pretrain_fill_mask_embed.py'),
       f'--output_dir={tmp_path}', '--train_steps=20', '--max_documents=400'],
      capture_output=True, text=True, check=False, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  lines = result.stdout.strip().splitlines()
  assert re.search(r'^result: step 20, eval masked_lm_accuracy 0\.\d{3}, lm_example_loss '
                   r'\d+\.\d{3}$', '\n'.join(lines), re.M), result.stdout
  fills = [line for line in lines if ' -> ' in line]
  assert len(fills) == 2
  for line in fills:  # three guesses with probabilities, best first
    probabilities = [float(p) for p in re.findall(r'\((\d\.\d\d)\)', line)]
    assert len(probabilities) == 3 and probabilities == sorted(probabilities, reverse=True)
  assert re.search(r'^embeddings \(3, 128\); cosine\(1, 2\) -?\d\.\d{3}, cosine\(1, 3\) '
                   r'-?\d\.\d{3}$', result.stdout, re.M)
  # The model_dir carries the vocabulary the records were made with.
  with open(tmp_path / 'vocab' / 'vocab.txt', 'rb') as f, \
      open(tmp_path / 'model' / 'vocab.txt', 'rb') as g:
    assert f.read() == g.read()
  assert 'oneDNN' not in result.stderr  # quiet: TensorFlow's start-up lines are hidden
  assert re.search(r'^I\d{4} [\d:.]+ +\d+ progress.py:\d+\] step 20/20 \| loss ', result.stderr,
                   re.M), result.stderr[-2000:]  # the progress line, absl format
