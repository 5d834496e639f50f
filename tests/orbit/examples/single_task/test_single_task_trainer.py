"""Tests for orbit/examples/single_task/single_task_trainer.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import orbit
from orbit.examples.single_task import single_task_trainer


def iris_like(examples: int = 96, seed: int = 0) -> tf.data.Dataset:
  """Three separable classes of 4 features ({'features', 'label'} dicts), like Iris."""
  rng = np.random.default_rng(seed)
  labels = rng.integers(0, 3, examples)
  centers = np.array([[0, 0, 0, 0], [3, 3, 0, 0], [0, 0, 3, 3]], np.float32)
  features = centers[labels] + rng.normal(0, 0.3, (examples, 4)).astype(np.float32)
  return tf.data.Dataset.from_tensor_slices({'features': features, 'label': labels})


def classifier() -> tf_keras.Model:
  tf_keras.utils.set_random_seed(1)
  return tf_keras.Sequential([tf_keras.Input(shape=(4,), name='features'),
                              tf_keras.layers.Dense(10, activation='relu'),
                              tf_keras.layers.Dense(3)])


def test_training_lowers_the_loss_and_reports_metrics():
  model = classifier()
  trainer = single_task_trainer.SingleTaskTrainer(
      iris_like().batch(32).repeat(), label_key='label', model=model,
      loss_fn=tf_keras.losses.SparseCategoricalCrossentropy(
          from_logits=True, reduction=tf_keras.losses.Reduction.NONE),
      optimizer=tf_keras.optimizers.SGD(0.1),
      metrics=tf_keras.metrics.SparseCategoricalAccuracy('accuracy'))
  controller = orbit.Controller(trainer=trainer, steps_per_loop=20,
                                global_step=trainer.optimizer.iterations)
  controller.train(1)
  start = float(trainer.train_loss.result())
  controller.train(201)
  logs = trainer.train_loop_end()
  assert sorted(logs) == ['accuracy', 'training_loss']
  assert float(logs['training_loss']) < start / 2
  assert float(logs['accuracy']) > 0.9
  assert int(trainer.optimizer.iterations.numpy()) == 201


def test_loss_is_the_mean_of_the_per_example_losses():
  trainer = single_task_trainer.SingleTaskTrainer(
      tf.data.Dataset.from_tensors({'features': tf.ones([2, 4]), 'label': tf.constant([0, 1])}),
      label_key='label', model=classifier(),
      loss_fn=tf_keras.losses.sparse_categorical_crossentropy,
      optimizer=tf_keras.optimizers.SGD(0.0))
  logits = trainer.model({'features': tf.ones([2, 4])})
  expected = np.mean(tf_keras.losses.sparse_categorical_crossentropy([0, 1], logits).numpy())
  logs = trainer.train(tf.constant(1))
  assert float(logs['training_loss']) == pytest.approx(expected, rel=1e-5)
  assert trainer.metrics == []
