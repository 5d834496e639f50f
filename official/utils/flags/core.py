"""Model Garden's reusable absl flags for training scripts (`official.utils.flags.core`).

Each `define_*` function defines one group of flags (its keyword arguments switch single flags on
or off) and declares the main ones key flags of this module, so a script's `--helpshort` lists
them after `flags.adopt_module_key_flags(flags_core)`. Helpers read them back
(`get_tf_dtype`, `get_loss_scale`, `get_num_gpus`) and print the non-default ones
(`get_nondefault_flags_as_str`). Our own `mlm-train` CLI uses `official.common.flags` instead.

Groups and their flags (defaults in brackets):
- `define_base`: data_dir [/tmp], model_dir [/tmp], clean, train_epochs [1],
  epochs_between_evals [1], stop_threshold, batch_size [32], num_gpus [1], hooks
  [LoggingTensorHook], export_dir, distribution_strategy [mirrored], run_eagerly.
- `define_performance`: num_parallel_calls [CPU count], inter_op_parallelism_threads [0],
  intra_op_parallelism_threads [0], use_synthetic_data, max_train_steps, dtype [fp32] (fp16,
  bf16, fp32), loss_scale ('dynamic' or a positive number), fp16_implementation [keras],
  all_reduce_alg, num_packs [1], tf_gpu_thread_mode, per_gpu_thread_count [0],
  datasets_num_private_threads, datasets_num_parallel_batches, training_dataset_cache,
  tf_data_experimental_slack, enable_xla.
- `define_benchmark`: benchmark_logger_type, benchmark_test_id, log_steps [100],
  benchmark_log_dir, gcp_project, bigquery_* table names.
- `define_device`: tpu, tpu_zone, tpu_gcp_project, num_tpu_shards [8].
- `define_distribution`: worker_hosts, task_index [-1].
- `define_image`: data_format (channels_first, channels_last).

Example:
  >>> from absl import app, flags
  >>> from official.utils.flags import core as flags_core
  >>> flags_core.define_base(train_epochs=True)
  >>> flags_core.define_performance(dtype=True, loss_scale=True)
  >>> flags_core.set_defaults(batch_size=64)
  >>> def main(_):
  ...   dtype = flags_core.get_tf_dtype(flags.FLAGS)          # tf.float32
  ...   print(flags_core.get_nondefault_flags_as_str())       # '--dtype=fp16 --train_epochs=3'
  >>> app.run(main)
"""

import functools
import multiprocessing
import shlex
import sys
from typing import Any, Callable, Dict, Iterable, List, Optional

from absl import app as absl_app
from absl import flags
from absl import logging
import tensorflow as tf

# --dtype value -> TensorFlow dtype
DTYPE_MAP = {
    'fp16': tf.float16,
    'bf16': tf.bfloat16,
    'fp32': tf.float32,
}

help_wrap = functools.partial(flags.text_wrap, length=80, indent='', firstline_indent='\n')
help_wrap.__doc__ = 'Wraps a flag help text at 80 columns, starting on the line after the flag.'


def _define(kind: str, name: str, default: Any, help_text: str, **kwargs: Any) -> str:
  """Defines flag `name` with `flags.DEFINE_<kind>`; returns its name."""
  getattr(flags, f'DEFINE_{kind}')(name=name, default=default, help=help_wrap(help_text), **kwargs)
  return name


