"""Tests for official/nlp/tools/convert_checkpoint.py (hf / google / ours conversions and the
CLI)."""

import json
import logging
import os
import re

import numpy as np
import pytest
import tensorflow as tf

import official.common.registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import task_factory
from official.core import train_utils
from official.modeling import hyperparams
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.tools import convert_checkpoint
from official.nlp.tools import google_bert
from official.nlp.tools import hf_bert
from tests import testing
from tests.cli import call_main
from tests.nlp.tools import numpy_hf_bert as ref

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


@pytest.mark.slow
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


@pytest.mark.slow
def test_training_model_dir_to_hf_and_google(tmp_path):
  model_dir = str(tmp_path / 'run')
  params = train_utils.build_params('bert/pretraining', [], ','.join(
      [_SMALL_DATA] + testing.tiny_overrides(vocab_size=40, max_position_embeddings=12) +
      ['task.model.cls_heads=[]']))
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


def test_cli_converts_and_reports(tmp_path, capsys, caplog):
  caplog.set_level(logging.INFO)
  source, _, _ = _hf_dir(tmp_path / 'hf')
  code = convert_checkpoint.main(['convert_checkpoint', '--source=hf', '--target=google',
                                  f'--input={source}', f'--output_dir={tmp_path / "google"}'])
  assert code == 0
  assert capsys.readouterr().out.strip() == (
      f'convert_checkpoint: wrote BertPretrainerV2 (hf -> google) to {tmp_path / "google"}')
  stages = [r.getMessage() for r in caplog.records
            if r.pathname.endswith('convert_checkpoint.py')]
  model = google_bert.load_pretrainer(str(tmp_path / 'google'))
  assert stages[0] == f'reading the hf checkpoint {source}'
  assert re.fullmatch(rf'read BertPretrainerV2 \(\d+ variables, {model.count_params():,} '
                      r'parameters\) in \d+\.\d s', stages[1]), stages
  assert stages[2] == f'writing the google checkpoint to {tmp_path / "google"}'
  assert len(stages) == 3
  code = convert_checkpoint.main(['convert_checkpoint', '--source=google', '--target=hf',
                                  f'--input={source}', f'--output_dir={tmp_path / "x"}'])
  assert code == 1
  assert capsys.readouterr().err == (
      f'convert_checkpoint: error: {source}: no checkpoint (expected bert_model.ckpt.index or a '
      '`checkpoint` state file)\n')
  assert google_bert.load_pretrainer(str(tmp_path / 'google')).classification_heads


def test_cli_module_exits_1_with_one_error_line(tmp_path):
  # As `python -m official.nlp.tools.convert_checkpoint` runs it (`sys.exit(main())`), in-process.
  result = call_main(convert_checkpoint.main, [
      'convert_checkpoint', '--source=hf', '--target=ours', f'--input={tmp_path / "missing"}',
      f'--output_dir={tmp_path / "out"}'])
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  errors = [line for line in result.stderr.splitlines() if 'convert_checkpoint: ' in line]
  assert errors == [f'convert_checkpoint: error: {tmp_path / "missing"}: no config.json (a Hugging '
                    'Face BERT directory holds config.json and model.safetensors)']
  assert not (tmp_path / 'out').exists()


def _cli(capsys, *args):
  """(exit status, stderr) of the command line with `args`."""
  code = convert_checkpoint.main(['convert_checkpoint', *args])
  return code, capsys.readouterr().err


def _truncate(path, size):
  path.write_bytes(path.read_bytes()[:size])


