"""Exporting SavedModels from a loop: numbered export directories, the oldest removed.

Example:
  >>> manager = ExportFileManager(f'{model_dir}/saved_model', max_to_keep=3,
  ...                             next_id_fn=trainer.global_step.numpy)
  >>> export = ExportSavedModel(model, manager, signatures=model.serve)
  >>> controller = orbit.Controller(..., eval_actions=[export])
"""

import os
import re
from typing import Callable, List, Optional

import tensorflow as tf


def safe_normpath(path: str) -> str:
  """`os.path.normpath` that keeps a URL scheme (`gs://a//b` -> `gs://a/b`)."""
  if '://' in path:
    scheme, rest = path.split('://', 1)
    return f'{scheme}://{os.path.normpath(rest)}'
  return os.path.normpath(path)


class ExportFileManager:
  """Names export paths `<base_name>-<id>[/<subdirectory>]` and keeps the newest `max_to_keep`.

  Args:
    base_name: the path prefix of the exports.
    max_to_keep: exports kept by `clean_up` (<= 0: all).
    next_id_fn: returns the id of the next export (e.g. the global step); None: one more than
      the largest existing id, counting up.
    subdirectory: a directory inside every `<base_name>-<id>` directory that holds the export;
      `clean_up` then removes only that subdirectory.
  """

  def __init__(self, base_name: str, max_to_keep: int = 5,
               next_id_fn: Optional[Callable[[], int]] = None,
               subdirectory: Optional[str] = None):
    self._base_name = safe_normpath(base_name)
    self._max_to_keep = max_to_keep
    self._subdirectory = subdirectory
    if next_id_fn is None:
      ids = [self._id_of(path) for path in self.managed_files]
      counter = iter(range(max(ids) + 1 if ids else 0, 2**62))
      next_id_fn = lambda: next(counter)
    self._next_id_fn = next_id_fn

  def _id_of(self, path: str) -> int:
    if self._subdirectory:
      path = os.path.dirname(path)
    return int(path.rsplit('-', 1)[-1])

  @property
  def managed_files(self) -> List[str]:
    """The existing exports, sorted by id (oldest first)."""
    pattern = f'{self._base_name}-*'
    if self._subdirectory:
      pattern = os.path.join(pattern, self._subdirectory)
    id_pattern = re.compile(re.escape(self._base_name) + r'-(\d+)$')
    files = []
    for path in tf.io.gfile.glob(pattern):
      path = safe_normpath(path)
      head = os.path.dirname(path) if self._subdirectory else path
      if id_pattern.match(head):
        files.append(path)
    return sorted(files, key=self._id_of)

  def clean_up(self) -> None:
    """Removes the oldest exports beyond `max_to_keep`."""
    if self._max_to_keep <= 0:
      return
    files = self.managed_files
    for path in files[:max(len(files) - self._max_to_keep, 0)]:
      if tf.io.gfile.isdir(path):
        tf.io.gfile.rmtree(path)
      else:
        tf.io.gfile.remove(path)

  def next_name(self) -> str:
    """The path of the next export."""
    name = f'{self._base_name}-{int(self._next_id_fn())}'
    if self._subdirectory:
      name = os.path.join(name, self._subdirectory)
    return name


class ExportSavedModel:
  """An action exporting `model` as a SavedModel at the file manager's next name.

  Args:
    model: the `tf.Module` to export.
    file_manager: names the exports and removes old ones.
    signatures: the serving signatures (as for `tf.saved_model.save`).
    options: `tf.saved_model.SaveOptions`.
  """

  def __init__(self, model: tf.Module, file_manager: ExportFileManager, signatures,
               options: Optional[tf.saved_model.SaveOptions] = None):
    self.model = model
    self.file_manager = file_manager
    self.signatures = signatures
    self.options = options

  def __call__(self, _) -> str:
    """Exports the model; returns the export path."""
    path = self.file_manager.next_name()
    tf.saved_model.save(self.model, path, self.signatures, self.options)
    self.file_manager.clean_up()
    return path
