"""Fixtures shared by the recipe study's tests."""

import pytest

from official.nlp.modeling.networks import encoder_family
from official.projects.recipe_comparison import ablation_encoder

# Importing the module registers its family (as `--experiment_module` does); the families are
# global, so it is registered only while a test that asks for it runs (`ablation_family`): other
# tests in the same process list the registered types.
encoder_family.unregister_encoder_family(ablation_encoder.NAME)


@pytest.fixture(name='ablation_family')
def _ablation_family():
  """The `ablation` encoder family, registered for the test."""
  encoder_family.register_encoder_family(ablation_encoder.FAMILY)
  yield ablation_encoder.FAMILY
  encoder_family.unregister_encoder_family(ablation_encoder.NAME)


@pytest.fixture(name='data')
def _data(tmp_path):
  """`corpus_data.make_data`'s result for a 321-token vocabulary (the record paths are names)."""
  vocab = tmp_path / 'vocab.txt'
  vocab.write_text('\n'.join(f't{i}' for i in range(321)) + '\n')
  return {'vocab': str(vocab), 'records': {'bert': 'b.tfrecord', 'modern': 'm.tfrecord',
                                           'in_domain': 'h.tfrecord', 'ood': 'o.tfrecord'}}
