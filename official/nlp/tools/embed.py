r"""Sentence embeddings: one vector per line of text from a training model_dir or a SavedModel.

Each line is tokenized as `[CLS] line [SEP]` (cut to `seq_length` tokens) and run through the
encoder in batches. Pooling:
- `mean`: the mean of `sequence_output` over the positions where `input_mask` is 1 (all tokens
  including [CLS] and [SEP], no padding);
- `cls`: `sequence_output` at [CLS] (position 0);
- `pooled`: the encoder's `pooled_output` (a tanh dense layer over [CLS]; note that pretraining
  alone does not train it).

Output: float32 [lines, hidden] as `.npy`, or JSON lines
`{"line": i, "text": ..., "embedding": [...]}`.

Usage:
  python -m official.nlp.tools.embed --model_dir=runs/tiny --input_file=sentences.txt \
    --output_file=embeddings.npy [--pooling=mean] [--format=npy|jsonl] [--batch_size=32] \
    [--overwrite]

An existing --output_file is refused (before any work) unless --overwrite. Errors print one line
and exit 1; bad flags (including a --seq_length above the model's positions) exit 2.

Example:
  >>> model = inference.load_inference_model('exports/tiny')
  >>> embed_texts(model, model.load_tokenizer(), ['a sentence', 'another'], pooling='mean').shape
  (2, 128)
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import json
import os
import sys
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import tqdm
from absl import flags

from official.nlp.data import tokenization
from official.nlp.serving import cli_utils
from official.nlp.serving import inference

POOLINGS = ('mean', 'cls', 'pooled')
FORMATS = ('npy', 'jsonl')
PROGRAM = 'embed'


def encode_texts(tokenizer: tokenization.WordPieceTokenizer, texts: Sequence[str],
                 seq_length: int) -> Tuple[Dict[str, np.ndarray], int]:
  """Encoder inputs of `[CLS] text [SEP]` per text, padded to the longest (at most `seq_length`).

  Returns:
    The int32 inputs [len(texts), length] and how many texts were cut to `seq_length` tokens.
  """
  token_ids = tokenizer.encode_batch(texts)
  cls_id = tokenizer.token_to_id[tokenization.CLS_TOKEN]
  sep_id = tokenizer.token_to_id[tokenization.SEP_TOKEN]
  rows = [[cls_id] + ids[:seq_length - 2] + [sep_id] for ids in token_ids]
  truncated = sum(len(ids) > seq_length - 2 for ids in token_ids)
  length = max(len(row) for row in rows)
  word_ids = np.zeros([len(rows), length], np.int32)
  mask = np.zeros_like(word_ids)
  for i, row in enumerate(rows):
    word_ids[i, :len(row)] = row
    mask[i, :len(row)] = 1
  return {'input_word_ids': word_ids, 'input_mask': mask,
          'input_type_ids': np.zeros_like(word_ids)}, truncated


def pool(outputs: Dict[str, np.ndarray], input_mask: np.ndarray, pooling: str) -> np.ndarray:
  """float32 [batch, hidden] sentence vectors from the encoder outputs (see the module docstring).

  Raises:
    ValueError: an unknown `pooling`.
  """
  if pooling == 'mean':
    mask = input_mask.astype(np.float32)[:, :, None]
    return (outputs['sequence_output'] * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)
  if pooling == 'cls':
    return outputs['sequence_output'][:, 0]
  if pooling == 'pooled':
    return outputs['pooled_output']
  raise ValueError(f'pooling {pooling!r}: expected one of {", ".join(POOLINGS)}')


def embed_texts(model: inference.InferenceModel, tokenizer: tokenization.WordPieceTokenizer,
                texts: Sequence[str], pooling: str = 'mean', batch_size: int = 32,
                seq_length: Optional[int] = None, show_progress: bool = False
                ) -> Tuple[np.ndarray, int]:
  """Sentence embeddings of `texts` in batches.

  Args:
    model: a loaded training model_dir or SavedModel (`inference.load_inference_model`).
    tokenizer: the model's tokenizer.
    texts: the sentences (an empty one gives the embedding of `[CLS] [SEP]`).
    pooling: `mean`, `cls` or `pooled`.
    batch_size: texts per encoder call.
    seq_length: the longest input in tokens (default: the model's).
    show_progress: a tqdm progress bar on stderr.

  Returns:
    `(embeddings float32 [len(texts), hidden], number of texts cut to seq_length)`.

  Raises:
    ValueError: an unknown pooling, `batch_size` < 1, `seq_length` above the model's positions.
  """
  if pooling not in POOLINGS:
    raise ValueError(f'pooling {pooling!r}: expected one of {", ".join(POOLINGS)}')
  if batch_size < 1:
    raise ValueError(f'batch_size must be >= 1; found {batch_size}')
  seq_length = seq_length or model.seq_length
  model.check_seq_length(seq_length)
  chunks: List[np.ndarray] = []
  truncated = 0
  with tqdm.tqdm(total=len(texts), unit='line', disable=not show_progress,
                 file=sys.stderr) as progress:
    for start in range(0, len(texts), batch_size):
      batch = texts[start:start + batch_size]
      inputs, cut = encode_texts(tokenizer, batch, seq_length)
      truncated += cut
      chunks.append(pool(model.encode(inputs), inputs['input_mask'], pooling).astype(np.float32))
      progress.update(len(batch))
  if not chunks:
    return np.zeros([0, 0], np.float32), 0
  return np.concatenate(chunks), truncated


def read_lines(input_file: str) -> List[str]:
  """The lines of `input_file` (`-`: stdin) without their line breaks."""
  if input_file == '-':
    return [line.rstrip('\r\n') for line in sys.stdin]
  with open(input_file, encoding='utf-8') as f:
    return [line.rstrip('\r\n') for line in f]


def write_embeddings(embeddings: np.ndarray, texts: Iterable[str], output_file: str,
                     output_format: str) -> None:
  """Writes `.npy` (float32 [lines, hidden]) or JSON lines (`-` writes JSON lines to stdout).

  The file is written at `output_file` exactly (no `.npy` added), its directory created.

  Raises:
    ValueError: `.npy` to stdout.
    OSError: the file cannot be written (permissions, a full disk, a file where a directory is).
  """
  if output_file != '-':
    parent = os.path.dirname(output_file)
    if parent:
      os.makedirs(parent, exist_ok=True)
  if output_format == 'npy':
    if output_file == '-':
      raise ValueError('--output_file=- (stdout) needs --format=jsonl; .npy goes to a file')
    with open(output_file, 'wb') as f:  # a handle: np.save would add `.npy` to other names
      np.save(f, embeddings)
    return
  out = sys.stdout if output_file == '-' else open(output_file, 'w', encoding='utf-8')
  try:
    for i, (text, vector) in enumerate(zip(texts, embeddings)):
      out.write(json.dumps({'line': i, 'text': text,
                            'embedding': [float(v) for v in vector]}) + '\n')
  finally:
    if out is not sys.stdout:
      out.close()


def _define_flags() -> flags.FlagValues:
  fv = flags.FlagValues()
  cli_utils.define_model_flags(fv)
  flags.DEFINE_string('input_file', '-', 'Text file, one sentence a line (-: stdin).',
                      flag_values=fv)
  flags.DEFINE_string('output_file', None, 'Where the embeddings go (.npy, or JSON lines with '
                      '--format=jsonl; -: stdout for jsonl).', flag_values=fv)
  flags.DEFINE_enum('format', None, FORMATS, 'Output format (default: jsonl when --output_file '
                    'ends in .jsonl or is -, else npy).', flag_values=fv)
  flags.DEFINE_enum('pooling', 'mean', POOLINGS, 'mean: over input_mask; cls: the [CLS] vector; '
                    'pooled: the encoder pooler output.', flag_values=fv)
  flags.DEFINE_integer('batch_size', 32, 'Lines per encoder call.', lower_bound=1, flag_values=fv)
  flags.DEFINE_integer('seq_length', None, 'Longest input in tokens (default: the model\'s).',
                       lower_bound=2, flag_values=fv)
  flags.DEFINE_boolean('progress', True, 'Show a progress bar on stderr.', flag_values=fv)
  flags.DEFINE_boolean('overwrite', False, 'Replace an existing --output_file (without it, an '
                       'existing file is refused before any work).', flag_values=fv)
  flags.mark_flags_as_required(['model_dir', 'output_file'], flag_values=fv)
  return fv


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point (`mlm-embed`)."""
  fv = _define_flags()
  status = cli_utils.parse_flags(fv, argv, PROGRAM, __doc__)
  if status is not None:
    return status
  output_format = fv.format or ('jsonl' if fv.output_file == '-' or
                                fv.output_file.endswith('.jsonl') else 'npy')
  try:
    if output_format == 'npy' and fv.output_file == '-':
      raise ValueError('--output_file=- (stdout) needs --format=jsonl; .npy goes to a file')
    # Before the corpus is read and the model loaded: a bad output path should cost nothing.
    cli_utils.check_output_file(fv.output_file, '--output_file', fv.overwrite)
    if fv.input_file != '-' and not os.path.exists(fv.input_file):
      raise ValueError(f'--input_file={fv.input_file}: no such file; expected a text file, one '
                       'sentence a line (or - for stdin)')
    if fv.input_file != '-' and os.path.isdir(fv.input_file):
      raise ValueError(f'--input_file={fv.input_file}: a directory; expected a text file, one '
                       'sentence a line')
    try:
      texts = read_lines(fv.input_file)
    except UnicodeDecodeError as e:
      raise ValueError(f'--input_file={fv.input_file}: not UTF-8 text ({e.reason} at byte '
                       f'{e.start}); expected a text file, one sentence a line') from None
    if not texts:
      raise ValueError(f'--input_file={fv.input_file}: no lines to embed')
    model = inference.load_inference_model(fv.model_dir, fv.checkpoint_path)
    if fv.seq_length:
      try:
        model.check_seq_length(fv.seq_length, '--seq_length')
      except ValueError as e:
        return cli_utils.error(PROGRAM, str(e), status=2)
    tokenizer = model.load_tokenizer(fv.vocab_file, fv.do_lower_case)
    embeddings, truncated = embed_texts(model, tokenizer, texts, fv.pooling, fv.batch_size,
                                        fv.seq_length, show_progress=fv.progress)
    write_embeddings(embeddings, texts, fv.output_file, output_format)
  except cli_utils.USER_ERRORS as e:
    return cli_utils.error(PROGRAM, cli_utils.message_of(e))
  if truncated:
    print(f'{PROGRAM}: {truncated} of {len(texts)} lines were cut to '
          f'{fv.seq_length or model.seq_length} tokens', file=sys.stderr)
  if fv.output_file != '-':
    print(f'wrote {embeddings.shape[0]} x {embeddings.shape[1]} {fv.pooling} embeddings to '
          f'{fv.output_file}', file=sys.stderr)
  return 0


if __name__ == '__main__':
  sys.exit(main())
