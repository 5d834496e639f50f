"""The best checkpoint of a run: kept by evaluation metric in `model_dir/<subdir>/best_ckpt-N`.

Example:
  >>> exporter = maybe_create_best_ckpt_exporter(params, model_dir)   # None unless configured
  >>> exporter.maybe_export_checkpoint(checkpoint, {'accuracy': 0.9}, global_step=1000)   # True
"""

import json
import logging
import os
from typing import Any, Dict, Optional

import numpy as np
import tensorflow as tf

from official.common import nested
from official.core import checkpointing
from official.core import config_definitions as cfg

BEST_CHECKPOINT_NAME = 'best_ckpt'


class BestCheckpointExporter:
  """Keeps the checkpoint with the best evaluation metric in `export_dir` (`best_ckpt-N`), and
  its evaluation logs in `export_dir/info.json` (plus `best_ckpt_global_step`).

  The best value survives restarts: it is read back from `info.json`.

  Args:
    export_dir: the directory (`model_dir/<trainer.best_checkpoint_export_subdir>`).
    metric_name: the eval log to compare; '|' separates the keys of nested logs
      ('squad|f1').
    metric_comp: 'higher' or 'lower' (which is better).

  Raises:
    ValueError: `metric_comp` is neither.

  Example:
    >>> exporter = BestCheckpointExporter(f'{model_dir}/best', 'accuracy', 'higher')
    >>> exporter.maybe_export_checkpoint(checkpoint, {'accuracy': 0.9}, global_step=1000)   # True
  """

  def __init__(self, export_dir: str, metric_name: str, metric_comp: str):
    if metric_comp not in ('higher', 'lower'):
      raise ValueError('trainer.best_checkpoint_metric_comp: best checkpoint metric comp must be '
                       f'one of higher, lower. Got: {metric_comp!r}')
    if not metric_name:
      raise ValueError('trainer.best_checkpoint_eval_metric is required with '
                       'trainer.best_checkpoint_export_subdir')
    self._export_dir = export_dir
    self._metric_path = metric_name.split('|')
    self._metric_comp = metric_comp
    tf.io.gfile.makedirs(export_dir)
    self._best_ckpt_logs = None
    if tf.io.gfile.exists(self.best_ckpt_logs_path):
      with tf.io.gfile.GFile(self.best_ckpt_logs_path, 'r') as f:
        self._best_ckpt_logs = json.loads(f.read())
    self._manager = None

  @property
  def export_dir(self) -> str:
    return self._export_dir

  @property
  def best_ckpt_logs(self) -> Optional[Dict[str, Any]]:
    """The eval logs of the best checkpoint so far (None before the first)."""
    return self._best_ckpt_logs

  @property
  def best_ckpt_logs_path(self) -> str:
    return os.path.join(self._export_dir, 'info.json')

  @property
  def best_ckpt_path(self) -> Optional[str]:
    """The best checkpoint's path, or None when none was exported yet."""
    return tf.train.latest_checkpoint(self._export_dir)

  def metric_value(self, eval_logs: Dict[str, Any]) -> float:
    """The compared metric of `eval_logs` as a float.

    Raises:
      KeyError: the logs have no such metric (naming the configured name).
    """
    try:
      value = nested.get_leaf_nested_dict(eval_logs, self._metric_path)
    except KeyError as e:
      raise KeyError(f'trainer.best_checkpoint_eval_metric={"|".join(self._metric_path)!r}: '
                     f'not among the eval logs {sorted(eval_logs)} ({e.args[0]})') from None
    return float(np.asarray(value.numpy() if hasattr(value, 'numpy') else value).reshape(-1)[0])

  def _is_better(self, eval_logs: Dict[str, Any]) -> bool:
    if self._best_ckpt_logs is None:
      return True
    old, new = self.metric_value(self._best_ckpt_logs), self.metric_value(eval_logs)
    return new > old if self._metric_comp == 'higher' else new < old

  def maybe_export_checkpoint(self, checkpoint: tf.train.Checkpoint, eval_logs: Dict[str, Any],
                              global_step: int, write_logs: bool = True) -> bool:
    """Saves `checkpoint` as the best one when `eval_logs` beat the best so far.

    Args:
      checkpoint: the checkpoint to save.
      eval_logs: the evaluation's logs (nested dicts allowed).
      global_step: the step evaluated (recorded in `info.json`).
      write_logs: write `info.json`.

    Returns:
      Whether the checkpoint was exported (never when its variables hold NaN or Inf).
    """
    if not self._is_better(eval_logs):
      return False
    if not checkpointing.checkpoint_is_finite(checkpoint):
      logging.warning('step %d: the weights hold NaN or Inf; not exported as the best checkpoint '
                      'to %s', int(global_step), self._export_dir)
      return False
    self._best_ckpt_logs = eval_logs
    if write_logs:
      self.export_best_eval_metric(eval_logs, global_step)
    if self._manager is None or self._manager.checkpoint is not checkpoint:
      self._manager = tf.train.CheckpointManager(checkpoint, directory=self._export_dir,
                                                 max_to_keep=1,
                                                 checkpoint_name=BEST_CHECKPOINT_NAME)
    path = self._manager.save()
    logging.info('new best %s = %g at step %d: saved %s', '|'.join(self._metric_path),
                 self.metric_value(eval_logs), int(global_step), path)
    return True

  def export_best_eval_metric(self, eval_logs: Dict[str, Any], global_step: int) -> None:
    """Writes the scalar eval logs and `best_ckpt_global_step` to `info.json`."""
    logs = nested.scalar_leaves(eval_logs)
    logs['best_ckpt_global_step'] = float(global_step)
    with tf.io.gfile.GFile(self.best_ckpt_logs_path, 'w') as f:
      f.write(json.dumps(logs, indent=2) + '\n')


def maybe_create_best_ckpt_exporter(params: cfg.ExperimentConfig, data_dir: str
                                    ) -> Optional[BestCheckpointExporter]:
  """A `BestCheckpointExporter` in `data_dir/<trainer.best_checkpoint_export_subdir>` when the
  trainer config asks for one (subdir and metric set), else None."""
  trainer = params.trainer
  if not (data_dir and trainer.best_checkpoint_export_subdir and
          trainer.best_checkpoint_eval_metric):
    return None
  return BestCheckpointExporter(os.path.join(data_dir, trainer.best_checkpoint_export_subdir),
                                trainer.best_checkpoint_eval_metric,
                                trainer.best_checkpoint_metric_comp)