# ---- the groups ---------------------------------------------------------------------------------
def _base_flags(data_dir: bool = True, model_dir: bool = True, clean: bool = False,
                train_epochs: bool = False, epochs_between_evals: bool = False,
                stop_threshold: bool = False, batch_size: bool = True, num_gpu: bool = False,
                hooks: bool = False, export_dir: bool = False,
                distribution_strategy: bool = False, run_eagerly: bool = False) -> List[str]:
  key_flags = []
  if data_dir:
    key_flags.append(_define('string', 'data_dir', '/tmp', 'Where the input data is.',
                             short_name='dd'))
  if model_dir:
    key_flags.append(_define('string', 'model_dir', '/tmp',
                             'Where the model checkpoints go.', short_name='md'))
  if clean:
    key_flags.append(_define('boolean', 'clean', False, 'Delete model_dir first if it exists.'))
  if train_epochs:
    key_flags.append(_define('integer', 'train_epochs', 1, 'Training epochs.', short_name='te'))
  if epochs_between_evals:
    key_flags.append(_define('integer', 'epochs_between_evals', 1,
                             'Training epochs between two evaluations.', short_name='ebe'))
  if stop_threshold:
    _define('float', 'stop_threshold', None,
            'Stop training once the evaluation metric reaches this value (or after '
            'train_epochs, whichever comes first).', short_name='st')
  if batch_size:
    key_flags.append(_define('integer', 'batch_size', 32,
                             'Global batch size of training and evaluation (split across the '
                             'GPUs).', short_name='bs'))
  if num_gpu:
    _define('integer', 'num_gpus', 1, 'GPUs per worker (-1: all of them).', short_name='ng')
  if run_eagerly:
    _define('boolean', 'run_eagerly', False, 'Run the model op by op (no tf.function).')
  if hooks:
    key_flags.append(_define('list', 'hooks', 'LoggingTensorHook',
                             'Names of training hooks (case insensitive), comma separated.',
                             short_name='hk'))
  if export_dir:
    key_flags.append(_define('string', 'export_dir', None,
                             'Export a SavedModel here at the end of training.',
                             short_name='ed'))
  if distribution_strategy:
    _define('string', 'distribution_strategy', 'mirrored',
            "The tf.distribute strategy: 'off', 'one_device', 'mirrored', 'parameter_server', "
            "'collective' (case insensitive).", short_name='ds')
  return key_flags


def _performance_flags(num_parallel_calls: bool = False, inter_op: bool = False,
                       intra_op: bool = False, synthetic_data: bool = False,
                       max_train_steps: bool = False, dtype: bool = False,
                       all_reduce_alg: bool = False, num_packs: bool = False,
                       tf_gpu_thread_mode: bool = False,
                       datasets_num_private_threads: bool = False,
                       datasets_num_parallel_batches: bool = False,
                       fp16_implementation: bool = False, loss_scale: bool = False,
                       tf_data_experimental_slack: bool = False, enable_xla: bool = False,
                       training_dataset_cache: bool = False) -> List[str]:
  if num_parallel_calls:
    _define('integer', 'num_parallel_calls', multiprocessing.cpu_count(),
            'Records processed in parallel by the input pipeline.', short_name='npc')
  if inter_op:
    _define('integer', 'inter_op_parallelism_threads', 0,
            'Inter-op threads on CPU (0: TensorFlow picks).', short_name='inter')
  if intra_op:
    _define('integer', 'intra_op_parallelism_threads', 0,
            'Intra-op threads on CPU (0: TensorFlow picks).', short_name='intra')
  if synthetic_data:
    _define('bool', 'use_synthetic_data', False,
            'Feed constant fake data instead of the dataset (to time the model alone).',
            short_name='synth')
  if max_train_steps:
    _define('integer', 'max_train_steps', None, 'Stop training at this global step.',
            short_name='mts')
  if dtype:
    _define('enum', 'dtype', 'fp32', 'The compute dtype (variables stay float32).',
            short_name='dt', enum_values=list(DTYPE_MAP))
    if loss_scale:
      _define('string', 'loss_scale', None,
              "Loss scale of --dtype=fp16: a positive number or 'dynamic' (the default).",
              short_name='ls')
      flags.register_validator(
          'loss_scale', _valid_loss_scale,
          message="loss_scale: expected a positive number or 'dynamic'")
    if fp16_implementation:
      _define('enum', 'fp16_implementation', 'keras',
              "How --dtype=fp16 is implemented: 'keras' (mixed precision policy) or "
              "'graph_rewrite'.", enum_values=['keras', 'graph_rewrite'])
      flags.register_multi_flags_validator(
          ['fp16_implementation', 'dtype', 'loss_scale'], _valid_fp16_implementation)
  if all_reduce_alg:
    _define('string', 'all_reduce_alg', None,
            "The all-reduce algorithm ('nccl', 'hierarchical_copy', 'ring').", short_name='ara')
  if num_packs:
    _define('integer', 'num_packs', 1, 'num_packs of the mirrored strategy\'s all-reduce.')
  if tf_gpu_thread_mode:
    _define('string', 'tf_gpu_thread_mode', None, 'The GPU thread mode (e.g. gpu_private).',
            short_name='gt_mode')
    _define('integer', 'per_gpu_thread_count', 0,
            'Threads per GPU when tf_gpu_thread_mode is not global.', short_name='pgtc')
  if datasets_num_private_threads:
    _define('integer', 'datasets_num_private_threads', None,
            'Threads of a private thread pool for the input pipelines.')
  if datasets_num_parallel_batches:
    _define('integer', 'datasets_num_parallel_batches', None,
            'Batches the input pipeline builds in parallel.')
  if training_dataset_cache:
    _define('boolean', 'training_dataset_cache', False,
            'Cache the training dataset in the workers\' memory.')
  if tf_data_experimental_slack:
    _define('boolean', 'tf_data_experimental_slack', False,
            'Turn on tf.data\'s experimental_slack option.')
  if enable_xla:
    _define('boolean', 'enable_xla', False, 'Turn on XLA auto-clustering.')
  return []


