"""Tests for official/nlp/modeling/models/dual_encoder.py ."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import models
from official.nlp.modeling import networks
from tests import testing


def _encoder(dict_outputs=True):
  return networks.BertEncoder(**testing.tiny_kwargs(vocab_size=40, max_sequence_length=16,
                                                    dict_outputs=dict_outputs))


def _ids(seed, batch=3, seq=8):
  return tf.constant(np.random.default_rng(seed).integers(1, 40, (batch, seq)), tf.int32)


def _pairs():
  left, right = _ids(0), _ids(1)
  right_mask = tf.constant([[1] * 8, [1] * 5 + [0] * 3, [1] * 8], tf.int32)
  return {'left_word_ids': left, 'left_mask': tf.ones_like(left),
          'left_type_ids': tf.zeros_like(left), 'right_word_ids': right,
          'right_mask': right_mask, 'right_type_ids': tf.zeros_like(right)}


def _pooled(encoder, pairs, side):
  outputs = encoder({'input_word_ids': pairs[f'{side}_word_ids'],
                     'input_mask': pairs[f'{side}_mask'],
                     'input_type_ids': pairs[f'{side}_type_ids']}, training=False)
  return outputs['pooled_output'].numpy()


def test_logits_are_scaled_cosines_with_a_margin():
  encoder = _encoder()
  model = models.DualEncoder(encoder, max_seq_length=8, logit_scale=5.0, logit_margin=0.25)
  pairs = _pairs()
  outputs = model(pairs, training=False)
  left = _pooled(encoder, pairs, 'left')
  right = _pooled(encoder, pairs, 'right')
  left /= np.linalg.norm(left, axis=1, keepdims=True)
  right /= np.linalg.norm(right, axis=1, keepdims=True)
  expected = 5.0 * (left @ right.T - 0.25 * np.eye(3))
  np.testing.assert_allclose(outputs['left_logits'], expected, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(outputs['right_logits'], expected.T, rtol=1e-4, atol=1e-5)
  assert outputs['left_logits'].dtype == tf.float32


def test_list_inputs_and_list_output_encoder_give_the_same_logits():
  encoder = _encoder(dict_outputs=False)
  model = models.DualEncoder(encoder, max_seq_length=8, normalize=False)
  pairs = _pairs()
  by_dict = model(pairs, training=False)['left_logits']
  keys = ['left_word_ids', 'left_mask', 'left_type_ids', 'right_word_ids', 'right_mask',
          'right_type_ids']
  by_list = model([pairs[k] for k in keys], training=False)['left_logits']
  np.testing.assert_allclose(by_dict, by_list, atol=1e-6)
  left, right = (encoder([pairs[f'{s}_word_ids'], pairs[f'{s}_mask'], pairs[f'{s}_type_ids']],
                         training=False)[1].numpy() for s in ('left', 'right'))
  np.testing.assert_allclose(by_dict, left @ right.T, rtol=1e-4, atol=1e-5)


def test_predictions_encode_one_text():
  encoder = _encoder()
  model = models.DualEncoder(encoder, max_seq_length=8, output='predictions')
  ids = _ids(2)
  inputs = {'input_word_ids': ids, 'input_mask': tf.ones_like(ids),
            'input_type_ids': tf.zeros_like(ids)}
  outputs = model(inputs, training=False)
  assert set(outputs) == {'sequence_output', 'pooled_output'}
  assert outputs['sequence_output'].shape == (3, 8, 16)
  pooled = encoder(inputs, training=False)['pooled_output'].numpy()
  np.testing.assert_allclose(outputs['pooled_output'],
                             pooled / np.linalg.norm(pooled, axis=1, keepdims=True), atol=1e-5)
  # The left_ names and a list of three work too.
  left = {'left_word_ids': ids, 'left_mask': tf.ones_like(ids), 'left_type_ids': 0 * ids}
  np.testing.assert_allclose(model(left, training=False)['pooled_output'],
                             outputs['pooled_output'], atol=1e-6)
  np.testing.assert_allclose(model([ids, tf.ones_like(ids), 0 * ids],
                                   training=False)['pooled_output'],
                             outputs['pooled_output'], atol=1e-6)


def test_checkpoint_items_hold_the_shared_encoder():
  encoder = _encoder()
  model = models.DualEncoder(encoder, max_seq_length=8)
  assert model.checkpoint_items == {'encoder': encoder}


def test_errors_name_the_problem():
  with pytest.raises(ValueError, match=r"output must be one of \['logits', 'predictions'\], "
                     r"found 'embeddings'"):
    models.DualEncoder(_encoder(), output='embeddings')
  model = models.DualEncoder(_encoder(), max_seq_length=8)
  pairs = _pairs()
  del pairs['right_mask']
  with pytest.raises(ValueError, match=r"lack \['right_mask'\]"):
    model(pairs)
  ids = _ids(0)
  with pytest.raises(ValueError, match='takes a list of 6 inputs'):
    model([ids, ids, ids])


@pytest.mark.slow
@pytest.mark.parametrize('output, expected', [
    ('logits', {'left_logits': (3, 3), 'right_logits': (3, 3)}),
    ('predictions', {'sequence_output': (3, 8, 16), 'pooled_output': (3, 16)}),
])
def test_config_round_trip(output, expected):
  inputs = _pairs()
  if output == 'predictions':
    inputs = {'input_word_ids': inputs['left_word_ids'], 'input_mask': inputs['left_mask'],
              'input_type_ids': inputs['left_type_ids']}
  testing.run_layer_test(models.DualEncoder,
                         dict(network=_encoder(), max_seq_length=8, logit_scale=2.0,
                              logit_margin=0.1, output=output, name='dual'),
                         [inputs], expected, call_kwargs=dict(training=False),
                         expected_output_dtype=tf.float32, atol=1e-5)
