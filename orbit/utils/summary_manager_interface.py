"""The interface of summary managers (what `Controller` needs to write summaries)."""

import abc
from typing import Any, Dict


class SummaryManagerInterface(abc.ABC):
  """Writes (nested) dicts of values as summaries; subclass it to log elsewhere."""

  @abc.abstractmethod
  def flush(self) -> None:
    """Flushes pending summaries to storage."""

  @abc.abstractmethod
  def summary_writer(self, relative_path: str = ''):
    """The `tf.summary` writer of a subdirectory ('' for the summary directory itself)."""

  @abc.abstractmethod
  def write_summaries(self, summary_dict: Dict[str, Any]) -> None:
    """Writes every value of `summary_dict`; a nested dict goes to a subdirectory named by its
    key."""
