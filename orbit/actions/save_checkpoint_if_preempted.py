"""`SaveCheckpointIfPreempted`: a train action saving a checkpoint when the cluster is being
preempted (TensorFlow's `PreemptionCheckpointHandler`)."""

from typing import Callable, Optional

import tensorflow as tf


class SaveCheckpointIfPreempted:
  """After every train loop, saves a checkpoint on all workers once a preemption notice arrived.

  Args:
    cluster_resolver: the cluster of the multi-worker (or TPU) strategy.
    checkpoint_manager: the manager saving the checkpoint.
    checkpoint_number: the number of the saved checkpoint (e.g. the global step).
    keep_running_after_save: continue training after saving (False: the handler exits the
      process, the usual way to end before the preemption happens).
    exit_fn: called after the save instead of exiting (e.g. raising an exception that ends
      training normally); an mlm-garden addition, ignored with `keep_running_after_save`.
  """

  def __init__(self, cluster_resolver: tf.distribute.cluster_resolver.ClusterResolver,
               checkpoint_manager: tf.train.CheckpointManager,
               checkpoint_number: Optional[tf.Variable] = None,
               keep_running_after_save: Optional[bool] = False,
               exit_fn: Optional[Callable[[], None]] = None):
    config = None
    if keep_running_after_save:
      config = tf.distribute.experimental.TerminationConfig(exit_fn=lambda: None)
    elif exit_fn is not None:
      config = tf.distribute.experimental.TerminationConfig(exit_fn=exit_fn)
    self._handler = tf.distribute.experimental.PreemptionCheckpointHandler(
        cluster_resolver, checkpoint_manager, termination_config=config)
    self._checkpoint_number = checkpoint_number

  def __call__(self, _) -> None:
    kwargs = {}
    if self._checkpoint_number is not None:
      kwargs['checkpoint_number'] = self._checkpoint_number
    self._handler.save_checkpoint_if_preempted(check_interval=False, **kwargs)
