"""Benchmarks pretraining train steps: steps/s, sequences/s, tokens/s, model TFLOP/s, fraction of
peak.

Builds each variant the way `official/nlp/train.py` does (the runtime's distribution strategy, the
task, and `official.core.trainer.Trainer`, whose compiled train loop is what a real run executes)
and times the trainer's loop on synthetic (`--data=dummy`) or the config's (`--data=config`)
records. Variants (e.g. `float32,float32+xla,bfloat16,bfloat16+xla`) are built once and then timed
round-robin in windows of `--steps_per_window` steps, so that a machine shared with other jobs slows
every variant alike; medians over windows and the median of per-round ratios to the first variant
are reported, with the process CPU seconds per step (steadier than wall time when other jobs share
the machine). Memory: the process' peak host memory while each variant was built and timed, and the
part the variant added (earlier variants stay resident); the peak device memory on GPU.

The model FLOPs are counted from the encoder type's own config (`model_flops`: matmuls only, 2 per
multiply-add; training = 3x the forward pass); an encoder type without a count is refused before
anything is built. The matmul roofline is measured in the same run for each dtype (a square
matmul, best of the rounds), and each variant's share is against its own dtype's roofline
(float32 against float32, bfloat16 against bfloat16). The model FLOPs count every position
through every layer (the model-FLOP convention, the same for every framework); the share of what
the step executes (the last layer at the masked positions only,
`model_flops.executed_flops_per_sequence`) is reported beside it. The report names the CPU
(model name and its AVX2 / AVX-512 / bfloat16 / AMX flags, `cpu_info`) in the table and in every
JSON result. On a GPU the report adds the model-FLOP utilization against the GPU's datasheet peak
when the GPU is in `GPU_PEAK_TFLOPS`.

`mlm-benchmark` and `python scripts/benchmark.py` run this module's `main`.

Examples:
  mlm-benchmark --variants=float32,float32+xla,bfloat16,bfloat16+xla \
      --params_override='task.train_data.global_batch_size=32' --json=/tmp/bench.json
  mlm-benchmark --variants=bfloat16 --profile_steps=5   # + where a step's time goes
  mlm-benchmark --pipeline_only --data=config \
      --params_override='task.train_data.input_path=data/train.tfrecord-*'
"""

import argparse
import contextlib
import json
import logging
import os
import resource
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

# pylint: disable=g-import-not-at-top,wrong-import-position
from official.common import cli_utils
from official.common import distribute_utils
from official.common import quiet
# Imported for its registrations (experiments and tasks).
from official.common import registry_imports  # pylint: disable=unused-import  # noqa: F401
from official.core import exp_factory
from official.core import task_factory
from official.core import trainer as trainer_lib
from official.modeling import hyperparams
from official.modeling import performance
from official.nlp.configs import known_fields
from official.nlp.tools import model_flops
from official.nlp.tools import step_profile
from official.utils.misc import cpu_info
# pylint: enable=g-import-not-at-top,wrong-import-position

DTYPES = ('float32', 'bfloat16', 'float16')
DEFAULT_CONFIG = os.path.join(ROOT, 'configs', 'pretraining', 'bert_mini.yaml')

# Dense (no sparsity) datasheet peaks in TFLOP/s: float32 without TF32, and bfloat16/float16
# tensor-core peaks. Matched as substrings of the device name, first match wins.
GPU_PEAK_TFLOPS = (
    ('H100 SXM', {'float32': 67.0, 'bfloat16': 989.0, 'float16': 989.0}),
    ('H100', {'float32': 51.0, 'bfloat16': 756.0, 'float16': 756.0}),
    ('A100', {'float32': 19.5, 'bfloat16': 312.0, 'float16': 312.0}),
    ('A10G', {'float32': 31.2, 'bfloat16': 125.0, 'float16': 125.0}),
    ('A10', {'float32': 31.2, 'bfloat16': 125.0, 'float16': 125.0}),
    ('L4', {'float32': 30.3, 'bfloat16': 121.0, 'float16': 121.0}),
    ('V100', {'float32': 15.7, 'float16': 125.0}),
    ('T4', {'float32': 8.1, 'float16': 65.0}),
    ('RTX 4090', {'float32': 82.6, 'bfloat16': 165.2, 'float16': 165.2}),
    ('RTX 3090', {'float32': 35.6, 'bfloat16': 71.0, 'float16': 71.0}),
)


