"""The command-line flags of a training binary (`official.nlp.train`), Model Garden's names.

`define_flags()` may be called more than once (and after another module defined some of the
flags): a flag that exists already is kept.

Example:
  >>> from absl import flags
  >>> from official.common import flags as tfm_flags
  >>> tfm_flags.define_flags()
  >>> flags.mark_flags_as_required(['experiment', 'mode', 'model_dir'])
"""

from absl import flags

# Every mode of `official.core.train_lib.run_experiment` (and `continuous_train_and_eval`, run by
# `official.nlp.continuous_finetune_lib.run_continuous_finetune`).
MODES = ('train', 'eval', 'train_and_eval', 'continuous_eval', 'continuous_train_and_eval',
         'train_and_post_eval')


def _define(kind, name: str, default, help_text: str, **kwargs) -> None:
  if name in flags.FLAGS:
    return
  try:
    kind(name, default=default, help=help_text, **kwargs)
  except flags.DuplicateFlagError:
    pass


def define_flags() -> None:
  """Defines `--experiment`, `--mode`, `--model_dir`, `--config_file`, `--params_override`,
  `--gin_file`, `--gin_params`, `--tpu`, `--tf_data_service` (all optional)."""
  _define(flags.DEFINE_string, 'experiment', None,
          'The registered experiment to run, e.g. bert/pretraining.')
  _define(flags.DEFINE_enum, 'mode', 'train_and_eval',
          'What to run: train; eval (the latest checkpoint once); train_and_eval (evaluate every '
          'trainer.validation_interval steps); train_and_post_eval (train, then evaluate once); '
          'continuous_eval (evaluate each new checkpoint of --model_dir); '
          'continuous_train_and_eval (fine-tune and evaluate each new checkpoint of the '
          'pretraining run in task.init_checkpoint).', enum_values=list(MODES))
  _define(flags.DEFINE_string, 'model_dir', None,
          'Directory for checkpoints, summaries and params.yaml; a rerun with the same directory '
          'resumes from its latest checkpoint.')
  _define(flags.DEFINE_multi_string, 'config_file', [],
          'YAML config file(s) overriding the experiment defaults; repeat the flag for several '
          '(later files win).')
  _define(flags.DEFINE_string, 'params_override', None,
          "Overrides applied last: 'a.b=1,c.d=x' pairs, a YAML/JSON string, or a YAML file path.")
  _define(flags.DEFINE_multi_string, 'gin_file', [],
          'Gin config file(s) to parse before running; needs the [gin] extra '
          '(pip install mlm-garden[gin]).')
  _define(flags.DEFINE_multi_string, 'gin_params', [],
          "Gin bindings, e.g. 'MyLayer.width = 3'; needs the [gin] extra "
          '(pip install mlm-garden[gin]).')
  _define(flags.DEFINE_string, 'tpu', None,
          'TPU name or address; sets runtime.tpu (use with runtime.distribution_strategy=tpu).')
  _define(flags.DEFINE_string, 'tf_data_service', None,
          'Not supported by mlm-garden; setting it is an error.')
