"""Tests for official/nlp/modeling/models/bert_pretrainer.py."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.modeling.models import bert_pretrainer
from tests import testing
from tests.nlp.modeling import numpy_bert


def _pretrainer(heads=('next_sentence',)):
  encoder = networks.BertEncoder(**testing.tiny_kwargs(vocab_size=50, max_sequence_length=16,
                                                       dict_outputs=True, name='bert_encoder'))
  return models.BertPretrainerV2(
      encoder, mlm_activation='gelu',
      classification_heads=[layers.ClassificationHead(16, 3, name=name) for name in heads])


def _inputs():
  ids = tf.constant(np.random.default_rng(0).integers(1, 50, (2, 8)), tf.int32)
  return dict(input_word_ids=ids, input_mask=tf.ones_like(ids), input_type_ids=tf.zeros_like(ids),
              masked_lm_positions=tf.constant([[1, 2, 0], [3, 4, 5]]))


def test_outputs_and_checkpoint_items():
  pretrainer = _pretrainer(heads=('next_sentence', 'topic'))
  outputs = pretrainer(_inputs())
  assert outputs['mlm_logits'].shape == (2, 3, 50) and outputs['mlm_logits'].dtype == tf.float32
  assert outputs['next_sentence'].shape == (2, 3) and outputs['topic'].shape == (2, 3)
  assert outputs['sequence_output'].shape == (2, 8, 16)
  assert outputs['pooled_output'].shape == (2, 16)
  assert len(outputs['encoder_outputs']) == 2  # the encoder's outputs pass through
  # Model Garden's keys: each head contributes its own items as `<head name>.<item>`.
  assert set(pretrainer.checkpoint_items) == {'encoder', 'masked_lm', 'next_sentence.pooler_dense',
                                              'topic.pooler_dense'}
  assert (pretrainer.checkpoint_items['next_sentence.pooler_dense'] is
          pretrainer.classification_heads[0].pooler_dense)
  # The masked-LM head is tied to the encoder's word embeddings.
  assert pretrainer.masked_lm.embedding_table is pretrainer.encoder_network.get_embedding_table()


def test_duplicate_head_names_raise():
  with pytest.raises(ValueError, match=r"duplicated: \['nsp'\]"):
    _pretrainer(heads=('nsp', 'nsp'))


def test_get_config_round_trip():
  pretrainer = _pretrainer()
  kwargs = dict(encoder_network=pretrainer.encoder_network, mlm_activation='gelu',
                mlm_initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02),
                classification_heads=pretrainer.classification_heads, name='bert')
  testing.run_layer_test(
      models.BertPretrainerV2, kwargs, [_inputs()],
      {'mlm_logits': (2, 3, 50), 'next_sentence': (2, 3), 'sequence_output': (2, 8, 16),
       'pooled_output': (2, 16)})


@pytest.mark.slow
@pytest.mark.parametrize('policy', ['mixed_bfloat16', 'mixed_float16'])
def test_mixed_precision_keeps_logits_float32(policy):
  tf_keras.mixed_precision.set_global_policy(policy)
  try:
    pretrainer = _pretrainer()
    outputs = pretrainer(_inputs())
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert outputs['mlm_logits'].dtype == tf.float32
  assert outputs['next_sentence'].dtype == tf.float32
  # As Model Garden: the encoder's sequence output float32, its pooled output in compute dtype.
  assert outputs['sequence_output'].dtype == tf.float32
  assert outputs['pooled_output'].dtype == (tf.bfloat16 if policy == 'mixed_bfloat16'
                                            else tf.float16)
  assert all(v.dtype == tf.float32 for v in pretrainer.variables)
  assert np.all(np.isfinite(outputs['mlm_logits']))


def test_mlm_logits_match_numpy_from_the_sequence_output():
  pretrainer = _pretrainer()
  inputs = _inputs()
  pretrainer(inputs)
  pretrainer.masked_lm.bias.assign(np.linspace(-1, 1, 50).astype(np.float32))
  outputs = pretrainer(inputs)
  sequence = outputs['sequence_output'].numpy()
  positions = inputs['masked_lm_positions'].numpy()
  kernel, bias = [v.numpy() for v in pretrainer.masked_lm.dense.weights]
  gamma, beta = [v.numpy() for v in pretrainer.masked_lm.layer_norm.weights]
  gathered = np.take_along_axis(sequence, positions[..., None], 1)
  hidden = numpy_bert.layer_norm(numpy_bert.gelu_tanh(gathered @ kernel + bias), gamma, beta)
  table = pretrainer.encoder_network.get_embedding_table().numpy()
  expected = hidden @ table.T + pretrainer.masked_lm.bias.numpy()
  np.testing.assert_allclose(outputs['mlm_logits'], expected, atol=1e-4)


def test_variable_names_follow_model_garden():
  pretrainer = _pretrainer()
  pretrainer(_inputs())
  shapes = {v.name: tuple(v.shape) for v in pretrainer.variables}
  for name, shape in {'bert/cls/predictions/transform/dense/kernel:0': (16, 16),
                      'bert/cls/predictions/transform/LayerNorm/gamma:0': (16,),
                      'bert/cls/predictions/transform/LayerNorm/beta:0': (16,),
                      'bert/cls/predictions/output_bias/bias:0': (50,),
                      'bert/next_sentence/pooler_dense/kernel:0': (16, 16),
                      'bert/next_sentence/logits/kernel:0': (16, 3),
                      'transformer/layer_1/output/kernel:0': (32, 16),
                      'pooler_transform/bias:0': (16,)}.items():
    assert shapes.get(name) == shape, (name, sorted(shapes))


def test_rebuilt_masked_lm_is_tied_to_rebuilt_encoder():
  rebuilt = models.BertPretrainerV2.from_config(_pretrainer().get_config())
  rebuilt(_inputs())
  assert rebuilt.masked_lm.embedding_table is rebuilt.encoder_network.get_embedding_table()
  assert rebuilt.masked_lm.name == 'cls/predictions'


def test_checkpoint_items_restore_the_encoder(tmp_path):
  source = _pretrainer()
  source(_inputs())
  path = tf.train.Checkpoint(**source.checkpoint_items).save(str(tmp_path / 'ckpt'))
  target = _pretrainer()
  target(_inputs())
  tf.train.Checkpoint(encoder=target.encoder_network).read(path).expect_partial()
  for a, b in zip(source.encoder_network.weights, target.encoder_network.weights):
    np.testing.assert_allclose(a.numpy(), b.numpy())
  # The tied MLM table follows the encoder; the head's own weights were not restored.
  np.testing.assert_allclose(target.masked_lm.embedding_table.numpy(),
                             source.masked_lm.embedding_table.numpy())
  assert not np.allclose(target.masked_lm.dense.kernel.numpy(),
                         source.masked_lm.dense.kernel.numpy())


@pytest.mark.slow
def test_jit_compiled_forward():
  pretrainer = _pretrainer()
  inputs = _inputs()
  eager = pretrainer(inputs)
  compiled = tf.function(pretrainer, jit_compile=True)(inputs)
  for key in ('mlm_logits', 'next_sentence'):
    np.testing.assert_allclose(compiled[key], eager[key], atol=1e-4)


def test_list_output_encoder_is_accepted():
  encoder = networks.BertEncoder(**testing.tiny_kwargs(vocab_size=50, num_layers=1,
                                                       max_sequence_length=16))
  outputs = models.BertPretrainerV2(encoder)(_inputs())
  assert outputs['mlm_logits'].shape == (2, 3, 50) and outputs['pooled_output'].shape == (2, 16)
  assert outputs['sequence_output'].shape == (2, 8, 16)
  encoder = networks.BertEncoder(**testing.tiny_kwargs(vocab_size=50, max_sequence_length=16,
                                                       return_all_encoder_outputs=True))
  outputs = models.BertPretrainerV2(encoder)(_inputs())
  assert len(outputs['encoder_outputs']) == 2
  np.testing.assert_array_equal(outputs['sequence_output'], outputs['encoder_outputs'][-1])


def test_word_embedding_variable_is_named_as_model_garden_names_it():
  pretrainer = _pretrainer()
  pretrainer(_inputs())
  name = pretrainer.encoder_network.get_embedding_table().name
  assert name == 'word_embeddings/embeddings:0', name


def test_inputs_and_outputs_make_a_functional_model_with_the_same_weights():
  pretrainer = _pretrainer()
  inputs = _inputs()
  eager = pretrainer(inputs)
  assert sorted(pretrainer.inputs) == ['input_mask', 'input_type_ids', 'input_word_ids',
                                       'masked_lm_positions']
  assert pretrainer.inputs['masked_lm_positions'].shape.as_list() == [None, None]
  assert pretrainer.outputs['mlm_logits'].shape.as_list() == [None, None, 50]
  model = tf_keras.Model(pretrainer.inputs, pretrainer.outputs)
  functional = model(inputs)
  for key in ('mlm_logits', 'next_sentence', 'sequence_output', 'pooled_output'):
    np.testing.assert_allclose(functional[key], eager[key], atol=1e-6)
  assert len(model.trainable_variables) == len(pretrainer.trainable_variables)
  # No extra checkpoint entries from the symbolic tensors.
  assert 'inputs' not in dict(pretrainer._trackable_children())  # pylint: disable=protected-access


def test_list_inputs_and_multi_cls_heads():
  encoder = networks.BertEncoder(**testing.tiny_kwargs(vocab_size=50, num_layers=1,
                                                       max_sequence_length=16, dict_outputs=True))
  pretrainer = models.BertPretrainerV2(
      encoder,
      classification_heads=[layers.MultiClsHeads(8, [('foo', 2), ('bar', 3)], name='multi')])
  inputs = _inputs()
  by_dict = pretrainer(inputs)
  by_list = pretrainer([inputs[k] for k in ('input_word_ids', 'input_mask', 'input_type_ids',
                                            'masked_lm_positions')])
  assert by_dict['foo'].shape == (2, 2) and by_dict['bar'].shape == (2, 3)
  for key in ('mlm_logits', 'foo', 'bar'):
    np.testing.assert_allclose(by_list[key], by_dict[key], atol=1e-6)
  assert {'masked_lm', 'encoder', 'multi.pooler_dense', 'multi.foo', 'multi.bar'} == set(
      pretrainer.checkpoint_items)


def test_bert_pretrainer_v1_outputs_predictions_and_round_trip():
  encoder = networks.BertEncoder(**testing.tiny_kwargs(vocab_size=50, num_layers=1,
                                                       max_sequence_length=16))
  pretrainer = models.BertPretrainer(encoder, num_classes=3, num_token_predictions=3,
                                     output='predictions')
  inputs = _inputs()
  outputs = pretrainer([inputs['input_word_ids'], inputs['input_mask'], inputs['input_type_ids'],
                        inputs['masked_lm_positions']])
  assert outputs['masked_lm'].shape == (2, 3, 50) and outputs['classification'].shape == (2, 3)
  # 'predictions' are log-probabilities.
  np.testing.assert_allclose(tf.reduce_logsumexp(outputs['classification'], -1), 0, atol=1e-5)
  np.testing.assert_allclose(tf.reduce_logsumexp(outputs['masked_lm'], -1), 0, atol=1e-5)
  pooled = encoder([inputs['input_word_ids'], inputs['input_mask'], inputs['input_type_ids']])[1]
  kernel, bias = [v.numpy() for v in pretrainer.classification.weights]
  logits = pooled.numpy() @ kernel + bias
  np.testing.assert_allclose(outputs['classification'],
                             logits - np.log(np.exp(logits).sum(-1, keepdims=True)), atol=1e-5)
  assert len(pretrainer.inputs) == 4 and pretrainer.inputs[-1].shape.as_list() == [None, 3]
  config = pretrainer.get_config()
  rebuilt = models.BertPretrainer.from_config(json.loads(pretrainer.to_json())['config'])
  assert rebuilt.get_config() == config
  with pytest.raises(ValueError, match='Unknown `output` value "bad"'):
    models.BertPretrainer(encoder, num_classes=2, num_token_predictions=3, output='bad')


@pytest.mark.slow
def test_masked_lm_options_bert_head_unchanged_modernbert_head_bias_free():
  bert = _pretrainer()
  bert(_inputs())
  assert bert_pretrainer.masked_lm_options(bert.encoder_network) == {}
  assert sorted(v.name for v in bert.masked_lm.trainable_variables
                if v is not bert.encoder_network.get_embedding_table()) == [
                    'bert/cls/predictions/output_bias/bias:0',
                    'bert/cls/predictions/transform/LayerNorm/beta:0',
                    'bert/cls/predictions/transform/LayerNorm/gamma:0',
                    'bert/cls/predictions/transform/dense/bias:0',
                    'bert/cls/predictions/transform/dense/kernel:0']
  assert bert.masked_lm.layer_norm.epsilon == 1e-12
  encoder = networks.ModernBertEncoder(vocab_size=50, hidden_size=16, num_layers=2,
                                       num_attention_heads=2, intermediate_size=24,
                                       local_attention=4, norm_epsilon=1e-6)
  options = bert_pretrainer.masked_lm_options(encoder)
  assert options == dict(use_bias=False, norm_use_bias=False, norm_epsilon=1e-6)
  modern = models.BertPretrainerV2(encoder, mlm_activation='exact_gelu')
  assert modern(_inputs())['mlm_logits'].shape == (2, 3, 50)
  mlm = modern.masked_lm
  assert {k: mlm.get_config()[k] for k in options} == options
  assert mlm.dense.bias is None and mlm.layer_norm.beta is None
  # from_config rebuilds the same head (decided again from the rebuilt encoder).
  rebuilt = models.BertPretrainerV2.from_config(
      json.loads(json.dumps(modern.get_config())))
  assert {k: rebuilt.masked_lm.get_config()[k] for k in options} == options


def _max_difference(a, b):
  return float(tf.reduce_max(tf.abs(tf.cast(a, tf.float32) - tf.cast(b, tf.float32))))


def test_masked_positions_only_gives_the_full_runs_logits_and_heads():
  pretrainer = _pretrainer()
  inputs = _inputs()
  full = pretrainer(inputs)
  assert pretrainer.computes_masked_positions_only(inputs)
  sparse = pretrainer(inputs, masked_positions_only=True)
  for key in ('mlm_logits', 'next_sentence', 'pooled_output'):
    assert sparse[key].shape == full[key].shape
    assert _max_difference(sparse[key], full[key]) < 1e-5, key
  assert sparse['sequence_output'].shape == (2, 4, 16)  # [CLS] and the 3 masked positions
  np.testing.assert_allclose(
      sparse['sequence_output'][:, 1:],
      tf.gather(full['sequence_output'], inputs['masked_lm_positions'], batch_dims=1), atol=1e-5)


def test_masked_positions_only_falls_back_to_the_full_run():
  inputs = _inputs()
  other_token = _pretrainer(heads=())
  other_token.classification_heads.append(layers.ClassificationHead(16, 2, cls_token_idx=1,
                                                                    name='second_token'))
  no_positions = {k: v for k, v in inputs.items() if k != 'masked_lm_positions'}
  modern = models.BertPretrainerV2(networks.ModernBertEncoder(
      **testing.tiny_kwargs('modernbert', vocab_size=50)))
  for model, model_inputs in ((other_token, inputs), (_pretrainer(), no_positions),
                              (modern, inputs)):
    assert not model.computes_masked_positions_only(model_inputs)
    full, sparse = model(model_inputs), model(model_inputs, masked_positions_only=True)
    assert sparse['sequence_output'].shape == full['sequence_output'].shape
    assert _max_difference(sparse['sequence_output'], full['sequence_output']) == 0.0
