"""Tests of `trainer.gradient_accumulation_steps` (official/core/trainer.py, step_functions.py)."""

import numpy as np
import pytest
import tensorflow as tf

from official.common import distribute_utils
from official.core import exp_factory
from official.core import task_factory
from official.core import train_lib
from official.core import trainer as trainer_lib
from official.modeling import hyperparams
from tests.core import toy_task  # noqa: F401  # pylint: disable=unused-import  (registers it)
from tests.processes import run_on_two_cpus


def _train(model_dir, batch_size, accumulation_steps, train_steps=6, strategy=None, xla=False):
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'task': {'train_data': {'global_batch_size': batch_size}},
                   'runtime': {'enable_xla': xla, 'xla_on_cpu': True},
                   'trainer': {'gradient_accumulation_steps': accumulation_steps,
                               'train_steps': train_steps, 'steps_per_loop': 3,
                               'checkpoint_interval': 3, 'summary_interval': 3}})
  strategy = strategy or distribute_utils.get_distribution_strategy('one_device')
  with strategy.scope():
    task = task_factory.get_task(params.task, logging_dir=str(model_dir))
  result = train_lib.run_experiment_with_trainer(strategy, task, 'train', params, str(model_dir))
  return result.model, result.trainer


@pytest.mark.parametrize('xla', [False, True])
def test_accumulating_4_batches_of_2_equals_batches_of_8(tmp_path, xla):
  """The toy loss is a per-batch mean: the mean of 4 micro-batch gradients is the gradient of
  their concatenation, so the weights match training with the 4x batch (same examples, same
  learning-rate schedule, which counts updates); with XLA the micro-batch step is compiled."""
  big, big_trainer = _train(tmp_path / 'big', batch_size=8, accumulation_steps=1, xla=xla)
  small, trainer = _train(tmp_path / 'accumulated', batch_size=2, accumulation_steps=4, xla=xla)
  assert trainer.use_xla == xla
  assert int(trainer.global_step.numpy()) == 6
  assert int(trainer.optimizer.iterations.numpy()) == 6
  assert trainer.learning_rate() == pytest.approx(big_trainer.learning_rate(), rel=1e-6)
  np.testing.assert_allclose(small.get_weights()[0], big.get_weights()[0], rtol=1e-6, atol=1e-7)
  assert not np.allclose(small.get_weights()[0], 0)
  # Checkpoints are at update steps; the saved input position is 6 x 4 micro-batches in.
  state = tf.train.get_checkpoint_state(str(tmp_path / 'accumulated'))
  assert [p.rsplit('-', 1)[1] for p in state.all_model_checkpoint_paths] == ['3', '6']


def test_accumulation_resumes_like_an_uninterrupted_run(tmp_path):
  full, _ = _train(tmp_path / 'full', batch_size=2, accumulation_steps=4)
  _train(tmp_path / 'split', batch_size=2, accumulation_steps=4, train_steps=3)
  resumed, _ = _train(tmp_path / 'split', batch_size=2, accumulation_steps=4)
  np.testing.assert_allclose(resumed.get_weights()[0], full.get_weights()[0], rtol=1e-6,
                             atol=1e-7)


def test_gradient_accumulation_steps_below_one_names_the_field():
  params = exp_factory.get_exp_config('test/toy_regression')
  with pytest.raises(hyperparams.ConfigError, match='gradient_accumulation_steps'):
    params.override({'trainer': {'gradient_accumulation_steps': 0}})
    params.validate()


@pytest.mark.slow
def test_two_replica_mirrored_accumulation_matches_one_device(tmp_path):
  """Two virtual CPUs: per-replica accumulators, one all-reduce per update, same weights."""
  code = f"""
import numpy as np, tensorflow as tf
from official.common import distribute_utils
from tests.core import test_gradient_accumulation as t
strategy = distribute_utils.get_distribution_strategy('mirrored')
assert strategy.num_replicas_in_sync == 2
model, _ = t._train({str(tmp_path / 'two')!r}, 4, 2, strategy=strategy)
np.save({str(tmp_path / 'two.npy')!r}, model.get_weights()[0])
"""
  result = run_on_two_cpus(code)
  assert result.returncode == 0, result.stderr[-2000:]
  big, _ = _train(tmp_path / 'big', batch_size=8, accumulation_steps=1)
  np.testing.assert_allclose(np.load(tmp_path / 'two.npy'), big.get_weights()[0], rtol=1e-5)


@pytest.mark.slow
def test_bert_pretraining_smoke(tmp_path):
  """bert/pretraining (dummy data, a tiny encoder) trains with 2 micro-batches per update; its
  masked-LM loss is a mean weighted by the masked positions of each micro-batch, so the result is
  close to, not exactly, the double batch's."""
  from tests.nlp.serving import tiny_run  # pylint: disable=g-import-not-at-top
  from official.core import train_utils  # pylint: disable=g-import-not-at-top
  params = train_utils.build_params(
      'bert/pretraining', (), tiny_run.overrides(train_steps=2) +
      ',trainer.gradient_accumulation_steps=2')
  strategy = tf.distribute.get_strategy()
  task = task_factory.get_task(params.task, logging_dir=str(tmp_path))
  model, _, trainer = train_lib.run_experiment_with_trainer(strategy, task, 'train', params,
                                                            str(tmp_path))
  assert int(trainer.global_step.numpy()) == 2
  assert int(trainer.optimizer.iterations.numpy()) == 2
  assert np.isfinite(trainer.last_loop_loss)
  assert all(np.isfinite(w).all() for w in model.get_weights())


def test_float16_loss_scaling_is_refused_in_one_line(tmp_path):
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'trainer': {'gradient_accumulation_steps': 2},
                   'runtime': {'mixed_precision_dtype': 'float16'}})
  strategy = distribute_utils.get_distribution_strategy('one_device')
  with strategy.scope():
    task = task_factory.get_task(params.task)
  with pytest.raises(ValueError, match=r'^trainer.gradient_accumulation_steps: expected 1 with '
                                       r'float16 loss scaling, found 2'):
    trainer_lib.Trainer(strategy, task, params, str(tmp_path))


def test_a_nonfinite_micro_batch_skips_its_update_once(tmp_path):
  params = exp_factory.get_exp_config('test/toy_regression')
  # Micro-batches of 2: the first one holds NaN labels, so the first update (of 4) is skipped.
  params.override({'task': {'nan_batches': 1, 'train_data': {'global_batch_size': 2}},
                   'trainer': {'gradient_accumulation_steps': 4, 'train_steps': 3,
                               'steps_per_loop': 3, 'skip_nonfinite_steps': True}})
  strategy = distribute_utils.get_distribution_strategy('one_device')
  with strategy.scope():
    task = task_factory.get_task(params.task)
  model, _, trainer = train_lib.run_experiment_with_trainer(strategy, task, 'train', params,
                                                            str(tmp_path))
  assert int(trainer.skipped_steps.numpy()) == 1
  assert int(trainer.global_step.numpy()) == 3
  assert np.isfinite(model.get_weights()[0]).all() and not np.allclose(model.get_weights()[0], 0)
