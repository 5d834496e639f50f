"""The TensorFlow side of `mlm-pretrain` (`official.nlp.tools.pretrain`): the starting checkpoint,
training, evaluation and the Hugging Face export.

`pretrain` imports this module only after the vocabulary and the records are written, so that the
records' worker processes are forked from a process without TensorFlow (with it loaded they are
spawned, each importing TensorFlow anew: about 10 s a pool on 2 cores).

Example:
  >>> params = training_params(yaml_path, overrides, start=None)
  >>> step = train(params, 'runs/mine/model')
"""

import dataclasses
import json
import logging
import os
import shutil
from typing import Any, Dict, List, Mapping, Optional

import tensorflow as tf
import tokenizers

from official.common import distribute_utils
from official.common import file_utils
from official.common import nested
from official.common import registry_imports  # pylint: disable=unused-import  # noqa: F401
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.modeling import hyperparams
from official.nlp.configs import bert
from official.nlp.configs import known_fields
from official.nlp.data import tokenization
from official.nlp.tools import context_free_mlm
from official.nlp.tools import convert_checkpoint
from official.nlp.tools import evaluate_mlm


@dataclasses.dataclass(frozen=True)
class StartingCheckpoint:
  """A checkpoint to continue pretraining from, in our format (`starting_checkpoint`).

  Attributes:
    directory: our folder of it (params.yaml + checkpoint).
    checkpoint: our checkpoint prefix (`task.init_checkpoint`).
    model_config: its `task.model` (a `PretrainerConfig`).
  """
  directory: str
  checkpoint: str
  model_config: Any


def starting_checkpoint(path: str, source: str, work_dir: str) -> StartingCheckpoint:
  """`path` as our checkpoint, with its model config: a Google BERT or Hugging Face folder
  (`source` 'google' or 'hf', see `pretrain.checkpoint_source`) converted into `work_dir` (once),
  ours ('ours') as it is.

  Raises:
    ValueError: a folder without a checkpoint (or one the converter cannot read).

  Example:
    >>> starting_checkpoint('bert-base-uncased/', 'hf', 'runs/mine/init').checkpoint
    'runs/mine/init/ckpt-1'
  """
  ours = path
  if source != 'ours':
    if not os.path.isfile(os.path.join(work_dir, 'params.yaml')):
      logging.info('converting the %s checkpoint %s to ours in %s', source, path, work_dir)
      shutil.rmtree(work_dir, ignore_errors=True)
      convert_checkpoint.convert(source, 'ours', path, work_dir)
    ours = work_dir
  params = hyperparams.read_yaml(os.path.join(ours, 'params.yaml'))
  checkpoint = tf.train.latest_checkpoint(ours) or params.get('task', {}).get('init_checkpoint')
  if not checkpoint:
    raise ValueError(f'init_from={path}: no checkpoint in {ours}')
  model_config = bert.PretrainerConfig()
  model_config.override(params['task']['model'], is_strict=False)
  return StartingCheckpoint(ours, checkpoint, model_config)


def training_params(yaml_path: str, overrides: Mapping[str, Any],
                    start: Optional[StartingCheckpoint]) -> Any:
  """The validated `bert/pretraining` config of `yaml_path` with `overrides` (dotted keys), the
  starting checkpoint's model in place of the YAML's, and the fields the records' metadata knows.

  Example:
    >>> training_params('configs/pretraining/modernbert_mini.yaml',
    ...                 {'task.train_data.input_path': 'data/train.tfrecord*'}, None)
  """
  taken: List[str] = []

  def complete(params) -> None:
    if start is not None:  # the checkpoint's model in place of the recipe's
      params.override({'task': {'model': start.model_config.as_dict(),
                                'init_checkpoint': start.checkpoint}}, is_strict=True)
    params.override(nested.unflatten(overrides), is_strict=True)
    taken.extend(known_fields.fill(params, overrides))

  params = train_utils.build_params('bert/pretraining', [yaml_path], None, complete=complete)
  for line in taken:
    logging.info('%s', line)
  return params


def train(params: Any, model_dir: str) -> int:
  """Trains and evaluates (`train_and_eval`) into `model_dir`, resuming there; returns the step."""
  strategy = distribute_utils.strategy_from_runtime(params.runtime)
  with strategy.scope():
    task = task_factory.get_task(params.task, logging_dir=model_dir)
  trained = train_lib.run_experiment_with_trainer(strategy, task, 'train_and_eval', params,
                                                  model_dir)
  return int(trained.trainer.global_step.numpy())


