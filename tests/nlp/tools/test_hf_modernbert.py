"""Tests for official/nlp/tools/hf_modernbert.py against transformers' PyTorch ModernBERT.

transformers and torch are test-only dependencies (setup.py's `test` extra); the module under test
reads and writes safetensors with numpy and never imports them.
"""

import ast
import json
import os

os.environ.setdefault('USE_TF', '0')  # transformers must not reach for TensorFlow itself

import numpy as np
import pytest
from safetensors import numpy as safetensors_numpy
import tensorflow as tf
import tf_keras
import torch
import transformers

import official.common.registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import task_factory
from official.core import train_utils
from official.modeling import hyperparams
from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.modeling import layers
from official.nlp.modeling import networks
from official.nlp.modeling.networks import modernbert_encoder_config
from official.nlp.tools import bert_weight_map
from official.nlp.tools import convert_checkpoint
from official.nlp.tools import hf_modernbert
from tests.paths import ROOT

TOLERANCE = 1e-4
# Tiny: 3 layers, global at 0 and 2 (every 2), a local window of 8 (|i - j| <= 4) at seq 20 with
# different RoPE bases, so local and global layers really differ.
TINY = dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
            num_attention_heads=4, local_attention=8, global_attn_every_n_layers=2,
            max_position_embeddings=64, global_rope_theta=160000.0, local_rope_theta=10000.0,
            pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2)
SEQ, LENGTHS = 20, (20, 13)


def _hf_config(**overrides):
  return transformers.ModernBertConfig(**dict(TINY, **overrides))


def _perturb(model, seed):
  """Random values in every parameter (norm weights around 1, biases around 0)."""
  generator = torch.Generator().manual_seed(seed)
  with torch.no_grad():
    for name, parameter in model.named_parameters():
      noise = torch.randn(parameter.shape, generator=generator)
      parameter.copy_(1.0 + 0.2 * noise if 'norm' in name else 0.2 * noise)
  return model


def _hf_model(cls, seed=0, **overrides):
  torch.manual_seed(seed)
  model = cls._from_config(_hf_config(**overrides), attn_implementation='eager')
  return _perturb(model, seed).eval()


def _batch(vocab_size=TINY['vocab_size'], seed=1):
  rng = np.random.default_rng(seed)
  ids = rng.integers(3, vocab_size, size=(len(LENGTHS), SEQ)).astype(np.int32)
  mask = (np.arange(SEQ)[None] < np.array(LENGTHS)[:, None]).astype(np.int32)
  return ids * mask, mask


def _torch_forward(model, ids, mask):
  with torch.no_grad():
    outputs = model(input_ids=torch.tensor(ids, dtype=torch.long),
                    attention_mask=torch.tensor(mask, dtype=torch.long),
                    output_hidden_states=True)
  last = outputs.last_hidden_state if hasattr(outputs, 'last_hidden_state') else None
  if last is None:
    last = outputs.hidden_states[-1]
  logits = getattr(outputs, 'logits', None)
  return last.numpy(), None if logits is None else logits.numpy()


def _ours(model, ids, mask):
  """(sequence_output, mlm_logits at every position or None) of our encoder or pretrainer."""
  inputs = {'input_word_ids': tf.constant(ids), 'input_mask': tf.constant(mask),
            'input_type_ids': tf.zeros_like(tf.constant(ids))}
  if isinstance(model, networks.ModernBertEncoder):
    return model(inputs)['sequence_output'].numpy(), None
  positions = np.broadcast_to(np.arange(SEQ, dtype=np.int32), ids.shape)
  outputs = model(dict(inputs, masked_lm_positions=tf.constant(positions)))
  return outputs['sequence_output'].numpy(), outputs['mlm_logits'].numpy()


def _max_diff(a, b, mask):
  """Largest |a - b| over the non-padded positions."""
  keep = mask.astype(bool)
  return float(np.abs(a[keep] - b[keep]).max())


