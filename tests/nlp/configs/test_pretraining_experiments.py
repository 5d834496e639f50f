"""Tests for official/nlp/configs (encoders, bert, pretraining_experiments) and
configs/pretraining."""

import glob
import os
import textwrap

import numpy as np
import pytest

from official.common import registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import exp_factory
from official.modeling import hyperparams
from official.nlp.configs import bert
from official.nlp.configs import encoders
from tests.paths import ROOT


# The layout of a Model Garden BERT pretraining config (as in its YAML files and params.yaml dumps).
MODEL_GARDEN_YAML = textwrap.dedent("""\
    runtime:
      distribution_strategy: mirrored
      mixed_precision_dtype: bfloat16
      enable_xla: true
      all_reduce_alg: null
      num_gpus: 0
      tpu: null
      loss_scale: null
      run_eagerly: false
      batchnorm_spatial_persistent: false
      gpu_thread_mode: null
      per_gpu_thread_count: 0
    task:
      init_checkpoint: ''
      model:
        cls_heads:
        - activation: tanh
          cls_token_idx: 0
          dropout_rate: 0.1
          inner_dim: 768
          name: next_sentence
          num_classes: 2
        encoder:
          type: bert
          bert:
            attention_dropout_rate: 0.1
            dropout_rate: 0.1
            embedding_size: null
            hidden_activation: gelu
            hidden_size: 768
            initializer_range: 0.02
            intermediate_size: 3072
            max_position_embeddings: 512
            num_attention_heads: 12
            num_layers: 12
            type_vocab_size: 2
            vocab_size: 30522
            output_range: null
            return_all_encoder_outputs: false
            norm_first: false
        mlm_activation: gelu
        mlm_initializer_range: 0.02
      scale_loss: false
      train_data:
        drop_remainder: true
        global_batch_size: 512
        input_path: gs://bucket/train*,gs://bucket/more*
        is_training: true
        max_predictions_per_seq: 76
        seq_length: 512
        use_next_sentence_label: true
        use_position_id: false
        use_v2_feature_names: false
        shuffle_buffer_size: 100
        cycle_length: null
        block_length: 1
        deterministic: null
        sharding: true
        cache: false
        tfds_name: ''
        tfds_split: ''
        tfds_data_dir: ''
        tfds_as_supervised: false
        tfds_skip_decoding_feature: ''
        enable_tf_data_service: false
        tf_data_service_address: null
        tf_data_service_job_name: null
        seed: null
        prefetch_buffer_size: null
        file_type: tfrecord
      validation_data:
        drop_remainder: true
        global_batch_size: 512
        input_path: gs://bucket/eval*
        is_training: false
        max_predictions_per_seq: 76
        seq_length: 512
        use_next_sentence_label: true
    trainer:
      checkpoint_interval: 20000
      max_to_keep: 5
      optimizer_config:
        learning_rate:
          polynomial:
            cycle: false
            decay_steps: 1000000
            end_learning_rate: 0.0
            initial_learning_rate: 0.0001
            power: 1.0
          type: polynomial
        optimizer:
          type: adamw
          adamw:
            beta_1: 0.9
            beta_2: 0.999
            epsilon: 1.0e-06
            exclude_from_weight_decay: [LayerNorm, layer_norm, bias]
            weight_decay_rate: 0.01
        warmup:
          polynomial:
            power: 1
            warmup_steps: 10000
          type: polynomial
      steps_per_loop: 1000
      summary_interval: 1000
      train_steps: 1000000
      validation_interval: 1000
      validation_steps: 64
      best_checkpoint_export_subdir: ''
      best_checkpoint_eval_metric: ''
      best_checkpoint_metric_comp: higher
      continuous_eval_timeout: 3600
      eval_tf_function: true
      eval_tf_while_loop: false
      loss_upper_bound: 1000000.0
      recovery_begin_steps: 0
      recovery_max_trials: 0
      train_tf_function: true
      train_tf_while_loop: true
      validation_summary_subdir: validation
    """)


def test_model_garden_yaml_loads_unchanged(tmp_path):
  path = tmp_path / 'mg.yaml'
  path.write_text(MODEL_GARDEN_YAML)
  params = exp_factory.get_exp_config('bert/pretraining')
  params.override(hyperparams.read_yaml(str(path)), is_strict=True)
  params.validate()
  assert params.task.model.encoder.get().num_layers == 12
  assert params.task.model.cls_heads[0].name == 'next_sentence'
  assert params.task.train_data.input_path == 'gs://bucket/train*,gs://bucket/more*'
  assert params.trainer.optimizer_config.optimizer.get().epsilon == pytest.approx(1e-6)
  assert params.runtime.mixed_precision_dtype == 'bfloat16'


