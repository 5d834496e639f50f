"""The run configs of the Model Garden comparison (`official.benchmark.compare_model_garden`).

One override YAML per run (`write_config`: data, batch, steps, schedule, runtime) goes after the
shared model YAML, identically to both frameworks; `check_config` loads that model YAML strictly
into a framework's `bert/pretraining` config and drops the keys it does not know (for that
framework only).

`check_config` runs under either framework's Python, each with its own `official` package, so this
module imports only the standard library and yaml at its top, and Model Garden's Python runs it by
path with `-I` (the checkout is then not on `sys.path`):

    /tmp/mg-venv/bin/python -I official/benchmark/model_garden_configs.py check-config \
        configs/pretraining/bert_mini.yaml run.yaml /tmp/base_model_garden.yaml

Subcommands:
  write-config --out FILE ...     `write_config`.
  check-config BASE OVERRIDE OUT  `check_config`: prints the path of the YAML to use.
"""

import argparse
import importlib
import os
import sys
from typing import Any, List, Optional, Sequence

import yaml


def write_config(out: str, train_path: str, eval_path: str, vocab_size: int, train_steps: int,
                 schedule_steps: int, seq_length: int = 128, max_predictions_per_seq: int = 20,
                 batch_size: int = 32, learning_rate: float = 5e-4, steps_per_loop: int = 50,
                 validation_steps: int = 50, precision: str = 'float32', xla: bool = False) -> None:
  """Writes one run's override YAML (passed after the model YAML to both frameworks).

  Args:
    out: the YAML file to write.
    train_path: the training TFRecords.
    eval_path: the evaluation TFRecords.
    vocab_size: the records' vocabulary size.
    train_steps: steps of this run (one checkpoint and one evaluation, at its end).
    schedule_steps: the learning-rate decay steps (warmup: a tenth of them).
    seq_length: tokens a sequence.
    max_predictions_per_seq: masked positions a sequence.
    batch_size: sequences a step.
    learning_rate: the peak learning rate.
    steps_per_loop: steps a loop, also the summary interval.
    validation_steps: evaluation batches.
    precision: runtime.mixed_precision_dtype.
    xla: runtime.enable_xla.

  Example:
    >>> write_config('run.yaml', 'train.tfrecord', 'eval.tfrecord', 16000, 300, 1000)
  """
  data = dict(seq_length=seq_length, max_predictions_per_seq=max_predictions_per_seq,
              global_batch_size=batch_size, use_next_sentence_label=True)
  config = {
      'task': {
          'model': {'encoder': {'type': 'bert', 'bert': {'vocab_size': vocab_size}}},
          'train_data': dict(input_path=train_path, is_training=True, **data),
          'validation_data': dict(input_path=eval_path, is_training=False, **data),
      },
      'trainer': {
          'train_steps': train_steps,
          'steps_per_loop': steps_per_loop,
          'summary_interval': steps_per_loop,
          'checkpoint_interval': train_steps,
          'validation_interval': train_steps,
          'validation_steps': validation_steps,
          'optimizer_config': {
              'learning_rate': {'type': 'polynomial', 'polynomial': {
                  'initial_learning_rate': learning_rate, 'decay_steps': schedule_steps,
                  'end_learning_rate': 0.0}},
              'warmup': {'type': 'polynomial', 'polynomial': {
                  'warmup_steps': max(1, schedule_steps // 10), 'power': 1}},
          },
      },
      'runtime': {
          'distribution_strategy': 'one_device',
          'num_gpus': 0,
          'enable_xla': xla,
          'mixed_precision_dtype': precision,
      },
  }
  with open(out, 'w', encoding='utf-8') as f:
    yaml.safe_dump(config, f, sort_keys=False)


def unknown_keys(values: Any, reference: Any, prefix: str = '') -> List[str]:
  """Dotted paths of the keys of `values` (a YAML tree) that `reference` lacks.

  Args:
    values: the YAML tree.
    reference: a config's `as_dict()`; list items are checked against its list's first item.
    prefix: the path of `values` in the whole tree ('' at the top, else ending in '.').

  Returns:
    The paths, in the tree's order (list items by index, e.g. 'task.model.cls_heads.0.pooler').

  Example:
    >>> unknown_keys({'runtime': {'seed': 1, 'enable_xla': True}}, {'runtime': {'enable_xla': 0}})
    ['runtime.seed']
  """
  unknown = []
  if isinstance(values, dict) and isinstance(reference, dict):
    for key, value in values.items():
      path = f'{prefix}{key}'
      if key not in reference:
        unknown.append(path)
      else:
        unknown.extend(unknown_keys(value, reference[key], path + '.'))
  elif isinstance(values, list) and isinstance(reference, list) and reference:
    for i, value in enumerate(values):
      unknown.extend(unknown_keys(value, reference[0], f'{prefix}{i}.'))
  return unknown


def drop(values: Any, path: List[str]) -> None:
  """Deletes the key at `path` (dict keys, list indices as strings) from `values`.

  Args:
    values: the YAML tree, changed in place.
    path: e.g. `'task.model.cls_heads.0.pooler'.split('.')`.

  Example:
    >>> tree = {'a': [{'b': 1, 'c': 2}]}; drop(tree, ['a', '0', 'c']); tree
    {'a': [{'b': 1}]}
  """
  key = int(path[0]) if isinstance(values, list) else path[0]
  if len(path) == 1:
    del values[key]
  else:
    drop(values[key], path[1:])


def check_config(base: str, override: str, out: str, override_out: Optional[str] = None,
                 experiment_modules: Sequence[str] = ()) -> str:
  """Loads `base` then `override` strictly into this Python's `bert/pretraining` config.

  Keys of `base` the framework does not know are dropped into `out` (each named on stderr as
  `dropped: a.b.c`); `override` must load as it is, unless `override_out` is given.

  Args:
    base: the model YAML.
    override: a run's override YAML (`write_config`).
    out: where `base` without the unknown keys goes, when there are some.
    override_out: where `override` without the keys this framework does not know goes (always
      written; e.g. `trainer.time_budget_minutes`, which only mlm-garden has). None: `override`
      must load as it is.
    experiment_modules: modules imported first, for what they register (e.g. an encoder family,
      as `train.py --experiment_module`).

  Returns:
    The YAML this framework uses: `base`, or `out`.

  Example:
    >>> check_config('configs/pretraining/bert_mini.yaml', 'run.yaml', '/tmp/base.yaml')
  """
  # Function-level: the `official` of the Python that runs this (ours or Model Garden's).
  # Imported for its registrations (experiments and tasks).
  from official.common import registry_imports  # pylint: disable=g-import-not-at-top,unused-import  # noqa: F401
  from official.core import exp_factory  # pylint: disable=g-import-not-at-top
  from official.modeling import hyperparams  # pylint: disable=g-import-not-at-top
  import official  # pylint: disable=g-import-not-at-top
  for module in experiment_modules:
    importlib.import_module(module)
  print(f'official from {os.path.dirname(official.__file__)}', file=sys.stderr)
  reference = exp_factory.get_exp_config('bert/pretraining').as_dict()
  encoders = reference['task']['model']['encoder']
  for path in (base, override):  # the fields of an encoder type the YAMLs choose are known too
    kind = _encoder_type(path)
    if kind and kind not in encoders:
      params = exp_factory.get_exp_config('bert/pretraining')
      params.override({'task': {'model': {'encoder': {'type': kind}}}}, is_strict=True)
      encoders[kind] = params.as_dict()['task']['model']['encoder'][kind]
  use = _known_part(base, reference, out, always=False)
  if override_out:
    override = _known_part(override, reference, override_out, always=True)
  params = exp_factory.get_exp_config('bert/pretraining')
  for path in (use, override):
    params = hyperparams.override_params_dict(params, path, is_strict=True)
  params.validate()
  return use


def _encoder_type(path: str) -> Optional[str]:
  """`task.model.encoder.type` of a YAML file, or None."""
  with open(path, encoding='utf-8') as f:
    values = yaml.safe_load(f) or {}
  for key in ('task', 'model', 'encoder'):
    values = values.get(key) if isinstance(values, dict) else None
  return values.get('type') if isinstance(values, dict) else None


def _known_part(path: str, reference: Any, out: str, always: bool) -> str:
  """`path`, or `out` holding `path` without the keys `reference` lacks (named on stderr)."""
  with open(path, encoding='utf-8') as f:
    values = yaml.safe_load(f)
  unknown = unknown_keys(values, reference)
  for key in unknown:
    print(f'dropped: {key} (not a field of this framework\'s bert/pretraining config)',
          file=sys.stderr)
    drop(values, key.split('.'))
  if not unknown and not always:
    return path
  with open(out, 'w', encoding='utf-8') as f:
    yaml.safe_dump(values, f, sort_keys=False)
  return out


def add_subcommands(sub: Any) -> None:
  """Adds `write-config` and `check-config` to an argparse subparsers object.

  Args:
    sub: `parser.add_subparsers(dest='command')`.

  Example:
    >>> add_subcommands(argparse.ArgumentParser().add_subparsers(dest='command'))
  """
  p = sub.add_parser('write-config', help='one run\'s override YAML (`write_config`)')
  p.add_argument('--out', required=True)
  p.add_argument('--train_path', required=True)
  p.add_argument('--eval_path', required=True)
  p.add_argument('--vocab_size', type=int, required=True)
  p.add_argument('--seq_length', type=int, default=128)
  p.add_argument('--max_predictions_per_seq', type=int, default=20)
  p.add_argument('--batch_size', type=int, default=32)
  p.add_argument('--train_steps', type=int, required=True)
  p.add_argument('--schedule_steps', type=int, required=True,
                 help='learning-rate decay steps (warmup: a tenth of them)')
  p.add_argument('--learning_rate', type=float, default=5e-4)
  p.add_argument('--steps_per_loop', type=int, default=50)
  p.add_argument('--validation_steps', type=int, default=50)
  p.add_argument('--precision', choices=('float32', 'bfloat16', 'float16'), default='float32',
                 help='runtime.mixed_precision_dtype')
  p.add_argument('--xla', type=lambda s: s.lower() in ('1', 'true', 'yes', 'on'), default=False)
  p = sub.add_parser('check-config', help='strict load into this Python\'s framework '
                     '(`check_config`); prints the YAML to use')
  p.add_argument('base')
  p.add_argument('override')
  p.add_argument('out')
  p.add_argument('--override_out', default=None,
                 help='write OVERRIDE without the keys this framework lacks here (else it must '
                 'load as it is)')
  p.add_argument('--experiment_module', action='append', default=[],
                 help='a module to import first, for what it registers (repeatable)')


def run_subcommand(args: argparse.Namespace) -> bool:
  """Runs `args.command` when it is one of `add_subcommands`'.

  Args:
    args: the parsed command line.

  Returns:
    Whether it was one of them.

  Example:
    >>> run_subcommand(parser.parse_args(['check-config', 'base.yaml', 'run.yaml', 'out.yaml']))
  """
  if args.command == 'write-config':
    write_config(args.out, args.train_path, args.eval_path, args.vocab_size, args.train_steps,
                 args.schedule_steps, args.seq_length, args.max_predictions_per_seq,
                 args.batch_size, args.learning_rate, args.steps_per_loop, args.validation_steps,
                 args.precision, args.xla)
  elif args.command == 'check-config':
    print(check_config(args.base, args.override, args.out, args.override_out,
                       args.experiment_module))
  else:
    return False
  return True


def main(argv: Optional[List[str]] = None) -> int:
  """The command line of `write-config` and `check-config`.

  Args:
    argv: the arguments (default: `sys.argv[1:]`).

  Returns:
    The exit status (0).

  Example:
    >>> main(['check-config', 'configs/pretraining/bert_mini.yaml', 'run.yaml', 'out.yaml'])
  """
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  add_subcommands(parser.add_subparsers(dest='command', required=True))
  run_subcommand(parser.parse_args(argv))
  return 0


if __name__ == '__main__':
  sys.exit(main())