def _hidden_states_of_masked_lm(model, ids, mask):
  with torch.no_grad():
    return model.model(input_ids=torch.tensor(ids, dtype=torch.long),
                       attention_mask=torch.tensor(mask, dtype=torch.long)
                       ).last_hidden_state.numpy()


# ---- Hugging Face -> ours ---------------------------------------------------------------------
@pytest.mark.slow
def test_masked_lm_imports_and_matches_pytorch(tmp_path):
  hf = _hf_model(transformers.ModernBertForMaskedLM, seed=0)
  hf.save_pretrained(tmp_path / 'hf')  # safetensors, decoder tied (not written)
  names = safetensors_numpy.load_file(str(tmp_path / 'hf' / 'model.safetensors'))
  assert 'model.layers.0.attn.Wqkv.weight' in names and 'decoder.weight' not in names
  ids, mask = _batch()
  expected_hidden = _hidden_states_of_masked_lm(hf, ids, mask)
  with torch.no_grad():
    expected_logits = hf(input_ids=torch.tensor(ids, dtype=torch.long),
                         attention_mask=torch.tensor(mask, dtype=torch.long)).logits.numpy()

  pretrainer = hf_modernbert.load_pretrainer(str(tmp_path / 'hf'))
  encoder = pretrainer.encoder_network
  assert [b.attention_window for b in encoder.transformer_layers] == [None, 8, None]
  assert pretrainer.masked_lm.get_config()['activation'] == 'exact_gelu'
  hidden, logits = _ours(pretrainer, ids, mask)
  hidden_diff = _max_diff(hidden, expected_hidden, mask)
  logits_diff = _max_diff(logits, expected_logits, mask)
  print(f'HF -> ours: max |hidden diff| {hidden_diff:.2e}, max |logit diff| {logits_diff:.2e}')
  assert hidden_diff < TOLERANCE and logits_diff < TOLERANCE
  assert np.abs(expected_logits).max() > 1.0  # not trivially small numbers

  # The same directory as an encoder: the head is skipped, the hidden states are the same.
  encoder_only = hf_modernbert.load_encoder(str(tmp_path / 'hf'))
  assert _max_diff(_ours(encoder_only, ids, mask)[0], expected_hidden, mask) < TOLERANCE


@pytest.mark.slow
def test_local_layers_and_erf_gelu_matter(tmp_path):
  """The comparison can fail: a global layer 1 or the tanh GELU gives other outputs."""
  hf = _hf_model(transformers.ModernBertModel, seed=4)
  hf.save_pretrained(tmp_path / 'hf')
  ids, mask = _batch()
  expected, _ = _torch_forward(hf, ids, mask)
  config, _ = hf_modernbert.read_config(str(tmp_path / 'hf'))
  for change in ({'global_attn_every_n_layers': 1, 'layer_types': None},
                 {'hidden_activation': 'gelu_new'}):
    with open(tmp_path / 'hf' / 'config.json', 'w', encoding='utf-8') as f:
      json.dump(dict(config, **change), f)
    wrong, _ = _ours(hf_modernbert.load_encoder(str(tmp_path / 'hf')), ids, mask)
    assert _max_diff(wrong, expected, mask) > 10 * TOLERANCE, change


