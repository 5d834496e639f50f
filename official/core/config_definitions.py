"""The experiment config schema: data, runtime, trainer and task configs (Model Garden field names).

Every Model Garden field is present so its `params.yaml` files load unchanged. Fields we do not
implement are declared with `hyperparams.unsupported`: they parse, but a non-default value fails
`validate()` with the reason, so nothing is silently ignored.

Example:
  >>> params = ExperimentConfig.from_yaml('configs/pretraining/bert_tiny.yaml')
  >>> params.trainer.train_steps
"""

import dataclasses
from typing import Any, Dict, List, Optional, Union

from official.modeling import hyperparams
from official.modeling.optimization.configs.optimization_config import OptimizationConfig

_NO_TFDS = 'TFDS input is not supported by mlm-garden (use TFRecord files)'
_NO_DATA_SERVICE = 'tf.data service is not supported by mlm-garden'
_NO_TPU_MP = 'TPU model parallelism is not supported by mlm-garden'
_GPU_TUNING = 'GPU thread tuning is not implemented by mlm-garden (TensorFlow defaults apply)'

DISTRIBUTION_STRATEGIES = ('off', 'one_device', 'mirrored', 'multi_worker_mirrored', 'tpu')
MIXED_PRECISION_DTYPES = ('float32', 'bfloat16', 'float16', 'auto')


@dataclasses.dataclass
class DataConfig(hyperparams.Config):
  """The input pipeline of one split.

  Attributes:
    input_path: file pattern(s): a string (globs and comma lists allowed) or a list of strings.
    global_batch_size: batch size summed over all replicas.
    is_training: whether the data is for training (shuffle, repeat).
    drop_remainder: drop the last partial batch.
    shuffle_buffer_size: examples in the shuffle buffer.
    cache: cache the decoded dataset in memory.
    cycle_length: files read in parallel by interleave (None: autotune).
    block_length: consecutive records taken from each file.
    deterministic: tf.data determinism (None: TensorFlow default).
    sharding: shard files across input pipelines (workers).
    seed: the shuffle seed.
    prefetch_buffer_size: batches prefetched (None: autotune).
  """
  input_path: Union[str, List[str]] = ''
  tfds_name: str = hyperparams.unsupported('', _NO_TFDS)
  tfds_split: str = hyperparams.unsupported('', _NO_TFDS)
  global_batch_size: int = hyperparams.field(0, ge=0)
  is_training: Optional[bool] = None
  drop_remainder: bool = True
  shuffle_buffer_size: int = hyperparams.field(100, ge=0)
  cache: bool = False
  cycle_length: Optional[int] = hyperparams.field(None, ge=1)
  block_length: int = hyperparams.field(1, ge=1)
  deterministic: Optional[bool] = None
  sharding: bool = True
  enable_tf_data_service: bool = hyperparams.unsupported(False, _NO_DATA_SERVICE)
  tf_data_service_address: Optional[str] = hyperparams.unsupported(None, _NO_DATA_SERVICE)
  tf_data_service_job_name: Optional[str] = hyperparams.unsupported(None, _NO_DATA_SERVICE)
  tfds_data_dir: str = hyperparams.unsupported('', _NO_TFDS)
  tfds_as_supervised: bool = hyperparams.unsupported(False, _NO_TFDS)
  tfds_skip_decoding_feature: str = hyperparams.unsupported('', _NO_TFDS)
  enable_shared_tf_data_service_between_parallel_trainers: bool = hyperparams.unsupported(
      False, _NO_DATA_SERVICE)
  apply_tf_data_service_before_batching: bool = hyperparams.unsupported(False, _NO_DATA_SERVICE)
  trainer_id: Optional[str] = hyperparams.unsupported(None, _NO_DATA_SERVICE)
  seed: Optional[int] = None
  prefetch_buffer_size: Optional[int] = hyperparams.field(None, ge=1)
  autotune_algorithm: Optional[str] = hyperparams.unsupported(
      None, 'choosing the tf.data autotune algorithm is not supported by mlm-garden')
  weights: Optional[float] = hyperparams.unsupported(
      None, 'dataset mixtures are not supported by mlm-garden')


