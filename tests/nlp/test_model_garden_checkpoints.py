"""Checkpoints interchangeable with Model Garden (tf-models-official) in both directions.

`tests/testdata/model_garden/pretraining/` was written by Model Garden's own
`official.nlp.train --experiment=bert/pretraining` (scripts/make_model_garden_checkpoint.sh): it
must restore into our trainer (weights, AdamW moments, step) and serve as `init_checkpoint` of our
fine-tuning tasks, and what our trainer writes must carry the same keys and shapes, which is what
Model Garden's restore reads. Model Garden itself is not needed here.
"""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import official.common.registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.core import trainer as trainer_lib
from official.nlp.configs import encoders
from official.nlp.data import sentence_prediction_dataloader as sp_loader
from official.nlp.data import tagging_dataloader
from official.nlp.tasks import sentence_prediction
from official.nlp.tasks import tagging

DATA = os.path.join(os.path.dirname(__file__), '..', 'testdata', 'model_garden')
MG_DIR = os.path.join(DATA, 'pretraining')
MG_CKPT = os.path.join(MG_DIR, 'ckpt-3')
CONFIG = os.path.join(DATA, 'pretraining.yaml')
MG_STEP = 3
_VALUE = '/.ATTRIBUTES/VARIABLE_VALUE'
_SLOT = '/.OPTIMIZER_SLOT/optimizer/'
# Differences of the object graphs that carry no weights of the model:
# - Model Garden's legacy optimizer saves its hyperparameters as variables; ours saves the current
#   learning rate and (one replica) the input iterator.
# - Model Garden's pretrainer never uses the encoder's pooler (layer_with_weights-6 here), and its
#   legacy optimizer makes slots only for variables that had a gradient; ours makes them for all.
ONLY_MODEL_GARDEN = {'optimizer/beta_1', 'optimizer/beta_2', 'optimizer/decay'}
ONLY_OURS = {'optimizer/_current_learning_rate', 'train_iterator'} | {
    f'encoder/layer_with_weights-6/{name}{_SLOT}{slot}'
    for name in ('kernel', 'bias') for slot in ('m', 'v')}
ENCODER = encoders.EncoderConfig(bert=encoders.BertEncoderConfig(
    vocab_size=90, hidden_size=32, num_layers=2, num_attention_heads=2, intermediate_size=64,
    max_position_embeddings=16, dropout_rate=0.0, attention_dropout_rate=0.0))


def _keys(prefix):
  """{key without the `/.ATTRIBUTES/...` suffix: shape} of a checkpoint's saved values."""
  keys = {}
  for name, shape in tf.train.list_variables(prefix):
    if name != '_CHECKPOINTABLE_OBJECT_GRAPH':
      keys[name.split('/.ATTRIBUTES/')[0]] = shape
  return keys


def _encoder_layers(encoder):
  """Our encoder's sub-layers in the order of Model Garden's functional model (its checkpoint's
  `layer_with_weights-<i>`): word, position, type embeddings, LayerNorm, blocks, pooler."""
  return [encoder.get_embedding_layer(), encoder._position_embedding_layer,  # pylint: disable=protected-access
          encoder._type_embedding_layer, encoder._embedding_norm_layer,  # pylint: disable=protected-access
          *encoder.transformer_layers, encoder.pooler_layer]


def _variable_for(key, roots):
  """Our variable for a Model Garden checkpoint key (without the suffix), walking its path.

  Args:
    key: e.g. `encoder/layer_with_weights-4/_attention_layer/_query_dense/kernel`.
    roots: {top-level name in the checkpoint: our object}.
  """
  parts = key.split('/')
  obj = roots[parts[0].replace('..', '.')]  # `next_sentence..pooler_dense`: an escaped '.'
  for part in parts[1:]:
    part = part.replace('.S', '/')  # an escaped '/': `output_bias.Sbias`
    if part.startswith('layer_with_weights-'):
      obj = _encoder_layers(obj)[int(part.split('-')[1])]
    elif part.isdigit():
      obj = obj[int(part)]
    elif part == 'output_bias/bias':
      obj = obj.bias
    else:
      obj = getattr(obj, part)
  return obj


def _pretrainer_roots(model):
  return {'encoder': model.encoder_network, 'masked_lm': model.masked_lm, 'model': model,
          'next_sentence.pooler_dense': model.classification_heads[0].pooler_dense}


def _params_and_task(model_dir):
  """The shipped YAML's bert/pretraining experiment on dummy batches, and its task."""
  params = train_utils.build_params(
      'bert/pretraining', [CONFIG],
      'task.train_data.input_path=dummy,task.validation_data.input_path=dummy')
  return params, task_factory.get_task(params.task, logging_dir=model_dir)


def _trainer(model_dir):
  params, task = _params_and_task(model_dir)
  return trainer_lib.Trainer(tf.distribute.get_strategy(), task, params, model_dir)


@pytest.fixture()
def mg_model_dir(tmp_path):
  """A copy of the Model Garden model_dir (checkpoint and params.yaml) to resume in."""
  model_dir = str(tmp_path / 'model_dir')
  shutil.copytree(MG_DIR, model_dir)
  return model_dir