# ---- model FLOPs ---------------------------------------------------------------------------------
# Counted from the encoder type's own config; the name stays here for callers of this module.
model_flops_per_sequence = model_flops.model_flops_per_sequence


# ---- machine peak --------------------------------------------------------------------------------
def default_matmul_size() -> int:
  return 4096 if tf.config.list_physical_devices('GPU') else 1024


def measure_matmul_peak(dtype: str, size: Optional[int] = None, seconds: float = 1.0) -> float:
  """The best FLOP/s of chained square `size` matmuls in `dtype` on the default device."""
  size = size or default_matmul_size()
  a = tf.cast(tf.random.normal([size, size], stddev=size ** -0.5), dtype)
  chain = 4

  @tf.function
  def run(x):
    for _ in range(chain):
      x = tf.matmul(x, a)
    return tf.reduce_sum(x[0, :1])

  run(a).numpy()
  best, start = 0.0, time.perf_counter()
  while True:
    t0 = time.perf_counter()
    run(a).numpy()
    now = time.perf_counter()
    best = max(best, chain * 2.0 * size ** 3 / (now - t0))
    if now - start > seconds:
      return best


def gpu_name() -> Optional[str]:
  gpus = tf.config.list_physical_devices('GPU')
  if not gpus:
    return None
  details = tf.config.experimental.get_device_details(gpus[0])
  return details.get('device_name', 'GPU')


def datasheet_peak_tflops(name: Optional[str], dtype: str) -> Optional[float]:
  """The datasheet peak (TFLOP/s) of GPU `name` in `dtype`, or None when unknown."""
  if not name:
    return None
  for key, peaks in GPU_PEAK_TFLOPS:
    if key.lower() in name.lower():
      return peaks.get(dtype)
  return None


# ---- memory --------------------------------------------------------------------------------------
def _proc_status_kb(field: str) -> Optional[int]:
  try:
    with open('/proc/self/status', encoding='ascii') as f:
      for line in f:
        if line.startswith(field + ':'):
          return int(line.split()[1])
  except OSError:
    pass
  return None


def reset_peak_host_memory() -> bool:
  """Resets the process' peak RSS (Linux `clear_refs` 5); False where unsupported."""
  try:
    with open('/proc/self/clear_refs', 'w', encoding='ascii') as f:
      f.write('5')
    return True
  except OSError:
    return False


def peak_host_memory_mb() -> float:
  """Peak resident memory (MB) since the last reset (or since the process started)."""
  hwm = _proc_status_kb('VmHWM')
  if hwm is None:
    hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  return hwm / 1024.0


def reset_device_memory() -> None:
  for gpu in tf.config.list_logical_devices('GPU'):
    tf.config.experimental.reset_memory_stats(gpu.name)


def peak_device_memory_mb() -> Optional[float]:
  gpus = tf.config.list_logical_devices('GPU')
  if not gpus:
    return None
  return max(tf.config.experimental.get_memory_info(g.name)['peak'] for g in gpus) / 2.0 ** 20


# ---- configs -------------------------------------------------------------------------------------
def parse_variant(variant: str) -> Dict[str, Any]:
  """'bfloat16+xla' -> {'dtype': 'bfloat16', 'xla': True}.

  Raises:
    ValueError: an unknown dtype or option, naming the variant.
  """
  parts = [p.strip() for p in variant.split('+')]
  if parts[0] not in DTYPES:
    raise ValueError(f'--variants: {variant!r} starts with {parts[0]!r}; expected one of {DTYPES}')
  unknown = [p for p in parts[1:] if p != 'xla']
  if unknown:
    raise ValueError(f'--variants: {variant!r} has unknown options {unknown}; known: xla')
  return {'dtype': parts[0], 'xla': 'xla' in parts[1:]}


def build_params(experiment: str, config_files: Sequence[str], params_override: str,
                 variant: str, data: str = 'dummy'):
  """The experiment config of one variant (dtype and XLA set in `runtime`); with `data='config'`
  the fields the records' metadata knows are taken from it (`known_fields`), as training does."""
  params = exp_factory.get_exp_config(experiment)
  for path in config_files:
    params.override(hyperparams.read_yaml(path))
  if params_override:
    hyperparams.override_params_dict(params, params_override, is_strict=True)
  spec = parse_variant(variant)
  params.override({'runtime': {
      'mixed_precision_dtype': None if spec['dtype'] == 'float32' else spec['dtype'],
      'enable_xla': spec['xla'], 'xla_on_cpu': spec['xla']}})
  if data == 'dummy':
    params.override({'task': {'train_data': {'input_path': 'dummy'}}})
  else:  # the records' sequence length, predictions, packing and vocabulary, as training takes
    for line in known_fields.fill(params, params_override):
      logging.info('%s', line)
  params.validate()
  return params


