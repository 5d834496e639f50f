"""Test processes iterate tf.data without the autotuner, as the trainer and the tools do
(`official.core.dataset_options`).

An autotuned iterator's deletion, often by the garbage collector during a later test, can wait up
to a minute for its model thread (in the suite, 2026-11-28: single collections of 40-49 s, 110 s
of one worker's 960 s). `tests/conftest.py` calls `turn_off` in every pytest process, and the
shared two-CPU child (`tests/processes.run_on_two_cpus`) calls it once.

Example:
  >>> import tensorflow as tf
  >>> turn_off()
  True
"""

import sys


def turn_off() -> bool:
  """Makes every tf.data iterator this process creates from now on run without the autotuner.

  Returns:
    Whether tf.data is patched (False while TensorFlow is not imported yet: nothing to patch).
  """
  if 'tensorflow' not in sys.modules:
    return False
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow.python.data.ops import dataset_ops  # pylint: disable=g-import-not-at-top
  original = dataset_ops.DatasetV2._apply_debug_options  # pylint: disable=protected-access
  if getattr(original, 'without_autotune', False):
    return True

  def apply_debug_options(dataset):
    options = tf.data.Options()
    options.autotune.enabled = False
    return original(dataset.with_options(options))

  apply_debug_options.without_autotune = True
  # Every iterator (eager `iter`, tf.distribute's per-device iterators) calls this on its dataset.
  dataset_ops.DatasetV2._apply_debug_options = apply_debug_options  # pylint: disable=protected-access
  return True
