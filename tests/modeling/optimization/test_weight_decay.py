"""Tests for official/modeling/optimization/weight_decay.py."""

import pytest
import tensorflow as tf

from official.modeling.optimization import weight_decay

_BERT = ['LayerNorm', 'layer_norm', 'bias']


@pytest.mark.parametrize('name, decayed', [
    ('transformer/layer_0/self_attention/query/kernel', True),
    ('transformer/layer_0/self_attention/query/bias', False),
    ('transformer/layer_0/output_layer_norm/gamma', False),
    ('cls/predictions/transform/LayerNorm/beta', False),
    ('word_embeddings/embeddings', True),
])
def test_bert_exclusions(name, decayed):
  assert weight_decay.use_weight_decay(name, 0.01, None, _BERT) is decayed


def test_rate_zero_and_include_wins():
  assert not weight_decay.use_weight_decay('dense/kernel', 0.0, ['kernel'], None)
  assert weight_decay.use_weight_decay('dense/bias', 0.1, ['dense/bias$'], ['bias'])
  assert not weight_decay.use_weight_decay('dense/bias', 0.1, ['^bias$'], ['bias'])


def test_variable_name_strips_output_index():
  assert weight_decay.variable_name(tf.Variable(1.0, name='scope/kernel')) == 'scope/kernel'