def _strategy(params) -> tf.distribute.Strategy:
  return distribute_utils.strategy_from_runtime(params.runtime)


# ---- one variant ---------------------------------------------------------------------------------
class VariantRunner:
  """Builds one variant like a real run (`trainer.Trainer`) and times its train loop.

  Args:
    name: the variant, e.g. 'bfloat16+xla'.
    params: its experiment config.
    model_dir: an empty directory for the trainer (nothing is saved during timing).
  """

  def __init__(self, name: str, params, model_dir: str):
    self.name, self.params = name, params
    self._set_policy = lambda: performance.set_mixed_precision_policy(
        params.runtime.mixed_precision_dtype)
    self._set_policy()
    # Reset the peak first, then read the resident size: the peak since the reset is at least
    # this reading (read before, memory the kernel reclaims in between made the difference < 0).
    reset_peak_host_memory()
    self.rss_before_mb = (_proc_status_kb('VmRSS') or 0) / 1024.0
    reset_device_memory()
    start = time.perf_counter()
    self.strategy = _strategy(params)
    with self.strategy.scope():
      self.task = task_factory.get_task(params.task, logging_dir=model_dir)
    self.trainer = trainer_lib.Trainer(self.strategy, self.task, params, model_dir)
    self.build_seconds = time.perf_counter() - start
    self.loop = self.trainer.train_loop_fn()
    self.rates: List[float] = []
    # Process CPU seconds per step: less sensitive than wall time to other jobs on a shared machine.
    self.cpu_per_step: List[float] = []
    self.last_cpu_seconds = 0.0
    start = time.perf_counter()
    self.run(1)
    self.first_step_seconds = time.perf_counter() - start
    self.first_loss = self.loss()
    self.peak_host_mb = peak_host_memory_mb()

  def run(self, num_steps: int) -> float:
    """Runs `num_steps` train steps; returns the elapsed seconds (synchronized)."""
    self._set_policy()
    start, cpu_start = time.perf_counter(), time.process_time()
    self.loop(self.trainer.train_iterator, tf.constant(num_steps, tf.int32))
    self.trainer.global_step.numpy()  # waits for the loop (a read of its last update)
    self.last_cpu_seconds = time.process_time() - cpu_start
    return time.perf_counter() - start

  def time_window(self, num_steps: int) -> float:
    """Runs a timed window; records steps/s and the process CPU seconds per step."""
    rate = num_steps / self.run(num_steps)
    self.rates.append(rate)
    self.cpu_per_step.append(self.last_cpu_seconds / num_steps)
    return rate

  def loss(self) -> float:
    value = float(self.trainer.loop_loss.result())
    self.trainer.loop_loss.reset_states()
    return value

  def tracing_count(self) -> Optional[int]:
    get = getattr(self.loop, 'experimental_get_tracing_count', None)
    return get() if get else None


def check_args(args: argparse.Namespace) -> List[str]:
  """Checks what would otherwise fail only after the timing: the variants, the config, the count.

  Args:
    args: `parse_args`' result.

  Returns:
    The variants, in order.

  Raises:
    ValueError: a bad or repeated variant, a config that does not load, or an encoder type
      without a FLOP count (naming `task.model.encoder.type` and the counted types).

  Example:
    >>> check_args(parse_args(['--variants=float32,bfloat16']))
    ['float32', 'bfloat16']
  """
  variants = [v.strip() for v in args.variants.split(',') if v.strip()]
  for variant in variants:
    parse_variant(variant)
  if len(set(variants)) != len(variants):
    raise ValueError(f'--variants: repeated variant in {variants}')
  model_flops_per_sequence(build_params(args.experiment, args.config_file, args.params_override,
                                        variants[0], args.data))
  return variants


