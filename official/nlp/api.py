"""The Python API: text to an encoder in one call, an experiment from YAML, training for N steps,
fill-mask and embeddings.

Everything the command-line programs do, callable from a notebook or a script; importing it
registers the built-in experiments (no registry import needed). A training model_dir carries
its vocabulary (written from the records' metadata when training starts), so `fill_mask` and
`embed` need only the model_dir.

Example, your own text to an encoder (`mlm-pretrain`; see `official.nlp.tools.pretrain`):
  >>> summary = api.pretrain(['my_corpus/'], 'runs/mine', minutes=30)
  >>> api.fill_mask(summary['paths']['model_dir'], ['Return the [MASK] of the list.'])

Example, step by step (the whole of it runs in `examples/pretrain_fill_mask_embed.py`):
  >>> from official.nlp import api
  >>> params = api.load_config('configs/pretraining/bert_tiny.yaml', overrides={
  ...     'task.train_data.input_path': 'data/train.tfrecord',
  ...     'task.validation_data.input_path': 'data/eval.tfrecord'})
  >>> result = api.train(params, 'runs/tiny', steps=200)
  >>> result.step, sorted(result.eval_logs)[:2]
  (200, ['lm_example_loss', 'masked_lm_accuracy'])
  >>> api.fill_mask('runs/tiny', ['Return the [MASK] of the list.'], top_k=3)
  [[[('length', 0.2...), ('number', 0.0...), ('value', 0.0...)]]]   # one list per [MASK]
  >>> api.embed('runs/tiny', ['a sentence', 'another one']).shape
  (2, 128)
  >>> api.embed_words('runs/tiny', ['the river bank']).words   # one vector per word instance
  ['the', 'river', 'bank']
"""

import copy
import dataclasses
import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from official.common import distribute_utils
from official.common import nested
from official.common import quiet
# Imported for its registrations (experiments and tasks).
from official.common import registry_imports  # pylint: disable=unused-import  # noqa: F401
from official.core import config_definitions as cfg
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.modeling import hyperparams
from official.nlp.configs import known_fields
from official.nlp.serving import inference
from official.nlp.tools import embed as embed_lib
from official.nlp.tools import fill_mask as fill_mask_lib
from official.nlp.tools import pretrain as pretrain_lib

DEFAULT_EXPERIMENT = 'bert/pretraining'
Predictions = List[List[List[Tuple[str, float]]]]


@dataclasses.dataclass
class TrainResult:
  """What `train` returns.

  Attributes:
    model: the trained Keras model (e.g. a `BertPretrainerV2`).
    model_dir: where its checkpoints, summaries, params.yaml and vocab.txt are.
    step: the global step reached.
    eval_logs: the final evaluation's metrics ({} when `evaluate` is False).
  """
  model: Any
  model_dir: str
  step: int
  eval_logs: Dict[str, float]


def pretrain(inputs: Union[str, Sequence[str]], output_dir: str, **options: Any) -> Dict[str, Any]:
  """Your own text to an encoder: vocabulary, records, training, evaluation, Hugging Face export.

  `mlm-pretrain` in Python; see `official.nlp.tools.pretrain` for the stages and what
  `output_dir` holds.

  Args:
    inputs: text files, folders or globs (one sentence a line, a blank line between documents).
    output_dir: rerunning with the same inputs and options resumes.
    **options: `pretrain_lib.PretrainOptions` fields: `recipe` ('modern' or 'bert'), `size`,
      `minutes` or `steps`, `vocab_size`, `seq_length`, `batch_size`, `seed`, ...

  Returns:
    The run's summary (also `output_dir/summary.json`): `step`, held-out `validation` and
    `context_free` metrics, the seconds of each stage, the paths made.

  Example:
    >>> api.pretrain(['my_corpus/'], 'runs/mine', steps=2000)['validation']
    {'lm_example_loss': 3.1, 'masked_lm_accuracy': 0.45}
  """
  return pretrain_lib.pretrain(inputs, output_dir, **options)


