"""Inference from a training model_dir (params.yaml + ckpt-N) or an exported SavedModel, alike.

A training model_dir is what `official.nlp.train` writes: `params.yaml` and `ckpt-N` files. Its
model is rebuilt by the task registered for the config in `params.yaml` and restored from the
latest (or a given) checkpoint (under the current Keras dtype policy: float32 unless set otherwise,
whatever the policy of the training run). A SavedModel dir is what
`export_savedmodel` writes: `saved_model.pb`, `variables/` and `assets.extra/`
(`serving_config.json`, `vocab.txt`). Both are served through the same functions
(`serving_signatures`), so they give the same numbers.

Example:
  >>> model = load_inference_model('runs/tiny')           # or an export dir
  >>> tokenizer = model.load_tokenizer()                  # vocab.txt found next to the model
  >>> ids, probs = model.fill_mask(inputs, top_k=5)
"""

import dataclasses
import logging
import os
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

# Registers the experiments and tasks whose params.yaml a model_dir may hold.
from official.common import registry_imports  # pylint: disable=unused-import  # noqa: F401
from official.core import exp_factory
from official.core import task_factory
from official.modeling import hyperparams
from official.nlp.data import tokenization
from official.nlp.data import vocab_assets
from official.nlp.serving import serving_signatures

PARAMS_FILE = 'params.yaml'
ASSETS_EXTRA = vocab_assets.ASSETS_EXTRA
SERVING_CONFIG = vocab_assets.SERVING_CONFIG
VOCAB_FILE = vocab_assets.VOCAB_FILE
SERVING_FORMAT = 'mlm_garden.serving'
TRAINING, SAVED_MODEL = 'training', 'saved_model'
# Tried first when params.yaml does not say which experiment wrote it.
_PREFERRED_EXPERIMENTS = ('bert/pretraining', 'bert/pretraining_dynamic')


def model_dir_kind(model_dir: str) -> str:
  """`'training'` (params.yaml) or `'saved_model'` (saved_model.pb) for a model directory.

  Raises:
    FileNotFoundError: `model_dir` does not exist, or holds neither kind of model.
    ValueError: `model_dir` is a file.
  """
  if tf.io.gfile.exists(model_dir) and not tf.io.gfile.isdir(model_dir):
    raise ValueError(f'model_dir {model_dir!r}: a file; expected a training model_dir '
                     f'({PARAMS_FILE} + ckpt-N) or a SavedModel directory (saved_model.pb)')
  if not tf.io.gfile.isdir(model_dir):
    raise FileNotFoundError(f'model_dir {model_dir!r}: no such directory; expected a training '
                            f'model_dir ({PARAMS_FILE} + ckpt-N) or a SavedModel directory '
                            '(saved_model.pb)')
  if tf.io.gfile.exists(os.path.join(model_dir, 'saved_model.pb')):
    return SAVED_MODEL
  if tf.io.gfile.exists(os.path.join(model_dir, PARAMS_FILE)):
    return TRAINING
  found = sorted(tf.io.gfile.listdir(model_dir))
  shown = ', '.join(found[:10]) + (', ...' if len(found) > 10 else '') if found else 'nothing'
  raise FileNotFoundError(
      f'model_dir {model_dir!r} is neither a training model_dir ({PARAMS_FILE} + ckpt-N files, '
      'as written by official.nlp.train) nor a SavedModel directory (saved_model.pb, as written by '
      f'official.nlp.serving.export_savedmodel); found: {shown}')


