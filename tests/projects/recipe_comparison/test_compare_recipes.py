"""Tests of the recipe comparison (official/projects/recipe_comparison/): the cells and their run
configs, the planning (what a rerun skips), the data helpers, the scheduler, the results and
tables, the downstream call (mocked). No network, no training."""

import dataclasses
import json
import math
import os
import shutil
import sys
import types

import pytest
import yaml

from official.nlp import api
from official.nlp.data import downstream_data
from official.nlp.tools import significance
from official.nlp.tools.downstream_eval import FinetuneSettings
from official.projects.recipe_comparison import compare_recipes as compare
from official.projects.recipe_comparison import corpus_data
from official.projects.recipe_comparison import grid
from official.projects.recipe_comparison import report
from official.projects.recipe_comparison import run_configs
from official.projects.recipe_comparison import run_results
from official.projects.recipe_comparison import scheduler
from official.projects.recipe_comparison import sweep
from official.projects.recipe_comparison import workdir
from tests.paths import ROOT


def test_cells_and_learning_rates_parse_in_table_order():
  assert [cell.name for cell in grid.ALL_CELLS[4:]] == ['rotary-bert']  # outside the 2x2
  assert [cell.name for cell in grid.CELLS] == ['bert-bert', 'bert-modern', 'modern-bert',
                                                 'modern-modern']
  assert [c.name for c in grid.parse_cells('modern-modern, rotary-bert, bert-bert')] == [
      'bert-bert', 'modern-modern', 'rotary-bert']
  assert grid.parse_cells('all') == list(grid.CELLS)
  assert grid.CELLS[1].label == 'BERT arch x modern data'
  with pytest.raises(ValueError, match=r"--cells: expected names of .*found 'bert'"):
    grid.parse_cells('bert')
  assert grid.parse_learning_rates('3e-3,3e-4,1e-3') == [3e-4, 1e-3, 3e-3]
  for bad in ('', 'fast', '0', '2'):
    with pytest.raises(ValueError, match='--learning_rates: expected'):
      grid.parse_learning_rates(bad)
  run = grid.Run(grid.CELLS[1], 3e-4)
  assert run.name == 'bert-modern_lr0.0003'
  assert run.directory('/w') == '/w/runs/bert-modern/lr0.0003'


def test_plan_runs_skips_finished_runs_and_only_evaluates_trained_ones(tmp_path):
  work = str(tmp_path)
  cells = grid.parse_cells('bert-bert,modern-modern')
  rates = [1e-3, 3e-3]
  first = run_configs.plan_runs(work, cells, rates)
  assert [(p.run.name, p.stages) for p in first] == [
      ('bert-bert_lr0.001', ('train', 'evaluate')), ('bert-bert_lr0.003', ('train', 'evaluate')),
      ('modern-modern_lr0.001', ('train', 'evaluate')),
      ('modern-modern_lr0.003', ('train', 'evaluate'))]
  finished, trained, cut_off = (p.run.directory(work) for p in first[:3])
  for directory in (finished, trained, cut_off):
    os.makedirs(directory)
  workdir.write_json(os.path.join(finished, 'result.json'), {})
  workdir.write_json(os.path.join(trained, 'train.json'), {})
  open(os.path.join(cut_off, 'train.log'), 'w').close()  # training was cut off: start over
  assert [p.stages for p in run_configs.plan_runs(work, cells, rates)] == [
      (), ('evaluate',), ('train', 'evaluate'), ('train', 'evaluate')]


def test_make_once_builds_through_a_partial_and_skips_what_exists(tmp_path):
  target = str(tmp_path / 'data' / 'records')
  calls = []

  def build(out):
    calls.append(out)
    os.makedirs(out)
    open(os.path.join(out, 'a.tfrecord'), 'w').close()

  os.makedirs(target + '.partial')  # a leftover of an interrupted build
  open(os.path.join(target + '.partial', 'stale'), 'w').close()
  assert workdir.make_once(target, build) == target
  assert calls == [target + '.partial'] and os.listdir(target) == ['a.tfrecord']
  assert not os.path.exists(target + '.partial')
  workdir.make_once(target, build)
  assert len(calls) == 1

  def fail(out):
    open(out, 'w').close()
    raise RuntimeError('interrupted')

  with pytest.raises(RuntimeError):
    workdir.make_once(str(tmp_path / 'vocab'), fail)
  assert not os.path.exists(tmp_path / 'vocab')


def test_check_settings_refuses_a_rerun_with_another_budget(tmp_path):
  settings = dict(budget_minutes=30.0, batch_size=32, evals=6)
  assert workdir.check_settings(str(tmp_path), settings) == settings
  assert workdir.check_settings(str(tmp_path), settings) == settings
  with pytest.raises(ValueError, match=r'--minutes=60.0 but .* was made with 30.0'):
    workdir.check_settings(str(tmp_path), dict(settings, budget_minutes=60.0))
  newer = dict(settings, mixed_precision='float32')  # a setting the work dir predates
  assert workdir.check_settings(str(tmp_path), newer) == newer
  assert workdir.read_json(str(tmp_path / 'settings.json')) == newer
  workdir.check_settings(str(tmp_path), dict(newer, train_steps=0))
  with pytest.raises(ValueError, match=r'--steps=1500 but .* was made with 0'):
    workdir.check_settings(str(tmp_path), dict(newer, train_steps=1500))


