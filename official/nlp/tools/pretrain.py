r"""Your own text to an encoder in one call: vocabulary, records, training, evaluation, export.

`pretrain(inputs, output_dir)` (the console script `mlm-pretrain`) runs the standalone tools in
order, each stage's output feeding the next without restating what it knows:

1. `vocab/`: a WordPiece vocabulary trained on the text (`vocab_builder.build_vocab`), reused
   when it is there.
2. `data/`: masked-LM records of the recipe (`create_pretraining_data`), with
   `validation_fraction` of the documents held out as `data/validation.tfrecord`.
3. `model/`: training with evaluations (mode `train_and_eval`) of
   `configs/pretraining/<recipe>_<size>.yaml` for `minutes` (`trainer.time_budget_minutes`) or
   `steps`; the sequence length, predictions per sequence, packing, vocabulary size and the
   held-out set come from the records' metadata. Rerunning the same command resumes from the
   latest checkpoint (a time budget resumes with what it had left). With `init_from`, a published
   encoder's model, weights and tokenizer take the place of the recipe's model and stage 1.
4. Evaluation on the held-out documents: masked-LM loss and accuracy beside the context-free
   predictor's (unigram frequencies of the training records, copying kept tokens).
5. `hf/`: a Hugging Face folder (`config.json`, `model.safetensors` and the tokenizer's files)
   that `transformers` loads; `training_curves.png` (with matplotlib); `summary.json`.

Stages 1 and 2 run without TensorFlow (`pretrain_stages` holds the rest), so the records' worker
processes are forked, not spawned.

Input: text files or folders (every file in them, recursively; hidden ones skipped), one sentence a
line with a blank line between documents. A file without any blank line is read as plain
paragraphs: each line a document.

Recipes: `modern` (ModernBERT-class: packed rows, 30% masking, no next-sentence task; the default,
measured in official/projects/recipe_comparison/README.md) and `bert` (Google BERT's: segment
pairs with next-sentence prediction, 15% masking).

Example:
  >>> summary = pretrain(['corpus/'], 'runs/mine', minutes=10)
  >>> summary['validation']['masked_lm_accuracy'], summary['context_free']['masked_lm_accuracy']
  (0.41, 0.12)
"""

import dataclasses
import json
import logging
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from absl import flags

from official.common import cli_utils
from official.common import file_utils
from official.common import quiet
from official.modeling import hyperparams
from official.nlp.data import beam_engine
from official.nlp.data import create_pretraining_data as cpd
from official.nlp.data import data_metadata
from official.nlp.data import tokenized_corpus
from official.nlp.data import vocab_builder

RECIPES = ('modern', 'bert')
SIZES = ('tiny', 'mini', 'small', 'medium', 'base', 'large')
_YAML_PREFIX = {'modern': 'modernbert', 'bert': 'bert'}
_MASKED_LM_PROB = {'modern': 0.3, 'bert': 0.15}
DEFAULT_MINUTES = 30.0
INIT_LEARNING_RATE = 1e-4  # the peak with init_from: continued pretraining
EVALUATIONS = 4  # while training, for the curve
EVALUATION_BATCHES = 10  # at most, each
STAMP_NAME = 'pretrain.json'
SUMMARY_NAME = 'summary.json'
CURVES_NAME = 'training_curves.png'


