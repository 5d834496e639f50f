"""Benchmarks pretraining steps: steps/s, sequences/s, tokens/s, model TFLOP/s and the fraction of peak.

Runs an experiment's train step for a number of steps on synthetic (`dummy`) or real data, for one or more
variants side by side in one process (e.g. float32 vs bfloat16, XLA on/off), and reports medians over
timing windows. The machine's matmul peak is measured here, in the same dtype, with a large square matmul.

Example:
  python scripts/benchmark.py --config_file=configs/pretraining/bert_mini.yaml \
      --params_override='task.train_data.global_batch_size=32,task.train_data.seq_length=128' \
      --variants=float32,bfloat16,float32+xla,bfloat16+xla --steps=60
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position


def model_flops_per_sequence(params) -> Dict[str, float]:
  """Training FLOPs of one sequence (forward x 3: forward, and backward at twice the forward).

  Counts matmuls only (2 FLOPs per multiply-add): per layer Q/K/V/output projections, attention scores
  and the weighted sum, the feed-forward block; the masked-LM transform and vocabulary projection on the
  masked positions; the classification heads.
  """
  bert = params.task.model.encoder.get()
  data = params.task.train_data
  s, h, i, v = data.seq_length, bert.hidden_size, bert.intermediate_size, bert.vocab_size
  e = bert.embedding_size or h
  p = data.max_predictions_per_seq
  per_layer = 2 * s * h * 3 * h + 2 * s * s * h * 2 + 2 * s * h * h + 2 * s * h * i * 2
  encoder = bert.num_layers * per_layer + (2 * s * e * h if e != h else 0) + 2 * h * h
  mlm = 2 * p * h * e + 2 * p * e * v
  heads = sum(2 * h * max(head.inner_dim, 1) + 2 * max(head.inner_dim, h) * head.num_classes
              for head in params.task.model.cls_heads)
  forward = encoder + mlm + heads
  return {'forward': float(forward), 'train': 3.0 * forward}


def measure_matmul_peak(dtype: str, size: int = 2048, seconds: float = 2.0) -> float:
  """FLOP/s of a square matmul in `dtype` on the default device (the best of a few timed runs)."""
  a = tf.random.normal([size, size], dtype=tf.float32)
  a = tf.cast(a, dtype)

  @tf.function
  def run(x):
    for _ in range(4):
      x = tf.matmul(x, a) * tf.cast(0.01, dtype)
    return x

  run(a).numpy()
  best, start = 0.0, time.time()
  while time.time() - start < seconds:
    t0 = time.perf_counter()
    run(a).numpy()
    best = max(best, 4 * 2 * size ** 3 / (time.perf_counter() - t0))
  return best


def _build_params(args, variant: str):
  from official.common import registry_imports  # pylint: disable=g-import-not-at-top,unused-import
  from official.core import exp_factory  # pylint: disable=g-import-not-at-top
  from official.modeling import hyperparams  # pylint: disable=g-import-not-at-top
  params = exp_factory.get_exp_config(args.experiment)
  for path in args.config_file:
    params.override(hyperparams.read_yaml(path))
  hyperparams.override_params_dict(params, args.params_override, is_strict=True)
  parts = variant.split('+')
  dtype = parts[0]
  params.override({'runtime': {'mixed_precision_dtype': None if dtype == 'float32' else dtype,
                               'enable_xla': 'xla' in parts}})
  if args.data == 'dummy':
    params.task.train_data.input_path = 'dummy'
  params.validate()
  return params


def run_variant(args, variant: str) -> Dict[str, Any]:
  """Builds the task and model for `variant` and times `args.steps` train steps."""
  from official.core import task_factory  # pylint: disable=g-import-not-at-top
  from official.modeling import performance  # pylint: disable=g-import-not-at-top
  params = _build_params(args, variant)
  performance.set_mixed_precision_policy(params.runtime.mixed_precision_dtype)
  try:
    task = task_factory.get_task(params.task)
    model = task.build_model()
    optimizer = task.create_optimizer(params.trainer.optimizer_config, params.runtime)
    metrics = task.build_metrics(training=True)
    dataset = task.build_inputs(params.task.train_data)
    iterator = iter(dataset)
    jit = params.runtime.enable_xla

    @tf.function(jit_compile=jit)
    def step(batch):
      return task.train_step(batch, model, optimizer, metrics)['loss']

    batch = next(iterator)
    start = time.perf_counter()
    step(batch).numpy()
    first_step = time.perf_counter() - start
    window = max(1, args.steps // args.windows)
    rates = []
    for _ in range(args.windows):
      batches = [next(iterator) for _ in range(window)]
      t0 = time.perf_counter()
      for b in batches:
        loss = step(b)
      loss.numpy()
      rates.append(window / (time.perf_counter() - t0))
  finally:
    performance.set_mixed_precision_policy(None)
  steps_per_second = statistics.median(rates)
  data = params.task.train_data
  flops = model_flops_per_sequence(params)['train'] * data.global_batch_size * steps_per_second
  return {'variant': variant, 'steps_per_second': steps_per_second,
          'sequences_per_second': steps_per_second * data.global_batch_size,
          'tokens_per_second': steps_per_second * data.global_batch_size * data.seq_length,
          'model_tflops': flops / 1e12, 'time_to_first_step_s': first_step,
          'final_loss': float(loss), 'dtype': variant.split('+')[0]}


def main(argv: List[str] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--experiment', default='bert/pretraining')
  parser.add_argument('--config_file', action='append', default=[],
                      help='YAML config (repeatable); default configs/pretraining/bert_mini.yaml')
  parser.add_argument('--params_override', default='')
  parser.add_argument('--variants', default='float32,bfloat16',
                      help='comma list of DTYPE[+xla], DTYPE in float32, bfloat16, float16')
  parser.add_argument('--steps', type=int, default=60)
  parser.add_argument('--windows', type=int, default=5, help='timing windows (median reported)')
  parser.add_argument('--data', default='dummy', choices=('dummy', 'config'),
                      help="'dummy': synthetic batches; 'config': the config's train_data")
  parser.add_argument('--json', default='', help='also write the results to this JSON file')
  args = parser.parse_args(argv)
  if not args.config_file:
    args.config_file = [os.path.join(ROOT, 'configs/pretraining/bert_mini.yaml')]
  variants = [v.strip() for v in args.variants.split(',') if v.strip()]
  peaks = {}
  for dtype in sorted({v.split('+')[0] for v in variants}):
    peaks[dtype] = measure_matmul_peak(dtype)
  results = []
  for variant in variants:
    result = run_variant(args, variant)
    result['fraction_of_matmul_peak'] = result['model_tflops'] * 1e12 / peaks[result['dtype']]
    result['matmul_peak_tflops'] = peaks[result['dtype']] / 1e12
    results.append(result)
    print(f"{variant}: {result['steps_per_second']:.2f} steps/s", file=sys.stderr, flush=True)
  peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  header = ('variant', 'steps/s', 'seq/s', 'tokens/s', 'TFLOP/s', 'peak TFLOP/s', 'of peak',
            'first step s')
  print(' | '.join(header))
  base = results[0]['steps_per_second']
  for r in results:
    print(' | '.join([r['variant'], f"{r['steps_per_second']:.2f} ({r['steps_per_second'] / base:.2f}x)",
                      f"{r['sequences_per_second']:.1f}", f"{r['tokens_per_second']:.0f}",
                      f"{r['model_tflops']:.3f}", f"{r['matmul_peak_tflops']:.3f}",
                      f"{100 * r['fraction_of_matmul_peak']:.1f}%",
                      f"{r['time_to_first_step_s']:.1f}"]))
  print(f'peak host memory: {peak_rss_mb:.0f} MB')
  report = {'results': results, 'peak_host_memory_mb': peak_rss_mb,
            'devices': [d.name for d in tf.config.list_logical_devices()]}
  if args.json:
    with open(args.json, 'w', encoding='utf-8') as f:
      json.dump(report, f, indent=2)
  return 0


if __name__ == '__main__':
  sys.exit(main())
