"""Encoder families as plug-ins (`official/nlp/modeling/networks/encoder_family.py`).

A toy family defined in this file, registered with one `register_encoder_family` call and no edit
anywhere else, pretrains through `bert/pretraining` on tiny records and fine-tunes through
`bert/sentence_prediction`; its config takes Model Garden's nested and flat forms, it has a FLOP
count and our checkpoints. Also: the built-in families' records, Model Garden's `type: any` (a
bound `BUILDER`; one returning no Keras layer is refused) and a duplicate name refused.
"""

import dataclasses
import os
from typing import Any, Dict, Mapping, Tuple

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import official.common.registry_imports  # noqa: F401  (the experiments)
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.modeling import hyperparams
from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.data import pretrain_dataloader
from official.nlp.modeling import networks
from official.nlp.modeling.models import bert_pretrainer
from official.nlp.modeling.networks import encoder_family
from official.nlp.tasks import masked_lm
from official.nlp.tools import convert_checkpoint
from official.nlp.tools import model_flops
from official.nlp.tools import training_curves
from tests.nlp.data import pretraining_records

WORDS = [f'w{i}' for i in range(16)]
VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + WORDS
SEQ, PREDICTIONS, HIDDEN = 16, 3, 16
BUILT_IN = ('albert', 'bert', 'bert_v2', 'modernbert')
_INPUTS = ('input_word_ids', 'input_mask', 'input_type_ids')


# ---- the toy family: a config, an encoder, a builder, a FLOP count -----------------------------
@dataclasses.dataclass
class ToyEncoderConfig(hyperparams.Config):
  """A bag-of-words encoder: word + type embeddings, one dense GELU layer, a tanh pooler."""
  vocab_size: int = 30
  hidden_size: int = HIDDEN
  max_position_embeddings: int = SEQ
  dropout_rate: float = 0.0
  initializer_range: float = 0.02

  def check_seq_length(self, field: str, seq_length: int) -> None:
    if seq_length > self.max_position_embeddings:
      raise hyperparams.ConfigError(field, f'{seq_length} exceeds model.encoder.toy.'
                                    f'max_position_embeddings={self.max_position_embeddings}')


class ToyEncoder(tf_keras.Model):
  """A functional encoder with `BertEncoder`'s inputs and dict outputs."""

  def __init__(self, vocab_size: int, hidden_size: int, initializer_range: float = 0.02,
               **kwargs):
    inputs = {name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name) for name in _INPUTS}
    def init():
      return tf_keras.initializers.TruncatedNormal(stddev=initializer_range)

    words = tf_keras.layers.Embedding(vocab_size, hidden_size, embeddings_initializer=init(),
                                      name='word_embeddings')
    types = tf_keras.layers.Embedding(2, hidden_size, embeddings_initializer=init(),
                                      name='type_embeddings')
    x = tf_keras.layers.Add()([words(inputs['input_word_ids']), types(inputs['input_type_ids'])])
    sequence = tf_keras.layers.Dense(hidden_size, activation='gelu', kernel_initializer=init(),
                                     name='mix')(x)
    first = tf_keras.layers.Lambda(lambda t: t[:, 0])(sequence)
    pooled = tf_keras.layers.Dense(hidden_size, activation='tanh', kernel_initializer=init(),
                                   name='pooler')(first)
    super().__init__(inputs=inputs, outputs={'sequence_output': sequence,
                                             'pooled_output': pooled,
                                             'encoder_outputs': [sequence]}, **kwargs)
    self._words = words
    self._toy_config = dict(vocab_size=vocab_size, hidden_size=hidden_size,
                            initializer_range=initializer_range)

  def call(self, inputs, training=None, mask=None):
    if isinstance(inputs, Mapping):  # a batch holds labels and positions too
      inputs = {name: inputs[name] for name in _INPUTS}
    return super().call(inputs, training=training, mask=mask)

  def get_embedding_table(self) -> tf.Variable:
    return self._words.embeddings

  def get_config(self) -> Dict[str, Any]:
    return dict(self._toy_config)


def _build_toy(config: ToyEncoderConfig) -> ToyEncoder:
  return ToyEncoder(config.vocab_size, config.hidden_size, config.initializer_range)


def _toy_config_of(encoder: ToyEncoder) -> ToyEncoderConfig:
  return ToyEncoderConfig(**encoder.get_config())


def _toy_flops(config: ToyEncoderConfig, s: int) -> Tuple[Dict[str, float], int]:
  h = config.hidden_size
  return {'feed_forward': 2.0 * s * h * h, 'pooler': 2.0 * h * h}, h