@pytest.mark.slow
def test_base_model_without_prefix_and_legacy_config(tmp_path):
  """A `ModernBertModel` (no `model.` prefix) with a transformers 4.x config (no layer_types,
  no rope_parameters) and global layers every 3."""
  hf = _hf_model(transformers.ModernBertModel, seed=2, global_attn_every_n_layers=3,
                 local_rope_theta=5000.0)
  hf.save_pretrained(tmp_path / 'hf')
  path = tmp_path / 'hf' / 'config.json'
  config = json.loads(path.read_text())
  assert not any(name.startswith('model.') for name in safetensors_numpy.load_file(
      str(tmp_path / 'hf' / 'model.safetensors')))
  for key in ('layer_types', 'rope_parameters'):
    del config[key]
  # ... plus fields of ModernBERT-base's Hub config that change nothing here.
  config.update(global_rope_theta=160000.0, local_rope_theta=5000.0, classifier_pooling='mean',
                layer_norm_eps=1e-5, position_embedding_type='absolute', reference_compile=True)
  path.write_text(json.dumps(config))
  encoder = hf_modernbert.load_encoder(str(tmp_path / 'hf'))
  assert [b.attention_window for b in encoder.transformer_layers] == [None, 8, 8]
  ids, mask = _batch()
  expected, _ = _torch_forward(hf, ids, mask)
  assert _max_diff(_ours(encoder, ids, mask)[0], expected, mask) < TOLERANCE
  with pytest.raises(ValueError, match=r'no masked-LM head .*load_encoder'):
    hf_modernbert.load_pretrainer(str(tmp_path / 'hf'))



def test_decoder_without_bias_loads_with_a_zero_bias(tmp_path):
  hf = _hf_model(transformers.ModernBertForMaskedLM, seed=11, decoder_bias=False)
  hf.save_pretrained(tmp_path / 'hf')
  pretrainer = hf_modernbert.load_pretrainer(str(tmp_path / 'hf'))
  assert not np.any(pretrainer.masked_lm.bias.numpy())
  ids, mask = _batch()
  with torch.no_grad():
    expected = hf(input_ids=torch.tensor(ids, dtype=torch.long),
                  attention_mask=torch.tensor(mask, dtype=torch.long)).logits.numpy()
  assert _max_diff(_ours(pretrainer, ids, mask)[1], expected, mask) < TOLERANCE

# ---- ours -> Hugging Face ---------------------------------------------------------------------
def _random_pretrainer(seed=5, mlm_activation='exact_gelu'):
  encoder_config = modernbert_encoder_config.ModernBertEncoderConfig(
      vocab_size=TINY['vocab_size'], hidden_size=32, num_layers=3, num_attention_heads=4,
      intermediate_size=48, local_attention=4, global_attn_every_n_layers=3,
      max_position_embeddings=64, local_rope_theta=20000.0)
  pretrainer = bert_weight_map.build_pretrainer(bert.PretrainerConfig(
      encoder=encoders.EncoderConfig(type='modernbert', modernbert=encoder_config),
      mlm_activation=mlm_activation))
  rng = np.random.default_rng(seed)
  for variable in pretrainer.trainable_variables:
    center = 1.0 if 'norm' in variable.name.lower() else 0.0
    variable.assign(center + rng.normal(0.0, 0.2, size=variable.shape).astype(np.float32))
  return pretrainer


@pytest.mark.slow
def test_export_loads_in_transformers_with_the_same_outputs(tmp_path):
  pretrainer = _random_pretrainer()
  vocab = tmp_path / 'vocab.txt'
  vocab.write_text('\n'.join(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] +
                             [f'w{i}' for i in range(TINY['vocab_size'] - 5)]) + '\n')
  out = hf_modernbert.export(pretrainer, str(tmp_path / 'hf'), vocab_file=str(vocab))
  config = json.loads((tmp_path / 'hf' / 'config.json').read_text())
  assert config['architectures'] == ['ModernBertForMaskedLM']
  assert (config['pad_token_id'], config['cls_token_id'], config['sep_token_id'],
          config['mask_token_id'], config['bos_token_id']) == (0, 2, 3, 4, 2)
  assert config['layer_types'] == ['full_attention', 'sliding_attention', 'sliding_attention']
  assert (tmp_path / 'hf' / 'vocab.txt').read_text() == vocab.read_text()
  hf = transformers.ModernBertForMaskedLM.from_pretrained(out, attn_implementation='sdpa').eval()
  assert hf.config.local_attention == 4 and hf.config.classifier_activation == 'gelu'
  assert hf.decoder.weight.data_ptr() == hf.model.embeddings.tok_embeddings.weight.data_ptr()
  ids, mask = _batch(seed=7)
  expected_hidden, expected_logits = _ours(pretrainer, ids, mask)
  hidden = _hidden_states_of_masked_lm(hf, ids, mask)
  with torch.no_grad():
    logits = hf(input_ids=torch.tensor(ids, dtype=torch.long),
                attention_mask=torch.tensor(mask, dtype=torch.long)).logits.numpy()
  hidden_diff = _max_diff(hidden, expected_hidden, mask)
  logits_diff = _max_diff(logits, expected_logits, mask)
  print(f'ours -> HF: max |hidden diff| {hidden_diff:.2e}, max |logit diff| {logits_diff:.2e}')
  assert hidden_diff < TOLERANCE and logits_diff < TOLERANCE

  # And back: the same weights, bit for bit.
  again = hf_modernbert.load_pretrainer(out)
  for ours, theirs in zip(pretrainer.trainable_variables, again.trainable_variables):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.name)


