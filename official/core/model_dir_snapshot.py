"""What a `model_dir` held before a training run started, to put back when the start fails.

A run that fails before its first step (data that does not match the config, a bad init
checkpoint, ...) must not leave `params.yaml`, vocabulary assets or empty summary directories
behind: the corrected rerun would otherwise find "a run with another config" in a directory where
nothing was ever trained. `ModelDirSnapshot.take` notes the directory's top-level entries and the
bytes of its `params.yaml`; `put_back` removes what the run added and restores `params.yaml`, but
only while the directory holds no checkpoint.

Example:
  snapshot = ModelDirSnapshot.take('runs/mine')
  try:
    run()
  except Exception:
    snapshot.put_back()
    raise
"""

import dataclasses
import logging
import os
import shutil
from typing import FrozenSet, Optional

import tensorflow as tf

PARAMS_NAME = 'params.yaml'


@dataclasses.dataclass(frozen=True)
class ModelDirSnapshot:
  """A `model_dir`'s state before a run (local directories only; see `take`).

  Attributes:
    model_dir: the directory.
    existed: whether it existed.
    entries: its top-level names then.
    params_yaml: the bytes of its `params.yaml` then, or None.
  """
  model_dir: str
  existed: bool
  entries: FrozenSet[str]
  params_yaml: Optional[bytes]

  @classmethod
  def take(cls, model_dir: str) -> Optional['ModelDirSnapshot']:
    """The state of `model_dir` now; None for a remote path (`gs://...`), which is left alone."""
    if '://' in model_dir:
      return None
    if not os.path.isdir(model_dir):
      return cls(model_dir, False, frozenset(), None)
    params = os.path.join(model_dir, PARAMS_NAME)
    content = None
    if os.path.isfile(params):
      with open(params, 'rb') as f:
        content = f.read()
    return cls(model_dir, True, frozenset(os.listdir(model_dir)), content)

  def put_back(self) -> bool:
    """Puts the directory back as it was, unless it now holds a checkpoint.

    Returns:
      Whether anything was put back.
    """
    if not os.path.isdir(self.model_dir) or tf.train.latest_checkpoint(self.model_dir):
      return False
    added = sorted(set(os.listdir(self.model_dir)) - self.entries)
    for name in added:
      path = os.path.join(self.model_dir, name)
      if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
      else:
        os.remove(path)
    params = os.path.join(self.model_dir, PARAMS_NAME)
    if self.params_yaml is not None:
      with open(params, 'rb') as f:
        changed = f.read() != self.params_yaml
      if changed:
        with open(params, 'wb') as f:
          f.write(self.params_yaml)
        added.append(f'{PARAMS_NAME} (restored)')
    if not self.existed:
      try:
        os.rmdir(self.model_dir)
      except OSError:
        pass
    if added:
      logging.info('the run failed before its first step: %s is left as it was (removed %s)',
                   self.model_dir, ', '.join(added))
    return bool(added)
