"""The training driver: train, evaluate, checkpoint and summarize a task on Orbit.

Read top to bottom: `Trainer` builds the model, optimizer, metrics and checkpoint inside the
strategy's scope and is Orbit's trainer and evaluator (`train(num_steps)` runs `steps_per_loop`
steps as calls of one `tf.function`, logging a progress line at least every ~10 s of work;
`evaluate(num_steps)` one evaluation). `OrbitExperimentRunner`
restores the latest checkpoint (or `task.initialize`) and hands the trainer to an
`orbit.Controller`, which writes summaries, saves checkpoints and evaluates when their intervals
are reached; its actions stop on preemption and keep the best checkpoint.

Example:
  >>> strategy = distribute_utils.get_distribution_strategy('one_device')
  >>> with strategy.scope():
  ...   task = task_factory.get_task(params.task, logging_dir=model_dir)
  >>> model, eval_logs = run_experiment(strategy, task, 'train_and_eval', params, model_dir)
"""

import inspect
import logging
import math
import os
import re
import shutil
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
import orbit
import tensorflow as tf
import tf_keras

from official.core import base_task
from official.core import model_dir_lock
from official.core import preemption
from official.core import config_definitions as cfg
from official.core import train_utils
from official.modeling import performance

MODES = ('train', 'eval', 'train_and_eval', 'train_and_post_eval', 'continuous_eval')

# The `Trainer` of the latest `run_experiment` call (a hook for tests and notebooks, e.g. to check
# `last_trainer.train_loop_fn().experimental_get_tracing_count()`).
last_trainer: Optional['Trainer'] = None


# A progress line at least this often (seconds of work) inside long train loops and evaluations.
PROGRESS_SECONDS = 10.0


def _now() -> float:
  """The clock of progress lines and timings (a seam for tests)."""
  return time.monotonic()


def _format_eta(seconds: float) -> str:
  if not math.isfinite(seconds):
    return '?'
  minutes, seconds = divmod(int(seconds), 60)
  hours, minutes = divmod(minutes, 60)
  return f'{hours}h{minutes:02d}m' if hours else f'{minutes}m{seconds:02d}s'


def _scalar(value: Any) -> float:
  return float(np.asarray(value).reshape(-1)[0]) if np.size(value) else float('nan')


class TrainingStopped(RuntimeError):
  """Training cannot go on (a non-finite or too large loss, non-finite weights, every step of a
  loop skipped); the message says why and names the newest finite checkpoint."""


class CheckpointWriteError(OSError):
  """A checkpoint could not be written (disk full, read-only directory); the message names it."""


class _FiniteCheckpointManager(tf.train.CheckpointManager):
  """A `tf.train.CheckpointManager` that never writes NaN or Inf.

  Before every save that the interval lets through, one reduction over the checkpoint's
  floating-point variables checks they are finite; a non-finite one raises `TrainingStopped`
  instead of being written. Write failures raise `CheckpointWriteError` naming the checkpoint.
  `verified` holds the checkpoints this process wrote (known finite).
  """

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    self.verified = set()
    self.save_seconds = 0.0  # time spent in saves that wrote a checkpoint
    self.saves = 0

  def _interval_passed(self) -> bool:
    # As `CheckpointManager.save(check_interval=True)` decides, without saving.
    last, interval = self._last_checkpoint_step, self._checkpoint_interval  # pylint: disable=protected-access
    if interval is None or last is None or self._step_counter is None:
      return True
    return int(self._step_counter.numpy()) >= last + interval

  def save(self, checkpoint_number=None, check_interval: bool = True, options=None):
    if check_interval and not self._interval_passed():
      return None
    start = _now()
    if not train_utils.checkpoint_is_finite(self.checkpoint):
      step = int(self._step_counter.numpy()) if self._step_counter is not None else None
      newest = _newest_finite_checkpoint(self.directory, self.verified)
      raise TrainingStopped(f'the weights (or optimizer state) hold NaN or Inf at step {step}: '
                            f'no checkpoint of them was written; stopping. {newest}')
    try:
      path = super().save(checkpoint_number=checkpoint_number, check_interval=check_interval,
                          options=options)
    except (tf.errors.OpError, OSError) as e:
      number = checkpoint_number if checkpoint_number is not None else self._step_counter
      prefix = self._checkpoint_prefix  # pylint: disable=protected-access
      if number is not None:
        prefix = f'{prefix}-{int(number)}'
      # A failed save leaves `<prefix>_temp/` behind; on a full disk its space matters.
      shutil.rmtree(f'{prefix}_temp', ignore_errors=True)
      raise CheckpointWriteError(f'cannot write checkpoint {prefix}: {_os_reason(e)}') from None
    if path:
      self.verified.add(path)
      self.save_seconds += _now() - start
      self.saves += 1
    return path


def _os_reason(error: Exception) -> str:
  """The operating system's reason in a TensorFlow or OS error ('No space left on device')."""
  if isinstance(error, OSError) and error.strerror:
    return error.strerror
  text = str(getattr(error, 'message', None) or error).strip()
  text = re.sub(r'\{\{.*?\}\}\s*', '', text)
  text = re.sub(r'\s*\[Op:\w+\]', '', text).strip()
  text = text.splitlines()[0] if text else type(error).__name__
  return text.rsplit('; ', 1)[-1]


def _newest_finite_checkpoint(model_dir: str, verified: Optional[set] = None) -> str:
  """'The newest finite checkpoint is <path> (step N).' (or that there is none), checking the
  checkpoints of `model_dir` newest first; those in `verified` were checked when written."""
  for path in _checkpoints_newest_first(model_dir):
    if path not in (verified or ()):
      try:
        if not train_utils.checkpoint_file_is_finite(path):
          logging.warning('checkpoint %s holds NaN or Inf', path)
          continue
      except (tf.errors.OpError, ValueError, IndexError):
        continue
    step = path.rsplit('-', 1)[-1]
    return f'The newest finite checkpoint is {path} (step {step}); a rerun resumes from it.'
  return (f'There is no finite checkpoint in {model_dir}: a rerun starts from the initial '
          'weights.')


def _mean_or_nan(metric: tf_keras.metrics.Mean) -> float:
  """The metric's mean, NaN when it averaged nothing (e.g. every step was skipped)."""
  if float(metric.count.numpy()) == 0:
    return float('nan')
  return float(metric.result())


class StopRequested(Exception):
  """Raised by `Trainer.train` when SIGTERM/SIGINT ended its loop early (`signal_name`)."""

  def __init__(self, signal_name: str):
    super().__init__(f'{signal_name} received')
    self.signal_name = signal_name


