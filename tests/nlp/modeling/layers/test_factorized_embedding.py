"""Tests for official/nlp/modeling/layers/factorized_embedding.py ."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import layers
from tests import testing

IDS = tf.constant([[0, 3, 5], [6, 1, 1]], tf.int32)


@pytest.mark.parametrize('use_one_hot', [False, True])
def test_lookup_then_projection_matches_numpy(use_one_hot):
  layer = layers.FactorizedEmbedding(vocab_size=7, embedding_width=3, output_dim=5,
                                     use_one_hot=use_one_hot, scale_factor=2.0)
  out = layer(IDS).numpy()
  table = layer.embeddings.numpy()
  kernel = layer._embedding_projection.kernel.numpy()  # pylint: disable=protected-access
  assert table.shape == (7, 3) and kernel.shape == (3, 5)
  np.testing.assert_allclose(out, 2.0 * table[IDS.numpy()] @ kernel, rtol=1e-5, atol=1e-6)
  # Two variables: the narrow table and the bias-free projection.
  assert sorted(w.name.split('/')[-1] for w in layer.weights) == ['embeddings:0', 'kernel:0']
  assert any('embedding_projection' in w.name for w in layer.weights)


def test_is_an_on_device_embedding():
  layer = layers.FactorizedEmbedding(vocab_size=7, embedding_width=3, output_dim=5)
  assert isinstance(layer, layers.OnDeviceEmbedding)
  assert layer(IDS).dtype == tf.float32


def test_rejects_zero_output_dim():
  with pytest.raises(ValueError, match='output_dim must be >= 1, found 0'):
    layers.FactorizedEmbedding(vocab_size=7, embedding_width=3, output_dim=0)


def test_config_round_trip():
  testing.run_layer_test(layers.FactorizedEmbedding,
                         dict(vocab_size=7, embedding_width=3, output_dim=4, scale_factor=0.5,
                              initializer='glorot_normal'), [IDS], (2, 3, 4))