@pytest.fixture(name='toy_family')
def fixture_toy_family():
  """The toy family, registered for one test (the other tests see the built-in ones only)."""
  family = encoder_family.register_encoder_family(encoder_family.EncoderFamily(
      name='toy', config_cls=ToyEncoderConfig, build=_build_toy, encoder_classes=(ToyEncoder,),
      config_of=_toy_config_of, count_flops=_toy_flops))
  yield family
  encoder_family.unregister_encoder_family('toy')


def _toy_overrides(vocab_size: int) -> list:
  return ['task.model.encoder.type=toy', f'task.model.encoder.toy.vocab_size={vocab_size}',
          f'task.model.encoder.toy.hidden_size={HIDDEN}']


def _records(tmp_path) -> str:
  """Tiny next-sentence records of a corpus whose sentences walk the word list in order."""
  return pretraining_records.walking_corpus_records(tmp_path, WORDS, 24, SEQ, PREDICTIONS,
                                                    dupe_factor=2)[0]


# ---- the toy family through the experiments ----------------------------------------------------
@pytest.mark.slow
def test_toy_family_pretrains_through_bert_pretraining_and_fine_tunes(toy_family, tmp_path):
  records = _records(tmp_path)
  params = train_utils.build_params('bert/pretraining', params_override=','.join(
      _toy_overrides(len(VOCAB)) + [
          f'task.model.cls_heads=[{{name: next_sentence, num_classes: 2, inner_dim: {HIDDEN}}}]',
          f'task.train_data.input_path={records}', f'task.train_data.seq_length={SEQ}',
          f'task.train_data.max_predictions_per_seq={PREDICTIONS}',
          'task.train_data.global_batch_size=8', f'task.validation_data.seq_length={SEQ}',
          f'task.validation_data.max_predictions_per_seq={PREDICTIONS}',
          'trainer.train_steps=10', 'trainer.steps_per_loop=5', 'trainer.summary_interval=5',
          'trainer.checkpoint_interval=10',
          'trainer.optimizer_config.learning_rate.polynomial.initial_learning_rate=0.01',
          'trainer.optimizer_config.learning_rate.polynomial.decay_steps=10',
          'trainer.optimizer_config.warmup.polynomial.warmup_steps=1',
          'runtime.distribution_strategy=one_device']))
  assert params.task.model.encoder.get() == ToyEncoderConfig(vocab_size=len(VOCAB))
  model_dir = str(tmp_path / 'pretrain')
  task = task_factory.get_task(params.task, logging_dir=model_dir)
  model, _ = train_lib.run_experiment(tf.distribute.get_strategy(), task, 'train', params,
                                      model_dir)
  assert type(model.encoder_network) is ToyEncoder
  # BERT's masked-LM head (the family's default), tied to the toy's word table.
  assert model.masked_lm.embedding_table is model.encoder_network.get_embedding_table()
  losses = [value for _, value in training_curves.read_scalars(
      os.path.join(model_dir, 'train'))['training_loss']]
  assert len(losses) == 2 and np.all(np.isfinite(losses)) and losses[-1] < losses[0], losses
  saved = hyperparams.read_yaml(os.path.join(model_dir, 'params.yaml'))['task']['model']['encoder']
  assert saved == {'type': 'toy', 'toy': params.task.model.encoder.toy.as_dict()}

  prefix = tf.train.latest_checkpoint(model_dir)
  finetune = train_utils.build_params('bert/sentence_prediction', params_override=','.join(
      _toy_overrides(len(VOCAB)) + [
          'task.model.num_classes=2', f'task.init_checkpoint={prefix}',
          'task.train_data.input_path=dummy', f'task.train_data.seq_length={SEQ}',
          'task.train_data.global_batch_size=4', 'task.validation_data.input_path=dummy',
          f'task.validation_data.seq_length={SEQ}', 'task.validation_data.global_batch_size=4',
          'trainer.train_steps=2', 'trainer.steps_per_loop=1', 'trainer.summary_interval=1',
          'trainer.checkpoint_interval=2', 'runtime.distribution_strategy=one_device']))
  classifier_task = task_factory.get_task(finetune.task)
  classifier = classifier_task.build_model()
  classifier_task.initialize(classifier)
  np.testing.assert_array_equal(
      classifier.checkpoint_items['encoder'].get_embedding_table().numpy(),
      model.encoder_network.get_embedding_table().numpy())
  finetune_dir = str(tmp_path / 'finetune')
  classifier, _ = train_lib.run_experiment(
      tf.distribute.get_strategy(), task_factory.get_task(finetune.task, logging_dir=finetune_dir),
      'train', finetune, finetune_dir)
  assert type(classifier.checkpoint_items['encoder']) is ToyEncoder
  losses = [value for _, value in training_curves.read_scalars(
      os.path.join(finetune_dir, 'train'))['training_loss']]
  assert len(losses) == 2 and np.all(np.isfinite(losses)), losses


