"""Tests for official/nlp/tools/training_curves.py."""

import os

import tensorflow as tf

from official.core import train_utils
from official.nlp.tools import training_curves


def test_read_and_plot(tmp_path):
  for subdir, tag in (('train', 'training_loss'), ('validation', 'validation_loss')):
    writer = tf.summary.create_file_writer(str(tmp_path / subdir))
    for step in (10, 20, 30):
      train_utils.write_scalar_summaries(  # pylint: disable=protected-access
          writer, {tag: 1.0 / step, 'masked_lm_accuracy': step / 100}, step)
  scalars = training_curves.read_scalars(str(tmp_path / 'train'))
  assert [s for s, _ in scalars['training_loss']] == [10, 20, 30]
  assert abs(scalars['masked_lm_accuracy'][-1][1] - 0.3) < 1e-6
  path = training_curves.plot_training_curves(str(tmp_path), str(tmp_path / 'curves.png'))
  with open(path, 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'
  assert os.path.getsize(path) > 5000
