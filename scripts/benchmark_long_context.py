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
from typing import Dict, List, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from official.common import cli_utils  # pylint: disable=wrong-import-position

DEFAULT_CONFIGS = ('configs/pretraining/bert_mini.yaml', 'configs/pretraining/modernbert_mini.yaml')
# Old flag names -> the names shared by the tools (`cli_utils.renamed_flags`).
RENAMED_FLAGS = {'dtype': 'precision'}


def _peak_rss_mb() -> float:
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kilobytes


def measure(config_file: str, seq_length: int, tokens_per_batch: int, steps: int,
            dtype: str) -> Dict[str, float]:
  """One model at one length, in this process: train and inference tokens/s, peak memory."""
  # Function-level: the parent process only starts children (no TensorFlow there).
  import tensorflow as tf
  import tf_keras
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
  import yaml  # Function-level: as above.
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


def _child(config_file: str, seq_length: int, args) -> Optional[Dict[str, float]]:
  command = [sys.executable, os.path.abspath(__file__), '--worker', f'--config={config_file}',
             f'--seq_length={seq_length}', f'--tokens_per_batch={args.tokens_per_batch}',
             f'--steps={args.steps}', f'--precision={args.precision}']
  done = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                        env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2'))
  lines = [line for line in done.stdout.splitlines() if line.startswith('{')]
  if done.returncode or not lines:
    print(f'{config_file} at {seq_length}: failed ({done.returncode})\n{done.stderr[-2000:]}',
          file=sys.stderr)
    return None
  return json.loads(lines[-1])


def table(rows: Sequence[Dict[str, float]]) -> str:
  lines = ['| model | seq | batch | train tokens/s | inference tokens/s | peak memory (MB) |',
           '|---|---|---|---|---|---|']
  for row in rows:
    lines.append(f"| {row['config']} | {row['seq_length']} | {row['batch']} | "
                 f"{row['train_tokens_per_second']:.0f} | {row['inference_tokens_per_second']:.0f}"
                 f" | {row['train_peak_mb']:.0f} |")
  return '\n'.join(lines)


def main(argv: Optional[Sequence[str]] = None) -> List[Dict[str, float]]:
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
                                                   RENAMED_FLAGS, 'benchmark_long_context'))
  if args.worker:
    print(json.dumps(measure(args.config, args.seq_length, args.tokens_per_batch, args.steps,
                             args.precision)))
    return []
  rows = []
  for seq_length in [int(s) for s in args.seq_lengths.split(',')]:
    for config_file in args.configs.split(','):
      row = _child(config_file, seq_length, args)
      if row:
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
  print(table(rows))
  if args.json:
    with open(args.json, 'w') as f:
      json.dump(rows, f, indent=2)
  return rows


if __name__ == '__main__':
  main()
