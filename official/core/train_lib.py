"""The training driver: train, evaluate, checkpoint and summarize a task, Orbit style.

Read top to bottom: `run_experiment` builds the model, optimizer, metrics and checkpoint inside the
strategy's scope, restores the latest checkpoint (or `task.initialize`), then runs loops of
`steps_per_loop` train steps inside one `tf.function`; after each loop it writes summaries, saves a
checkpoint and evaluates when their intervals are reached.

Example:
  >>> strategy = distribute_utils.get_distribution_strategy('one_device')
  >>> with strategy.scope():
  ...   task = task_factory.get_task(params.task, logging_dir=model_dir)
  >>> model, eval_logs = run_experiment(strategy, task, 'train_and_eval', params, model_dir)
"""

import logging
import math
import os
import time
from typing import Any, Dict, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras
from tensorflow.core.framework import summary_pb2

from official.core import base_task
from official.core import preemption
from official.core import config_definitions as cfg
from official.core import train_utils
from official.modeling import performance

MODES = ('train', 'eval', 'train_and_eval', 'continuous_eval')

# The `Trainer` of the latest `run_experiment` call (a hook for tests and notebooks, e.g. to check
# `last_trainer.train_loop_fn().experimental_get_tracing_count()`).
last_trainer: Optional['Trainer'] = None


def _format_eta(seconds: float) -> str:
  if not math.isfinite(seconds):
    return '?'
  minutes, seconds = divmod(int(seconds), 60)
  hours, minutes = divmod(minutes, 60)
  return f'{hours}h{minutes:02d}m' if hours else f'{minutes}m{seconds:02d}s'


def _scalar(value: Any) -> float:
  return float(np.asarray(value).reshape(-1)[0]) if np.size(value) else float('nan')