def test_the_shipped_checkpoint_is_model_gardens():
  keys = _keys(MG_CKPT)
  assert os.path.getsize(MG_CKPT + '.data-00000-of-00001') < 1_000_000
  # Model Garden's functional encoder and legacy optimizer slots.
  assert keys['encoder/layer_with_weights-4/_attention_layer/_query_dense/kernel'] == [32, 2, 16]
  assert keys['masked_lm/embedding_table'] == [90, 32]
  assert keys['next_sentence..pooler_dense/kernel'] == [32, 32]
  assert keys['model/classification_heads/0/out_proj/kernel'] == [32, 2]
  assert f'encoder/layer_with_weights-5/_output_dense/bias{_SLOT}v' in keys
  assert 'optimizer/iter' in keys
  assert tf.train.load_checkpoint(MG_CKPT).get_tensor('global_step' + _VALUE) == MG_STEP


@pytest.mark.slow
def test_resume_restores_model_gardens_weights_moments_and_step(mg_model_dir):
  trainer = _trainer(mg_model_dir)
  assert trainer.restore_or_initialize() == os.path.join(mg_model_dir, 'ckpt-3')
  assert int(trainer.global_step.numpy()) == MG_STEP
  assert int(trainer.optimizer.iterations.numpy()) == MG_STEP
  reader = tf.train.load_checkpoint(MG_CKPT)
  roots = _pretrainer_roots(trainer.model)
  optimizer = trainer.optimizer
  checked = {'weights': 0, 'moments': 0}
  for key in _keys(MG_CKPT):
    if key.startswith('optimizer/') or key in ('global_step', 'save_counter'):
      continue
    expected = reader.get_tensor(key + _VALUE)
    if _SLOT in key:
      variable_key, slot = key.split(_SLOT)
      variable = _variable_for(variable_key, roots)
      slots = {'m': optimizer._momentums, 'v': optimizer._velocities}[slot]  # pylint: disable=protected-access
      value = slots[optimizer._index_dict[optimizer._var_key(variable)]]  # pylint: disable=protected-access
      checked['moments'] += 1
    else:
      value = _variable_for(key, roots)
      checked['weights'] += 1
    assert tuple(value.shape) == expected.shape, key
    np.testing.assert_array_equal(value.numpy(), expected, err_msg=key)
  # Every weight of the model (the encoder's pooler included) and both moments of each one that
  # Model Garden trained (all but the encoder's pooler, which its pretrainer does not use).
  assert checked['weights'] == len(trainer.model.trainable_variables)
  assert checked['moments'] == 2 * (len(trainer.model.trainable_variables) - 2)


@pytest.mark.slow
def test_resume_continues_from_model_gardens_step(mg_model_dir):
  params, task = _params_and_task(mg_model_dir)
  params.override({'trainer': {'train_steps': MG_STEP + 1, 'checkpoint_interval': 1}})
  # Model Garden's params.yaml is accepted; only the training data differs (dummy batches here).
  model, _ = train_lib.run_experiment(tf.distribute.get_strategy(), task, 'train', params,
                                      mg_model_dir, allow_config_change=True)
  assert tf.train.latest_checkpoint(mg_model_dir).endswith('ckpt-4')
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(mg_model_dir))
  assert reader.get_tensor('global_step' + _VALUE) == MG_STEP + 1
  assert reader.get_tensor('optimizer/iter' + _VALUE) == MG_STEP + 1
  # The schedule decays to 0 at step 3, so a run that continues from Model Garden's step (and its
  # optimizer's iteration count) leaves the weights exactly as Model Garden wrote them; a restart
  # from step 0 would train with the warm-up learning rate.
  mg_reader = tf.train.load_checkpoint(MG_CKPT)
  roots = _pretrainer_roots(model)
  for key in ('encoder/layer_with_weights-4/_attention_layer/_query_dense/kernel',
              'masked_lm/embedding_table', 'next_sentence..pooler_dense/kernel'):
    np.testing.assert_array_equal(_variable_for(key, roots).numpy(),
                                  mg_reader.get_tensor(key + _VALUE), err_msg=key)


def test_our_checkpoint_has_model_gardens_keys_shapes_and_values(mg_model_dir, tmp_path):
  trainer = _trainer(mg_model_dir)
  trainer.restore_or_initialize()
  ours = trainer.checkpoint.write(str(tmp_path / 'ours' / 'ckpt'))
  our_keys, mg_keys = _keys(ours), _keys(MG_CKPT)
  assert set(mg_keys) - set(our_keys) == ONLY_MODEL_GARDEN
  assert set(our_keys) - set(mg_keys) == ONLY_OURS
  reader, mg_reader = tf.train.load_checkpoint(ours), tf.train.load_checkpoint(MG_CKPT)
  for key in set(mg_keys) & set(our_keys):
    assert our_keys[key] == mg_keys[key], key
    np.testing.assert_array_equal(reader.get_tensor(key + _VALUE),
                                  mg_reader.get_tensor(key + _VALUE), err_msg=key)


