"""Tests of tests/processes.py: the shared child with two logical CPUs."""

import pytest
from tests.processes import run_on_two_cpus


@pytest.mark.slow
def test_run_on_two_cpus_runs_code_as_python_c_with_two_cpus():
  result = run_on_two_cpus("import tensorflow as tf\n"
                           "print(len(tf.config.list_logical_devices('CPU')))\n"
                           "x = 1")
  assert (result.returncode, result.stdout, result.stderr) == (0, '2\n', '')
  # Each call has fresh globals; an exception is a traceback and exit status 1.
  result = run_on_two_cpus('print(x)')
  assert result.returncode == 1 and "NameError: name 'x' is not defined" in result.stderr
  result = run_on_two_cpus('import sys\nprint("out")\nsys.exit(3)')
  assert (result.returncode, result.stdout) == (3, 'out\n')


def test_the_two_cpu_child_iterates_without_the_autotuner():
  result = run_on_two_cpus(
      'import tensorflow as tf\n'
      'from tensorflow.python.data.ops import dataset_ops\n'
      'dataset = dataset_ops.DatasetV2._apply_debug_options(tf.data.Dataset.range(3))\n'
      'print(dataset.options().autotune.enabled)')
  assert (result.returncode, result.stdout) == (0, 'False\n'), result.stderr


def test_turn_off_patches_the_iterators_of_this_process_once():
  import tensorflow as tf
  from tensorflow.python.data.ops import dataset_ops

  from tests import tf_data_autotune
  assert tf_data_autotune.turn_off()
  patched = dataset_ops.DatasetV2._apply_debug_options
  assert tf_data_autotune.turn_off() and dataset_ops.DatasetV2._apply_debug_options is patched
  options = tf.data.Options()
  options.deterministic = False
  dataset = patched(tf.data.Dataset.range(3).with_options(options))
  assert dataset.options().autotune.enabled is False
  assert dataset.options().deterministic is False
  assert list(dataset.as_numpy_iterator()) == [0, 1, 2]
