"""Tests for official/nlp/tools/google_bert.py (Google's TF1 BERT checkpoints)."""

import json
import logging
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.configs import encoders
from official.nlp.tools import bert_weight_map
from official.nlp.tools import google_bert
from tests import testing
from tests.nlp.tools import numpy_hf_bert as ref

# Google's `hidden_act: gelu` is the tanh approximation: the reference uses Hugging Face's name of
# it.
_GOOGLE_CONFIG = {k: v for k, v in ref.tiny_config().items()
                  if k not in ('model_type', 'layer_norm_eps')}


def _reference_config():
  return dict(_GOOGLE_CONFIG, hidden_act='gelu_new', layer_norm_eps=1e-12)


def _google_name(hf_name):
  """Google's TF1 name of a Hugging Face name (written out here, independently of the table)."""
  name = hf_name
  for old, new in (('.LayerNorm.weight', '.LayerNorm.gamma'),
                   ('.LayerNorm.bias', '.LayerNorm.beta'),
                   ('.dense.weight', '.dense.kernel'), ('self.query.weight', 'self.query.kernel'),
                   ('self.key.weight', 'self.key.kernel'),
                   ('self.value.weight', 'self.value.kernel')):
    name = name.replace(old, new)
  name = re.sub(r'_embeddings\.weight$', '_embeddings', name)
  name = re.sub(r'encoder\.layer\.(\d+)', r'encoder.layer_\1', name)
  name = {'cls.predictions.bias': 'cls.predictions.output_bias',
          'cls.seq_relationship.weight': 'cls.seq_relationship.output_weights',
          'cls.seq_relationship.bias': 'cls.seq_relationship.output_bias'}.get(name, name)
  name = name.replace('.', '/')
  return name if name.startswith('cls/') else 'bert/' + name


def _google_arrays(hf_weights):
  """Google names -> arrays: TF kernels are [in, out] (the transpose of PyTorch's Linear weight)."""
  arrays = {}
  for name, value in hf_weights.items():
    google = _google_name(name)
    arrays[google] = value.T if google.endswith('/kernel') else value
  return arrays


def _write_google_checkpoint(directory, config, arrays, optimizer_slots=False):
  """A TF1 name-based checkpoint written with tf.compat.v1's Saver, as Google's scripts do."""
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, 'bert_config.json'), 'w', encoding='utf-8') as f:
    json.dump(config, f)
  variables = {name: tf.Variable(value) for name, value in arrays.items()}
  if optimizer_slots:
    variables['global_step'] = tf.Variable(7, dtype=tf.int64)
    for name in list(arrays)[:3]:
      variables[f'{name}/adam_m'] = tf.Variable(np.zeros_like(arrays[name]))
      variables[f'{name}/adam_v'] = tf.Variable(np.zeros_like(arrays[name]))
  tf.compat.v1.train.Saver(var_list=variables).save(
      None, os.path.join(directory, 'bert_model.ckpt'))
  return str(directory)


def _random_pretrainer(seed=5):
  config = encoders.BertEncoderConfig(**testing.tiny_config(vocab_size=40,
                                                            max_position_embeddings=12))
  pretrainer = bert_weight_map.build_pretrainer(bert_weight_map.pretrainer_config(config, True))
  rng = np.random.default_rng(seed)
  for variable in pretrainer.variables:
    variable.assign(rng.normal(0.0, 0.5, size=variable.shape).astype(np.float32))
  head, pooler = pretrainer.classification_heads[0], pretrainer.encoder_network.pooler_layer
  head.dense.kernel.assign(pooler.kernel)
  head.dense.bias.assign(pooler.bias)
  return pretrainer


def _inputs(config):
  ids, mask, types = ref.random_inputs(config)
  return {'input_word_ids': ids, 'input_mask': mask, 'input_type_ids': types,
          'masked_lm_positions': np.array([[1, 3], [0, 2]], np.int32)}


@pytest.mark.slow
def test_load_pretrainer_matches_numpy_reference(tmp_path):
  config = _reference_config()
  weights = ref.random_weights(config, mlm=True, nsp=True)
  directory = _write_google_checkpoint(tmp_path, _GOOGLE_CONFIG, _google_arrays(weights),
                                       optimizer_slots=True)
  pretrainer = google_bert.load_pretrainer(directory)
  assert pretrainer.encoder_network.get_config()['inner_activation'] == 'gelu'  # tanh
  inputs = _inputs(config)
  outputs = pretrainer(inputs)
  ids, mask, types = (inputs[k] for k in ('input_word_ids', 'input_mask', 'input_type_ids'))
  seq, pooled = ref.encoder(weights, config, ids, mask, types)
  np.testing.assert_allclose(outputs['sequence_output'].numpy(), seq, atol=1e-5)
  np.testing.assert_allclose(outputs['pooled_output'].numpy(), pooled, atol=1e-5)
  np.testing.assert_allclose(outputs['mlm_logits'].numpy(),
                             ref.mlm_logits(weights, config, seq, inputs['masked_lm_positions']),
                             atol=1e-4)
  np.testing.assert_allclose(outputs['next_sentence'].numpy(), ref.nsp_logits(weights, pooled),
                             atol=1e-5)


def test_load_encoder_from_prefix_skips_heads(tmp_path, caplog):
  config = _reference_config()
  weights = ref.random_weights(config, mlm=True)
  directory = _write_google_checkpoint(tmp_path, _GOOGLE_CONFIG, _google_arrays(weights))
  with caplog.at_level(logging.WARNING):
    encoder = google_bert.load_encoder(os.path.join(directory, 'bert_model.ckpt'))
  assert 'skips the head variables cls/predictions/output_bias' in caplog.text
  inputs = _inputs(config)
  ids, mask, types = (inputs[k] for k in ('input_word_ids', 'input_mask', 'input_type_ids'))
  np.testing.assert_allclose(encoder(inputs)['sequence_output'].numpy(),
                             ref.encoder(weights, config, ids, mask, types)[0], atol=1e-5)


