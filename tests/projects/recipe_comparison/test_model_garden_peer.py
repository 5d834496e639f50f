"""Tests of the Model Garden peer of the study's BERT run (model_garden_peer)."""

import os

import pytest
import yaml

from official.benchmark import model_garden_configs
from official.nlp import api
from official.projects.recipe_comparison import grid
from official.projects.recipe_comparison import model_garden_peer as peer
from tests.paths import ROOT


def test_the_peer_override_is_the_study_run_at_fixed_steps(tmp_path, data, capsys):
  override = peer.peer_override(data, 3000, 12, 1e-3, grid.OptimizerVariant(0.98, 0.1), seed=4)
  path = str(tmp_path / 'override.yaml')
  with open(path, 'w', encoding='utf-8') as f:
    yaml.safe_dump(override, f)
  base = os.path.join(ROOT, grid.ARCHITECTURES['bert'])
  # Every key is ours: nothing dropped for mlm-garden, and the run has no time budget.
  kept = str(tmp_path / 'kept.yaml')
  model_garden_configs.check_config(base, path, str(tmp_path / 'base.yaml'), kept)
  assert 'dropped' not in capsys.readouterr().err
  params = api.load_config([base, kept])
  trainer = params.trainer
  assert (trainer.train_steps, trainer.checkpoint_interval, trainer.steps_per_loop,
          trainer.summary_interval, trainer.max_to_keep, trainer.time_budget_minutes) == (
              3000, 250, 250, 250, 13, 0.0)
  assert trainer.optimizer_config.warmup.polynomial.warmup_steps == 300
  assert trainer.optimizer_config.learning_rate.polynomial.decay_steps == 3000
  adamw = trainer.optimizer_config.optimizer.adamw
  assert (adamw.beta_2, adamw.epsilon) == (0.98, 1e-6)
  assert params.task.model.encoder.bert.dropout_rate == 0.1
  assert params.task.train_data.use_next_sentence_label
  assert [head.name for head in params.task.model.cls_heads] == ['next_sentence']
  assert params.runtime.seed == 4 and params.runtime.mixed_precision_dtype == 'float32'


def test_checkpoints_by_step_reads_prefixes_in_step_order(tmp_path):
  for name in ('ckpt-250.index', 'ckpt-250.data-00000-of-00001', 'ckpt-50.index',
               'ckpt-x.index', 'checkpoint', 'ckpt-3000.index'):
    (tmp_path / name).write_text('')
  found = peer.checkpoints_by_step(str(tmp_path))
  assert list(found) == [50, 250, 3000]
  assert found[250] == str(tmp_path / 'ckpt-250')
  assert peer.checkpoints_by_step(str(tmp_path / 'missing')) == {}


def _evaluation(loss, accuracy):
  return {name: dict(lm_example_loss=loss + (0.5 if name == 'ood' else 0.0),
                     masked_lm_accuracy=accuracy) for name in grid.HELD_OUT_SETS}


def _results():
  evaluations = {'model_garden': {50: _evaluation(9.0, 0.01), 250: _evaluation(6.5, 0.12)},
                 'mlm_garden': {250: _evaluation(6.25, 0.14)}}
  context_free = _evaluation(6.2, 0.15)
  return evaluations, context_free


def test_table_lists_every_step_either_framework_checkpointed():
  evaluations, context_free = _results()
  lines = peer.table(evaluations, context_free).splitlines()
  assert lines[0].startswith('| step | in_domain loss, Model Garden | in_domain loss, mlm-garden')
  assert len(lines) == 5  # header, rule, steps 50 (Model Garden's only) and 250, context-free
  assert lines[2] == '| 50 | 9.000 |  | 0.010 |  | 9.500 |  | 0.010 |  |'
  assert lines[3] == '| 250 | 6.500 | 6.250 | 0.120 | 0.140 | 7.000 | 6.750 | 0.120 | 0.140 |'
  assert lines[4] == '| context-free predictor | 6.200 |  | 0.150 |  | 6.700 |  | 0.150 |  |'


