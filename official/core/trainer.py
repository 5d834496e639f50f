"""`Trainer`: the model, optimizer, metrics, checkpoint and compiled loops of one run.

It is Orbit's trainer (`train(num_steps)`: one loop of train steps) and evaluator
(`evaluate(num_steps)`: one evaluation) for an `orbit.Controller`; `train_lib` drives it. The
step itself is the task's (`task.train_step`), wrapped by `step_functions`; the inputs are
`trainer_inputs`'; checkpoints are `checkpointing`'s; progress lines are `progress`'s.

Example:
  >>> with strategy.scope():
  ...   task = task_factory.get_task(params.task)
  >>> trainer = Trainer(strategy, task, params, model_dir)
  >>> trainer.restore_or_initialize()
  >>> trainer.train(tf.constant(100))     # {'training_loss': ..., 'learning_rate': ..., ...}
  >>> trainer.evaluate(10)                # {'validation_loss': ..., <task metrics>}
"""

import logging
import math
from typing import Any, Dict, Optional, Tuple

import numpy as np
import orbit
import tensorflow as tf
import tf_keras

from official.core import actions
from official.core import base_task
from official.core import checkpointing
from official.core import config_definitions as cfg
from official.core import preemption
from official.core import progress
from official.core import step_functions
from official.core import time_budget
from official.core import train_utils
from official.core import trainer_inputs
from official.modeling.optimization import ema_optimizer


class StopRequested(Exception):
  """Raised by `Trainer.train` when SIGTERM/SIGINT ended its loop early (`signal_name`)."""

  def __init__(self, signal_name: str):
    super().__init__(f'{signal_name} received')
    self.signal_name = signal_name


def _scalar(value: Any) -> float:
  return float(np.asarray(value).reshape(-1)[0]) if np.size(value) else float('nan')


def _mean_or_nan(metric: tf_keras.metrics.Mean) -> float:
  """The metric's mean, NaN when it averaged nothing (e.g. every step was skipped)."""
  if float(metric.count.numpy()) == 0:
    return float('nan')
  return float(metric.result())


# The task's inputs with tf.data's autotuner off (importable from here as before the split).
build_inputs = trainer_inputs.build_inputs


