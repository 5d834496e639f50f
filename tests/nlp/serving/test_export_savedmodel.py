"""Tests for official/nlp/serving/export_savedmodel.py (and serving_signatures.py, inference.py)."""

import json
import logging
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.core import task_factory
from official.core import train_utils
from official.core import trainer as trainer_lib
from official.nlp.data import tokenization
from official.nlp.modeling import networks
from official.nlp.serving import export_savedmodel
from official.nlp.serving import inference
from official.nlp.tools import fill_mask
from tests import testing
from tests.nlp.serving import tiny_run
from tests.paths import ROOT
from tests.processes import HANG_SECONDS

TEXTS = ['Paris is the [MASK] of France.', '[MASK] is a [MASK] .', 'return a [MASK]']

# Runs in a fresh interpreter with TensorFlow only: no mlm_garden code is imported. Its arguments
# are triples (export_dir, inputs .npz, outputs .npz), one per export.
_RELOAD_SCRIPT = r'''
import sys
import numpy as np
import tensorflow as tf
for export_dir, inputs_path, outputs_path in zip(*[iter(sys.argv[1:])] * 3):
  inputs = dict(np.load(inputs_path))
  loaded = tf.saved_model.load(export_dir)
  fill = loaded.signatures['fill_mask'](**{k: tf.constant(v) for k, v in inputs.items()})
  encoder_inputs = {k: tf.constant(v) for k, v in inputs.items() if k != 'masked_lm_positions'}
  encoded = loaded.signatures['encoder'](**encoder_inputs)
  np.savez(outputs_path, **{k: v.numpy() for k, v in list(fill.items()) + list(encoded.items())})
  print(export_dir, sorted(loaded.signatures))
'''


@pytest.fixture(name='run')
def _run(bert_run):
  """The session's tiny BERT run and its export (tests/nlp/tiny_runs.py)."""
  return bert_run


@pytest.fixture(name='restored', scope='module')
def _restored(bert_run):
  _, model, path = inference.restore_model(bert_run['model_dir'])
  return model, path


