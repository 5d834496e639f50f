"""The experiment runner: runs a mode ('train', 'eval', 'train_and_eval', ...) of an experiment.

`run_experiment` (Model Garden's entry point) builds an `OrbitExperimentRunner`, which takes the
`model_dir` lock, writes `params.yaml`, builds the `trainer.Trainer` and hands it to an
`orbit.Controller`; the controller restores the latest checkpoint (or `task.initialize`), trains,
writes summaries, saves checkpoints and evaluates when their intervals are reached; its actions stop
on preemption and keep the best checkpoint. Continuous fine-tuning is
`official.nlp.continuous_finetune_lib`.

Example:
  >>> strategy = distribute_utils.get_distribution_strategy('one_device')
  >>> with strategy.scope():
  ...   task = task_factory.get_task(params.task, logging_dir=model_dir)
  >>> model, eval_logs = run_experiment(strategy, task, 'train_and_eval', params, model_dir)
  >>> result = run_experiment_with_trainer(strategy, task, 'train', params, model_dir)
  >>> int(result.trainer.global_step.numpy())   # the step reached
"""

import logging
import os
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import orbit
import tensorflow as tf
import tf_keras

from official.core import actions as actions_lib
from official.core import base_task
from official.core import best_checkpoint
from official.core import config_definitions as cfg
from official.core import model_dir_lock
from official.core import model_dir_snapshot
from official.core import progress
from official.core import time_budget
from official.core import train_utils
from official.core import trainer as trainer_lib
from official.modeling import performance

MODES = ('train', 'eval', 'train_and_eval', 'train_and_post_eval', 'continuous_eval')

# Model Garden's name in this module.
maybe_create_best_ckpt_exporter = best_checkpoint.maybe_create_best_ckpt_exporter


class _Preempted(Exception):
  """Raised by the multi-worker preemption handler once every worker has saved."""


def _raise_preempted() -> None:
  raise _Preempted()


def _save_after_stop(trainer: trainer_lib.Trainer, step: int, reason: str) -> None:
  """Saves a checkpoint at `step` after a signal stopped the train loop."""
  trainer.stopped_by = reason
  path = trainer.manager.save_at(step)
  logging.warning('%s: saved %s at step %d; rerun the same command to resume.', reason, path,
                  step)


class _Controller(orbit.Controller):
  """`orbit.Controller` restoring through `Trainer.restore_or_initialize`, which skips a
  truncated or corrupt latest checkpoint instead of failing on it."""

  def restore_checkpoint(self, checkpoint_path: Optional[str] = None) -> Optional[str]:
    if checkpoint_path is None and isinstance(self.trainer or self.evaluator, trainer_lib.Trainer):
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
               trainer: Optional[trainer_lib.Trainer] = None, controller_cls=None,
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
    dtype = params.runtime.mixed_precision_dtype
    policy = performance.set_mixed_precision_policy(dtype)
    if dtype == performance.AUTO:
      logging.info('runtime.mixed_precision_dtype: auto -> %s', policy)
    emulated = performance.emulated_bfloat16_warning(dtype)
    if emulated:
      logging.warning('runtime.mixed_precision_dtype: %s', emulated)
    train_utils.apply_runtime_determinism(params.runtime)
    # One writer per model_dir: training takes its lock (the chief only: other workers write
    # into private directories) before writing anything; `run` releases it.
    self._lock: Optional[model_dir_lock.ModelDirLock] = None
    # A start that fails before the first step leaves model_dir as it found it.
    self._snapshot: Optional[model_dir_snapshot.ModelDirSnapshot] = None
    if self._training and train_utils.is_chief(self.strategy):
      self._snapshot = model_dir_snapshot.ModelDirSnapshot.take(model_dir)
      train_utils.check_model_dir(model_dir)
      self._lock = model_dir_lock.ModelDirLock(model_dir).acquire()
    try:
      if self._training:
        train_utils.check_config_compatible(params, model_dir, allow_config_change)
        if self._lock is not None:
          train_utils.write_params(params, model_dir)  # evaluation keeps the training run's
          if hasattr(task, 'write_model_dir_assets'):  # e.g. the records' vocabulary
            task.write_model_dir_assets(model_dir)
      self._trainer = trainer or trainer_lib.Trainer(self.strategy, task, params, model_dir,
                                                     train=self._training)
    except BaseException:
      self.release_lock()
      self._put_back_untrained()
      raise
    self._controller = None

  def _put_back_untrained(self) -> None:
    """After a failure: model_dir as it was, if no step ran (and no checkpoint is there)."""
    trainer = getattr(self, '_trainer', None)
    if self._snapshot is not None and (trainer is None or not trainer.train_steps_run):
      self._snapshot.put_back()

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
  def trainer(self) -> trainer_lib.Trainer:
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
    if (train_utils.is_multi_worker(self.strategy) and
        self.params.trainer.preemption_on_demand_checkpoint):
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
      exporter = best_checkpoint.maybe_create_best_ckpt_exporter(self.params, self.model_dir)
      if exporter is not None:
        actions.append(lambda logs: exporter.maybe_export_checkpoint(
            trainer.checkpoint, logs, int(trainer.global_step.numpy())))
      # With `optimizer_config.ema`: the averaged weights into model_dir/ema_checkpoints.
      actions.extend(actions_lib.get_eval_actions(self.params, trainer, self.model_dir))
    if self._mode in ('train_and_eval', 'train_and_post_eval') or self._run_post_eval:
      # A result: stdout (the controller's own eval lines are DEBUG here).
      actions.append(lambda logs: print(
          f'eval at step {int(trainer.global_step.numpy())}: {progress.log_line(logs)}'
          f'{progress.eval_note(trainer.last_eval)}', flush=True))
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
    failed = True
    try:
      if self._training and not train_utils.is_multi_worker(self.strategy):
        with trainer.stop:  # multi-worker runs use TensorFlow's preemption handler instead
          logs = self._run_mode()
      else:
        logs = self._run_mode()
      failed = False
      return trainer.model, logs
    finally:
      if trainer.write_dir != self.model_dir:  # a non-chief worker's private copy
        tf.io.gfile.rmtree(trainer.write_dir)
      self.release_lock()
      if failed:
        self._put_back_untrained()

  def _run_mode(self) -> Dict[str, float]:
    """Runs the mode; the last evaluation's logs with `run_post_eval` (or in
    'train_and_post_eval'), else {} (Model Garden's contract)."""
    logs = self._run_and_evaluate()
    if self._training and self._trainer.train_steps_run:
      print(self._trainer.run_summary(), flush=True)
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
      if trainer.budget is not None:
        logs = time_budget.train_within_budget(controller, trainer, mode, self._run_post_eval)
      elif mode == 'train_and_eval':
        logs = controller.train_and_evaluate(train_steps=params.train_steps,
                                             eval_steps=params.validation_steps,
                                             eval_interval=params.validation_interval) or {}
      else:
        controller.train(steps=params.train_steps)
    except trainer_lib.StopRequested as stop:
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
          f': {progress.log_line(logs)}{progress.eval_note(trainer.last_eval)}', flush=True)
    return dict(logs)