def load_experiment_params(model_dir: str, experiment: Optional[str] = None):
  """The `ExperimentConfig` recorded in `model_dir/params.yaml`.

  `params.yaml` does not name its experiment: without `experiment`, the registered experiments are
  tried in turn (`bert/pretraining` first) and the first whose schema accepts the file strictly is
  used.

  Raises:
    FileNotFoundError: no params.yaml.
    ValueError: no registered experiment accepts the file (each one's complaint is listed).
  """
  path = os.path.join(model_dir, PARAMS_FILE)
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(f'model_dir {model_dir!r} has no {PARAMS_FILE}; expected a training '
                            'model_dir written by official.nlp.train')
  try:
    data = hyperparams.read_yaml(path)
  except Exception as e:  # pylint: disable=broad-except  (yaml's and tf.io's errors alike)
    raise ValueError(f'{path}: not readable YAML ({_first_line(e)}); expected the params.yaml '
                     'written by official.nlp.train') from None
  if not isinstance(data, dict):
    raise ValueError(f'{path}: holds a {type(data).__name__}; expected a mapping (the '
                     'params.yaml written by official.nlp.train)')
  if experiment:
    names = [experiment]
  else:
    registered = exp_factory.registered_experiments()
    names = [n for n in _PREFERRED_EXPERIMENTS if n in registered]
    names += [n for n in registered if n not in names]
  errors = []
  for name in names:
    params = exp_factory.get_exp_config(name)
    try:
      params.override(data, is_strict=True)
    except (hyperparams.ConfigError, ValueError, TypeError) as e:
      errors.append(f'{name}: {e}')
      continue
    return params
  raise ValueError(f'{path}: no registered experiment accepts this config; tried '
                   + '; '.join(errors))


def resolve_checkpoint(model_dir: str, checkpoint: Optional[str] = None) -> str:
  """The checkpoint to restore: `checkpoint` (a prefix or a directory) or the latest of `model_dir`.

  Raises:
    FileNotFoundError: no checkpoint there.
  """
  if checkpoint:
    if tf.io.gfile.isdir(checkpoint):
      latest = tf.train.latest_checkpoint(checkpoint)
      if not latest:
        raise FileNotFoundError(f'checkpoint {checkpoint!r}: a directory without a checkpoint '
                                '(ckpt-N.index)')
      return latest
    if not tf.io.gfile.exists(checkpoint + '.index'):
      raise FileNotFoundError(f'checkpoint {checkpoint!r}: no such checkpoint (expected '
                              f'{checkpoint}.index, e.g. {os.path.join(model_dir, "ckpt-100")})')
    return checkpoint
  latest = tf.train.latest_checkpoint(model_dir)
  if not latest:
    raise FileNotFoundError(f'model_dir {model_dir!r} has {PARAMS_FILE} but no checkpoint; '
                            'expected ckpt-N.index with its checkpoint state file (has training '
                            'saved one yet?)')
  return latest


def restore_model(model_dir: str, checkpoint: Optional[str] = None,
                  experiment: Optional[str] = None) -> Tuple[Any, tf_keras.Model, str]:
  """Builds the model of `model_dir/params.yaml` with its task and restores a checkpoint into it.

  Args:
    model_dir: a training model_dir.
    checkpoint: a checkpoint prefix or directory (default: the latest in `model_dir`).
    experiment: the registered experiment of params.yaml (default: detected).

  Returns:
    `(params, model, checkpoint_path)`.

  Raises:
    FileNotFoundError: no params.yaml or no checkpoint.
    ValueError: the checkpoint lacks variables of the model built from params.yaml.
  """
  params = load_experiment_params(model_dir, experiment)
  path = resolve_checkpoint(model_dir, checkpoint)
  task = task_factory.get_task(params.task)
  model = task.build_model()
  try:
    status = tf.train.Checkpoint(model=model).read(path)
    status.expect_partial().assert_existing_objects_matched()
  except (tf.errors.OpError, IndexError) as e:  # a truncated or corrupt .index / .data file
    raise ValueError(f'checkpoint {path!r}: cannot be read ({_first_line(e)}); expected a '
                     'complete checkpoint written by official.nlp.train') from None
  except AssertionError as e:
    raise ValueError(f'checkpoint {path!r} does not match the model built from '
                     f'{os.path.join(model_dir, PARAMS_FILE)}: {e}') from None
  logging.info('Restored %s from %s', type(model).__name__, path)
  return params, model, path


def _first_line(e: BaseException) -> str:
  text = getattr(e, 'message', None) or str(e) or type(e).__name__
  return text.strip().splitlines()[0] if text.strip() else type(e).__name__


