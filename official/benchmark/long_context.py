"""Long context: tokens/s and peak memory of ModernBERT against BERT of the same width and depth.

For each model (`--configs`: BERT-mini and ModernBERT-mini by default) and sequence length
(`--seq_lengths`, default 512, 2048, 8192) a child process builds the `bert/pretraining` model
the way training does (the task's `build_model`), then times training steps (forward, masked-LM
loss, backward, AdamW update; one compiled `tf.function`) and inference (the encoder's forward
pass) on synthetic rows, with the same number of tokens per batch at every length
(`--tokens_per_batch`, e.g. 8192: batch 16 at 512, 1 at 8192). Peak memory is the child's
peak resident set size (`ru_maxrss`, TensorFlow's runtime included), measured after training
steps; an idle process with the model built is reported too, to read the part the steps add.

ModernBERT's local layers attend within a 128-token window computed block by block
(`blocked_local_attention`), so their cost grows linearly with the length; its global layers
(every third) and all of BERT's layers attend over the whole row (quadratic). BERT's learned
position table is sized to the longest length here. `--precision`: float32 (default) or bfloat16
(`--dtype`, its old name, still works with a note on stderr).

The command line is `scripts/benchmark_long_context.py` (`main`); each child is this module run
with `--worker` (`python -m official.benchmark.long_context`), which measures in its own process
(`measure`) and prints one JSON line.

Usage:
  .venv/bin/python scripts/benchmark_long_context.py --json=/tmp/long_context.json
  .venv/bin/python scripts/benchmark_long_context.py --seq_lengths=512,2048 --steps=3
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

from official.common import cli_utils

# The repository: children run there (the default configs are paths relative to it).
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_CONFIGS = ('configs/pretraining/bert_mini.yaml', 'configs/pretraining/modernbert_mini.yaml')
# Old flag names -> the names shared by the tools (`cli_utils.renamed_flags`).
RENAMED_FLAGS = {'dtype': 'precision'}
PROGRAM = 'benchmark_long_context'

# A measurement: config (file name), seq_length, batch, dtype, train/inference tokens per
# second, train_step_seconds, idle/train/final peak memory in MB.
Row = Dict[str, float]


def _peak_rss_mb() -> float:
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kilobytes


def measure(config_file: str, seq_length: int, tokens_per_batch: int, steps: int,
            dtype: str) -> Row:
  """One model at one length, in this process: train and inference tokens/s, peak memory.

  Args:
    config_file: a pretraining YAML (`configs/pretraining/*.yaml`).
    seq_length: the tokens of a row.
    tokens_per_batch: tokens of a batch (the batch is `tokens_per_batch // seq_length`, >= 1).
    steps: timed steps of each kind (after two untimed ones).
    dtype: 'float32' or a mixed precision policy ('bfloat16').

  Returns:
    The row: `config`, `seq_length`, `batch`, `dtype`, `train_tokens_per_second`,
    `inference_tokens_per_second`, `train_step_seconds`, `idle_peak_mb`, `train_peak_mb`,
    `peak_mb`.

  Example:
    >>> measure('configs/pretraining/bert_tiny.yaml', 64, 128, 1, 'float32')['batch']
    2
  """
  # Function-level: the parent process only starts children (no TensorFlow there).
  import tensorflow as tf
  import tf_keras
  import yaml
  # Imported for its registrations (experiments and tasks).
  from official.common import registry_imports  # pylint: disable=unused-import  # noqa: F401
  from official.core import task_factory
  from official.modeling import performance
  from official.nlp import api
  from official.nlp.data import pretrain_dataloader

  batch = max(tokens_per_batch // seq_length, 1)
  predictions = max(seq_length * 15 // 100, 1)
  overrides = {'task.train_data.seq_length': seq_length,
               'task.train_data.max_predictions_per_seq': predictions,
               'task.train_data.global_batch_size': batch,
               'task.train_data.use_next_sentence_label': False,
               'task.model.cls_heads': []}
  with open(config_file) as f:
    encoder_type = yaml.safe_load(f)['task']['model']['encoder']['type']
  if encoder_type == 'bert':  # a learned position table as long as the rows
    overrides['task.model.encoder.bert.max_position_embeddings'] = max(seq_length, 512)
  params = api.load_config(config_file, overrides=overrides)
  encoder = params.task.model.encoder
  if dtype != 'float32':
    performance.set_mixed_precision_policy(dtype)
  task = task_factory.get_task(params.task)
  model = task.build_model()
  idle_mb = _peak_rss_mb()
  optimizer = tf_keras.optimizers.AdamW(1e-4)
  data = next(iter(pretrain_dataloader.dummy_dataset(params.task.train_data,
                                                     encoder.get().vocab_size)))

  @tf.function
  def train_step(inputs):
    with tf.GradientTape() as tape:
      outputs = model(inputs, training=True)
      loss = task.build_losses(labels=inputs, model_outputs=outputs)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

  encoder_network = model.encoder_network

  @tf.function
  def forward(inputs):
    return encoder_network(inputs, training=False)['sequence_output']

  def timed(function, count):
    function(data)  # compile
    function(data)
    started = time.perf_counter()
    for _ in range(count):
      result = function(data)
    float(tf.reduce_sum(tf.cast(result, tf.float32)))
    return (time.perf_counter() - started) / count

  train_seconds = timed(train_step, steps)
  train_peak_mb = _peak_rss_mb()
  inference_seconds = timed(forward, steps)
  tokens = batch * seq_length
  return dict(config=os.path.basename(config_file), seq_length=seq_length, batch=batch,
              dtype=dtype, train_tokens_per_second=tokens / train_seconds,
              inference_tokens_per_second=tokens / inference_seconds,
              train_step_seconds=train_seconds, idle_peak_mb=idle_mb,
              train_peak_mb=train_peak_mb, peak_mb=_peak_rss_mb())


def worker_command(config_file: str, seq_length: int, tokens_per_batch: int, steps: int,
                   precision: str) -> List[str]:
  """The command of the child process measuring one model at one length (`measure`).

  Example:
    >>> worker_command('a.yaml', 512, 8192, 5, 'float32')[1:4]
    ['-m', 'official.benchmark.long_context', '--worker']
  """
  return [sys.executable, '-m', 'official.benchmark.long_context', '--worker',
          f'--config={config_file}', f'--seq_length={seq_length}',
          f'--tokens_per_batch={tokens_per_batch}', f'--steps={steps}',
          f'--precision={precision}']


def measure_in_child(config_file: str, seq_length: int, tokens_per_batch: int, steps: int,
                     precision: str) -> Optional[Row]:
  """`measure` in a child process (its own peak memory), or None when the child failed.

  A failure is reported on stderr with the end of the child's stderr.

  Example:
    >>> measure_in_child('configs/pretraining/bert_mini.yaml', 512, 8192, 5, 'float32')
    {'config': 'bert_mini.yaml', 'seq_length': 512, 'batch': 16, ...}
  """
  command = worker_command(config_file, seq_length, tokens_per_batch, steps, precision)
  done = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                        env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2'))
  lines = [line for line in done.stdout.splitlines() if line.startswith('{')]
  if done.returncode or not lines:
    print(f'{config_file} at {seq_length}: failed ({done.returncode})\n{done.stderr[-2000:]}',
          file=sys.stderr)
    return None
  return json.loads(lines[-1])


def table(rows: Sequence[Row]) -> str:
  """A Markdown table of the rows: model, length, batch, tokens/s, peak memory after training.

  Example:
    >>> print(table([]))
    | model | seq | batch | train tokens/s | inference tokens/s | peak memory (MB) |
    |---|---|---|---|---|---|
  """
  lines = ['| model | seq | batch | train tokens/s | inference tokens/s | peak memory (MB) |',
           '|---|---|---|---|---|---|']
  for row in rows:
    lines.append(f"| {row['config']} | {row['seq_length']} | {row['batch']} | "
                 f"{row['train_tokens_per_second']:.0f} | {row['inference_tokens_per_second']:.0f}"
                 f" | {row['train_peak_mb']:.0f} |")
  return '\n'.join(lines)


def run(configs: Sequence[str], seq_lengths: Sequence[int], tokens_per_batch: int, steps: int,
        precision: str, measure_fn: Optional[Callable[..., Optional[Row]]] = None) -> List[Row]:
  """Measures every config at every length (lengths outermost), one child each.

  Each row is printed to stderr as a JSON line when it arrives; failed measurements are left out.

  Args:
    configs: pretraining YAMLs.
    seq_lengths: row lengths.
    tokens_per_batch, steps, precision: as `measure` takes them.
    measure_fn: a stand-in for `measure_in_child` (the default), with its arguments.

  Returns:
    The rows.

  Example:
    >>> rows = run(DEFAULT_CONFIGS, [512, 2048], 8192, 3, 'float32')
  """
  measure_fn = measure_fn or measure_in_child
  rows = []
  for seq_length in seq_lengths:
    for config_file in configs:
      row = measure_fn(config_file, seq_length, tokens_per_batch, steps, precision)
      if row:
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
  return rows


def main(argv: Optional[Sequence[str]] = None) -> List[Row]:
  """The command line (`scripts/benchmark_long_context.py`): prints the table, writes `--json`.

  Args:
    argv: the flags (default: `sys.argv[1:]`).

  Returns:
    The rows ([] for a `--worker`, which prints its one row as JSON).

  Example:
    >>> main(['--seq_lengths=512', '--steps=3', '--json=/tmp/long_context.json'])
  """
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--configs', default=','.join(DEFAULT_CONFIGS))
  parser.add_argument('--seq_lengths', default='512,2048,8192')
  parser.add_argument('--tokens_per_batch', type=int, default=8192)
  parser.add_argument('--steps', type=int, default=5)
  parser.add_argument('--precision', default='float32', choices=('float32', 'bfloat16'))
  parser.add_argument('--json', default='')
  parser.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
  parser.add_argument('--config', default='', help=argparse.SUPPRESS)
  parser.add_argument('--seq_length', type=int, default=0, help=argparse.SUPPRESS)
  args = parser.parse_args(cli_utils.renamed_flags(sys.argv[1:] if argv is None else argv,
                                                   RENAMED_FLAGS, PROGRAM))
  if args.worker:
    print(json.dumps(measure(args.config, args.seq_length, args.tokens_per_batch, args.steps,
                             args.precision)))
    return []
  rows = run(args.configs.split(','), [int(s) for s in args.seq_lengths.split(',')],
             args.tokens_per_batch, args.steps, args.precision)
  print(table(rows))
  if args.json:
    with open(args.json, 'w') as f:
      json.dump(rows, f, indent=2)
  return rows


if __name__ == '__main__':
  main()
