"""The config fields the tools already know: the init checkpoint's encoder and the records' data.

Every entry point that builds an experiment config (`mlm-train`, `api.load_config`, `mlm-pretrain`,
`mlm-benchmark --data=config`) calls `fill` once its config files and overrides are applied, so
the user never restates what a `params.yaml` or a `<records>.metadata.json` says:

- `checkpoint_fields`: `task.model.encoder` from `task.init_checkpoint`'s `params.yaml`;
- `record_fields`: sequence length, predictions per sequence, packing, feature names, vocabulary
  size and the held-out set from the records' metadata.

A value the user set in the overrides that disagrees with either is refused (ValueError).

Example:
  >>> params = train_utils.build_params('bert/pretraining', ['modernbert_mini.yaml'],
  ...                                   'task.train_data.input_path=data/train.tfrecord*')
  >>> for line in fill(params, 'task.train_data.input_path=data/train.tfrecord*'):
  ...   logging.info(line)
"""

from typing import Any, List, Mapping, Union

from official.nlp.configs import checkpoint_fields
from official.nlp.configs import record_fields

CHECKPOINT_PREFIX = "the init_checkpoint's encoder: "
RECORDS_PREFIX = "from the records' metadata: "


def fill(params: Any, overrides: Union[None, str, Mapping[str, Any]] = None) -> List[str]:
  """Sets the fields the init checkpoint and the records know, in place; returns what it took.

  Args:
    params: the experiment config (not locked), with its files and overrides applied.
    overrides: the overrides the user gave (`--params_override` text or a dict): the keys they set
      are checked against the checkpoint and the records instead of being replaced.

  Returns:
    One line per source that changed something, each starting with `CHECKPOINT_PREFIX` or
    `RECORDS_PREFIX` (for the log).

  Raises:
    ValueError: an overridden value disagrees with the checkpoint or the records, naming both.
  """
  protected = record_fields.override_keys(overrides)
  lines = [CHECKPOINT_PREFIX + line
           for line in checkpoint_fields.fill_encoder_from_checkpoint(params, protected)]
  lines += [RECORDS_PREFIX + line
            for line in record_fields.fill_from_records(params, protected=protected)]
  return lines