def _valid_loss_scale(value: Optional[str]) -> bool:
  if value is None or value == 'dynamic':
    return True
  try:
    return float(value) > 0
  except ValueError:
    return False


def _valid_fp16_implementation(values: Dict[str, Any]) -> bool:
  if values['fp16_implementation'] == 'graph_rewrite' and values['dtype'] != 'fp16':
    raise flags.ValidationError('--fp16_implementation=graph_rewrite needs --dtype=fp16')
  return True


def _log_steps_flags() -> List[str]:
  _define('integer', 'log_steps', 100, 'Log timing information every this many steps.')
  return []


def _benchmark_flags(benchmark_log_dir: bool = True, bigquery_uploader: bool = True) -> List[str]:
  _define('enum', 'benchmark_logger_type', 'BaseBenchmarkLogger',
          'Where benchmark results go: BaseBenchmarkLogger (stdout) or BenchmarkFileLogger '
          '(needs --benchmark_log_dir).',
          enum_values=['BaseBenchmarkLogger', 'BenchmarkFileLogger'])
  _define('string', 'benchmark_test_id', None,
          'An id of the benchmark run, for people comparing runs.', short_name='bti')
  _log_steps_flags()
  if benchmark_log_dir:
    _define('string', 'benchmark_log_dir', None, 'Where benchmark logs go.', short_name='bld')
  if bigquery_uploader:
    _define('string', 'gcp_project', None, 'The GCP project of the BigQuery upload.',
            short_name='gp')
    for name, short_name, default in (
        ('bigquery_data_set', 'bds', 'test_benchmark'),
        ('bigquery_run_table', 'brt', 'benchmark_run'),
        ('bigquery_run_status_table', 'brst', 'benchmark_run_status'),
        ('bigquery_metric_table', 'bmt', 'benchmark_metric')):
      _define('string', name, default, f'The BigQuery {name[len("bigquery_"):]}.',
              short_name=short_name)
  flags.register_multi_flags_validator(
      ['benchmark_logger_type', 'benchmark_log_dir'],
      lambda values: (values['benchmark_logger_type'] != 'BenchmarkFileLogger'
                      or bool(values['benchmark_log_dir'])),
      message='--benchmark_logger_type=BenchmarkFileLogger needs --benchmark_log_dir')
  return []


def _device_flags(tpu: bool = True) -> List[str]:
  if not tpu:
    return []
  key_flags = [_define('string', 'tpu', None,
                       "The Cloud TPU: its name, a grpc://host:8470 address, or 'local'.")]
  _define('string', 'tpu_zone', None, 'The GCE zone of the TPU (default: detected).')
  _define('string', 'tpu_gcp_project', None, 'The GCP project of the TPU (default: detected).')
  _define('integer', 'num_tpu_shards', 8, 'TPU chips.')
  return key_flags


def _distribution_flags(worker_hosts: bool = True, task_index: bool = True) -> List[str]:
  if worker_hosts:
    _define('string', 'worker_hosts', None,
            'Comma-separated host:port of every worker of a multi-worker run.')
  if task_index:
    _define('integer', 'task_index', -1, 'This worker\'s index in a multi-worker run.')
  return []


def _image_flags(data_format: bool = True) -> List[str]:
  if not data_format:
    return []
  return [_define('enum', 'data_format', None,
                  'Image axis order (default: channels_first on GPU, else channels_last).',
                  short_name='df', enum_values=['channels_first', 'channels_last'])]


def register_key_flags_in_core(define_fn: Callable[..., Iterable[str]]) -> Callable[..., None]:
  """Wraps a function that defines flags and returns the key ones, so that the flags are
  declared key flags of this module (`flags.adopt_module_key_flags(core)` picks them up)."""

  @functools.wraps(define_fn)
  def define(*args: Any, **kwargs: Any) -> None:
    for name in define_fn(*args, **kwargs):
      flags.declare_key_flag(name)

  return define


