"""Tests for orbit/examples/single_task/single_task_evaluator.py."""

import numpy as np
import tensorflow as tf
import tf_keras

from orbit.examples.single_task import single_task_evaluator
from tests.orbit.examples.single_task.test_single_task_trainer import classifier
from tests.orbit.examples.single_task.test_single_task_trainer import iris_like


def test_accuracy_matches_numpy_and_restarts_each_evaluation():
  model = classifier()
  dataset = iris_like(40).batch(16)
  evaluator = single_task_evaluator.SingleTaskEvaluator(
      dataset, label_key='label', model=model,
      metrics=[tf_keras.metrics.SparseCategoricalAccuracy('accuracy')])
  features = np.concatenate([batch['features'] for batch in dataset.as_numpy_iterator()])
  labels = np.concatenate([batch['label'] for batch in dataset.as_numpy_iterator()])
  expected = np.mean(np.argmax(model({'features': features}).numpy(), -1) == labels)
  for _ in range(2):  # metrics are reset: the second evaluation gives the same number
    logs = evaluator.evaluate(tf.constant(-1))
    np.testing.assert_allclose(float(logs['accuracy']), expected, rtol=1e-6)
