"""Peak memory and wall time of `create_pretraining_data` with ONE output file (issue 14's memory
bound).

Two inputs of about `--megabytes` MB (default 50), made from the docstrings of the interpreter's
standard
library (`data_tools.stdlib_corpus`, about 1.5 MB), repeated with the documents in a new seeded
order each time:
  * `corpus`: one sentence a line, a blank line between documents (the usual input);
  * `one_line`: the same text as one single line (no newline at all: the worst case for line-based
    reading).
The vocabulary is built from the corpus by `data_tools.build_vocab` (8,000 tokens). Each input is
written to one output file with dupe_factor 5, max_seq_length 128, max_predictions_per_seq 20, seed
12345.

Memory: every process of the run's tree (the command and its forked workers) is sampled every 50 ms
from /proc/PID/smaps_rollup; "peak RSS" is the largest sum of the tree's resident set sizes (pages
shared between forked workers counted once per process: an upper bound), "peak PSS" the largest sum
of proportional set sizes (shared pages split between the processes: the real footprint). The target
is a peak RSS under 1 GB.

Usage:
  python scripts/benchmark_create_pretraining_data_memory.py [--work_dir=/tmp/cpd-memory]
  [--num_workers=2]
      [--megabytes=50] [--inputs=corpus,one_line] [--code_dir=/tmp/old]
"""

import argparse
import os
import random
import subprocess
import sys
import time
from typing import List, Tuple

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tree(root: int) -> List[int]:
  """The process and its descendants (through /proc/PID/task/TID/children)."""
  out, todo = [], [root]
  while todo:
    pid = todo.pop()
    out.append(pid)
    try:
      for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
          todo.extend(int(child) for child in f.read().split())
    except OSError:
      pass
  return out


def _memory_kb(pid: int) -> Tuple[int, int]:
  rss = pss = 0
  try:
    with open(f"/proc/{pid}/smaps_rollup") as f:
      for line in f:
        if line.startswith("Rss:"):
          rss = int(line.split()[1])
        elif line.startswith("Pss:"):
          pss = int(line.split()[1])
  except OSError:
    pass
  return rss, pss


def measure(command: List[str], log_path: str, cwd: str = _REPO) -> Tuple[float, float, float]:
  """Runs `command` in `cwd`; returns `(wall seconds, peak RSS MB, peak PSS MB)`.

  The peaks are those of its whole process tree.
  """
  start = time.perf_counter()
  peak_rss = peak_pss = 0
  with open(log_path, "w") as log:
    proc = subprocess.Popen(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    while proc.poll() is None:
      rss = pss = 0
      for pid in _tree(proc.pid):
        r, p = _memory_kb(pid)
        rss, pss = rss + r, pss + p
      peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
      time.sleep(0.05)
  wall = time.perf_counter() - start
  if proc.returncode:
    sys.exit(f"{' '.join(command)}: exit code {proc.returncode}, see {log_path}")
  return wall, peak_rss / 1024, peak_pss / 1024


def _make_inputs(work_dir: str, python: str, megabytes: float) -> Tuple[str, str, str]:
  base = os.path.join(work_dir, "stdlib.txt")
  if not os.path.isfile(base):
    subprocess.run([python, "-m", "data_tools.stdlib_corpus", f"--output_file={base}"], cwd=_REPO,
                   check=True)
  corpus = os.path.join(work_dir, f"corpus_{megabytes:g}mb.txt")
  one_line = os.path.join(work_dir, f"one_line_{megabytes:g}mb.txt")
  if not (os.path.isfile(corpus) and os.path.isfile(one_line)):
    with open(base, encoding="utf-8") as f:
      documents = [d.strip() for d in f.read().split("\n\n") if d.strip()]
    rng = random.Random(0)
    target = int(megabytes * 1e6)
    written = 0
    with (open(corpus, "w", encoding="utf-8") as out,
          open(one_line, "w", encoding="utf-8") as line_out):
      while written < target:
        rng.shuffle(documents)
        for document in documents:
          out.write(document + "\n\n")
          line_out.write(document.replace("\n", " ") + " ")
          written += len(document) + 2
          if written >= target:
            break
  vocab_dir = os.path.join(work_dir, "vocab")
  if not os.path.isfile(os.path.join(vocab_dir, "vocab.txt")):
    subprocess.run([python, "-m", "data_tools.build_vocab", f"--input_file={base}",
                    f"--output_dir={vocab_dir}"],
                   cwd=_REPO, check=True, stdout=subprocess.DEVNULL)
  return corpus, one_line, os.path.join(vocab_dir, "vocab.txt")


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--work_dir", default="/tmp/cpd-memory")
  parser.add_argument("--num_workers", type=int, default=2)
  parser.add_argument("--megabytes", type=float, default=50)
  parser.add_argument("--inputs", default="corpus,one_line")
  parser.add_argument("--python", default=os.path.join(_REPO, ".venv", "bin", "python"))
  parser.add_argument("--code_dir", default=_REPO,
                      help="Where `data_tools` is imported from (e.g. an export of another commit: "
                      "`git archive HEAD official data_tools | tar -x -C /tmp/old`).")
  args = parser.parse_args()
  os.makedirs(os.path.join(args.work_dir, "out"), exist_ok=True)
  corpus, one_line, vocab = _make_inputs(args.work_dir, args.python, args.megabytes)
  inputs = {"corpus": corpus, "one_line": one_line}
  print(f"{'input':<10}{'MB':>7}{'wall s':>9}{'peak RSS MB':>13}{'peak PSS MB':>13}"
        f"{'output MB':>11}")
  for name in args.inputs.split(","):
    output = os.path.join(args.work_dir, "out", f"{name}.tfrecord")
    command = [args.python, "-m", "data_tools.create_pretraining_data",
               f"--input_file={inputs[name]}", f"--output_file={output}", f"--vocab_file={vocab}",
               "--dupe_factor=5", "--max_seq_length=128", "--max_predictions_per_seq=20",
               "--random_seed=12345", f"--num_workers={args.num_workers}"]
    wall, rss, pss = measure(command, os.path.join(args.work_dir, f"{name}.log"), args.code_dir)
    print(f"{name:<10}{os.path.getsize(inputs[name]) / 1e6:>7.1f}{wall:>9.1f}{rss:>13.0f}"
          f"{pss:>13.0f}{os.path.getsize(output) / 1e6:>11.1f}", flush=True)


if __name__ == "__main__":
  main()
