"""Runs the shell blocks a new user copies first, as printed, on a tiny corpus: the README's
quickstart and docs/pretraining.md's "Your own text, step by step".

Each block is taken from the Markdown file, changed only by the size substitutions listed in
`RUNS` (fewer steps, a tiny vocabulary and model, short rows), and each command runs in this
process (tests/cli.py) in a fresh working directory holding the corpus under the names the block
uses and a link to the repository's `configs/`. tests/test_docs.py checks every other shell block
of the README and docs/ against the tools' flags without running it.
"""

import dataclasses
import importlib
import os
import random
import re
from typing import List, Tuple

import pytest

from tests import cli
from tests import test_docs
from tests.paths import ROOT

WORDS = [f'w{i}' for i in range(30)]


def _walking_text(seed: int, documents: int = 80) -> str:
  """Documents of sentences that walk the word list in order (`w7 w8 w9.`)."""
  rng = random.Random(seed)
  return '\n\n'.join(
      '\n'.join(' '.join(WORDS[(s + i) % len(WORDS)] for i in range(rng.randint(5, 9))) + '.'
                for s in (rng.randrange(len(WORDS)) for _ in range(rng.randint(2, 4))))
      for _ in range(documents)) + '\n'


@dataclasses.dataclass(frozen=True)
class Run:
  """A block to run: the file, the heading it follows, the corpus files it reads, and the
  substitutions (printed text -> text run) that make it tiny."""
  path: str
  heading: str
  corpus: Tuple[str, ...]
  substitutions: Tuple[Tuple[str, str], ...]


RUNS = {
    'readme_quickstart': Run(
        'README.md', '## Quickstart: pretrain an encoder on your own text', ('my_corpus/a.txt',),
        (('--minutes=30', '--steps=20 --size=tiny --vocab_size=60 --seq_length=32 '
          '--batch_size=16 --num_workers=1'),)),
    'pretraining_step_by_step': Run(
        'docs/pretraining.md', '## Your own text, step by step', ('train.txt',),
        (('--vocab_size=16000', '--vocab_size=60'),
         ('--max_seq_length=128 --max_predictions_per_seq=38',
          '--max_seq_length=32 --max_predictions_per_seq=10 --num_workers=1'),
         ('trainer.time_budget_minutes=60',
          'trainer.train_steps=4,trainer.steps_per_loop=2,trainer.validation_interval=4,'
          'trainer.validation_steps=1,task.train_data.global_batch_size=8,'
          'task.validation_data.global_batch_size=8'))),
}


def block_after(path: str, heading: str) -> test_docs.Block:
  """The first shell block after `heading` in `path`."""
  lines = test_docs._read(path)  # pylint: disable=protected-access
  start = lines.index(heading) + 1
  for block in test_docs._blocks(path):  # pylint: disable=protected-access
    if block.line > start and block.lang in ('bash', 'sh', 'shell'):
      return block
  raise AssertionError(f'{path}: no shell block after {heading!r}')


def substituted(block: test_docs.Block, substitutions) -> test_docs.Block:
  """The block with each substitution made; each must match the printed text (no drift)."""
  text = '\n'.join(block.lines)
  for printed, run in substitutions:
    assert printed in text, f'{block.path}:{block.line}: the block no longer prints {printed!r}'
    text = text.replace(printed, run)
  return dataclasses.replace(block, lines=text.split('\n'))


def run_command(command: test_docs.Command) -> cli.CliResult:
  """Runs one of our commands in this process, as the shell would run it."""
  tool, args, problems = test_docs._tool(command)  # pylint: disable=protected-access
  assert not problems and tool is not None, f'{command.where}: {problems or "not ours"}'
  kind, name = tool
  if kind == 'console':
    module, function = test_docs._console_scripts()[name].split(':')  # pylint: disable=protected-access
  else:
    assert kind == 'module', f'{command.where}: cannot run {kind} {name} in process'
    module, function = name, 'main'
  if module == 'official.nlp.train':  # an absl app on the global flags
    train = importlib.import_module(module)
    return cli.run_app(train.main, ['train', *args])
  entry = getattr(importlib.import_module(module), function)
  return cli.call_main(lambda _argv: entry(), args)


def _run_block(name: str, tmp_path, monkeypatch) -> List[Tuple[test_docs.Command, cli.CliResult]]:
  spec = RUNS[name]
  for i, relative in enumerate(spec.corpus):
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_walking_text(i), encoding='utf-8')
  os.symlink(os.path.join(ROOT, 'configs'), tmp_path / 'configs')
  monkeypatch.chdir(tmp_path)
  block = substituted(block_after(spec.path, spec.heading), spec.substitutions)
  results = []
  for command in test_docs._commands(block):  # pylint: disable=protected-access
    result = run_command(command)
    assert result.returncode == 0, f'{command.where}: {" ".join(command.words)}\n' + (
        result.stderr[-3000:])
    results.append((command, result))
  return results


@pytest.mark.slow
def test_readme_quickstart_runs_as_printed(tmp_path, monkeypatch):
  results = _run_block('readme_quickstart', tmp_path, monkeypatch)
  assert [c.words[0] for c, _ in results] == ['.venv/bin/mlm-pretrain', '.venv/bin/mlm-fill-mask']
  pretrained = results[0][1].stdout
  assert 'trained 20 steps (modernbert_tiny.yaml' in pretrained
  assert 'the context-free predictor' in pretrained
  for name in ('model/params.yaml', 'hf/config.json', 'hf/tokenizer.json', 'summary.json'):
    assert (tmp_path / 'runs' / 'mine' / name).exists(), name
  # Its top predictions are words of the corpus (the words of the printed sentence are not).
  assert re.search(r'\bw\d+\b', results[1][1].stdout), results[1][1].stdout


@pytest.mark.slow
def test_pretraining_step_by_step_runs_as_printed(tmp_path, monkeypatch):
  results = _run_block('pretraining_step_by_step', tmp_path, monkeypatch)
  assert len(results) == 4
  train = results[2][1]
  assert "from the records' metadata: data/train.metadata.json: seq_length=32" in train.stderr
  assert 'task.validation_data.input_path=data/validation.tfrecord' in train.stderr
  assert 'eval at step 4: ' in train.stdout
  assert (tmp_path / 'data' / 'validation.metadata.json').exists()


def test_every_substitution_matches_the_printed_block():
  for spec in RUNS.values():
    block = substituted(block_after(spec.path, spec.heading), spec.substitutions)
    assert test_docs._commands(block)  # pylint: disable=protected-access
