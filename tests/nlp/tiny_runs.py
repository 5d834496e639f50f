"""The test session's tiny runs: built once, when a test first asks, and shared by every file.

tests/conftest.py hands them out as fixtures (`tiny_runs` itself, `bert_run`, `modernbert_run`,
`trained_bert_run`, `trained_modernbert_run`, and `copy_run` for a test that changes one). What
there is:

- `saved(encoder)`: `tiny_run.make_tiny_run`'s model_dir (perturbed weights saved as `ckpt-2` by
  the trainer's objects): `{'model_dir', 'checkpoint', 'vocab_file'}`.
- `exported(encoder)`: the same and `export_dir`, its SavedModel export.
- `records(kind)`: the tiny corpus's records, `'bert'` (cased: `do_lower_case=False`) or `'packed'`
  (the modern recipe): `{'records', 'vocab_file'}`.
- `trained(encoder)`: 4 steps of `api.train` on those records and an evaluation:
  `{'params', 'result', 'model_dir', 'vocab_file', 'records', 'dir'}`.
- `weights(encoder)`: the encoder variables of `saved(encoder)`'s checkpoint, by name.

The directories are shared: a test that changes one copies it first (`copy_run`).

Under pytest-xdist every worker is a session of its own; the runs are still built once for all of
them: in a directory of the whole test run (`basetemp`'s parent), each under a file lock and named
by a hash of the code that builds it. A worker that finds a trained run built by another gets its
`result` back from the model_dir (the step and metrics the builder recorded, the model restored
from the checkpoint).
"""

import fcntl
import hashlib
import json
import os
import shutil
import types
from typing import Any, Callable, Dict, Mapping

from tests.paths import ROOT

# The code the runs are built with: a change to any of them names new directories.
_SOURCES = ('tests/nlp/tiny_runs.py', 'tests/nlp/serving/tiny_run.py', 'tests/testing.py')
_DONE = 'run.json'


def _code_hash() -> str:
  digest = hashlib.sha256()
  for path in _SOURCES:
    with open(os.path.join(ROOT, path), 'rb') as f:
      digest.update(f.read())
  return digest.hexdigest()[:12]