@dataclasses.dataclass
class RuntimeConfig(hyperparams.Config):
  """Devices, distribution and numerics.

  Attributes:
    distribution_strategy: one of 'off', 'one_device', 'mirrored', 'multi_worker_mirrored', 'tpu'.
    enable_xla: compile the train and eval steps with XLA (`jit_compile`) on GPU and TPU. On CPU
      it is ignored (as in Model Garden): compiling the whole step with XLA's CPU backend gains
      nothing over the fused element-wise kernels and loses in bfloat16 (bert_mini: float32
      1.02x, bfloat16 0.72x); see `xla_on_cpu`.
    xla_on_cpu: apply `enable_xla` on CPU-only runs too (mlm-garden addition).
    tpu: the TPU address (or name) for the 'tpu' strategy.
    num_gpus: GPUs to use (0: all visible, CPU when none).
    worker_hosts: comma list of `host:port` of every worker (multi-worker without TF_CONFIG).
    task_index: this worker's index in `worker_hosts`.
    all_reduce_alg: 'nccl', 'hierarchical_copy' or 'ring' (None: TensorFlow's choice).
    num_packs: gradient packs for mirrored all-reduce.
    mixed_precision_dtype: None/'float32', 'bfloat16', 'float16' (float16 adds loss scaling) or
      'auto': bfloat16 where the CPU or GPU computes it natively, else float32
      (`performance.resolve_mixed_precision_dtype`; mlm-garden addition).
    loss_scale: 'dynamic' or a fixed float for float16.
    run_eagerly: run steps eagerly (debugging).
    deterministic: seed everything and enable TensorFlow op determinism (mlm-garden addition).
    seed: the global random seed (mlm-garden addition; None: unseeded unless deterministic).
  """
  distribution_strategy: str = hyperparams.field('mirrored', choices=DISTRIBUTION_STRATEGIES)
  enable_xla: bool = False
  xla_on_cpu: bool = False
  gpu_thread_mode: Optional[str] = hyperparams.unsupported(None, _GPU_TUNING)
  dataset_num_private_threads: Optional[int] = hyperparams.unsupported(None, _GPU_TUNING)
  per_gpu_thread_count: int = hyperparams.unsupported(0, _GPU_TUNING)
  tpu: Optional[str] = None
  num_gpus: int = hyperparams.field(0, ge=0)
  worker_hosts: Optional[str] = None
  task_index: int = -1
  all_reduce_alg: Optional[str] = hyperparams.field(
      None, choices=('nccl', 'hierarchical_copy', 'ring'))
  num_packs: int = hyperparams.field(1, ge=1)
  mixed_precision_dtype: Optional[str] = hyperparams.field(None, choices=MIXED_PRECISION_DTYPES)
  loss_scale: Optional[Union[str, float]] = None
  run_eagerly: bool = False
  batchnorm_spatial_persistent: bool = hyperparams.unsupported(
      False, 'batch norm tuning does not apply to BERT models')
  tpu_enable_xla_dynamic_padder: Optional[bool] = hyperparams.unsupported(
      None, 'TPU dynamic padder settings are not supported by mlm-garden')
  num_cores_per_replica: int = hyperparams.unsupported(1, _NO_TPU_MP)
  default_shard_dim: int = hyperparams.unsupported(-1, _NO_TPU_MP)
  use_tpu_mp_strategy: bool = hyperparams.unsupported(False, _NO_TPU_MP)
  deterministic: bool = False
  seed: Optional[int] = None

  def validate(self) -> None:
    super().validate()
    if isinstance(self.loss_scale, str) and self.loss_scale != 'dynamic':
      raise hyperparams.ConfigError(
          'loss_scale', f"expected 'dynamic' or a number, found {self.loss_scale!r}")