@pytest.mark.parametrize('fault, message', [
    ('truncated_weights', '{d}/model.safetensors: not a readable safetensors file (Error while '
                          'deserializing header: invalid header length); '
                          'expected the complete file (truncated or corrupt?), 2000 bytes found'),
    ('garbage_weights', '{d}/model.safetensors: not a readable safetensors file (Error while '
                        'deserializing header: header too large); expected the complete file '
                        '(truncated or corrupt?), 8 bytes found'),
    ('truncated_config', '{d}/config.json: not valid JSON (Expecting property name enclosed in '
                         'double quotes: line 1 column 41); expected a BERT config object '
                         '(truncated or corrupt file?)'),
    ('list_config', '{d}/config.json: holds a JSON list; expected an object with the BERT config '
                    'fields (hidden_size, num_hidden_layers, ...)'),
    ('incomplete_config', "{d}/config.json: missing field 'hidden_size'; expected a complete "
                          'BERT config (incomplete file?)'),
    ('string_config_field', "{d}/config.json: field 'hidden_size' is 'big'; expected a positive "
                            'integer'),
    ('index_without_shard', '{d}/model.safetensors.index.json: lists 1 shards; missing '
                            '{d}/model-00001.safetensors'),
])
def test_corrupt_hugging_face_files_are_one_line(tmp_path, capsys, fault, message):
  source, _, _ = _hf_dir(tmp_path / 'hf')
  directory = tmp_path / 'hf'
  config = directory / 'config.json'
  weights = directory / 'model.safetensors'
  if fault == 'truncated_weights':
    _truncate(weights, 2000)
  elif fault == 'garbage_weights':
    weights.write_bytes(b'garbage\n')
  elif fault == 'truncated_config':
    config.write_text(config.read_text()[:40])
  elif fault == 'list_config':
    config.write_text('[1, 2]')
  elif fault == 'incomplete_config':
    config.write_text('{"model_type": "bert"}')
  elif fault == 'string_config_field':
    config.write_text(json.dumps(dict(json.loads(config.read_text()), hidden_size='big')))
  elif fault == 'index_without_shard':
    weights.unlink()
    (directory / 'model.safetensors.index.json').write_text(
        json.dumps({'weight_map': {'embeddings.word_embeddings.weight':
                                   'model-00001.safetensors'}}))
  out = tmp_path / 'out'
  code, err = _cli(capsys, '--source=hf', '--target=ours', f'--input={source}',
                   f'--output_dir={out}')
  assert code == 1
  assert err == 'convert_checkpoint: error: ' + message.format(d=directory) + '\n'
  assert not out.exists()


@pytest.mark.parametrize('fault', ['index', 'data', 'config'])
def test_corrupt_google_checkpoint_is_one_line(tmp_path, capsys, fault):
  source, _, _ = _hf_dir(tmp_path / 'hf')
  google = tmp_path / 'google'
  convert_checkpoint.convert('hf', 'google', source, str(google))
  if fault == 'index':
    _truncate(google / 'bert_model.ckpt.index', 40)
    expected = (f'{google}/bert_model.ckpt.index: not a readable checkpoint index (file is too '
                'short to be an sstable); expected the complete bert_model.ckpt.index (truncated '
                'or corrupt?)')
  elif fault == 'data':
    _truncate(google / 'bert_model.ckpt.data-00000-of-00001', 3000)
    expected = (f'{google}/bert_model.ckpt.data-00000-of-00001: the checkpoint data cannot be '
                'read (Read less bytes than requested); expected the complete files written with '
                'bert_model.ckpt.index (truncated or corrupt?)')
  else:
    (google / 'bert_config.json').write_text('{"hidden_size": ')
    expected = (f'{google}/bert_config.json: not valid JSON (Expecting value: line 1 column 17); '
                'expected a BERT config object (truncated or corrupt file?)')
  code, err = _cli(capsys, '--source=google', '--target=hf', f'--input={google}',
                   f'--output_dir={tmp_path / "out"}')
  assert (code, err) == (1, f'convert_checkpoint: error: {expected}\n')


def test_corrupt_checkpoint_of_ours_is_one_line(tmp_path, capsys):
  source, _, _ = _hf_dir(tmp_path / 'hf')
  ours = tmp_path / 'ours'
  convert_checkpoint.convert('hf', 'ours', source, str(ours))
  params = (ours / 'params.yaml').read_text()
  (ours / 'params.yaml').write_text('task: {model: [\n')
  code, err = _cli(capsys, '--source=ours', '--target=hf', f'--input={ours}',
                   f'--output_dir={tmp_path / "out"}')
  assert code == 1 and err.count('\n') == 1
  assert err.startswith(f'convert_checkpoint: error: {ours}/params.yaml: not readable YAML (')
  (ours / 'params.yaml').write_text(params)
  _truncate(ours / 'ckpt-1.data-00000-of-00001', 3000)
  code, err = _cli(capsys, '--source=ours', '--target=hf', f'--input={ours}',
                   f'--output_dir={tmp_path / "out"}')
  assert (code, err) == (1, f'convert_checkpoint: error: {ours}/ckpt-1: the checkpoint data '
                         'cannot be read (Read less bytes than requested); expected the complete '
                         '.data files of this checkpoint (truncated or corrupt?)\n')