def test_export_encoder_and_tanh_head(tmp_path):
  pretrainer = _random_pretrainer(seed=6, mlm_activation='gelu')
  out = hf_modernbert.export(pretrainer.encoder_network, str(tmp_path / 'encoder'))
  config = json.loads((tmp_path / 'encoder' / 'config.json').read_text())
  assert config['architectures'] == ['ModernBertModel'] and config['pad_token_id'] is None
  hf = transformers.ModernBertModel.from_pretrained(out, attn_implementation='eager').eval()
  ids, mask = _batch(seed=8)
  expected, _ = _ours(pretrainer.encoder_network, ids, mask)
  assert _max_diff(_torch_forward(hf, ids, mask)[0], expected, mask) < TOLERANCE
  # Our tanh-GELU head is written as `gelu_new` and computes the same logits in PyTorch.
  out = hf_modernbert.export(pretrainer, str(tmp_path / 'mlm'))
  hf = transformers.ModernBertForMaskedLM.from_pretrained(out, attn_implementation='eager').eval()
  assert hf.config.classifier_activation == 'gelu_new'
  with torch.no_grad():
    logits = hf(input_ids=torch.tensor(ids, dtype=torch.long),
                attention_mask=torch.tensor(mask, dtype=torch.long)).logits.numpy()
  assert _max_diff(logits, _ours(pretrainer, ids, mask)[1], mask) < TOLERANCE


def test_export_refuses_models_without_hugging_face_names(tmp_path):
  pretrainer = _random_pretrainer()
  encoder = pretrainer.encoder_network
  heads = bert_weight_map.build_pretrainer(bert.PretrainerConfig(
      encoder=encoders.EncoderConfig(type='modernbert', modernbert=hf_modernbert.encoder_config_of(
          encoder)), cls_heads=[bert.ClsHeadConfig(inner_dim=32, num_classes=2, name='nsp')]))
  with pytest.raises(ValueError, match=r"classification heads \['nsp'\] .*expected none"):
    hf_modernbert.export(heads, str(tmp_path / 'a'))
  from official.nlp.modeling import models  # pylint: disable=g-import-not-at-top
  biased = models.BertPretrainerV2(encoder, customized_masked_lm=layers.MaskedLM(
      encoder.get_embedding_table(), activation='exact_gelu'))
  with pytest.raises(ValueError, match=r"masked-LM head options \{'use_bias': True.*expected "
                                       r"\{'use_bias': False"):
    hf_modernbert.export(biased, str(tmp_path / 'b'))
  with pytest.raises(TypeError, match='expected a ModernBertEncoder .* found BertEncoder'):
    hf_modernbert.export(networks.BertEncoder(vocab_size=10, num_layers=1, hidden_size=8,
                                              num_attention_heads=2), str(tmp_path / 'c'))
  with pytest.raises(ValueError, match=r'mask_token_id is 200; expected null or an id in '
                                       r'\[0, 97\)'):
    hf_modernbert.export(pretrainer, str(tmp_path / 'd'), token_ids={'mask_token_id': 200})
  assert not os.path.exists(tmp_path / 'd')


