"""Tests for official/modeling/checkpoint_compat.py (Model Garden's checkpoint keys)."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling import checkpoint_compat
from official.modeling.optimization import adamw
from official.modeling.optimization import lamb

_VALUE = '/.ATTRIBUTES/VARIABLE_VALUE'


def _variables():
  return [tf.Variable([[1.0, 2.0], [3.0, 4.0]], name='kernel'),
          tf.Variable([0.5, -0.5], name='bias')]


def _trained(opt, variables, steps=2):
  for _ in range(steps):
    with tf.GradientTape() as tape:
      loss = sum(tf.reduce_sum(tf.square(v - 1.0)) for v in variables)
    opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
  return opt


def test_functional_layer_aliases_number_only_present_layers():
  a, b = tf_keras.layers.Dense(2), tf_keras.layers.Dense(3)
  aliases = checkpoint_compat.functional_layer_aliases([a, None, b])
  assert list(aliases) == ['layer_with_weights-0', 'layer_with_weights-1']
  assert aliases['layer_with_weights-0'] is a and aliases['layer_with_weights-1'] is b


def test_functional_checkpoint_children_drop_layer_indices_and_can_renumber():
  a, b = tf_keras.layers.Dense(2), tf_keras.layers.Dense(3)
  children = {'layer-0': 'input', 'layer_with_weights-0': a, 'layer-1': a,
              'layer_with_weights-1': b, 'layer-2': b, '_pooler': b}
  kept = checkpoint_compat.functional_checkpoint_children(children)
  assert list(kept.items()) == [('layer_with_weights-0', a), ('layer_with_weights-1', b),
                                ('_pooler', b)]
  swapped = checkpoint_compat.functional_checkpoint_children(children, [b, a])
  assert list(swapped.items()) == [('layer_with_weights-0', b), ('layer_with_weights-1', a),
                                   ('_pooler', b)]


def test_root_names(tmp_path):
  variables = _variables()
  path = tf.train.Checkpoint(model=tf.train.Checkpoint(v=variables[0]), **{
      'next_sentence.pooler_dense': tf.train.Checkpoint(v=variables[1])}).write(str(tmp_path / 'c'))
  assert set(checkpoint_compat.root_names(path)) == {'model', 'next_sentence.pooler_dense'}


@pytest.mark.parametrize('make', [lambda: adamw.AdamWeightDecay(0.1, weight_decay_rate=0.01),
                                  lambda: adamw.AdamWeightDecay(0.1, amsgrad=True),
                                  lambda: lamb.LAMB(0.1)])
def test_slots_are_saved_as_legacy_slots_and_restore(tmp_path, make):
  variables = _variables()
  opt = _trained(make(), variables)
  path = tf.train.Checkpoint(variables=variables, optimizer=opt).write(str(tmp_path / 'ckpt'))
  keys = {name for name, _ in tf.train.list_variables(path)}
  slot_names = ['m', 'v'] + (['vhat'] if opt.get_slot_names()[-1] == 'vhat' else [])
  assert opt.get_slot_names() == slot_names
  for i in range(2):
    for slot in slot_names:
      assert f'variables/{i}/.OPTIMIZER_SLOT/optimizer/{slot}{_VALUE}' in keys
  assert f'optimizer/iter{_VALUE}' in keys
  assert not any('_variables' in key or '_momentums' in key for key in keys)

  restored = make()
  restored.build(variables)
  status = tf.train.Checkpoint(variables=variables, optimizer=restored).read(path)
  status.assert_existing_objects_matched()
  assert int(restored.iterations.numpy()) == 2
  for slot in slot_names:
    for variable in variables:
      np.testing.assert_array_equal(restored.get_slot(variable, slot).numpy(),
                                    opt.get_slot(variable, slot).numpy())
      assert np.any(opt.get_slot(variable, slot).numpy() != 0)


def test_slots_restored_before_build_arrive_at_build(tmp_path):
  variables = _variables()
  opt = _trained(adamw.AdamWeightDecay(0.1), variables)
  path = tf.train.Checkpoint(variables=variables, optimizer=opt).write(str(tmp_path / 'ckpt'))
  later = adamw.AdamWeightDecay(0.1)
  tf.train.Checkpoint(variables=variables, optimizer=later).read(path)
  later.build(variables)
  for variable in variables:
    np.testing.assert_array_equal(later.get_slot(variable, 'm').numpy(),
                                  opt.get_slot(variable, 'm').numpy())


def test_checkpoints_of_the_former_layout_still_restore(tmp_path):
  """Before the legacy slots, the moments were saved as the optimizer's `_variables` list."""
  variables = _variables()
  opt = _trained(adamw.AdamWeightDecay(0.1), variables)
  former = tf.train.Checkpoint(_iterations=opt.iterations, _variables=list(opt.variables))
  path = tf.train.Checkpoint(variables=variables, optimizer=former).write(str(tmp_path / 'ckpt'))
  restored = adamw.AdamWeightDecay(0.1)
  restored.build(variables)
  tf.train.Checkpoint(variables=variables, optimizer=restored).read(path).expect_partial()
  assert int(restored.iterations.numpy()) == 2
  for variable in variables:
    np.testing.assert_array_equal(restored.get_slot(variable, 'v').numpy(),
                                  opt.get_slot(variable, 'v').numpy())