def test_export_then_load_round_trips(tmp_path):
  pretrainer = _random_pretrainer()
  out = google_bert.export(pretrainer, str(tmp_path / 'google'))
  shapes = tf.train.load_checkpoint(
      os.path.join(out, 'bert_model.ckpt')).get_variable_to_shape_map()
  assert shapes['cls/seq_relationship/output_weights'] == [2, 16]
  assert shapes['bert/encoder/layer_1/attention/self/query/kernel'] == [16, 16]
  assert shapes['bert/encoder/layer_0/intermediate/dense/kernel'] == [16, 32]  # [in, out]
  assert shapes['cls/predictions/output_bias'] == [40]
  assert len(shapes) == 5 + 16 * 2 + 2 + 5 + 2
  assert tf.train.latest_checkpoint(out) == os.path.join(out, 'bert_model.ckpt')
  with open(os.path.join(out, 'bert_config.json'), encoding='utf-8') as f:
    config = json.load(f)
  assert config['hidden_act'] == 'gelu' and config['num_hidden_layers'] == 2
  reader = tf.train.load_checkpoint(out)
  head = pretrainer.classification_heads[0]
  np.testing.assert_array_equal(reader.get_tensor('cls/seq_relationship/output_weights'),
                                head.out_proj.kernel.numpy().T)
  output_dense = pretrainer.encoder_network.transformer_layers[0]._attention_layer._output_dense  # pylint: disable=protected-access
  np.testing.assert_array_equal(
      reader.get_tensor('bert/encoder/layer_0/attention/output/dense/kernel'),
      output_dense.kernel.numpy().reshape(16, 16))

  loaded = google_bert.load_pretrainer(out)
  for original, restored in zip(pretrainer.variables, loaded.variables):
    np.testing.assert_array_equal(original.numpy(), restored.numpy())
  inputs = _inputs(ref.tiny_config())
  np.testing.assert_array_equal(pretrainer(inputs)['mlm_logits'].numpy(),
                                loaded(inputs)['mlm_logits'].numpy())


def test_export_warns_when_the_two_poolers_differ(tmp_path, caplog):
  pretrainer = _random_pretrainer()
  head = pretrainer.classification_heads[0]
  head.dense.bias.assign(head.dense.bias + 1.0)
  with caplog.at_level(logging.WARNING):
    out = google_bert.export(pretrainer, str(tmp_path))
  assert ('bert/pooler/dense/bias: the next_sentence weights replace the different pooler '
          'weights') in caplog.text
  np.testing.assert_array_equal(tf.train.load_checkpoint(out).get_tensor('bert/pooler/dense/bias'),
                                head.dense.bias.numpy())


@pytest.mark.slow
def test_shape_mismatch_and_unknown_variables(tmp_path):
  config = _reference_config()
  arrays = _google_arrays(ref.random_weights(config))
  directory = _write_google_checkpoint(tmp_path / 'a', dict(_GOOGLE_CONFIG, hidden_size=24,
                                                          num_attention_heads=2), arrays)
  with pytest.raises(ValueError) as error:
    google_bert.load_encoder(directory)
  assert str(error.value) == (
      f'{directory}/bert_model.ckpt: variable bert/embeddings/word_embeddings has shape [40, 16]; '
      'the model built from its config expects [40, 24]')

  arrays['bert/encoder/layer_0/attention/self/rotary'] = np.zeros([3], np.float32)
  directory = _write_google_checkpoint(tmp_path / 'b', _GOOGLE_CONFIG, arrays)
  with pytest.raises(ValueError, match=r'1 unused variable\(s\): '
                     r'bert/encoder/layer_0/attention/self/rotary \(pass allow_unused=True'):
    google_bert.load_encoder(directory)
  google_bert.load_encoder(directory, allow_unused=True)


def test_bad_paths_and_object_checkpoints(tmp_path):
  with pytest.raises(FileNotFoundError, match='no checkpoint'):
    google_bert.load_encoder(str(tmp_path))
  prefix = tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path / 'obj' / 'bert_model.ckpt'))
  with open(tmp_path / 'obj' / 'bert_config.json', 'w', encoding='utf-8') as f:
    json.dump(_GOOGLE_CONFIG, f)
  with pytest.raises(ValueError, match='an object-based TF2 checkpoint'):
    google_bert.load_encoder(prefix)


def test_pretrainer_config_of_reads_a_bert_pretrainer_back():
  """Without an encoder config, `pretrainer_config_of` reads the BertEncoder's own: the config
  builds a model with the same variables, heads and masked-LM activation."""
  config = encoders.BertEncoderConfig(**testing.tiny_config(vocab_size=40,
                                                            max_position_embeddings=12))
  built = bert_weight_map.pretrainer_config(config, True)
  pretrainer = bert_weight_map.build_pretrainer(built)
  read = bert_weight_map.pretrainer_config_of(pretrainer)
  assert read.encoder.type == 'bert' and read.encoder.bert.as_dict() == config.as_dict()
  assert [h.as_dict() for h in read.cls_heads] == [h.as_dict() for h in built.cls_heads]
  assert read.mlm_activation == config.hidden_activation
  rebuilt = bert_weight_map.build_pretrainer(read)
  assert ([(v.name, v.shape) for v in rebuilt.variables] ==
          [(v.name, v.shape) for v in pretrainer.variables])
