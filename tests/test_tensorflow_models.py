"""Tests for tensorflow_models/: Model Garden's `import tensorflow_models as tfm` namespace."""

import pytest

import tensorflow_models as tfm
from official import core
from official.modeling import hyperparams
from official.modeling import optimization
from official.modeling import tf_utils
from official.nlp.configs import encoders
from official.nlp.modeling import layers
from official.nlp.modeling import networks
from official.nlp.tasks import tagging


def test_namespaces_are_our_modules():
  assert (tfm.core, tfm.hyperparams, tfm.optimization, tfm.utils) == (
      core, hyperparams, optimization, tf_utils)
  assert (tfm.nlp.layers, tfm.nlp.networks, tfm.nlp.encoders) == (layers, networks, encoders)
  assert tfm.nlp.tasks.TaggingTask is tagging.TaggingTask
  assert (tfm.core.base_trainer.Trainer
          and tfm.nlp.losses.weighted_sparse_categorical_crossentropy_loss)


def test_model_gardens_documented_calls_work():
  block = tfm.nlp.layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=10,
                                                 inner_activation='relu')
  assert block.get_config()['inner_dim'] == 10
  task = tfm.nlp.tasks.TaggingTask(params=tfm.nlp.tasks.TaggingConfig())
  assert task.task_config.model.encoder.type == 'bert'
  schedule = tfm.optimization.LinearWarmup(after_warmup_lr_sched=0.0, warmup_steps=10,
                                           warmup_learning_rate=0.1)
  assert float(schedule(0)) == pytest.approx(0.1)
  encoder = tfm.nlp.networks.BertEncoder(vocab_size=20, hidden_size=8, num_layers=1,
                                         num_attention_heads=2, inner_dim=16)
  assert encoder.weights  # built at construction, as Model Garden's


@pytest.mark.parametrize('name', ['vision', 'uplift'])
def test_out_of_scope_namespaces_say_so(name):
  with pytest.raises(AttributeError, match=rf'tensorflow_models\.{name} is not part of mlm-garden'):
    getattr(tfm, name)
  with pytest.raises(AttributeError, match="has no attribute 'nope'"):
    tfm.nope  # pylint: disable=pointless-statement
