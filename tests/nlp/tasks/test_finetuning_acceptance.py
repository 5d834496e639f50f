"""Acceptance: fine-tuning from a pretrained tiny encoder beats training from scratch.

A synthetic language has two topics of 8 words each (`a0..a7`, `b0..b7`). Pretraining text mixes
single-topic sentences and sentences of alternating topic runs, so masked-LM pretraining learns
which words share a topic. Fine-tuning trains on words 0-3 of each topic and evaluates on words
4-7 only: a model from scratch has never seen the eval words (chance level), a pretrained encoder
already groups them with their topic. Everything runs through the normal paths: our data tools
write the records, `train_lib.run_experiment` pretrains (`bert/pretraining`) and fine-tunes
(`bert/sentence_prediction`, `bert/tagging` from `configs/finetuning/*.yaml`), and fine-tuning
restores the encoder from the pretraining model_dir via `init_checkpoint`.
"""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import official.common.registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.nlp.data import create_finetuning_data
from official.nlp.data import create_pretraining_data
from tests.paths import ROOT

WORDS = 8
TOPIC_A = [f'a{i}' for i in range(WORDS)]
TOPIC_B = [f'b{i}' for i in range(WORDS)]
VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + TOPIC_A + TOPIC_B
SEQ = 16
ENCODER = {'vocab_size': len(VOCAB), 'hidden_size': 32, 'intermediate_size': 64, 'num_layers': 2,
           'num_attention_heads': 2, 'max_position_embeddings': SEQ, 'dropout_rate': 0.0,
           'attention_dropout_rate': 0.0}


def _runs_sentence(rng, words_a, words_b, num_runs=4):
  """Alternating topic runs of 1-3 words; topic-A words are `ENT` spans, topic-B words `O`."""
  topic, words, tags = int(rng.integers(2)), [], []
  for _ in range(num_runs):
    pool = words_a if topic == 0 else words_b
    for j in range(int(rng.integers(1, 4))):
      words.append(pool[int(rng.integers(len(pool)))])
      tags.append(('B-ENT' if j == 0 else 'I-ENT') if topic == 0 else 'O')
    topic = 1 - topic
  return words, tags