def read_serving_config(export_dir: str) -> Dict[str, Any]:
  """`export_dir/assets.extra/serving_config.json` ({} when missing).

  Raises:
    ValueError: the file is not a JSON object (naming it).
  """
  path = os.path.join(export_dir, ASSETS_EXTRA, SERVING_CONFIG)
  if not tf.io.gfile.exists(path):
    return {}
  return vocab_assets.read_json_object(path, vocab_assets.SERVING_CONFIG_EXPECTED)


def is_pretrainer(model: tf_keras.Model) -> bool:
  """Whether `model` has a masked-LM head (a `BertPretrainerV2`)."""
  return hasattr(model, 'masked_lm')


@dataclasses.dataclass
class InferenceModel:
  """The serving functions of a model with what a client needs to feed them.

  Attributes:
    functions: signature name (`encoder`, `fill_mask`, `classify`) -> function taking int32
      tensors by input name and returning a dict of tensors.
    kind: `'training'` or `'saved_model'`.
    model_dir: the directory the model was loaded from.
    source: the checkpoint or SavedModel directory the weights came from.
    seq_length: the longest input the model was trained (or exported) for.
    max_seq_length: rows of the encoder's position table, the longest input it accepts (None:
      unknown, e.g. an export from before this was recorded).
    vocab_file: the vocabulary found next to the model (None: none found).
    do_lower_case: the tokenizer setting recorded with the model (None: not recorded).
    vocab_size: rows of the word-embedding table (None: unknown).
    vocab_sha256: hash of the training vocabulary, when recorded.
    top_k: the largest `top_k` of `fill_mask` (None: any).
  """
  functions: Dict[str, Callable[..., Dict[str, tf.Tensor]]]
  kind: str
  model_dir: str
  source: str
  seq_length: int
  vocab_file: Optional[str] = None
  do_lower_case: Optional[bool] = None
  vocab_size: Optional[int] = None
  vocab_sha256: Optional[str] = None
  top_k: Optional[int] = None
  max_seq_length: Optional[int] = None

  def check_seq_length(self, seq_length: int, flag: str = 'seq_length') -> None:
    """Refuses an input length the encoder has no position embeddings for.

    Raises:
      ValueError: `seq_length` above `max_seq_length`, naming `flag` and both lengths.

    Example:
      >>> model.check_seq_length(64, '--seq_length')   # a model with 32 positions: ValueError
    """
    if self.max_seq_length is not None and seq_length > self.max_seq_length:
      raise ValueError(f'{flag}={seq_length} exceeds the {self.max_seq_length} position '
                       f'embeddings of {self.source!r} (max_position_embeddings); expected at most '
                       f'{self.max_seq_length}')

  def _function(self, name: str) -> Callable[..., Dict[str, tf.Tensor]]:
    if name not in self.functions:
      raise ValueError(f'{self.source!r} has no {name!r} function; it has '
                       f'{sorted(self.functions)}')
    return self.functions[name]

  def encode(self, inputs: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """`sequence_output` [batch, seq, hidden] and `pooled_output` [batch, hidden] of the encoder."""
    return serving_signatures.call_signature(
        self._function('encoder'), {k: inputs[k] for k in serving_signatures.ENCODER_INPUTS})

  def fill_mask(self, inputs: Mapping[str, np.ndarray], top_k: int
                ) -> Tuple[np.ndarray, np.ndarray]:
    """`(ids int32 [batch, n, top_k], probabilities float32 [batch, n, top_k])`, best first.

    Raises:
      ValueError: `top_k` above the `top_k` the SavedModel was exported with.
    """
    if self.top_k is not None and top_k > self.top_k:
      raise ValueError(f'top_k={top_k} exceeds the top_k={self.top_k} that {self.source!r} was '
                       'exported with; re-export with a larger --top_k')
    names = serving_signatures.ENCODER_INPUTS + (serving_signatures.MASKED_LM_POSITIONS,)
    # A SavedModel's k is fixed at export (sliced here); in-process any k is computed directly.
    extra = {} if self.top_k is not None else {'top_k': top_k}
    outputs = serving_signatures.call_signature(self._function('fill_mask'),
                                            {k: inputs[k] for k in names}, **extra)
    return outputs['top_k_ids'][..., :top_k], outputs['top_k_probs'][..., :top_k]

  def classify(self, inputs: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """`logits`, `probabilities` [batch, classes] and `predicted_class` [batch]."""
    return serving_signatures.call_signature(
        self._function('classify'), {k: inputs[k] for k in serving_signatures.ENCODER_INPUTS})

  def load_tokenizer(self, vocab_file: Optional[str] = None,
                     do_lower_case: Optional[bool] = None) -> tokenization.SubwordTokenizer:
    """The tokenizer of `vocab_file` (a vocab.txt, a tokenizer.json or a folder holding one),
    default: the vocab.txt found with the model, else the model_dir's (or the export's
    `assets.extra/`) tokenizer.json (a BPE or Unigram tokenizer: records written from one put it
    there).

    Raises:
      ValueError: no vocabulary given or found; or one whose size differs from the model's word
        embeddings or whose hash differs from the training records'.
    """
    path = vocab_file
    own = os.path.join(self.model_dir, ASSETS_EXTRA) if self.kind == SAVED_MODEL else self.model_dir
    if not path and not self.vocab_file and os.path.isfile(
        os.path.join(own, vocab_assets.TOKENIZER_JSON)):
      path = own
    if path and (os.path.isdir(path) or path.endswith('.json')):
      tokenizer = vocab_assets.load_tokenizer(path, do_lower_case)
      self.check_tokenizer(tokenizer, repr(tokenizer.source))
      return tokenizer
    vocab_file = vocab_file or self.vocab_file
    if not vocab_file:
      looked = (os.path.join(self.model_dir, ASSETS_EXTRA, VOCAB_FILE)
                if self.kind == SAVED_MODEL else os.path.join(self.model_dir, VOCAB_FILE))
      raise ValueError(f'no vocabulary for model_dir {self.model_dir!r}: pass --vocab_file '
                       f'(looked for {looked})')
    if do_lower_case is None:
      do_lower_case = True if self.do_lower_case is None else self.do_lower_case
    tokenizer = tokenization.WordPieceTokenizer.from_vocab_file(vocab_file, do_lower_case)
    self.check_tokenizer(tokenizer, f'vocab_file {vocab_file!r}')
    return tokenizer

  def check_tokenizer(self, tokenizer: Any, named: str) -> None:
    """Refuses a tokenizer other than the one the model was trained with.

    Args:
      tokenizer: a loaded tokenizer (`vocab_size`, `vocab_sha256()`).
      named: how the message names it, e.g. "vocab_file 'v.txt'".

    Raises:
      ValueError: its size differs from the model's word embeddings, or its vocabulary's
        sha256 from the one recorded at training.
    """
    if self.vocab_size is not None and tokenizer.vocab_size != self.vocab_size:
      raise ValueError(f'{named} has {tokenizer.vocab_size} tokens but the model '
                       f'{self.source!r} has {self.vocab_size} word embeddings; expected the '
                       'vocabulary the model was trained with')
    if self.vocab_sha256 and tokenizer.vocab_sha256() != self.vocab_sha256:
      raise ValueError(f'{named} differs from the vocabulary the model '
                       f'{self.source!r} was trained with (sha256 {tokenizer.vocab_sha256()} vs '
                       f'{self.vocab_sha256})')


def _from_training_dir(model_dir: str, checkpoint: Optional[str], experiment: Optional[str]
                       ) -> InferenceModel:
  params, model, path = restore_model(model_dir, checkpoint, experiment)
  encoder = serving_signatures.find_encoder(model)
  if is_pretrainer(model):
    functions = dict(serving_signatures.build_serving_module(encoder=encoder).signature_functions)

    # In-process, any top_k: the computation of the exported `fill_mask`, with k chosen per call.
    def fill_mask(input_word_ids, input_mask, input_type_ids, masked_lm_positions, top_k):
      logits = model({'input_word_ids': input_word_ids, 'input_mask': input_mask,
                      'input_type_ids': input_type_ids,
                      serving_signatures.MASKED_LM_POSITIONS: masked_lm_positions},
                     training=False)['mlm_logits']
      ids, probabilities = serving_signatures.top_k_probabilities(logits, top_k)
      return {'top_k_ids': ids, 'top_k_probs': probabilities}
    functions['fill_mask'] = fill_mask
  else:
    functions = dict(serving_signatures.build_serving_module(
        classifier=model, encoder=encoder).signature_functions)
  metadata = vocab_assets.model_dir_tokenizer_info(model_dir, params)
  vocab_file = os.path.join(model_dir, VOCAB_FILE)
  return InferenceModel(
      functions=functions, kind=TRAINING, model_dir=model_dir, source=path,
      seq_length=int(params.task.train_data.seq_length),
      vocab_file=vocab_file if tf.io.gfile.exists(vocab_file) else None,
      do_lower_case=metadata.get('do_lower_case'),
      vocab_size=serving_signatures.embedding_table_rows(encoder),
      vocab_sha256=metadata.get('vocab_sha256'),
      max_seq_length=serving_signatures.max_sequence_length(encoder))


def _position_rows(loaded: Any) -> Optional[int]:
  """Rows of the position table among a SavedModel's variables (exports that did not record it)."""
  for function in dict(loaded.signatures).values():
    for variable in function.variables:
      if 'position_embedding/embeddings' in variable.name and variable.shape.rank == 2:
        return int(variable.shape[0])
  return None


def _from_saved_model(export_dir: str) -> InferenceModel:
  try:
    loaded = tf.saved_model.load(export_dir)
  except (tf.errors.OpError, OSError, ValueError) as e:
    raise ValueError(f'SavedModel {export_dir!r}: cannot be loaded ({_first_line(e)}); expected a '
                     'complete export of official.nlp.serving.export_savedmodel') from None
  config = read_serving_config(export_dir)
  vocab_file = os.path.join(export_dir, ASSETS_EXTRA, VOCAB_FILE)
  seq_length = config.get('seq_length')
  if seq_length is None:
    raise ValueError(f'SavedModel {export_dir!r} has no {ASSETS_EXTRA}/{SERVING_CONFIG} with '
                     'seq_length; expected an export of official.nlp.serving.export_savedmodel')
  return InferenceModel(
      functions=dict(loaded.signatures), kind=SAVED_MODEL, model_dir=export_dir,
      source=export_dir,
      seq_length=int(seq_length),
      vocab_file=vocab_file if tf.io.gfile.exists(vocab_file) else None,
      do_lower_case=config.get('do_lower_case'), vocab_size=config.get('vocab_size'),
      vocab_sha256=config.get('vocab_sha256'), top_k=config.get('top_k'),
      max_seq_length=config.get('max_sequence_length') or _position_rows(loaded))


def load_inference_model(model_dir: str, checkpoint: Optional[str] = None,
                         experiment: Optional[str] = None) -> InferenceModel:
  """Loads a training model_dir or a SavedModel directory (detected) for inference.

  Args:
    model_dir: a training model_dir (params.yaml + ckpt-N) or an `export_savedmodel` directory.
    checkpoint: for a training model_dir, the checkpoint to restore (default: the latest).
    experiment: for a training model_dir, the experiment of its params.yaml (default: detected).

  Raises:
    FileNotFoundError: `model_dir` is neither kind, or has no checkpoint.
    ValueError: `checkpoint` given for a SavedModel; a checkpoint not matching params.yaml.
  """
  kind = model_dir_kind(model_dir)
  if kind == SAVED_MODEL:
    if checkpoint:
      raise ValueError(f'checkpoint {checkpoint!r} given, but model_dir {model_dir!r} is a '
                       'SavedModel (its weights are in variables/); drop the checkpoint')
    return _from_saved_model(model_dir)
  return _from_training_dir(model_dir, checkpoint, experiment)

