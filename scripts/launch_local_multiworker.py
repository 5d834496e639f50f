#!/usr/bin/env python3
"""Starts N training worker processes on this machine, a `MultiWorkerMirroredStrategy` cluster on
127.0.0.1, to try multi-worker training (and its preemption handling) without a cluster.

Each worker runs the given command with its own `TF_CONFIG` (free ports picked here) and with
`runtime.distribution_strategy=multi_worker_mirrored` added to `--params_override` when the command
is `official.nlp.train` / `mlm-train`. Output lines are prefixed with `[worker i]`. SIGTERM/SIGINT
are passed on to every worker; when one worker fails the others are stopped. The exit code is the
first non-zero worker exit code (0 when all succeed).

Usage:
  python scripts/launch_local_multiworker.py --num_workers 2 -- \\
      python -m official.nlp.train --experiment=bert/pretraining \\
      --config_file=configs/pretraining/bert_tiny.yaml --model_dir=/tmp/mw --mode=train

On a real cluster, start the same command on every host with that host's TF_CONFIG, e.g. for
the second of two hosts:
  TF_CONFIG='{"cluster": {"worker": ["host0:12345", "host1:12345"]},
              "task": {"type": "worker", "index": 1}}' python -m official.nlp.train ...
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import List, Sequence

STRATEGY_OVERRIDE = 'runtime.distribution_strategy=multi_worker_mirrored'


def free_ports(count: int) -> List[int]:
  """`count` distinct TCP ports that are free on 127.0.0.1 right now."""
  sockets, ports = [], []
  for _ in range(count):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(('127.0.0.1', 0))
    sockets.append(sock)
    ports.append(sock.getsockname()[1])
  for sock in sockets:
    sock.close()
  return ports


def tf_config(workers: Sequence[str], index: int) -> str:
  """The TF_CONFIG JSON of worker `index` of the cluster `workers` ('host:port' each)."""
  return json.dumps({'cluster': {'worker': list(workers)},
                     'task': {'type': 'worker', 'index': index}})


def with_strategy_override(command: Sequence[str]) -> List[str]:
  """Adds the multi-worker strategy to a train.py command's --params_override (if it is one)."""
  command = list(command)
  is_train = any(part.endswith(('official.nlp.train', 'mlm-train', 'official/nlp/train.py'))
                 for part in command)
  if not is_train or any(STRATEGY_OVERRIDE in part for part in command):
    return command
  for i, part in enumerate(command):
    if part.startswith('--params_override='):
      command[i] = f'{part},{STRATEGY_OVERRIDE}'
      return command
    if part == '--params_override' and i + 1 < len(command):
      command[i + 1] = f'{command[i + 1]},{STRATEGY_OVERRIDE}'
      return command
  return command + [f'--params_override={STRATEGY_OVERRIDE}']


def _pipe_output(process: subprocess.Popen, prefix: str) -> None:
  for line in process.stdout:
    sys.stdout.write(f'{prefix} {line}')
    sys.stdout.flush()


def launch(command: Sequence[str], num_workers: int, timeout: float = 0) -> int:
  """Runs `command` as `num_workers` local workers; returns the exit code (see module doc)."""
  ports = free_ports(num_workers)
  workers = [f'127.0.0.1:{port}' for port in ports]
  command = with_strategy_override(command)
  processes = []
  for index in range(num_workers):
    env = dict(os.environ, TF_CONFIG=tf_config(workers, index))
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, bufsize=1)
    processes.append(process)
    threading.Thread(target=_pipe_output, args=(process, f'[worker {index}]'),
                     daemon=True).start()
  print(f'started {num_workers} workers on {", ".join(workers)} (pids '
        f'{", ".join(str(p.pid) for p in processes)})', flush=True)

  def forward(signum, frame):
    del frame
    for process in processes:
      if process.poll() is None:
        process.send_signal(signum)

  previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
  start = time.time()
  try:
    while True:
      codes = [process.poll() for process in processes]
      failed = [code for code in codes if code not in (None, 0)]
      if failed:
        # One worker died: the others would wait for it forever in their collectives.
        for process in processes:
          if process.poll() is None:
            process.kill()
        for process in processes:
          process.wait()
        print(f'a worker exited with code {failed[0]}; stopped the others', flush=True)
        return failed[0]
      if all(code == 0 for code in codes):
        return 0
      if timeout and time.time() - start > timeout:
        for process in processes:
          process.kill()
        print(f'timeout after {timeout:.0f} s; killed the workers', flush=True)
        return 124
      time.sleep(0.2)
  finally:
    for sig, handler in previous.items():
      signal.signal(sig, handler)


def main(argv: Sequence[str] = None) -> int:
  parser = argparse.ArgumentParser(
      description=__doc__.split('\n\n')[0],
      usage='%(prog)s [--num_workers N] [--timeout S] -- command [args...]')
  parser.add_argument('--num_workers', type=int, default=2, help='worker processes (default 2)')
  parser.add_argument('--timeout', type=float, default=0,
                      help='kill the workers after this many seconds (0: no limit)')
  parser.add_argument('command', nargs=argparse.REMAINDER, help='the command each worker runs')
  args = parser.parse_args(argv)
  command = args.command[1:] if args.command[:1] == ['--'] else args.command
  if not command:
    parser.error('give the command to run after --, e.g. -- python -m official.nlp.train ...')
  if args.num_workers < 1:
    parser.error(f'--num_workers must be >= 1, found {args.num_workers}')
  return launch(command, args.num_workers, args.timeout)


if __name__ == '__main__':
  sys.exit(main())
