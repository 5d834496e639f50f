"""Reads TensorBoard scalars of a run and plots training curves (loss, MLM accuracy) to a PNG.

Example:
  >>> scalars = read_scalars('runs/bert_tiny/train')
  >>> scalars['training_loss'][:2]
  [(100, 9.8), (200, 8.1)]
  >>> plot_training_curves('runs/bert_tiny', 'runs/bert_tiny/training_curves.png')
"""

import collections
import os
from typing import Dict, List, Tuple

import tensorflow as tf

Series = List[Tuple[int, float]]


def read_scalars(log_dir: str) -> Dict[str, Series]:
  """Every scalar summary in the event files of `log_dir`, as `{tag: [(step, value), ...]}`."""
  return {tag: [(step, value) for step, _, value in series]
          for tag, series in read_scalar_events(log_dir).items()}


def read_scalar_events(log_dir: str) -> Dict[str, List[Tuple[int, float, float]]]:
  """Every scalar summary of `log_dir` with its wall time: `{tag: [(step, wall_time, value)]}`.

  Sorted by step (then wall time); `wall_time` is the event's Unix time in seconds, for curves
  against wall-clock time.

  Example:
    >>> read_scalar_events('runs/bert_tiny/validation')['lm_example_loss'][0]
    (1000, 1764160000.5, 4.1)
  """
  scalars = collections.defaultdict(list)
  for path in sorted(tf.io.gfile.glob(os.path.join(log_dir, 'events.out.tfevents.*'))):
    for record in tf.data.TFRecordDataset(path):
      event = tf.compat.v1.Event.FromString(record.numpy())
      for value in event.summary.value:
        if value.HasField('simple_value'):
          number = value.simple_value
        elif value.HasField('tensor'):
          number = float(tf.make_ndarray(value.tensor))
        else:
          continue
        scalars[value.tag].append((int(event.step), float(event.wall_time), float(number)))
  return {tag: sorted(series) for tag, series in scalars.items()}


def plot_training_curves(model_dir: str, output_path: str,
                         validation_subdir: str = 'validation') -> str:
  """Plots training/validation loss and masked-LM accuracy against step into `output_path`.

  Args:
    model_dir: a run's model_dir with `train/` (and `validation/`) summaries.
    output_path: the PNG to write.
    validation_subdir: the evaluation summaries' subdirectory.

  Returns:
    `output_path`.
  """
  # Function-level: matplotlib is an optional dependency (the [plot] extra).
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top  # Function-level: as above.

  train = read_scalars(os.path.join(model_dir, 'train'))
  validation = read_scalars(os.path.join(model_dir, validation_subdir))
  figure, (loss_axes, accuracy_axes) = pyplot.subplots(1, 2, figsize=(11, 4))
  for axes, tags, title in ((loss_axes, ('training_loss', 'validation_loss', 'loss'), 'loss'),
                            (accuracy_axes, ('masked_lm_accuracy',), 'masked-LM accuracy')):
    for label, scalars in (('train', train), ('validation', validation)):
      for tag in tags:
        if scalars.get(tag):
          steps, values = zip(*scalars[tag])
          axes.plot(steps, values, marker='.', label=f'{label} {tag}')
          break
    axes.set_xlabel('step')
    axes.set_title(title)
    axes.grid(alpha=0.3)
    if axes.lines:
      axes.legend()
  figure.tight_layout()
  figure.savefig(output_path, dpi=100)
  pyplot.close(figure)
  return output_path