def test_plot_writes_a_png(tmp_path):
  evaluations, context_free = _results()
  path = peer.plot(evaluations, context_free, str(tmp_path / 'curves.png'), 'title')
  with open(path, 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'


@pytest.mark.parametrize('flags, message', [
    (['--frameworks=model_garden,torch'], "--frameworks: expected names of model_garden, "
     "mlm_garden, found ['torch']"),
    (['--cores=0'], '--cores: expected one a framework (2), found 1'),
    (['--steps=5', '--evals=6'], '--steps (5) must be >= --evals (6) >= 1'),
])
def test_bad_flags_are_refused_naming_the_flag(flags, message, capsys):
  with pytest.raises(SystemExit):
    peer.parse_args(['--work_dir=w', *flags])
  assert message in capsys.readouterr().err


def test_run_name_says_rate_variant_steps_warmup_and_seed():
  args = peer.parse_args(['--work_dir=w', '--steps=3000', '--optimizer_variant=own',
                          '--seed=2', '--warmup_fraction=0.3'])
  assert peer.run_name(args) == 'lr0.001_own_3000steps_wu0.3_s2'


def test_encoder_fields_change_one_factor_and_name_the_run(data):
  args = peer.parse_args(['--work_dir=w', '--encoder_fields=norm_first=true,dropout_rate=0'])
  assert args.encoder_fields == {'norm_first': True, 'dropout_rate': 0}
  assert peer.run_name(args).endswith('_s0_norm_first-True_dropout_rate-0')
  override = peer.peer_override(data, 600, 6, 1e-3, None, 0,
                                encoder_fields=args.encoder_fields)
  bert = override['task']['model']['encoder']['bert']
  assert (bert['norm_first'], bert['dropout_rate'], bert['hidden_size']) == (True, 0, 256)


def test_a_malformed_encoder_field_is_refused(capsys):
  with pytest.raises(SystemExit):
    peer.parse_args(['--work_dir=w', '--encoder_fields=norm_first'])
  assert ("--encoder_fields: expected field=value[,field=value...], found 'norm_first'"
          in capsys.readouterr().err)


def test_table_of_one_framework_lists_its_steps():
  evaluations, context_free = _results()
  lines = peer.table({'mlm_garden': evaluations['mlm_garden']}, context_free).splitlines()
  assert lines[0] == ('| step | in_domain loss, mlm-garden | in_domain acc, mlm-garden | '
                      'ood loss, mlm-garden | ood acc, mlm-garden |')
  assert lines[2:] == ['| 250 | 6.250 | 0.140 | 6.750 | 0.140 |',
                       '| context-free predictor | 6.200 | 0.150 | 6.700 | 0.150 |']


def test_the_ablation_encoder_run_holds_bert_sizes_and_the_switch(tmp_path, data, capsys,
                                                                 ablation_family):
  args = peer.parse_args(['--work_dir=w', '--encoder=ablation', '--frameworks=mlm_garden',
                          '--cores=0', '--encoder_fields=positions=rotary'])
  assert peer.run_name(args) == 'ablation_lr0.001_b2_0.98-do0.1_3000steps_wu0.1_s0_positions-rotary'
  override = peer.peer_override(data, 600, 6, 1e-3, grid.OptimizerVariant(0.98, 0.1), 0,
                                encoder_fields=args.encoder_fields, encoder=args.encoder)
  encoder = override['task']['model']['encoder']
  assert encoder['type'] == 'ablation' and 'bert' not in encoder
  path = str(tmp_path / 'override.yaml')
  with open(path, 'w', encoding='utf-8') as f:
    yaml.safe_dump(override, f)
  base = os.path.join(ROOT, grid.ARCHITECTURES['bert'])
  # check-config knows the family once its module is imported (as --experiment_module does).
  kept = str(tmp_path / 'kept.yaml')
  model_garden_configs.check_config(base, path, str(tmp_path / 'base.yaml'), kept,
                                    [peer.ABLATION_MODULE])
  assert 'dropped' not in capsys.readouterr().err
  ablation = api.load_config([base, kept]).task.model.encoder.ablation
  assert (ablation.positions, ablation.hidden_size, ablation.num_layers, ablation.dropout_rate,
          ablation.intermediate_size, ablation.norm_first) == ('rotary', 256, 4, 0.1, 1024, False)


def test_the_ablation_encoder_is_ours_only(capsys):
  with pytest.raises(SystemExit):
    peer.parse_args(['--work_dir=w', '--encoder=ablation'])
  assert ('--encoder=ablation: Model Garden has no such encoder; expected '
          '--frameworks=mlm_garden' in capsys.readouterr().err)