def test_fixed_settings_resolve_the_precision(monkeypatch, tmp_path):
  monkeypatch.delenv('MLM_CPU_FLAGS', raising=False)  # the file's flags, not an emulated CPU's
  cpuinfo = tmp_path / 'cpuinfo'
  default_precision = run_configs.cpu_info.default_precision
  monkeypatch.setattr(run_configs.cpu_info, 'default_precision',
                      lambda: default_precision(str(cpuinfo)))
  cpuinfo.write_text('flags : fpu avx2 avx512_bf16\n')
  assert sweep.SweepConfig('/w').fixed_settings()['mixed_precision'] == 'bfloat16'
  cpuinfo.write_text('flags : fpu avx2\n')
  assert sweep.SweepConfig('/w').fixed_settings()['mixed_precision'] == 'float32'
  assert sweep.SweepConfig('/w', mixed_precision='bfloat16').resolved_dtype() == 'bfloat16'


def test_budget_plan_reads_the_planned_step_of_the_checkpoint(tmp_path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from official.core import time_budget  # pylint: disable=g-import-not-at-top
  state = time_budget.BudgetState(60.0, reference_steps=600)
  state.replan(step=10, end_step=1234)
  tf.train.Checkpoint(time_budget=state).save(str(tmp_path / 'ckpt'))
  assert run_results.budget_plan(str(tmp_path)) == 1234


def test_ood_corpus_from_slash_tagged_sentences(tmp_path):
  tagged = tmp_path / grid.OOD_FILE
  lines = [f'Sentence/NN {i}/CD is/VBZ here/RB ./.' for i in range(45)]
  tagged.write_text('\n'.join(lines) + '\n')
  sentences = [words for words, _ in downstream_data.read_slash_tagged(str(tagged))]
  text = corpus_data.ood_corpus_text(sentences)
  documents = text.strip('\n').split('\n\n')
  assert [len(d.splitlines()) for d in documents] == [20, 20, 5]
  assert documents[0].splitlines()[3] == 'Sentence 3 is here .'
  with pytest.raises(ValueError, match='lines_per_document'):
    corpus_data.ood_corpus_text(sentences, 0)


def test_split_documents_holds_out_one_document_in_twenty(tmp_path):
  documents = [f'document {i} first line.\ndocument {i} second line.' for i in range(45)]
  corpus = tmp_path / 'corpus.txt'
  corpus.write_text('\n\n'.join(documents) + '\n')
  counts = corpus_data.split_documents(str(corpus), str(tmp_path / 't.txt'),
                                       str(tmp_path / 'h.txt'))
  assert counts == {'train': 42, 'held_out': 3}
  held = (tmp_path / 'h.txt').read_text().strip().split('\n\n')
  train = (tmp_path / 't.txt').read_text().strip().split('\n\n')
  assert held[1].startswith('document 20 ') and sorted(held + train) == sorted(documents)


@pytest.mark.parametrize('cell', grid.ALL_CELLS, ids=lambda cell: cell.name)
def test_run_configs_load_for_every_cell(tmp_path, data, cell, ablation_family):
  del ablation_family  # the rotary cell's encoder type
  overrides = run_configs.run_overrides(cell, data, steps=1003, evals=10, learning_rate=3e-3,
                                  batch_size=32, dtype='bfloat16', budget_minutes=30)
  path = str(tmp_path / f'{cell.name}.yaml')
  with open(path, 'w') as f:
    yaml.safe_dump(overrides, f)
  params = api.load_config([os.path.join(ROOT, grid.ARCHITECTURES[cell.arch]), path])
  encoder = params.task.model.encoder
  assert encoder.type == {'bert': 'bert', 'modern': 'modernbert', 'rotary': 'ablation'}[cell.arch]
  assert encoder.get().vocab_size == 321
  train, held_out = params.task.train_data, params.task.validation_data
  packed = cell.data == 'modern'
  assert train.input_path == data['records'][cell.data]
  assert (train.max_predictions_per_seq, train.use_position_id) == (
      (38, True) if packed else (20, False))
  # only BERT's family on NSP pairs keeps the next-sentence head
  nsp = cell.name in ('bert-bert', 'rotary-bert')
  assert train.use_next_sentence_label == nsp
  assert [head.name for head in params.task.model.cls_heads] == (['next_sentence'] if nsp else [])
  if cell.arch == 'bert':
    assert encoder.bert.packed_documents == packed
  if cell.arch == 'rotary':  # BERT's fields, rotary positions instead of the table
    with open(os.path.join(ROOT, grid.ARCHITECTURES['bert'])) as f:
      bert = yaml.safe_load(f)['task']['model']['encoder']['bert']
    fields = encoder.ablation.as_dict()
    assert fields['positions'] == 'rotary'
    assert {key: fields[key] for key in bert} == dict(bert, vocab_size=321)
  assert (held_out.input_path, held_out.max_predictions_per_seq, held_out.use_position_id,
          held_out.use_next_sentence_label, held_out.drop_remainder) == (
              'h.tfrecord', 20, False, False, False)
  assert params.runtime.mixed_precision_dtype == 'bfloat16'
  trainer = params.trainer
  assert (trainer.train_steps, trainer.validation_interval, trainer.checkpoint_interval) == (
      1000, 100, 100)
  # The budget ends the run; its loops are sized by the budget, not by steps_per_loop.
  assert (trainer.time_budget_minutes, trainer.steps_per_loop) == (30, 1000)
  schedule = trainer.optimizer_config.learning_rate.polynomial
  assert (schedule.initial_learning_rate, schedule.decay_steps, schedule.end_learning_rate) == (
      3e-3, 1000, 0.0)
  assert trainer.optimizer_config.warmup.polynomial.warmup_steps == 100


def test_packed_bert_cell_builds_a_packed_encoder(tmp_path, data):
  overrides = run_configs.run_overrides(grid.CELLS[1], data, 60, 6, 1e-3, 32)
  with open(os.path.join(ROOT, grid.ARCHITECTURES['bert'])) as f:
    base = yaml.safe_load(f)
  assert overrides['task']['model']['encoder']['bert'] == dict(
      base['task']['model']['encoder']['bert'], vocab_size=321, packed_documents=True)


def _result(cell, rate, loss, ood=6.0, steps=600):
  stats = dict(rows=1000, padding_fraction=0.25 if cell.data == 'bert' else 0.001,
               masked_per_row=19.0 if cell.data == 'bert' else 38.0)
  train = dict(planned_steps=612, seconds=1812.0, stopped=True, started=100.0)
  evaluation = {name: dict(lm_example_loss=value, masked_lm_accuracy=0.3, masked_targets=500,
                           records=40, step=steps, checkpoint='ckpt')
                for name, value in (('in_domain', loss), ('ood', ood))}
  return run_results.run_result(grid.Run(cell, rate), train, evaluation, stats, batch_size=32)


def test_run_result_counts_tokens_and_targets_seen():
  result = _result(grid.CELLS[0], 1e-3, 5.0)
  assert result['steps'] == 600 and result['tokens_seen'] == 600 * 32 * 128
  assert result['real_tokens_seen'] == pytest.approx(600 * 32 * 128 * 0.75)
  assert result['masked_targets_seen'] == pytest.approx(600 * 32 * 19.0)
  assert result['minutes'] == pytest.approx(30.2) and result['stopped_at_budget']
  assert result['held_out']['ood']['lm_example_loss'] == 6.0


def _results(free_loss=5.5):
  runs = {}
  for cell, losses in zip(grid.CELLS, ([5.9, 5.2, math.nan], [5.0, 4.6, 4.8], [4.9, 4.4, 4.5],
                                        [4.2, 3.9, 4.1])):
    for rate, loss in zip((3e-4, 1e-3, 3e-3), losses):
      result = _result(cell, rate, loss)
      runs[result['name']] = result
  free = {name: dict(lm_example_loss=free_loss, masked_lm_accuracy=0.151, masked_targets=500,
                     kept=50, records=40, unigram_lm_example_loss=6.4,
                     unigram_masked_lm_accuracy=0.05) for name in grid.HELD_OUT_SETS}
  settings = dict(budget_minutes=30.0, batch_size=32, mixed_precision='float32', corpus='c',
                  ood_corpus='o')
  return dict(settings=settings, context_free=free, runs=runs, best=run_results.best_runs(runs))


def test_best_runs_and_the_report_tables():
  results = _results()
  assert results['best'] == {'bert-bert': 'bert-bert_lr0.001', 'bert-modern': 'bert-modern_lr0.001',
                             'modern-bert': 'modern-bert_lr0.001',
                             'modern-modern': 'modern-modern_lr0.001'}
  lines = report.markdown_report(results).splitlines()
  assert lines[0].startswith('Budget 30 minutes a run, one core each')
  fixed = dict(results, settings=dict(results['settings'], budget_minutes=0.0, train_steps=1500))
  assert report.markdown_report(fixed).startswith('1,500 steps a run, one core each')
  assert ('| in-domain | 40 | 500 | 50 | 5.500 | 0.151 | 6.400 | 0.050 |') in lines
  sweep_rows = [line for line in lines if line.startswith('| BERT arch x BERT data |')]
  assert len(sweep_rows) == 3  # every learning rate, the diverged one as n/a
  assert sweep_rows[1] == ('| BERT arch x BERT data | **0.001** | 600 (612, cut off after the '
                           'budget) | 30.2 | 2,457,600 | 1,843,200 | 364,800 | **5.200** | 0.300 '
                           '| — | 6.000 | 0.300 |')
  assert '| n/a |' in sweep_rows[2]
  # With the curves: the lowest in-domain loss during the run and its step (overfitting shows).
  results['curves'] = {'bert-bert_lr0.001': [(5.0, 100, 5.6), (15.0, 300, 4.9), (30.2, 600, 5.2)],
                       'bert-bert_lr0.003': [(5.0, 100, math.nan)]}
  rows = [line for line in report.markdown_report(results).splitlines()
          if line.startswith('| BERT arch x BERT data |')]
  assert '| **5.200** | 0.300 | 4.900 (300) | 6.000 |' in rows[1]
  assert '| n/a | 0.300 | — | 6.000 |' in rows[2]  # a diverged run's NaN curve
  del results['curves']
  header = next(line for line in lines if line.startswith('| | BERT arch x BERT data'))
  assert header.endswith('| modern arch x modern data | context-free predictor |')
  assert ('| in-domain held-out masked-LM loss | 5.200 | 4.600 | 4.400 | 3.900 | 5.500 |'
          in lines)
  assert ('| out-of-domain held-out masked-LM accuracy | 0.300 | 0.300 | 0.300 | 0.300 | 0.151 |'
          in lines)
  below = '| in-domain loss below the context-free predictor |'
  assert f'{below} yes | yes | yes | yes | — |' in lines
  recipes = ['NSP pairs, 15%, padded', 'packed, 30%'] * 2
  assert '| data recipe | ' + ' | '.join(recipes) + ' | — |' in lines
  worse = report.markdown_report(_results(free_loss=5.0)).splitlines()
  assert f'{below} **no** | yes | yes | yes | — |' in worse
  results['downstream'] = {'markdown': '| task | bert |\n|---|---|'}
  assert report.markdown_report(results).rstrip().endswith('| task | bert |\n|---|---|')


def test_plot_curves_writes_a_png(tmp_path):
  results = _results()
  curves = {name: [(1.0, 100, 7.0), (30.0, 600, run['held_out']['in_domain']['lm_example_loss'])]
            for name, run in results['runs'].items()}
  path = report.plot_curves(curves, results['runs'], results['best'], results['context_free'],
                           str(tmp_path / 'curves.png'))
  assert os.path.getsize(path) > 1000


@pytest.mark.slow
def test_run_jobs_pins_sequences_stops_at_the_deadline_and_reports_failures(tmp_path):
  python = sys.executable
  done = []
  record = lambda name: (lambda info: done.append((name, info['stopped'], info['returncode'])))
  affinity = 'import os; print(sorted(os.sched_getaffinity(0)))'
  jobs = [
      scheduler.Job('slow', [scheduler.Step([python, '-c', 'import time; time.sleep(30)'],
                                    str(tmp_path / 'slow.log'), deadline=0.5, done=record('slow')),
                         scheduler.Step([python, '-c', affinity], str(tmp_path / 'after.log'),
                                    done=record('after'))]),
      scheduler.Job('bad', [scheduler.Step([python, '-c', 'raise SystemExit(3)'],
                                   str(tmp_path / 'bad.log')),
                        scheduler.Step([python, '-c', 'pass'], str(tmp_path / 'never.log'),
                                   done=record('never'))]),
      scheduler.Job('third', [scheduler.Step([python, '-c', affinity], str(tmp_path / 'third.log'),
                                     done=record('third'))]),
      scheduler.Job('bad_output', [scheduler.Step([python, '-c', 'pass'], str(tmp_path / 'out.log'),
                                          done=lambda info: json.loads('{'))]),
  ]
  pin = shutil.which('taskset') is not None
  # Two slots on core 0 (a machine with one core runs this too).
  failed = scheduler.run_jobs(jobs, cores=[0, 0], poll_seconds=0.1, pin=pin)
  assert sorted(failed) == ['bad', 'bad_output'] and 'bad.log exited 3' in failed['bad']
  assert 'out.log: JSONDecodeError' in failed['bad_output']
  assert sorted(done) == [('after', False, 0), ('slow', True, -15), ('third', False, 0)]
  if pin:
    assert (tmp_path / 'after.log').read_text().strip() == '[0]'
    assert (tmp_path / 'third.log').read_text().strip() == '[0]'
  assert not (tmp_path / 'never.log').exists()


def test_downstream_gets_the_best_model_dirs_and_is_cached(tmp_path, monkeypatch):
  calls = []

  def evaluate(models, output_dir, tasks=('mr', 'hedge', 'pos'), seeds=5, data_dir=None,
               random_init_models=None, rate_from=None, settings=None):
    calls.append(dict(models=models, output_dir=output_dir, tasks=tasks, seeds=seeds,
                      data_dir=data_dir, random_init_models=random_init_models,
                      rate_from=rate_from, budget=(settings.max_epochs, settings.patience,
                                                   settings.pick_seeds)))
    return {'markdown': '| task | a |', 'scores': {'mr': 0.7}}

  fake = types.ModuleType('official.nlp.tools.downstream_eval')
  fake.evaluate = evaluate
  fake.FinetuneSettings = FinetuneSettings
  monkeypatch.setitem(sys.modules, 'official.nlp.tools.downstream_eval', fake)
  import official.nlp.tools  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(official.nlp.tools, 'downstream_eval', fake, raising=False)
  results = _results()
  work = str(tmp_path)
  best = {cell: results['best'][cell] for cell in ('bert-bert', 'modern-modern')}
  first = sweep.downstream(work, results['runs'], best, ['mr', 'pos'], 3, '/p3')
  assert first['scores'] == {'mr': 0.7}
  # What each fine-tuned checkpoint saw heads the tables: 600 steps of 32 x 128 tokens.
  assert first['markdown'].startswith('### The pretraining runs fine-tuned (what each saw)')
  assert '| bert_arch-bert_data-lr0.001 | 600 | 2,457,600 | 364,800 |' in first['markdown']
  assert first['markdown'].endswith('\n| task | a |')
  assert calls == [dict(
      models={'bert_arch-bert_data-lr0.001': f'{work}/runs/bert-bert/lr0.001/model',
              'modern_arch-modern_data-lr0.001': f'{work}/runs/modern-modern/lr0.001/model'},
      output_dir=f'{work}/downstream', tasks=('mr', 'pos'), seeds=3, data_dir='/p3',
      random_init_models=['bert_arch-bert_data-lr0.001', 'modern_arch-modern_data-lr0.001'],
      rate_from={}, budget=(20, 3, 2))]
  assert sweep.downstream(work, results['runs'], best, ['mr', 'pos'], 3, '/p3') == first
  assert len(calls) == 1  # cached while the best runs, tasks and seeds stay the same
  sweep.downstream(work, results['runs'], best, ['mr'], 3, '/p3')
  assert len(calls) == 2
  assert json.load(open(tmp_path / 'downstream.json'))['key']['tasks'] == ['mr']
  # A shorter fine-tuning budget reaches every run's settings and is not the cached table.
  sweep.downstream(work, results['runs'], best, ['mr'], 3, '/p3', max_epochs=10, patience=2)
  assert len(calls) == 3 and calls[-1]['budget'] == (10, 2, 2)
  assert json.load(open(tmp_path / 'downstream.json'))['key']['max_epochs'] == 10
  sweep.downstream(work, results['runs'], best, ['mr'], 3, '/p3', max_epochs=10, patience=2,
                   pick_seeds=1)
  assert len(calls) == 4 and calls[-1]['budget'] == (10, 2, 1)


def test_downstream_fine_tunes_every_seed_and_tests_the_recipes_over_them(tmp_path,
                                                                          monkeypatch):
  from official.nlp.tools import downstream_eval  # pylint: disable=g-import-not-at-top
  bert, modern = grid.CELLS[0], grid.CELLS[3]
  runs = _seeded_runs({(bert, 1e-3): [5.0, 5.1], (modern, 3e-3): [4.0, 4.1]})
  best = run_results.best_runs(runs)
  seen = {}

  def evaluate(models, output_dir, tasks, seeds, data_dir, random_init_models, rate_from,
               settings):
    seen.update(models=sorted(models), controls=random_init_models, rate_from=rate_from)
    rows = [dict(row=name, mean=0.7 + 0.01 * i, scores=[0.7, 0.71])
            for i, name in enumerate(sorted(models))]
    rows += [dict(row=f'{name} (random init)', mean=0.6, scores=[0.6, 0.61])
             for name in random_init_models]
    return {'markdown': '| t |\n', 'tasks': {'mr': dict(rows=rows)}}

  monkeypatch.setattr(downstream_eval, 'evaluate', evaluate)
  result = sweep.downstream(str(tmp_path), runs, best, ['mr'], 2, '/p3')
  assert seen['models'] == ['bert_arch-bert_data-lr0.001', 'bert_arch-bert_data-lr0.001_s1',
                            'modern_arch-modern_data-lr0.003',
                            'modern_arch-modern_data-lr0.003_s1']
  assert seen['controls'] == ['bert_arch-bert_data-lr0.001', 'modern_arch-modern_data-lr0.003']
  # Seed 1 of each recipe is fine-tuned at the rate its seed 0 picked.
  assert seen['rate_from'] == {
      'bert_arch-bert_data-lr0.001_s1': 'bert_arch-bert_data-lr0.001',
      'modern_arch-modern_data-lr0.003_s1': 'modern_arch-modern_data-lr0.003'}
  pairs = [(t['a'], t['b']) for t in result['run_level_tests']]
  assert pairs == [('bert-bert', 'modern-modern'),
                   ('bert-bert', 'bert_arch-bert_data-lr0.001 (random init)'),
                   ('modern-modern', 'modern_arch-modern_data-lr0.003 (random init)')]
  assert '### Recipes over pretraining seeds' in result['markdown']


def test_cli_errors_name_the_flag(tmp_path, capsys):
  for flag, message in (('--cells=bert', '--cells: expected names of'),
                        ('--downstream_only --no_downstream',
                         '--downstream_only and --no_downstream: expected one of them'),
                        ('--learning_rates=x', '--learning_rates: expected'),
                        ('--downstream_patience=0', '--downstream_patience: expected >= 1, '
                         'found 0'),
                        ('--seeds=0', '--seeds: expected >= 1, found 0'),
                        ('--steps=-1', '--steps: expected 0 (train for --minutes) or at least '
                         '--evals (6), found -1'),
                        ('--steps=5', '--steps: expected 0 (train for --minutes) or at least '
                         '--evals (6), found 5'),
                        ('--cores=', '--cores: expected comma-separated core numbers'),
                        ('--downstream_tasks=mr,sst', "--downstream_tasks: unknown ['sst']; "
                         "expected some of ['brown_genre', 'brown_pos', 'hedge', 'mr', 'pos']"),
                        (f'--corpus={tmp_path}/missing.txt',
                         f'--corpus={tmp_path}/missing.txt: expected a text file (one sentence '
                         'a line, blank lines between documents), found no such file'),
                        (f'--ood_corpus={tmp_path}', f'--ood_corpus={tmp_path}: expected a '
                         'text file (one sentence a line, blank lines between documents), found '
                         'a directory')):
    with pytest.raises(SystemExit) as exit_info:
      compare.main([f'--work_dir={tmp_path}'] + flag.split())
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
  assert not os.listdir(tmp_path)  # nothing made before the flags are checked


@pytest.mark.slow
def test_build_table_reports_every_finished_run_and_waits_for_the_downstream(tmp_path,
                                                                            monkeypatch):
  """The orchestration with the data, the runs and the fine-tuning replaced by fakes."""
  results = _results()
  work = str(tmp_path)
  monkeypatch.setattr(corpus_data, 'make_data', lambda *a, **k: dict(
      vocab='v', records={}, corpus='c', ood_corpus='o', documents={'train': 1}))
  monkeypatch.setattr(corpus_data, 'context_free', lambda *a: results['context_free'])
  monkeypatch.setattr(sweep, 'run_sweep', lambda config, data: {})
  monkeypatch.setattr(report, 'run_curve', lambda work_dir, run: [(1.0, 1, 7.0)])
  calls = []
  monkeypatch.setattr(sweep, 'downstream', lambda *a: calls.append(a[2]) or {'markdown': '|d|'})
  # Every run but one of modern-modern has finished.
  cells = {cell.name: cell for cell in grid.CELLS}
  for name, run in results['runs'].items():
    if name != 'modern-modern_lr0.003':
      directory = grid.Run(cells[run['cell']], run['learning_rate']).directory(work)
      workdir.write_json(os.path.join(directory, 'result.json'), run)
  config = sweep.SweepConfig(work, cells=grid.parse_cells('bert-bert'))
  first = sweep.build_table(config)
  assert len(first['runs']) == 11 and not calls and 'downstream' not in first
  # Downstream only: nothing trained, the best configurations found so far fine-tuned, whatever
  # grid the config names (here a rate no run has).
  monkeypatch.setattr(sweep, 'run_sweep', lambda config, data: pytest.fail('trained'))
  only = sweep.build_table(dataclasses.replace(config, train=False, learning_rates=(1e-2,)))
  assert calls == [{'bert-bert': 'bert-bert_lr0.001', 'modern-modern': 'modern-modern_lr0.001'}]
  assert only['downstream'] == {'markdown': '|d|'}
  calls.clear()
  monkeypatch.setattr(sweep, 'run_sweep', lambda config, data: {})
  assert os.path.exists(tmp_path / 'curves.png')
  assert '### The best run of each cell' in (tmp_path / 'results.md').read_text()
  last = results['runs']['modern-modern_lr0.003']
  workdir.write_json(os.path.join(grid.Run(grid.CELLS[3], 3e-3).directory(work),
                                'result.json'), last)
  second = sweep.build_table(config)
  assert calls == [{'bert-bert': 'bert-bert_lr0.001', 'modern-modern': 'modern-modern_lr0.001'}]
  assert second['downstream'] == {'markdown': '|d|'}
  assert (tmp_path / 'results.md').read_text().rstrip().endswith('|d|')
  assert json.load(open(tmp_path / 'results.json'))['settings']['cells'] == ['bert-bert']


# ---- pretraining seeds and optimizer variants ---------------------------------------------------
def test_optimizer_variants_parse_and_name_runs():
  own, tuned = grid.parse_optimizer_variants('own,0.98/0.1')
  assert own is None and tuned == grid.OptimizerVariant(0.98, 0.1)
  for bad in ('', 'fast', '0.98', '1.5/0', '0.98/1'):
    with pytest.raises(ValueError, match='--optimizer_variants: expected'):
      grid.parse_optimizer_variants(bad)
  run = grid.Run(grid.CELLS[0], 1e-3, seed=2, variant=tuned)
  assert run.name == 'bert-bert_lr0.001_b2_0.98-do0.1_s2'
  assert run.config_name == 'bert-bert_lr0.001_b2_0.98-do0.1'
  assert run.directory('/w') == '/w/runs/bert-bert/lr0.001_b2_0.98-do0.1_s2'
  # Seed 0 with the YAML's optimizer keeps the names of a sweep without seeds.
  assert grid.Run(grid.CELLS[0], 1e-3).directory('/w') == '/w/runs/bert-bert/lr0.001'
  result = dict(cell='bert-bert', learning_rate=1e-3, seed=2,
                variant=dict(beta_2=0.98, dropout=0.1, epsilon=1e-6))
  assert grid.run_of(result) == run
  plans = run_configs.plan_runs('/nonexistent', grid.CELLS[:1], [1e-3, 3e-3], seeds=3,
                          variants=[None, tuned])
  assert len(plans) == 2 * 2 * 3 and len({p.run.name for p in plans}) == 12


def test_seeded_variant_overrides_load(tmp_path, data):
  variant = grid.OptimizerVariant(0.98, 0.0)
  overrides = run_configs.run_overrides(grid.CELLS[0], data, 600, 6, 1e-3, 32, budget_minutes=30,
                                  seed=3, variant=variant)
  path = str(tmp_path / 'o.yaml')
  with open(path, 'w') as f:
    yaml.safe_dump(overrides, f)
  params = api.load_config([os.path.join(ROOT, grid.ARCHITECTURES['bert']), path])
  assert params.runtime.seed == 3
  adamw = params.trainer.optimizer_config.optimizer.adamw
  assert (adamw.beta_2, adamw.epsilon, adamw.weight_decay_rate) == (0.98, 1e-6, 0.01)
  bert = params.task.model.encoder.bert
  assert (bert.dropout_rate, bert.attention_dropout_rate) == (0.0, 0.0)
  assert [(h.name, h.dropout_rate) for h in params.task.model.cls_heads] == [
      ('next_sentence', 0.0)]
  # Without a variant the YAML's own optimizer and dropout stay.
  own = run_configs.run_overrides(grid.CELLS[0], data, 600, 6, 1e-3, 32)
  assert 'optimizer' not in own['trainer']['optimizer_config'] and 'seed' not in own['runtime']


def _seeded_runs(losses_by_config):
  runs = {}
  for (cell, rate), losses in losses_by_config.items():
    for seed, loss in enumerate(losses):
      result = _result(cell, rate, loss)
      run = grid.Run(cell, rate, seed)
      result.update(name=run.name, config=run.config_name, seed=seed)
      runs[run.name] = result
  return runs


def test_best_configuration_by_the_mean_over_seeds_and_recipe_tests():
  bert, modern = grid.CELLS[0], grid.CELLS[3]
  runs = _seeded_runs({(bert, 1e-3): [5.0, 5.6, 5.3], (bert, 3e-3): [5.1, 5.2, 5.4],
                       (modern, 3e-3): [4.0, 4.2, 4.1]})
  best = run_results.best_runs(runs)
  # bert at 3e-3 has the lower mean (5.233 against 5.3) though 1e-3 has the best single seed.
  assert best == {'bert-bert': 'bert-bert_lr0.003', 'modern-modern': 'modern-modern_lr0.003'}
  tests = run_results.recipe_tests(runs, best, ['bert-bert', 'modern-modern'])
  assert [(t['held_out'], t['seeds_a'], t['seeds_b']) for t in tests] == [
      ('in_domain', 3, 3), ('ood', 3, 3)]
  welch = significance.welch_t_test([5.1, 5.2, 5.4], [4.0, 4.2, 4.1])
  assert tests[0]['difference'] == pytest.approx(welch['difference'])
  assert (tests[0]['low'], tests[0]['high'], tests[0]['p']) == pytest.approx(
      (welch['low'], welch['high'], welch['p']))
  assert [t['p_holm'] for t in tests] == significance.holm_adjust([t['p'] for t in tests])
  results = dict(_results(), runs=runs, best=best, recipe_tests=tests)
  text = report.markdown_report(results)
  assert '### Recipes over pretraining seeds' in text
  assert '| BERT arch x BERT data | modern arch x modern data | in-domain | 3 / 3 | +1.133 |' in (
      text)
  # One seed a side: nothing to test at the level of runs.
  single = _seeded_runs({(bert, 1e-3): [5.0], (modern, 3e-3): [4.0]})
  assert run_results.recipe_tests(single, run_results.best_runs(single),
                                  ['bert-bert', 'modern-modern']) == []


def test_own_variant_reads_each_architecture_yaml(tmp_path, monkeypatch):
  # AdamW's defaults
  assert run_results.own_variant('bert') == grid.OptimizerVariant(0.999, 0.1, 1e-7)
  assert run_results.own_variant('modern') == grid.OptimizerVariant(0.98, 0.0, 1e-6)
  config = yaml.safe_load(open(os.path.join(ROOT, grid.ARCHITECTURES['bert'])))
  config['task']['model']['encoder']['bert']['attention_dropout_rate'] = 0.0
  path = tmp_path / 'mixed_dropout.yaml'
  path.write_text(yaml.safe_dump(config))
  monkeypatch.setitem(grid.ARCHITECTURES, 'bert', str(path))
  run_results.own_variant.cache_clear()
  try:
    assert run_results.own_variant('bert') is None  # not one variant: 0.1 hidden, 0 attention
    del config['task']['model']['encoder']['bert']['attention_dropout_rate']
    path.write_text(yaml.safe_dump(config))
    run_results.own_variant.cache_clear()
    assert run_results.own_variant('bert') is None  # one rate left to the encoder's default
  finally:
    run_results.own_variant.cache_clear()


def _variant_runs(losses_by_config):
  """Runs of `{(cell, rate, variant or None): [in-domain loss of each seed]}`; OOD = loss + 1."""
  runs = {}
  for (cell, rate, variant), losses in losses_by_config.items():
    for seed, loss in enumerate(losses):
      run = grid.Run(cell, rate, seed, variant)
      result = _result(cell, rate, loss, ood=loss + 1)
      result.update(name=run.name, config=run.config_name, seed=seed,
                    variant=dataclasses.asdict(variant) if variant else None)
      runs[run.name] = result
  return runs


def test_ablation_tests_compare_cells_at_the_optimizer_setting_they_share():
  bb, bm, mb, mm = grid.CELLS
  common = grid.OptimizerVariant(0.98, 0.0)  # the modern YAML's own setting
  tuned = grid.OptimizerVariant(0.98, 0.1)
  losses = {(bb, 1e-3, tuned): [6.25, 6.24, 6.26],  # BERT's best overall
            (bb, 1e-3, common): [6.27, 6.26, 6.29],
            (bb, 3e-3, common): [6.35],
            (bb, 1e-3, grid.OptimizerVariant(0.999, 0.1)): [6.30],
            (bm, 1e-3, common): [5.5, 5.6, 5.4],
            (mb, 3e-3, common): [4.9, 5.0, 4.8],
            (mm, 3e-3, None): [4.6, 4.7, 4.65]}  # its own optimizer: the common setting
  runs = _variant_runs(losses)
  best = run_results.best_runs(runs)
  tests = run_results.ablation_tests(runs, best)

  def name(cell, rate, variant=None):
    return grid.Run(cell, rate, 0, variant).config_name

  expected = [('architecture', name(bb, 1e-3, common), name(mb, 3e-3, common)),
              ('architecture', name(bm, 1e-3, common), name(mm, 3e-3)),
              ('data recipe', name(bb, 1e-3, common), name(bm, 1e-3, common)),
              ('data recipe', name(mb, 3e-3, common), name(mm, 3e-3)),
              ('optimizer/regularisation', name(bb, 1e-3, tuned), name(bb, 1e-3, common))]
  assert [(t['factor'], t['a_config'], t['b_config']) for t in tests] == expected * 2
  assert [t['held_out'] for t in tests] == ['in_domain'] * 5 + ['ood'] * 5
  assert {t['setting'] for t in tests} == {'0.98 / 0 / 1e-06'}
  assert [(t['seeds_a'], t['seeds_b']) for t in tests[:5]] == [(3, 3)] * 5
  for test, (a, b) in ((tests[0], ([6.27, 6.26, 6.29], [4.9, 5.0, 4.8])),
                       (tests[8], ([5.9, 6.0, 5.8], [5.6, 5.7, 5.65]))):  # in-domain; OOD
    welch = significance.welch_t_test(a, b)
    assert (test['difference'], test['low'], test['high'], test['p']) == pytest.approx(
        (welch['difference'], welch['low'], welch['high'], welch['p']))
  assert [t['p_holm'] for t in tests] == significance.holm_adjust([t['p'] for t in tests])
  text = report.markdown_report(dict(_results(), runs=runs, best=best, ablation_tests=tests))
  assert '### The ablation, one factor at a time' in text
  row = next(line for line in text.splitlines() if line.startswith('| data recipe | 0.98'))
  assert row.startswith(f"| data recipe | 0.98 / 0 / 1e-06 | {name(bb, 1e-3, common)} | "
                        f"{name(bm, 1e-3, common)} | in-domain | 3 / 3 | +0.773 |")
  p_holm = tests[2]['p_holm']
  assert row.endswith(' | < 0.0001 |' if p_holm < 1e-4 else f' | {p_holm:.4f} |')
  # Without a finished run of every cell at one setting there is no ablation to test.
  del losses[(mm, 3e-3, None)]
  runs = _variant_runs(losses)
  assert run_results.ablation_tests(runs, run_results.best_runs(runs)) == []


def test_budget_plan_default_without_a_checkpoint(tmp_path):
  assert run_results.budget_plan(str(tmp_path / 'none'), default=0) == 0
  assert run_results.budget_plan(str(tmp_path), 'spent_seconds', default=0.0) == 0.0


def test_cli_passes_the_fine_tuning_budget_to_the_sweep(tmp_path, monkeypatch):
  configs = []
  (tmp_path / 'results.md').write_text('| table |\n')  # what build_table writes
  monkeypatch.setattr(compare.sweep, 'build_table',
                      lambda config: configs.append(config) or {'failed': {}})
  compare.main([f'--work_dir={tmp_path}', '--downstream_only', '--downstream_max_epochs=10',
                '--downstream_patience=2', '--downstream_pick_seeds=1'])
  assert (configs[0].downstream_max_epochs, configs[0].downstream_patience,
          configs[0].downstream_pick_seeds) == (10, 2, 1)
  compare.main([f'--work_dir={tmp_path}', '--downstream_only'])
  defaults = FinetuneSettings()
  assert (configs[1].downstream_max_epochs, configs[1].downstream_patience,
          configs[1].downstream_pick_seeds) == (
              defaults.max_epochs, defaults.patience, defaults.pick_seeds)


def test_fixed_steps_runs_train_their_steps_with_no_deadline(tmp_path, monkeypatch, data):
  jobs = []
  monkeypatch.setattr(corpus_data, 'record_stats', lambda path: dict(padding_fraction=0.0,
                                                                     masked_per_row=20.0))
  monkeypatch.setattr(scheduler, 'run_jobs', lambda queued, cores, pin: jobs.extend(queued) or {})
  config = sweep.SweepConfig(str(tmp_path), cells=grid.parse_cells('rotary-bert'),
                             learning_rates=(1e-3,), budget_minutes=30, train_steps=1500)
  assert config.fixed_settings()['budget_minutes'] == 0.0  # the steps decide, not the minutes
  assert config.fixed_settings()['train_steps'] == 1500
  assert sweep.run_sweep(config, data) == {}
  train, evaluate = jobs[0].steps
  assert train.deadline is None and evaluate.deadline is None
  directory = grid.Run(grid.EXTRA_CELLS[0], 1e-3).directory(str(tmp_path))
  with open(os.path.join(directory, 'overrides.yaml')) as f:
    trainer = yaml.safe_load(f)['trainer']
  assert (trainer['train_steps'], trainer['time_budget_minutes'], trainer['steps_per_loop']) == (
      1500, 0.0, 50)
  # The rotary cell's processes import the ablation family (its encoder's registration).
  assert train.command[-1] == f'--experiment_module={grid.ABLATION_MODULE}'
  assert evaluate.command[-1] == f'--experiment_module={grid.ABLATION_MODULE}'
  train.done(dict(started=1.0, seconds=600.0, returncode=0, stopped=False))
  assert workdir.read_json(os.path.join(directory, 'train.json'))['planned_steps'] == 1500


def test_cli_takes_the_old_budget_flag_with_a_note(tmp_path, monkeypatch, capsys):
  configs = []
  (tmp_path / 'results.md').write_text('| table |\n')  # what build_table writes
  monkeypatch.setattr(compare.sweep, 'build_table',
                      lambda config: configs.append(config) or {'failed': {}})
  compare.main([f'--work_dir={tmp_path}', '--downstream_only', '--minutes=2'])
  assert configs[0].budget_minutes == 2.0 and 'note' not in capsys.readouterr().err
  assert configs[0].train_steps == 0
  compare.main([f'--work_dir={tmp_path}', '--downstream_only', '--budget_minutes', '0.5'])
  assert configs[1].budget_minutes == 0.5
  assert capsys.readouterr().err == ('compare_recipes: note: --budget_minutes is now --minutes '
                                     '(the old name still works)\n')
