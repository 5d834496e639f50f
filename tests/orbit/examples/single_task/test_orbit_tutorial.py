"""Model Garden's Orbit tutorial (fine-tuning BERT with `SingleTaskTrainer`/`SingleTaskEvaluator`)
under a `OneDeviceStrategy`, on a tiny encoder and synthetic data."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import orbit
from official.modeling import optimization
from official.nlp.configs import encoders
from official.nlp.modeling import models
from orbit.examples.single_task import single_task_evaluator
from orbit.examples.single_task import single_task_trainer


def _dataset(strategy, rows, seed):
  rng = np.random.default_rng(seed)
  ids = rng.integers(1, 50, size=(rows, 8)).astype(np.int32)
  data = dict(input_word_ids=ids, input_mask=np.ones_like(ids), input_type_ids=0 * ids,
              label=rng.integers(0, 2, size=(rows,)).astype(np.int32))
  dataset = tf.data.Dataset.from_tensor_slices(data).repeat().batch(4)
  return strategy.experimental_distribute_dataset(dataset)


def _loss(labels, logits):
  return tf.reduce_mean(tf_keras.losses.sparse_categorical_crossentropy(
      labels, logits, from_logits=True))


@pytest.mark.slow
@pytest.mark.parametrize('evaluate_first', [False, True])
def test_training_then_evaluation_under_one_device_strategy(tmp_path, evaluate_first):
  """The tutorial's cells: the model is built in the strategy's scope, the optimizer outside it,
  the trainer and evaluator in it; the controller trains, then evaluates (or the other way).

  The classifier's variables all exist once it is constructed (a functional model, as Model
  Garden's): its head was built at the first call before, inside the trainer's `strategy.run`,
  where Keras creates variables in the eager context outside any strategy scope, which raised
  'Mixing different tf.distribute.Strategy objects'.
  """
  strategy = tf.distribute.OneDeviceStrategy('/cpu:0')
  encoder_config = encoders.EncoderConfig({'type': 'bert', 'bert': dict(
      vocab_size=50, hidden_size=16, num_layers=2, num_attention_heads=2, intermediate_size=32,
      max_position_embeddings=16, type_vocab_size=2)})
  with strategy.scope():
    encoder = encoders.build_encoder(encoder_config)
    classifier = models.BertClassifier(network=encoder, num_classes=2)
  assert len(classifier.variables) == len(encoder.variables) + 2  # the head's too, at once
  factory = optimization.OptimizerFactory(optimization.OptimizationConfig({
      'optimizer': {'type': 'adamw'},
      'learning_rate': {'type': 'polynomial', 'polynomial': {
          'initial_learning_rate': 3e-5, 'decay_steps': 6, 'end_learning_rate': 0.0}},
      'warmup': {'type': 'polynomial', 'polynomial': {'warmup_steps': 1}}}))
  optimizer = factory.build_optimizer(factory.build_learning_rate())
  with strategy.scope():
    trainer = single_task_trainer.SingleTaskTrainer(
        _dataset(strategy, 32, 0), label_key='label', model=classifier, loss_fn=_loss,
        optimizer=optimizer)
    evaluator = single_task_evaluator.SingleTaskEvaluator(
        _dataset(strategy, 16, 1), label_key='label', model=classifier,
        metrics=tf_keras.metrics.SparseCategoricalAccuracy('accuracy'))
  checkpoint = tf.train.Checkpoint(model=classifier, optimizer=optimizer)
  manager = tf.train.CheckpointManager(checkpoint, str(tmp_path), max_to_keep=2,
                                       step_counter=optimizer.iterations, checkpoint_interval=3)
  controller = orbit.Controller(trainer=trainer, evaluator=evaluator,
                                global_step=optimizer.iterations, steps_per_loop=3,
                                checkpoint_manager=manager)
  if evaluate_first:
    assert 0.0 <= float(controller.evaluate(steps=2)['accuracy']) <= 1.0
  controller.train(steps=6)
  result = controller.evaluate(steps=4)
  assert 0.0 <= float(result['accuracy']) <= 1.0
  assert int(optimizer.iterations) == 6 and manager.latest_checkpoint