class Trainer(orbit.AbstractTrainer, orbit.AbstractEvaluator):
  """Holds the model, optimizer, metrics, checkpoint and compiled step functions of one run;
  Orbit's trainer (`train`) and evaluator (`evaluate`) for an `orbit.Controller`.

  Args:
    strategy: the distribution strategy (everything is built in its scope).
    task: the task.
    params: the experiment config.
    model_dir: where checkpoints and summaries go; None: no checkpoint manager (`manager` is
      None, nothing is restored or saved by the trainer).
    train: build the training input (False for evaluation-only runs).
    model: the model (default: `task.build_model()`).
    optimizer: the optimizer (default: `task.create_optimizer`); wrapped as a built one would be
      (`step_functions.build_optimizer`).
    train_dataset: a dataset or distributed dataset to train on instead of the task's
      `params.task.train_data` input (its iterator is not checkpointed).
    validation_dataset: likewise for evaluation (`params.task.validation_data`).

  Attributes:
    progress_seconds: seconds of work between progress lines inside a train loop or an
      evaluation (`progress.progress_seconds()`: 10, or `$MLM_PROGRESS_SECONDS`; `math.inf`: one
      line per loop and none inside an evaluation).
    ema: the optimizer's `ExponentialMovingAverage` (`optimizer_config.ema`), else None; its
      averages are created here (or at the first step of a model built by it) and swapped into
      the model for each evaluation.
    train_seconds, train_steps_run: the time inside the train loop function and the steps it ran
      (this process); checkpoint saves (`manager.save_seconds`) and evaluations
      (`eval_seconds`, `evaluations`, `last_eval` = (steps, seconds)) are timed apart.
  """

  def __init__(self, strategy: tf.distribute.Strategy, task: base_task.Task,
               params: cfg.ExperimentConfig, model_dir: Optional[str], train: bool = True, *,
               model: Optional[tf_keras.Model] = None,
               optimizer: Optional[tf_keras.optimizers.Optimizer] = None,
               train_dataset: Any = None, validation_dataset: Any = None):
    tf.Module.__init__(self, name='trainer')
    self.strategy, self.task, self.params, self.model_dir = strategy, task, params, model_dir
    trainer = params.trainer
    # SIGTERM/SIGINT set `stop.requested`, which the train loop reads before every step.
    self.stop = preemption.StopSignal()
    self.stopped_by: Optional[str] = None  # the signal that ended training early, if any
    self._train_dataset, self._validation_dataset = train_dataset, validation_dataset
    with strategy.scope():
      self.model = model if model is not None else task.build_model()
      self.optimizer = step_functions.build_optimizer(task, params, optimizer)
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
      # With `optimizer_config.ema`: the moving averages (evaluated instead of the weights).
      self.ema = ema_optimizer.find_moving_average(self.optimizer)
      if self.ema is not None and not self.ema.has_shadow_copy:
        self.ema.shadow_copy(self.model)
      self.global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name='global_step',
                                     aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
      # Steps whose update was skipped (skip_nonfinite_steps) in this process; not checkpointed.
      self.skipped_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name='skipped_steps',
                                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
      self.accumulation_steps = trainer.gradient_accumulation_steps
      self._accumulator = (step_functions.GradientAccumulator(self.optimizer, self.model,
                                                              self.accumulation_steps)
                           if train and self.accumulation_steps > 1 else None)
      # With `trainer.time_budget_minutes`: the budget's state (in the checkpoint) and the
      # schedule mapped onto the steps it plans.
      self.budget: Optional[time_budget.BudgetState] = None
      if trainer.time_budget_minutes:
        self.budget = time_budget.BudgetState(trainer.time_budget_minutes * 60,
                                              trainer.train_steps)
        time_budget.budget_the_learning_rate(self.optimizer, self.budget)
    self.budget_report: Optional[time_budget.BudgetReport] = None
    items = dict(getattr(self.model, 'checkpoint_items', {}) or {})
    if self.budget is not None:
      items['time_budget'] = self.budget
    if params.runtime.deterministic:
      items['dropout_random_state'] = checkpointing.dropout_random_state(self.model)
    # One replica: a plain tf.data iterator, saved in the checkpoint. Several replicas:
    # tf.distribute iterators cannot be saved, so the input is built after the restore and skips the
    # batches the restored steps consumed (`_make_train_iterator`).
    self.train_iterator = None
    if train and strategy.num_replicas_in_sync == 1:
      self.train_iterator = self._make_train_iterator()
      if train_dataset is None:
        items['train_iterator'] = self.train_iterator
    self.checkpoint = tf.train.Checkpoint(global_step=self.global_step, model=self.model,
                                          optimizer=self.optimizer, **items)
    self.write_dir = train_utils.writable_dir(model_dir, strategy) if model_dir else None
    self.manager = None
    if self.write_dir:
      self.manager = checkpointing.FiniteCheckpointManager(
          self.checkpoint, self.write_dir, max_to_keep=trainer.max_to_keep,
          step_counter=self.global_step, checkpoint_interval=trainer.checkpoint_interval,
          init_fn=self.initialize)
    self.recovery = actions.RecoveryCondition(self.global_step, trainer.loss_upper_bound,
                                              trainer.recovery_begin_steps,
                                              trainer.recovery_max_trials)
    self.use_xla = step_functions.use_xla(params.runtime, strategy)
    self.progress = progress.ProgressLog(trainer.train_steps, progress.progress_seconds(),
                                         single_call=train_utils.is_multi_worker(strategy))
    self._train_loop = None
    self._eval_step = None
    self._eval_reports_loss = True  # whether the task's validation logs hold its loss
    self._window_start: Optional[int] = None  # first step of the summary window
    self.train_seconds = 0.0
    self.train_steps_run = 0
    self.eval_seconds = 0.0
    self.evaluations = 0
    self.last_eval: Optional[Tuple[int, float]] = None  # (steps, seconds) of the last evaluation
    self.last_loop_loss: Optional[float] = None

  @property
  def progress_seconds(self) -> float:
    return self.progress.progress_seconds

  @progress_seconds.setter
  def progress_seconds(self, seconds: float) -> None:
    self.progress.progress_seconds = seconds

  def _make_train_iterator(self, skip_steps: int = 0):
    """The one place the training input is created: the `train_dataset` given, else the task's
    (`trainer_inputs.train_iterator`; `skip_steps`: train steps already done, several replicas
    only)."""
    if self._train_dataset is not None:
      return iter(self._train_dataset)
    return trainer_inputs.train_iterator(self.strategy, self.task, self.params.task.train_data,
                                         self.accumulation_steps, skip_steps)

  # ---- checkpoints -----------------------------------------------------------------------------
  def restore_or_initialize(self) -> Optional[str]:
    """Restores the latest readable checkpoint of `model_dir` (`checkpointing.restore_latest`:
    a truncated or corrupt one is skipped for the one before); without one, `task.initialize`.

    Returns:
      The restored checkpoint's path, or None when the model was initialized.
    """
    path = None
    if self.model_dir:
      path = checkpointing.restore_latest(self.checkpoint, self.model_dir)
    if path is None:
      self.task.initialize(self.model)
    else:
      logging.info('Restored %s at step %d', path, int(self.global_step.numpy()))
    if self.manager is not None:
      self.manager.count_interval_from(int(self.global_step.numpy()))
    return path

  # Model Garden's trainers name it `initialize` (the checkpoint manager's `init_fn`).
  def initialize(self) -> None:
    """`task.initialize(model)`: restores `task.init_checkpoint` into a new model."""
    self.task.initialize(self.model)

  # ---- compiled functions ----------------------------------------------------------------------
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

  def train_loop_fn(self):
    """A `tf.function(iterator, num_steps)` running `num_steps` steps; traced once per run.

    The per-step losses go to the `training_loss` (summary window) and `loop_loss` metrics.
    With `trainer.gradient_accumulation_steps` N > 1 a step reads N batches: each adds its
    gradients to per-replica accumulators, then one optimizer update applies their mean.
    With XLA (`use_xla`: `runtime.enable_xla` on GPU/TPU, or with `runtime.xla_on_cpu`) the replica
    step is compiled (`jit_compile`); with several replicas only its forward and backward pass are.
    """
    if self._train_loop is not None:
      return self._train_loop
    accumulator, accumulation_steps = self._accumulator, self.accumulation_steps
    step_fn = step_functions.replica_train_step(
        self.task, self.model, self.optimizer, self.train_metrics, self._record_loss,
        self.use_xla, self.strategy.num_replicas_in_sync, accumulator)
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
    return loop

  def eval_step_fn(self):
    """A function running one validation step on a distributed batch."""
    if self._eval_step is None:
      def replica_step(inputs):
        logs = self.task.validation_step(inputs, self.model, metrics=self.eval_metrics)
        self._eval_reports_loss = self.task.loss in logs  # (a task may leave its loss out)
        if self._eval_reports_loss:
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

  # ---- training --------------------------------------------------------------------------------
  def train(self, num_steps: Any) -> Dict[str, float]:
    """Runs one loop of `num_steps` train steps (`orbit.AbstractTrainer.train`).

    The loop runs as one or more calls of the compiled loop function (`_run_loop`), so that a
    long loop logs a progress line every `progress_seconds` of work. After the loop: a stop
    signal raises `StopRequested`; a non-finite loss (or one above `trainer.loss_upper_bound`)
    restores the latest checkpoint while `trainer.recovery_max_trials` allow
    (`actions.RecoveryCondition`) and otherwise raises `TrainingStopped`; then one progress line
    is logged ('step 200/1000 | loss 6.1234 | lr 0.0001 | 12.34 steps/s | ETA 1m05s') and the
    outputs are returned: the summary window's `training_loss` (NaN when every step in it was
    skipped), `learning_rate`, the train metrics and, with `skip_nonfinite_steps`,
    `skipped_steps` (so far in this process). The window (and the metrics) restart once
    `summary_interval` steps have passed, when the controller writes them.

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
    if not self.progress.started:
      self.progress.start(start_step, self.train_steps_run, self.train_seconds)
      self._window_start = start_step
    if self.train_iterator is None:  # several replicas: built after the restore
      self.train_iterator = self._make_train_iterator(skip_steps=start_step)
    skipped_before = int(self.skipped_steps.numpy())
    self._run_loop(int(num_steps))
    step = int(self.global_step.numpy())
    if self.stop.signal_name:  # set with `stop.requested`, which ended the loop early
      raise StopRequested(self.stop.signal_name)
    loss = self.last_loop_loss = self._take_loop_loss()
    skipped = int(self.skipped_steps.numpy()) - skipped_before
    self._check_skipped(skipped, start_step, step)
    if not math.isfinite(loss) or loss > params.loss_upper_bound:
      step = self._recover_or_stop(loss, step)
    self._log_progress(step, loss, f' | skipped {skipped} (non-finite loss)' if skipped else '')
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

  def _take_loop_loss(self) -> float:
    """The mean loss of the loop that just ran (NaN when every step was skipped); restarts it."""
    loss = _mean_or_nan(self.loop_loss)
    self.loop_loss.reset_states()
    return loss

  def _check_skipped(self, skipped: int, start_step: int, step: int) -> None:
    """Stops the run when every step of the loop was skipped; warns when some were."""
    if skipped and skipped >= step - start_step:
      raise checkpointing.TrainingStopped(
          f'every step of the loop from step {start_step} to {step} ({skipped} steps) had a '
          'non-finite loss and was skipped (trainer.skip_nonfinite_steps): training makes no '
          f'progress (learning rate {self.learning_rate():.3g}); stopping. '
          f'{self._newest_finite_checkpoint()}')
    if skipped:
      logging.warning('%d of the %d steps up to step %d had a non-finite loss; their updates '
                      'were skipped (trainer.skip_nonfinite_steps)', skipped, step - start_step,
                      step)

  def _recover_or_stop(self, loss: float, step: int) -> int:
    """After a loop whose loss is non-finite or above `loss_upper_bound`: restores the latest
    checkpoint when `recovery` allows (returning the restored step), else stops the run."""
    params = self.params.trainer
    if not self.recovery.try_recover(loss, step):
      raise checkpointing.TrainingStopped(
          f'training loss is {loss} at step {step} (non-finite or above '
          f'trainer.loss_upper_bound={params.loss_upper_bound}); stopping. '
          f'{self._newest_finite_checkpoint()}')
    path = self.restore_or_initialize()
    logging.warning('training loss %s at step %d: restored %s (recovery %d of %d)', loss, step,
                    path or 'the initial weights', self.recovery.recover_counter,
                    params.recovery_max_trials)
    return int(self.global_step.numpy())

  def _newest_finite_checkpoint(self) -> str:
    if self.manager is None:
      return 'No model_dir: the trainer wrote no checkpoint.'
    return checkpointing.newest_finite_checkpoint(self.write_dir, self.manager.verified)

  def _run_loop(self, num_steps: int) -> None:
    """Runs `num_steps` steps as calls of the compiled loop function (`num_steps` is a tensor:
    one trace), sized by `progress.chunk_length`, logging a progress line between calls once
    `progress_seconds` passed. Ends early after a stop signal."""
    loop_fn = self.train_loop_fn()
    remaining = num_steps
    while remaining > 0:
      chunk = self.progress.chunk_length(remaining)
      start, step_before = progress.now(), int(self.global_step.numpy())
      loop_fn(self.train_iterator, tf.convert_to_tensor(chunk, tf.int32))
      step = int(self.global_step.numpy())  # waits for the steps
      seconds = progress.now() - start
      self.train_seconds += seconds
      self.train_steps_run += step - step_before  # a stop signal may end the call early
      remaining -= chunk
      if self.stop.signal_name:
        return
      self.progress.measured(chunk, seconds)
      if remaining > 0 and self.progress.due():
        self._log_progress(step, _mean_or_nan(self.loop_loss))

  def _log_progress(self, step: int, loss: float, note: str = '') -> None:
    self.progress.line(step, loss, self.learning_rate(), self.train_steps_run, self.train_seconds,
                       note)

  # ---- evaluation ------------------------------------------------------------------------------
  def evaluate(self, num_steps: Optional[Any] = None) -> Dict[str, float]:
    """Runs one evaluation; returns the metric results (`orbit.AbstractEvaluator.evaluate`).

    With moving averages (`self.ema`), the model holds them during the evaluation, then its
    trained weights again.

    Args:
      num_steps: eval steps, an int or a scalar tensor (-1: the whole dataset; None:
        `trainer.validation_steps`).
    """
    swap = self.ema is not None and self.ema.has_shadow_copy
    if swap:
      self.ema.swap_weights()
    try:
      return self._evaluate(num_steps)
    finally:
      if swap:
        self.ema.swap_weights()

  def _evaluate(self, num_steps: Optional[Any]) -> Dict[str, float]:
    steps = self.params.trainer.validation_steps if num_steps is None else int(num_steps)
    for metric in self.eval_metrics + [self.validation_loss]:
      metric.reset_states()
    dataset = self._validation_dataset
    if dataset is None:
      dataset = trainer_inputs.validation_dataset(self.strategy, self.task,
                                                  self.params.task.validation_data)
    step_fn = self.eval_step_fn()
    state = None
    start = last_line = progress.now()
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
      if progress.now() - last_line >= self.progress_seconds:
        last_line = progress.now()
        progress.log_eval_progress(int(self.global_step.numpy()), done, steps, last_line - start)
    logs = {}
    if self._eval_reports_loss:
      logs[self.validation_loss.name] = float(self.validation_loss.result())
    logs.update({m.name: _scalar(m.result()) for m in self.eval_metrics})
    logs.update(self.task.reduce_aggregated_logs(state, global_step=self.global_step))
    seconds = progress.now() - start
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

  def run_summary(self) -> str:
    """The run summary line (`progress.run_summary`) of this process's training; with a time
    budget, a second line says what it bought (`time_budget.BudgetReport`)."""
    budget = f'\n{self.budget_report.summary()}' if self.budget_report else ''
    return progress.run_summary(
        int(self.global_step.numpy()), progress.now() - self.progress.run_start_time,
        self.train_steps_run, self.train_seconds, self.manager.saves if self.manager else 0,
        self.manager.save_seconds if self.manager else 0.0, self.evaluations,
        self.eval_seconds) + budget
