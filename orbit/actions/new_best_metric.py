"""`NewBestMetric`: a condition true when a metric beats its best value so far (optionally
persisted as JSON, so the best value survives restarts)."""

import json
import os
from typing import Any, Callable, Optional, Union

import tensorflow as tf

from orbit import runner
from orbit.utils import common

MetricFn = Callable[[runner.Output], Union[float, tf.Tensor]]


class JSONPersistedValue:
  """A value kept in a JSON file: read from the file when it has one, written back on `write`.

  Args:
    initial_value: the value when the file is missing or empty (written to it then, if
      `write_value`).
    filename: the JSON file.
    write_value: write to the file (False: read only, e.g. on all but one worker).

  Example:
    >>> best = JSONPersistedValue(float('-inf'), '/tmp/run/best.json')
    >>> best.write(0.91); best.read()   # 0.91, also after a restart
  """

  def __init__(self, initial_value: Any, filename: str, write_value: bool = True):
    self._filename = filename
    self._write_value = write_value
    self._value = None
    if tf.io.gfile.exists(filename):
      with tf.io.gfile.GFile(filename, 'r') as f:
        text = f.read()
      if text.strip():
        self._value = json.loads(text)
    if self._value is None:
      self.write(initial_value)

  def read(self) -> Any:
    """The current value."""
    return self._value

  def write(self, value: Any) -> None:
    """Sets the value and (with `write_value`) writes it to the file, creating its directory."""
    self._value = value
    if self._write_value:
      directory = os.path.dirname(self._filename)
      if directory:
        tf.io.gfile.makedirs(directory)
      with tf.io.gfile.GFile(self._filename, 'w') as f:
        f.write(json.dumps(value))


class NewBestMetric:
  """Tells whether outputs hold a new best value of a metric; `commit` records it.

  Calling the instance is `commit`, so it can serve as a `ConditionalAction` condition that
  remembers what passed.

  Args:
    metric: the output key of the metric, or `fn(output)` computing it.
    higher_is_better: whether larger values are better.
    filename: a JSON file persisting the best value (None: kept in memory).
    write_metric: write the file (False: only read it).

  Example:
    >>> best = NewBestMetric('accuracy')
    >>> best({'accuracy': 0.8}), best({'accuracy': 0.7})   # (True, False)
  """

  def __init__(self, metric: Union[str, MetricFn], higher_is_better: bool = True,
               filename: Optional[str] = None, write_metric: bool = True):
    self.metric = metric
    self.higher_is_better = higher_is_better
    worst = float('-inf') if higher_is_better else float('inf')
    self._best = (JSONPersistedValue(worst, filename, write_value=write_metric)
                  if filename else None)
    self._best_in_memory = worst

  def __call__(self, output: runner.Output) -> bool:
    return self.commit(output)

  def metric_value(self, output: runner.Output) -> float:
    """The metric's value in `output` as a Python float."""
    value = self.metric(output) if callable(self.metric) else output[self.metric]
    return float(common.get_value(value))

  @property
  def best_value(self) -> float:
    """The best value committed so far (-inf/+inf before any)."""
    return float(self._best.read()) if self._best is not None else self._best_in_memory

  def test(self, output: runner.Output) -> bool:
    """Whether `output`'s metric is strictly better than the best value (nothing is recorded)."""
    value = self.metric_value(output)
    return value > self.best_value if self.higher_is_better else value < self.best_value

  def commit(self, output: runner.Output) -> bool:
    """Records `output`'s metric as the best when it is better; returns whether it was."""
    if not self.test(output):
      return False
    value = self.metric_value(output)
    if self._best is not None:
      self._best.write(value)
    self._best_in_memory = value
    return True