def test_bert_pretraining_defaults_match_model_garden():
  params = exp_factory.get_exp_config('bert/pretraining')
  assert params.runtime.enable_xla is True
  assert params.trainer.train_steps == 1_000_000
  optimizer = params.trainer.optimizer_config
  assert optimizer.optimizer.type == 'adamw'
  assert optimizer.optimizer.adamw.weight_decay_rate == 0.01
  assert optimizer.optimizer.adamw.exclude_from_weight_decay == ['LayerNorm', 'layer_norm', 'bias']
  assert optimizer.learning_rate.polynomial.initial_learning_rate == pytest.approx(1e-4)
  assert optimizer.learning_rate.polynomial.end_learning_rate == 0.0
  assert params.task.model.cls_heads[0].name == 'next_sentence'
  assert params.task.model.cls_heads[0].inner_dim == 768
  assert params.task.train_data.seq_length == 512
  assert params.task.train_data.max_predictions_per_seq == 76
  assert params.task.validation_data.is_training is False
  # A fresh config each call.
  params.trainer.train_steps = 5
  assert exp_factory.get_exp_config('bert/pretraining').trainer.train_steps == 1_000_000


@pytest.mark.parametrize(
    'path', sorted(glob.glob(os.path.join(ROOT, 'configs/pretraining/*.yaml'))))
def test_shipped_pretraining_yaml_files_validate(path):
  params = exp_factory.get_exp_config('bert/pretraining')
  params.override(hyperparams.read_yaml(path), is_strict=True)
  params.validate()
  encoder_config = params.task.model.encoder.get()
  if params.task.model.encoder.type != 'modernbert':  # ModernBERT's GeGLU: test_modernbert_sizes
    assert encoder_config.intermediate_size == 4 * encoder_config.hidden_size
  assert params.task.train_data.seq_length <= encoder_config.max_position_embeddings


def test_shipped_sizes():
  expected = {'tiny': (2, 128), 'mini': (4, 256), 'small': (4, 512), 'medium': (8, 512),
              'base': (12, 768), 'large': (24, 1024)}
  for name, (layers, hidden) in expected.items():
    data = hyperparams.read_yaml(os.path.join(ROOT, f'configs/pretraining/bert_{name}.yaml'))
    bert_config = data['task']['model']['encoder']['bert']
    assert (bert_config['num_layers'], bert_config['hidden_size']) == (layers, hidden), name


# ModernBERT sizes: (layers, hidden, heads, intermediate, vocab, seq_length). Mini is BERT-Mini's
# width and depth; base and large are Hugging Face's answerdotai/ModernBERT-{base,large}.
MODERNBERT_SIZES = {'tiny': (3, 128, 2, 352, 30522, 128), 'mini': (4, 256, 4, 672, 30522, 128),
                    'base': (22, 768, 12, 1152, 50368, 1024),
                    'large': (28, 1024, 16, 2624, 50368, 1024)}


def _modernbert_params(name):
  params = exp_factory.get_exp_config('bert/pretraining')
  path = os.path.join(ROOT, f'configs/pretraining/modernbert_{name}.yaml')
  params.override(hyperparams.read_yaml(path), is_strict=True)
  params.validate()
  return params


def test_modernbert_yaml_files_are_the_shipped_sizes():
  shipped = sorted(os.path.basename(p) for p in
                   glob.glob(os.path.join(ROOT, 'configs/pretraining/modernbert_*.yaml')))
  assert shipped == sorted(f'modernbert_{name}.yaml' for name in MODERNBERT_SIZES)


@pytest.mark.parametrize('name', sorted(MODERNBERT_SIZES))
def test_modernbert_sizes_and_recipe(name):
  params = _modernbert_params(name)
  task = params.task
  assert task.model.encoder.type == 'modernbert'
  encoder = task.model.encoder.get()
  layers, hidden, heads, intermediate, vocab, seq_length = MODERNBERT_SIZES[name]
  assert (encoder.num_layers, encoder.hidden_size, encoder.num_attention_heads,
          encoder.intermediate_size, encoder.vocab_size) == (layers, hidden, heads, intermediate,
                                                             vocab)
  # ModernBERT's architecture constants (Hugging Face's ModernBertConfig defaults).
  assert (encoder.hidden_activation, encoder.norm_eps, encoder.global_rope_theta,
          encoder.local_rope_theta, encoder.local_attention, encoder.global_attn_every_n_layers,
          encoder.max_position_embeddings) == ('exact_gelu', 1e-5, 160000.0, 10000.0, 128, 3, 8192)
  assert (encoder.dropout_rate, encoder.attention_dropout_rate) == (0.0, 0.0)
  # No next-sentence prediction; packed rows with 30% of the tokens masked.
  assert task.model.cls_heads == []
  for data in (task.train_data, task.validation_data):
    assert not data.use_next_sentence_label and data.use_position_id
    assert data.seq_length == seq_length
    assert data.max_predictions_per_seq == round(0.3 * seq_length)
  # AdamW with warmup, then a decay to 0 at the last step; no decay of norms and biases.
  optimizer = params.trainer.optimizer_config
  assert optimizer.optimizer.type == 'adamw'
  assert optimizer.optimizer.adamw.weight_decay_rate > 0
  assert {'LayerNorm', 'layer_norm', 'bias'} <= set(
      optimizer.optimizer.adamw.exclude_from_weight_decay)
  assert optimizer.warmup.type == 'polynomial' and optimizer.warmup.polynomial.warmup_steps > 0
  assert optimizer.learning_rate.type == 'polynomial'
  decay = optimizer.learning_rate.polynomial
  assert decay.decay_steps == params.trainer.train_steps and decay.end_learning_rate == 0.0
  with open(os.path.join(ROOT, f'configs/pretraining/modernbert_{name}.yaml'),
            encoding='utf-8') as f:
    assert '--pack --masked_lm_prob=0.3' in f.read()  # how the records must be made