def run_benchmark(args: argparse.Namespace) -> Dict[str, Any]:
  """Builds every variant, times them round-robin, and returns the report dict."""
  variants = check_args(args)
  dtypes = sorted({parse_variant(v)['dtype'] for v in variants})
  emulated = performance.emulated_bfloat16_warning('bfloat16') if 'bfloat16' in dtypes else None
  if emulated:
    logging.warning('mlm-benchmark: %s', emulated)
  device = gpu_name()
  cpu = cpu_info.read_cpu_info()
  runners: List[VariantRunner] = []
  with contextlib.ExitStack() as stack:
    for variant in variants:
      params = build_params(args.experiment, args.config_file, args.params_override, variant,
                            args.data)
      model_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix='mlm_benchmark_'))
      runner = VariantRunner(variant, params, model_dir)
      runner.run(args.warmup_steps)
      runners.append(runner)
      _log(f'{variant}: built in {runner.build_seconds:.1f}s, first step '
           f'{runner.first_step_seconds:.1f}s')
    peaks = {dtype: 0.0 for dtype in dtypes}
    for round_index in range(args.windows):
      for runner in runners:
        reset_peak_host_memory()
        rate = runner.time_window(args.steps_per_window)
        runner.peak_host_mb = max(runner.peak_host_mb or 0.0, peak_host_memory_mb())
        _log(f'round {round_index + 1}/{args.windows} {runner.name}: {rate:.3f} steps/s')
      if args.peak_seconds > 0:
        for dtype in dtypes:
          peaks[dtype] = max(peaks[dtype], measure_matmul_peak(dtype, args.peak_size,
                                                               args.peak_seconds))
    results = [_result(runner, runners[0], peaks, device, cpu) for runner in runners]
    if args.profile_steps:
      for runner, result in zip(runners, results):
        _log(f'{runner.name}: profiling {args.profile_steps} steps')
        logdir = os.path.join(args.profile_dir, runner.name) if args.profile_dir else None
        result['profile'] = step_profile.profile_steps(runner.run, args.profile_steps, logdir)
  return {'config': {'experiment': args.experiment, 'config_file': list(args.config_file),
                     'params_override': args.params_override, 'data': args.data,
                     'encoder_type': runners[0].params.task.model.encoder.type,
                     'steps_per_window': args.steps_per_window, 'windows': args.windows},
          'machine': _machine(device, peaks, cpu),
          'flops_per_sequence': model_flops_per_sequence(runners[0].params),
          'executed_flops_per_sequence': model_flops.executed_flops_per_sequence(
              runners[0].params),
          'peak_host_memory_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
          'results': results}


def _result(runner: VariantRunner, base: VariantRunner, peaks: Dict[str, float],
            device: Optional[str], cpu: cpu_info.CpuInfo) -> Dict[str, Any]:
  params = runner.params
  data = params.task.train_data
  dtype = parse_variant(runner.name)['dtype']
  steps = statistics.median(runner.rates)
  ratios = [r / b for r, b in zip(runner.rates, base.rates)]
  flops = model_flops_per_sequence(params)['train'] * data.global_batch_size * steps
  executed = (model_flops.executed_flops_per_sequence(params)['train'] * data.global_batch_size
              * steps)
  result = {
      'variant': runner.name, 'dtype': dtype, 'xla': params.runtime.enable_xla,
      'steps_per_second': steps,
      'steps_per_second_windows': runner.rates,
      'ratio_to_first': statistics.median(ratios),
      'cpu_seconds_per_step': statistics.median(runner.cpu_per_step),
      'sequences_per_second': steps * data.global_batch_size,
      'tokens_per_second': steps * data.global_batch_size * data.seq_length,
      'model_tflops': flops / 1e12,
      'matmul_peak_tflops': peaks.get(dtype, 0.0) / 1e12 or None,
      'fraction_of_matmul_peak': flops / peaks[dtype] if peaks.get(dtype) else None,
      # What the step computes (`model_flops.executed_flops_per_sequence`: the last layer at the
      # masked positions only), against the same roofline.
      'executed_tflops': executed / 1e12,
      'fraction_of_matmul_peak_executed': executed / peaks[dtype] if peaks.get(dtype) else None,
      'build_seconds': runner.build_seconds,
      'time_to_first_step_s': runner.first_step_seconds,
      'first_loss': runner.first_loss,
      'final_loss': runner.loss(),
      # The process' peak while this variant was built and timed (earlier variants stay resident)
      # and the part of it this variant added.
      'peak_host_memory_mb': runner.peak_host_mb,
      'variant_host_memory_mb': max(0.0, runner.peak_host_mb - runner.rss_before_mb),
      'peak_device_memory_mb': peak_device_memory_mb(),
      'loop_tracing_count': runner.tracing_count(),
      'cpu_model': cpu.model, 'cpu_flags': cpu.flags,
  }
  sheet = datasheet_peak_tflops(device, dtype)
  if sheet:
    result['datasheet_peak_tflops'] = sheet
    result['mfu'] = flops / 1e12 / sheet
  return result


