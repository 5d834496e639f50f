"""Tests of tests/cli.py: a program's main run in-process prints, logs and exits as its process."""

import argparse
import logging
import re
import sys

from absl import app
from absl import flags
from absl.testing import flagsaver
import pytest

from official.nlp import train
from tests import cli
from tests.core import toy_task

# A flag of this module's small absl program (the global flags, as a program's).
flags.DEFINE_integer('cli_test_count', 1, 'How many lines the test program prints.',
                     lower_bound=0)


def _absl_main(argv):
  """A test program: prints --cli_test_count lines, logs, exits by the extra arguments."""
  for i in range(flags.FLAGS.cli_test_count):
    print(f'line {i}')
  logging.info('an info line')
  logging.debug('a debug line')
  logging.getLogger('tensorflow').info('tensorflow chatter')
  if argv[1:] == ['usage']:
    raise app.UsageError('a usage error', exitcode=3)
  if argv[1:] == ['exit']:
    sys.exit('a message to exit with')
  if argv[1:] == ['raise']:
    raise RuntimeError('a bug')
  return len(argv) - 1


def _argparse_main(argv=None) -> int:
  parser = argparse.ArgumentParser()
  parser.add_argument('--steps', type=int, required=True)
  args = parser.parse_args(argv)
  print(f'steps {args.steps}')
  return 0


def test_run_app_output_logs_and_exit_status():
  result = cli.run_app(_absl_main, ['prog', '--cli_test_count=2'])
  assert (result.returncode, result.stdout) == (0, 'line 0\nline 1\n')
  lines = result.stderr.splitlines()
  assert len(lines) == 1, lines
  assert re.fullmatch(r'I\d{4} [\d:.]+ +\d+ test_in_process_cli.py:\d+\] an info line', lines[0])
  assert cli.run_app(_absl_main, ['prog', 'a', 'b']).returncode == 2  # main's return value
  verbose = cli.run_app(_absl_main, ['prog', '--verbose', '--cli_test_count=0'])
  assert 'a debug line' in verbose.stderr and 'tensorflow chatter' in verbose.stderr


def test_run_app_exits_as_app_run_does():
  result = cli.run_app(_absl_main, ['prog', '--cli_test_count=-1'])
  assert result.returncode == 1 and result.stdout == ''
  assert result.stderr.startswith('FATAL Flags parsing error: flag --cli_test_count=-1: ')
  assert result.stderr.endswith('Pass --helpshort or --helpfull to see help on flags.\n')
  result = cli.run_app(_absl_main, ['prog', 'usage'])
  assert result.returncode == 3
  # The usage: this module's docstring and key flags, then the error.
  assert __doc__ in result.stderr and '--cli_test_count' in result.stderr
  assert result.stderr.endswith('\na usage error\n')
  result = cli.run_app(_absl_main, ['prog', 'exit'])
  assert result.returncode == 1 and result.stderr.endswith('a message to exit with\n')
  result = cli.run_app(_absl_main, ['prog', '--helpfull'])
  assert result.returncode == 1 and '--cli_test_count: How many lines' in result.stdout
  with pytest.raises(RuntimeError, match='a bug'):
    cli.run_app(_absl_main, ['prog', 'raise'])


def test_flags_loggers_and_argv_are_restored(caplog):
  caplog.set_level(logging.DEBUG)
  fv = flags.FLAGS
  was_parsed = fv.is_parsed()
  argv = sys.argv
  assert cli.run_app(_absl_main, ['prog', '--cli_test_count=0']).returncode == 0
  assert fv['cli_test_count'].value == 1 and fv['cli_test_count'].using_default_value
  assert fv.is_parsed() == was_parsed and sys.argv is argv
  assert logging.getLogger().level == logging.DEBUG
  assert 'an info line' in caplog.text  # pytest's handler still gets the records
  # A run starts from the defaults, whatever the previous one (or a test) set.
  with flagsaver.flagsaver():
    fv.cli_test_count = 5
    assert cli.run_app(_absl_main, ['prog']).stdout == 'line 0\n'
    assert fv['cli_test_count'].value == 5


def test_call_main_runs_an_argparse_main():
  result = cli.call_main(_argparse_main, ['--steps=3'])
  assert (result.returncode, result.stdout, result.value) == (0, 'steps 3\n', 0)
  result = cli.call_main(_argparse_main, ['--steps=x'])
  assert result.returncode == 2
  # argparse names the program after sys.argv[0]: this file, as `python this_file.py` would.
  assert result.stderr.startswith('usage: test_in_process_cli.py [-h] --steps STEPS\n')


def test_train_py_in_process(tmp_path):
  result = cli.run_app(train.main, ['train', '--experiment=bert/pretraining'])
  assert (result.returncode, result.stderr) == (1, 'error: --model_dir is required\n')
  result = toy_task.train_py(*toy_task.TOY, f'--model_dir={tmp_path}', '--mode=train')
  assert result.returncode == 0, result.stderr[-2000:]
  assert toy_task.checkpoint_steps(tmp_path) == [5, 10, 15, 20]
  assert result.stdout.startswith('trained to step 20 in ')