class Trainer:
  """Holds the model, optimizer, metrics, checkpoint and compiled step functions of one run.

  Args:
    strategy: the distribution strategy (everything is built in its scope).
    task: the task.
    params: the experiment config.
    model_dir: where checkpoints and summaries go.
  """

  def __init__(self, strategy: tf.distribute.Strategy, task: base_task.Task,
               params: cfg.ExperimentConfig, model_dir: str, train: bool = True):
    self.strategy, self.task, self.params, self.model_dir = strategy, task, params, model_dir
    trainer = params.trainer
    # SIGTERM/SIGINT set `stop.requested`, which the train loop reads before every step.
    self.stop = preemption.StopSignal()
    self.stopped_by: Optional[str] = None  # the signal that ended training early, if any
    with strategy.scope():
      self.model = task.build_model()
      self.optimizer = task.create_optimizer(trainer.optimizer_config, params.runtime)
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
    self.manager = tf.train.CheckpointManager(
        self.checkpoint, self.write_dir, max_to_keep=trainer.max_to_keep,
        step_counter=self.global_step)  # `_train` applies trainer.checkpoint_interval
    self._train_loop = None
    self._eval_step = None
    self.use_xla = use_xla(params.runtime, strategy)

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
      dataset = task.build_inputs(data, ctx)
      if skip_steps:
        # Each step takes one batch per replica of this pipeline.
        per_pipeline = self.strategy.num_replicas_in_sync // ctx.num_input_pipelines
        dataset = dataset.skip(skip_steps * per_pipeline)
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
        logging.warning('Checkpoint %s cannot be read (%s); trying the previous one.', path,
                        first_line)
        print(f'warning: checkpoint {path} cannot be read ({first_line}); falling back to the '
              'previous checkpoint', flush=True)
        continue
      logging.info('Restored %s at step %d', path, int(self.global_step.numpy()))
      return path
    if _checkpoints_newest_first(self.model_dir):
      raise ValueError(f'no checkpoint in {self.model_dir} can be read ({"; ".join(errors)}); '
                       'move them away to start over')
    self.task.initialize(self.model)
    return None

  # ---- compiled functions ------------------------------------------------------------------------
  def _record_loss(self, logs: Dict[str, tf.Tensor]) -> None:
    loss = tf.cast(logs[self.task.loss], tf.float32)
    weight = 1.0
    if self.params.trainer.skip_nonfinite_steps:
      # Skipped (non-finite) steps are left out of the logged loss.
      weight = tf.cast(tf.math.is_finite(loss), tf.float32)
      loss = tf.where(tf.math.is_finite(loss), loss, tf.zeros_like(loss))
    self.training_loss.update_state(loss, sample_weight=weight)
    self.loop_loss.update_state(loss, sample_weight=weight)

  def _replica_train_step(self, inputs):
    self._record_loss(self.task.train_step(inputs, self.model, self.optimizer,
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
    With XLA (`use_xla`: `runtime.enable_xla` on GPU/TPU, or with `runtime.xla_on_cpu`) the replica
    step is compiled (`jit_compile`); with several replicas only its forward and backward pass are.
    """
    if self._train_loop is None:
      step_fn = self._replica_train_step
      if self.use_xla:
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
          self.strategy.run(step_fn, args=(next(iterator),))
          self.global_step.assign_add(1)

      if self.params.trainer.train_tf_function and not self.params.runtime.run_eagerly:
        loop = tf.function(loop)
      self._train_loop = loop
    return self._train_loop

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
  def evaluate(self) -> Dict[str, float]:
    """Runs `validation_steps` eval steps (-1: the whole dataset); returns the metric results."""
    steps = self.params.trainer.validation_steps
    for metric in self.eval_metrics + [self.validation_loss]:
      metric.reset_states()
    dataset = self.strategy.distribute_datasets_from_function(
        lambda ctx: self.task.build_inputs(self.params.task.validation_data, ctx))
    step_fn = self.eval_step_fn()
    state = None
    for count, batch in enumerate(dataset):
      if 0 <= steps <= count:
        break
      outputs = step_fn(batch)
      if outputs:
        local = {k: [t.numpy() for t in self.strategy.experimental_local_results(v)]
                 for k, v in outputs.items()}
        state = self.task.aggregate_logs(state=state, step_logs=local)
    logs = {self.validation_loss.name: float(self.validation_loss.result())}
    logs.update({m.name: _scalar(m.result()) for m in self.eval_metrics})
    logs.update(self.task.reduce_aggregated_logs(state, global_step=self.global_step))
    return logs

  def learning_rate(self) -> float:
    """The learning rate at the current optimizer step."""
    lr = self.optimizer.learning_rate
    if callable(lr):
      lr = lr(self.optimizer.iterations)
    return float(tf.convert_to_tensor(lr))


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


# TensorBoard's scalar plugin metadata: `tf.summary.scalar` needs the tensorboard package, so scalars
# are written with the core `tf.summary.write` op and this metadata (TensorBoard reads them alike).
_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name='scalars'))


def _write_summaries(writer, logs: Dict[str, float], step: int) -> None:
  with writer.as_default(step=step):
    for name, value in logs.items():
      if np.ndim(value) == 0:
        tf.summary.write(name, tf.constant(float(value), tf.float32), step=step,
                         metadata=_SCALAR_METADATA)
  writer.flush()


def _summary_writer(path: str, enabled: bool):
  return tf.summary.create_file_writer(path) if enabled else tf.summary.create_noop_writer()


def _check_loss(loss: float, step: int, upper_bound: float, skip_nonfinite: bool = False) -> None:
  if skip_nonfinite and not math.isfinite(loss):
    logging.warning('every step of the loop ending at step %d had a non-finite loss; their '
                    'updates were skipped (trainer.skip_nonfinite_steps)', step)
    return
  if not math.isfinite(loss) or loss > upper_bound:
    raise RuntimeError(f'training loss is {loss} at step {step} (non-finite or above '
                       f'trainer.loss_upper_bound={upper_bound}); stopping. The last good checkpoint '
                       'is kept in model_dir.')


def _train(trainer: Trainer, evaluate_every: Optional[int], save_summary: bool
           ) -> Dict[str, float]:
  """The train loop (and periodic evaluation); returns the last eval logs."""
  params = trainer.params.trainer
  train_dir = os.path.join(trainer.write_dir, 'train')
  eval_dir = os.path.join(trainer.write_dir, params.validation_summary_subdir)
  train_writer = _summary_writer(train_dir, save_summary)
  eval_writer = _summary_writer(eval_dir, save_summary) if evaluate_every else None
  if params.summary_interval % params.steps_per_loop:
    logging.warning('trainer.summary_interval (%d) is not a multiple of steps_per_loop (%d): '
                    'summaries are written at the end of the loop that crosses it.',
                    params.summary_interval, params.steps_per_loop)
  if params.checkpoint_interval % params.steps_per_loop:
    logging.warning('trainer.checkpoint_interval (%d) is not a multiple of steps_per_loop (%d): '
                    'checkpoints are saved at the end of the first loop at least '
                    'checkpoint_interval steps after the previous one.',
                    params.checkpoint_interval, params.steps_per_loop)
  step = int(trainer.global_step.numpy())
  iterator = trainer.train_iterator
  if iterator is None:  # several replicas: built after the restore, skipping consumed batches
    iterator = trainer._make_train_iterator(skip_steps=step)  # pylint: disable=protected-access
  loop = trainer.train_loop_fn()
  preemption_handler = _multi_worker_preemption_handler(trainer)
  start_step, start_time = step, time.time()
  last_saved_step = step  # the restored checkpoint's step (0 for a new run)
  window_start, window_time = step, time.time()
  eval_logs: Dict[str, float] = {}
  while step < params.train_steps:
    num_steps = min(params.steps_per_loop, params.train_steps - step)
    if evaluate_every:
      num_steps = min(num_steps, evaluate_every - step % evaluate_every)
    loop_start = time.time()
    loop(iterator, tf.constant(num_steps, tf.int32))
    previous_step, step = step, int(trainer.global_step.numpy())
    if trainer.stop.signal_name:  # set with `stop.requested`, which ended the loop early
      _save_after_stop(trainer, step, trainer.stop.signal_name)
      return eval_logs
    num_steps = step - previous_step
    loss = float(trainer.loop_loss.result())
    trainer.loop_loss.reset_states()
    _check_loss(loss, step, params.loss_upper_bound, params.skip_nonfinite_steps)
    elapsed = time.time() - loop_start
    rate = num_steps / max(elapsed, 1e-9)
    done = (step - start_step) / max(time.time() - start_time, 1e-9)
    eta = (params.train_steps - step) / done if done > 0 else float('inf')
    print(f'step {step}/{params.train_steps} | loss {loss:.4f} | {rate:.2f} steps/s | '
          f'ETA {_format_eta(eta)}', flush=True)
    if step // params.summary_interval > (step - num_steps) // params.summary_interval or \
        step == params.train_steps:
      logs = {'training_loss': float(trainer.training_loss.result()),
              'learning_rate': trainer.learning_rate(),
              'steps_per_second': (step - window_start) / max(time.time() - window_time, 1e-9)}
      logs.update({m.name: _scalar(m.result()) for m in trainer.train_metrics})
      _write_summaries(train_writer, logs, step)
      for metric in trainer.train_metrics + [trainer.training_loss]:
        metric.reset_states()
      window_start, window_time = step, time.time()
    if step - last_saved_step >= params.checkpoint_interval:
      trainer.manager.save(checkpoint_number=step, check_interval=False)
      last_saved_step = step
    if preemption_handler is not None:
      try:
        preemption_handler.save_checkpoint_if_preempted(checkpoint_number=step,
                                                        check_interval=False)
      except _Preempted:
        trainer.stopped_by = 'SIGTERM'
        print(f'SIGTERM (preemption) on a worker: all workers saved a checkpoint at step {step}; '
              'rerun the same command to resume.', flush=True)
        return eval_logs
    if evaluate_every and (step % evaluate_every == 0 or step == params.train_steps):
      eval_logs = trainer.evaluate()
      _write_summaries(eval_writer, eval_logs, step)
      print(f'eval at step {step}: ' + ', '.join(f'{k} {v:.4f}' for k, v in eval_logs.items()),
            flush=True)
  if trainer.manager.latest_checkpoint is None or \
      not trainer.manager.latest_checkpoint.endswith(f'-{step}'):
    trainer.manager.save(checkpoint_number=step, check_interval=False)
  return eval_logs


class _Preempted(Exception):
  """Raised by the multi-worker preemption handler once every worker has saved."""


def _raise_preempted() -> None:
  raise _Preempted()


def _multi_worker_preemption_handler(trainer: Trainer):
  """TensorFlow's `PreemptionCheckpointHandler` for multi-worker runs (None otherwise).

  On SIGTERM to any worker, all workers agree on a loop after which every one of them saves (the
  chief into `model_dir`); then training ends normally (exit code 0) instead of the handler's
  default exit.
  """
  if not _is_multi_worker(trainer.strategy):
    return None
  config = tf.distribute.experimental.TerminationConfig(exit_fn=_raise_preempted)
  return tf.distribute.experimental.PreemptionCheckpointHandler(
      trainer.strategy.cluster_resolver, trainer.manager, termination_config=config)


def _is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
  resolver = getattr(strategy, 'cluster_resolver', None)
  return bool(resolver is not None and resolver.cluster_spec().jobs and
              isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy))


def _save_after_stop(trainer: Trainer, step: int, reason: str) -> None:
  """Saves a checkpoint at `step` after a signal stopped the train loop."""
  trainer.stopped_by = reason
  latest = trainer.manager.latest_checkpoint
  if latest is None or not latest.endswith(f'-{step}'):
    latest = trainer.manager.save(checkpoint_number=step, check_interval=False)
  print(f'{reason}: saved {latest} at step {step}; rerun the same command to resume.',
        flush=True)


def _evaluate_checkpoint(trainer: Trainer, checkpoint_path: str, save_summary: bool
                         ) -> Dict[str, float]:
  trainer.checkpoint.restore(checkpoint_path).expect_partial()
  step = int(trainer.global_step.numpy())
  logs = trainer.evaluate()
  eval_dir = os.path.join(trainer.write_dir, trainer.params.trainer.validation_summary_subdir)
  _write_summaries(_summary_writer(eval_dir, save_summary), logs, step)
  print(f'eval of {os.path.basename(checkpoint_path)} (step {step}): ' +
        ', '.join(f'{k} {v:.4f}' for k, v in logs.items()), flush=True)
  return logs


def run_experiment(distribution_strategy: Optional[tf.distribute.Strategy], task: base_task.Task,
                   mode: str, params: cfg.ExperimentConfig, model_dir: str,
                   run_post_eval: bool = False, save_summary: bool = True,
                   allow_config_change: bool = False
                   ) -> Tuple[tf_keras.Model, Dict[str, float]]:
  """Runs `mode` ('train', 'eval', 'train_and_eval', 'continuous_eval') of an experiment.

  Training stops cleanly on SIGTERM or SIGINT: the step in progress finishes, a checkpoint is saved
  at that step and the function returns (`last_trainer.stopped_by` names the signal). With
  `runtime.deterministic` the run is seeded, uses deterministic ops, and keeps its dropout random
  state in the checkpoint, so a resumed run ends with the weights of an uninterrupted one.

  Args:
    distribution_strategy: the strategy to build and run in (None: the default strategy).
    task: the task (built from `params.task`).
    mode: what to run.
    params: the experiment config.
    model_dir: checkpoints, summaries and `params.yaml`.
    run_post_eval: evaluate once more after training (mode 'train').
    save_summary: write TensorBoard summaries.
    allow_config_change: train in a `model_dir` whose `params.yaml` differs from `params` in
      keys that affect the result (otherwise a ValueError lists them).

  Returns:
    The model and the last evaluation's logs (empty when nothing was evaluated).

  Raises:
    ValueError: an unknown mode, 'eval' without a checkpoint, or an incompatible `params.yaml`.
  """
  if mode not in MODES:
    raise ValueError(f'--mode: unknown mode {mode!r}; expected one of {list(MODES)}')
  distribution_strategy = distribution_strategy or tf.distribute.get_strategy()
  performance.set_mixed_precision_policy(params.runtime.mixed_precision_dtype)
  train_utils.apply_runtime_determinism(params.runtime)
  training = mode in ('train', 'train_and_eval')
  if training:
    train_utils.check_config_compatible(params, model_dir, allow_config_change)
    if train_utils.is_chief(distribution_strategy):
      train_utils.write_params(params, model_dir)  # evaluation keeps the training run's params.yaml
  global last_trainer
  trainer = Trainer(distribution_strategy, task, params, model_dir, train=training)
  last_trainer = trainer
  try:
    if training and not _is_multi_worker(distribution_strategy):
      with trainer.stop:  # multi-worker runs use TensorFlow's preemption handler instead
        return trainer.model, _run_mode(trainer, mode, run_post_eval, save_summary)
    return trainer.model, _run_mode(trainer, mode, run_post_eval, save_summary)
  finally:
    if trainer.write_dir != model_dir:  # a non-chief worker's private copy
      tf.io.gfile.rmtree(trainer.write_dir)


def _run_mode(trainer: Trainer, mode: str, run_post_eval: bool, save_summary: bool
              ) -> Dict[str, float]:
  """Runs `mode` with a built trainer; returns the last evaluation's logs."""
  params, model_dir = trainer.params, trainer.model_dir
  if mode in ('train', 'train_and_eval'):
    trainer.restore_or_initialize()
    every = params.trainer.validation_interval if mode == 'train_and_eval' else None
    eval_logs = _train(trainer, every, save_summary)
    if run_post_eval and not eval_logs and not trainer.stopped_by:
      eval_logs = trainer.evaluate()
    return eval_logs
  if mode == 'eval':
    latest = tf.train.latest_checkpoint(model_dir)
    if not latest:
      raise ValueError(f'--mode=eval: no checkpoint in {model_dir}')
    return _evaluate_checkpoint(trainer, latest, save_summary)
  eval_logs = {}
  for path in tf.train.checkpoints_iterator(model_dir,
                                            timeout=params.trainer.continuous_eval_timeout):
    eval_logs = _evaluate_checkpoint(trainer, path, save_summary)
    if int(trainer.global_step.numpy()) >= params.trainer.train_steps:
      break
  return eval_logs