def test_toy_config_forms_errors_flops_and_our_checkpoints(toy_family, tmp_path):
  assert set(encoder_family.names()) == set(BUILT_IN + ('toy',))
  nested = encoders.EncoderConfig(type='toy', toy=ToyEncoderConfig(hidden_size=8))
  assert nested.get() == ToyEncoderConfig(hidden_size=8)
  assert nested.as_dict() == {'type': 'toy', 'toy': ToyEncoderConfig(hidden_size=8).as_dict()}
  # Model Garden's dict and YAML forms, and the flat form of how-tos, build the same config.
  assert encoders.EncoderConfig.from_dict({'type': 'toy', 'toy': {'hidden_size': 8}}) == nested
  assert encoders.EncoderConfig(type='toy', hidden_size=8) == nested
  assert encoders.EncoderConfig({'type': 'toy', 'hidden_size': 8}) == nested
  assert nested != encoders.EncoderConfig(type='toy', hidden_size=4)
  path = str(tmp_path / 'encoder.yaml')
  nested.to_yaml(path)
  assert encoders.EncoderConfig.from_yaml(path) == nested
  config = encoders.EncoderConfig()  # made with the default type
  config.override({'type': 'toy', 'toy': {'vocab_size': 50}})
  assert (config.type, config.toy.vocab_size, config.toy.hidden_size) == ('toy', 50, HIDDEN)
  with pytest.raises(hyperparams.ConfigKeyError, match=r'^toy\.hidden_sise:'):
    encoders.EncoderConfig.from_dict({'type': 'toy', 'toy': {'hidden_sise': 8}})
  with pytest.raises(hyperparams.ConfigKeyError, match=r"^hidden_sise: not a field of the 'toy'"):
    encoders.EncoderConfig.from_dict({'type': 'toy', 'hidden_sise': 8})
  with pytest.raises(hyperparams.ConfigError, match=r'^toy\.vocab_size: expected int'):
    encoders.EncoderConfig(type='toy', toy={'vocab_size': 'many'})
  with pytest.raises(hyperparams.ConfigError, match=r"^type: unknown encoder type 'toy2'; "
                     r"supported types: \['albert', 'bert', 'bert_v2', 'modernbert', 'toy'\]"):
    encoders.EncoderConfig(type='toy2')
  with pytest.raises(ValueError, match='embedding_layer is not supported by the toy encoder'):
    encoders.build_encoder(nested, embedding_layer=tf_keras.layers.Embedding(30, 8))

  encoder = encoders.build_encoder(ToyEncoderConfig(hidden_size=8))  # a bare member config
  assert type(encoder) is ToyEncoder
  assert bert_pretrainer.masked_lm_options(encoder) == {}
  params = train_utils.build_params('bert/pretraining', params_override=','.join(
      _toy_overrides(30) + [f'task.{split}.{key}={value}'
                            for split in ('train_data', 'validation_data')
                            for key, value in (('seq_length', 16), ('max_predictions_per_seq', 2))
                            ] + ['task.model.cls_heads=[]']))
  flops = model_flops.model_flops_per_sequence(params)
  h, s, v = HIDDEN, 16, 30
  assert flops['forward'] == 2 * s * h * h + 2 * h * h + 2 * 2 * h * h + 2 * 2 * h * v
  with pytest.raises(hyperparams.ConfigError, match=r'^train_data\.seq_length: 32 exceeds '
                     r'model\.encoder\.toy\.max_position_embeddings=16'):
    params.override({'task': {'train_data': {'seq_length': 32}}})
    params.task.validate()

  # Our checkpoints: the family's `config_of` writes params.yaml; no Hugging Face layout.
  out = str(tmp_path / 'ours')
  convert_checkpoint.write(encoder, 'ours', out)
  restored = convert_checkpoint.read('ours', out)
  assert type(restored) is ToyEncoder
  np.testing.assert_array_equal(restored.get_embedding_table().numpy(),
                                encoder.get_embedding_table().numpy())
  with pytest.raises(ValueError, match=r'^--target=hf: the toy encoder family \(ToyEncoder\) has '
                     r'no Hugging Face checkpoint layout; expected --target=ours$'):
    convert_checkpoint.write(encoder, 'hf', str(tmp_path / 'hf'))


def test_registering_a_taken_name_is_refused(toy_family):
  for name in ('toy', 'bert', 'any', 'type'):
    with pytest.raises(ValueError, match=rf"^encoder family (name )?'{name}'"):
      encoder_family.register_encoder_family(dataclasses.replace(toy_family, name=name))
  assert encoder_family.get('toy') is toy_family
  assert encoder_family.get('bert').build is not toy_family.build