def test_modernbert_weight_decay_is_modernberts_per_step_decay_at_the_peak_rate():
  # ModernBERT: 1e-5 a step at the peak rate; ours decays by lr * weight_decay_rate.
  for name in ('base', 'large'):
    adamw = _modernbert_params(name).trainer.optimizer_config
    peak = adamw.learning_rate.polynomial.initial_learning_rate
    assert peak * adamw.optimizer.adamw.weight_decay_rate == pytest.approx(1e-5)
  base = _modernbert_params('base').trainer.optimizer_config
  large = _modernbert_params('large').trainer.optimizer_config
  assert (base.learning_rate.polynomial.initial_learning_rate,
          large.learning_rate.polynomial.initial_learning_rate) == (8e-4, 5e-4)


def _feed_forward_size(encoder_config):
  """Weights of the feed-forward layer of one block of the built encoder (kernels and biases)."""
  encoder = encoders.build_encoder(encoder_config.replace(vocab_size=8))
  block = encoder.transformer_layers[0]
  # pylint: disable=protected-access
  return sum(int(np.prod(w.shape))
             for w in block._intermediate_dense.weights + block._output_dense.weights)


@pytest.mark.slow
@pytest.mark.parametrize('name', ['tiny', 'mini'])
def test_modernbert_feed_forward_is_about_berts_in_parameters(name):
  # GeGLU has three matrices (its input dense is twice as wide), BERT's GELU two: 2/3 of BERT's
  # width, rounded to the nearest multiple of 32, gives about the same parameters.
  modern = _modernbert_params(name).task.model.encoder
  bert_params = exp_factory.get_exp_config('bert/pretraining')
  bert_params.override(hyperparams.read_yaml(
      os.path.join(ROOT, f'configs/pretraining/bert_{name}.yaml')), is_strict=True)
  bert_config = bert_params.task.model.encoder.bert
  modern_config = modern.modernbert
  assert (modern_config.hidden_size, modern_config.num_attention_heads) == (
      bert_config.hidden_size, bert_config.num_attention_heads)
  assert modern_config.intermediate_size % 32 == 0
  assert abs(modern_config.intermediate_size - 2 * bert_config.intermediate_size / 3) <= 16
  modern_size = _feed_forward_size(modern_config)
  bert_size = _feed_forward_size(bert_config)
  assert modern_size == 3 * modern_config.hidden_size * modern_config.intermediate_size
  assert abs(modern_size / bert_size - 1) < 0.035, (modern_size, bert_size)
  if name == 'mini':  # BERT-Mini's depth too; 672 (-1.8%) rather than 704 (+2.9%)
    assert modern_config.num_layers == bert_config.num_layers == 4
    assert (modern_size, bert_size) == (516_096, 525_568)


def test_encoder_config_errors():
  with pytest.raises(hyperparams.ConfigError, match=r"^type: 'mobilebert' is a Model Garden "
                     r"encoder type that mlm-garden does not implement"):
    encoders.EncoderConfig.from_dict({'type': 'mobilebert'})
  # Heads need not divide the hidden size (as in Model Garden), but cannot outnumber it.
  encoders.EncoderConfig.from_dict(
      {'bert': {'hidden_size': 30, 'num_attention_heads': 4}}).validate()
  config = encoders.EncoderConfig.from_dict(
      {'bert': {'hidden_size': 30, 'num_attention_heads': 40}})
  with pytest.raises(hyperparams.ConfigError, match=r'^bert.num_attention_heads: must be at most '
                     r'hidden_size 30, found 40'):
    config.validate()
  config = encoders.EncoderConfig.from_dict({'bert': {'hidden_activation': 'nope'}})
  with pytest.raises(hyperparams.ConfigError, match=r'^bert.hidden_activation'):
    config.validate()
  with pytest.raises(hyperparams.ConfigError, match=r'^bert.dropout_rate: must be < 1.0'):
    encoders.EncoderConfig.from_dict({'bert': {'dropout_rate': 1.5}})


def test_pretrainer_config_rejects_duplicate_or_unnamed_heads():
  config = bert.PretrainerConfig.from_dict({'cls_heads': [{'name': 'a'}, {'name': 'a'}]})
  with pytest.raises(hyperparams.ConfigError, match=r"^cls_heads\[1\].name: duplicate head name"):
    config.validate()
  config = bert.PretrainerConfig.from_dict({'cls_heads': [{'num_classes': 3}]})
  with pytest.raises(hyperparams.ConfigError, match=r'^cls_heads\[0\].name: every classification'):
    config.validate()
