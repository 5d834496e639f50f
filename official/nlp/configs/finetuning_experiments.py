"""Registered fine-tuning experiments: `bert/sentence_prediction`, `bert/tagging`, `bert/squad`.

They fine-tune a pretrained encoder (`task.init_checkpoint`, e.g. a `bert/pretraining` model_dir)
with BERT's fine-tuning recipe: AdamW (weight decay 0.01, not on LayerNorm or biases), learning
rate 3e-5 with linear warmup over the first 10% of the steps, then linear decay to 0.

Example:
  >>> from official.core import exp_factory
  >>> params = exp_factory.get_exp_config('bert/sentence_prediction')
  >>> params.task.model.num_classes = 2
"""

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.nlp.configs import pretraining_experiments
from official.nlp.data import question_answering_dataloader
from official.nlp.data import sentence_prediction_dataloader
from official.nlp.data import tagging_dataloader
from official.nlp.tasks import question_answering
from official.nlp.tasks import sentence_prediction
from official.nlp.tasks import tagging

_TRAIN_STEPS = 10_000


def _trainer() -> cfg.TrainerConfig:
  return cfg.TrainerConfig(
      train_steps=_TRAIN_STEPS, steps_per_loop=100, summary_interval=100,
      checkpoint_interval=1000, validation_interval=1000,
      optimizer_config=pretraining_experiments.bert_pretraining_optimization(
          train_steps=_TRAIN_STEPS, warmup_steps=_TRAIN_STEPS // 10, learning_rate=3e-5))


@exp_factory.register_config_factory('bert/sentence_prediction')
def bert_sentence_prediction() -> cfg.ExperimentConfig:
  """Sentence(-pair) classification or regression (set `task.model.num_classes`)."""
  return cfg.ExperimentConfig(
      task=sentence_prediction.SentencePredictionConfig(
          train_data=sentence_prediction_dataloader.SentencePredictionDataConfig(),
          validation_data=sentence_prediction_dataloader.SentencePredictionDataConfig(
              is_training=False, drop_remainder=False)),
      trainer=_trainer())


@exp_factory.register_config_factory('bert/tagging')
def bert_tagging() -> cfg.ExperimentConfig:
  """Word-level tagging (set `task.class_names`)."""
  return cfg.ExperimentConfig(
      task=tagging.TaggingConfig(
          train_data=tagging_dataloader.TaggingDataConfig(),
          validation_data=tagging_dataloader.TaggingDataConfig(
              is_training=False, drop_remainder=False)),
      trainer=_trainer())


@exp_factory.register_config_factory('bert/squad')
def bert_squad() -> cfg.ExperimentConfig:
  """Extractive question answering on SQuAD v1.1 / v2.0 (`validation_data`: records or JSON)."""
  return cfg.ExperimentConfig(
      task=question_answering.QuestionAnsweringConfig(
          train_data=question_answering_dataloader.QADataConfig(),
          validation_data=question_answering_dataloader.QADataConfig(
              is_training=False, drop_remainder=False)),
      trainer=_trainer())
