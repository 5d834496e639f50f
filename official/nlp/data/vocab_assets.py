"""The vocabulary travels with the data and the model: records metadata -> model_dir -> export.

Data creation (`create_pretraining_data`, `create_finetuning_data`) stores the vocabulary's tokens
in the records' metadata (`"vocab"`, next to `vocab_sha256` and `do_lower_case`). When a run
starts training, `write_model_dir_vocab` writes them into the model_dir as

  vocab.txt               one token a line (line number = id), as BERT ships it;
  tokenizer_config.json   {"do_lower_case", "vocab_size", "vocab_sha256", "source"}

so that fill-mask, embed, export and fine-tuning find the tokenizer from the model_dir alone.
Records of another tokenizer than BERT's WordPiece (BPE, Unigram: their metadata holds the
`tokenizer.json` text, `"tokenizer_json"`) give the model_dir instead

  tokenizer.json          the text the records were made with, byte for byte;
  tokenizer_config.json   the same fields plus "tokenizer_type", "tokenizer_json_sha256" and
                          Hugging Face's "cls_token", "sep_token", "mask_token", "pad_token",
                          "unk_token" (the special-token roles, which loading it reads back)

and no vocab.txt. Records written before the vocabulary was stored (no `"vocab"` key) fall back to
the `vocab.txt` (or `tokenizer.json`) of the task's `init_checkpoint` model_dir, when there is one.

`load_tokenizer` accepts a `vocab.txt`, a `tokenizer.json`, or a directory that carries one (a
training model_dir, a SavedModel export, a Hugging Face folder), so `--vocab_file=runs/pretrain`
works everywhere.

Example:
  >>> write_model_dir_vocab('runs/tiny', params.task)   # done by train_lib at the start
  'runs/tiny/vocab.txt'
  >>> tokenizer = load_tokenizer('runs/tiny')
"""

import hashlib
import json
import logging
import os
from typing import Any, Dict, Optional, Sequence, Tuple

from official.common import file_utils
from official.nlp.data import data_metadata
from official.nlp.data import tokenization

VOCAB_FILE = 'vocab.txt'
TOKENIZER_CONFIG = 'tokenizer_config.json'
TOKENIZER_JSON = 'tokenizer.json'
ASSETS_EXTRA = 'assets.extra'
SERVING_CONFIG = 'serving_config.json'
SERVING_CONFIG_EXPECTED = 'the serving config written by export_savedmodel'
METADATA_KEY = 'vocab'


def read_json_object(path: str, expected: str) -> Dict[str, Any]:
  """The JSON object in `path` (local or any `tf.io.gfile` file system).

  Example:
    >>> read_json_object('runs/tiny/tokenizer_config.json', 'the tokenizer config')
    {'do_lower_case': True, 'vocab_size': 64, ...}

  Args:
    path: the file.
    expected: what the file should be, for the error message ('the serving config ...').

  Raises:
    ValueError: not JSON text, or JSON that is not an object, naming `path` and `expected`.
  """
  try:
    value = json.loads(file_utils.read_text(path))
  except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
    raise ValueError(f'{path}: not valid JSON ({e}); expected {expected}') from None
  if not isinstance(value, dict):
    raise ValueError(f'{path}: holds a JSON {type(value).__name__}; expected an object')
  return value


def read_tokenizer_config(model_dir: str) -> Dict[str, Any]:
  """`model_dir/tokenizer_config.json` ({} when there is none).

  Raises:
    ValueError: the file exists but is not a JSON object (naming it).
  """
  path = os.path.join(model_dir, TOKENIZER_CONFIG)
  if not file_utils.exists(path):
    return {}
  return read_json_object(path, 'the tokenizer config written with the model')


def _metadata_of(data_config: Any) -> Optional[Dict[str, Any]]:
  """The metadata JSON next to the first record file of `data_config.input_path` (pretraining or
  fine-tuning records alike: only the vocabulary fields are read), or None."""
  input_path = getattr(data_config, 'input_path', '') or ''
  if not input_path or input_path == 'dummy' or not isinstance(input_path, str):
    return None
  files = data_metadata.record_paths(input_path)
  path = data_metadata.metadata_path(files[0]) if files else None
  if path is None or not file_utils.exists(path):
    return None
  try:
    metadata = read_json_object(path, 'the metadata written with the records')
  except ValueError as e:
    logging.warning('Ignoring the metadata of %s: %s', input_path, e)
    return None
  metadata['metadata_path'] = path
  return metadata


