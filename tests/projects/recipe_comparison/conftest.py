"""Fixtures shared by the recipe study's tests."""

import pytest


@pytest.fixture(name='data')
def _data(tmp_path):
  """`corpus_data.make_data`'s result for a 321-token vocabulary (the record paths are names)."""
  vocab = tmp_path / 'vocab.txt'
  vocab.write_text('\n'.join(f't{i}' for i in range(321)) + '\n')
  return {'vocab': str(vocab), 'records': {'bert': 'b.tfrecord', 'modern': 'm.tfrecord',
                                           'in_domain': 'h.tfrecord', 'ood': 'o.tfrecord'}}
