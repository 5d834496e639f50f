"""Tests for official/nlp/continuous_finetune_lib.py (more in tests/core/test_train_lib.py)."""

import json

import pytest

from official.common import distribute_utils
from official.core import exp_factory
from official.nlp import continuous_finetune_lib
from tests.core import toy_task


def test_best_checkpoint_metric_is_reported_per_fine_tuning(tmp_path):
  pretrain_dir = tmp_path / 'pretrain'
  toy_task.run_in_process(pretrain_dir, train_steps=5)            # ckpt-5
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'task': {'init_checkpoint': str(pretrain_dir)},
                   'trainer': {'train_steps': 4, 'validation_interval': 2,
                               'continuous_eval_timeout': 1,
                               'best_checkpoint_export_subdir': 'best',
                               'best_checkpoint_eval_metric': 'validation_loss',
                               'best_checkpoint_metric_comp': 'lower'}})
  finetune_dir = tmp_path / 'finetune'
  logs = continuous_finetune_lib.run_continuous_finetune(
      'continuous_train_and_eval', params, str(finetune_dir), run_post_eval=True,
      distribution_strategy=distribute_utils.get_distribution_strategy('one_device'))
  # As Model Garden's trainer: `best_<metric>`, the best evaluation of this fine-tuning run.
  info = json.loads((finetune_dir / 'best_5' / 'info.json').read_text())
  assert logs['best_validation_loss'] == pytest.approx(info['validation_loss'])
  assert logs['best_validation_loss'] <= logs['validation_loss'] + 1e-6
  metrics = json.loads((finetune_dir / 'metrics-5.json').read_text())
  assert metrics['best_validation_loss'] == pytest.approx(logs['best_validation_loss'])