def records_tokenizer_info(task_config: Any) -> Optional[Dict[str, Any]]:
  """The vocabulary fields of the task's training (else validation) records' metadata, or None."""
  for name in ('train_data', 'validation_data'):
    metadata = _metadata_of(getattr(task_config, name, None))
    if metadata and metadata.get('vocab_sha256'):
      return metadata
  return None


def model_dir_tokenizer_info(model_dir: str, params: Any) -> Dict[str, Any]:
  """`do_lower_case` and `vocab_sha256` of a training model_dir: its `tokenizer_config.json`, else
  the metadata of its training records ({} when neither is found)."""
  config = read_tokenizer_config(model_dir)
  if config:
    return config
  return records_tokenizer_info(params.task) or {}


def _init_checkpoint_dir(task_config: Any) -> Optional[str]:
  init = getattr(task_config, 'init_checkpoint', '') or ''
  if not init:
    return None
  directory = init if file_utils.isdir(init) else os.path.dirname(init)
  if any(file_utils.exists(os.path.join(directory, name)) for name in (VOCAB_FILE, TOKENIZER_JSON)):
    return directory
  return None


def _sha256_text(text: str) -> str:
  return hashlib.sha256(text.encode('utf-8')).hexdigest()


def _directory_vocab(directory: str) -> Tuple[str, Sequence[str]]:
  """(the vocabulary file, its tokens) of a directory with a vocab.txt or a tokenizer.json."""
  vocab_path = os.path.join(directory, VOCAB_FILE)
  if file_utils.exists(vocab_path):
    return vocab_path, tokenization.read_vocab(vocab_path)
  json_path = os.path.join(directory, TOKENIZER_JSON)
  return json_path, tokenization.tokenizer_json_vocab(json_path)


def _check_init_vocab(init_dir: str, metadata: Dict[str, Any]) -> Tuple[str, Sequence[str]]:
  """The init_checkpoint's vocabulary, refused when it differs from the records'."""
  init_path, init_tokens = _directory_vocab(init_dir)
  init_sha = tokenization.vocab_sha256(init_tokens)
  if metadata.get('vocab_sha256') and metadata['vocab_sha256'] != init_sha:
    raise ValueError(
        f'task.init_checkpoint: the pretrained model {init_dir!r} was trained with another '
        f'vocabulary (sha256 {init_sha[:12]}...) than the records of task.train_data '
        f'({metadata.get("metadata_path")}: {metadata["vocab_sha256"][:12]}...); expected records '
        f'tokenized with {init_path}')
  return init_path, init_tokens


def role_tokens_config(special_tokens: Dict[str, Optional[str]]) -> Dict[str, Optional[str]]:
  """Hugging Face's `<role>_token` keys of special-token roles (`tokenization.ROLES`).

  Example:
    >>> role_tokens_config({'cls': '<s>', 'mask': '<mask>'})
    {'cls_token': '<s>', 'mask_token': '<mask>'}
  """
  return {f'{role}_token': token for role, token in special_tokens.items()}


