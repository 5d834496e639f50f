"""The config fields that pretraining records describe, taken from their metadata file.

`create_pretraining_data` writes `<name>.metadata.json` beside the records (`data_metadata`). It
knows the sequence length, the predictions per sequence, whether rows are packed (and so carry
`position_ids`), the feature names and the vocabulary size, so the user need not type them:
`fill_from_records` sets them in the experiment config from the records of `task.train_data` and
`task.validation_data`, and names the held-out set written with `--validation_fraction` as
`task.validation_data.input_path` when that is empty.

Precedence: experiment defaults < config files < the records' metadata < `--params_override`. The
data fields of a config file (the shipped YAMLs set them for records made without metadata) give
way to what the records say; a value given in `params_override` that disagrees with the records is
refused, as the loaders refuse it.

Example:
  >>> params = train_utils.build_params('bert/pretraining', ['modernbert_mini.yaml'],
  ...                                   'task.train_data.input_path=data/train.tfrecord*')
  >>> fill_from_records(params, protected=override_keys('task.train_data.input_path=...'))
  ['data/train.metadata.json: seq_length=128, max_predictions_per_seq=38, ...']
"""

import os
from typing import Any, Collection, Dict, List, Mapping, Optional, Set, Tuple, Union

from official.common import file_utils
from official.modeling import hyperparams
from official.nlp.data import data_metadata
from official.nlp.data import pretrain_dataloader

# Data config field <- metadata key.
_DATA_FIELDS = (('seq_length', 'max_seq_length'),
                ('max_predictions_per_seq', 'max_predictions_per_seq'),
                ('use_position_id', 'packed'),
                ('use_v2_feature_names', 'use_v2_feature_names'))


def override_keys(overrides: Union[None, str, Mapping[str, Any]]) -> Set[str]:
  """The dotted keys an override sets (any form `hyperparams.parse_override` takes).

  Example:
    >>> sorted(override_keys('task.train_data.seq_length=128,trainer.train_steps=5'))
    ['task.train_data.seq_length', 'trainer.train_steps']
  """
  keys: Set[str] = set()

  def walk(node: Mapping[str, Any], prefix: str) -> None:
    for key, value in node.items():
      path = f'{prefix}{key}'
      keys.add(path)
      if isinstance(value, Mapping):
        walk(value, path + '.')

  walk(hyperparams.parse_override(overrides), '')
  # Dotted keys of a mapping (`{'task.train_data.seq_length': 128}`) name their parents too.
  return {'.'.join(k.split('.')[:i]) for k in keys for i in range(1, k.count('.') + 2)}


def _records_metadata(data_config: Any) -> Optional[Dict[str, Any]]:
  """The metadata of a pretraining data config's records, or None (no records, no metadata)."""
  if not isinstance(data_config, pretrain_dataloader.BertPretrainDataConfig):
    return None
  path = data_config.input_path
  if not path or path == 'dummy' or (not isinstance(path, str) and not list(path)):
    return None
  return data_metadata.load_metadata(path)


def _relative_to(metadata: Mapping[str, Any], names: List[str]) -> str:
  directory = os.path.dirname(metadata['metadata_path'])
  return ','.join(file_utils.join_relative(directory, name) for name in names)


def _take(params: Any, section: str, metadata: Mapping[str, Any], protected: Collection[str],
          taken: List[str]) -> None:
  """Sets `task.<section>`'s data fields from `metadata`; appends `field=value` to `taken`."""
  data_config = getattr(params.task, section)
  updates = {}
  for field, key in _DATA_FIELDS:
    if key not in metadata or not hasattr(data_config, field):
      continue
    value = metadata[key]
    if field == 'max_predictions_per_seq' and metadata.get('dynamic'):
      continue  # masks are drawn while training: the config's budget stands
    _check_protected(f'task.{section}.{field}', getattr(data_config, field), value, key,
                     metadata, protected)
    updates[field] = value
    taken.append(_described(field, getattr(data_config, field), value))
  params.override({'task': {section: updates}}, is_strict=True)


def _described(field: str, old: Any, new: Any) -> str:
  shown = str(new).lower() if isinstance(new, bool) else new
  if old == new:
    return f'{field}={shown}'
  return f'{field}={shown} (the config had {str(old).lower() if isinstance(old, bool) else old})'


def _check_protected(key: str, configured: Any, value: Any, metadata_key: str,
                     metadata: Mapping[str, Any], protected: Collection[str]) -> None:
  if key in protected and configured != value:
    raise ValueError(
        f'{key} is {configured!r} in params_override but the records were written with '
        f"{metadata_key}={value!r} ({metadata['metadata_path']}); make them match, or leave "
        f'{key.rsplit(".", 1)[-1]} out to take it from the records')


def _encoder_config(params: Any) -> Tuple[Optional[str], Any]:
  """`('task.model.encoder.<type>', its config)`, or `(None, None)` for a task without one."""
  model = getattr(params.task, 'model', None)
  encoder = getattr(model, 'encoder', None)
  if encoder is None or not hasattr(encoder, 'get') or not getattr(encoder, 'type', None):
    return None, None
  return f'task.model.encoder.{encoder.type}', encoder.get()


def fill_from_records(params: Any, protected: Collection[str] = ()) -> List[str]:
  """Sets the fields the pretraining records' metadata knows; returns one line per metadata file.

  Args:
    params: the experiment config (not locked), changed in place.
    protected: dotted keys the user gave in `params_override` (`override_keys`): such a value
      that disagrees with the records raises instead of giving way.

  Returns:
    Lines saying what was taken, e.g. `data/train.metadata.json: seq_length=128, vocab_size=8000
    (the config had 30522)`; empty when no data config has records with metadata.

  Raises:
    ValueError: a protected value disagrees with the records, naming the key, both values and
      the metadata file.
  """
  task = getattr(params, 'task', None)
  if task is None or not hasattr(task, 'train_data'):
    return []
  lines = []
  train = _records_metadata(task.train_data)
  if train is not None:
    taken: List[str] = []
    _take(params, 'train_data', train, protected, taken)
    prefix, encoder = _encoder_config(params)
    if encoder is not None and hasattr(encoder, 'vocab_size') and 'vocab_size' in train:
      _check_protected(f'{prefix}.vocab_size', encoder.vocab_size, train['vocab_size'],
                       'vocab_size', train, protected)
      taken.append(_described(f'{prefix}.vocab_size', encoder.vocab_size, train['vocab_size']))
      params.override({'task': {'model': {'encoder': {
          params.task.model.encoder.type: {'vocab_size': train['vocab_size']}}}}}, is_strict=True)
    validation = getattr(params.task, 'validation_data', None)
    if (train.get('validation_files') and validation is not None
        and isinstance(validation, pretrain_dataloader.BertPretrainDataConfig)
        and not validation.input_path and 'task.validation_data.input_path' not in protected):
      path = _relative_to(train, train['validation_files'])
      params.override({'task': {'validation_data': {'input_path': path}}}, is_strict=True)
      taken.append(f'task.validation_data.input_path={path} (the held-out documents)')
    lines.append(f"{train['metadata_path']}: {', '.join(taken)}")
  # (`override` may replace the sub-configs: read them from `params` again.)
  validation = _records_metadata(getattr(params.task, 'validation_data', None))
  if validation is not None:
    taken = []
    _take(params, 'validation_data', validation, protected, taken)
    lines.append(f"{validation['metadata_path']}: {', '.join(taken)}")
  return lines