def evaluate(model_dir: str, data_dir: str, validation_path: str, batch_size: int,
             start: Optional[StartingCheckpoint]) -> Dict[str, Optional[Dict[str, float]]]:
  """Held-out masked-LM loss and accuracy of the trained model (`validation`), of the context-free
  predictor (`context_free`) and of the starting checkpoint (`initial_validation`, or None)."""
  held_out = {'validation': validation_path}
  validation = evaluate_mlm.evaluate_checkpoint(model_dir, held_out, batch_size)['validation']
  initial = None
  if start is not None:  # what continued pretraining changed
    initial = evaluate_mlm.evaluate_checkpoint(start.directory, held_out, batch_size,
                                               checkpoint=start.checkpoint)['validation']
  context_free = context_free_mlm.context_free_baseline(
      os.path.join(data_dir, 'train.tfrecord*'), held_out,
      batch_size=batch_size)['validation']  # the vocabulary from the records' metadata
  return {'validation': _metrics(validation), 'context_free': _metrics(context_free),
          'initial_validation': _metrics(initial) if initial else None}


def export(model_dir: str, hf_dir: str, vocab_file: Optional[str], tokenizer_dir: str,
           trained_tokenizer: bool, max_length: int) -> None:
  """A Hugging Face folder of the trained model in `hf_dir` (replaced), with its tokenizer: the one
  trained on the text (`trained_tokenizer`: `tokenizer_dir/tokenizer.json` given BERT's template)
  or the starting checkpoint's files in `tokenizer_dir`."""
  shutil.rmtree(hf_dir, ignore_errors=True)
  convert_checkpoint.convert('ours', 'hf', model_dir, hf_dir, vocab_file=vocab_file)
  if trained_tokenizer:
    write_hf_tokenizer(os.path.join(tokenizer_dir, 'tokenizer.json'), hf_dir, max_length)
  else:
    _copy_tokenizer_files(tokenizer_dir, hf_dir)


def write_hf_tokenizer(tokenizer_json: str, hf_dir: str, max_length: int) -> str:
  """Writes `tokenizer.json` (with BERT's `[CLS] A [SEP] B [SEP]` template) and
  `tokenizer_config.json` into `hf_dir`, so that `transformers.AutoTokenizer` loads the vocabulary
  with its special tokens; returns the tokenizer.json path.

  Example:
    >>> write_hf_tokenizer('runs/mine/vocab/tokenizer.json', 'runs/mine/hf', 128)
  """
  tokenizer = tokenizers.Tokenizer.from_file(tokenizer_json)
  ids = {token: tokenizer.token_to_id(token) for token in tokenization.SPECIAL_TOKENS}
  cls, sep = tokenization.CLS_TOKEN, tokenization.SEP_TOKEN
  tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
      single=f'{cls} $A {sep}', pair=f'{cls} $A {sep} $B:1 {sep}:1',
      special_tokens=[(cls, ids[cls]), (sep, ids[sep])])
  path = os.path.join(hf_dir, 'tokenizer.json')
  tokenizer.save(path)
  config = {'tokenizer_class': 'PreTrainedTokenizerFast', 'model_max_length': max_length,
            'cls_token': cls, 'sep_token': sep, 'mask_token': tokenization.MASK_TOKEN,
            'pad_token': tokenization.PAD_TOKEN, 'unk_token': tokenization.UNK_TOKEN}
  file_utils.atomic_write_text(os.path.join(hf_dir, 'tokenizer_config.json'),
                               json.dumps(config, indent=2) + '\n')
  return path


# The files of a Hugging Face folder that make its tokenizer (copied to the export).
HF_TOKENIZER_FILES = ('tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json',
                      'vocab.txt')


def _copy_tokenizer_files(source_dir: str, hf_dir: str) -> None:
  for name in HF_TOKENIZER_FILES:
    path = os.path.join(source_dir, name)
    if os.path.isfile(path):
      shutil.copyfile(path, os.path.join(hf_dir, name))


def _metrics(metrics: Dict[str, Any]) -> Dict[str, float]:
  return {key: round(float(metrics[key]), 4) for key in ('lm_example_loss', 'masked_lm_accuracy')}


def plot_curves(model_dir: str, path: str) -> Optional[str]:
  try:
    # Function-level: matplotlib is an optional dependency (the `plot` extra).
    from official.nlp.tools import training_curves  # pylint: disable=g-import-not-at-top
    return training_curves.plot_training_curves(model_dir, path)
  except ImportError:
    logging.info('no training_curves.png: matplotlib is not installed '
                 "(pip install 'mlm-garden[plot]')")
    return None