def test_get_slot_of_an_unknown_variable_raises_key_error():
  variables = _variables()
  opt = adamw.AdamWeightDecay(0.1)
  opt.build(variables)
  with pytest.raises(KeyError):
    opt.get_slot(tf.Variable(1.0), 'm')
  with pytest.raises(KeyError):
    opt.get_slot(variables[0], 'momentum')
  with pytest.raises(KeyError):
    opt.get_slot('not a variable', 'm')


def _pretrainer(num_classes=2):
  from official.nlp.modeling import layers  # pylint: disable=g-import-not-at-top
  from official.nlp.modeling import models  # pylint: disable=g-import-not-at-top
  from official.nlp.modeling import networks  # pylint: disable=g-import-not-at-top
  encoder = networks.BertEncoder(vocab_size=20, hidden_size=8, num_layers=1, num_attention_heads=2,
                                 inner_dim=16, max_sequence_length=8, dict_outputs=True)
  head = layers.ClassificationHead(inner_dim=8, num_classes=num_classes, name='next_sentence')
  model = models.BertPretrainerV2(encoder, classification_heads=[head])
  ids = tf.ones([1, 8], tf.int32)
  model(dict(input_word_ids=ids, input_mask=ids, input_type_ids=0 * ids,
             masked_lm_positions=tf.zeros([1, 2], tf.int32)))
  return model


def _head_values(model):
  head = model.classification_heads[0]
  return [v.numpy() for v in (head.dense.kernel, head.dense.bias, head.out_proj.kernel,
                               head.out_proj.bias)]


@pytest.mark.parametrize('layout', ['model_garden', 'former'])
def test_restore_head_weights_reads_both_layouts(tmp_path, layout):
  source = _pretrainer()
  if layout == 'model_garden':  # a training checkpoint: checkpoint_items plus `model`
    items = dict(source.checkpoint_items, model=source)
  else:  # before Model Garden's keys: the whole head under its name
    items = {'encoder': source.encoder_network, 'masked_lm': source.masked_lm,
             'next_sentence': source.classification_heads[0]}
  path = tf.train.Checkpoint(**items).write(str(tmp_path / 'ckpt'))
  roots = checkpoint_compat.root_names(path)
  target = _pretrainer()
  assert checkpoint_compat.restore_head_weights(path, target) == ['next_sentence']
  for got, want in zip(_head_values(target), _head_values(source)):
    np.testing.assert_array_equal(got, want)
  # pretrainer_items reads the same checkpoint whole.
  other = _pretrainer()
  tf.train.Checkpoint(**checkpoint_compat.pretrainer_items(other, roots)).read(
      path).expect_partial().assert_existing_objects_matched()
  for got, want in zip(_head_values(other), _head_values(source)):
    np.testing.assert_array_equal(got, want)
  expected_items = ({'encoder', 'masked_lm', 'next_sentence.pooler_dense', 'model'}
                    if layout == 'model_garden' else {'encoder', 'masked_lm', 'next_sentence'})
  assert set(checkpoint_compat.pretrainer_items(other, roots)) == expected_items


def test_restore_head_weights_skips_a_head_of_another_shape(tmp_path):
  source = _pretrainer(num_classes=2)
  path = tf.train.Checkpoint(**dict(source.checkpoint_items, model=source)).write(
      str(tmp_path / 'ckpt'))
  target = _pretrainer(num_classes=3)
  before = _head_values(target)
  assert checkpoint_compat.restore_head_weights(path, target) == []
  for got, want in zip(_head_values(target), before):
    np.testing.assert_array_equal(got, want)