def test_an_unregistered_family_is_no_member():
  assert 'toy' not in encoder_family.names()
  assert 'toy' not in encoders.EncoderConfig.member_names()
  with pytest.raises(hyperparams.ConfigError, match=r"^type: unknown encoder type 'toy'; "
                     r"supported types: \['albert', 'bert', 'bert_v2', 'modernbert'\]$"):
    encoders.EncoderConfig(type='toy')


def test_built_in_families_are_registrations():
  assert set(BUILT_IN) <= set(encoder_family.names())
  for name in BUILT_IN:
    family = encoder_family.get(name)
    # The declared `EncoderConfig` member is the family's config class.
    assert type(getattr(encoders.EncoderConfig(), name)) is family.config_cls
    assert callable(encoder_family.resolve(family.count_flops))
    assert family.weight_map is None or callable(encoder_family.resolve(family.weight_map))
    for fmt in encoder_family.FORMATS:
      spec = family.checkpoint_format(fmt)
      for ref in ((spec.read, spec.write, spec.recognizes, spec.config) if spec else ()):
        assert ref is None or callable(encoder_family.resolve(ref)), (name, fmt, ref)
  assert encoder_family.family_of_encoder(networks.BertEncoderV2(
      vocab_size=10, hidden_size=8, num_layers=1, num_attention_heads=2, inner_dim=8)).name == (
          'bert_v2')
  assert encoder_family.family_of_config(encoders.BertEncoderConfig()).name == 'bert'
  assert encoder_family.get('albert').hf is None  # no Hugging Face layout: refused by name
  with pytest.raises(ValueError, match=r"expected 'package\.module:function'"):
    encoder_family.resolve('official.nlp.tools.model_flops')


# ---- Model Garden's `type: any` ------------------------------------------------------------------
@dataclasses.dataclass
class AnyToyConfig(hyperparams.Config):
  vocab_size: int = 20
  hidden_size: int = 8
  initializer_range: float = 0.02
  dropout_rate: float = 0.0

  def check_seq_length(self, field: str, seq_length: int) -> None:
    del field, seq_length  # no position table


@hyperparams.bind(AnyToyConfig)
def _build_any_toy(config: AnyToyConfig) -> ToyEncoder:
  return ToyEncoder(config.vocab_size, config.hidden_size, config.initializer_range)


@dataclasses.dataclass
class NotAnEncoderConfig(hyperparams.Config):
  width: int = 4


@hyperparams.bind(NotAnEncoderConfig)
def _build_not_an_encoder(config: NotAnEncoderConfig) -> Dict[str, int]:
  return {'width': config.width}


def test_type_any_calls_the_bound_builder():
  config = encoders.EncoderConfig(type='any', any=AnyToyConfig(hidden_size=8))
  assert config.get().BUILDER is not None
  encoder = encoders.build_encoder(config)
  assert type(encoder) is ToyEncoder and encoder.get_config()['hidden_size'] == 8
  assert config.as_dict() == {'type': 'any', 'any': AnyToyConfig(hidden_size=8).as_dict()}
  # An override keeps the bound class (as Model Garden's); YAML-style dicts update it.
  config.override({'any': {'hidden_size': 4}})
  assert type(config.any) is AnyToyConfig and config.any.hidden_size == 4
  # Through a task: BERT's masked-LM head on the built encoder.
  task = masked_lm.MaskedLMTask(masked_lm.MaskedLMConfig(
      model=bert.PretrainerConfig(encoder=config, cls_heads=[]),
      train_data=pretrain_dataloader.BertPretrainDataConfig(
          input_path='dummy', seq_length=8, max_predictions_per_seq=2, global_batch_size=2)))
  model = task.build_model()
  batch = next(iter(task.build_inputs(task.task_config.train_data)))
  assert model(batch)['mlm_logits'].shape == (2, 2, 20)


def test_type_any_refuses_a_builder_that_returns_no_layer_and_a_config_without_one():
  config = encoders.EncoderConfig(type='any', any=NotAnEncoderConfig())
  with pytest.raises(ValueError, match=r"^build_encoder: the BUILDER of NotAnEncoderConfig "
                     r"\(type 'any'\) returned builtins\.dict; expected a Keras layer or model"):
    encoders.build_encoder(config)
  with pytest.raises(hyperparams.ConfigError, match=r"^any: type 'any' needs a config class "
                     r'with a builder; Config has none'):
    encoders.build_encoder(encoders.EncoderConfig(type='any'))
