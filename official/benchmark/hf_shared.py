"""What the Hugging Face comparison's parent and its two children share (`compare_hf`).

The names of the frameworks, dtypes, modes and MLM-logit variants, the models' configs
(`config_path`, `model_label`, `masked_positions`), the cores (`parse_cores`) and the log line.
Standard library only: both children import it before TensorFlow or PyTorch.

Example:
  >>> masked_positions(38, 128, 32)
  10
"""

import os
import sys
import time
from typing import List

# The repository: the children run there, and `--models` names are configs of it.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG_DIR = os.path.join(REPO, 'configs', 'pretraining')
DTYPES = ('float32', 'bfloat16')
MODES = ('eager', 'compile')
OURS, HF = 'ours', 'hf'
# What the masked-LM head decodes: the masked positions only, or every position.
MASKED, ALL = 'masked', 'all'
TARGET_RATIO = 1.3  # issue 30: ours / Hugging Face tokens/s at each model, dtype and mode
SEED = 0


def config_path(model: str) -> str:
  """The YAML of `--models` entry `model`: a path, or a name in `configs/pretraining/`.

  Args:
    model: 'bert_mini' or a path ending in .yaml / .yml.

  Raises:
    FileNotFoundError: neither exists, naming the flag and the configs there are.

  Example:
    >>> config_path('bert_mini')  # '<repo>/configs/pretraining/bert_mini.yaml'
  """
  if model.endswith(('.yaml', '.yml')):
    path = model
  else:
    path = os.path.join(CONFIG_DIR, f'{model}.yaml')
  if not os.path.isfile(path):
    names = sorted(name[:-5] for name in os.listdir(CONFIG_DIR) if name.endswith('.yaml'))
    raise FileNotFoundError(f'--models: no config {path} for {model!r}; expected a YAML path or '
                            f'one of {names}')
  return path


def model_label(model: str) -> str:
  """'bert_mini' for 'bert_mini' and for 'configs/pretraining/bert_mini.yaml'.

  Example:
    >>> model_label('configs/pretraining/bert_mini.yaml')
    'bert_mini'
  """
  return os.path.splitext(os.path.basename(model))[0]


def masked_positions(config_positions: int, config_seq_length: int, seq_length: int) -> int:
  """The config's masked positions a row, scaled by `seq_length / config_seq_length`.

  Args:
    config_positions: the config's `max_predictions_per_seq`.
    config_seq_length: the config's `seq_length`.
    seq_length: the length of the run's rows.

  Example:
    >>> masked_positions(38, 128, 32)  # modernbert_mini (30%) at 32 tokens
    10
  """
  if seq_length == config_seq_length:
    return config_positions
  return max(1, min(seq_length, round(config_positions * seq_length / config_seq_length)))


def parse_cores(text: str) -> List[int]:
  """'0,2-3' -> [0, 2, 3]; '' -> the cores this process may run on.

  Args:
    text: the `--cores` flag.

  Raises:
    ValueError: a malformed list or a core this process may not use, naming `--cores`.

  Example:
    >>> parse_cores('0-1')
    [0, 1]
  """
  allowed = sorted(os.sched_getaffinity(0))
  if not text.strip():
    return allowed
  cores = set()
  try:
    for part in text.split(','):
      first, _, last = part.strip().partition('-')
      cores.update(range(int(first), int(last or first) + 1))
  except ValueError:
    raise ValueError(f'--cores: expected a list such as 0,1 or 0-3, found {text!r}') from None
  unknown = sorted(cores - set(allowed))
  if unknown or not cores:
    raise ValueError(f'--cores: {text!r} names cores {unknown or "none"} this process may not '
                     f'use; expected some of {allowed}')
  return sorted(cores)


def log(message: str) -> None:
  """Prints `[compare_hf HH:MM:SS] message` to stderr (the progress of a run).

  Example:
    >>> log('building ours')
  """
  print(f'[compare_hf {time.strftime("%H:%M:%S")}] {message}', file=sys.stderr, flush=True)


def reason(error: BaseException) -> str:
  """`Type: first line` of an exception, at most 160 characters.

  Example:
    >>> reason(RuntimeError('no C++ compiler\\nmore'))
    'RuntimeError: no C++ compiler'
  """
  lines = str(error).strip().splitlines()
  text = f'{type(error).__name__}: {lines[0] if lines else ""}'.rstrip(': ')
  return text if len(text) <= 160 else text[:157] + '...'
