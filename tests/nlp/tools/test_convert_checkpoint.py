"""Tests for official/nlp/tools/convert_checkpoint.py (hf / google / ours conversions and the CLI)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import official.common.registry_imports  # pylint: disable=unused-import
from official.core import task_factory
from official.core import train_utils
from official.modeling import hyperparams
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.tools import convert_checkpoint
from official.nlp.tools import google_bert
from official.nlp.tools import hf_bert
from tests.nlp.tools import numpy_hf_bert as ref

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
_SMALL_DATA = ('task.train_data.seq_length=8,task.train_data.max_predictions_per_seq=2,'
               'task.validation_data.seq_length=8,task.validation_data.max_predictions_per_seq=2')


def _hf_dir(directory, mlm=True, nsp=True):
  config = ref.tiny_config()
  weights = ref.random_weights(config, mlm=mlm, nsp=nsp)
  ref.write_hf_dir(directory, config, weights, prefix='bert.' if mlm else '')
  (directory / 'vocab.txt').write_text('[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n')
  return str(directory), config, weights


def _inputs(config):
  ids, mask, types = ref.random_inputs(config)
  return {'input_word_ids': ids, 'input_mask': mask, 'input_type_ids': types,
          'masked_lm_positions': np.array([[1, 3], [0, 2]], np.int32)}


def _task_from(params_yaml):
  """The MaskedLMTask of `bert/pretraining` overridden by `params_yaml` (as --config_file)."""
  params = train_utils.build_params('bert/pretraining', [params_yaml], _SMALL_DATA)
  return task_factory.get_task(params.task)


def test_hf_to_ours_is_restored_by_masked_lm_task_initialize(tmp_path):
  source, config, weights = _hf_dir(tmp_path / 'hf')
  out = str(tmp_path / 'ours')
  converted = convert_checkpoint.convert('hf', 'ours', source, out)
  assert isinstance(converted, models.BertPretrainerV2)
  assert (tmp_path / 'ours' / 'vocab.txt').read_text().startswith('[PAD]\n')
  params = hyperparams.read_yaml(os.path.join(out, 'params.yaml'))['task']
  assert params['init_checkpoint'] == os.path.join(out, 'ckpt-1')
  assert params['model']['encoder']['bert']['hidden_activation'] == 'exact_gelu'
  assert [h['name'] for h in params['model']['cls_heads']] == ['next_sentence']

  task = _task_from(os.path.join(out, 'params.yaml'))
  model = task.build_model()
  task.initialize(model)
  inputs = _inputs(config)
  outputs = model(inputs)
  ids, mask, types = (inputs[k] for k in ('input_word_ids', 'input_mask', 'input_type_ids'))
  seq, pooled = ref.encoder(weights, config, ids, mask, types)
  np.testing.assert_allclose(outputs['mlm_logits'].numpy(),
                             ref.mlm_logits(weights, config, seq, inputs['masked_lm_positions']),
                             atol=1e-4)
  np.testing.assert_allclose(outputs['next_sentence'].numpy(), ref.nsp_logits(weights, pooled),
                             atol=1e-5)


def test_training_model_dir_to_hf_and_google(tmp_path):
  model_dir = str(tmp_path / 'run')
  params = train_utils.build_params('bert/pretraining', [], _SMALL_DATA + (
      ',task.model.encoder.bert.vocab_size=40,task.model.encoder.bert.hidden_size=16,'
      'task.model.encoder.bert.num_layers=2,task.model.encoder.bert.num_attention_heads=2,'
      'task.model.encoder.bert.intermediate_size=32,'
      'task.model.encoder.bert.max_position_embeddings=12,task.model.cls_heads=[]'))
  train_utils.write_params(params, model_dir)
  task = task_factory.get_task(params.task)
  model = task.build_model()
  rng = np.random.default_rng(0)
  for variable in model.variables:
    variable.assign(rng.normal(0.0, 0.5, size=variable.shape).astype(np.float32))
  # The layout train_lib saves: global step, the model, and its checkpoint items.
  checkpoint = tf.train.Checkpoint(global_step=tf.Variable(3, dtype=tf.int64), model=model,
                                   **model.checkpoint_items)
  tf.train.CheckpointManager(checkpoint, model_dir, max_to_keep=1).save(3)

  convert_checkpoint.convert('ours', 'hf', model_dir, str(tmp_path / 'hf'))
  convert_checkpoint.convert('ours', 'google', model_dir, str(tmp_path / 'google'))
  inputs = _inputs(ref.tiny_config())
  expected = model(inputs)['mlm_logits'].numpy()
  for loaded in (hf_bert.load_pretrainer(str(tmp_path / 'hf')),
                 google_bert.load_pretrainer(str(tmp_path / 'google'))):
    assert not loaded.classification_heads
    np.testing.assert_array_equal(loaded(inputs)['mlm_logits'].numpy(), expected)


def test_google_to_ours_to_google_keeps_every_tensor(tmp_path):
  source, _, _ = _hf_dir(tmp_path / 'hf')
  convert_checkpoint.convert('hf', 'google', source, str(tmp_path / 'g1'))
  convert_checkpoint.convert('google', 'ours', str(tmp_path / 'g1'), str(tmp_path / 'ours'))
  convert_checkpoint.convert('ours', 'google', str(tmp_path / 'ours'), str(tmp_path / 'g2'))
  first = tf.train.load_checkpoint(str(tmp_path / 'g1' / 'bert_model.ckpt'))
  second = tf.train.load_checkpoint(str(tmp_path / 'g2' / 'bert_model.ckpt'))
  names = sorted(first.get_variable_to_shape_map())
  assert names == sorted(second.get_variable_to_shape_map()) and len(names) == 46
  for name in names:
    np.testing.assert_array_equal(first.get_tensor(name), second.get_tensor(name), err_msg=name)
  assert (tmp_path / 'g2' / 'vocab.txt').exists()


def test_encoder_only_checkpoint_converts_as_encoder(tmp_path):
  source, config, weights = _hf_dir(tmp_path / 'hf', mlm=False, nsp=False)
  out = str(tmp_path / 'ours')
  assert isinstance(convert_checkpoint.convert('hf', 'ours', source, out), networks.BertEncoder)
  encoder = convert_checkpoint.read_ours(out)
  assert isinstance(encoder, networks.BertEncoder)
  np.testing.assert_array_equal(encoder.get_embedding_table().numpy(),
                                weights['embeddings.word_embeddings.weight'])
  # The task restores the encoder and leaves the heads fresh.
  task = _task_from(os.path.join(out, 'params.yaml'))
  model = task.build_model()
  task.initialize(model)
  inputs = _inputs(config)
  ids, mask, types = (inputs[k] for k in ('input_word_ids', 'input_mask', 'input_type_ids'))
  np.testing.assert_allclose(model(inputs)['sequence_output'].numpy(),
                             ref.encoder(weights, config, ids, mask, types)[0], atol=1e-5)


def test_read_ours_errors(tmp_path):
  with pytest.raises(FileNotFoundError, match='no checkpoint found'):
    convert_checkpoint.read_ours(str(tmp_path))
  tf.train.Checkpoint(v=tf.Variable(1.0)).save(str(tmp_path / 'ckpt'))
  hyperparams.save_yaml({'task': {'model': {'encoder': {'type': 'bert'}}}},
                        str(tmp_path / 'params.yaml'))
  with pytest.raises(ValueError, match=r"no `encoder` in the checkpoint \(it has \['v'\]\)"):
    convert_checkpoint.read_ours(str(tmp_path))


def test_cli_converts_and_reports(tmp_path, capsys):
  source, _, _ = _hf_dir(tmp_path / 'hf')
  flags = convert_checkpoint.FLAGS
  try:
    flags(['convert_checkpoint', '--source=hf', '--target=google', f'--input={source}',
           f'--output={tmp_path / "google"}'])
    convert_checkpoint._run(['convert_checkpoint'])  # pylint: disable=protected-access
    assert capsys.readouterr().out.strip() == (
        f'convert_checkpoint: wrote BertPretrainerV2 (hf -> google) to {tmp_path / "google"}')
    flags.unparse_flags()
    flags(['convert_checkpoint', '--source=google', '--target=hf', f'--input={source}',
           f'--output={tmp_path / "x"}'])
    with pytest.raises(SystemExit) as exit_info:
      convert_checkpoint._run(['convert_checkpoint'])  # pylint: disable=protected-access
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == (
        f'convert_checkpoint: error: {source}: no checkpoint (expected bert_model.ckpt.index or a '
        '`checkpoint` state file)\n')
  finally:
    flags.unparse_flags()
  assert google_bert.load_pretrainer(str(tmp_path / 'google')).classification_heads


def test_cli_module_exits_1_with_one_error_line(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'official.nlp.tools.convert_checkpoint', '--source=hf',
       '--target=ours', f'--input={tmp_path / "missing"}', f'--output={tmp_path / "out"}'],
      cwd=_REPO, capture_output=True, text=True, timeout=120, check=False)
  assert result.returncode == 1
  errors = [line for line in result.stderr.splitlines() if 'convert_checkpoint' in line]
  assert errors == [f'convert_checkpoint: error: {tmp_path / "missing"}: no config.json (a Hugging '
                    'Face BERT directory holds config.json and model.safetensors)']
  assert not (tmp_path / 'out').exists()