def run_experiment(distribution_strategy: Optional[tf.distribute.Strategy], task: base_task.Task,
                   mode: str, params: cfg.ExperimentConfig, model_dir: str,
                   run_post_eval: bool = False, save_summary: bool = True,
                   allow_config_change: bool = False,
                   train_actions: Optional[List[orbit.Action]] = None,
                   eval_actions: Optional[List[orbit.Action]] = None,
                   trainer: Optional[trainer_lib.Trainer] = None, controller_cls=None,
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
  result = run_experiment_with_trainer(
      distribution_strategy, task, mode, params, model_dir, run_post_eval=run_post_eval,
      save_summary=save_summary, train_actions=train_actions, eval_actions=eval_actions,
      trainer=trainer, controller_cls=controller_cls, summary_manager=summary_manager,
      eval_summary_manager=eval_summary_manager,
      enable_async_checkpointing=enable_async_checkpointing,
      allow_config_change=allow_config_change)
  return result.model, result.eval_logs


class ExperimentResult(NamedTuple):
  """What `run_experiment_with_trainer` returns.

  Attributes:
    model: the trained (or evaluated) model.
    eval_logs: as `run_experiment` returns them.
    trainer: the `Trainer` that ran (its `global_step`, `optimizer`, `ema`, `stopped_by`, ...).
  """
  model: tf_keras.Model
  eval_logs: Dict[str, float]
  trainer: trainer_lib.Trainer


def run_experiment_with_trainer(distribution_strategy: Optional[tf.distribute.Strategy],
                                task: base_task.Task, mode: str, params: cfg.ExperimentConfig,
                                model_dir: str, **runner_options: Any) -> ExperimentResult:
  """`run_experiment`, returning the `Trainer` that ran with the model and the logs.

  For callers that need the step reached or the trainer's state after the run (the Python API,
  tests); `run_experiment` keeps Model Garden's `(model, eval_logs)`.

  Args:
    distribution_strategy, task, mode, params, model_dir: as `run_experiment`.
    **runner_options: `run_experiment`'s keyword arguments (`run_post_eval`, `save_summary`,
      `allow_config_change`, `train_actions`, ...), passed to `OrbitExperimentRunner`.

  Raises:
    As `run_experiment`; TypeError: an unknown keyword argument.

  Example:
    >>> result = run_experiment_with_trainer(strategy, task, 'train', params, model_dir)
    >>> int(result.trainer.global_step.numpy())
    1000
  """
  runner = OrbitExperimentRunner(distribution_strategy, task, mode, params, model_dir,
                                 **runner_options)
  model, eval_logs = runner.run()
  return ExperimentResult(model, eval_logs, runner.trainer)


