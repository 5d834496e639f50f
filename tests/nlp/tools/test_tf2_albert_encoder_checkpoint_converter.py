"""Tests for official/nlp/tools/tf2_albert_encoder_checkpoint_converter.py on a tiny fake TF1 ALBERT
checkpoint written under Google ALBERT's variable names (tf.compat.v1's Saver), checked against a
numpy ALBERT that reads those arrays directly."""

import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import networks
from official.nlp.tools import tf2_albert_encoder_checkpoint_converter as converter
from tests.nlp.modeling import numpy_bert

# vocab, embedding, hidden, heads, inner (feed-forward), positions, token types
V, E, H, N, INNER, P, T = 30, 8, 16, 2, 32, 12, 2
LAYERS = 3
CONFIG = {'attention_probs_dropout_prob': 0, 'hidden_act': 'gelu', 'hidden_dropout_prob': 0,
          'embedding_size': E, 'hidden_size': H, 'initializer_range': 0.02,
          'intermediate_size': INNER, 'max_position_embeddings': P, 'num_attention_heads': N,
          'num_hidden_layers': LAYERS, 'num_hidden_groups': 1, 'net_structure_type': 0,
          'gap_size': 0, 'num_memory_blocks': 0, 'inner_group_num': 1, 'down_scale_factor': 1,
          'type_vocab_size': T, 'vocab_size': V}
BLOCK = 'bert/encoder/transformer/group_0/inner_group_0'
# Google ALBERT's names and shapes (modeling.py of google-research/albert).
SHAPES = {
    'bert/embeddings/word_embeddings': [V, E], 'bert/embeddings/position_embeddings': [P, E],
    'bert/embeddings/token_type_embeddings': [T, E],
    'bert/embeddings/LayerNorm/gamma': [E], 'bert/embeddings/LayerNorm/beta': [E],
    'bert/encoder/embedding_hidden_mapping_in/kernel': [E, H],
    'bert/encoder/embedding_hidden_mapping_in/bias': [H],
    **{f'{BLOCK}/attention_1/self/{name}/{part}': shape for name in ('query', 'key', 'value')
       for part, shape in (('kernel', [H, H]), ('bias', [H]))},
    f'{BLOCK}/attention_1/output/dense/kernel': [H, H],
    f'{BLOCK}/attention_1/output/dense/bias': [H],
    f'{BLOCK}/LayerNorm/gamma': [H], f'{BLOCK}/LayerNorm/beta': [H],
    f'{BLOCK}/ffn_1/intermediate/dense/kernel': [H, INNER],
    f'{BLOCK}/ffn_1/intermediate/dense/bias': [INNER],
    f'{BLOCK}/ffn_1/intermediate/output/dense/kernel': [INNER, H],
    f'{BLOCK}/ffn_1/intermediate/output/dense/bias': [H],
    f'{BLOCK}/LayerNorm_1/gamma': [H], f'{BLOCK}/LayerNorm_1/beta': [H],
    'bert/pooler/dense/kernel': [H, H], 'bert/pooler/dense/bias': [H],
}
HEADS = {
    'cls/predictions/transform/dense/kernel': [H, E], 'cls/predictions/transform/dense/bias': [E],
    'cls/predictions/transform/LayerNorm/gamma': [E],
    'cls/predictions/transform/LayerNorm/beta': [E], 'cls/predictions/output_bias': [V],
    'cls/seq_relationship/output_weights': [2, H], 'cls/seq_relationship/output_bias': [2],
}


def _arrays(seed=0, names=None):
  rng = np.random.default_rng(seed)
  shapes = dict(SHAPES, **HEADS)
  return {name: rng.normal(0.0, 0.5, shapes[name]).astype(np.float32)
          for name in (names or shapes)}


def _write(directory, arrays, config=None):
  """`albert_config.json` and a TF1 checkpoint `model.ckpt-best` (+ Adam slots, global_step)."""
  os.makedirs(directory, exist_ok=True)
  config_path = os.path.join(directory, 'albert_config.json')
  with open(config_path, 'w', encoding='utf-8') as f:
    json.dump(config or CONFIG, f)
  variables = {name: tf.Variable(value) for name, value in arrays.items()}
  variables['global_step'] = tf.Variable(100, dtype=tf.int64)
  first = sorted(arrays)[0]
  variables[f'{first}/adam_m'] = tf.Variable(np.zeros_like(arrays[first]))
  variables[f'{first}/adam_v'] = tf.Variable(np.zeros_like(arrays[first]))
  prefix = os.path.join(directory, 'model.ckpt-best')
  tf.compat.v1.train.Saver(var_list=variables).save(None, prefix, write_meta_graph=False)
  return config_path, prefix


