"""`SingleTaskEvaluator`: an Orbit evaluator for one model and one labelled dataset.

Each step pops the label out of a dict batch, runs the model on the rest and updates the
metrics; they are reset when an evaluation begins and returned when it ends.

Example:
  >>> evaluator = SingleTaskEvaluator(eval_dataset, label_key='label', model=model,
  ...                                 metrics=tf_keras.metrics.SparseCategoricalAccuracy())
  >>> controller = orbit.Controller(trainer=trainer, evaluator=evaluator,
  ...                               global_step=trainer.optimizer.iterations)
  >>> controller.evaluate()   # {'sparse_categorical_accuracy': ...}
"""

from typing import Any, Dict, Optional

import tensorflow as tf

import orbit
from orbit.examples.single_task import single_task_trainer


class SingleTaskEvaluator(orbit.StandardEvaluator):
  """Evaluates `model` on `eval_dataset` with `metrics`.

  Build it inside a strategy's scope to evaluate under that strategy.

  Args:
    eval_dataset: a dataset (or distributed dataset) of dicts of tensors.
    label_key: the key of the label; it is removed from the batch the model sees.
    model: a Keras model (or `tf.Module`) taking the remaining dict.
    metrics: one metric or a list, updated with `(labels, outputs)`.
    evaluator_options: an `orbit.StandardEvaluatorOptions`.
  """

  def __init__(self, eval_dataset: Any, label_key: str, model: tf.Module,
               metrics: single_task_trainer.Metrics,
               evaluator_options: Optional[orbit.StandardEvaluatorOptions] = None):
    self.label_key = label_key
    self.model = model
    self.metrics = single_task_trainer.as_metric_list(metrics)
    self.strategy = tf.distribute.get_strategy()
    super().__init__(eval_dataset=eval_dataset, options=evaluator_options)

  def eval_begin(self) -> None:
    """Resets the metrics."""
    for metric in self.metrics:
      metric.reset_states()

  def eval_step(self, iterator: Any) -> None:
    """One step on the next batch of `iterator`, on every replica."""

    def replica_step(inputs: Dict[str, tf.Tensor]) -> None:
      inputs = dict(inputs)
      labels = inputs.pop(self.label_key)
      outputs = self.model(inputs, training=False)
      for metric in self.metrics:
        metric.update_state(labels, outputs)

    self.strategy.run(replica_step, args=(next(iterator),))

  def eval_end(self) -> Dict[str, tf.Tensor]:
    """{metric name: result} of the evaluation."""
    with self.strategy.scope():
      return {metric.name: metric.result() for metric in self.metrics}