def _optimization(steps, learning_rate):
  return {'learning_rate': {'polynomial': {'initial_learning_rate': learning_rate,
                                           'decay_steps': steps}},
          'warmup': {'polynomial': {'warmup_steps': max(1, steps // 10)}}}


def _run(experiment, config_files, override, model_dir):
  params = train_utils.build_params(experiment, config_files, None)
  params.override(override)
  params.validate()
  tf_keras.utils.set_random_seed(0)
  task = task_factory.get_task(params.task, logging_dir=model_dir)
  _, logs = train_lib.run_experiment(tf.distribute.get_strategy(), task, 'train_and_eval', params,
                                     model_dir, save_summary=False, run_post_eval=True)
  return logs


@pytest.fixture(scope='module')
def pretrained(tmp_path_factory):
  """(work dir, pretraining model_dir) after 300 masked-LM steps on the synthetic corpus."""
  tmp = tmp_path_factory.mktemp('finetuning')
  (tmp / 'vocab.txt').write_text('\n'.join(VOCAB) + '\n')
  rng = np.random.default_rng(0)
  documents = []
  for _ in range(150):
    sentences = []
    for _ in range(4):
      if rng.random() < 0.5:
        pool = TOPIC_A if rng.random() < 0.5 else TOPIC_B
        sentences.append(' '.join(pool[int(rng.integers(WORDS))]
                                  for _ in range(int(rng.integers(5, 9)))))
      else:
        sentences.append(' '.join(_runs_sentence(rng, TOPIC_A, TOPIC_B)[0]))
    documents.append('\n'.join(sentences))
  (tmp / 'corpus.txt').write_text('\n\n'.join(documents) + '\n')
  create_pretraining_data.create_pretraining_data(
      str(tmp / 'corpus.txt'), str(tmp / 'pre.tfrecord'), str(tmp / 'vocab.txt'),
      max_seq_length=SEQ, max_predictions_per_seq=4, dupe_factor=3, masked_lm_prob=0.2,
      num_workers=1, no_next_sentence=True)
  data = {'input_path': str(tmp / 'pre.tfrecord'), 'seq_length': SEQ,
          'max_predictions_per_seq': 4, 'global_batch_size': 64, 'use_next_sentence_label': False}
  steps = 300
  logs = _run('bert/pretraining', [], {
      'task': {'model': {'encoder': {'bert': ENCODER}, 'cls_heads': []},
               'train_data': data, 'validation_data': dict(data, is_training=False)},
      'trainer': {'train_steps': steps, 'steps_per_loop': steps, 'validation_interval': steps,
                  'validation_steps': 2, 'checkpoint_interval': steps,
                  'summary_interval': steps, 'optimizer_config': _optimization(steps, 5e-3)},
      'runtime': {'distribution_strategy': 'one_device', 'enable_xla': False}}, str(tmp / 'pre'))
  # Well below guessing among all 16 words (16); 8 would be the right topic known exactly.
  # Measured 9.2 (seed 0) and 10.3 (another data/init seed).
  assert logs['masked_lm_perplexity'] < 13, logs
  return tmp, str(tmp / 'pre')


def _finetune_both_ways(tmp, experiment, yaml_name, task_override, pretrained_dir, name):
  steps = 100
  results = {}
  for init in ('', pretrained_dir):
    override = {
        'task': dict(task_override, init_checkpoint=init),
        'trainer': {'train_steps': steps, 'steps_per_loop': steps, 'validation_interval': steps,
                    'summary_interval': steps, 'checkpoint_interval': steps,
                    'optimizer_config': _optimization(steps, 1e-3)},
        'runtime': {'distribution_strategy': 'one_device'}}
    model_dir = str(tmp / f'{name}_{"pretrained" if init else "scratch"}')
    results['pretrained' if init else 'scratch'] = _run(
        experiment, [os.path.join(ROOT, 'configs', 'finetuning', yaml_name)], override, model_dir)
    assert os.path.exists(os.path.join(model_dir, 'params.yaml'))
  return results['scratch'], results['pretrained']


@pytest.mark.slow
def test_sentence_prediction_learns_better_from_pretrained_encoder(pretrained):
  tmp, pretrained_dir = pretrained
  for split, words, seed in (('train', slice(0, WORDS // 2), 1),
                             ('eval', slice(WORDS // 2, None), 2)):
    rng = np.random.default_rng(seed)
    lines = ['text\tlabel']
    for _ in range(200):
      label = int(rng.integers(2))
      pool = (TOPIC_A if label == 0 else TOPIC_B)[words]
      text = ' '.join(pool[int(rng.integers(len(pool)))] for _ in range(int(rng.integers(4, 8))))
      lines.append(f'{text}\t{"xy"[label]}')
    (tmp / f'cls_{split}.tsv').write_text('\n'.join(lines) + '\n')
    create_finetuning_data.create_finetuning_data(
        'sentence_prediction', str(tmp / f'cls_{split}.tsv'), str(tmp / f'cls_{split}.tfrecord'),
        str(tmp / 'vocab.txt'), max_seq_length=SEQ, label_list=['x', 'y'])
  scratch, warm = _finetune_both_ways(tmp, 'bert/sentence_prediction',
                                      'sentence_prediction_tiny.yaml', {
      'model': {'num_classes': 2, 'encoder': {'bert': ENCODER}},
      'train_data': {'input_path': str(tmp / 'cls_train.tfrecord'), 'seq_length': SEQ},
      'validation_data': {'input_path': str(tmp / 'cls_eval.tfrecord'), 'seq_length': SEQ}},
      pretrained_dir, 'cls')
  # Measured: scratch 0.43 (0.11 with another seed; unseen words), pretrained 1.0 (both seeds).
  assert warm['accuracy'] >= scratch['accuracy'] + 0.3, (scratch, warm)
  assert warm['accuracy'] >= 0.8, warm
  assert warm['validation_loss'] < scratch['validation_loss'], (scratch, warm)
  assert warm['cls_accuracy'] == pytest.approx(warm['accuracy'])


@pytest.mark.slow
def test_tagging_learns_better_from_pretrained_encoder(pretrained):
  tmp, pretrained_dir = pretrained
  for split, words, seed in (('train', slice(0, WORDS // 2), 3),
                             ('eval', slice(WORDS // 2, None), 4)):
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(200):
      words_, tags = _runs_sentence(rng, TOPIC_A[words], TOPIC_B[words])
      blocks.append(''.join(f'{w} X {t}\n' for w, t in zip(words_, tags)))
    (tmp / f'tag_{split}.conll').write_text('\n'.join(blocks))
    create_finetuning_data.create_finetuning_data(
        'tagging', str(tmp / f'tag_{split}.conll'), str(tmp / f'tag_{split}.tfrecord'),
        str(tmp / 'vocab.txt'), max_seq_length=SEQ, label_list=['O', 'B-ENT', 'I-ENT'])
  scratch, warm = _finetune_both_ways(tmp, 'bert/tagging', 'tagging_tiny.yaml', {
      'class_names': ['O', 'B-ENT', 'I-ENT'], 'model': {'encoder': {'bert': ENCODER}},
      'train_data': {'input_path': str(tmp / 'tag_train.tfrecord'), 'seq_length': SEQ},
      'validation_data': {'input_path': str(tmp / 'tag_eval.tfrecord'), 'seq_length': SEQ}},
      pretrained_dir, 'tag')
  # Measured: span F1 scratch 0.0, pretrained 0.56 (0.76 with another seed).
  assert warm['f1'] >= scratch['f1'] + 0.25, (scratch, warm)
  assert warm['accuracy'] > scratch['accuracy'] + 0.15, (scratch, warm)