# ---- refused configs ----------------------------------------------------------------------------
def _config_dir(tmp_path, **changes):
  config = _hf_config().to_dict()
  config.update(changes)
  directory = tmp_path / 'refused'
  directory.mkdir(exist_ok=True)
  (directory / 'config.json').write_text(json.dumps(config))
  return str(directory)


@pytest.mark.parametrize('changes, message', [
    ({'norm_bias': True}, r'config.json: norm_bias is true; expected false \(ModernBertEncoder has '
                          r'no biases\)'),
    ({'attention_bias': True}, r'attention_bias is true; expected false'),
    ({'mlp_bias': True}, r'mlp_bias is true; expected false'),
    ({'hidden_activation': 'gelu_10'}, r"hidden_activation is 'gelu_10'; expected one of \["),
    ({'layer_types': ['full_attention', 'full_attention', 'sliding_attention']},
     r'layer_types is \["full_attention", "full_attention", "sliding_attention"\]; expected 3 '
     r"entries, 'full_attention' at layers i % n == 0"),
    ({'rope_parameters': {'full_attention': {'rope_type': 'linear', 'rope_theta': 1.0,
                                             'factor': 2.0}}},
     r"rope_parameters.full_attention.rope_type is 'linear'; expected 'default'"),
    ({'mlp_dropout': 0.1}, r'mlp_dropout is 0.1; expected embedding_dropout 0.0'),
    ({'head_dim': 16}, r'head_dim is 16; expected hidden_size // num_attention_heads = 8'),
    ({'num_attention_heads': 32},
     r'num_attention_heads: hidden_size 32 // num_attention_heads 32 = 1 must be even'),
    ({'model_type': 'bert'}, r"model_type is 'bert'; expected 'modernbert'"),
])
def test_refused_encoder_configs_name_field_expected_and_found(tmp_path, changes, message):
  with pytest.raises(ValueError, match=message) as raised:
    hf_modernbert.load_encoder(_config_dir(tmp_path, **changes))
  assert '\n' not in str(raised.value)


@pytest.mark.parametrize('changes, message', [
    ({'classifier_bias': True}, r'classifier_bias is true; expected false'),
    ({'classifier_activation': 'sigmoid'}, r"classifier_activation is 'sigmoid'; expected one of"),
    ({'tie_word_embeddings': False}, r'tie_word_embeddings is false; expected true'),
])
def test_refused_head_configs(tmp_path, changes, message):
  directory = tmp_path / 'hf'
  _hf_model(transformers.ModernBertForMaskedLM).save_pretrained(directory)
  config = json.loads((directory / 'config.json').read_text())
  (directory / 'config.json').write_text(json.dumps(dict(config, **changes)))
  with pytest.raises(ValueError, match=message):
    hf_modernbert.load_pretrainer(str(directory))


def test_sequence_classification_head_is_refused_and_its_encoder_loads(tmp_path, caplog):
  hf = _hf_model(transformers.ModernBertForSequenceClassification, num_labels=3,
                 classifier_pooling='mean')
  hf.save_pretrained(tmp_path / 'hf')
  with pytest.raises(ValueError, match=r"a task head .*ModernBertForSequenceClassification.*"
                                       r"classifier_pooling 'mean'.*no LayerNorm"):
    hf_modernbert.load_pretrainer(str(tmp_path / 'hf'))
  encoder = hf_modernbert.load_encoder(str(tmp_path / 'hf'))
  assert 'skips the head variables classifier.bias' in caplog.text
  ids, mask = _batch()
  assert _max_diff(_ours(encoder, ids, mask)[0], _hidden_states_of_masked_lm(hf, ids, mask),
                   mask) < TOLERANCE


