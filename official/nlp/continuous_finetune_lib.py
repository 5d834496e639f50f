"""Continuous fine-tuning: fine-tunes and evaluates every new checkpoint of a pretraining run
(mode `continuous_train_and_eval`).

Example:
  >>> run_continuous_finetune('continuous_train_and_eval', params, 'runs/glue_sst2',
  ...                         pretrain_steps=100_000)
"""

import logging
import os
import time
from typing import Dict, Optional

import numpy as np
import tensorflow as tf

from official.common import distribute_utils
from official.common import nested
from official.core import best_checkpoint
from official.core import checkpointing
from official.core import config_definitions as cfg
from official.core import model_dir_lock
from official.core import progress
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.modeling import custom_gradient_release


def run_continuous_finetune(mode: str, params: cfg.ExperimentConfig, model_dir: str,
                            run_post_eval: bool = False, pretrain_steps: Optional[int] = None,
                            distribution_strategy: Optional[tf.distribute.Strategy] = None,
                            poll_seconds: float = 10.0) -> Dict[str, float]:
  """Mode `continuous_train_and_eval`: fine-tunes and evaluates every new checkpoint of a
  pretraining run.

  `task.init_checkpoint` names the pretraining run's directory. For each new checkpoint there
  (step S), the checkpoints of `model_dir` are removed, the task is fine-tuned from it in
  `train_and_eval` mode (without TensorBoard summaries of its own; the best checkpoint, when
  configured, goes to `<best_checkpoint_export_subdir>_S` and the evaluation logs get
  `best_<best_checkpoint_eval_metric>`), its final evaluation is written to
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
    distribution_strategy: the strategy (None: from `params.runtime`,
      `distribute_utils.strategy_from_runtime`).
    poll_seconds: how often to look for the pretraining directory before it exists.

  Returns:
    The last evaluation's logs when `run_post_eval`, else {}.

  Raises:
    ValueError: another mode, or `task.init_checkpoint` is not (and does not become within
      `continuous_eval_timeout`) a directory.
  """
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
  strategy = distribution_strategy or distribute_utils.strategy_from_runtime(params.runtime)
  train_utils.check_model_dir(model_dir)
  with model_dir_lock.ModelDirLock(model_dir):  # the fine-tuning runs re-enter it
    return _continuous_finetune(params, model_dir, pretrain_dir, strategy, pretrain_steps,
                                run_post_eval)


def _continuous_finetune(params: cfg.ExperimentConfig, model_dir: str, pretrain_dir: str,
                         strategy: tf.distribute.Strategy, pretrain_steps: Optional[int],
                         run_post_eval: bool) -> Dict[str, float]:
  """The loop of `run_continuous_finetune` (while holding the lock of `model_dir`)."""
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
    checkpointing.remove_ckpts(model_dir)
    pretrain_step = checkpointing.read_global_step_from_checkpoint(checkpoint)
    trainer_overrides = {}
    if params.trainer.best_checkpoint_export_subdir:
      trainer_overrides['best_checkpoint_export_subdir'] = (
          f'{params.trainer.best_checkpoint_export_subdir}_{pretrain_step}')
    run_params = params.replace(task={'init_checkpoint': checkpoint}, trainer=trainer_overrides)
    logging.info('fine-tuning from %s (pretraining step %d)', checkpoint, pretrain_step)
    with strategy.scope():
      task = task_factory.get_task(run_params.task, logging_dir=model_dir)
    # One model per pretraining checkpoint: let each one's traced graphs go when it is done.
    with custom_gradient_release.released_custom_gradients():
      _, eval_logs = train_lib.run_experiment(strategy, task, 'train_and_eval', run_params,
                                              model_dir, run_post_eval=True, save_summary=False,
                                              allow_config_change=True)
    exporter = best_checkpoint.maybe_create_best_ckpt_exporter(run_params, model_dir)
    if exporter is not None and exporter.best_ckpt_logs is not None:
      # As Model Garden's trainer reports it: the best value of this fine-tuning run so far.
      metric = params.trainer.best_checkpoint_eval_metric
      eval_logs = {**eval_logs, f'best_{metric}': exporter.metric_value(exporter.best_ckpt_logs)}
    train_utils.write_json_summary(model_dir, pretrain_step, eval_logs)
    group = f'{os.path.basename(os.path.normpath(model_dir))}_{task.name}'
    scalars = {f'{group}/{k}': float(np.asarray(v).reshape(-1)[0])
               for k, v in nested.flatten(eval_logs, separator='-').items() if np.size(v) == 1}
    train_utils.write_scalar_summaries(writer, scalars, pretrain_step)
    print(f'fine-tuned from pretraining step {pretrain_step}: {progress.log_line(eval_logs)}',
          flush=True)
    checkpointing.remove_ckpts(model_dir)
  return eval_logs if run_post_eval else {}
