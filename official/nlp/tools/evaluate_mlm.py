"""Held-out masked-LM loss and accuracy of a pretraining run's checkpoint on any record sets.

The run's model is built from its `params.yaml`, the checkpoint restored, and each record set read
as the run's own evaluation reads its validation data (records in file order, the last batch
partial, no next-sentence labels; packed records with their position ids): the metrics are the
masked-LM task's (`lm_example_loss`: the mean over batches of each batch's weighted mean
cross-entropy, nats; `masked_lm_accuracy` over all masked positions), so a record set that is the
run's validation data gives its last evaluation's figures.

Usage:
  python -m official.nlp.tools.evaluate_mlm --model_dir=runs/mini \
      --input_paths=in_domain=data/held_out.tfrecord,ood=data/ood.tfrecord --output_json=eval.json

Example:
  >>> evaluate_checkpoint('runs/mini', {'ood': 'data/ood.tfrecord'})
  {'ood': {'lm_example_loss': 4.91, 'masked_lm_accuracy': 0.29, 'masked_targets': 30112, ...}}
"""

import argparse
import json
import os
import sys
from typing import Dict, Mapping, Optional, Sequence

import tensorflow as tf

from official.common import cli_utils
from official.common import file_utils
from official.core import checkpointing
from official.core import task_factory
from official.modeling import performance
from official.nlp.data import data_metadata
from official.nlp.serving import inference


def evaluate_checkpoint(model_dir: str, input_paths: Mapping[str, str], batch_size: int = 32,
                        checkpoint: Optional[str] = None) -> Dict[str, Dict[str, float]]:
  """Evaluates a pretraining run's checkpoint on each record set.

  Args:
    model_dir: a `bert/pretraining` model_dir (params.yaml + checkpoints).
    input_paths: name -> masked-LM TFRecords with their metadata file (any masking rate, packed
      or not; their sizes come from the metadata).
    batch_size: records a batch (the loss is a mean over batches).
    checkpoint: a checkpoint prefix (default: the latest in `model_dir`).

  Returns:
    `{name: {'lm_example_loss', 'masked_lm_accuracy', 'masked_targets', 'records'}}`, plus
    `'checkpoint'` and `'step'` (the checkpoint's global step; None for a converted checkpoint,
    which has none) under each name.

  Raises:
    FileNotFoundError: no params.yaml, checkpoint or records.
    ValueError: records without a metadata file (naming it).

  Example:
    >>> evaluate_checkpoint('runs/mini', {'in_domain': 'data/held_out.tfrecord'})['in_domain']
    {'lm_example_loss': 4.09, 'masked_lm_accuracy': 0.36, 'masked_targets': 30412, ...}
  """
  params = inference.load_experiment_params(model_dir)
  performance.set_mixed_precision_policy(params.runtime.mixed_precision_dtype)
  params, model, path = inference.restore_model(model_dir, checkpoint)
  try:
    step = checkpointing.read_global_step_from_checkpoint(path)
  except ValueError:  # a converted checkpoint (Hugging Face, Google BERT) has no training step
    step = None
  task = task_factory.get_task(params.task)
  results = {}
  for name, input_path in input_paths.items():
    metadata = data_metadata.load_metadata(input_path)
    if not metadata:
      raise ValueError(f'{input_path}: no metadata file ({data_metadata.metadata_path(input_path)})'
                       '; expected records written by create_pretraining_data')
    data = params.task.validation_data.replace(
        input_path=input_path, global_batch_size=batch_size, is_training=False,
        drop_remainder=False, seq_length=metadata['max_seq_length'],
        max_predictions_per_seq=metadata['max_predictions_per_seq'],
        use_next_sentence_label=False, use_position_id=bool(metadata.get('packed')),
        use_v2_feature_names='input_word_ids' in metadata.get('feature_names', ()))
    metrics = task.build_metrics(training=False)
    step_fn = tf.function(lambda batch: task.validation_step(batch, model, metrics))
    targets, records = 0.0, 0
    for batch in task.build_inputs(data):
      step_fn(batch)
      targets += float(tf.reduce_sum(batch['masked_lm_weights']))
      records += int(batch['masked_lm_weights'].shape[0])
    logs = {metric.name: float(metric.result()) for metric in metrics}
    results[name] = dict(lm_example_loss=logs['lm_example_loss'],
                         masked_lm_accuracy=logs['masked_lm_accuracy'],
                         masked_targets=int(targets), records=records, checkpoint=path,
                         step=step)
  return results


def _parse_input_paths(text: str) -> Dict[str, str]:
  """`name=path,name=path` -> `{name: path}`, else a ValueError naming the flag."""
  paths = {}
  for item in filter(None, (part.strip() for part in text.split(','))):
    name, equals, path = item.partition('=')
    if not equals or not name or not path:
      raise ValueError(f'--input_paths: expected name=path[,name=path...], found {item!r}')
    paths[name] = path
  if not paths:
    raise ValueError('--input_paths: expected name=path[,name=path...], found nothing')
  return paths


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Dict[str, float]]:
  """Parses the flags, evaluates, prints the results as JSON (and writes `--output_json`)."""
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--model_dir', required=True, help='a bert/pretraining model_dir')
  parser.add_argument('--input_paths', required=True,
                      help='name=path[,name=path...]: masked-LM TFRecords with metadata')
  parser.add_argument('--batch_size', type=int, default=32)
  parser.add_argument('--checkpoint', default=None, help='default: the latest of --model_dir')
  parser.add_argument('--output_json', default=None, help='also write the results here')
  parser.add_argument('--experiment_module', action='append', default=[],
                      help='a module to import first for what it registers (an encoder family '
                      'the run trained with, as train.py --experiment_module); repeatable')
  args = parser.parse_args(argv)
  try:
    cli_utils.import_experiment_modules(args.experiment_module)
    results = evaluate_checkpoint(args.model_dir, _parse_input_paths(args.input_paths),
                                  args.batch_size, args.checkpoint)
  except (ValueError, FileNotFoundError) as e:
    print(f'error: {e}', file=sys.stderr)
    sys.exit(2)
  text = json.dumps(results, indent=2)
  if args.output_json:
    os.makedirs(os.path.dirname(os.path.abspath(args.output_json)), exist_ok=True)
    file_utils.atomic_write_text(args.output_json, text + '\n')
  print(text)
  return results


if __name__ == '__main__':
  main()