def test_mismatched_weights_are_named(tmp_path):
  directory = tmp_path / 'hf'
  _hf_model(transformers.ModernBertForMaskedLM).save_pretrained(directory)
  tensors = safetensors_numpy.load_file(str(directory / 'model.safetensors'))
  tensors['model.layers.1.attn.Wqkv.weight'] = tensors['model.layers.1.attn.Wqkv.weight'][:64]
  tensors['decoder.weight'] = tensors['model.embeddings.tok_embeddings.weight'] + 1
  safetensors_numpy.save_file(tensors, str(directory / 'model.safetensors'))
  with pytest.raises(ValueError, match=r'decoder.weight differs from model.embeddings.tok_emb'):
    hf_modernbert.load_pretrainer(str(directory))
  del tensors['decoder.weight']
  safetensors_numpy.save_file(tensors, str(directory / 'model.safetensors'))
  with pytest.raises(ValueError, match=r'layers.1.attn.Wqkv.weight has shape \[64, 32\]; the '
                                       r'model built from its config expects \[96, 32\]'):
    hf_modernbert.load_pretrainer(str(directory))


def test_runtime_modules_never_import_torch_or_transformers():
  for path in ('official/nlp/tools/hf_modernbert.py', 'official/nlp/tools/convert_checkpoint.py',
               'official/nlp/modeling/layers/masked_lm.py',
               'official/nlp/modeling/models/bert_pretrainer.py'):
    with open(os.path.join(ROOT, path), encoding='utf-8') as f:
      tree = ast.parse(f.read())
    imported = {alias.name.split('.')[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or '').split('.')[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom)}
    assert not imported & {'torch', 'transformers'}, path


# ---- the conversion CLI and bert/pretraining ---------------------------------------------------
@pytest.mark.slow
def test_convert_checkpoint_hf_to_ours_to_hf(tmp_path, capsys):
  hf = _hf_model(transformers.ModernBertForMaskedLM, seed=9)
  hf.save_pretrained(tmp_path / 'hf')
  code = convert_checkpoint.main(['convert_checkpoint', '--source=hf', '--target=ours',
                                  f'--input={tmp_path / "hf"}',
                                  f'--output_dir={tmp_path / "ours"}'])
  assert code == 0, capsys.readouterr().err
  assert capsys.readouterr().out.strip() == (
      f'convert_checkpoint: wrote BertPretrainerV2 (hf -> ours) to {tmp_path / "ours"}')
  params = hyperparams.read_yaml(str(tmp_path / 'ours' / 'params.yaml'))['task']
  assert params['model']['encoder']['type'] == 'modernbert'
  assert params['model']['mlm_activation'] == 'exact_gelu'

  # The pretraining task restores it (init_checkpoint) and computes PyTorch's logits.
  overrides = ','.join(['task.train_data.input_path=dummy', 'task.train_data.seq_length=20',
                        'task.train_data.max_predictions_per_seq=3',
                        'task.train_data.global_batch_size=2',
                        'task.train_data.use_next_sentence_label=false',
                        'task.validation_data.seq_length=20',
                        'task.validation_data.max_predictions_per_seq=3'])
  run = train_utils.build_params('bert/pretraining', [str(tmp_path / 'ours' / 'params.yaml')],
                                 overrides)
  task = task_factory.get_task(run.task)
  model = task.build_model()
  task.initialize(model)
  ids, mask = _batch()
  with torch.no_grad():
    expected = hf(input_ids=torch.tensor(ids, dtype=torch.long),
                  attention_mask=torch.tensor(mask, dtype=torch.long)).logits.numpy()
  assert _max_diff(_ours(model, ids, mask)[1], expected, mask) < TOLERANCE

  # ours -> hf writes the same tensors, bit for bit, and a config transformers reads.
  code = convert_checkpoint.main(['convert_checkpoint', '--source=ours', '--target=hf',
                                  f'--input={tmp_path / "ours"}',
                                  f'--output_dir={tmp_path / "back"}'])
  assert code == 0, capsys.readouterr().err
  before = safetensors_numpy.load_file(str(tmp_path / 'hf' / 'model.safetensors'))
  after = safetensors_numpy.load_file(str(tmp_path / 'back' / 'model.safetensors'))
  assert sorted(before) == sorted(after)
  for name, value in before.items():
    np.testing.assert_array_equal(after[name], value, err_msg=name)
  again = transformers.ModernBertForMaskedLM.from_pretrained(str(tmp_path / 'back')).eval()
  assert again.config.layer_types == hf.config.layer_types

  capsys.readouterr()
  code = convert_checkpoint.main(['convert_checkpoint', '--source=hf', '--target=google',
                                  f'--input={tmp_path / "hf"}', f'--output_dir={tmp_path / "g"}'])
  assert code == 1
  assert capsys.readouterr().err == (
      'convert_checkpoint: error: --target=google: ModernBERT (BertPretrainerV2) has no '
      'Google BERT checkpoint layout; expected --target=hf or --target=ours\n')



