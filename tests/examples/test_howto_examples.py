"""The how-to's three examples (examples/howto_*.py) run as printed, at a small size, on records
made by our data tool (examples/howto_common.py), and do what the how-to says."""

import importlib
import os
import re
from typing import Dict, List

import numpy as np
import pytest

from tests import cli

# The model's sizes in the tests (the examples' defaults are a little larger).
TINY = ['--hidden_size=64', '--num_layers=2', '--num_heads=2', '--intermediate_size=128']


def _run(script: str, *args: str) -> cli.CliResult:
  """`python examples/<script> args`, run in this process (its `main`)."""
  module = importlib.import_module('examples.' + os.path.splitext(script)[0])
  result = cli.call_main(module.main, list(args))
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
  return result


@pytest.fixture(scope='module')
def records(tmp_path_factory) -> Dict[str, str]:
  """Training and validation records of a tiny corpus, written by our data tool."""
  output_dir = tmp_path_factory.mktemp('howto_data')
  result = _run('howto_common.py', f'--output_dir={output_dir}')
  paths = dict(re.findall(r'^(\w+): (\S+)$', result.stdout, re.M))
  assert sorted(paths) == ['train', 'validation', 'vocab_file']
  for path in paths.values():
    assert os.path.getsize(path) > 0
  with open(paths['vocab_file'], encoding='utf-8') as f:
    assert sum(1 for _ in f) == 1000  # the examples' default --vocab_size
  return paths


def _data_flags(records: Dict[str, str]) -> List[str]:
  return [f'--train_path={records["train"]}', f'--validation_path={records["validation"]}']


def _falls(losses: List[float], few: int = 5, margin: float = 0.3) -> bool:
  """Whether the mean of the last `few` losses is `margin` below the mean of the first `few`."""
  return float(np.mean(losses[-few:])) < float(np.mean(losses[:few])) - margin


@pytest.mark.slow
def test_model_assembly_prints_the_documented_inputs_and_outputs():
  result = _run('howto_model_assembly.py', *TINY)
  lines = result.stdout.strip().splitlines()
  assert len(lines) == 3, result.stdout
  inputs, outputs, shapes = lines
  # print(model.inputs): the encoder's three inputs, then the masked positions.
  assert re.findall(r"'(\w+)': <KerasTensor: shape=\(None, None\) dtype=int32", inputs) == [
      'input_word_ids', 'input_mask', 'input_type_ids', 'masked_lm_positions'], inputs
  # print(model.outputs): the logits over Model Garden's default vocabulary (no vocab_size given)
  # next to the encoder's outputs.
  assert re.search(r"'mlm_logits': <KerasTensor: shape=\(None, None, 30522\) dtype=float32",
                   outputs), outputs
  assert re.search(r"'sequence_output': <KerasTensor: shape=\(None, None, 64\)", outputs), outputs
  assert shapes == 'mlm_logits (2, 3, 30522); MaskedLM head (2, 3, 30522)'


@pytest.mark.slow
def test_custom_loop_trains_and_the_loss_falls(records):
  result = _run('howto_custom_loop.py', *TINY, *_data_flags(records), '--steps=40')
  steps = re.findall(r'^step (\d+): loss (\d+\.\d{4})$', result.stdout, re.M)
  assert [int(step) for step, _ in steps] == list(range(1, 41)), result.stdout
  losses = [float(loss) for _, loss in steps]
  assert 6.0 < losses[0] < 8.0  # about ln(1000) at the start
  assert _falls(losses), losses


@pytest.mark.slow
def test_keras_fit_trains_with_the_task_loss_and_metrics(records):
  result = _run('howto_keras_fit.py', *TINY, *_data_flags(records), '--epochs=5',
                '--steps_per_epoch=8', '--validation_steps=2')
  epochs = re.findall(r'^epoch (\d+): (.*)$', result.stdout, re.M)
  assert [int(epoch) for epoch, _ in epochs] == [1, 2, 3, 4, 5], result.stdout
  history = [dict((name, float(value)) for name, value in re.findall(r'(\w+) (\d+\.\d+)', logs))
             for _, logs in epochs]
  metrics = ['loss', 'masked_lm_accuracy', 'lm_example_loss', 'masked_lm_perplexity']
  assert list(history[0]) == metrics + [f'val_{name}' for name in metrics]
  for logs in history:  # no next-sentence head: the loss is the masked-LM loss
    np.testing.assert_allclose(logs['loss'], logs['lm_example_loss'], rtol=1e-4)
    assert 0.0 <= logs['masked_lm_accuracy'] <= 1.0
    assert 1.0 < logs['masked_lm_perplexity'] < 2000.0  # exp(loss): about 1000 untrained
  # Each epoch's loss is the mean of its 8 steps: the first epoch's against the last's.
  losses = [logs['loss'] for logs in history]
  assert _falls(losses, few=1), losses
  assert history[-1]['val_loss'] < history[0]['val_loss'], history