def _inputs():
  ids = np.array([[2, 7, 9, 11, 3, 0], [2, 5, 3, 6, 8, 3]], np.int32)
  mask = (ids > 0).astype(np.int32)
  types = np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]], np.int32)
  positions = np.array([[1, 2], [3, 4]], np.int32)
  return ids, mask, types, positions


def _numpy_albert(w, ids, mask, types):
  """Sequence and pooled outputs of ALBERT from Google-named arrays (their own layouts)."""
  x = numpy_bert.layer_norm(
      w['bert/embeddings/word_embeddings'][ids]
      + w['bert/embeddings/position_embeddings'][:ids.shape[1]][None]
      + w['bert/embeddings/token_type_embeddings'][types],
      w['bert/embeddings/LayerNorm/gamma'], w['bert/embeddings/LayerNorm/beta'])
  x = (x @ w['bert/encoder/embedding_hidden_mapping_in/kernel']
       + w['bert/encoder/embedding_hidden_mapping_in/bias'])
  block = {}
  for name in ('query', 'key', 'value'):  # [hidden, heads*size] -> [hidden, heads, size]
    block[f'{name}/kernel'] = w[f'{BLOCK}/attention_1/self/{name}/kernel'].reshape(H, N, H // N)
    block[f'{name}/bias'] = w[f'{BLOCK}/attention_1/self/{name}/bias'].reshape(N, H // N)
  block['attention_output/kernel'] = w[f'{BLOCK}/attention_1/output/dense/kernel'].reshape(
      N, H // N, H)
  block['attention_output/bias'] = w[f'{BLOCK}/attention_1/output/dense/bias']
  block['self_attention_layer_norm'] = [w[f'{BLOCK}/LayerNorm/gamma'], w[f'{BLOCK}/LayerNorm/beta']]
  block['output_layer_norm'] = [w[f'{BLOCK}/LayerNorm_1/gamma'], w[f'{BLOCK}/LayerNorm_1/beta']]
  block['intermediate'] = [w[f'{BLOCK}/ffn_1/intermediate/dense/kernel'],
                           w[f'{BLOCK}/ffn_1/intermediate/dense/bias']]
  block['output'] = [w[f'{BLOCK}/ffn_1/intermediate/output/dense/kernel'],
                     w[f'{BLOCK}/ffn_1/intermediate/output/dense/bias']]
  for _ in range(LAYERS):
    x = numpy_bert.transformer_block(x, mask.astype(np.float32), block)
  pooled = np.tanh(x[:, 0] @ w['bert/pooler/dense/kernel'] + w['bert/pooler/dense/bias'])
  return x, pooled


def test_google_names_of_the_table_are_albert_checkpoint_names():
  encoder = converter.build_model(converter.read_albert_config(CONFIG))
  entries = converter.albert_encoder_entries(encoder)
  assert {e.google_name for e in entries} == set(SHAPES)
  assert len(entries) == len(SHAPES) == len(encoder.weights)


@pytest.mark.slow
def test_encoder_conversion_matches_numpy_albert(tmp_path, caplog):
  arrays = _arrays()
  config_path, prefix = _write(str(tmp_path / 'albert'), arrays)
  out = str(tmp_path / 'out' / 'albert')
  with caplog.at_level(logging.WARNING):
    assert converter.convert_checkpoint(config_path, out, prefix) == out
  assert 'skips the head variables cls/predictions/output_bias' in caplog.text
  encoder = converter.build_model(converter.read_albert_config(config_path))
  assert type(encoder) is networks.AlbertEncoder
  tf.train.Checkpoint(encoder=encoder).read(out).assert_consumed()
  ids, mask, types, _ = _inputs()
  outputs = encoder([ids, mask, types])
  sequence, pooled = _numpy_albert(arrays, ids, mask, types)
  np.testing.assert_allclose(outputs['sequence_output'], sequence, atol=1e-4)
  np.testing.assert_allclose(outputs['pooled_output'], pooled, atol=1e-4)
  # Model Garden's checkpoint keys.
  keys = {name.split('/.ATTRIBUTES/')[0] for name, _ in tf.train.list_variables(out)}
  assert 'encoder/layer_with_weights-4/kernel' in keys  # embedding_projection
  assert ('encoder/layer_with_weights-5/_attention_layer/_query_dense/kernel') in keys


@pytest.mark.slow
def test_pretrainer_conversion_with_sentence_order_head(tmp_path):
  arrays = _arrays(seed=1)
  config_path, prefix = _write(str(tmp_path / 'albert'), arrays)
  model = converter.load_model(config_path, prefix, 'pretrainer')
  ids, mask, types, positions = _inputs()
  outputs = model(dict(input_word_ids=ids, input_mask=mask, input_type_ids=types,
                       masked_lm_positions=positions))
  sequence, pooled = _numpy_albert(arrays, ids, mask, types)
  # Google's masked-LM head: dense (hidden -> embedding) + gelu, LayerNorm, tied table + bias.
  gathered = np.take_along_axis(sequence, positions[..., None], axis=1)
  h = numpy_bert.gelu_tanh(gathered @ arrays['cls/predictions/transform/dense/kernel']
                           + arrays['cls/predictions/transform/dense/bias'])
  h = numpy_bert.layer_norm(h, arrays['cls/predictions/transform/LayerNorm/gamma'],
                            arrays['cls/predictions/transform/LayerNorm/beta'])
  logits = h @ arrays['bert/embeddings/word_embeddings'].T + arrays['cls/predictions/output_bias']
  np.testing.assert_allclose(outputs['mlm_logits'], logits, atol=1e-3)
  sop = pooled @ arrays['cls/seq_relationship/output_weights'].T + arrays[
      'cls/seq_relationship/output_bias']
  np.testing.assert_allclose(outputs['next_sentence'], sop, atol=1e-4)

  out = str(tmp_path / 'out' / 'pretrainer')
  converter.convert_checkpoint(config_path, out, prefix, checkpoint_model_name='model',
                               converted_model='pretrainer')
  fresh = converter.build_model(converter.read_albert_config(config_path), 'pretrainer', True)
  tf.train.Checkpoint(**dict(fresh.checkpoint_items, model=fresh)).read(out).assert_consumed()
  for a, b in zip(model.weights, fresh.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.slow
@pytest.mark.parametrize('change, message', [
    (lambda a: a.pop(f'{BLOCK}/LayerNorm_1/gamma'),
     rf'missing 1 variable\(s\): {BLOCK}/LayerNorm_1/gamma'),
    (lambda a: a.update({'bert/embeddings/word_embeddings': np.zeros([V, H], np.float32)}),
     r'variable bert/embeddings/word_embeddings has shape \[30, 16\]; the model built from its '
     r'config expects \[30, 8\]'),
    (lambda a: a.update({'bert/encoder/transformer/group_1/x': np.zeros([2], np.float32)}),
     r'1 unused variable\(s\): bert/encoder/transformer/group_1/x'),
])
def test_bad_checkpoints_are_named(tmp_path, change, message):
  arrays = _arrays()
  change(arrays)
  config_path, prefix = _write(str(tmp_path / 'albert'), arrays)
  with pytest.raises(ValueError, match=message):
    converter.convert_checkpoint(config_path, str(tmp_path / 'out' / 'x'), prefix)


def test_bad_configs_and_options_are_named(tmp_path):
  config_path, prefix = _write(str(tmp_path / 'albert'), _arrays(names=list(SHAPES)))
  with pytest.raises(ValueError, match=r'num_hidden_groups 2 is not supported'):
    converter.load_model(dict(CONFIG, num_hidden_groups=2), prefix)
  with pytest.raises(ValueError, match=r'no masked-LM head \(cls/predictions/output_bias is '
                     r'missing\); convert it with --converted_model=encoder'):
    converter.load_model(config_path, prefix, 'pretrainer')
  with pytest.raises(ValueError, match=r"--checkpoint_model_name=encoder names one of the "
                     r"pretrainer's checkpoint items"):
    converter.convert_checkpoint(config_path, str(tmp_path / 'o'), prefix,
                                 converted_model='pretrainer')
  with pytest.raises(FileNotFoundError, match='--checkpoint_to_convert=.*nope: no checkpoint'):
    converter.load_model(config_path, str(tmp_path / 'nope'))
  with pytest.raises(FileNotFoundError, match='--albert_config_file=.*missing.json: no such file'):
    converter.load_model(str(tmp_path / 'missing.json'), prefix)


def test_command_line(tmp_path, capsys):
  config_path, prefix = _write(str(tmp_path / 'albert'), _arrays())
  out = str(tmp_path / 'out' / 'albert')
  argv = ['converter', f'--albert_config_file={config_path}', f'--checkpoint_to_convert={prefix}',
          f'--converted_checkpoint_path={out}']
  assert converter.main(argv) == 0
  assert f'wrote the encoder checkpoint {out}' in capsys.readouterr().out
  assert tf.io.gfile.exists(out + '.index')
  # An existing output is refused (one line), unless --overwrite.
  assert converter.main(argv) == 1
  assert 'error: --converted_checkpoint_path' in capsys.readouterr().err
  assert converter.main(argv + ['--overwrite']) == 0
  assert converter.main(['converter', f'--albert_config_file={config_path}']) == 2
  assert 'missing --checkpoint_to_convert, --converted_checkpoint_path' in (
      capsys.readouterr().err)
