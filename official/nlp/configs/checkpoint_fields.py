"""The encoder a fine-tuning config restores, taken from the `init_checkpoint`'s own `params.yaml`.

A pretraining model_dir (ours, or one `convert_checkpoint` wrote) saves its experiment config as
`params.yaml` beside the `ckpt-N` files. When `task.init_checkpoint` names such a directory (or a
checkpoint in it), the encoder's architecture is known: `fill_encoder_from_checkpoint` sets
`task.model.encoder` to it, so that `configs/finetuning/*_tiny.yaml` fine-tunes a `bert_mini`, a
ModernBERT or a converted Hugging Face model without the user restating its sizes. The config
keeps its own dropout rates (fine-tuning settings) when the encoder type is the same.

Precedence: experiment defaults < config files < the checkpoint's encoder < `--params_override`.
An encoder field given in `params_override` that disagrees with the checkpoint is refused (the
restore would fail on the variables' shapes).

Example:
  >>> params = train_utils.build_params('bert/sentence_prediction',
  ...     ['configs/finetuning/sentence_prediction_tiny.yaml'], 'task.init_checkpoint=runs/mini')
  >>> fill_encoder_from_checkpoint(params)
  ['runs/mini/params.yaml: task.model.encoder.bert: hidden_size=256 (the config had 128), ...']
"""

import os
from typing import Any, Collection, Dict, List, Optional

import yaml

PARAMS_NAME = 'params.yaml'
# Fields of the config's encoder kept when the checkpoint's is of the same type: they are
# fine-tuning settings, not the architecture.
KEPT_FIELDS = frozenset(['dropout_rate', 'attention_dropout_rate'])


def checkpoint_params_path(init_checkpoint: str) -> Optional[str]:
  """The `params.yaml` of the model_dir `init_checkpoint` names (the directory or a `ckpt-N`
  prefix in it), or None when there is none (e.g. a Google BERT checkpoint).

  Example:
    >>> checkpoint_params_path('runs/mini/ckpt-500')
    'runs/mini/params.yaml'
  """
  if not init_checkpoint:
    return None
  directory = init_checkpoint if os.path.isdir(init_checkpoint) else os.path.dirname(
      init_checkpoint)
  path = os.path.join(directory, PARAMS_NAME)
  return path if os.path.isfile(path) else None


def _saved_encoder(path: str) -> Optional[Dict[str, Any]]:
  with open(path, encoding='utf-8') as f:
    saved = yaml.safe_load(f) or {}
  encoder = ((saved.get('task') or {}).get('model') or {}).get('encoder')
  if not isinstance(encoder, dict) or not isinstance(encoder.get(encoder.get('type')), dict):
    return None
  return encoder


def fill_encoder_from_checkpoint(params: Any, protected: Collection[str] = ()) -> List[str]:
  """Sets `task.model.encoder` to the encoder of `task.init_checkpoint`'s `params.yaml`.

  Args:
    params: the experiment config (not locked), changed in place.
    protected: dotted keys the user gave in `params_override` (`record_fields.override_keys`):
      an encoder field among them that disagrees with the checkpoint raises.

  Returns:
    One line saying what changed (empty when nothing did: no init_checkpoint, no params.yaml
    beside it, no encoder in it, or the same encoder already).

  Raises:
    ValueError: a protected encoder field disagrees with the checkpoint, naming the key, both
      values and the params.yaml.
  """
  task = getattr(params, 'task', None)
  model = getattr(task, 'model', None)
  encoder_config = getattr(model, 'encoder', None)
  if encoder_config is None or not hasattr(encoder_config, 'get'):
    return []
  path = checkpoint_params_path(str(getattr(task, 'init_checkpoint', '') or ''))
  saved = _saved_encoder(path) if path else None
  if saved is None:
    return []
  kind = saved['type']
  fields = dict(saved[kind])
  current = encoder_config.as_dict()
  same_type = current.get('type') == kind
  if same_type:
    for field in KEPT_FIELDS & set(fields) & set(current[kind] or {}):
      fields[field] = current[kind][field]
  prefix = f'task.model.encoder.{kind}'
  for field, value in fields.items():
    key = f'{prefix}.{field}'
    configured = (current.get(kind) or {}).get(field) if same_type else None
    if key in protected and configured != value and field not in KEPT_FIELDS:
      raise ValueError(f'{key}={configured!r} in --params_override, but the init_checkpoint '
                       f'was trained with {field}={value!r} ({path}); drop the override (the '
                       'encoder is taken from the checkpoint) or choose another init_checkpoint')
  if 'task.model.encoder.type' in protected and current.get('type') != kind:
    raise ValueError(f"task.model.encoder.type={current.get('type')!r} in --params_override, "
                     f'but the init_checkpoint holds a {kind!r} encoder ({path})')
  if same_type:
    changed = [f'{field}={value!r} (the config had {current[kind].get(field)!r})'
               for field, value in fields.items() if current[kind].get(field) != value]
  else:
    changed = [f'type={kind!r} (the config had {current.get("type")!r})']
  if not changed:
    return []
  params.override({'task': {'model': {'encoder': {'type': kind, kind: fields}}}},
                  is_strict=True)
  return [f'{path}: {prefix}: ' + ', '.join(changed)]