@pytest.mark.slow
def test_a_fresh_run_writes_model_gardens_keys(tmp_path):
  params, task = _params_and_task(str(tmp_path / 'fresh'))
  params.override({'trainer': {'train_steps': 1, 'checkpoint_interval': 1}})
  train_lib.run_experiment(tf.distribute.get_strategy(), task, 'train', params,
                           str(tmp_path / 'fresh'))
  our_keys, mg_keys = _keys(tf.train.latest_checkpoint(str(tmp_path / 'fresh'))), _keys(MG_CKPT)
  assert set(mg_keys) - set(our_keys) == ONLY_MODEL_GARDEN
  assert set(our_keys) - set(mg_keys) == ONLY_OURS
  assert all(our_keys[key] == mg_keys[key] for key in set(mg_keys) & set(our_keys))


def _assert_encoder_is_model_gardens(encoder):
  reader = tf.train.load_checkpoint(MG_CKPT)
  roots = {'encoder': encoder}
  np.testing.assert_array_equal(encoder.get_embedding_table().numpy(),
                                reader.get_tensor('masked_lm/embedding_table' + _VALUE))
  count = 1
  for key in _keys(MG_CKPT):
    if key.startswith('encoder/') and _SLOT not in key:
      np.testing.assert_array_equal(_variable_for(key, roots).numpy(),
                                    reader.get_tensor(key + _VALUE), err_msg=key)
      count += 1
  assert count == len(encoder.trainable_variables)


@pytest.mark.slow
@pytest.mark.parametrize('init_cls_pooler', [False, True])
def test_sentence_prediction_init_checkpoint(init_cls_pooler):
  data = sp_loader.SentencePredictionDataConfig(input_path='dummy', seq_length=16,
                                                global_batch_size=2)
  config = sentence_prediction.SentencePredictionConfig(
      init_checkpoint=MG_DIR, init_cls_pooler=init_cls_pooler, train_data=data,
      model=sentence_prediction.ModelConfig(num_classes=3, encoder=ENCODER))
  task = sentence_prediction.SentencePredictionTask(config)
  model = task.build_model()
  task.initialize(model)
  _assert_encoder_is_model_gardens(model.checkpoint_items['encoder'])
  pooler = model.checkpoint_items['sentence_prediction.pooler_dense']
  mg_pooler = tf.train.load_checkpoint(MG_CKPT).get_tensor(
      'next_sentence..pooler_dense/kernel' + _VALUE)
  assert np.array_equal(pooler.kernel.numpy(), mg_pooler) == init_cls_pooler


def test_tagging_init_checkpoint():
  config = tagging.TaggingConfig(
      init_checkpoint=MG_DIR, class_names=['O', 'B-X', 'I-X'],
      train_data=tagging_dataloader.TaggingDataConfig(seq_length=16, global_batch_size=2),
      model=tagging.ModelConfig(encoder=ENCODER))
  task = tagging.TaggingTask(config)
  model = task.build_model()
  task.initialize(model)
  _assert_encoder_is_model_gardens(model.checkpoint_items['encoder'])


def _encoder_keys(cls, tmp_path, **kwargs):
  encoder = cls(vocab_size=20, hidden_size=32, num_layers=2, num_attention_heads=2, inner_dim=64,
                max_sequence_length=8, type_vocab_size=2, **kwargs)
  ids = tf.ones([1, 8], tf.int32)
  encoder(dict(input_word_ids=ids, input_mask=ids, input_type_ids=ids))
  return _keys(tf.train.Checkpoint(encoder=encoder).write(str(tmp_path / cls.__name__)))


@pytest.mark.slow
def test_encoder_keys_follow_model_gardens_classes(tmp_path):
  from official.nlp.modeling import networks  # pylint: disable=g-import-not-at-top
  # The functional BertEncoder (what `encoders.build_encoder` builds in both frameworks): with
  # factorized embeddings the projection is layer 4 and the blocks follow.
  keys = _encoder_keys(networks.BertEncoder, tmp_path, embedding_width=16)
  assert keys['encoder/layer_with_weights-0/embeddings'] == [20, 16]
  assert keys['encoder/layer_with_weights-4/kernel'] == [16, 32]
  assert keys['encoder/layer_with_weights-5/_attention_layer/_query_dense/kernel'] == [32, 2, 16]
  assert keys['encoder/layer_with_weights-7/kernel'] == [32, 32]  # the pooler
  assert len(keys) == 3 + 2 + 2 + 2 * 16 + 2  # embeddings, LayerNorm, projection, blocks, pooler
  # BertEncoderV2 is a subclassed layer in Model Garden: attribute names.
  keys = _encoder_keys(networks.BertEncoderV2, tmp_path)
  assert keys['encoder/_embedding_layer/embeddings'] == [20, 32]
  assert keys['encoder/_transformer_layers/1/_output_layer_norm/gamma'] == [32]
  assert keys['encoder/_pooler_layer/kernel'] == [32, 32]
  assert not any('layer_with_weights' in key for key in keys)