class _FreshProcess:
  """The reload script on the BERT and the ModernBERT exports, run by one fresh interpreter
  started when the file's first test asks for it (so that it runs meanwhile)."""

  def __init__(self, runs, directory):
    self.inputs, self.counts, self._outputs, argv = {}, {}, {}, []
    for name, run in runs.items():
      tokenizer = tokenization.WordPieceTokenizer.from_vocab_file(run['vocab_file'])
      self.inputs[name], self.counts[name] = fill_mask.encode_masked_texts(
          tokenizer, TEXTS, tiny_run.SEQ_LENGTH)
      np.savez(directory / f'{name}_inputs.npz', **self.inputs[name])
      self._outputs[name] = directory / f'{name}_outputs.npz'
      argv += [run['export_dir'], str(directory / f'{name}_inputs.npz'),
               str(self._outputs[name])]
    self.process = subprocess.Popen(
        [sys.executable, '-c', _RELOAD_SCRIPT] + argv,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    self._ended = None

  def outputs(self, name):
    """(stdout, the outputs of export `name`), once the process ended (asserted to succeed)."""
    if self._ended is None:
      self._ended = self.process.communicate(timeout=HANG_SECONDS)
    stdout, stderr = self._ended
    assert self.process.returncode == 0, stderr[-3000:]
    return stdout, dict(np.load(self._outputs[name]))


@pytest.fixture(name='fresh_process', scope='module')
def _fresh_process(bert_run, modernbert_run, tmp_path_factory):
  fresh = _FreshProcess({'bert': bert_run, 'modernbert': modernbert_run},
                        tmp_path_factory.mktemp('fresh_process'))
  yield fresh
  if fresh.process.poll() is None:
    fresh.process.kill()
    fresh.process.communicate()


def _softmax(x):
  e = np.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.slow
def test_restore_reads_the_latest_checkpoint(run, restored, fresh_process):
  del fresh_process  # started now, checked in test_saved_model_in_fresh_process_matches_checkpoint
  model, path = restored
  assert path == run['checkpoint'] and path.endswith('ckpt-2')
  reader = tf.train.load_checkpoint(path)
  # The trainer's checkpoint holds the word embeddings under `masked_lm` (tied table).
  np.testing.assert_array_equal(
      reader.get_tensor('masked_lm/embedding_table/.ATTRIBUTES/VARIABLE_VALUE'),
      model.encoder_network.get_embedding_table().numpy())


@pytest.mark.slow
def test_signatures_accept_other_batch_and_seq_lengths(run, restored):
  model, _ = restored
  loaded = tf.saved_model.load(run['export_dir'])
  ids = tf.constant([[2, 5, 6, 4, 3, 0, 0]], tf.int32)
  mask = tf.cast(ids > 0, tf.int32)
  types = tf.zeros_like(ids)
  encoded = loaded.signatures['encoder'](input_word_ids=ids, input_mask=mask,
                                         input_type_ids=types)
  assert encoded['sequence_output'].shape == (1, 7, 16)
  expected = model.encoder_network({'input_word_ids': ids, 'input_mask': mask,
                                    'input_type_ids': types}, training=False)
  np.testing.assert_allclose(encoded['sequence_output'].numpy(),
                             expected['sequence_output'].numpy(), atol=1e-5)


def test_assets_extra(run):
  extra = os.path.join(run['export_dir'], 'assets.extra')
  with open(os.path.join(extra, 'serving_config.json'), encoding='utf-8') as f:
    config = json.load(f)
  tokenizer = tokenization.WordPieceTokenizer.from_vocab_file(run['vocab_file'])
  assert config['format'] == 'mlm_garden.serving'
  assert config['model_type'] == 'pretrainer'
  assert config['signatures'] == ['encoder', 'fill_mask']
  assert config['seq_length'] == tiny_run.SEQ_LENGTH and config['top_k'] == 5
  assert config['vocab_size'] == len(tiny_run.VOCAB)
  assert config['special_token_ids'] == {'[PAD]': 0, '[UNK]': 1, '[CLS]': 2, '[SEP]': 3,
                                         '[MASK]': 4}
  assert config['do_lower_case'] is True
  assert config['vocab_sha256'] == tokenizer.vocab_sha256()
  assert config['source_checkpoint'] == run['checkpoint']
  with open(os.path.join(extra, 'vocab.txt'), encoding='utf-8') as f:
    assert f.read().split() == tiny_run.VOCAB


class _StandInClassifier(tf_keras.Model):
  """Logits = dense(pooled_output) of a tiny encoder; returns `{'logits': ...}` when asked."""

  def __init__(self, encoder, num_classes, dict_output):
    super().__init__()
    self.encoder = encoder
    self.dense = tf_keras.layers.Dense(num_classes)
    self.dict_output = dict_output

  def call(self, inputs, training=None):
    logits = self.dense(self.encoder(inputs, training=training)['pooled_output'])
    return {'logits': logits} if self.dict_output else logits

  @property
  def checkpoint_items(self):
    return {'encoder': self.encoder}


def _tiny_encoder():
  return networks.BertEncoder(**testing.tiny_kwargs(vocab_size=30, max_sequence_length=16,
                                                    dict_outputs=True))


@pytest.mark.slow
@pytest.mark.parametrize('dict_output', [False, True])
def test_classify_signature_matches_the_model(tmp_path, dict_output):
  tf_keras.utils.set_random_seed(1)
  classifier = _StandInClassifier(_tiny_encoder(), num_classes=3, dict_output=dict_output)
  rng = np.random.default_rng(0)
  ids = rng.integers(5, 30, size=(4, 10)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[2:, 6:] = 0
  inputs = {'input_word_ids': ids, 'input_mask': mask, 'input_type_ids': np.zeros_like(ids)}
  classifier({k: tf.constant(v) for k, v in inputs.items()})
  export_savedmodel.export_classifier(classifier, str(tmp_path), seq_length=10)
  loaded = tf.saved_model.load(str(tmp_path))
  assert sorted(loaded.signatures) == ['classify', 'encoder']
  outputs = loaded.signatures['classify'](**{k: tf.constant(v) for k, v in inputs.items()})
  expected = classifier({k: tf.constant(v) for k, v in inputs.items()}, training=False)
  expected = (expected['logits'] if dict_output else expected).numpy()
  np.testing.assert_allclose(outputs['logits'].numpy(), expected, atol=1e-5)
  np.testing.assert_allclose(outputs['probabilities'].numpy(), _softmax(expected), atol=1e-5)
  assert outputs['predicted_class'].dtype == tf.int32
  np.testing.assert_array_equal(outputs['predicted_class'].numpy(), expected.argmax(-1))
  config = inference.read_serving_config(str(tmp_path))
  assert config['model_type'] == 'classifier' and config['num_classes'] == 3
  assert config['vocab_file'] is None and config['vocab_size'] == 30


def test_classifier_without_logits_is_refused(tmp_path):
  ids = tf_keras.Input([None], dtype=tf.int32, name='input_word_ids')
  mask = tf_keras.Input([None], dtype=tf.int32, name='input_mask')
  types = tf_keras.Input([None], dtype=tf.int32, name='input_type_ids')
  scores = tf_keras.layers.Dense(2)(tf.reduce_mean(tf.cast(ids, tf.float32), 1, keepdims=True))
  model = tf_keras.Model({'input_word_ids': ids, 'input_mask': mask, 'input_type_ids': types},
                         {'scores': scores}, name='stand_in')
  with pytest.raises(ValueError, match=r"classifier 'stand_in' returned a dict with keys "
                     r"\['scores'\]; expected a `logits` entry"):
    export_savedmodel.export_classifier(model, str(tmp_path), seq_length=8)


def test_export_refuses_a_vocabulary_of_another_size(run, restored, tmp_path):
  model, _ = restored
  vocab = tmp_path / 'vocab.txt'
  vocab.write_text('\n'.join(tiny_run.VOCAB + ['extra']) + '\n')
  with pytest.raises(ValueError, match=f"vocab_file '{vocab}' has 23 tokens but the model has "
                     '22 word embeddings'):
    export_savedmodel.export_pretrainer(model, str(tmp_path / 'export'), 16, str(vocab))
  with pytest.raises(ValueError, match=r'top_k must be in \[1, vocab_size=22\]; found 23'):
    export_savedmodel.export_pretrainer(model, str(tmp_path / 'export'), 16, top_k=23)


@pytest.mark.slow
def test_cli_exports_a_given_checkpoint(run, tmp_path, capsys, caplog):
  caplog.set_level(logging.INFO)
  export_dir = tmp_path / 'export'
  code = export_savedmodel.main(['export', f'--model_dir={run["model_dir"]}',
                                 f'--output_dir={export_dir}',
                                 f'--checkpoint_path={run["checkpoint"]}', '--top_k=2'])
  assert code == 0
  assert capsys.readouterr().out.strip() == (
      f'exported encoder, fill_mask from {run["checkpoint"]} to {export_dir}')
  # Status: stage lines with their times (logged; the result alone is on stdout).
  stages = [r.getMessage() for r in caplog.records
            if r.pathname.endswith(('export_savedmodel.py', 'inference.py'))]
  assert stages[0] == f'Restored BertPretrainerV2 from {run["checkpoint"]}', stages
  assert stages[1] == f'saving the signatures encoder, fill_mask to {export_dir}'
  assert re.fullmatch(r'saved the SavedModel in \d+\.\d s', stages[2]) and len(stages) == 3
  assert inference.read_serving_config(str(export_dir))['top_k'] == 2


def test_cli_errors(run, tmp_path, capsys):
  assert export_savedmodel.main(['export', f'--model_dir={run["model_dir"]}']) == 2
  assert capsys.readouterr().err == (
      'export_savedmodel: error: flag --output_dir=None: Flag --output_dir must have a value '
      'other than None. (--help lists the flags)\n')

  assert export_savedmodel.main(['export', f'--model_dir={run["export_dir"]}',
                                 f'--output_dir={tmp_path / "e"}']) == 1
  assert 'is already a SavedModel; expected a training model_dir' in capsys.readouterr().err

  missing = os.path.join(run['model_dir'], 'ckpt-7')
  assert export_savedmodel.main(['export', f'--model_dir={run["model_dir"]}',
                                 f'--output_dir={tmp_path / "e"}',
                                 f'--checkpoint_path={missing}']) == 1
  assert (f"export_savedmodel: error: checkpoint {missing!r}: no such checkpoint (expected "
          f'{missing}.index') in capsys.readouterr().err

  assert export_savedmodel.main(['export', f'--model_dir={run["model_dir"]}',
                                 f'--output_dir={run["model_dir"]}']) == 1
  assert (f"--output_dir={run['model_dir']}: holds a training run (params.yaml); expected a new "
          'or empty directory, or an earlier SavedModel export') in capsys.readouterr().err
  assert not os.path.exists(os.path.join(run['model_dir'], 'saved_model.pb'))

  no_ckpt = tmp_path / 'no_ckpt'
  no_ckpt.mkdir()
  shutil.copy(os.path.join(run['model_dir'], 'params.yaml'), no_ckpt)
  assert export_savedmodel.main(['export', f'--model_dir={no_ckpt}',
                                 f'--output_dir={tmp_path / "e"}']) == 1
  assert f"model_dir '{no_ckpt}' has params.yaml but no checkpoint" in capsys.readouterr().err

  empty = tmp_path / 'empty'
  empty.mkdir()
  (empty / 'notes.txt').write_text('x')
  assert export_savedmodel.main(['export', f'--model_dir={empty}',
                                 f'--output_dir={tmp_path / "e"}']) == 1
  err = capsys.readouterr().err
  assert (f"model_dir '{empty}' is neither a training model_dir (params.yaml + ckpt-N files, as "
          'written by official.nlp.train) nor a SavedModel directory (saved_model.pb') in err
  assert 'found: notes.txt' in err


def test_cli_takes_the_old_output_flag_with_a_note(tmp_path, capsys):
  a_file = tmp_path / 'a_file'
  a_file.write_text('x')
  note = ('export_savedmodel: note: --export_dir is now --output_dir (the old name still '
          'works)\n')
  for old in ([f'--export_dir={a_file}'], ['--export_dir', str(a_file)]):
    # Refused before any model is read: the error names the new flag.
    assert export_savedmodel.main(['export', f'--model_dir={tmp_path}', *old]) == 1
    assert capsys.readouterr().err == note + (
        f'export_savedmodel: error: --output_dir={a_file}: a file; expected a directory (new or '
        'empty)\n')
  assert export_savedmodel.main(['export', '--help']) == 0
  help_text = capsys.readouterr().out
  assert '--output_dir' in help_text and '--export_dir:' not in help_text


def test_checkpoint_of_another_model_is_refused(run, tmp_path):
  model_dir = tmp_path / 'model'
  shutil.copytree(run['model_dir'], model_dir)
  params = (model_dir / 'params.yaml').read_text()
  assert 'hidden_size: 16' in params
  (model_dir / 'params.yaml').write_text(params.replace('num_layers: 2', 'num_layers: 3'))
  with pytest.raises(ValueError, match="does not match the model built from .*params.yaml"):
    inference.restore_model(str(model_dir))


@pytest.mark.slow
def test_vocabulary_checked_against_the_training_records(run, tmp_path):
  model_dir = tmp_path / 'model'
  shutil.copytree(run['model_dir'], model_dir)
  os.remove(model_dir / 'vocab.txt')
  params = (model_dir / 'params.yaml').read_text()
  records = tmp_path / 'data' / 'train.tfrecord'
  (model_dir / 'params.yaml').write_text(params.replace('input_path: dummy',
                                                        f'input_path: {records}', 1))
  records.parent.mkdir()
  tokenizer = tokenization.WordPieceTokenizer.from_vocab_file(run['vocab_file'])
  (records.parent / 'train.metadata.json').write_text(json.dumps({
      'format': 'mlm_garden.pretraining_data', 'do_lower_case': False,
      'vocab_sha256': tokenizer.vocab_sha256()}))
  model = inference.load_inference_model(str(model_dir))
  assert model.do_lower_case is False and model.vocab_file is None
  assert model.load_tokenizer(run['vocab_file']).do_lower_case is False
  other = tmp_path / 'other_vocab.txt'  # same size, another order
  other.write_text('\n'.join(tiny_run.VOCAB[:5] + tiny_run.VOCAB[:4:-1]) + '\n')
  message = (f"vocab_file '{other}' differs from the vocabulary the model '{model_dir}/ckpt-2' "
             'was trained with')
  with pytest.raises(ValueError, match=re.escape(message)):
    model.load_tokenizer(str(other))
  with pytest.raises(ValueError, match=re.escape(
      f"vocab_file '{other}' differs from the vocabulary of the training records")):
    export_savedmodel.export_from_model_dir(str(model_dir), str(tmp_path / 'e'),
                                            vocab_file=str(other))
  export_savedmodel.export_from_model_dir(str(model_dir), str(tmp_path / 'e'),
                                          vocab_file=run['vocab_file'])
  config = inference.read_serving_config(str(tmp_path / 'e'))
  assert config['do_lower_case'] is False
  assert config['vocab_sha256'] == tokenizer.vocab_sha256()


def _siblings(directory):
  """Entries beside `directory` left by a staged export (`.partial-*`, `.old-*`)."""
  return [n for n in os.listdir(os.path.dirname(directory))
          if n.startswith(os.path.basename(directory) + '.')]


@pytest.mark.slow
def test_cli_refuses_a_non_empty_output_dir_unless_overwrite(run, tmp_path, capsys):
  base = ['export', f'--model_dir={run["model_dir"]}']
  notes = tmp_path / 'notes'
  notes.mkdir()
  (notes / 'notes.txt').write_text('mine')
  for extra in ([], ['--overwrite']):
    assert export_savedmodel.main(base + [f'--output_dir={notes}'] + extra) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    if extra:
      assert err == (f'export_savedmodel: error: --output_dir={notes}: holds notes.txt, which '
                     '--overwrite does not replace (not an earlier output of this program); '
                     'expected a new or empty directory\n')
    else:
      assert err == (f'export_savedmodel: error: --output_dir={notes}: not empty (holds '
                     'notes.txt); expected a new or empty directory, or pass --overwrite to '
                     'replace it\n')
  assert os.listdir(notes) == ['notes.txt']

  earlier = tmp_path / 'earlier'
  shutil.copytree(run['export_dir'], earlier)
  (earlier / 'stale.txt').write_text('from before')
  assert export_savedmodel.main(base + [f'--output_dir={earlier}']) == 1
  assert f'--output_dir={earlier}: not empty (holds assets' in capsys.readouterr().err
  assert export_savedmodel.main(base + [f'--output_dir={earlier}', '--overwrite']) == 0
  assert not (earlier / 'stale.txt').exists()  # replaced, not written over
  config = inference.read_serving_config(str(earlier))
  assert config['max_sequence_length'] == 32 and config['seq_length'] == tiny_run.SEQ_LENGTH
  assert not _siblings(str(earlier))

  a_file = tmp_path / 'a_file'
  a_file.write_text('x')
  assert export_savedmodel.main(base + [f'--output_dir={a_file}']) == 1
  assert capsys.readouterr().err == (f'export_savedmodel: error: --output_dir={a_file}: a file; '
                                     'expected a directory (new or empty)\n')
  assert export_savedmodel.main(base + [f'--output_dir={a_file / "export"}']) == 1
  assert capsys.readouterr().err == (
      f'export_savedmodel: error: --output_dir={a_file / "export"}: {a_file} is a file; '
      'expected a directory there\n')


@pytest.mark.slow
def test_failed_write_leaves_no_partial_export(run, tmp_path, monkeypatch, capsys):
  real_save = tf.saved_model.save

  def save_then_fill_the_disk(module, directory, signatures=None):
    real_save(module, directory, signatures=signatures)
    raise tf.errors.ResourceExhaustedError(None, None, f'{directory}/variables: No space left')

  monkeypatch.setattr(tf.saved_model, 'save', save_then_fill_the_disk)
  new = tmp_path / 'new'
  base = ['export', f'--model_dir={run["model_dir"]}']
  assert export_savedmodel.main(base + [f'--output_dir={new}']) == 1
  err = capsys.readouterr().err
  assert err.startswith(f'export_savedmodel: error: {new}: could not write the '
                        'SavedModel: ') and err.count('\n') == 1
  assert not new.exists() and not _siblings(str(new))

  earlier = tmp_path / 'earlier'
  shutil.copytree(run['export_dir'], earlier)
  before = sorted(os.listdir(earlier))
  assert export_savedmodel.main(base + [f'--output_dir={earlier}', '--overwrite']) == 1
  assert sorted(os.listdir(earlier)) == before  # the earlier export is kept whole
  assert not _siblings(str(earlier))


def test_corrupt_checkpoint_is_one_line(run, tmp_path, capsys):
  model_dir = tmp_path / 'model'
  shutil.copytree(run['model_dir'], model_dir)
  (data,) = [p for p in model_dir.iterdir() if '.data-' in p.name]
  data.write_bytes(data.read_bytes()[:1000])
  export_dir = tmp_path / 'export'
  assert export_savedmodel.main(['export', f'--model_dir={model_dir}',
                                 f'--output_dir={export_dir}']) == 1
  err = capsys.readouterr().err
  assert err.count('\n') == 1
  assert err.startswith(f"export_savedmodel: error: checkpoint '{model_dir}/ckpt-2': cannot be "
                        'read (')
  assert err.endswith('expected a complete checkpoint written by official.nlp.train\n')
  assert not export_dir.exists()


# ---- A ModernBERT pretraining run (no next-sentence head) and a classifier fine-tuned from it.

@pytest.mark.slow
def test_modernbert_export_reloads_with_the_checkpoints_outputs(modernbert_run, fresh_process):
  # Compared on the real tokens only: a padding position whose sliding window holds no real token
  # gets other (meaningless) values from the blocked local attention (static lengths, eager here)
  # than from the full matrix (the signatures' unknown length).
  config = inference.read_serving_config(modernbert_run['export_dir'])
  assert config['signatures'] == ['encoder', 'fill_mask'] and config['model_type'] == 'pretrainer'
  # No position table: the longest input is the config's max_position_embeddings.
  assert (config['max_sequence_length'], config['vocab_size']) == (32, len(tiny_run.VOCAB))
  _, model, path = inference.restore_model(modernbert_run['model_dir'])
  assert type(model.encoder_network).__name__ == 'ModernBertEncoder' and path.endswith('ckpt-2')
  tokenizer = tokenization.WordPieceTokenizer.from_vocab_file(modernbert_run['vocab_file'])
  inputs, _ = fill_mask.encode_masked_texts(tokenizer, TEXTS, tiny_run.SEQ_LENGTH)
  for key, value in inputs.items():  # the child's inputs
    np.testing.assert_array_equal(fresh_process.inputs['modernbert'][key], value, err_msg=key)
  stdout, saved = fresh_process.outputs('modernbert')
  assert f"{modernbert_run['export_dir']} ['encoder', 'fill_mask']" in stdout
  outputs = model({k: tf.constant(v) for k, v in inputs.items()}, training=False)
  probabilities = _softmax(outputs['mlm_logits'].numpy().astype(np.float64))
  expected_ids = np.argsort(-probabilities, axis=-1, kind='stable')[..., :5]
  np.testing.assert_array_equal(saved['top_k_ids'], expected_ids)
  np.testing.assert_allclose(saved['top_k_probs'],
                             np.take_along_axis(probabilities, expected_ids, axis=-1), atol=1e-5)
  # The tokens' vectors, and the pooled output: the [CLS] state.
  real = inputs['input_mask'] == 1
  np.testing.assert_allclose(saved['sequence_output'][real],
                             outputs['sequence_output'].numpy()[real], atol=1e-5)
  np.testing.assert_allclose(saved['pooled_output'], outputs['pooled_output'].numpy(), atol=1e-5)
  np.testing.assert_array_equal(saved['pooled_output'], saved['sequence_output'][:, 0])
  # Other lengths and batches.
  loaded = tf.saved_model.load(modernbert_run['export_dir'])
  ids = tf.constant([[2, 5, 6, 4, 7, 8, 9, 10, 11, 12, 3, 0, 0]], tf.int32)
  encoder_inputs = {'input_word_ids': ids, 'input_mask': tf.cast(ids > 0, tf.int32),
                    'input_type_ids': tf.zeros_like(ids)}
  real = encoder_inputs['input_mask'].numpy() == 1
  np.testing.assert_allclose(
      loaded.signatures['encoder'](**encoder_inputs)['sequence_output'].numpy()[real],
      model.encoder_network(encoder_inputs, training=False)['sequence_output'].numpy()[real],
      atol=1e-5)


def _modernbert_classifier_run(modernbert_run, model_dir):
  """A sentence-prediction model_dir whose checkpoint is the classifier initialized from the
  ModernBERT pretraining run, saved by the trainer as ckpt-1 (no step taken)."""
  params = train_utils.build_params(
      'bert/sentence_prediction',
      [os.path.join(ROOT, 'configs', 'finetuning', 'sentence_prediction_modernbert_tiny.yaml')],
      None)
  params.override({
      'task': {'init_checkpoint': modernbert_run['model_dir'],
               'model': {'num_classes': 3, 'encoder': tiny_run.encoder_config('modernbert')},
               'train_data': {'input_path': 'dummy', 'seq_length': tiny_run.SEQ_LENGTH},
               'validation_data': {'input_path': 'dummy', 'seq_length': tiny_run.SEQ_LENGTH}},
      'runtime': {'distribution_strategy': 'off'}}, is_strict=True)
  task = task_factory.get_task(params.task, logging_dir=model_dir)
  train_utils.write_params(params, model_dir)
  trainer = trainer_lib.Trainer(tf.distribute.get_strategy(), task, params, model_dir,
                                train=False)
  assert trainer.restore_or_initialize() is None  # initialized from init_checkpoint
  trainer.global_step.assign(1)
  trainer.manager.save_at(1)
  shutil.copy(os.path.join(modernbert_run['model_dir'], 'vocab.txt'), model_dir)
  return trainer.model


@pytest.mark.slow
def test_modernbert_classifier_export_from_its_model_dir(modernbert_run, tmp_path):
  model_dir = str(tmp_path / 'cls')
  classifier = _modernbert_classifier_run(modernbert_run, model_dir)
  export_dir = export_savedmodel.export_from_model_dir(model_dir, str(tmp_path / 'export'))
  config = inference.read_serving_config(export_dir)
  assert (config['model_type'], config['signatures'], config['num_classes']) == (
      'classifier', ['classify', 'encoder'], 3)
  rng = np.random.default_rng(3)
  ids = rng.integers(5, len(tiny_run.VOCAB), (3, tiny_run.SEQ_LENGTH)).astype(np.int32)
  ids[1, 9:] = 0
  inputs = {'input_word_ids': ids, 'input_mask': (ids > 0).astype(np.int32),
            'input_type_ids': np.zeros_like(ids)}
  loaded = inference.load_inference_model(export_dir)
  expected = classifier({k: tf.constant(v) for k, v in inputs.items()}, training=False).numpy()
  np.testing.assert_allclose(loaded.classify(inputs)['logits'], expected, atol=1e-5)
  # The classifier's encoder is the pretraining run's: the same encoder outputs as its export.
  pretrained = inference.load_inference_model(modernbert_run['export_dir'])
  np.testing.assert_allclose(loaded.encode(inputs)['sequence_output'],
                             pretrained.encode(inputs)['sequence_output'], atol=1e-5)


# Last in the file: the reload started by the first test ran meanwhile.
@pytest.mark.slow
def test_saved_model_in_fresh_process_matches_checkpoint(run, restored, fresh_process):
  model, _ = restored
  inputs, counts = fresh_process.inputs['bert'], fresh_process.counts['bert']
  stdout, saved = fresh_process.outputs('bert')
  assert f"{run['export_dir']} ['encoder', 'fill_mask']" in stdout
  tokenizer = tokenization.WordPieceTokenizer.from_vocab_file(run['vocab_file'])

  # Independent reference: the restored Keras model's logits, softmax and sort in numpy.
  outputs = model({k: tf.constant(v) for k, v in inputs.items()}, training=False)
  probabilities = _softmax(outputs['mlm_logits'].numpy().astype(np.float64))
  expected_ids = np.argsort(-probabilities, axis=-1, kind='stable')[..., :5]
  expected_probs = np.take_along_axis(probabilities, expected_ids, axis=-1)
  assert saved['top_k_ids'].dtype == np.int32 and saved['top_k_ids'].shape == (3, 2, 5)
  assert saved['top_k_probs'].dtype == np.float32
  np.testing.assert_array_equal(saved['top_k_ids'], expected_ids)
  np.testing.assert_allclose(saved['top_k_probs'], expected_probs, atol=1e-5)

  # The checkpoint-based python API gives the same tokens and probabilities.
  predictions = fill_mask.fill_mask(model, tokenizer, TEXTS, top_k=5,
                                    seq_length=tiny_run.SEQ_LENGTH)
  for t, count in enumerate(counts):
    assert len(predictions[t]) == count
    for m in range(count):
      assert [tok for tok, _ in predictions[t][m]] == tokenizer.convert_ids_to_tokens(
          saved['top_k_ids'][t, m])
      np.testing.assert_allclose([p for _, p in predictions[t][m]], saved['top_k_probs'][t, m],
                                 atol=1e-5)

  # Encoder signature == the Keras encoder.
  np.testing.assert_allclose(saved['sequence_output'], outputs['sequence_output'].numpy(),
                             atol=1e-5)
  np.testing.assert_allclose(saved['pooled_output'], outputs['pooled_output'].numpy(), atol=1e-5)
