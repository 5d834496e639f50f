#!/usr/bin/env python3
"""Chaos test of resuming: SIGKILLs a training run at random steps, resumes it each time, and checks
that its final checkpoint equals the one of an uninterrupted run, variable by variable.

The command is a train.py command line without `--model_dir`; the script adds
`--model_dir=<work_dir>/chaos` and `--model_dir=<work_dir>/reference`. Use a config with
`runtime.deterministic: true` and a small `trainer.checkpoint_interval`: then every variable of the
resumed run (weights, optimizer slots, step counters, dropout random state) must be bit-identical.

Usage:
  python scripts/chaos_train.py --kills 3 --work_dir /tmp/chaos -- \\
      python -m official.nlp.train --experiment=bert/pretraining --mode=train \\
      --config_file=configs/pretraining/bert_tiny.yaml
      --params_override=runtime.deterministic=true,...

Exit code 0 when the checkpoints are equal, 1 when they differ, 2 on a failed run.
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

STEP_LINE = re.compile(r'(?:^|\] )step (\d+)/(\d+) ')  # train_lib's progress line (absl log)
# Checkpoint entries that legitimately differ between a resumed and an uninterrupted run.
IGNORED_KEYS = ('save_counter', '_CHECKPOINTABLE_OBJECT_GRAPH')


def run_until(command: Sequence[str], kill_at_step: Optional[int], log) -> Dict[str, int]:
  """Runs `command`; SIGKILLs it once it reports a step >= `kill_at_step` (None: never).

  Returns:
    {'first': the first step reported, 'last': the last one, 'total': train_steps,
     'returncode': the exit code (-9 when killed)}.
  """
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, bufsize=1, env=env)
  first = last = total = None
  for line in process.stdout:
    log.write(line)
    match = STEP_LINE.search(line)
    if not match:
      continue
    last, total = int(match.group(1)), int(match.group(2))
    first = last if first is None else first
    if kill_at_step is not None and last >= kill_at_step:
      process.send_signal(signal.SIGKILL)
      break
  process.stdout.close()
  returncode = process.wait()
  return {'first': first, 'last': last, 'total': total, 'returncode': returncode}


def checkpoint_values(model_dir: str) -> Dict[str, np.ndarray]:
  """Every tensor of the latest checkpoint of `model_dir` (but `IGNORED_KEYS`)."""
  # Function-level: the supervisor process itself never loads TensorFlow (its children do).
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  path = tf.train.latest_checkpoint(model_dir)
  if path is None:
    raise FileNotFoundError(f'no checkpoint in {model_dir}')
  reader = tf.train.load_checkpoint(path)
  values = {}
  for name in reader.get_variable_to_shape_map():
    if any(k in name for k in IGNORED_KEYS):
      continue
    try:
      values[name] = reader.get_tensor(name)
    except tf.errors.OpError:  # a variant, e.g. the tf.data iterator state: not readable here
      continue
  return values


def compare(chaos: Dict[str, np.ndarray], reference: Dict[str, np.ndarray]) -> List[str]:
  """Names (with the max difference) of the entries that differ or exist on one side only."""
  problems = []
  for name in sorted(set(chaos) | set(reference)):
    if name not in chaos or name not in reference:
      problems.append(f'{name}: only in the {"reference" if name in reference else "chaos"} run')
      continue
    a, b = chaos[name], reference[name]
    if a.dtype.kind in 'fiub':
      if a.shape != b.shape or not np.array_equal(a, b):
        diff = (np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))
                if a.shape == b.shape else 'shape')
        problems.append(f'{name}: max |diff| {diff}')
    elif not np.array_equal(a, b):  # strings, e.g. a serialized iterator state
      problems.append(f'{name}: differs')
  return problems


def main(argv: Sequence[str] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--kills', type=int, default=3, help='SIGKILLs at random steps (default 3)')
  parser.add_argument('--seed', type=int, default=None, help='seed of the random kill steps')
  parser.add_argument('--work_dir', required=True, help='holds chaos/ and reference/ (emptied)')
  parser.add_argument('--min_step', type=int, default=2, help='kill no earlier than this step')
  parser.add_argument('command', nargs=argparse.REMAINDER)
  args = parser.parse_args(argv)
  command = args.command[1:] if args.command[:1] == ['--'] else args.command
  if not command:
    parser.error('give the train.py command after --')
  shutil.rmtree(args.work_dir, ignore_errors=True)
  os.makedirs(args.work_dir)
  chaos_dir = os.path.join(args.work_dir, 'chaos')
  reference_dir = os.path.join(args.work_dir, 'reference')
  rng = random.Random(args.seed)
  start = time.time()
  with open(os.path.join(args.work_dir, 'log.txt'), 'w') as log:
    reference = run_until(command + [f'--model_dir={reference_dir}'], None, log)
    if reference['returncode'] != 0:
      print(f'the uninterrupted run failed (exit {reference["returncode"]}); see {log.name}')
      return 2
    total = reference['total']
    kill_steps = sorted(rng.sample(range(args.min_step, total), min(args.kills,
                                                                     total - args.min_step)))
    print(f'uninterrupted run: {total} steps; killing the chaos run at steps {kill_steps}')
    for kill_step in kill_steps + [None]:
      result = run_until(command + [f'--model_dir={chaos_dir}'], kill_step, log)
      if kill_step is None:
        if result['returncode'] != 0:
          print(f'the final resumed run failed (exit {result["returncode"]}); see {log.name}')
          return 2
        print(f'final run: resumed after step {result["first"]}, finished at {result["last"]}')
      elif result['returncode'] == 0:
        print(f'the run finished before step {kill_step}: make the run longer')
        return 2
      else:
        print(f'SIGKILL after step {result["last"]} (run started at step {result["first"]})')
  problems = compare(checkpoint_values(chaos_dir), checkpoint_values(reference_dir))
  elapsed = time.time() - start
  if problems:
    print(f'FAIL ({elapsed:.0f} s): {len(problems)} checkpoint entries differ:\n  ' +
          '\n  '.join(problems[:20]))
    return 1
  print(f'OK ({elapsed:.0f} s): the resumed run\'s final checkpoint equals the uninterrupted '
        f'run\'s in all {len(checkpoint_values(reference_dir))} entries')
  return 0


if __name__ == '__main__':
  sys.exit(main())