def _write_model_dir_tokenizer_json(model_dir: str, metadata: Dict[str, Any],
                                    init_dir: Optional[str]) -> str:
  """`write_model_dir_vocab` for records of a tokenizer.json (BPE, Unigram, ...)."""
  source = metadata.get('metadata_path')
  text = metadata['tokenizer_json']
  sha = _sha256_text(text)
  if metadata.get('tokenizer_json_sha256') not in (None, sha):
    raise ValueError(f'{source}: its "tokenizer_json" text does not match its '
                     'tokenizer_json_sha256; expected metadata written by create_pretraining_data '
                     '(recreate the records)')
  if init_dir:
    _check_init_vocab(init_dir, metadata)
  vocab_path = os.path.join(model_dir, VOCAB_FILE)
  if file_utils.exists(vocab_path):
    raise ValueError(f'model_dir {model_dir!r} holds a vocab.txt (a WordPiece vocabulary) but the '
                     f'records ({source}) were made with a {metadata.get("tokenizer_type")} '
                     'tokenizer.json; expected the records this model was trained on (or a new '
                     '--model_dir)')
  path = os.path.join(model_dir, TOKENIZER_JSON)
  if file_utils.exists(path):
    existing = _sha256_text(file_utils.read_text(path))
    if existing != sha:
      raise ValueError(f'model_dir {model_dir!r} holds a tokenizer.json (sha256 '
                       f'{existing[:12]}...) other than the one of the records ({source}: '
                       f'{sha[:12]}...); expected the records this model was trained on (or a new '
                       '--model_dir)')
  else:
    file_utils.makedirs(model_dir)
    file_utils.atomic_write_text(path, text)
  config = {'do_lower_case': metadata.get('do_lower_case'),
            'vocab_size': metadata.get('vocab_size'), 'vocab_sha256': metadata.get('vocab_sha256'),
            'source': source, 'tokenizer_type': metadata.get('tokenizer_type'),
            'tokenizer_json_sha256': sha,
            **role_tokens_config(metadata.get('special_tokens') or {})}
  file_utils.atomic_write_text(os.path.join(model_dir, TOKENIZER_CONFIG),
                               json.dumps(config, indent=2) + '\n')
  return path


def write_tokenizer_json(directory: str, tokenizer_json: str) -> str:
  """Copies a `tokenizer.json` into `directory` with the `tokenizer_config.json` of a model_dir
  (its special-token roles, as found beside the source: see `tokenization`).

  Args:
    directory: the destination (created; a tokenizer.json of other content there is refused).
    tokenizer_json: the source file (a Hugging Face folder's, a model_dir's).

  Returns:
    `directory/tokenizer.json`.

  Example:
    >>> write_tokenizer_json('/tmp/ours', 'ModernBERT-base/tokenizer.json')
    '/tmp/ours/tokenizer.json'
  """
  tokenizer = tokenization.SubwordTokenizer.from_tokenizer_json(tokenizer_json)
  metadata = dict(tokenizer.metadata_fields(), metadata_path=tokenizer_json)
  if metadata.get('tokenizer_json') is None:  # BERT's WordPiece: its vocab.txt
    metadata['tokenizer_json'] = file_utils.read_text(tokenizer_json)
    metadata.update(tokenizer_type=tokenizer.kind, special_tokens=tokenizer.special_tokens)
  return _write_model_dir_tokenizer_json(directory, metadata, None)


def write_records_tokenizer(directory: str, metadata: Dict[str, Any]) -> Optional[str]:
  """Writes the tokenizer.json stored in records metadata (and its roles' `tokenizer_config.json`)
  into `directory`; None when the metadata holds none (WordPiece records).

  Example:
    >>> write_records_tokenizer('/tmp/t', data_metadata.load_metadata('data/train.tfrecord'))
    '/tmp/t/tokenizer.json'
  """
  if not metadata.get('tokenizer_json'):
    return None
  return _write_model_dir_tokenizer_json(directory, metadata, None)


def _copy_init_tokenizer_json(model_dir: str, init_dir: str) -> str:
  """Gives `model_dir` the tokenizer.json (and its roles) of the init_checkpoint's directory."""
  return write_tokenizer_json(model_dir, os.path.join(init_dir, TOKENIZER_JSON))