class TinyRuns:
  """Builds each tiny run on first use, once per test run, and remembers it.

  Args:
    root: the directory the runs are built in (shared by the workers of one test run).
  """

  _instances: Dict[str, 'TinyRuns'] = {}

  def __init__(self, root: str):
    self.root = root
    self._hash = _code_hash()
    self._memo: Dict[str, Mapping[str, Any]] = {}
    os.makedirs(root, exist_ok=True)

  @classmethod
  def of_session(cls, tmp_path_factory) -> 'TinyRuns':
    """The session's instance, rooted in its base temporary directory (its parent under xdist).

    Example:
      >>> TinyRuns.of_session(tmp_path_factory).exported('bert')['export_dir']
    """
    base = str(tmp_path_factory.getbasetemp())
    if os.environ.get('PYTEST_XDIST_WORKER'):  # basetemp is <run>/popen-gwN: share <run>
      base = os.path.dirname(base)
    root = os.path.join(base, 'tiny_runs')
    if root not in cls._instances:
      cls._instances[root] = cls(root)
    return cls._instances[root]

  def _entry(self, name: str, build: Callable[[str], Dict[str, Any]]) -> Mapping[str, Any]:
    """`build(directory)`'s JSON-able dict, built once into `<root>/<name>-<hash>`."""
    if name not in self._memo:
      directory = os.path.join(self.root, f'{name}-{self._hash}')
      done = os.path.join(directory, _DONE)
      with open(directory + '.lock', 'w', encoding='utf-8') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not os.path.exists(done):
          shutil.rmtree(directory, ignore_errors=True)  # a build that failed half way
          os.makedirs(directory)
          info = build(directory)
          with open(done, 'w', encoding='utf-8') as f:
            json.dump(info, f)
        with open(done, encoding='utf-8') as f:
          self._memo[name] = types.MappingProxyType(json.load(f))
    return self._memo[name]

  def saved(self, encoder: str = 'bert') -> Mapping[str, str]:
    """The tiny pretraining model_dir of `encoder` ('bert' or 'modernbert'), without an export."""
    # Function-level: this module is imported by tests/conftest.py's fixtures, which must not
    # load TensorFlow for tests that do not ask for a run.
    from tests.nlp.serving import tiny_run  # pylint: disable=g-import-not-at-top
    return self._entry(f'{encoder}_saved', lambda directory: tiny_run.make_tiny_run(
        os.path.join(directory, 'model'), encoder=encoder))

  def exported(self, encoder: str = 'bert') -> Mapping[str, str]:
    """`saved(encoder)` and `export_dir`, its SavedModel export (top_k 5)."""
    run = self.saved(encoder)

    def build(directory):
      # Function-level: see `saved`.
      from official.nlp.serving import export_savedmodel  # pylint: disable=g-import-not-at-top
      export_dir = export_savedmodel.export_from_model_dir(run['model_dir'],
                                                           os.path.join(directory, 'export'))
      return dict(run, export_dir=export_dir)

    return self._entry(f'{encoder}_exported', build)

  def records(self, kind: str = 'bert') -> Mapping[str, str]:
    """The tiny corpus's records: 'bert' (cased, next-sentence pairs) or 'packed'."""
    from tests.nlp.serving import tiny_run  # pylint: disable=g-import-not-at-top

    def build(directory):
      if kind == 'bert':
        path, vocab_file = tiny_run.write_records(directory, do_lower_case=False)
      elif kind == 'packed':
        path, vocab_file = tiny_run.write_packed_records(directory)
      else:
        raise ValueError(f"records kind must be 'bert' or 'packed', found {kind!r}")
      return {'records': path, 'vocab_file': vocab_file}

    return self._entry(f'{kind}_records', build)

  def trained(self, encoder: str = 'bert') -> Mapping[str, Any]:
    """4 steps of `api.train` of the tiny `encoder` on `records` ('bert' or 'packed') and an
    evaluation; `result` is the `api.TrainResult`."""
    from tests.nlp.serving import tiny_run  # pylint: disable=g-import-not-at-top
    records = self.records('bert' if encoder == 'bert' else 'packed')
    name = f'{encoder}_trained'
    results = {}

    def build(directory):
      model_dir = os.path.join(directory, 'model')
      _, results['result'] = tiny_run.make_trained_run(model_dir, records['records'], encoder)
      result = results['result']
      return {'model_dir': model_dir, 'dir': directory, 'step': result.step,
              'eval_logs': result.eval_logs}

    key = f'{name}_result'
    if key not in self._memo:
      info = self._entry(name, build)
      result = results.get('result') or _result_from_model_dir(info)
      params = tiny_run.trained_run_params(records['records'], encoder)
      self._memo[key] = types.MappingProxyType(dict(
          params=params, result=result, model_dir=info['model_dir'], dir=info['dir'],
          vocab_file=records['vocab_file'], records=records['records']))
    return self._memo[key]

  def weights(self, encoder: str = 'bert') -> Mapping[str, Any]:
    """The encoder's variables of `saved(encoder)`'s checkpoint, by variable name."""
    from tests.nlp.serving import tiny_run  # pylint: disable=g-import-not-at-top
    key = f'{encoder}_weights'
    if key not in self._memo:
      self._memo[key] = types.MappingProxyType(
          tiny_run.encoder_weights(self.saved(encoder)['model_dir']))
    return self._memo[key]


def _result_from_model_dir(info: Mapping[str, Any]):
  """The `api.TrainResult` of a trained run another worker built: its recorded step and metrics,
  and the model restored from the latest checkpoint."""
  # Function-level: see `TinyRuns.saved`.
  from official.nlp import api  # pylint: disable=g-import-not-at-top
  from official.nlp.serving import inference  # pylint: disable=g-import-not-at-top
  _, model, _ = inference.restore_model(info['model_dir'])
  return api.TrainResult(model=model, model_dir=info['model_dir'], step=info['step'],
                         eval_logs=dict(info['eval_logs']))
