"""Tests of tests/processes.py: the shared child with two logical CPUs."""

from tests.processes import run_on_two_cpus


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