def write_model_dir_vocab(model_dir: str, task_config: Any) -> Optional[str]:
  """Writes `vocab.txt` and `tokenizer_config.json` into `model_dir` (see the module docstring).

  Sources, in order: the tokens stored in the records' metadata; the `vocab.txt` of the
  `init_checkpoint`'s model_dir. A model_dir that already has the same vocabulary is left as it
  is. Records of a tokenizer.json other than BERT's WordPiece (their metadata holds
  `tokenizer_json`) give `tokenizer.json` instead of `vocab.txt` (module docstring), as does an
  `init_checkpoint` directory that has only a tokenizer.json.

  Args:
    model_dir: the training run's directory.
    task_config: the task config (its `train_data` / `validation_data` and `init_checkpoint`).

  Returns:
    The path of `model_dir/vocab.txt` (or `model_dir/tokenizer.json`), or None when no vocabulary
    is known.

  Raises:
    ValueError: the model_dir already holds another vocabulary (a run resumed on records made
      with another vocabulary), or the `init_checkpoint`'s vocabulary differs from the records'.
  """
  metadata = records_tokenizer_info(task_config) or {}
  init_dir = _init_checkpoint_dir(task_config)
  if metadata.get('tokenizer_json'):
    return _write_model_dir_tokenizer_json(model_dir, metadata, init_dir)
  tokens: Optional[Sequence[str]] = metadata.get(METADATA_KEY)
  do_lower_case = metadata.get('do_lower_case')
  source = metadata.get('metadata_path')
  if init_dir:
    init_path, init_tokens = _check_init_vocab(init_dir, metadata)
    if tokens is None and init_path.endswith(TOKENIZER_JSON):
      return _copy_init_tokenizer_json(model_dir, init_dir)
    if tokens is None:
      tokens, source = init_tokens, init_path
      if do_lower_case is None:
        do_lower_case = read_tokenizer_config(init_dir).get('do_lower_case')
  if tokens is None:
    logging.info('No vocabulary recorded with the records of task.train_data: %s/%s not '
                 'written (fill_mask, embed and export then need --vocab_file).', model_dir,
                 VOCAB_FILE)
    return None
  sha = tokenization.vocab_sha256(tokens)
  if metadata.get('vocab_sha256') and metadata.get(METADATA_KEY) is tokens and \
      sha != metadata['vocab_sha256']:
    raise ValueError(f'{source}: its "vocab" tokens do not match its vocab_sha256; expected '
                     'metadata written by create_pretraining_data (recreate the records)')
  vocab_path = os.path.join(model_dir, VOCAB_FILE)
  if file_utils.exists(os.path.join(model_dir, TOKENIZER_JSON)) and \
      not file_utils.exists(vocab_path):
    existing = tokenization.vocab_sha256(
        tokenization.tokenizer_json_vocab(os.path.join(model_dir, TOKENIZER_JSON)))
    if existing != sha:
      raise ValueError(f'model_dir {model_dir!r} holds a tokenizer.json (sha256 '
                       f'{existing[:12]}...) other than the vocabulary of the records ({source}: '
                       f'{sha[:12]}...); expected the records this model was trained on (or a new '
                       '--model_dir)')
  if file_utils.exists(vocab_path):
    existing = tokenization.vocab_sha256(tokenization.read_vocab(vocab_path))
    if existing != sha:
      raise ValueError(f'model_dir {model_dir!r} holds a vocab.txt (sha256 {existing[:12]}...) '
                       f'other than the one of the records ({source}: {sha[:12]}...); expected '
                       'the records this model was trained on (or a new --model_dir)')
  else:
    file_utils.makedirs(model_dir)
    file_utils.atomic_write_text(vocab_path, ''.join(t + '\n' for t in tokens))
  config = {'do_lower_case': do_lower_case, 'vocab_size': len(tokens), 'vocab_sha256': sha,
            'source': source}
  file_utils.atomic_write_text(os.path.join(model_dir, TOKENIZER_CONFIG),
                               json.dumps(config, indent=2) + '\n')
  return vocab_path


def find_vocab_file(path: str) -> str:
  """A vocabulary file for `path`: the file itself, or the `vocab.txt` / `tokenizer.json` that a
  directory (a training model_dir, a SavedModel export, a vocab_dir, a Hugging Face folder)
  carries, in that order.

  Example:
    >>> find_vocab_file('runs/modernbert_dapt')     # a model_dir of BPE records
    'runs/modernbert_dapt/tokenizer.json'

  Raises:
    ValueError: no such path, or a directory without a vocabulary (naming where it looked).
  """
  if not file_utils.exists(path):
    raise ValueError(f'vocabulary {path!r}: no such file or directory; expected a vocab.txt, a '
                     'tokenizer.json or a model_dir that carries one')
  if not file_utils.isdir(path):
    return path
  candidates = [os.path.join(path, VOCAB_FILE), os.path.join(path, ASSETS_EXTRA, VOCAB_FILE),
                os.path.join(path, TOKENIZER_JSON),
                os.path.join(path, ASSETS_EXTRA, TOKENIZER_JSON)]
  for candidate in candidates:
    if file_utils.exists(candidate):
      return candidate
  raise ValueError(f'vocabulary {path!r}: a directory without a vocabulary; expected one of '
                   f'{", ".join(os.path.relpath(c, path) for c in candidates)} in it')