def load_config(config_files: Union[str, Sequence[str], None] = None,
                experiment: str = DEFAULT_EXPERIMENT,
                overrides: Union[str, Mapping[str, Any], None] = None) -> cfg.ExperimentConfig:
  """The validated experiment config: the experiment's defaults < YAML files < the
  encoder of `task.init_checkpoint`'s params.yaml < the pretraining records' metadata
  (`known_fields.fill`) < overrides.

  Args:
    config_files: a YAML file or several (Model Garden's YAML structure), applied in order.
    experiment: a registered experiment (`bert/pretraining`, `bert/sentence_prediction`, ...).
    overrides: `--params_override` text (`'a.b=1,c=2'` or YAML), or a dict with dotted or
      nested keys (`{'trainer.train_steps': 100}`).

  Raises:
    KeyError: an unknown experiment (listing the registered ones).
    FileNotFoundError: a missing config file.
    official.modeling.hyperparams.ConfigError: a bad key or value, naming its full path, or an
      override that disagrees with the records' metadata.

  Example:
    >>> params = load_config('configs/pretraining/bert_tiny.yaml',
    ...                      overrides={'trainer.train_steps': 100})
    >>> params.trainer.train_steps
    100
  """
  files = [config_files] if isinstance(config_files, str) else list(config_files or ())
  text = overrides if isinstance(overrides, str) else None
  taken = []

  def complete(params: cfg.ExperimentConfig) -> None:
    if isinstance(overrides, Mapping) and overrides:
      params.override(nested.unflatten(overrides), is_strict=True)
    taken.extend(known_fields.fill(params, overrides))

  try:
    params = train_utils.build_params(experiment, files, text, complete=complete)
  except (hyperparams.ConfigError, KeyError, FileNotFoundError):
    raise
  except (ValueError, TypeError) as e:
    raise hyperparams.ConfigError('', str(e)) from None
  for line in taken:
    logging.info('%s', line)
  return params


def train(params: cfg.ExperimentConfig, model_dir: str, steps: Optional[int] = None,
          evaluate: bool = True, distribution_strategy: Any = None,
          show_progress: bool = True) -> TrainResult:
  """Trains (resuming from `model_dir`'s latest checkpoint) and evaluates once at the end.

  Args:
    params: the experiment config (`load_config`).
    model_dir: checkpoints, summaries, `params.yaml` and the vocabulary go here.
    steps: the global step to reach (default: `params.trainer.train_steps`); the learning-rate
      schedule is the config's, so set its decay steps too when shortening a run. Not with
      `trainer.time_budget_minutes`, which ends training at the budget instead (the schedule
      mapped onto the steps it buys).
    evaluate: evaluate `trainer.validation_steps` steps after training (needs
      `task.validation_data.input_path`).
    distribution_strategy: a `tf.distribute.Strategy` (default: the one `params.runtime`
      describes, built as `mlm-train` builds it: `distribute_utils.strategy_from_runtime`).
    show_progress: when Python logging has no handler yet (a plain script or notebook), send
      INFO records to stderr in absl's format so that the progress lines (every ~10 s) show.

  Returns:
    The model, the step reached and the final evaluation's metrics.

  Raises:
    ValueError: bad data, a model_dir in use, or `steps` with a time budget.
    official.core.checkpointing.TrainingStopped: a non-finite loss.

  Example:
    >>> result = train(load_config('bert_tiny.yaml', overrides=...), 'runs/tiny', steps=50)
    >>> result.step
    50
  """
  if steps is not None:
    if params.trainer.time_budget_minutes:
      raise ValueError(
          f'steps={steps} and trainer.time_budget_minutes='
          f'{params.trainer.time_budget_minutes:g} both say when training ends; pass one (with a '
          'budget, trainer.train_steps is the length the learning-rate schedule is written for)')
    if steps < 1:
      raise ValueError(f'steps must be >= 1; found {steps}')
    params = copy.deepcopy(params)  # the caller's config stays as it was
    params.override({'trainer': {'train_steps': int(steps)}}, is_strict=True)
  if show_progress and not logging.getLogger().handlers:
    quiet.use_absl_logging()
  strategy = distribution_strategy or distribute_utils.strategy_from_runtime(params.runtime)
  with strategy.scope():
    task = task_factory.get_task(params.task, logging_dir=model_dir)
  mode = 'train_and_post_eval' if evaluate else 'train'
  result = train_lib.run_experiment_with_trainer(strategy, task, mode, params, model_dir)
  return TrainResult(model=result.model, model_dir=model_dir,
                     step=int(result.trainer.global_step.numpy()),
                     eval_logs={k: float(np.asarray(v)) for k, v in (result.eval_logs or {}).items()
                                if np.size(v) == 1})


