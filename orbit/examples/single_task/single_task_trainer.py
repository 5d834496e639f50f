"""`SingleTaskTrainer`: an Orbit trainer for one model, one loss and one labelled dataset.

The smallest useful `orbit.StandardTrainer`: each step pops the label out of a dict batch,
runs the model on the rest, and applies the gradients of the mean loss; the loss and the
metrics are reset at the start of every loop and returned at its end.

Example:
  >>> trainer = SingleTaskTrainer(dataset, label_key='label', model=model,
  ...                             loss_fn=tf_keras.losses.sparse_categorical_crossentropy,
  ...                             optimizer=tf_keras.optimizers.SGD(0.01))
  >>> controller = orbit.Controller(trainer=trainer, steps_per_loop=100,
  ...                               global_step=trainer.optimizer.iterations)
  >>> controller.train(500)
  >>> trainer.train_loss.result()
"""

from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import tensorflow as tf
import tf_keras

import orbit

Metrics = Union[None, tf_keras.metrics.Metric, Sequence[tf_keras.metrics.Metric]]


def as_metric_list(metrics: Metrics) -> List[tf_keras.metrics.Metric]:
  """`metrics` (None, one metric or several) as a list."""
  if metrics is None:
    return []
  if isinstance(metrics, (list, tuple)):
    return list(metrics)
  return [metrics]


class SingleTaskTrainer(orbit.StandardTrainer):
  """Trains `model` on `train_dataset` with `loss_fn` and `optimizer`.

  Build it inside a strategy's scope to train under that strategy.

  Args:
    train_dataset: a dataset (or distributed dataset) of dicts of tensors.
    label_key: the key of the label; it is removed from the batch the model sees.
    model: a Keras model (or `tf.Module`) taking the remaining dict and a `training` argument.
    loss_fn: `loss_fn(labels, outputs)`, per example (reduced here with a mean); a
      `tf_keras.losses.Loss` should use `reduction=NONE` under several replicas.
    optimizer: a `tf_keras` optimizer.
    metrics: extra metrics updated with `(labels, outputs)` at every step.
    trainer_options: an `orbit.StandardTrainerOptions`.

  Attributes:
    train_loss: the mean loss of the current loop (`training_loss`).
  """

  def __init__(self, train_dataset: Any, label_key: str, model: tf.Module,
               loss_fn: Callable[[tf.Tensor, tf.Tensor], tf.Tensor],
               optimizer: tf_keras.optimizers.Optimizer, metrics: Metrics = None,
               trainer_options: Optional[orbit.StandardTrainerOptions] = None):
    self.label_key = label_key
    self.model = model
    self.loss_fn = loss_fn
    self.optimizer = optimizer
    self.strategy = tf.distribute.get_strategy()
    self.train_loss = tf_keras.metrics.Mean('training_loss', dtype=tf.float32)
    self.metrics = as_metric_list(metrics)
    super().__init__(train_dataset=train_dataset, options=trainer_options)

  def train_loop_begin(self) -> None:
    """Resets the loss and the metrics."""
    for metric in [self.train_loss] + self.metrics:
      metric.reset_states()

  def train_step(self, iterator: Any) -> None:
    """One step on the next batch of `iterator`, on every replica."""

    def replica_step(inputs: Dict[str, tf.Tensor]) -> None:
      inputs = dict(inputs)
      labels = inputs.pop(self.label_key)
      with tf.GradientTape() as tape:
        outputs = self.model(inputs, training=True)
        loss = tf.reduce_mean(self.loss_fn(labels, outputs))
        # Gradients are summed across replicas: scale so that their sum is the global mean's.
        scaled_loss = loss / self.strategy.num_replicas_in_sync
      variables = self.model.trainable_variables
      self.optimizer.apply_gradients(zip(tape.gradient(scaled_loss, variables), variables))
      self.train_loss.update_state(loss)
      for metric in self.metrics:
        metric.update_state(labels, outputs)

    self.strategy.run(replica_step, args=(next(iterator),))

  def train_loop_end(self) -> Dict[str, tf.Tensor]:
    """{metric name: result} of the loop, with `training_loss`."""
    with self.strategy.scope():
      logs = {metric.name: metric.result() for metric in self.metrics}
      logs[self.train_loss.name] = self.train_loss.result()
    return logs