@dataclasses.dataclass(frozen=True)
class PretrainOptions:
  """What `pretrain` makes and how (its keyword arguments of the same names).

  Attributes:
    recipe: 'modern' or 'bert' (module docstring).
    size: the model size of `configs/pretraining/<recipe>_<size>.yaml` (`SIZES`; the modern
      recipe ships tiny, mini, base and large).
    minutes: the training budget (`trainer.time_budget_minutes`); `DEFAULT_MINUTES` when
      neither it nor `steps` is given.
    steps: train this many steps instead (the learning-rate schedule written for them).
    vocab_size: the WordPiece vocabulary's size (when one is trained).
    seq_length: tokens a row.
    batch_size: rows a step (training and evaluation).
    dupe_factor: passes over the text when writing the training records, each masked anew.
    validation_fraction: the documents held out for evaluation.
    seed: the records' and the training run's random seed.
    precision: `runtime.mixed_precision_dtype` ('auto': bfloat16 where the CPU has bfloat16
      units, else float32; 'float32', 'bfloat16', 'float16').
    num_workers: processes for the records (default: the CPUs).
    engine: where the records are made: 'local' (a pool of `num_workers` processes) or 'beam'
      (an Apache Beam pipeline; `create_pretraining_data`'s `engine`), the same records.
    beam_options: Beam's pipeline options with `engine='beam'` (e.g. `['--runner=...']`).
    init_from: a checkpoint to continue pretraining from (domain-adaptive pretraining): one of
      ours (a model_dir, or a `convert_checkpoint --target=ours` folder: params.yaml and a
      checkpoint), a Google BERT folder (bert_config.json, bert_model.ckpt, vocab.txt) or a
      Hugging Face BERT or ModernBERT folder (config.json, model.safetensors, and vocab.txt or
      tokenizer.json). Its model and tokenizer are used (no vocabulary is trained), the recipe's
      optimizer and schedule with `learning_rate`.
    learning_rate: the peak learning rate (default: the recipe's from scratch, 1e-4 with
      `init_from`, as continued pretraining keeps most of what the checkpoint learned).
  """
  recipe: str = 'modern'
  size: str = 'mini'
  minutes: Optional[float] = None
  steps: Optional[int] = None
  vocab_size: int = 8000
  seq_length: int = 128
  batch_size: int = 32
  dupe_factor: int = 5
  validation_fraction: float = 0.05
  seed: int = 12345
  precision: str = 'auto'
  num_workers: Optional[int] = None
  engine: str = 'local'
  beam_options: Tuple[str, ...] = ()
  init_from: Optional[str] = None
  learning_rate: Optional[float] = None

  def check(self) -> None:
    """Refuses bad values, naming the option, what was expected and what was found."""
    checks = [
        ('recipe', self.recipe in RECIPES, f'one of {list(RECIPES)}'),
        ('size', self.size in SIZES, f'one of {list(SIZES)}'),
        ('minutes', self.minutes is None or self.minutes > 0, '> 0'),
        ('steps', self.steps is None or self.steps >= 1, '>= 1'),
        ('vocab_size', self.vocab_size > 5, '> 5'),
        ('seq_length', self.seq_length >= 8, '>= 8'),
        ('batch_size', self.batch_size >= 1, '>= 1'),
        ('dupe_factor', self.dupe_factor >= 1, '>= 1'),
        ('validation_fraction', 0 < self.validation_fraction < 1, 'in (0, 1)'),
        ('seed', self.seed >= 0, '>= 0'),
        ('engine', self.engine in cpd.ENGINES, f'one of {list(cpd.ENGINES)}'),
        ('learning_rate', self.learning_rate is None or self.learning_rate > 0, '> 0'),
        ('init_from', self.init_from is None or os.path.isdir(self.init_from),
         'an existing folder'),
    ]
    for name, ok, expected in checks:
      if not ok:
        raise ValueError(f'{name} must be {expected}, found {getattr(self, name)!r}')
    if self.minutes is not None and self.steps is not None:
      raise ValueError(f'give one of minutes and steps (found minutes={self.minutes!r}, '
                       f'steps={self.steps!r}): both say when training ends')

  @property
  def max_predictions_per_seq(self) -> int:
    return max(1, round(_MASKED_LM_PROB[self.recipe] * self.seq_length))


def config_file(recipe: str, size: str) -> str:
  """`configs/pretraining/<recipe>_<size>.yaml` of the repository.

  Raises:
    FileNotFoundError: no such file (naming the sizes that exist).
  """
  directory = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.dirname(os.path.abspath(__file__))))), 'configs', 'pretraining')
  path = os.path.join(directory, f'{_YAML_PREFIX[recipe]}_{size}.yaml')
  if not os.path.isfile(path):
    shipped = sorted(name[len(_YAML_PREFIX[recipe]) + 1:-5] for name in os.listdir(directory)
                     if name.startswith(_YAML_PREFIX[recipe] + '_')) if os.path.isdir(
                         directory) else []
    raise FileNotFoundError(f'size={size!r}: the {recipe} recipe has no config {path}; '
                            f'expected one of {shipped}')
  return path


