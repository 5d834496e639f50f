"""Tests for official/nlp/tasks/masked_lm.py."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.core import config_definitions
from official.modeling import fused_ops
from official.modeling import hyperparams
from official.modeling import tf_utils
from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.data import pretrain_dataloader
from official.nlp.tasks import masked_lm
from tests import testing

VOCAB = 50


def _tiny_config(num_classes=2, input_path='dummy', **data_kwargs):
  data = dict(input_path=input_path, seq_length=16, max_predictions_per_seq=4,
              global_batch_size=8, **data_kwargs)
  return masked_lm.MaskedLMConfig(
      model=bert.PretrainerConfig(
          encoder=encoders.EncoderConfig(bert=encoders.BertEncoderConfig(**testing.tiny_config(
              vocab_size=VOCAB, dropout_rate=0.0, attention_dropout_rate=0.0))),
          cls_heads=[bert.ClsHeadConfig(inner_dim=16, num_classes=num_classes,
                                        name='next_sentence')]),
      train_data=pretrain_dataloader.BertPretrainDataConfig(**data),
      validation_data=pretrain_dataloader.BertPretrainDataConfig(is_training=False, **data))


def _log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _labels_and_outputs(seed=0):
  rng = np.random.default_rng(seed)
  labels = {'masked_lm_ids': rng.integers(0, VOCAB, (3, 4)).astype(np.int32),
            'masked_lm_weights': np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], np.float32),
            'next_sentence_labels': np.array([[0], [1], [1]], np.int32)}
  outputs = {'mlm_logits': rng.normal(size=(3, 4, VOCAB)).astype(np.float32),
             'next_sentence': rng.normal(size=(3, 2)).astype(np.float32)}
  return labels, outputs


def _numpy_losses(labels, outputs):
  log_probs = _log_softmax(outputs['mlm_logits'])
  ce = -np.take_along_axis(log_probs, labels['masked_lm_ids'][..., None], -1)[..., 0]
  weights = labels['masked_lm_weights']
  mlm = (ce * weights).sum() / weights.sum()
  nsp_log_probs = _log_softmax(outputs['next_sentence'])
  nsp = -np.take_along_axis(nsp_log_probs, labels['next_sentence_labels'], -1).mean()
  return mlm, nsp, ce


def test_loss_is_weighted_mean_cross_entropy_plus_next_sentence():
  task = masked_lm.MaskedLMTask(_tiny_config())
  metrics = task.build_metrics()
  labels, outputs = _labels_and_outputs()
  loss = task.build_losses(labels, outputs, metrics)
  mlm, nsp, ce = _numpy_losses(labels, outputs)
  np.testing.assert_allclose(loss, mlm + nsp, rtol=1e-5)
  by_name = {m.name: m for m in metrics}
  np.testing.assert_allclose(by_name['lm_example_loss'].result(), mlm, rtol=1e-5)
  np.testing.assert_allclose(by_name['next_sentence_loss'].result(), nsp, rtol=1e-5)
  weights = labels['masked_lm_weights']
  np.testing.assert_allclose(by_name['masked_lm_perplexity'].result(),
                             np.exp((ce * weights).sum() / weights.sum()), rtol=1e-5)


def test_weight_zero_position_changes_nothing():
  task = masked_lm.MaskedLMTask(_tiny_config())
  labels, outputs = _labels_and_outputs()
  loss = task.build_losses(labels, outputs)
  changed_labels = dict(labels, masked_lm_ids=labels['masked_lm_ids'].copy())
  changed_labels['masked_lm_ids'][0, 3] = (labels['masked_lm_ids'][0, 3] + 1) % VOCAB
  changed_outputs = dict(outputs, mlm_logits=outputs['mlm_logits'].copy())
  changed_outputs['mlm_logits'][2, 1:] += 100.0
  np.testing.assert_allclose(task.build_losses(changed_labels, changed_outputs), loss, rtol=1e-6)


def test_masked_lm_accuracy_is_weighted():
  task = masked_lm.MaskedLMTask(_tiny_config())
  metrics = task.build_metrics()
  labels = {'masked_lm_ids': np.array([[1, 2, 3, 4]], np.int32),
            'masked_lm_weights': np.array([[1, 1, 1, 0]], np.float32),
            'next_sentence_labels': np.array([[1]], np.int32)}
  logits = np.zeros((1, 4, VOCAB), np.float32)
  logits[0, 0, 1] = logits[0, 1, 7] = logits[0, 2, 3] = logits[0, 3, 4] = 5.0
  nsp = np.array([[0.0, 3.0]], np.float32)
  task.process_metrics(metrics, labels, {'mlm_logits': logits, 'next_sentence': nsp})
  by_name = {m.name: m for m in metrics}
  # Right at positions 0 and 2, wrong at 1; position 3 (right) has weight 0.
  np.testing.assert_allclose(by_name['masked_lm_accuracy'].result(), 2 / 3, rtol=1e-6)
  np.testing.assert_allclose(by_name['next_sentence_accuracy'].result(), 1.0)


def test_accuracy_from_the_losss_argmax_equals_the_keras_metric():
  labels, outputs = _labels_and_outputs(seed=5)
  outputs['mlm_logits'][0, 0, :] = 0.0  # a tie everywhere: Keras' argmax takes the first id
  labels['masked_lm_ids'][0, 0] = 0
  task = masked_lm.MaskedLMTask(_tiny_config())
  _, predictions = tf_utils.sparse_softmax_cross_entropy_with_argmax(
      labels['masked_lm_ids'], outputs['mlm_logits'])
  from_logits, from_predictions = task.build_metrics(), task.build_metrics()
  task.process_metrics(from_logits, labels, outputs)
  task.process_metrics(from_predictions, labels, outputs, mlm_predictions=predictions)
  want = (np.argmax(outputs['mlm_logits'], -1) == labels['masked_lm_ids'])
  want = (want * labels['masked_lm_weights']).sum() / labels['masked_lm_weights'].sum()
  assert want > 0
  for metrics in (from_logits, from_predictions):
    np.testing.assert_allclose(metrics[0].result(), want, rtol=1e-6)
    assert metrics[0].name == 'masked_lm_accuracy'


@pytest.mark.slow
def test_train_step_calls_a_subclasss_build_losses():
  calls = []

  class Doubled(masked_lm.MaskedLMTask):
    def build_losses(self, labels, model_outputs, metrics=None, aux_losses=None):
      calls.append(1)
      return 2.0 * super().build_losses(labels, model_outputs, metrics, aux_losses)

  task, doubled = masked_lm.MaskedLMTask(_tiny_config()), Doubled(_tiny_config())
  model = task.build_model()
  batch = next(iter(task.build_inputs(task.task_config.train_data)))
  metrics = doubled.build_metrics()
  logs = doubled.validation_step(batch, model, metrics)
  np.testing.assert_allclose(logs['loss'], 2.0 * task.validation_step(batch, model)['loss'],
                             rtol=1e-6)
  assert calls and metrics[0].count.numpy() > 0  # accuracy still updated, from the logits


def test_train_step_calls_a_subclasss_process_metrics_without_keywords():
  class OwnMetrics(masked_lm.MaskedLMTask):
    def process_metrics(self, metrics, labels, model_outputs):  # no **kwargs
      super().process_metrics(metrics, labels, model_outputs)

  task = OwnMetrics(_tiny_config())
  model = task.build_model()
  batch = next(iter(task.build_inputs(task.task_config.train_data)))
  metrics = task.build_metrics()
  task.validation_step(batch, model, metrics)
  assert metrics[0].count.numpy() > 0


@pytest.mark.slow
def test_evaluation_on_records_without_next_sentence_labels():
  """A model with a next-sentence head evaluates masked LM on single-segment records."""
  task = masked_lm.MaskedLMTask(_tiny_config())
  model = task.build_model()
  metrics = task.build_metrics(training=False)
  labels, _ = _labels_and_outputs()
  del labels['next_sentence_labels']
  inputs = dict(labels, input_word_ids=np.ones([3, 16], np.int32),
                input_mask=np.ones([3, 16], np.int32), input_type_ids=np.zeros([3, 16], np.int32),
                masked_lm_positions=np.tile(np.arange(4, dtype=np.int32), [3, 1]))
  step = tf.function(lambda batch: task.validation_step(batch, model, metrics))
  loss = step(inputs)['loss']
  by_name = {m.name: m for m in metrics}
  np.testing.assert_allclose(by_name['lm_example_loss'].result(), loss, rtol=1e-6)
  assert by_name['next_sentence_accuracy'].count.numpy() == 0  # nothing to score


def test_metrics_without_next_sentence_head():
  config = _tiny_config()
  config.model.cls_heads = []
  names = [m.name for m in masked_lm.MaskedLMTask(config).build_metrics()]
  assert names == ['masked_lm_accuracy', 'lm_example_loss', 'masked_lm_perplexity']


@pytest.mark.slow
def test_model_outputs_and_train_steps_reduce_loss():
  task = masked_lm.MaskedLMTask(_tiny_config())
  model = task.build_model()
  dataset = task.build_inputs(task.task_config.train_data)
  batch = next(iter(dataset))
  outputs = model(batch)
  assert outputs['mlm_logits'].shape == (8, 4, VOCAB)
  assert outputs['next_sentence'].shape == (8, 2)
  optimizer = tf_keras.optimizers.Adam(1e-2)
  metrics = task.build_metrics()
  step = tf.function(lambda b: task.train_step(b, model, optimizer, metrics))
  losses = [float(step(batch)['loss']) for _ in range(30)]
  assert losses[-1] < 0.7 * losses[0]
  logs = task.validation_step(batch, model, task.build_metrics())
  assert np.isfinite(float(logs['loss']))


@pytest.mark.slow
def test_initialize_restores_encoder_and_skips_mismatched_head(tmp_path):
  source_task = masked_lm.MaskedLMTask(_tiny_config(num_classes=2))
  source = source_task.build_model()
  batch = next(iter(source_task.build_inputs(source_task.task_config.train_data)))
  source(batch)
  prefix = tf.train.Checkpoint(**source.checkpoint_items).save(
      str(tmp_path / 'pretrained' / 'ckpt'))

  config = _tiny_config(num_classes=3)
  config.init_checkpoint = str(tmp_path / 'pretrained')
  task = masked_lm.MaskedLMTask(config)
  model = task.build_model()
  model(batch)
  # Model Garden's checkpoint items: a head's pooler (`next_sentence.pooler_dense`), not its logits.
  logits_before = [v.numpy() for v in model.classification_heads[0].out_proj.variables]
  task.initialize(model)
  for mine, theirs in zip(model.checkpoint_items['encoder'].variables,
                          source.checkpoint_items['encoder'].variables):
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
  for before, after in zip(logits_before, model.classification_heads[0].out_proj.variables):
    np.testing.assert_array_equal(before, after.numpy())
  for mine, theirs in zip(model.checkpoint_items['next_sentence.pooler_dense'].variables,
                          source.checkpoint_items['next_sentence.pooler_dense'].variables):
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
  # The masked-LM head has the same shapes, so it is restored too.
  np.testing.assert_array_equal(model.checkpoint_items['masked_lm'].variables[0].numpy(),
                                source.checkpoint_items['masked_lm'].variables[0].numpy())
  assert prefix


def test_initialize_with_missing_checkpoint_fails_clearly(tmp_path):
  config = _tiny_config()
  config.init_checkpoint = str(tmp_path / 'nothing')
  task = masked_lm.MaskedLMTask(config)
  with pytest.raises((FileNotFoundError, ValueError), match='init_checkpoint'):
    task.initialize(task.build_model())


@pytest.mark.slow
@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
def test_xla_and_plain_train_steps_give_the_same_loss_and_update(dtype):
  task = masked_lm.MaskedLMTask(_tiny_config())
  batch = next(iter(task.build_inputs(task.task_config.train_data)))
  results = []
  try:
    tf_keras.mixed_precision.set_global_policy('float32' if dtype == 'float32' else
                                               f'mixed_{dtype}')
    for jit in (False, True):
      tf_keras.utils.set_random_seed(0)
      model = task.build_model()
      optimizer = tf_keras.optimizers.SGD(0.1)

      @tf.function(jit_compile=jit)
      def step(inputs, model=model, optimizer=optimizer):
        return task.train_step(inputs, model, optimizer)

      logs = step(batch)
      assert logs['loss'].dtype == tf.float32
      assert all(v.dtype == tf.float32 for v in model.trainable_variables)
      results.append((float(logs['loss']), [v.numpy() for v in model.trainable_variables]))
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  (plain_loss, plain_weights), (xla_loss, xla_weights) = results
  tolerance = 1e-5 if dtype == 'float32' else 2e-2
  np.testing.assert_allclose(xla_loss, plain_loss, rtol=tolerance)
  for plain, xla in zip(plain_weights, xla_weights):
    np.testing.assert_allclose(xla, plain, rtol=tolerance, atol=tolerance)


@pytest.mark.slow
def test_bfloat16_loss_reads_the_heads_rows_and_bias_with_the_same_step(monkeypatch):
  """Under mixed_bfloat16 the loss takes the head's bfloat16 rows and float32 bias (the float32
  logits are not read); the step's loss, metrics and update are the generic loss's."""
  task = masked_lm.MaskedLMTask(_tiny_config())
  batch = next(iter(task.build_inputs(task.task_config.train_data)))
  results, fused_calls = [], []
  generic = lambda labels, logits: tf_utils.sparse_softmax_cross_entropy_with_argmax(labels, logits)
  fused = fused_ops.biased_cross_entropy_with_argmax
  monkeypatch.setattr(fused_ops, 'biased_cross_entropy_with_argmax',
                      lambda *args: fused_calls.append(args[1].dtype) or fused(*args))
  try:
    tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
    for loss_fn in (masked_lm.cross_entropy_with_argmax, generic):
      monkeypatch.setattr(masked_lm, 'cross_entropy_with_argmax', loss_fn)
      tf_keras.utils.set_random_seed(0)
      model, metrics = task.build_model(), task.build_metrics()
      optimizer = tf_keras.optimizers.SGD(0.1)

      @tf.function
      def step(inputs, model=model, optimizer=optimizer, metrics=metrics):
        return task.train_step(inputs, model, optimizer, metrics)

      logs = step(batch)
      if not results:  # traced with the fused loss, on bfloat16 rows
        assert fused_calls and set(fused_calls) == {tf.bfloat16}
        fused_calls.clear()
      results.append((float(logs['loss']), {m.name: float(m.result()) for m in metrics},
                      [v.numpy() for v in model.trainable_variables]))
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert not fused_calls  # the generic loss's run
  (loss, metric_values, weights), (want_loss, want_metrics, want_weights) = results
  np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
  assert metric_values.keys() == want_metrics.keys()
  for name, value in metric_values.items():
    np.testing.assert_allclose(value, want_metrics[name], rtol=1e-5, err_msg=name)
  for got, want in zip(weights, want_weights):
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_cross_entropy_with_argmax_falls_back_and_checks_shapes(monkeypatch):
  labels, outputs = _labels_and_outputs()
  logits = tf.constant(outputs['mlm_logits'])  # not a head's output: the generic loss
  loss, top = masked_lm.cross_entropy_with_argmax(labels['masked_lm_ids'], logits)
  np.testing.assert_allclose(loss, _numpy_losses(labels, outputs)[2], rtol=1e-5)
  np.testing.assert_array_equal(top, outputs['mlm_logits'].argmax(-1))
  rows = tf.zeros([12, VOCAB], tf.bfloat16)
  marked = fused_ops.reshape_marked(fused_ops.cast_bias_add(rows, tf.zeros([VOCAB])),
                                    [3, 4, VOCAB])
  loss, top = masked_lm.cross_entropy_with_argmax(labels['masked_lm_ids'], marked)
  np.testing.assert_allclose(loss, np.full([3, 4], np.log(VOCAB)), rtol=1e-6)
  np.testing.assert_array_equal(top, np.zeros([3, 4]))
  with pytest.raises(ValueError, match=r'labels must have the shape of logits without its last '
                     r'axis; found labels \(4, 3\) and logits \(3, 4, 50\)'):
    masked_lm.cross_entropy_with_argmax(tf.zeros([4, 3], tf.int32), marked)
  # float16 rows (mixed_float16) keep the generic loss on the float32 logits.
  monkeypatch.setattr(fused_ops, 'biased_cross_entropy_with_argmax', None)
  half = fused_ops.reshape_marked(
      fused_ops.cast_bias_add(tf.zeros([12, VOCAB], tf.float16), tf.zeros([VOCAB])), [3, 4, VOCAB])
  loss, _ = masked_lm.cross_entropy_with_argmax(labels['masked_lm_ids'], half)
  np.testing.assert_allclose(loss, np.full([3, 4], np.log(VOCAB)), rtol=1e-6)


@pytest.mark.slow
def test_keras_compile_fit_trains_the_masked_lm_loss():
  config = _tiny_config()
  task = masked_lm.MaskedLMTask(config)
  model = task.build_model()
  model.compile(tf_keras.optimizers.Adam(1e-2))  # no loss: the task's loss and metrics
  history = model.fit(task.build_inputs(config.train_data), steps_per_epoch=8, epochs=3, verbose=0)
  assert sorted(history.history) == sorted(['loss', 'masked_lm_accuracy', 'lm_example_loss',
                                            'masked_lm_perplexity', 'next_sentence_accuracy',
                                            'next_sentence_loss'])
  losses = history.history['loss']
  assert losses[0] > losses[1] > losses[2]
  assert history.history['masked_lm_accuracy'][-1] > history.history['masked_lm_accuracy'][0]
  # One batch: the reported loss is the task's total (masked LM + next sentence) of that batch.
  batch = next(iter(task.build_inputs(config.validation_data)))
  result = model.evaluate(tf.data.Dataset.from_tensors(batch), return_dict=True, verbose=0)
  np.testing.assert_allclose(result['loss'],
                             result['lm_example_loss'] + result['next_sentence_loss'], rtol=1e-5)
  outputs = {k: v.numpy() for k, v in model(batch, training=False).items()
             if k in ('mlm_logits', 'next_sentence')}
  labels = {k: v.numpy() for k, v in batch.items()}
  mlm, nsp, _ = _numpy_losses(labels, outputs)
  np.testing.assert_allclose([result['lm_example_loss'], result['next_sentence_loss']], [mlm, nsp],
                             rtol=1e-4)


@pytest.mark.slow
def test_metrics_built_outside_update_inside_tf_function():
  config = _tiny_config()
  task = masked_lm.MaskedLMTask(config)
  model = task.build_model()
  metrics = task.build_metrics()
  batch = next(iter(task.build_inputs(config.validation_data)))

  @tf.function
  def step(inputs):
    return task.validation_step(inputs, model, metrics=metrics)

  step(batch)
  step(batch)
  outputs = {k: v.numpy() for k, v in model(batch, training=False).items()
             if k in ('mlm_logits', 'next_sentence')}
  labels = {k: v.numpy() for k, v in batch.items()}
  mlm, nsp, _ = _numpy_losses(labels, outputs)
  results = {m.name: float(m.result()) for m in metrics}
  predicted = outputs['mlm_logits'].argmax(-1)
  weights = labels['masked_lm_weights']
  accuracy = ((predicted == labels['masked_lm_ids']) * weights).sum() / weights.sum()
  np.testing.assert_allclose(results['masked_lm_accuracy'], accuracy, rtol=1e-6)
  np.testing.assert_allclose([results['lm_example_loss'], results['next_sentence_loss']],
                             [mlm, nsp], rtol=1e-4)
  assert float(metrics[1].count) == 2  # two updates, inside the function


def test_build_model_without_a_task_config():
  # Model Garden builds pretrainers as `MaskedLMTask(None).build_model(pretrainer_config)`.
  model = masked_lm.MaskedLMTask(None).build_model(_tiny_config().model)
  outputs = model({'input_word_ids': tf.ones([2, 8], tf.int32),
                   'input_mask': tf.ones([2, 8], tf.int32),
                   'input_type_ids': tf.zeros([2, 8], tf.int32),
                   'masked_lm_positions': tf.zeros([2, 3], tf.int32)})
  assert outputs['mlm_logits'].shape == (2, 3, VOCAB)


# -- masked_lm.cfg: Model Garden's config definitions, DataConfig with pretraining fields ---------


def test_cfg_data_config_with_pretraining_fields_is_a_pretraining_data_config():
  data = masked_lm.cfg.DataConfig(input_path='train.tfrecord', global_batch_size=32,
                                  seq_length=128, max_predictions_per_seq=20)
  assert type(data) is pretrain_dataloader.BertPretrainDataConfig
  assert (data.input_path, data.global_batch_size, data.seq_length,
          data.max_predictions_per_seq) == ('train.tfrecord', 32, 128, 20)
  assert data.is_training and data.use_next_sentence_label  # BertPretrainDataConfig's defaults
  assert isinstance(data, masked_lm.cfg.DataConfig)
  assert isinstance(data, config_definitions.DataConfig)
  assert issubclass(pretrain_dataloader.BertPretrainDataConfig, masked_lm.cfg.DataConfig)
  # Any one pretraining field routes; so do the keys of `default_params` and `from_dict`.
  assert type(masked_lm.cfg.DataConfig(use_v2_feature_names=True)).__name__ == (
      'BertPretrainDataConfig')
  assert masked_lm.cfg.DataConfig({'seq_length': 64}).seq_length == 64
  assert masked_lm.cfg.DataConfig.from_dict({'seq_length': 64}).seq_length == 64


def test_cfg_data_config_without_pretraining_fields_is_the_generic_one():
  data = masked_lm.cfg.DataConfig(input_path='train.tfrecord', global_batch_size=32)
  assert type(data) is config_definitions.DataConfig
  assert data == config_definitions.DataConfig(input_path='train.tfrecord', global_batch_size=32)
  assert isinstance(data, masked_lm.cfg.DataConfig)
  assert type(masked_lm.cfg.DataConfig.from_dict({'input_path': 'a'})) is (
      config_definitions.DataConfig)
  # Model Garden's other names are the core ones.
  for name in ('TaskConfig', 'ExperimentConfig', 'TrainerConfig', 'RuntimeConfig',
               'OptimizationConfig', 'hyperparams'):
    assert getattr(masked_lm.cfg, name) is getattr(config_definitions, name)
  assert masked_lm.MaskedLMConfig.__mro__[1] is config_definitions.TaskConfig


def test_cfg_data_config_refuses_a_misspelt_keyword_naming_it():
  with pytest.raises(TypeError, match=r"'seq_lenght'; did you mean 'seq_length'\?"):
    masked_lm.cfg.DataConfig(input_path='x', seq_lenght=128)
  with pytest.raises(TypeError, match=r"BertPretrainDataConfig.*'max_predictions_per_sq'; did "
                     r"you mean 'max_predictions_per_seq'\?"):
    masked_lm.cfg.DataConfig(seq_length=128, max_predictions_per_sq=20)
  # A positional dict is lenient, as Model Garden's constructor: the unknown key is kept (logged).
  config = masked_lm.cfg.DataConfig({'seq_length': 128, 'masked_positions': 20})
  assert (config.seq_length, config.masked_positions) == (128, 20)


def test_generic_data_config_and_config_files_stay_strict():
  with pytest.raises(TypeError, match='seq_length'):
    config_definitions.DataConfig(seq_length=1)
  with pytest.raises(hyperparams.ConfigKeyError, match='seq_length'):
    config_definitions.DataConfig.from_dict({'seq_length': 1})
  with pytest.raises(hyperparams.ConfigKeyError, match='seq_length'):
    config_definitions.TaskConfig().override({'train_data': {'seq_length': 1}})
  # The task's own fields are BertPretrainDataConfig: a misspelt key is refused with its path.
  config = _tiny_config()
  with pytest.raises(hyperparams.ConfigKeyError, match=r'train_data\.seq_lenght'):
    config.override({'train_data': {'seq_lenght': 32}})


def test_a_subclass_of_cfg_data_config_is_an_ordinary_config():

  @dataclasses.dataclass
  class MyDataConfig(masked_lm.cfg.DataConfig):
    extra: int = 1

  data = MyDataConfig(input_path='x', extra=3)
  assert type(data) is MyDataConfig and data.extra == 3
  assert isinstance(data, masked_lm.cfg.DataConfig)
  assert not isinstance(config_definitions.DataConfig(), MyDataConfig)
  assert MyDataConfig.from_dict({'extra': 5}).extra == 5
  with pytest.raises(TypeError):
    MyDataConfig(seq_length=3)


def test_task_trains_on_cfg_data_config_and_refuses_generic_data(tmp_path):
  data = dict(input_path='dummy', global_batch_size=8, seq_length=16, max_predictions_per_seq=4)
  config = _tiny_config()
  config.train_data = masked_lm.cfg.DataConfig(**data)
  config.validate()
  task = masked_lm.MaskedLMTask(config)
  batch = next(iter(task.build_inputs(config.train_data)))
  assert batch['masked_lm_positions'].shape == (8, 4)
  with pytest.raises(TypeError, match=r'needs a BertPretrainDataConfig, found DataConfig: give '
                     r'masked_lm.cfg.DataConfig its pretraining fields'):
    task.build_inputs(masked_lm.cfg.DataConfig(input_path='dummy', global_batch_size=8))


@pytest.mark.slow
def test_metrics_built_inside_tf_function_are_created_once():
  # A how-to's step builds its metrics inside the function: a tf.function may create variables
  # on its first trace only, so the task hands every trace the same metrics.
  config = _tiny_config()
  task = masked_lm.MaskedLMTask(config)
  model = task.build_model()
  optimizer = tf_keras.optimizers.Adam(1e-2)

  @tf.function
  def train_step(batch):
    metrics = task.build_metrics(training=True)
    return task.train_step(batch, model, optimizer, metrics)

  dataset = task.build_inputs(config.train_data)
  losses = [float(train_step(batch)['loss']) for batch in dataset.take(20)]
  assert losses[-1] < losses[0]
  metrics = task.build_metrics(training=True)  # eagerly: new metrics, as in Model Garden
  assert float(metrics[1].count) == 0
  in_function = task._function_metrics.metrics[True]  # pylint: disable=protected-access
  assert float(in_function[1].count) == 20  # lm_example_loss: one update per step
  assert not task.trainable_variables and not task.variables  # not the task's variables


def test_steps_compute_the_last_layer_at_cls_and_the_masked_positions_only(monkeypatch):
  """The task's steps ask the pretrainer for `masked_positions_only`: the same loss as the full
  model, with the encoder's last layer run at 1 + 4 positions of 16."""
  task = masked_lm.MaskedLMTask(_tiny_config())
  model = task.build_model()
  batch = next(iter(task.build_inputs(task.task_config.validation_data)))
  seen = []
  encoder_call = type(model.encoder_network).call

  def spy(self, inputs, *args, **kwargs):
    seen.append(inputs.get('output_positions') if isinstance(inputs, dict) else None)
    return encoder_call(self, inputs, *args, **kwargs)

  monkeypatch.setattr(type(model.encoder_network), 'call', spy)
  loss = task.validation_step(batch, model)[task.loss]
  (positions,) = seen
  np.testing.assert_array_equal(positions[:, 0], 0)
  np.testing.assert_array_equal(positions[:, 1:], batch['masked_lm_positions'])
  full = model(batch, training=False)
  want, _ = task._step_losses(batch, full, None, model.losses)  # pylint: disable=protected-access
  np.testing.assert_allclose(loss, want, rtol=1e-5)