def _machine(device: Optional[str], peaks: Dict[str, float],
             cpu: cpu_info.CpuInfo) -> Dict[str, Any]:
  return {'device': device or 'CPU', 'cpu_count': os.cpu_count(),
          'cpu_model': cpu.model, 'cpu_flags': cpu.flags,
          'tensorflow': tf.__version__,
          'matmul_peak_tflops': {k: v / 1e12 for k, v in peaks.items()},
          'load_average': list(os.getloadavg()) if hasattr(os, 'getloadavg') else None}


# ---- input pipeline alone ------------------------------------------------------------------------
def run_pipeline_benchmark(args: argparse.Namespace) -> Dict[str, Any]:
  """Times the task's training input pipeline alone (no model): batches/s in windows."""
  params = build_params(args.experiment, args.config_file, args.params_override, 'float32',
                        args.data)
  task = task_factory.get_task(params.task)
  start = time.perf_counter()
  iterator = iter(task.build_inputs(params.task.train_data))
  next(iterator)
  first = time.perf_counter() - start
  for _ in range(args.warmup_steps):
    next(iterator)
  rates = []
  for _ in range(args.windows):
    t0 = time.perf_counter()
    for _ in range(args.steps_per_window):
      batch = next(iterator)
    tf.nest.map_structure(lambda t: t.numpy(), batch)
    rates.append(args.steps_per_window / (time.perf_counter() - t0))
  data = params.task.train_data
  batches = statistics.median(rates)
  return {'config': {'experiment': args.experiment, 'input_path': data.input_path,
                     'global_batch_size': data.global_batch_size},
          'pipeline': {'batches_per_second': batches, 'batches_per_second_windows': rates,
                       'sequences_per_second': batches * data.global_batch_size,
                       'time_to_first_batch_s': first}}


# ---- output --------------------------------------------------------------------------------------
def format_table(report: Dict[str, Any]) -> str:
  """The results as a text table, one line per variant."""
  if 'pipeline' in report:
    p = report['pipeline']
    return (f"input pipeline: {p['batches_per_second']:.1f} batches/s, "
            f"{p['sequences_per_second']:.0f} sequences/s, first batch "
            f"{p['time_to_first_batch_s']:.1f}s")
  header = ['variant', 'steps/s', 'vs first', 'seq/s', 'tokens/s', 'TFLOP/s', 'of roofline',
            'first step s', 'host MB (+variant)']
  rows = [header]
  for r in report['results']:
    frac = r['fraction_of_matmul_peak']
    share = '-' if frac is None else f"{100 * frac:.1f}% {r['dtype']}"
    executed = r.get('fraction_of_matmul_peak_executed')
    if frac is not None and executed is not None and executed < frac:
      share += f' ({100 * executed:.1f}% executed)'
    rows.append([r['variant'], f"{r['steps_per_second']:.3f}", f"{r['ratio_to_first']:.2f}x",
                 f"{r['sequences_per_second']:.1f}", f"{r['tokens_per_second']:.0f}",
                 f"{r['model_tflops']:.3f}", share,
                 f"{r['time_to_first_step_s']:.1f}",
                 f"{r['peak_host_memory_mb']:.0f} (+{r['variant_host_memory_mb']:.0f})"])
  widths = [max(len(row[c]) for row in rows) for c in range(len(header))]
  lines = [' | '.join(cell.ljust(w) for cell, w in zip(row, widths)) for row in rows]
  lines.insert(1, '-+-'.join('-' * w for w in widths))
  machine = report['machine']
  cpu = cpu_info.CpuInfo(machine['cpu_model'], machine['cpu_flags'])
  peaks = ', '.join(f'{k} {v:.3f}' for k, v in machine['matmul_peak_tflops'].items())
  lines.append(f"cpu {cpu.line()}, {machine['cpu_count']} cores; device {machine['device']}")
  executed = report.get('executed_flops_per_sequence', report['flops_per_sequence'])['train']
  lines.append(f"matmul roofline TFLOP/s (this run, per dtype): {peaks or '-'}; model GFLOP per "
               f"training sequence {report['flops_per_sequence']['train'] / 1e9:.2f} "
               f"({report['config']['encoder_type']}), executed {executed / 1e9:.2f} (the last "
               f"layer at the masked positions only)")
  for r in report['results']:
    if 'profile' in r:
      lines.append(step_profile.format_summary(r['profile'], f"profile of {r['variant']}"))
  if any('mfu' in r for r in report['results']):
    lines.append('MFU vs datasheet: ' + ', '.join(
        f"{r['variant']} {100 * r['mfu']:.1f}%" for r in report['results'] if 'mfu' in r))
  return '\n'.join(lines)