def recorded_do_lower_case(directory: str) -> Optional[bool]:
  """The `do_lower_case` a model_dir's `tokenizer_config.json` (or an export's serving config)
  records, or None."""
  config = read_tokenizer_config(directory)
  serving_config = os.path.join(directory, ASSETS_EXTRA, SERVING_CONFIG)
  if not config and file_utils.exists(serving_config):
    config = read_json_object(serving_config, SERVING_CONFIG_EXPECTED)
  return config.get('do_lower_case')


def load_tokenizer(path: str, do_lower_case: Optional[bool] = None
                   ) -> tokenization.SubwordTokenizer:
  """The tokenizer of a `vocab.txt`, a `tokenizer.json`, or a directory carrying one.

  A vocab.txt gives a `WordPieceTokenizer`; a tokenizer.json of any model a
  `tokenization.SubwordTokenizer`, whose special tokens the `tokenizer_config.json` beside it
  may name (a training model_dir's and a Hugging Face folder's do).

  Args:
    path: the vocabulary file, or a model_dir / export / vocabulary / Hugging Face directory.
    do_lower_case: lower-case the input (a vocab.txt only); None: what the directory records
      (`recorded_do_lower_case`), else True.

  Example:
    >>> load_tokenizer('runs/tiny').tokenize('Hello world')
    ['hello', 'world']
    >>> load_tokenizer('runs/modernbert_dapt').special_tokens['mask']   # its tokenizer.json's
    '[MASK]'
  """
  vocab_file = find_vocab_file(path)
  if vocab_file.endswith('.json'):
    return tokenization.SubwordTokenizer.from_tokenizer_json(vocab_file)
  if do_lower_case is None and file_utils.isdir(path):
    do_lower_case = recorded_do_lower_case(path)
  return tokenization.WordPieceTokenizer.from_vocab_file(
      vocab_file, True if do_lower_case is None else do_lower_case)


def load_tokenizer_from_flags(vocab_file: Optional[str] = None,
                              tokenizer_json: Optional[str] = None,
                              do_lower_case: bool = True) -> tokenization.SubwordTokenizer:
  """The tokenizer that `--vocab_file` / `--tokenizer_json` / `--do_lower_case` name.

  As `tokenization.load_tokenizer` (exactly one of `vocab_file` and `tokenizer_json`), except that
  `vocab_file` may also be a directory that carries a vocabulary (a training model_dir, a
  SavedModel export): there the `do_lower_case` the directory records wins, because a flag's
  default cannot tell whether the user chose it. Data creation and the tasks' `vocab_file` fields
  use this.

  Args:
    vocab_file: a `vocab.txt`, or a directory carrying a vocabulary (see `find_vocab_file`).
    tokenizer_json: a Hugging Face `tokenizer.json` (instead of `vocab_file`).
    do_lower_case: lower-case the input (a vocab.txt without a recorded choice only).

  Raises:
    ValueError: both or neither of `vocab_file` and `tokenizer_json`, or a directory without a
      vocabulary.

  Example:
    >>> load_tokenizer_from_flags(vocab_file='runs/pretrain').do_lower_case  # as recorded
    False
  """
  if vocab_file and not tokenizer_json and file_utils.isdir(vocab_file):
    recorded = recorded_do_lower_case(vocab_file)
    return load_tokenizer(vocab_file, do_lower_case if recorded is None else recorded)
  return tokenization.load_tokenizer(vocab_file, tokenizer_json, do_lower_case)


class ModelDirVocabMixin:
  """Gives a task's model_dir the vocabulary of its records (`write_model_dir_vocab`).

  Example:
    >>> class MyTask(ModelDirVocabMixin, base_task.Task): ...
  """

  def write_model_dir_assets(self, model_dir: str) -> None:
    write_model_dir_vocab(model_dir, self.task_config)