def text_files(inputs: Union[str, Sequence[str]]) -> List[str]:
  """The files of `inputs` (files, folders searched recursively without hidden entries, globs).

  Raises:
    FileNotFoundError: an input that names nothing, or folders without a file.
  """
  inputs = [inputs] if isinstance(inputs, str) else list(inputs)
  if not inputs:
    raise ValueError('inputs: no text file or folder given')
  files = []
  for item in inputs:
    if os.path.isdir(item):
      found = []
      for root, dirs, names in os.walk(item):
        dirs[:] = sorted(d for d in dirs if not d.startswith('.'))
        found.extend(os.path.join(root, n) for n in sorted(names) if not n.startswith('.'))
      if not found:
        raise FileNotFoundError(f'inputs: the folder {item!r} holds no file')
      files.extend(found)
    else:
      files.extend(tokenized_corpus.expand_input_files(item))
  return files


def _has_blank_line(path: str) -> bool:
  with open(path, 'rb') as f:
    previous = b'\n'
    for line in f:
      if not line.strip() and previous.endswith(b'\n'):
        return True
      previous = line
  return False


def _as_documents(files: List[str], work_dir: str) -> List[str]:
  """The input files, a file without any blank line rewritten (into `work_dir`) with one between
  its lines: plain paragraphs, each a document."""
  result = []
  for index, path in enumerate(files):
    if _has_blank_line(path):
      result.append(path)
      continue
    os.makedirs(work_dir, exist_ok=True)
    target = os.path.join(work_dir, f'{index:05d}-{os.path.basename(path)}')
    with open(path, 'rb') as source, open(target + '.tmp', 'wb') as out:
      for line in source:
        out.write(line.rstrip(b'\r\n') + b'\n\n')
    os.replace(target + '.tmp', target)
    logging.info('%s has no blank line: read as plain paragraphs, each line a document', path)
    result.append(target)
  return result


def _stamp(files: List[str], options: PretrainOptions) -> Dict[str, Any]:
  """What the vocabulary and records were made from: the inputs and the data options."""
  return {
      'inputs': [[os.path.abspath(f), os.path.getsize(f)] for f in files],
      'recipe': options.recipe, 'vocab_size': options.vocab_size,
      'seq_length': options.seq_length, 'dupe_factor': options.dupe_factor,
      'validation_fraction': options.validation_fraction, 'seed': options.seed,
      'init_from': os.path.abspath(options.init_from) if options.init_from else None,
  }


def _check_stamp(output_dir: str, stamp: Dict[str, Any]) -> None:
  """Refuses an `output_dir` made from other inputs or data options (naming what changed)."""
  path = os.path.join(output_dir, STAMP_NAME)
  if not os.path.isfile(path):
    return
  with open(path, encoding='utf-8') as f:
    old = json.load(f)
  changed = [key for key in stamp if old.get(key) != stamp[key]]
  if changed:
    raise ValueError(
        f'output_dir={output_dir} holds a run made from other '
        f'{", ".join(changed)} ({path}); rerun with the same inputs and options to resume, or '
        'choose another output_dir')