def test_cli_output_dir_and_flags(tmp_path, capsys):
  source, _, _ = _hf_dir(tmp_path / 'hf')
  out = tmp_path / 'out'
  args = ['--source=hf', '--target=hf', f'--input={source}']
  assert _cli(capsys, *args, f'--output_dir={out}')[0] == 0
  before = (out / 'model.safetensors').stat().st_mtime_ns
  code, err = _cli(capsys, *args, f'--output_dir={out}')
  assert (code, err) == (1, f'convert_checkpoint: error: --output_dir={out}: not empty (holds '
                         'config.json, model.safetensors, vocab.txt); expected a new or empty '
                         'directory, or pass --overwrite to replace it\n')
  assert (out / 'model.safetensors').stat().st_mtime_ns == before
  assert _cli(capsys, *args, f'--output_dir={out}', '--overwrite')[0] == 0

  code, err = _cli(capsys, *args, f'--output_dir={source}', '--overwrite')
  assert (code, err) == (1, f'convert_checkpoint: error: --output_dir={source} is the --input '
                         'directory; expected another directory\n')
  a_file = tmp_path / 'a_file'
  a_file.write_text('x')
  code, err = _cli(capsys, *args, f'--output_dir={a_file / "out"}')
  assert (code, err) == (1, f'convert_checkpoint: error: --output_dir={a_file / "out"}: '
                         f'{a_file} is a file; expected a directory there\n')

  code, err = _cli(capsys, '--source=hf', f'--input={source}')
  assert (code, err) == (2, 'convert_checkpoint: error: missing --target, --output_dir; expected '
                         'all of --source, --target, --input and --output_dir\n')
  code, err = _cli(capsys, '--source=onnx')
  assert (code, err) == (2, 'convert_checkpoint: error: flag --source=onnx: value should be one '
                         'of <hf|google|ours> (--help lists the flags)\n')


def test_module_corrupt_safetensors_has_no_traceback(tmp_path):
  source, _, _ = _hf_dir(tmp_path / 'hf')
  (tmp_path / 'hf' / 'model.safetensors').write_bytes(b'\x00' * 16)
  result = call_main(convert_checkpoint.main, [
      'convert_checkpoint', '--source=hf', '--target=ours', f'--input={source}',
      f'--output_dir={tmp_path / "out"}'])
  assert result.returncode == 1
  assert 'Traceback' not in result.stderr
  errors = [line for line in result.stderr.splitlines() if 'convert_checkpoint: ' in line]
  assert len(errors) == 1
  assert errors[0].startswith(f'convert_checkpoint: error: {tmp_path}/hf/model.safetensors: not a '
                              'readable safetensors file (')


def test_unwritable_output_is_one_line(tmp_path, capsys, monkeypatch):
  from safetensors import numpy as safetensors_numpy  # pylint: disable=g-import-not-at-top
  source, _, _ = _hf_dir(tmp_path / 'hf')
  out = tmp_path / 'out'

  def denied(tensors, path, metadata=None):
    raise PermissionError(13, 'Permission denied', path)

  monkeypatch.setattr(safetensors_numpy, 'save_file', denied)
  code, err = _cli(capsys, '--source=hf', '--target=hf', f'--input={source}', f'--output_dir={out}')
  assert (code, err) == (1, f'convert_checkpoint: error: {out}/model.safetensors: permission '
                         'denied; expected a path this user may read or write (errno 13)\n')

  def disk_full(tensors, prefix):
    raise tf.errors.ResourceExhaustedError(None, None, f'{prefix}.data-00000-of-00001: No space')

  monkeypatch.setattr(google_bert, 'write_checkpoint', disk_full)
  code, err = _cli(capsys, '--source=hf', '--target=google', f'--input={source}',
                   f'--output_dir={tmp_path / "google"}')
  assert (code, err) == (1, f'convert_checkpoint: error: {tmp_path / "google"}: could not write '
                         f'the google checkpoint ({tmp_path / "google"}/bert_model.ckpt.data-00000-'
                         'of-00001: No space); expected a writable directory with free space\n')


def test_the_old_output_flag_still_works_with_a_note(capsys, tmp_path):
  code, err = _cli(capsys, '--source=hf', '--target=ours', f'--input={tmp_path / "missing"}',
                   f'--output={tmp_path / "out"}')
  assert 'convert_checkpoint: note: --output is now --output_dir' in err
  assert code == 1 and 'missing' in err  # parsed as --output_dir: the run got to the input
