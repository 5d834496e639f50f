"""Test-wide settings (quiet TensorFlow logs, the repository root on sys.path) and the session's
tiny runs as fixtures.

The runs (tests/nlp/tiny_runs.py) are built once per test run, when a test first asks for one,
and shared by every file: a test must not change their directories; `copy_run` gives it a copy.

Example:
  >>> def test_export_reloads(bert_run):
  ...   loaded = tf.saved_model.load(bert_run['export_dir'])
  >>> def test_resume(trained_bert_run, copy_run):
  ...   model_dir = copy_run(trained_bert_run)['model_dir']  # ours to change
"""

import logging
import os
import shutil
import sys

import pytest

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)

from tests import tf_data_autotune  # noqa: E402  (needs ROOT on sys.path)


def pytest_xdist_auto_num_workers(config):  # pylint: disable=unused-argument
  """`pytest -n auto` (make test): one worker a core this process may use, at most 4 (each
  worker imports its own TensorFlow and builds its own models)."""
  return max(1, min(len(os.sched_getaffinity(0)), 4))


@pytest.fixture(autouse=True)
def _restore_process_wide_settings():
  """Undoes what a test leaves set for the whole process (an in-process CLI or training run sets
  the Keras dtype policy and the log levels), so that no test depends on the ones before it in
  its process (`pytest -n` gives each worker another order).

  Restored after each test: Keras' global dtype policy, the root logger's level, absl's verbosity.
  """
  root_level = logging.getLogger().level
  absl_logging = sys.modules.get('absl.logging')
  verbosity = absl_logging.get_verbosity() if absl_logging else None
  yield
  logging.getLogger().setLevel(root_level)
  if absl_logging is not None:
    absl_logging.set_verbosity(verbosity)
  keras = sys.modules.get('tf_keras')
  if keras is not None and keras.mixed_precision.global_policy().name != 'float32':
    keras.mixed_precision.set_global_policy('float32')


@pytest.fixture(autouse=True)
def _tf_data_without_autotune():
  """`tests.tf_data_autotune.turn_off` once TensorFlow is imported (before or during a test)."""
  tf_data_autotune.turn_off()
  yield
  tf_data_autotune.turn_off()


def _custom_gradient_release():
  """`official.modeling.custom_gradient_release` once TensorFlow is imported, else None (before
  that no custom gradient can be registered, and collecting a file must not import TensorFlow)."""
  if 'tensorflow' not in sys.modules:
    return None
  from official.modeling import custom_gradient_release  # pylint: disable=g-import-not-at-top
  return custom_gradient_release


@pytest.fixture(autouse=True, scope='module')
def _release_traced_graphs():
  """Lets the graphs a test file traced go when the file is done: TensorFlow keeps every graph
  that used a `tf.custom_gradient` (`official.modeling.custom_gradient_release`), and a worker
  runs hundreds of files' models (it grew to 4-5 GB and its garbage collections slowed)."""
  release = _custom_gradient_release()
  before = release.custom_gradient_names() if release else []
  yield
  release = _custom_gradient_release()
  if release:
    release.drop_custom_gradients(keep=before)


@pytest.fixture(name='tiny_runs', scope='session')
def _tiny_runs(tmp_path_factory):
  """The session's `tests.nlp.tiny_runs.TinyRuns`: `saved`, `exported`, `trained`, `records`,
  `weights` of 'bert' or 'modernbert', each built on first use."""
  # Function-level: keeps TensorFlow out of the collection of tests that need no run.
  from tests.nlp import tiny_runs  # pylint: disable=g-import-not-at-top
  return tiny_runs.TinyRuns.of_session(tmp_path_factory)


@pytest.fixture(name='bert_run', scope='session')
def _bert_run(tiny_runs):
  """The tiny BERT's pretraining model_dir (`ckpt-2`) and its SavedModel export:
  `{'model_dir', 'checkpoint', 'vocab_file', 'export_dir'}`."""
  return tiny_runs.exported('bert')


@pytest.fixture(name='modernbert_run', scope='session')
def _modernbert_run(tiny_runs):
  """The tiny ModernBERT's pretraining model_dir (`ckpt-2`, masked LM only) and its export."""
  return tiny_runs.exported('modernbert')


@pytest.fixture(name='trained_bert_run', scope='session')
def _trained_bert_run(tiny_runs):
  """The tiny BERT trained 4 steps by `api.train` on the cased tiny records, then evaluated:
  `{'params', 'result', 'model_dir', 'vocab_file', 'records', 'dir'}`."""
  return tiny_runs.trained('bert')


@pytest.fixture(name='trained_modernbert_run', scope='session')
def _trained_modernbert_run(tiny_runs):
  """The tiny ModernBERT trained 4 steps by `api.train` on packed records, then evaluated."""
  return tiny_runs.trained('modernbert')


@pytest.fixture(name='copy_run')
def _copy_run(tmp_path):
  """`copy_run(run, *keys)`: the run's dict with its directories `keys` (default `model_dir`)
  copied into the test's `tmp_path`, for a test that changes them.

  Example:
    >>> run = copy_run(bert_run, 'model_dir', 'export_dir')
  """
  def copy(run, *keys):
    copied = dict(run)
    for key in keys or ('model_dir',):
      target = tmp_path / f'copy_of_{key}'
      shutil.copytree(run[key], target)
      copied[key] = str(target)
      if key == 'model_dir' and 'checkpoint' in run:  # the same checkpoint, in the copy
        copied['checkpoint'] = os.path.join(str(target), os.path.basename(run['checkpoint']))
    return copied
  return copy