@dataclasses.dataclass
class TrainerConfig(hyperparams.Config):
  """The training loop: steps, intervals, checkpoints and the optimizer.

  Attributes:
    optimizer_config: optimizer, learning rate and warmup.
    train_tf_function: wrap the train loop in `tf.function` (its `steps_per_loop` steps run in one
      `tf.while_loop`).
    eval_tf_function: wrap the eval step in `tf.function`.
    steps_per_loop: train steps per host loop (one log line per loop).
    summary_interval: steps between TensorBoard summaries.
    checkpoint_interval: steps between checkpoints.
    max_to_keep: checkpoints kept.
    continuous_eval_timeout: seconds `continuous_eval` waits for a new checkpoint.
    train_steps: total train steps.
    validation_steps: eval steps per evaluation (-1: the whole eval dataset).
    validation_interval: steps between evaluations in `train_and_eval`.
    loss_upper_bound: a training loss above this (or non-finite) stops training (naming the
      newest finite checkpoint), or, with `recovery_max_trials`, restores the latest checkpoint.
      Independently, a checkpoint is only written when every weight and optimizer variable is
      finite; otherwise training stops.
    recovery_begin_steps: before this step a finite loss above `loss_upper_bound` is accepted.
    recovery_max_trials: bad loop losses answered by restoring the latest checkpoint (and
      training on) before one stops training (0: the first stops it).
    best_checkpoint_export_subdir: with `best_checkpoint_eval_metric`, every evaluation that
      improves the metric saves the checkpoint as `model_dir/<subdir>/best_ckpt-N` and its eval
      logs as `model_dir/<subdir>/info.json` (modes that evaluate).
    best_checkpoint_eval_metric: the eval log compared ('|' separates nested keys).
    best_checkpoint_metric_comp: 'higher' or 'lower' is better.
    skip_nonfinite_steps: skip the update of a step with non-finite loss instead of stopping
      (mlm-garden addition). Skipped steps are counted (the progress line of the loop, the
      `skipped_steps` summary); a loop whose steps were all skipped stops training.
    gradient_accumulation_steps: micro-batches (of `train_data.global_batch_size` each) whose
      mean gradient makes one optimizer update (mlm-garden addition; 1: no accumulation). Steps
      count updates: `train_steps`, `steps_per_loop`, the intervals, checkpoints and the
      learning-rate schedule advance once per N micro-batches, so one step reads N batches.
      Not with float16 loss scaling.
    time_budget_minutes: train for this wall-clock time (mlm-garden addition; 0: no budget).
      Training ends when the budget is spent, its learning-rate schedule with it:
      `train_steps` is then the length the schedule (warmup and decay steps) and the step
      intervals are written for, mapped onto the steps the budget buys, planned from the
      measured speed and corrected every loop. Evaluations and checkpoints count in the
      budget; the time spent is kept in the checkpoints, so a resumed run ends at the same
      total. See `official.core.time_budget`.
  """
  optimizer_config: OptimizationConfig = dataclasses.field(default_factory=OptimizationConfig)
  train_tf_while_loop: bool = hyperparams.unsupported(
      True, 'mlm-garden always runs the steps of a loop inside one tf.while_loop')
  train_tf_function: bool = True
  eval_tf_function: bool = True
  eval_tf_while_loop: bool = hyperparams.unsupported(
      False, 'eval steps run one tf.function call per batch in mlm-garden')
  allow_tpu_summary: bool = hyperparams.unsupported(
      False, 'summaries inside TPU loops are not supported by mlm-garden')
  steps_per_loop: int = hyperparams.field(1000, ge=1)
  summary_interval: int = hyperparams.field(1000, ge=1)
  checkpoint_interval: int = hyperparams.field(1000, ge=1)
  max_to_keep: int = hyperparams.field(5, ge=1)
  continuous_eval_timeout: int = hyperparams.field(60 * 60, ge=0)
  train_steps: int = hyperparams.field(0, ge=0)
  validation_steps: int = hyperparams.field(-1, ge=-1)
  validation_interval: int = hyperparams.field(1000, ge=1)
  best_checkpoint_export_subdir: str = ''
  best_checkpoint_eval_metric: str = ''
  best_checkpoint_metric_comp: str = hyperparams.field('higher', choices=('higher', 'lower'))
  loss_upper_bound: float = hyperparams.field(1e6, gt=0)
  recovery_begin_steps: int = hyperparams.field(0, ge=0)
  recovery_max_trials: int = hyperparams.field(0, ge=0)
  validation_summary_subdir: str = 'validation'
  preemption_on_demand_checkpoint: bool = True
  skip_nonfinite_steps: bool = False
  gradient_accumulation_steps: int = hyperparams.field(1, ge=1)
  time_budget_minutes: float = hyperparams.field(0.0, ge=0)

  def validate(self) -> None:
    super().validate()
    if self.time_budget_minutes and self.train_steps < 1:
      raise hyperparams.ConfigError(
          'train_steps', f'with time_budget_minutes={self.time_budget_minutes:g} it is the run '
          'length the learning-rate schedule is written for (its warmup and decay steps are '
          f'shares of it); expected >= 1, found {self.train_steps}')
    if self.best_checkpoint_export_subdir and not self.best_checkpoint_eval_metric:
      raise hyperparams.ConfigError(
          'best_checkpoint_eval_metric', 'required with best_checkpoint_export_subdir='
          f'{self.best_checkpoint_export_subdir!r} (the eval metric that decides the best '
          'checkpoint, e.g. cls_accuracy)')


@dataclasses.dataclass
class TaskConfig(hyperparams.Config):
  """A task: its model, data and initial checkpoint. Subclasses narrow `model`.

  Attributes:
    init_checkpoint: a checkpoint (directory or prefix) restored before step 0 when `model_dir` has
      none.
    model: the model config.
    train_data: the training input.
    validation_data: the evaluation input.
    name: an optional task name.
  """
  init_checkpoint: str = ''
  model: Optional[hyperparams.Config] = None
  train_data: DataConfig = dataclasses.field(default_factory=DataConfig)
  validation_data: DataConfig = dataclasses.field(default_factory=DataConfig)
  name: Optional[str] = None
  differential_privacy_config: Optional[Dict[str, Any]] = hyperparams.unsupported(
      None, 'differential privacy is not supported by mlm-garden')
  allow_image_summary: bool = False

  def validate(self) -> None:
    super().validate()
    # A configured input needs a batch: 0 examples per step would train on nothing (and report
    # a NaN loss). An unused split may keep the default 0.
    for name in ('train_data', 'validation_data'):
      data = getattr(self, name, None)
      if (isinstance(data, DataConfig) and data.input_path and
          data.global_batch_size is not None and data.global_batch_size < 1):
        raise hyperparams.ConfigError(
            f'{name}.global_batch_size', f'expected a batch size >= 1 with {name}.input_path '
            f'set, found {data.global_batch_size}')


@dataclasses.dataclass
class ExperimentConfig(hyperparams.Config):
  """The top-level config: `task`, `trainer` and `runtime`."""
  task: TaskConfig = dataclasses.field(default_factory=TaskConfig)
  trainer: TrainerConfig = dataclasses.field(default_factory=TrainerConfig)
  runtime: RuntimeConfig = dataclasses.field(default_factory=RuntimeConfig)
