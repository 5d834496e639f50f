"""Registered pretraining experiments: `bert/pretraining` (static masks) and
`bert/pretraining_dynamic`.

Also `electra/pretraining` (ELECTRA's generator and discriminator on the same records).

Example:
  >>> from official.core import exp_factory
  >>> params = exp_factory.get_exp_config('bert/pretraining')
  >>> params.trainer.optimizer_config.optimizer.type
  'adamw'
"""

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.modeling import optimization
from official.nlp.data import pretrain_dataloader
from official.nlp.data import pretrain_dynamic_dataloader
from official.nlp.tasks import electra_task
from official.nlp.tasks import masked_lm


def bert_pretraining_optimization(train_steps: int = 1_000_000, warmup_steps: int = 10_000,
                                  learning_rate: float = 1e-4) -> optimization.OptimizationConfig:
  """BERT's recipe: AdamW (decay 0.01, not on LayerNorm or biases), linear decay to 0, warmup."""
  return optimization.OptimizationConfig.from_dict({
      'optimizer': {'type': 'adamw', 'adamw': {
          'weight_decay_rate': 0.01,
          'exclude_from_weight_decay': ['LayerNorm', 'layer_norm', 'bias']}},
      'learning_rate': {'type': 'polynomial', 'polynomial': {
          'initial_learning_rate': learning_rate, 'decay_steps': train_steps,
          'end_learning_rate': 0.0}},
      'warmup': {'type': 'polynomial', 'polynomial': {'warmup_steps': warmup_steps, 'power': 1}},
  })


@exp_factory.register_config_factory('bert/pretraining')
def bert_pretraining() -> cfg.ExperimentConfig:
  """BERT masked-LM (+ next-sentence) pretraining from static-mask TFRecords."""
  return cfg.ExperimentConfig(
      task=masked_lm.MaskedLMConfig(
          train_data=pretrain_dataloader.BertPretrainDataConfig(),
          validation_data=pretrain_dataloader.BertPretrainDataConfig(is_training=False)),
      trainer=cfg.TrainerConfig(train_steps=1_000_000,
                                optimizer_config=bert_pretraining_optimization()),
      runtime=cfg.RuntimeConfig(enable_xla=True))


@exp_factory.register_config_factory('bert/pretraining_dynamic')
def bert_pretraining_dynamic() -> cfg.ExperimentConfig:
  """BERT pretraining with masks drawn on the fly each epoch (records from `--dynamic`)."""
  params = bert_pretraining()
  params.task.train_data = pretrain_dynamic_dataloader.BertPretrainDynamicDataConfig()
  params.task.validation_data = pretrain_dynamic_dataloader.BertPretrainDynamicDataConfig(
      is_training=False)
  return params


@exp_factory.register_config_factory('electra/pretraining')
@exp_factory.register_config_factory('electra/electra_pretraining')
def electra_pretraining() -> cfg.ExperimentConfig:
  """ELECTRA pretraining (generator + discriminator) from static-mask TFRecords (Model Garden's
  `electra/pretraining`; also registered as `electra/electra_pretraining`)."""
  return cfg.ExperimentConfig(
      task=electra_task.ElectraPretrainConfig(
          train_data=pretrain_dataloader.BertPretrainDataConfig(),
          validation_data=pretrain_dataloader.BertPretrainDataConfig(is_training=False)),
      trainer=cfg.TrainerConfig(train_steps=1_000_000,
                                optimizer_config=bert_pretraining_optimization()),
      runtime=cfg.RuntimeConfig(enable_xla=True))
