"""Tests of scripts/compare_recipes.py: the document split, the word-swap task, the run configs
(both recipes load through the experiment registry) and the report table."""

import collections
import importlib.util
import os

import yaml

from official.nlp import api
from tests.paths import ROOT

_spec = importlib.util.spec_from_file_location(
    'compare_recipes', os.path.join(ROOT, 'scripts', 'compare_recipes.py'))
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)


def test_word_swap_examples_swap_two_distinct_words_in_about_half():
  text = '\n'.join(f'word{i} alpha beta gamma delta epsilon zeta{i}' for i in range(400))
  text += '\ntoo short line\n' + ' '.join(['long'] * 41)
  examples = compare.word_swap_examples(text, seed=3)
  assert len(examples) == 400  # the short and the long line are left out
  assert examples == compare.word_swap_examples(text, seed=3)  # deterministic for a seed
  swapped = 0
  for (sentence, label), line in zip(examples, text.splitlines()):
    original, words = line.split(), sentence.split()
    assert collections.Counter(words) == collections.Counter(original)
    differ = [i for i, (a, b) in enumerate(zip(words, original)) if a != b]
    if label:
      swapped += 1
      assert len(differ) == 2 and words[differ[0]] == original[differ[1]]
    else:
      assert not differ
  assert 160 <= swapped <= 240


def test_replaced_word_examples_keep_word_frequencies_and_change_a_fifth():
  lines = [' '.join(f'w{(i * 7 + j) % 50}' for j in range(10)) for i in range(300)]
  text = '\n'.join(lines) + '\nshort line'
  examples = compare.replaced_word_examples(text, seed=5)
  assert len(examples) == 300
  assert examples == compare.replaced_word_examples(text, seed=5)
  vocabulary = set(text.split())  # replacements come from the whole text's words
  changed = 0
  for (sentence, label), line in zip(examples, lines):
    words, original = sentence.split(), line.split()
    differ = sum(a != b for a, b in zip(words, original))
    assert len(words) == len(original) and set(words) <= vocabulary
    assert differ == (2 if label else 0)  # 20% of 10 words, never a word by itself
    changed += label
  assert 120 <= changed <= 180
  assert set(compare.TASKS) == {'replaced', 'swap'}


def test_split_documents_keeps_every_document_once(tmp_path):
  documents = [f'document {i} first line.\ndocument {i} second line.' for i in range(45)]
  corpus = tmp_path / 'corpus.txt'
  corpus.write_text('\n\n'.join(documents) + '\n')
  paths = compare.split_documents(str(corpus), str(tmp_path))
  read = {name: [d for d in open(path).read().split('\n\n') if d.strip()]
          for name, path in paths.items()}
  assert [len(read[n]) for n in ('train', 'held_out', 'finetune')] == [36, 3, 6]
  assert sorted(d.strip() for docs in read.values() for d in docs) == sorted(documents)
  assert read['held_out'][0].startswith('document 0 ') and read['finetune'][0].startswith(
      'document 1 ')


def test_run_configs_load_for_both_recipes(tmp_path):
  vocab = tmp_path / 'vocab.txt'
  vocab.write_text('\n'.join(f't{i}' for i in range(321)) + '\n')
  data = {'vocab': str(vocab), 'records': {'bert': 'b.tfrecord', 'modern': 'm.tfrecord',
                                           'held_out': 'h.tfrecord'}}
  for recipe in compare.RECIPES:
    overrides = compare.pretraining_overrides(recipe, data, steps=1003, evals=10)
    path = compare._yaml(overrides, str(tmp_path / f'{recipe.name}.yaml'))
    params = api.load_config([os.path.join(ROOT, recipe.config), path])
    assert params.task.model.encoder.get().vocab_size == 321
    assert params.trainer.train_steps == 1000  # a multiple of the evaluation interval
    assert params.trainer.validation_interval == 100
    assert params.task.validation_data.max_predictions_per_seq == 20
    assert params.task.train_data.max_predictions_per_seq == recipe.max_predictions
  assert [r.name for r in compare.RECIPES] == ['bert', 'modern']
  modern = yaml.safe_load(open(tmp_path / 'modern.yaml'))
  assert modern['task']['train_data']['use_position_id'] is True
  assert modern['task']['model']['encoder']['type'] == 'modernbert'


def test_markdown_table_has_every_row():
  recipe = dict(minutes=20.1, steps=1200, steps_per_second=1.0, tokens_per_second=4096.0,
                real_tokens_per_second=3000.0, padding_fraction=0.25, held_out_mlm_loss=4.5,
                held_out_mlm_accuracy=0.31)
  results = {'pretraining': {'bert': recipe, 'modern': dict(recipe, padding_fraction=0.01)},
             'finetuning': {'replaced': {'bert_pretrained': {'accuracy': 0.7},
                                         'modern_random': {}}}}
  table = compare.markdown_table(results).splitlines()
  assert table[0] == '| | BERT recipe | modern recipe |'
  assert '| padding fraction of the training rows | 0.250 | 0.010 |' in table
  assert '| replaced accuracy, fine-tuned from pretrained | 0.700 | n/a |' in table
  assert '| replaced accuracy, fine-tuned from random | n/a | n/a |' in table