def _training_overrides(options: PretrainOptions, data_dir: str, validation_records: int,
                        yaml_train_steps: int) -> Dict[str, Any]:
  """The config keys `pretrain` sets (dotted) over the recipe's YAML.

  Evaluations while training draw the curve: `EVALUATIONS` of them, at most `EVALUATION_BATCHES`
  batches each (the whole held-out set is evaluated once at the end). With `minutes`, the YAML's
  `trainer.train_steps` is the length its schedule is written for, mapped onto the budget.
  """
  length = yaml_train_steps if options.minutes is not None else int(options.steps)
  batches = max(1, -(-validation_records // options.batch_size))
  overrides = {
      'task.train_data.input_path': os.path.join(data_dir, 'train.tfrecord*'),
      'task.train_data.global_batch_size': options.batch_size,
      'task.validation_data.global_batch_size': options.batch_size,
      'task.validation_data.drop_remainder': False,  # a small held-out set still evaluates
      'runtime.mixed_precision_dtype': options.precision,
      'runtime.seed': options.seed,
      'trainer.validation_steps': min(batches, EVALUATION_BATCHES),
      'trainer.validation_interval': max(1, length // EVALUATIONS),
  }
  learning_rate = options.learning_rate or (INIT_LEARNING_RATE if options.init_from else None)
  if learning_rate:
    overrides['trainer.optimizer_config.learning_rate.polynomial.initial_learning_rate'] = (
        learning_rate)
  if options.minutes is not None:
    overrides['trainer.time_budget_minutes'] = float(options.minutes)
    return overrides
  steps = int(options.steps)
  overrides.update({
      'trainer.train_steps': steps,
      'trainer.steps_per_loop': min(100, steps),
      'trainer.summary_interval': min(100, steps),
      'trainer.checkpoint_interval': max(1, steps // 5),
      'trainer.optimizer_config.learning_rate.polynomial.decay_steps': steps,
      'trainer.optimizer_config.warmup.polynomial.warmup_steps': max(1, steps // 10),
  })
  return overrides


def tokenizer_files(path: str) -> Tuple[Optional[str], Optional[str]]:
  """`(vocab.txt, tokenizer.json)` of a checkpoint folder (either may be None, not both).

  Raises:
    ValueError: the folder has neither.
  """
  checkpoint_source(path)  # a folder of a known kind
  vocab_file = os.path.join(path, 'vocab.txt')
  tokenizer_json = os.path.join(path, 'tokenizer.json')
  found = (vocab_file if os.path.isfile(vocab_file) else None,
           tokenizer_json if os.path.isfile(tokenizer_json) else None)
  if found == (None, None):
    raise ValueError(f'init_from={path}: no tokenizer: expected vocab.txt or tokenizer.json '
                     'beside the checkpoint')
  return found


def _write_records(options: PretrainOptions, documents: List[str], data_dir: str,
                   validation_path: str, vocab_file: Optional[str],
                   tokenizer_json: Optional[str]) -> None:
  """The recipe's training records and the held-out set, unless both are there already."""
  train_metadata = data_metadata.load_metadata(os.path.join(data_dir, 'train.tfrecord*'))
  if train_metadata is not None and data_metadata.load_metadata(validation_path) is not None:
    logging.info('[2/5] records: reusing %s', train_metadata['metadata_path'])
    return
  logging.info('[2/5] records: the %s recipe, %d tokens a row, %d%% of the documents held out',
               options.recipe, options.seq_length, round(100 * options.validation_fraction))
  modern = options.recipe == 'modern'
  cpd.create_pretraining_data(
      documents, os.path.join(data_dir, 'train.tfrecord'), vocab_file,
      tokenizer_json=None if vocab_file else tokenizer_json, max_seq_length=options.seq_length,
      max_predictions_per_seq=options.max_predictions_per_seq,
      masked_lm_prob=_MASKED_LM_PROB[options.recipe], pack=modern,
      do_whole_word_mask=not modern, random_seed=options.seed,
      dupe_factor=options.dupe_factor, num_workers=options.num_workers,
      num_output_shards=max(1, min(16, options.num_workers or os.cpu_count() or 1)),
      validation_fraction=options.validation_fraction, validation_output_file=validation_path,
      show_progress=True, engine=options.engine, beam_options=options.beam_options)


def pretrain(inputs: Union[str, Sequence[str]], output_dir: str,
             **options: Any) -> Dict[str, Any]:
  """Pretrains an encoder on the text of `inputs` into `output_dir` (module docstring).

  Args:
    inputs: text files, folders or globs.
    output_dir: where `vocab/`, `data/`, `model/`, `hf/`, `training_curves.png` and
      `summary.json` go; rerunning with the same inputs and options resumes.
    **options: `PretrainOptions` fields (`recipe`, `size`, `minutes` or `steps`, ...).

  Returns:
    The summary written to `summary.json`: the step reached, held-out `validation` metrics and the
    `context_free` predictor's, the seconds of each stage, and the paths made.

  Raises:
    ValueError: bad options, or an `output_dir` made from other inputs or options.
    FileNotFoundError: an input naming no file.
  """
  started = time.perf_counter()
  options = PretrainOptions(**options)
  options.check()
  if options.minutes is None and options.steps is None:
    options = dataclasses.replace(options, minutes=DEFAULT_MINUTES)
  yaml_path = config_file(options.recipe, options.size)
  files = text_files(inputs)
  # The starting checkpoint's tokenizer is checked before anything is written: a refused start
  # leaves no stamp that would refuse the corrected rerun.
  init_tokenizer = tokenizer_files(options.init_from) if options.init_from else None
  stamp = _stamp(files, options)
  _check_stamp(output_dir, stamp)
  os.makedirs(output_dir, exist_ok=True)
  file_utils.atomic_write_text(os.path.join(output_dir, STAMP_NAME),
                               json.dumps(stamp, indent=2) + '\n')
  seconds: Dict[str, float] = {}

  # 1. The vocabulary: the starting checkpoint's, or one trained on the text.
  clock = time.perf_counter()
  documents = _as_documents(files, os.path.join(output_dir, 'text'))
  if options.init_from:
    vocab_file, tokenizer_json = init_tokenizer
    logging.info("[1/5] vocabulary: the starting checkpoint's (%s)", vocab_file or tokenizer_json)
  else:
    vocab_dir = os.path.join(output_dir, 'vocab')
    vocab_file, tokenizer_json = os.path.join(vocab_dir, 'vocab.txt'), None
    if not os.path.isfile(vocab_file):
      logging.info('[1/5] vocabulary: training %d WordPiece tokens on %d file(s)',
                   options.vocab_size, len(files))
      vocab_builder.build_vocab(documents, vocab_dir, options.vocab_size)
    else:
      logging.info('[1/5] vocabulary: reusing %s', vocab_file)
  seconds['vocabulary'] = time.perf_counter() - clock

  # 2. The records, with the held-out documents.
  clock = time.perf_counter()
  data_dir = os.path.join(output_dir, 'data')
  validation_path = os.path.join(data_dir, 'validation.tfrecord')
  _write_records(options, documents, data_dir, validation_path, vocab_file, tokenizer_json)
  validation_metadata = data_metadata.load_metadata(validation_path)
  seconds['records'] = time.perf_counter() - clock

  # 3. Training (resumes from model/'s latest checkpoint).
  # Function-level: TensorFlow is imported after the records, whose workers are then forked.
  from official.nlp.tools import pretrain_stages  # pylint: disable=g-import-not-at-top
  clock = time.perf_counter()
  start = None
  if options.init_from:
    start = pretrain_stages.starting_checkpoint(
        options.init_from, checkpoint_source(options.init_from), os.path.join(output_dir, 'init'))
  model_dir = os.path.join(output_dir, 'model')
  params = pretrain_stages.training_params(
      yaml_path, _training_overrides(
          options, data_dir, validation_metadata['num_instances'],
          hyperparams.read_yaml(yaml_path)['trainer']['train_steps']), start)
  budget = (f'{options.minutes:g} minutes' if options.minutes is not None
            else f'{options.steps} steps')
  logging.info('[3/5] training %s for %s into %s',
               options.init_from or os.path.basename(yaml_path), budget, model_dir)
  step = pretrain_stages.train(params, model_dir)
  seconds['training'] = time.perf_counter() - clock

  # 4. Held-out evaluation beside the context-free predictor (and the starting checkpoint).
  clock = time.perf_counter()
  logging.info('[4/5] evaluation on the %d held-out documents',
               validation_metadata['num_documents'])
  metrics = pretrain_stages.evaluate(model_dir, data_dir, validation_path, options.batch_size,
                                     start)
  seconds['evaluation'] = time.perf_counter() - clock

  # 5. Hugging Face folder, curves, summary.
  clock = time.perf_counter()
  hf_dir = os.path.join(output_dir, 'hf')
  logging.info('[5/5] export: a Hugging Face folder in %s', hf_dir)
  pretrain_stages.export(model_dir, hf_dir, vocab_file,
                         options.init_from or os.path.join(output_dir, 'vocab'),
                         trained_tokenizer=not options.init_from, max_length=options.seq_length)
  curves = pretrain_stages.plot_curves(model_dir, os.path.join(output_dir, CURVES_NAME))
  seconds['export'] = time.perf_counter() - clock
  seconds['total'] = time.perf_counter() - started
  summary = {
      'recipe': options.recipe, 'config_file': yaml_path, 'step': step,
      'train_tokens_per_step': options.batch_size * options.seq_length,
      **metrics,
      'seconds': {k: round(v, 1) for k, v in seconds.items()},
      'paths': {'model_dir': model_dir, 'hf': hf_dir, 'vocab': vocab_file or tokenizer_json,
                'data': data_dir, 'curves': curves},
      'init_from': options.init_from,
  }
  file_utils.atomic_write_text(os.path.join(output_dir, SUMMARY_NAME),
                               json.dumps(summary, indent=2) + '\n')
  return summary


def checkpoint_source(path: str) -> str:
  """The format of the checkpoint folder `path`: 'ours', 'google' or 'hf'.

  Raises:
    ValueError: none of them (naming the files each expects).
  """
  if os.path.isfile(os.path.join(path, 'params.yaml')):
    return 'ours'
  if os.path.isfile(os.path.join(path, 'bert_config.json')):
    return 'google'
  if os.path.isfile(os.path.join(path, 'config.json')):
    return 'hf'
  raise ValueError(f'init_from={path}: expected our checkpoint (params.yaml + ckpt-N), Google '
                   f'BERT (bert_config.json + bert_model.ckpt) or Hugging Face (config.json + '
                   f'model.safetensors); found {sorted(os.listdir(path))[:8]}')


def summary_text(summary: Dict[str, Any]) -> str:
  """The summary as a few lines for a terminal.

  Example:
    >>> print(summary_text(pretrain(['corpus.txt'], 'runs/mine', steps=100)))
  """
  validation, context_free, seconds = (summary['validation'], summary['context_free'],
                                       summary['seconds'])
  outside = seconds['total'] - seconds['training']
  model = (f"from {summary['init_from']} with the {summary['recipe']} recipe's optimizer"
           if summary.get('init_from') else os.path.basename(summary['config_file']))
  return '\n'.join([
      f"trained {summary['step']} steps ({model}, {summary['train_tokens_per_step']} tokens a "
      'step)',
      f"held-out masked-LM loss {validation['lm_example_loss']:.3f}, accuracy "
      f"{validation['masked_lm_accuracy']:.3f}; the context-free predictor: "
      f"{context_free['lm_example_loss']:.3f}, {context_free['masked_lm_accuracy']:.3f}" + (
          '; the starting checkpoint: {lm_example_loss:.3f}, {masked_lm_accuracy:.3f}'.format(
              **summary['initial_validation']) if summary.get('initial_validation') else ''),
      f"time: {seconds['total']:.0f} s, training {seconds['training']:.0f} s, outside training "
      f"{outside:.0f} s ({outside / max(seconds['total'], 1e-9):.0%}: vocabulary "
      f"{seconds['vocabulary']:.0f}, records {seconds['records']:.0f}, evaluation "
      f"{seconds['evaluation']:.0f}, export {seconds['export']:.0f})",
      f"model_dir {summary['paths']['model_dir']}; Hugging Face folder {summary['paths']['hf']}",
  ])


# ---- command line --------------------------------------------------------------------------------
PROGRAM = 'mlm-pretrain'
USAGE = f"""{PROGRAM}: your own text to an encoder (vocabulary, records, training, evaluation,
export).

Usage:
  mlm-pretrain corpus/ --output_dir=runs/mine --minutes=30
  mlm-pretrain a.txt b.txt --output_dir=runs/bert --recipe=bert --steps=2000
Rerun the same command to resume. Input: one sentence a line, a blank line between documents (a
file without blank lines: each line a document)."""


def _define_flags() -> flags.FlagValues:
  fv = flags.FlagValues()
  fv.set_gnu_getopt(True)  # text files before or after the flags
  define = dict(flag_values=fv)
  defaults = PretrainOptions()
  flags.DEFINE_string('output_dir', None, 'Where vocab/, data/, model/, hf/, '
                      'training_curves.png and summary.json go (rerun to resume).', **define)
  flags.DEFINE_enum('recipe', defaults.recipe, RECIPES, 'modern: packed rows, 30%% masking, '
                    'ModernBERT-class encoder; bert: Google BERT\'s recipe.', **define)
  flags.DEFINE_enum('size', defaults.size, SIZES, 'The model size '
                    '(configs/pretraining/<recipe>_<size>.yaml).', **define)
  flags.DEFINE_float('minutes', None, 'Training budget in minutes (default 30 unless --steps).',
                     **define)
  flags.DEFINE_integer('steps', None, 'Train this many steps instead of --minutes.', **define)
  flags.DEFINE_integer('vocab_size', defaults.vocab_size, 'WordPiece vocabulary size.', **define)
  flags.DEFINE_integer('seq_length', defaults.seq_length, 'Tokens a row.', **define)
  flags.DEFINE_integer('batch_size', defaults.batch_size, 'Rows a step.', **define)
  flags.DEFINE_integer('dupe_factor', defaults.dupe_factor, 'Passes over the text in the '
                       'training records, each masked anew.', **define)
  flags.DEFINE_float('validation_fraction', defaults.validation_fraction, 'Fraction of the '
                     'documents held out for evaluation.', **define)
  flags.DEFINE_integer('seed', defaults.seed, 'Random seed of the records and the training run.',
                       **define)
  flags.DEFINE_string('precision', defaults.precision, 'runtime.mixed_precision_dtype: auto '
                      '(bfloat16 where the CPU has bfloat16 units), float32, bfloat16, float16.',
                      **define)
  flags.DEFINE_integer('num_workers', None, 'Processes writing the records (default: the CPUs).',
                       **define)
  flags.DEFINE_enum('engine', defaults.engine, cpd.ENGINES, 'Where the records are made: '
                    'local (--num_workers processes) or beam (an Apache Beam pipeline; pip install '
                    '\'mlm-garden[beam]\'), the same records.', **define)
  flags.DEFINE_string('beam_pipeline_options', '', 'With --engine=beam: Beam\'s pipeline options, '
                      'comma-separated name=value (e.g. '
                      'runner=FlinkRunner,flink_master=HOST:8081).', **define)
  flags.DEFINE_string('init_from', None, 'Continue pretraining from this checkpoint folder (ours, '
                      'Google BERT or Hugging Face BERT/ModernBERT) with its tokenizer.', **define)
  flags.DEFINE_float('learning_rate', None, 'Peak learning rate (default: the recipe\'s; 1e-4 '
                     'with --init_from).', **define)
  flags.mark_flags_as_required(['output_dir'], flag_values=fv)
  return fv


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point (`mlm-pretrain`); returns the exit code."""
  fv = _define_flags()
  argv = list(sys.argv if argv is None else argv)
  status = cli_utils.parse_flags(fv, argv, PROGRAM, USAGE)
  if status is not None:
    return status
  inputs = fv(argv)[1:]  # the positional arguments
  if not inputs:
    return cli_utils.error(PROGRAM, 'no input: give text files or folders before the flags '
                           '(e.g. mlm-pretrain corpus/ --output_dir=runs/mine)', status=2)
  if not logging.getLogger().handlers:
    quiet.use_absl_logging()
  logging.getLogger().setLevel(logging.INFO)
  try:
    beam_options = tuple(beam_engine.options_from_flags(fv.engine, fv.beam_pipeline_options))
    summary = pretrain(inputs, fv.output_dir, recipe=fv.recipe, size=fv.size, minutes=fv.minutes,
                       steps=fv.steps, vocab_size=fv.vocab_size, seq_length=fv.seq_length,
                       batch_size=fv.batch_size, dupe_factor=fv.dupe_factor,
                       validation_fraction=fv.validation_fraction, seed=fv.seed,
                       precision=fv.precision, num_workers=fv.num_workers,
                       engine=fv.engine, beam_options=beam_options,
                       init_from=fv.init_from, learning_rate=fv.learning_rate)
  except (ValueError, FileNotFoundError) as e:
    return cli_utils.error(PROGRAM, str(e), status=1)
  print(summary_text(summary), flush=True)
  return 0