def _log(message: str) -> None:
  logging.info('%s', message)  # a status line: stderr, absl's format (see main)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
  parser.add_argument('--experiment', default='bert/pretraining')
  parser.add_argument('--config_file', action='append', default=[],
                      help=f'YAML config (repeatable); default {DEFAULT_CONFIG}')
  parser.add_argument('--params_override', default='',
                      help="e.g. 'task.train_data.global_batch_size=32'")
  parser.add_argument('--variants', default='float32,float32+xla,bfloat16,bfloat16+xla',
                      help='comma list of DTYPE[+xla], DTYPE one of ' + ', '.join(DTYPES))
  parser.add_argument('--data', default='dummy', choices=('dummy', 'config'),
                      help="'dummy': synthetic batches; 'config': the config's train_data records")
  parser.add_argument('--steps_per_window', type=int, default=10)
  parser.add_argument('--windows', type=int, default=5, help='timed rounds (medians reported)')
  parser.add_argument('--warmup_steps', type=int, default=2, help='untimed steps after the first')
  parser.add_argument('--peak_seconds', type=float, default=0.5,
                      help='matmul-peak measurement per dtype per round (0: skip)')
  parser.add_argument('--peak_size', type=int, default=None,
                      help='matmul size of the peak measurement (default 1024 CPU, 4096 GPU)')
  parser.add_argument('--pipeline_only', action='store_true',
                      help='time the training input pipeline alone (no model)')
  parser.add_argument('--inter_op_threads', type=int, default=0, help='0: TensorFlow default')
  parser.add_argument('--intra_op_threads', type=int, default=0, help='0: TensorFlow default')
  parser.add_argument('--profile_steps', type=int, default=0,
                      help='after the timing, trace this many steps of each variant and report '
                           'where the time goes (op time by part of the model; 0: no profile)')
  parser.add_argument('--profile_dir', default='',
                      help='keep the traces here (one folder a variant, for TensorBoard)')
  parser.add_argument('--json', default='', help="write the report to this file ('-': stdout)")
  args = parser.parse_args(argv)
  if not args.config_file:
    args.config_file = [DEFAULT_CONFIG]
  if args.profile_steps < 0:
    parser.error(f'--profile_steps must be >= 0, found {args.profile_steps}')
  for name in ('steps_per_window', 'windows'):
    if getattr(args, name) < 1:
      parser.error(f'--{name} must be >= 1, found {getattr(args, name)}')
  return args


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Runs the benchmark; prints the table (and the JSON with --json=-)."""
  args = parse_args(argv)
  quiet.use_absl_logging()  # the status lines in the tools' format; the report goes to stdout
  if args.inter_op_threads:
    tf.config.threading.set_inter_op_parallelism_threads(args.inter_op_threads)
  if args.intra_op_threads:
    tf.config.threading.set_intra_op_parallelism_threads(args.intra_op_threads)
  if not args.pipeline_only:
    try:
      check_args(args)
    except (ValueError, FileNotFoundError) as e:  # before anything is built or timed: one line
      return cli_utils.error('mlm-benchmark', str(e), status=2)
  report = run_pipeline_benchmark(args) if args.pipeline_only else run_benchmark(args)
  if args.json == '-':
    print(json.dumps(report, indent=2))
  else:
    print(format_table(report))
    if args.json:
      with open(args.json, 'w', encoding='utf-8') as f:
        json.dump(report, f, indent=2)
  return 0


if __name__ == '__main__':
  sys.exit(main())
