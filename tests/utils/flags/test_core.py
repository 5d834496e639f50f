"""Tests for official/utils/flags/core.py.

absl flags are process-wide and some names (model_dir, tpu) are also defined by
`official.common.flags`, so the checks run in a child process of their own.
"""

import json
import subprocess
import sys

import pytest

from tests.paths import ROOT
from tests.processes import HANG_SECONDS, subprocess_env

_CHILD = r'''
import json, sys
from absl import flags
import tensorflow as tf
from official.utils.flags import core

core.define_base(clean=True, num_gpu=True, stop_threshold=True, hooks=True, train_epochs=True)
core.define_performance(dtype=True, loss_scale=True, fp16_implementation=True,
                        synthetic_data=True)
core.define_benchmark()
core.define_device()
core.define_image()
core.define_distribution()
out = {}
core.set_defaults(batch_size=64, clean=True)
core.parse_flags(['prog'])
out['defaults'] = [flags.FLAGS.batch_size, flags.FLAGS.data_dir, flags.FLAGS.hooks,
                   flags.FLAGS.dtype, flags.FLAGS.task_index, flags.FLAGS.num_tpu_shards]
out['nondefault_none'] = core.get_nondefault_flags_as_str()
core.parse_flags(['prog', '--noclean', '--bs=8', '--hooks=a,b', '--use_synthetic_data',
                  '--data_dir=/my data'])
out['nondefault'] = core.get_nondefault_flags_as_str()
scales = []
for argv in (['--dtype=fp16'], ['--dtype=fp16', '--loss_scale=5'],
             ['--dtype=fp16', '--loss_scale=dynamic'], ['--dtype=bf16'],
             ['--dtype=fp16', '--fp16_implementation=graph_rewrite']):
  core.parse_flags(['prog'] + argv)
  scales.append([core.get_tf_dtype(flags.FLAGS).name,
                 core.get_loss_scale(flags.FLAGS, default_for_fp16='fp16-default')])
out['scales'] = scales
exits = []
for argv in (['--loss_scale=-1'], ['--loss_scale=abc'], ['--dtype=int8'],
             ['--fp16_implementation=graph_rewrite'],
             ['--benchmark_logger_type=BenchmarkFileLogger']):
  try:
    core.parse_flags(['prog'] + argv)
    exits.append(None)
  except SystemExit as e:
    exits.append(e.code)
out['exits'] = exits
core.parse_flags(['prog', '--num_gpus=3'])
out['num_gpus'] = core.get_num_gpus(flags.FLAGS)
print('RESULT ' + json.dumps(out))
'''


@pytest.fixture(scope='module')
def result():
  child = subprocess.run([sys.executable, '-c', _CHILD], cwd=ROOT, env=subprocess_env(),
                         capture_output=True, text=True, timeout=HANG_SECONDS)
  lines = [line for line in child.stdout.splitlines() if line.startswith('RESULT ')]
  assert child.returncode == 0 and lines, child.stderr[-3000:]
  return json.loads(lines[-1][len('RESULT '):])


@pytest.mark.slow
def test_defaults_and_set_defaults(result):
  assert result['defaults'] == [64, '/tmp', ['LoggingTensorHook'], 'fp32', -1, 8]
  assert result['nondefault_none'] == ''


@pytest.mark.slow
def test_nondefault_flags_as_command_line(result):
  # Sorted by name; quoted where a shell needs it; booleans as --name / --noname.
  assert result['nondefault'] == (
      "--batch_size=8 --noclean '--data_dir=/my data' --hooks=a,b --use_synthetic_data")


def test_dtype_and_loss_scale(result):
  assert result['scales'] == [['float16', 'fp16-default'], ['float16', 5.0],
                              ['float16', 'dynamic'], ['bfloat16', 1], ['float32', 1]]


def test_bad_values_exit_with_usage(result):
  assert result['exits'] == [1, 1, 1, 1, 1]
  assert result['num_gpus'] == 3