class Trainer(orbit.AbstractTrainer, orbit.AbstractEvaluator):
  """Holds the model, optimizer, metrics, checkpoint and compiled step functions of one run;
  Orbit's trainer (`train`) and evaluator (`evaluate`) for an `orbit.Controller`.

  Args:
    strategy: the distribution strategy (everything is built in its scope).
    task: the task.
    params: the experiment config.
    model_dir: where checkpoints and summaries go.
    train: build the training input (False for evaluation-only runs).

  Attributes:
    progress_seconds: seconds of work between progress lines inside a train loop or an
      evaluation (`PROGRESS_SECONDS`; `math.inf`: one line per loop and none inside an
      evaluation).
    train_seconds, train_steps_run: the time inside the train loop function and the steps it ran
      (this process); checkpoint saves (`manager.save_seconds`) and evaluations
      (`eval_seconds`, `evaluations`, `last_eval` = (steps, seconds)) are timed apart.
  """

  def __init__(self, strategy: tf.distribute.Strategy, task: base_task.Task,
               params: cfg.ExperimentConfig, model_dir: str, train: bool = True):
    tf.Module.__init__(self, name='trainer')
    self.strategy, self.task, self.params, self.model_dir = strategy, task, params, model_dir
    trainer = params.trainer
    # SIGTERM/SIGINT set `stop.requested`, which the train loop reads before every step.
    self.stop = preemption.StopSignal()
    self.stopped_by: Optional[str] = None  # the signal that ended training early, if any
    with strategy.scope():
      self.model = task.build_model()
      self.optimizer = task.create_optimizer(trainer.optimizer_config, params.runtime)
      self.accumulation_steps = trainer.gradient_accumulation_steps
      if self.accumulation_steps > 1 and isinstance(
          self.optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
        raise ValueError('trainer.gradient_accumulation_steps: expected 1 with float16 loss '
                         f'scaling, found {self.accumulation_steps} (use bfloat16 or float32)')
      if trainer.skip_nonfinite_steps and not isinstance(
          self.optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
        # A dynamic loss scale never goes below 1: with scale 1 and no growth, the wrapper changes
        # nothing but skipping the update of a step whose gradients are not finite.
        self.optimizer = tf_keras.mixed_precision.LossScaleOptimizer(
            self.optimizer, initial_scale=1.0, dynamic_growth_steps=2**31 - 1)
      self.train_metrics = task.build_metrics(training=True)
      self.eval_metrics = task.build_metrics(training=False)
      self.training_loss = tf_keras.metrics.Mean('training_loss')
      self.loop_loss = tf_keras.metrics.Mean('loop_loss')
      self.validation_loss = tf_keras.metrics.Mean('validation_loss')
      # Creating the optimizer's slots now (instead of inside the first step) lets the train loop
      # trace once; models whose variables only appear when called are built on their first step.
      if self.model.built and self.model.trainable_variables:
        inner = getattr(self.optimizer, 'inner_optimizer', self.optimizer)
        inner.build(self.model.trainable_variables)
      self.global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name='global_step',
                                     aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
      # Steps whose update was skipped (skip_nonfinite_steps) in this process; not checkpointed.
      self.skipped_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name='skipped_steps',
                                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
      self._accumulator = (_GradientAccumulator(self.optimizer, self.model,
                                                self.accumulation_steps)
                           if train and self.accumulation_steps > 1 else None)
    items = dict(getattr(self.model, 'checkpoint_items', {}) or {})
    if params.runtime.deterministic:
      items['dropout_random_state'] = _dropout_random_state(self.model)
    # One replica: a plain tf.data iterator, saved in the checkpoint. Several replicas: tf.distribute
    # iterators cannot be saved, so the input is built after the restore and skips the batches the
    # restored steps consumed (`_make_train_iterator`).
    self.train_iterator = None
    if train and strategy.num_replicas_in_sync == 1:
      self.train_iterator = self._make_train_iterator()
      items['train_iterator'] = self.train_iterator
    self.checkpoint = tf.train.Checkpoint(global_step=self.global_step, model=self.model,
                                          optimizer=self.optimizer, **items)
    self.write_dir = train_utils.writable_dir(model_dir, strategy)
    self.manager = _FiniteCheckpointManager(
        self.checkpoint, self.write_dir, max_to_keep=trainer.max_to_keep,
        step_counter=self.global_step, checkpoint_interval=trainer.checkpoint_interval,
        init_fn=self.initialize)
    self._train_loop = None
    self._eval_step = None
    self.use_xla = use_xla(params.runtime, strategy)
    # Progress and summary-window bookkeeping of `train` (set by its first call).
    self._run_start: Optional[Tuple[int, float]] = None
    self._window_start: Optional[int] = None
    # Seconds of work between progress lines inside a train loop or an evaluation.
    self.progress_seconds = PROGRESS_SECONDS
    self._multi_worker = _is_multi_worker(strategy)
    self._chunk_rate: Optional[float] = None  # measured train steps per second
    # (train_steps_run, train_seconds, clock) at the last progress line.
    self._line: Optional[Tuple[int, float, float]] = None
    # Time inside the train loop function and in evaluations (checkpoints: `manager`).
    self.train_seconds = 0.0
    self.train_steps_run = 0
    self.eval_seconds = 0.0
    self.evaluations = 0
    self.last_eval: Optional[Tuple[int, float]] = None  # (steps, seconds) of the last evaluation
    self.last_loop_loss: Optional[float] = None
    self._recoveries = 0  # loss blowups answered by restoring the latest checkpoint

  def _make_train_iterator(self, skip_steps: int = 0):
    """The one place the training input is created (per-replica batches from `build_inputs`).

    Args:
      skip_steps: train steps already done (several replicas only): each input pipeline drops the
        batches those steps consumed, so a resumed run continues where the checkpoint left off,
        provided the input is deterministic (`runtime.deterministic`, or no shuffling).
    """
    task, data = self.task, self.params.task.train_data
    if self.strategy.num_replicas_in_sync == 1:
      # A plain iterator is checkpointable (tf.distribute iterators are not): a resumed run neither
      # repeats nor skips a batch. Its state, e.g. the shuffle buffer, is saved too; stateful ops
      # such as py_function only warn and restart.
      options = tf.data.Options()
      options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.WARN
      return iter(task.build_inputs(data).with_options(options))

    def dataset_fn(ctx: tf.distribute.InputContext) -> tf.data.Dataset:
      dataset = _build_inputs(task, data, ctx)
      if skip_steps:
        # Each step takes one batch per replica of this pipeline per accumulated micro-batch.
        per_pipeline = self.strategy.num_replicas_in_sync // ctx.num_input_pipelines
        dataset = dataset.skip(skip_steps * per_pipeline * self.accumulation_steps)
      return dataset

    if skip_steps:
      logging.info('Several replicas: skipping the first %d steps\' batches of the training input '
                   'to resume where the checkpoint left off.', skip_steps)
    return iter(self.strategy.distribute_datasets_from_function(dataset_fn))

  # ---- checkpoints -----------------------------------------------------------------------------
  def restore_or_initialize(self) -> Optional[str]:
    """Restores the latest readable checkpoint of `model_dir`; without one, `task.initialize`.

    A truncated or corrupt latest checkpoint is skipped with a warning and the one before it is
    restored instead (then the one before that, and so on).
    """
    errors = []
    for path in _checkpoints_newest_first(self.model_dir):
      try:
        self.checkpoint.restore(path).expect_partial()
      except (tf.errors.OpError, IndexError) as e:  # truncated or corrupt files
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        errors.append(f'{os.path.basename(path)}: {first_line}')
        logging.warning('checkpoint %s cannot be read (%s); falling back to the previous one',
                        path, first_line)
        continue
      logging.info('Restored %s at step %d', path, int(self.global_step.numpy()))
      self._count_checkpoint_interval_from_here()
      return path
    if _checkpoints_newest_first(self.model_dir):
      raise ValueError(f'no checkpoint in {self.model_dir} can be read ({"; ".join(errors)}); '
                       'move them away to start over')
    self.task.initialize(self.model)
    self._count_checkpoint_interval_from_here()
    return None

  # Model Garden's trainers name it `initialize` (the checkpoint manager's `init_fn`).
  def initialize(self) -> None:
    """`task.initialize(model)`: restores `task.init_checkpoint` into a new model."""
    self.task.initialize(self.model)

  def _count_checkpoint_interval_from_here(self) -> None:
    """The next interval checkpoint comes `checkpoint_interval` steps after the restored step
    (the manager would otherwise save after the first loop)."""
    self.manager._last_checkpoint_step = int(self.global_step.numpy())  # pylint: disable=protected-access

  # ---- compiled functions ------------------------------------------------------------------------
  def _record_loss(self, logs: Dict[str, tf.Tensor]) -> None:
    loss = tf.cast(logs[self.task.loss], tf.float32)
    weight = 1.0
    if self.params.trainer.skip_nonfinite_steps:
      # Skipped (non-finite) steps are left out of the logged loss, and counted: a step is
      # skipped when any replica's loss is non-finite (its gradients are all-reduced).
      weight = tf.cast(tf.math.is_finite(loss), tf.float32)
      loss = tf.where(tf.math.is_finite(loss), loss, tf.zeros_like(loss))
      skipped = 1.0 - weight
      context = tf.distribute.get_replica_context()
      if context is not None and context.num_replicas_in_sync > 1:
        skipped = tf.minimum(context.all_reduce(tf.distribute.ReduceOp.SUM, skipped), 1.0)
      self.skipped_steps.assign_add(tf.cast(skipped, tf.int64))
    self.training_loss.update_state(loss, sample_weight=weight)
    self.loop_loss.update_state(loss, sample_weight=weight)

  def _replica_train_step(self, inputs):
    self._record_loss(self.task.train_step(inputs, self.model, self.optimizer,
                                           metrics=self.train_metrics))

  def _replica_micro_step(self, inputs):
    """A micro-batch of gradient accumulation: the task's step adds its gradients (over N)
    to the accumulators instead of updating the weights."""
    self._record_loss(self.task.train_step(inputs, self.model, self._accumulator,
                                           metrics=self.train_metrics))

  def _deferred_xla_train_step(self):
    """A replica step whose forward and backward pass run in XLA and whose update does not.

    Under MirroredStrategy `apply_gradients` cannot run inside a `jit_compile` function, so the
    task's `train_step` is compiled with a stand-in optimizer that records the gradients; they are
    applied afterwards, outside the compiled function.
    """
    recorder = _GradientRecorder(self.optimizer)
    variables: list = []

    @tf.function(jit_compile=True)
    def forward_backward(inputs):
      logs = self.task.train_step(inputs, self.model, recorder, metrics=self.train_metrics)
      pairs = [(g, v) for g, v in recorder.grads_and_vars if g is not None]
      variables[:] = [v for _, v in pairs]
      return logs, [g for g, _ in pairs]

    def step(inputs):
      logs, grads = forward_backward(inputs)
      self.optimizer.apply_gradients(list(zip(grads, variables)))
      self._record_loss(logs)
    return step

  def train_loop_fn(self):
    """A `tf.function(iterator, num_steps)` running `num_steps` steps; traced once per run.

    The per-step losses go to the `training_loss` (summary window) and `loop_loss` metrics.
    With `trainer.gradient_accumulation_steps` N > 1 a step reads N batches: each adds its
    gradients to per-replica accumulators, then one optimizer update applies their mean.
    With XLA (`use_xla`: `runtime.enable_xla` on GPU/TPU, or with `runtime.xla_on_cpu`) the replica
    step is compiled (`jit_compile`); with several replicas only its forward and backward pass are.
    """
    if self._train_loop is None:
      step_fn = self._replica_train_step
      accumulator, accumulation_steps = self._accumulator, self.accumulation_steps
      if accumulator is not None:
        step_fn = self._replica_micro_step
        if self.use_xla and self.strategy.num_replicas_in_sync == 1:
          step_fn = tf.function(step_fn, jit_compile=True)
        elif self.use_xla:
          logging.warning('runtime.enable_xla: with several replicas and gradient accumulation '
                          'the train step runs without XLA.')
      elif self.use_xla:
        if self.strategy.num_replicas_in_sync == 1:
          step_fn = tf.function(step_fn, jit_compile=True)
        elif isinstance(self.optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
          logging.warning('runtime.enable_xla: with several replicas and loss scaling the train '
                          'step runs without XLA.')
        else:
          step_fn = self._deferred_xla_train_step()

      stop_requested = self.stop.requested

      def loop(iterator, num_steps):
        for _ in tf.range(num_steps):
          if stop_requested:  # SIGTERM/SIGINT: end the loop after the step in progress
            break
          if accumulator is None:
            self.strategy.run(step_fn, args=(next(iterator),))
          else:
            skipped_before = self.skipped_steps.read_value()
            for _ in tf.range(accumulation_steps):
              self.strategy.run(step_fn, args=(next(iterator),))
            self.strategy.run(accumulator.apply)
            # An update is skipped (once) when any of its micro-batches was.
            self.skipped_steps.assign(
                skipped_before + tf.minimum(self.skipped_steps - skipped_before, 1))
          self.global_step.assign_add(1)

      if self.params.trainer.train_tf_function and not self.params.runtime.run_eagerly:
        loop = tf.function(loop)
      self._train_loop = loop
    return self._train_loop

  def train(self, num_steps: Any) -> Dict[str, float]:
    """Runs one loop of `num_steps` train steps (`orbit.AbstractTrainer.train`).

    The loop runs as one or more calls of the compiled loop function (`_run_loop`), so that a
    long loop logs a progress line every `progress_seconds` of work. After the loop: a stop
    signal raises `StopRequested`; a non-finite loss (or one above `trainer.loss_upper_bound`)
    raises `TrainingStopped`; otherwise one progress line is logged (absl INFO on stderr:
    'step 200/1000 | loss 6.1234 | lr 0.0001 | 12.34 steps/s | ETA 1m05s'; steps/s counts the
    time inside the loop function only, ETA the wall clock of the run) and the outputs are
    returned: the summary window's `training_loss` (NaN when every step in it was skipped),
    `learning_rate`, the train metrics and, with `skip_nonfinite_steps`, `skipped_steps` (the
    steps skipped so far in this process; the progress line shows a loop's). The window (and the
    metrics) restart once `summary_interval` steps have passed, when the controller writes them.

    Args:
      num_steps: a scalar int32 tensor (or int).

    Raises:
      StopRequested: SIGTERM/SIGINT arrived; the loop ended after the step in progress.
      TrainingStopped: the loss check failed (and no recovery was left), or, with
        `skip_nonfinite_steps`, every step of the loop was skipped; the message names the newest
        finite checkpoint.
    """
    params = self.params.trainer
    start_step = int(self.global_step.numpy())
    if self._run_start is None:
      self._run_start = (start_step, _now())
      self._window_start = start_step
      self._line = (self.train_steps_run, self.train_seconds, _now())
    if self.train_iterator is None:  # several replicas: built after the restore
      self.train_iterator = self._make_train_iterator(skip_steps=start_step)
    skipped_before = int(self.skipped_steps.numpy())
    self._run_loop(int(num_steps))
    step = int(self.global_step.numpy())
    if self.stop.signal_name:  # set with `stop.requested`, which ended the loop early
      raise StopRequested(self.stop.signal_name)
    loss = _mean_or_nan(self.loop_loss)
    self.loop_loss.reset_states()
    self.last_loop_loss = loss
    skipped = int(self.skipped_steps.numpy()) - skipped_before
    if skipped and skipped >= step - start_step:
      raise TrainingStopped(
          f'every step of the loop from step {start_step} to {step} ({skipped} steps) had a '
          'non-finite loss and was skipped (trainer.skip_nonfinite_steps): training makes no '
          f'progress (learning rate {self.learning_rate():.3g}); stopping. '
          f'{_newest_finite_checkpoint(self.write_dir, self.manager.verified)}')
    if skipped:
      logging.warning('%d of the %d steps up to step %d had a non-finite loss; their updates '
                      'were skipped (trainer.skip_nonfinite_steps)', skipped, step - start_step,
                      step)
    try:
      _check_loss(loss, step, params.loss_upper_bound, params.skip_nonfinite_steps)
    except RuntimeError as e:
      if not self._may_recover(loss, step):
        if isinstance(e, TrainingStopped):
          raise
        newest = _newest_finite_checkpoint(self.write_dir, self.manager.verified)
        raise TrainingStopped(f'{e}. {newest}') from None
      self._recoveries += 1
      path = self.restore_or_initialize()
      logging.warning('training loss %s at step %d: restored %s (recovery %d of %d)', loss, step,
                      path or 'the initial weights', self._recoveries,
                      params.recovery_max_trials)
      step = int(self.global_step.numpy())
    self._log_progress(step, loss,
                       f' | skipped {skipped} (non-finite loss)' if skipped else '')
    outputs = {'training_loss': _mean_or_nan(self.training_loss),
               'learning_rate': self.learning_rate()}
    if params.skip_nonfinite_steps:
      outputs['skipped_steps'] = float(self.skipped_steps.numpy())
    outputs.update({m.name: _scalar(m.result()) for m in self.train_metrics})
    if step - self._window_start >= params.summary_interval:
      for metric in self.train_metrics + [self.training_loss]:
        metric.reset_states()
      self._window_start = step
    return outputs

  def _run_loop(self, num_steps: int) -> None:
    """Runs `num_steps` steps as calls of the compiled loop function (`num_steps` is a tensor:
    one trace), each sized from the measured step rate to take at most half of
    `progress_seconds` and to end when the next line is due, logging a progress line between
    calls once `progress_seconds` passed.
    Several workers run each loop in one call (their calls must pair up). Ends early after a
    stop signal."""
    loop_fn = self.train_loop_fn()
    remaining = num_steps
    while remaining > 0:
      chunk = self._chunk_length(remaining)
      start, step_before = _now(), int(self.global_step.numpy())
      loop_fn(self.train_iterator, tf.convert_to_tensor(chunk, tf.int32))
      step = int(self.global_step.numpy())  # waits for the steps
      seconds = _now() - start
      self.train_seconds += seconds
      self.train_steps_run += step - step_before  # a stop signal may end the call early
      remaining -= chunk
      if self.stop.signal_name:
        return
      if seconds > 0:
        self._chunk_rate = chunk / seconds
      if remaining > 0 and _now() - self._line[2] >= self.progress_seconds:
        self._log_progress(step, _mean_or_nan(self.loop_loss))

  def _chunk_length(self, remaining: int) -> int:
    """Steps for the next call of the loop function (at most `remaining`)."""
    if self._multi_worker:
      return remaining
    if not math.isfinite(self.progress_seconds):
      return remaining
    if self._chunk_rate is None:  # nothing measured yet (the first call also traces)
      return 1
    # Half the interval, or less to end when the next line is due (but not tiny calls).
    until_line = self.progress_seconds - (_now() - self._line[2])
    seconds = min(self.progress_seconds / 2, max(until_line, self.progress_seconds / 20))
    return max(1, min(remaining, int(self._chunk_rate * seconds)))

  def _log_progress(self, step: int, loss: float, note: str = '') -> None:
    """Logs 'step S/N | loss L | lr R | X steps/s | ETA T' (steps/s: the train steps since the
    previous line over the time inside the loop function; ETA: from the run's wall clock)."""
    line_steps, line_seconds, _ = self._line
    rate = (self.train_steps_run - line_steps) / max(self.train_seconds - line_seconds, 1e-9)
    total = self.params.trainer.train_steps
    done = (step - self._run_start[0]) / max(_now() - self._run_start[1], 1e-9)
    eta = (total - step) / done if done > 0 else float('inf')
    logging.info('step %d/%d | loss %.4f | lr %.3g | %.2f steps/s | ETA %s%s', step, total, loss,
                 self.learning_rate(), rate, _format_eta(eta), note)
    self._line = (self.train_steps_run, self.train_seconds, _now())

  def _may_recover(self, loss: float, step: int) -> bool:
    """Whether a bad loop loss is answered by restoring the latest checkpoint: while recoveries
    remain (`trainer.recovery_max_trials`), for a non-finite loss or, from
    `trainer.recovery_begin_steps` on, one above `loss_upper_bound`."""
    params = self.params.trainer
    if self._recoveries >= params.recovery_max_trials:
      return False
    return not math.isfinite(loss) or step >= params.recovery_begin_steps

  def eval_step_fn(self):
    """A function running one validation step on a distributed batch."""
    if self._eval_step is None:
      def replica_step(inputs):
        logs = self.task.validation_step(inputs, self.model, metrics=self.eval_metrics)
        self.validation_loss.update_state(logs[self.task.loss])
        return {k: v for k, v in logs.items() if k != self.task.loss}

      if self.use_xla and self.strategy.num_replicas_in_sync == 1:
        # (With several replicas one compiled function cannot serve every replica's variables.)
        replica_step = tf.function(replica_step, jit_compile=True)

      def step(inputs):
        return self.strategy.run(replica_step, args=(inputs,))

      use_function = self.params.trainer.eval_tf_function and not self.params.runtime.run_eagerly
      self._eval_step = tf.function(step) if use_function else step
    return self._eval_step

  # ---- evaluation ------------------------------------------------------------------------------
  def evaluate(self, num_steps: Optional[Any] = None) -> Dict[str, float]:
    """Runs one evaluation; returns the metric results (`orbit.AbstractEvaluator.evaluate`).

    Args:
      num_steps: eval steps, an int or a scalar tensor (-1: the whole dataset; None:
        `trainer.validation_steps`).
    """
    steps = self.params.trainer.validation_steps if num_steps is None else int(num_steps)
    for metric in self.eval_metrics + [self.validation_loss]:
      metric.reset_states()
    dataset = self.strategy.distribute_datasets_from_function(
        lambda ctx: _build_inputs(self.task, self.params.task.validation_data, ctx))
    step_fn = self.eval_step_fn()
    state = None
    start = last_line = _now()
    done = 0
    for batch in dataset:
      if 0 <= steps <= done:
        break
      outputs = step_fn(batch)
      if outputs:
        # Per key, the tuple of the replicas' tensors (as Model Garden passes them).
        local = {k: self.strategy.experimental_local_results(v) for k, v in outputs.items()}
        state = self.task.aggregate_logs(state, local)
      done += 1
      if _now() - last_line >= self.progress_seconds:
        last_line = _now()
        _log_eval_progress(int(self.global_step.numpy()), done, steps, last_line - start)
    logs = {self.validation_loss.name: float(self.validation_loss.result())}
    logs.update({m.name: _scalar(m.result()) for m in self.eval_metrics})
    logs.update(self.task.reduce_aggregated_logs(state, global_step=self.global_step))
    seconds = _now() - start
    self.eval_seconds += seconds
    self.evaluations += 1
    self.last_eval = (done, seconds)
    return logs

  def learning_rate(self) -> float:
    """The learning rate at the current optimizer step."""
    lr = self.optimizer.learning_rate
    if callable(lr):
      lr = lr(self.optimizer.iterations)
    return float(tf.convert_to_tensor(lr))


def _log_eval_progress(global_step: int, done: int, steps: int, seconds: float) -> None:
  """Logs 'eval at step G: 40/100 steps | 5.12 steps/s | ETA 0m12s' (no total and ETA for a
  whole-dataset evaluation)."""
  rate = done / max(seconds, 1e-9)
  if steps > 0:
    logging.info('eval at step %d: %d/%d steps | %.2f steps/s | ETA %s', global_step, done, steps,
                 rate, _format_eta((steps - done) / rate if rate > 0 else float('inf')))
  else:
    logging.info('eval at step %d: %d steps | %.2f steps/s', global_step, done, rate)


def _build_inputs(task: base_task.Task, data: cfg.DataConfig,
                  input_context: Optional[tf.distribute.InputContext]) -> tf.data.Dataset:
  """`task.build_inputs(data, input_context)`; tasks whose `build_inputs` takes no input context
  (allowed by Model Garden) get `data` only."""
  try:
    takes_context = len(inspect.signature(task.build_inputs).parameters) > 1
  except (TypeError, ValueError):
    takes_context = True
  return task.build_inputs(data, input_context) if takes_context else task.build_inputs(data)


def _dropout_random_state(model: tf_keras.Model) -> tf.Module:
  """The `tf.random.Generator`s of the model's dropout layers, as one checkpointable module.

  With `tf_keras.backend.experimental.enable_tf_random_generator()` (`runtime.deterministic`)
  Keras draws dropout masks from generators, but leaves their state out of checkpoints; saving it
  here lets a resumed run draw the masks an uninterrupted run would have drawn.
  """
  generators, seen = [], set()
  for layer in [model] + list(model.submodules):
    generator = getattr(getattr(layer, '_random_generator', None), '_generator', None)
    if isinstance(generator, tf.random.Generator) and id(generator) not in seen:
      seen.add(id(generator))
      generators.append(generator)
  state = tf.Module(name='dropout_random_state')
  state.generators = generators
  return state


def _checkpoints_newest_first(model_dir: str) -> list:
  """The checkpoint prefixes of `model_dir`, the newest (highest step) first."""
  paths = []
  try:
    state = tf.train.get_checkpoint_state(model_dir)
    if state is not None:
      paths = list(state.all_model_checkpoint_paths) or [state.model_checkpoint_path]
  except Exception:  # pylint: disable=broad-except
    # An unreadable `checkpoint` state file: fall back to the files themselves.
    logging.warning('The checkpoint state file of %s cannot be read; listing ckpt-*.index',
                    model_dir)
  if not paths:
    paths = [p[:-len('.index')] for p in tf.io.gfile.glob(os.path.join(model_dir, '*.index'))]

  def step_of(path: str) -> int:
    tail = path.rsplit('-', 1)[-1]
    return int(tail) if tail.isdigit() else -1

  return sorted(set(paths), key=step_of, reverse=True)


def use_xla(runtime: cfg.RuntimeConfig, strategy: tf.distribute.Strategy) -> bool:
  """Whether the steps are compiled with XLA: `runtime.enable_xla` on GPU/TPU; on a CPU-only run
  only with `runtime.xla_on_cpu` too (XLA's CPU backend is slower than TF's oneDNN kernels)."""
  if not runtime.enable_xla:
    return False
  if runtime.xla_on_cpu or isinstance(strategy, tf.distribute.TPUStrategy):
    return True
  try:
    devices = list(strategy.extended.worker_devices)
  except RuntimeError:  # the default strategy: TensorFlow places ops on a GPU when there is one
    devices = [d.name for d in tf.config.list_logical_devices('GPU')[:1]]
  if any('GPU' in device.upper() for device in devices):
    return True
  logging.info('runtime.enable_xla is not applied on CPU (XLA is slower there than TensorFlow\'s '
               'own kernels); set runtime.xla_on_cpu=true to compile anyway.')
  return False


class _GradientRecorder:
  """Stands in for an optimizer inside a compiled step: records the gradients instead of applying
  them; every other attribute (learning_rate, iterations, ...) is the optimizer's."""

  def __init__(self, optimizer: tf_keras.optimizers.Optimizer):
    self._optimizer = optimizer
    self.grads_and_vars: list = []

  def apply_gradients(self, grads_and_vars, *args, **kwargs) -> None:
    del args, kwargs
    self.grads_and_vars = list(grads_and_vars)

  def __getattr__(self, name: str) -> Any:
    return getattr(self._optimizer, name)


class _GradientAccumulator:
  """Stands in for the optimizer in the task's step of a micro-batch: `apply_gradients` adds the
  gradients divided by `steps` to non-trainable accumulators; `apply` (in a replica context) then
  updates the weights once with the accumulated mean gradient and zeroes the accumulators.

  The accumulators are per-replica (`ON_READ`): micro-batches need no all-reduce; the optimizer
  all-reduces the accumulated gradients once per update. Every other attribute is the optimizer's.

  Args:
    optimizer: the real optimizer.
    model: the model (built) whose trainable variables get accumulators.
    steps: micro-batches per update.
  """

  def __init__(self, optimizer: tf_keras.optimizers.Optimizer, model: tf_keras.Model, steps: int):
    if not model.built or not model.trainable_variables:
      raise ValueError('trainer.gradient_accumulation_steps: expected a model whose variables '
                       'exist after build_model, found an unbuilt model')
    self._optimizer, self._steps = optimizer, steps
    self._accumulators = {
        v.ref(): tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False,
                             name='gradient_accumulator',
                             synchronization=tf.VariableSynchronization.ON_READ,
                             aggregation=tf.VariableAggregation.SUM)
        for v in model.trainable_variables}
    self._variables: list = []  # the variables the task's step gives gradients to (traced)

  def apply_gradients(self, grads_and_vars, *args, **kwargs) -> None:
    del args, kwargs
    pairs = [(g, v) for g, v in grads_and_vars if g is not None]
    self._variables = [v for _, v in pairs]
    for g, v in pairs:
      self._accumulators[v.ref()].assign_add(tf.convert_to_tensor(g) / self._steps)

  def apply(self) -> None:
    """One optimizer update with the accumulated gradients; zeroes them."""
    accumulators = [self._accumulators[v.ref()] for v in self._variables]
    grads = [tf.identity(a) for a in accumulators]
    self._optimizer.apply_gradients(list(zip(grads, self._variables)))
    for a in accumulators:
      a.assign(tf.zeros_like(a))

  def __getattr__(self, name: str) -> Any:
    return getattr(self._optimizer, name)


def _write_summaries(writer, logs: Dict[str, float], step: int) -> None:
  """Writes the scalar `logs` at `step` with `writer` (TensorBoard's scalar format)."""
  with writer.as_default(step=step):
    for name, value in logs.items():
      if np.ndim(value) == 0:
        orbit.utils.scalar_summary(name, value, step=step)
  writer.flush()


def _check_loss(loss: float, step: int, upper_bound: float, skip_nonfinite: bool = False) -> None:
  """Raises RuntimeError when the loop's mean loss is non-finite or above `upper_bound`.

  With `skip_nonfinite` the mean leaves out the skipped steps; a loop of only skipped steps is
  stopped before this check (`Trainer.train`).
  """
  del skip_nonfinite
  if not math.isfinite(loss) or loss > upper_bound:
    raise RuntimeError(f'training loss is {loss} at step {step} (non-finite or above '
                       f'trainer.loss_upper_bound={upper_bound}); stopping')



class _Preempted(Exception):
  """Raised by the multi-worker preemption handler once every worker has saved."""


def _raise_preempted() -> None:
  raise _Preempted()


def _is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
  resolver = getattr(strategy, 'cluster_resolver', None)
  return bool(resolver is not None and resolver.cluster_spec().jobs and
              isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy))


def _save_after_stop(trainer: Trainer, step: int, reason: str) -> None:
  """Saves a checkpoint at `step` after a signal stopped the train loop."""
  trainer.stopped_by = reason
  latest = trainer.manager.latest_checkpoint
  if latest is None or not latest.endswith(f'-{step}'):
    trainer.manager._last_checkpoint_step = None  # pylint: disable=protected-access
    latest = trainer.manager.save(checkpoint_number=step, check_interval=False)
  logging.warning('%s: saved %s at step %d; rerun the same command to resume.', reason, latest,
                  step)


def _run_summary(trainer: Trainer) -> str:
  """'trained to step 20 in 1.3 s: 20 steps in 0.05 s (400.00 steps/s), 4 checkpoints in
  0.04 s, 2 evaluations in 0.30 s': the train steps' rate counts only the time inside the train
  loop function; checkpoint saves and evaluations are timed apart."""
  manager = trainer.manager
  total = _now() - trainer._run_start[1]  # pylint: disable=protected-access
  rate = trainer.train_steps_run / max(trainer.train_seconds, 1e-9)
  return (f'trained to step {int(trainer.global_step.numpy())} in {total:.1f} s: '
          f'{trainer.train_steps_run} steps in {trainer.train_seconds:.2f} s ({rate:.2f} steps/s), '
          f'{_count(manager.saves, "checkpoint")} in {manager.save_seconds:.2f} s, '
          f'{_count(trainer.evaluations, "evaluation")} in {trainer.eval_seconds:.2f} s')


def _count(number: int, noun: str) -> str:
  """'1 checkpoint', '2 checkpoints'."""
  return f'{number} {noun}' if number == 1 else f'{number} {noun}s'


def _eval_note(trainer: Trainer) -> str:
  """' (4 steps in 0.19 s)': the size and time of the trainer's last evaluation."""
  if trainer.last_eval is None:
    return ''
  steps, seconds = trainer.last_eval
  return f' ({steps} steps in {seconds:.2f} s)'


def _log_line(logs: Mapping[str, Any]) -> str:
  return ', '.join(f'{k} {float(v):.4f}' for k, v in logs.items()
                   if k != 'steps_per_second' and np.size(v) == 1)


class _Controller(orbit.Controller):
  """`orbit.Controller` restoring through `Trainer.restore_or_initialize`, which skips a
  truncated or corrupt latest checkpoint instead of failing on it."""

  def restore_checkpoint(self, checkpoint_path: Optional[str] = None) -> Optional[str]:
    if checkpoint_path is None and isinstance(self.trainer or self.evaluator, Trainer):
      return (self.trainer or self.evaluator).restore_or_initialize()
    return super().restore_checkpoint(checkpoint_path)


class OrbitExperimentRunner:
  """Runs one experiment mode with an `orbit.Controller` driving a `Trainer`.

  Args:
    distribution_strategy: the strategy to build and run in (None: the default strategy).
    task: the task (built from `params.task`).
    mode: 'train', 'eval', 'train_and_eval', 'train_and_post_eval' or 'continuous_eval'.
    params: the experiment config.
    model_dir: checkpoints, summaries and `params.yaml`.
    run_post_eval: return the logs of an evaluation of the final model (evaluating once more
      unless the last evaluation was already at the final step).
    save_summary: write TensorBoard summaries.
    train_actions: extra Orbit actions after every train loop.
    eval_actions: extra Orbit actions after every evaluation.
    trainer: a `Trainer` built by the caller (in the strategy's scope); None: built here.
    controller_cls: the controller class (an `orbit.Controller` subclass).
    summary_manager: replaces the train summary manager.
    eval_summary_manager: replaces the eval summary manager.
    enable_async_checkpointing: save checkpoints in the background.
    allow_config_change: train in a `model_dir` whose `params.yaml` differs from `params` in
      keys that affect the result (otherwise a ValueError lists them).

  Training modes take the lock of `model_dir` (`model_dir_lock`) when the runner is built and
  release it when `run` ends.

  Raises:
    ValueError: an unknown mode, an incompatible `params.yaml`, or a `model_dir` that is a file
      or not writable.
    model_dir_lock.ModelDirLocked: another live training run holds `model_dir`.

  Example:
    >>> model, logs = OrbitExperimentRunner(strategy, task, 'train_and_eval', params,
    ...                                     model_dir).run()
  """

  def __init__(self, distribution_strategy: Optional[tf.distribute.Strategy],
               task: base_task.Task, mode: str, params: cfg.ExperimentConfig, model_dir: str,
               run_post_eval: bool = False, save_summary: bool = True,
               train_actions: Optional[List[orbit.Action]] = None,
               eval_actions: Optional[List[orbit.Action]] = None,
               trainer: Optional[Trainer] = None, controller_cls=None,
               summary_manager: Optional[orbit.utils.SummaryManagerInterface] = None,
               eval_summary_manager: Optional[orbit.utils.SummaryManagerInterface] = None,
               enable_async_checkpointing: bool = False, allow_config_change: bool = False):
    if mode not in MODES:
      raise ValueError(f'--mode: unknown mode {mode!r}; expected one of {list(MODES)}')
    self.strategy = distribution_strategy or tf.distribute.get_strategy()
    self._params, self._model_dir, self._mode = params, model_dir, mode
    self._run_post_eval = run_post_eval
    self._save_summary = save_summary
    self._train_actions = list(train_actions or [])
    self._eval_actions = list(eval_actions or [])
    self._controller_cls = controller_cls or _Controller
    self._summary_manager = summary_manager
    self._eval_summary_manager = eval_summary_manager
    self._enable_async_checkpointing = enable_async_checkpointing
    self._training = mode in ('train', 'train_and_eval', 'train_and_post_eval')
    performance.set_mixed_precision_policy(params.runtime.mixed_precision_dtype)
    train_utils.apply_runtime_determinism(params.runtime)
    # One writer per model_dir: training takes its lock (the chief only: other workers write
    # into private directories) before writing anything; `run` releases it.
    self._lock: Optional[model_dir_lock.ModelDirLock] = None
    if self._training and train_utils.is_chief(self.strategy):
      train_utils.check_model_dir(model_dir)
      self._lock = model_dir_lock.ModelDirLock(model_dir).acquire()
    try:
      if self._training:
        train_utils.check_config_compatible(params, model_dir, allow_config_change)
        if self._lock is not None:
          train_utils.write_params(params, model_dir)  # evaluation keeps the training run's
          if hasattr(task, 'write_model_dir_assets'):  # e.g. the records' vocabulary
            task.write_model_dir_assets(model_dir)
      global last_trainer
      self._trainer = trainer or Trainer(self.strategy, task, params, model_dir,
                                         train=self._training)
      last_trainer = self._trainer
    except BaseException:
      self.release_lock()
      raise
    self._controller = None

  def release_lock(self) -> None:
    """Releases the model_dir lock (`run` does at its end; also released at exit)."""
    if self._lock is not None:
      self._lock.release()

  @property
  def params(self) -> cfg.ExperimentConfig:
    return self._params

  @property
  def model_dir(self) -> str:
    return self._model_dir

  @property
  def trainer(self) -> Trainer:
    return self._trainer

  @property
  def checkpoint_manager(self) -> tf.train.CheckpointManager:
    return self._trainer.manager

  @property
  def controller(self) -> orbit.Controller:
    """The controller (built, restoring the latest checkpoint, on first access)."""
    if self._controller is None:
      self._controller = self._build_controller()
    return self._controller

  # ---- building --------------------------------------------------------------------------------
  def _build_train_actions(self) -> List[orbit.Action]:
    actions = list(self._train_actions)
    trainer = self._trainer
    if _is_multi_worker(self.strategy) and self.params.trainer.preemption_on_demand_checkpoint:
      # On SIGTERM to any worker, all workers agree on a loop after which every one of them
      # saves (the chief into model_dir); then training ends normally (exit code 0).
      actions.append(orbit.actions.SaveCheckpointIfPreempted(
          self.strategy.cluster_resolver, trainer.manager, trainer.global_step,
          exit_fn=_raise_preempted))
    return actions

  def _build_eval_actions(self) -> List[orbit.Action]:
    actions = list(self._eval_actions)
    trainer = self._trainer
    if trainer.write_dir == self.model_dir:  # the chief
      exporter = train_utils.maybe_create_best_ckpt_exporter(self.params, self.model_dir)
      if exporter is not None:
        actions.append(lambda logs: exporter.maybe_export_checkpoint(
            trainer.checkpoint, logs, int(trainer.global_step.numpy())))
    if self._mode in ('train_and_eval', 'train_and_post_eval') or self._run_post_eval:
      # A result: stdout (the controller's own eval lines are DEBUG here).
      actions.append(lambda logs: print(
          f'eval at step {int(trainer.global_step.numpy())}: {_log_line(logs)}'
          f'{_eval_note(trainer)}', flush=True))
    return actions

  def _build_controller(self) -> orbit.Controller:
    trainer, params = self._trainer, self.params.trainer
    summary_dir = eval_summary_dir = None
    controller_cls = self._controller_cls
    if self._save_summary:
      summary_dir = os.path.join(trainer.write_dir, 'train')
      eval_summary_dir = os.path.join(trainer.write_dir, params.validation_summary_subdir)
    controller = controller_cls(
        strategy=self.strategy,
        trainer=trainer if self._training else None,
        evaluator=trainer,
        global_step=trainer.global_step,
        steps_per_loop=params.steps_per_loop,
        checkpoint_manager=trainer.manager,
        enable_async_checkpointing=self._enable_async_checkpointing,
        summary_interval=params.summary_interval if self._save_summary else None,
        summary_dir=summary_dir,
        eval_summary_dir=eval_summary_dir,
        summary_manager=self._summary_manager,
        eval_summary_manager=self._eval_summary_manager,
        train_actions=self._build_train_actions() if self._training else None,
        eval_actions=self._build_eval_actions())
    # The trainer logs one progress line per loop and the eval actions print the results: the
    # controller's own per-loop and per-evaluation lines would repeat them.
    controller.output_log_level = logging.DEBUG
    return controller

  # ---- running ---------------------------------------------------------------------------------
  def run(self) -> Tuple[tf_keras.Model, Dict[str, float]]:
    """Runs the mode; returns the model and, with `run_post_eval` or in mode
    'train_and_post_eval', the logs of an evaluation of the final model ({} otherwise, as in
    Model Garden).

    Training stops cleanly on SIGTERM or SIGINT: the step in progress finishes, a checkpoint is
    saved at that step and `run` returns (`trainer.stopped_by` names the signal).

    Mode 'eval' without a checkpoint in `model_dir` evaluates the initial model (as Model
    Garden; `official.nlp.train` refuses it earlier).
    """
    trainer = self._trainer
    try:
      if self._training and not _is_multi_worker(self.strategy):
        with trainer.stop:  # multi-worker runs use TensorFlow's preemption handler instead
          logs = self._run_mode()
      else:
        logs = self._run_mode()
      return trainer.model, logs
    finally:
      if trainer.write_dir != self.model_dir:  # a non-chief worker's private copy
        tf.io.gfile.rmtree(trainer.write_dir)
      self.release_lock()

  def _run_mode(self) -> Dict[str, float]:
    """Runs the mode; the last evaluation's logs with `run_post_eval` (or in
    'train_and_post_eval'), else {} (Model Garden's contract)."""
    logs = self._run_and_evaluate()
    if self._training and self._trainer.train_steps_run:
      print(_run_summary(self._trainer), flush=True)
    if self._run_post_eval or self._mode == 'train_and_post_eval':
      return logs
    return {}

  def _run_and_evaluate(self) -> Dict[str, float]:
    """Runs the mode; returns the logs of the last evaluation (at the final step when
    `run_post_eval` asks for one: an evaluation that already ran there is not repeated)."""
    mode, params, trainer = self._mode, self.params.trainer, self._trainer
    if mode == 'eval':
      latest = tf.train.latest_checkpoint(self.model_dir)
      if latest:
        return self._evaluate_checkpoint(latest)
      # (train.py refuses --mode=eval without a checkpoint before getting here.)
      logging.warning('mode eval: no checkpoint in %s; evaluating the initial model (from '
                      'task.init_checkpoint if set)', self.model_dir)
      return dict(self.controller.evaluate(steps=params.validation_steps))
    if mode == 'continuous_eval':
      logs: Dict[str, float] = {}
      for path in tf.train.checkpoints_iterator(self.model_dir,
                                                timeout=params.continuous_eval_timeout):
        logs = self._evaluate_checkpoint(path)
        if int(trainer.global_step.numpy()) >= params.train_steps:
          break
      return logs
    controller = self.controller  # restores the latest checkpoint (or task.initialize)
    logs = {}
    try:
      if mode == 'train_and_eval':
        logs = controller.train_and_evaluate(train_steps=params.train_steps,
                                             eval_steps=params.validation_steps,
                                             eval_interval=params.validation_interval) or {}
      else:
        controller.train(steps=params.train_steps)
    except StopRequested as stop:
      _save_after_stop(trainer, int(trainer.global_step.numpy()), stop.signal_name)
      return logs
    except _Preempted:
      trainer.stopped_by = 'SIGTERM'
      logging.warning('SIGTERM (preemption) on a worker: all workers saved a checkpoint at step '
                      '%d; rerun the same command to resume.', int(trainer.global_step.numpy()))
      return logs
    if (mode == 'train_and_post_eval' or self._run_post_eval) and not logs:
      logs = controller.evaluate(steps=params.validation_steps)
    return dict(logs)

  def _evaluate_checkpoint(self, checkpoint_path: str) -> Dict[str, float]:
    controller, trainer = self.controller, self._trainer
    controller.restore_checkpoint(checkpoint_path)
    logs = controller.evaluate(steps=self.params.trainer.validation_steps)
    print(f'eval of {os.path.basename(checkpoint_path)} (step {int(trainer.global_step.numpy())})'
          f': {_log_line(logs)}{_eval_note(trainer)}', flush=True)
    return dict(logs)


def run_experiment(distribution_strategy: Optional[tf.distribute.Strategy], task: base_task.Task,
                   mode: str, params: cfg.ExperimentConfig, model_dir: str,
                   run_post_eval: bool = False, save_summary: bool = True,
                   allow_config_change: bool = False,
                   train_actions: Optional[List[orbit.Action]] = None,
                   eval_actions: Optional[List[orbit.Action]] = None,
                   trainer: Optional[Trainer] = None, controller_cls=None,
                   summary_manager: Optional[orbit.utils.SummaryManagerInterface] = None,
                   eval_summary_manager: Optional[orbit.utils.SummaryManagerInterface] = None,
                   enable_async_checkpointing: bool = False
                   ) -> Tuple[tf_keras.Model, Dict[str, float]]:
  """Runs `mode` ('train', 'eval', 'train_and_eval', 'train_and_post_eval', 'continuous_eval')
  of an experiment with `OrbitExperimentRunner`.

  With `runtime.deterministic` the run is seeded, uses deterministic ops, and keeps its dropout
  random state in the checkpoint, so a resumed run ends with the weights of an uninterrupted one.
  With `trainer.best_checkpoint_export_subdir` and `best_checkpoint_eval_metric`, every
  evaluation that improves the metric saves `model_dir/<subdir>/best_ckpt-N` and `info.json`.

  Args:
    distribution_strategy: the strategy to build and run in (None: the default strategy).
    task: the task (built from `params.task`).
    mode: what to run ('train_and_post_eval': train, then evaluate once).
    params: the experiment config.
    model_dir: checkpoints, summaries and `params.yaml`.
    run_post_eval: return the logs of an evaluation of the final model (evaluating once more
      unless the last evaluation was already at the final step); without it only mode
      'train_and_post_eval' returns logs (Model Garden's contract).
    save_summary: write TensorBoard summaries.
    allow_config_change: train in a `model_dir` whose `params.yaml` differs from `params` in
      keys that affect the result (otherwise a ValueError lists them).
    train_actions: extra Orbit actions after every train loop.
    eval_actions: extra Orbit actions after every evaluation.
    trainer: a `Trainer` built by the caller; None: built here.
    controller_cls: the `orbit.Controller` subclass to use.
    summary_manager: replaces the train summary manager.
    eval_summary_manager: replaces the eval summary manager.
    enable_async_checkpointing: save checkpoints in the background.

  Returns:
    The model and the final evaluation's logs (with `run_post_eval` or in mode
    'train_and_post_eval'; otherwise {}).

  Raises:
    ValueError: an unknown mode, an incompatible `params.yaml`, or a `model_dir` that is a file
      or not writable.
    model_dir_lock.ModelDirLocked: another live training run writes into `model_dir`.
    TrainingStopped: a non-finite or too large loss, non-finite weights at a checkpoint, or a loop
      whose steps were all skipped; the message names the newest finite checkpoint.
    CheckpointWriteError: a checkpoint could not be written (e.g. the disk is full).
  """
  return OrbitExperimentRunner(
      distribution_strategy, task, mode, params, model_dir, run_post_eval=run_post_eval,
      save_summary=save_summary, train_actions=train_actions, eval_actions=eval_actions,
      trainer=trainer, controller_cls=controller_cls, summary_manager=summary_manager,
      eval_summary_manager=eval_summary_manager,
      enable_async_checkpointing=enable_async_checkpointing,
      allow_config_change=allow_config_change).run()


maybe_create_best_ckpt_exporter = train_utils.maybe_create_best_ckpt_exporter


def _flatten_logs(logs: Mapping[str, Any], prefix: str = '') -> Dict[str, float]:
  flat = {}
  for key, value in logs.items():
    if isinstance(value, Mapping):
      flat.update(_flatten_logs(value, f'{prefix}{key}-'))
    elif np.size(value) == 1:
      flat[f'{prefix}{key}'] = float(np.asarray(value).reshape(-1)[0])
  return flat


def run_continuous_finetune(mode: str, params: cfg.ExperimentConfig, model_dir: str,
                            run_post_eval: bool = False, pretrain_steps: Optional[int] = None,
                            distribution_strategy: Optional[tf.distribute.Strategy] = None,
                            poll_seconds: float = 10.0) -> Dict[str, float]:
  """Mode `continuous_train_and_eval`: fine-tunes and evaluates every new checkpoint of a
  pretraining run.

  `task.init_checkpoint` names the pretraining run's directory. For each new checkpoint there
  (step S), the checkpoints of `model_dir` are removed, the task is fine-tuned from it in
  `train_and_eval` mode (without TensorBoard summaries of its own; the best checkpoint, when
  configured, goes to `<best_checkpoint_export_subdir>_S`), its final evaluation is written to
  `model_dir/metrics-S.json` and as summaries `<model_dir name>_<task name>/<metric>` at step S in
  `model_dir/eval`. It ends when no new checkpoint comes within
  `trainer.continuous_eval_timeout` seconds and the pretraining run reached `pretrain_steps`
  (if given).

  Args:
    mode: must be 'continuous_train_and_eval'.
    params: the fine-tuning experiment config.
    model_dir: the fine-tuning runs' directory.
    run_post_eval: return the last evaluation's logs (otherwise {}).
    pretrain_steps: the pretraining run's total steps: wait for checkpoints until it is reached.
    distribution_strategy: the strategy (None: from `params.runtime`).
    poll_seconds: how often to look for the pretraining directory before it exists.

  Returns:
    The last evaluation's logs when `run_post_eval`, else {}.

  Raises:
    ValueError: another mode, or `task.init_checkpoint` is not (and does not become within
      `continuous_eval_timeout`) a directory.

  Example:
    >>> run_continuous_finetune('continuous_train_and_eval', params, 'runs/glue_sst2',
    ...                         pretrain_steps=100_000)
  """
  from official.common import distribute_utils  # pylint: disable=g-import-not-at-top
  if mode != 'continuous_train_and_eval':
    raise ValueError(f'run_continuous_finetune runs mode continuous_train_and_eval, not {mode!r}')
  pretrain_dir = params.task.init_checkpoint
  waited = 0.0
  while not (pretrain_dir and tf.io.gfile.isdir(pretrain_dir)):
    if waited >= params.trainer.continuous_eval_timeout:
      raise ValueError('--mode=continuous_train_and_eval: task.init_checkpoint must be the '
                       f'directory of a pretraining run, found {pretrain_dir!r}')
    time.sleep(poll_seconds)
    waited += poll_seconds
  runtime = params.runtime
  strategy = distribution_strategy or distribute_utils.get_distribution_strategy(
      distribution_strategy=runtime.distribution_strategy, num_gpus=runtime.num_gpus,
      all_reduce_alg=runtime.all_reduce_alg, num_packs=runtime.num_packs,
      tpu_address=runtime.tpu)
  train_utils.check_model_dir(model_dir)
  with model_dir_lock.ModelDirLock(model_dir):  # the fine-tuning runs re-enter it
    return _continuous_finetune(params, model_dir, pretrain_dir, strategy, pretrain_steps,
                                run_post_eval)


def _continuous_finetune(params: cfg.ExperimentConfig, model_dir: str, pretrain_dir: str,
                         strategy: tf.distribute.Strategy, pretrain_steps: Optional[int],
                         run_post_eval: bool) -> Dict[str, float]:
  """The loop of `run_continuous_finetune` (while holding the lock of `model_dir`)."""
  from official.core import task_factory  # pylint: disable=g-import-not-at-top
  writer = tf.summary.create_file_writer(os.path.join(model_dir, 'eval'))
  pretrain_step = 0
  eval_logs: Dict[str, float] = {}

  def timeout_fn() -> bool:
    if pretrain_steps and pretrain_step < pretrain_steps:
      logging.info('waiting for pretraining checkpoints: step %d of %d', pretrain_step,
                   pretrain_steps)
      return False
    return True

  for checkpoint in tf.train.checkpoints_iterator(
      pretrain_dir, timeout=params.trainer.continuous_eval_timeout, timeout_fn=timeout_fn):
    train_utils.remove_ckpts(model_dir)
    pretrain_step = train_utils.read_global_step_from_checkpoint(checkpoint)
    trainer_overrides = {}
    if params.trainer.best_checkpoint_export_subdir:
      trainer_overrides['best_checkpoint_export_subdir'] = (
          f'{params.trainer.best_checkpoint_export_subdir}_{pretrain_step}')
    run_params = params.replace(task={'init_checkpoint': checkpoint}, trainer=trainer_overrides)
    logging.info('fine-tuning from %s (pretraining step %d)', checkpoint, pretrain_step)
    with strategy.scope():
      task = task_factory.get_task(run_params.task, logging_dir=model_dir)
    _, eval_logs = run_experiment(strategy, task, 'train_and_eval', run_params, model_dir,
                                  run_post_eval=True, save_summary=False,
                                  allow_config_change=True)
    train_utils.write_json_summary(model_dir, pretrain_step, eval_logs)
    group = f'{os.path.basename(os.path.normpath(model_dir))}_{task.name}'
    _write_summaries(writer, {f'{group}/{k}': v for k, v in _flatten_logs(eval_logs).items()},
                     pretrain_step)
    print(f'fine-tuned from pretraining step {pretrain_step}: {_log_line(eval_logs)}',
          flush=True)
    train_utils.remove_ckpts(model_dir)
  return eval_logs if run_post_eval else {}