def load_model(model_dir: str, checkpoint: Optional[str] = None):
  """A training model_dir or a SavedModel export, ready for `fill_mask` and `embed`.

  Returns:
    `(inference.InferenceModel, tokenization.WordPieceTokenizer)`.

  Raises:
    FileNotFoundError: neither a model_dir with a checkpoint nor an export.
    ValueError: no vocabulary found with the model.
  """
  model = inference.load_inference_model(model_dir, checkpoint)
  return model, model.load_tokenizer()


def _model_and_tokenizer(model: Any):
  if isinstance(model, str):
    return load_model(model)
  return model


def fill_mask(model: Any, texts: Sequence[str], top_k: int = 5,
              seq_length: Optional[int] = None) -> Predictions:
  """Top-k predictions for every `[MASK]` of every text.

  Args:
    model: a model_dir or export path, or the `(model, tokenizer)` of `load_model` (load once,
      call many times).
    texts: texts with one or more `[MASK]`.
    top_k: predictions per mask.
    seq_length: the padded input length (default: the model's training length).

  Returns:
    `result[text][mask] = [(token, probability), ...]`, best first.

  Example:
    >>> [[token for token, _ in mask] for mask in
    ...  fill_mask('runs/tiny', ['Return the [MASK] of the list.'], top_k=2)[0]]
    [['length', 'number']]
  """
  loaded, tokenizer = _model_and_tokenizer(model)
  return fill_mask_lib.fill_mask(loaded, tokenizer, list(texts), top_k=top_k,
                                 seq_length=seq_length or loaded.seq_length)


def embed(model: Any, texts: Sequence[str], pooling: str = 'mean',
          batch_size: int = 32) -> np.ndarray:
  """Sentence embeddings, float32 [len(texts), hidden].

  Args:
    model: a model_dir or export path, or the `(model, tokenizer)` of `load_model`.
    texts: the sentences (each cut to the model's sequence length).
    pooling: `mean` (over the tokens), `cls` or `pooled` (see `official.nlp.tools.embed`).
    batch_size: sentences per encoder call.

  Example:
    >>> embed('runs/tiny', ['a sentence', 'another one']).shape
    (2, 128)
  """
  loaded, tokenizer = _model_and_tokenizer(model)
  vectors, _ = embed_lib.embed_texts(loaded, tokenizer, list(texts), pooling=pooling,
                                     batch_size=batch_size)
  return vectors


def embed_words(model: Any, texts: Sequence[str], subword_pooling: str = 'first',
                batch_size: int = 32):
  """Contextual word embeddings: one vector per word instance of every text.

  Args:
    model: a model_dir or export path, or the `(model, tokenizer)` of `load_model`.
    texts: the lines; each word's context is its whole line.
    subword_pooling: `first` (the word's first sub-word vector) or `mean` (of its sub-words).
    batch_size: lines per encoder call.

  Returns:
    An `official.nlp.tools.embed.TokenEmbeddings`: `vectors` float32 [words, hidden], `words`,
    and the line and word index of each vector.

  Example:
    >>> result = embed_words('runs/tiny', ['the river bank', 'the bank loan'])
    >>> result.vectors.shape, result.words
    ((6, 128), ['the', 'river', 'bank', 'the', 'bank', 'loan'])
  """
  loaded, tokenizer = _model_and_tokenizer(model)
  return embed_lib.token_embeddings(loaded, tokenizer, list(texts),
                                    subword_pooling=subword_pooling, batch_size=batch_size)