define_base = register_key_flags_in_core(_base_flags)
define_base_eager = define_base  # the older name
define_log_steps = register_key_flags_in_core(_log_steps_flags)
define_benchmark = register_key_flags_in_core(_benchmark_flags)
define_device = register_key_flags_in_core(_device_flags)
define_image = register_key_flags_in_core(_image_flags)
define_performance = register_key_flags_in_core(_performance_flags)
define_distribution = register_key_flags_in_core(_distribution_flags)


# ---- reading and parsing ------------------------------------------------------------------------
def set_defaults(**kwargs: Any) -> None:
  """Changes the default of each named flag (e.g. `set_defaults(batch_size=64)`)."""
  for name, value in kwargs.items():
    flags.FLAGS.set_default(name=name, value=value)


def parse_flags(argv: Optional[List[str]] = None) -> None:
  """Resets every flag and parses `argv` (default: `sys.argv`); bad values exit with usage.

  Example:
    >>> parse_flags([__file__, '--dtype', 'fp16'])
  """
  flags.FLAGS.unparse_flags()
  absl_app.parse_flags_with_usage(argv or sys.argv)


def get_num_gpus(flags_obj: Any) -> int:
  """`flags_obj.num_gpus`, with -1 meaning every GPU TensorFlow sees."""
  if flags_obj.num_gpus != -1:
    return flags_obj.num_gpus
  return len(tf.config.list_physical_devices('GPU'))


def get_tf_dtype(flags_obj: Any) -> tf.DType:
  """The TensorFlow dtype of `--dtype` (float32 with `--fp16_implementation=graph_rewrite`,
  where the rewrite makes float16 ops of a float32 graph)."""
  if getattr(flags_obj, 'fp16_implementation', None) == 'graph_rewrite':
    return tf.float32
  return DTYPE_MAP[flags_obj.dtype]


def get_loss_scale(flags_obj: Any, default_for_fp16: Any) -> Any:
  """The loss scale: 'dynamic', `--loss_scale` as a float, 1 for fp32/bf16, else
  `default_for_fp16`.

  Example:
    >>> parse_flags([__file__, '--dtype=fp16'])
    >>> get_loss_scale(flags.FLAGS, default_for_fp16='dynamic')   # 'dynamic'
  """
  if flags_obj.loss_scale == 'dynamic':
    return 'dynamic'
  if flags_obj.loss_scale is not None:
    return float(flags_obj.loss_scale)
  if get_tf_dtype(flags_obj) in (tf.float32, tf.bfloat16):
    return 1
  return default_for_fp16


def require_cloud_storage(flag_names: List[str]) -> None:
  """Requires gs:// paths in the flags `flag_names` whenever `--tpu` is set (a validator)."""

  def check(values: Dict[str, Any]) -> bool:
    if values['tpu'] is None:
      return True
    bad = [name for name in flag_names if not str(values[name]).startswith('gs://')]
    for name in bad:
      logging.error('--%s must be a GCS path (gs://...) with --tpu', name)
    return not bad

  flags.register_multi_flags_validator(
      ['tpu'] + list(flag_names), check,
      message=f'TPU requires GCS path for {", ".join(flag_names)}')


def _nondefault_flags() -> Dict[str, Any]:
  """{flag name: value} of the flags whose value differs from their default."""
  values = {}
  for name in flags.FLAGS:
    flag = flags.FLAGS[name]
    if name == flag.name and flag.value != flag.default:  # (skips the short names)
      values[name] = flag.value
  return values


def get_nondefault_flags_as_str() -> str:
  """The flags that differ from their defaults, as command-line arguments, sorted by name.

  Example:
    >>> flags.FLAGS.batch_size = 256
    >>> flags.FLAGS.use_synthetic_data = True
    >>> get_nondefault_flags_as_str()   # '--batch_size=256 --use_synthetic_data'
  """
  arguments = []
  for name, value in sorted(_nondefault_flags().items()):
    if isinstance(value, bool):
      arguments.append(f'--{name}' if value else f'--no{name}')
    elif isinstance(value, list):
      arguments.append(f'--{name}={",".join(str(v) for v in value)}')
    else:
      arguments.append(f'--{name}={value}')
  return ' '.join(shlex.quote(argument) for argument in arguments)