def test_convert_encoder_only_round_trip(tmp_path):
  _hf_model(transformers.ModernBertModel, seed=10).save_pretrained(tmp_path / 'hf')
  ours = convert_checkpoint.convert('hf', 'ours', str(tmp_path / 'hf'), str(tmp_path / 'ours'))
  assert isinstance(ours, networks.ModernBertEncoder)
  back = convert_checkpoint.convert('ours', 'hf', str(tmp_path / 'ours'), str(tmp_path / 'back'))
  assert isinstance(back, networks.ModernBertEncoder)
  before = safetensors_numpy.load_file(str(tmp_path / 'hf' / 'model.safetensors'))
  after = safetensors_numpy.load_file(str(tmp_path / 'back' / 'model.safetensors'))
  assert sorted(before) == sorted(after)
  for name, value in before.items():
    np.testing.assert_array_equal(after[name], value, err_msg=name)


@pytest.mark.slow
def test_bert_pretraining_modernbert_trains_the_hugging_face_head(tmp_path):
  """configs/pretraining/modernbert_tiny.yaml: one train step, export, same logits in PyTorch."""
  overrides = ','.join([
      f'task.model.encoder.modernbert.vocab_size={TINY["vocab_size"]}',
      'task.model.encoder.modernbert.hidden_size=32',
      'task.model.encoder.modernbert.intermediate_size=48',
      'task.model.encoder.modernbert.local_attention=8', 'task.model.mlm_activation=exact_gelu',
      'task.train_data.input_path=dummy', 'task.train_data.seq_length=20',
      'task.train_data.max_predictions_per_seq=3', 'task.train_data.global_batch_size=4'])
  params = train_utils.build_params(
      'bert/pretraining', [os.path.join(ROOT, 'configs/pretraining/modernbert_tiny.yaml')],
      overrides)
  task = task_factory.get_task(params.task)
  model = task.build_model()
  batch = next(iter(task.build_inputs(params.task.train_data)))
  head_before = [v.numpy() for v in model.masked_lm.trainable_variables]
  task.train_step(batch, model, tf_keras.optimizers.Adam(1e-2), task.build_metrics())
  assert all(not np.array_equal(b, v.numpy())
             for b, v in zip(head_before, model.masked_lm.trainable_variables))
  hf = transformers.ModernBertForMaskedLM.from_pretrained(
      hf_modernbert.export(model, str(tmp_path / 'hf')), attn_implementation='eager').eval()
  ids, mask = _batch()
  hidden, logits = _ours(model, ids, mask)
  with torch.no_grad():
    expected = hf(input_ids=torch.tensor(ids, dtype=torch.long),
                  attention_mask=torch.tensor(mask, dtype=torch.long)).logits.numpy()
  assert _max_diff(logits, expected, mask) < TOLERANCE
  assert _max_diff(hidden, _hidden_states_of_masked_lm(hf, ids, mask), mask) < TOLERANCE
