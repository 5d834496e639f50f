r"""Embeddings from a training model_dir or a SavedModel: one vector per line, or per word.

Each line is tokenized as `[CLS] line [SEP]` (cut to `seq_length` tokens) and run through the
encoder in batches. Sentence pooling (`--pooling`, one vector per line):
- `mean`: the mean of `sequence_output` over the positions where `input_mask` is 1 (all tokens
  including [CLS] and [SEP], no padding);
- `cls`: `sequence_output` at [CLS] (position 0);
- `pooled`: the encoder's `pooled_output`: BERT's tanh dense layer over [CLS] (note that
  pretraining alone does not train it without a next-sentence head); ModernBERT has no pooler, so
  there it is the [CLS] vector, the same as `cls`.

Contextual token embeddings (`--token_level`): one vector per word instance, from the last layer's
`sequence_output` of the word's line. Words are what the tokenizer's pre-tokenizer splits a line
into before WordPiece (runs of letters and digits, each punctuation character); a word's vector is
its first sub-word's (`--subword_pooling=first`) or the mean of its sub-words' (`mean`). A word
whose sub-words do not all fit in `seq_length` is left out and counted in the 'cut' message.

Z-scores (`--fit_zscore`, `--zscore`): per-dimension standardisation, `(x - mean) / std`.
`--fit_zscore=stats.npz` fits mean and std on the vectors of --input_file (the corpus), saves them
with what they were fitted on (see `embedding_stats`) and writes the output standardised;
`--zscore=stats.npz` applies saved stats, refusing stats of another hidden size or pooling.

Output: float32 [lines or words, hidden] as `.npy`, or JSON lines `{"line": i, "text": ...,
"embedding": [...]}`; token level: `{"line", "word_index", "word", "embedding"}` per word, and
next to an `.npy` a sidecar `<output_file>.words.tsv` (`line`, `word_index`, `word`, one row per
vector, a header first).

Usage:
  python -m official.nlp.tools.embed --model_dir=runs/tiny --input_file=sentences.txt \
    --output_file=embeddings.npy [--pooling=mean] [--format=npy|jsonl] [--batch_size=32] \
    [--overwrite]
  python -m official.nlp.tools.embed --model_dir=runs/tiny --input_file=corpus.txt \
    --output_file=words.npy --token_level [--subword_pooling=first|mean] \
    [--fit_zscore=stats.npz | --zscore=stats.npz]

An existing --output_file (or its sidecar, or --fit_zscore file) is refused (before any work)
unless --overwrite. Errors print one line and exit 1; bad flags (including a --seq_length above the
model's positions, or flags that do not go together) exit 2.

Example:
  >>> model = inference.load_inference_model('exports/tiny')
  >>> embed_texts(model, model.load_tokenizer(), ['a sentence', 'another'], pooling='mean')[0].shape
  (2, 128)
  >>> token_embeddings(model, model.load_tokenizer(), ['the river bank']).vectors.shape
  (3, 128)
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import dataclasses
import json
import os
import sys
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import tqdm
from absl import flags

from official.common import cli_utils
from official.nlp.data import tokenization
from official.nlp.serving import inference
from official.nlp.tools import embedding_stats

POOLINGS = ('mean', 'cls', 'pooled')
SUBWORD_POOLINGS = ('first', 'mean')
FORMATS = ('npy', 'jsonl')
PROGRAM = 'embed'


def encode_texts(tokenizer: tokenization.WordPieceTokenizer, texts: Sequence[str],
                 seq_length: int) -> Tuple[Dict[str, np.ndarray], int]:
  """Encoder inputs of `[CLS] text [SEP]` per text, padded to the longest (at most `seq_length`).

  Returns:
    The int32 inputs [len(texts), length] and how many texts were cut to `seq_length` tokens.
  """
  token_ids = tokenizer.encode_batch(texts)
  truncated = sum(len(ids) > seq_length - 2 for ids in token_ids)
  return _encoder_inputs(tokenizer, token_ids, seq_length), truncated


def _encoder_inputs(tokenizer: tokenization.WordPieceTokenizer, token_ids: Sequence[List[int]],
                    seq_length: int) -> Dict[str, np.ndarray]:
  """int32 inputs of `[CLS] ids[:seq_length - 2] [SEP]` per row, padded to the longest row."""
  cls_id = tokenizer.token_to_id[tokenization.CLS_TOKEN]
  sep_id = tokenizer.token_to_id[tokenization.SEP_TOKEN]
  rows = [[cls_id] + list(ids[:seq_length - 2]) + [sep_id] for ids in token_ids]
  length = max(len(row) for row in rows)
  word_ids = np.zeros([len(rows), length], np.int32)
  mask = np.zeros_like(word_ids)
  for i, row in enumerate(rows):
    word_ids[i, :len(row)] = row
    mask[i, :len(row)] = 1
  return {'input_word_ids': word_ids, 'input_mask': mask,
          'input_type_ids': np.zeros_like(word_ids)}


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


@dataclasses.dataclass
class TokenEmbeddings:
  """One vector per word instance of some lines (`token_embeddings`).

  Attributes:
    vectors: float32 [words, hidden], in line order, then word order.
    lines: int64 [words]: the line (index into the texts) of each vector.
    word_indices: int64 [words]: the word's index within its line.
    words: the words as written in their line (the text their sub-words cover).
    cut_lines: lines cut to `seq_length` tokens.
    cut_words: words left out because (some of) their sub-words did not fit in `seq_length`.
  """
  vectors: np.ndarray
  lines: np.ndarray
  word_indices: np.ndarray
  words: List[str]
  cut_lines: int = 0
  cut_words: int = 0


def split_words(tokenizer: tokenization.WordPieceTokenizer, texts: Sequence[str]
                ) -> List[Tuple[List[int], List[Tuple[str, int, int]]]]:
  """Sub-word ids and words of each text, the words as the tokenizer's pre-tokenizer splits them.

  Words are the units WordPiece splits into sub-words (BERT: after normalisation, runs of letters
  and digits, and each punctuation character on its own).

  Returns:
    Per text, `(ids, words)` with `words` a list of `(word, start, end)`: the word as written in
    the text and the positions `ids[start:end]` of its sub-words.

  Example:
    >>> split_words(tokenizer, ['Unaffable cats.'])
    [([7, 8, 9, 10, 11], [('Unaffable', 0, 3), ('cats', 3, 4), ('.', 4, 5)])]
  """
  result = []
  encodings = tokenizer.backend.encode_batch(list(texts), add_special_tokens=False)
  for text, encoding in zip(texts, encodings):
    spans: List[List[int]] = []  # [first sub-word, end sub-word, first char, end char]
    previous = None
    for position, (word_id, (begin, end)) in enumerate(zip(encoding.word_ids, encoding.offsets)):
      if word_id is not None and word_id == previous:  # the next sub-word of the same word
        spans[-1][1], spans[-1][3] = position + 1, end
      else:
        spans.append([position, position + 1, begin, end])
      previous = word_id
    result.append((list(encoding.ids), [(text[b:e], s, t) for s, t, b, e in spans]))
  return result


def token_embeddings(model: inference.InferenceModel,
                     tokenizer: tokenization.WordPieceTokenizer, texts: Sequence[str],
                     subword_pooling: str = 'first', batch_size: int = 32,
                     seq_length: Optional[int] = None, show_progress: bool = False
                     ) -> TokenEmbeddings:
  """Contextual embeddings: one vector per word instance, from the last layer's `sequence_output`.

  Each text is encoded as `[CLS] text [SEP]` (as `embed_texts` does, so a word's context is its
  whole line); a word's vector is its first sub-word's (`first`) or the mean of its sub-words'
  (`mean`). Words whose sub-words do not all fit in `seq_length - 2` are left out and counted.

  Args:
    model: a loaded training model_dir or SavedModel (`inference.load_inference_model`).
    tokenizer: the model's tokenizer.
    texts: the lines (an empty one has no words).
    subword_pooling: `first` or `mean`.
    batch_size: lines per encoder call.
    seq_length: the longest input in tokens (default: the model's).
    show_progress: a tqdm progress bar on stderr.

  Returns:
    A `TokenEmbeddings` (vectors float32 [words, hidden]).

  Raises:
    ValueError: an unknown `subword_pooling`, `batch_size` < 1, `seq_length` above the model's
      positions.

  Example:
    >>> result = token_embeddings(model, tokenizer, ['the river bank', 'the bank loan'])
    >>> result.vectors.shape, result.words
    ((6, 128), ['the', 'river', 'bank', 'the', 'bank', 'loan'])
  """
  if subword_pooling not in SUBWORD_POOLINGS:
    raise ValueError(f'subword_pooling {subword_pooling!r}: expected one of '
                     f'{", ".join(SUBWORD_POOLINGS)}')
  if batch_size < 1:
    raise ValueError(f'batch_size must be >= 1; found {batch_size}')
  seq_length = seq_length or model.seq_length
  model.check_seq_length(seq_length)
  room = seq_length - 2
  chunks: List[np.ndarray] = []
  lines: List[int] = []
  word_indices: List[int] = []
  words: List[str] = []
  cut_lines = cut_words = 0
  hidden = 0
  with tqdm.tqdm(total=len(texts), unit='line', disable=not show_progress,
                 file=sys.stderr) as progress:
    for first_line in range(0, len(texts), batch_size):
      batch = split_words(tokenizer, texts[first_line:first_line + batch_size])
      inputs = _encoder_inputs(tokenizer, [ids for ids, _ in batch], seq_length)
      sequence = np.asarray(model.encode(inputs)['sequence_output'], np.float64)
      hidden = sequence.shape[-1]
      rows, starts, ends = [], [], []
      for row, (ids, line_words) in enumerate(batch):
        cut_lines += len(ids) > room
        for index, (word, start, end) in enumerate(line_words):
          if end > room:
            cut_words += 1
            continue
          rows.append(row)
          starts.append(start + 1)  # + 1: after [CLS]
          ends.append(end + 1)
          lines.append(first_line + row)
          word_indices.append(index)
          words.append(word)
      if rows:
        rows_, starts_, ends_ = np.array(rows), np.array(starts), np.array(ends)
        if subword_pooling == 'first':
          vectors = sequence[rows_, starts_]
        else:  # mean over [start, end) from a running sum along the sequence
          running = np.concatenate([np.zeros_like(sequence[:, :1]), sequence.cumsum(axis=1)],
                                   axis=1)
          vectors = ((running[rows_, ends_] - running[rows_, starts_]) /
                     (ends_ - starts_)[:, None])
        chunks.append(vectors.astype(np.float32))
      progress.update(len(batch))
  return TokenEmbeddings(
      vectors=np.concatenate(chunks) if chunks else np.zeros([0, hidden], np.float32),
      lines=np.array(lines, np.int64), word_indices=np.array(word_indices, np.int64),
      words=words, cut_lines=cut_lines, cut_words=cut_words)


def nearest_neighbours(vectors: np.ndarray, k: int = 1) -> Tuple[np.ndarray, np.ndarray]:
  """The `k` most cosine-similar other rows of each row of `vectors`, most similar first.

  Args:
    vectors: float [n, hidden] (a zero row has similarity 0 to everything).
    k: neighbours per row (at most n - 1 are returned).

  Returns:
    `(indices int64 [n, min(k, n - 1)], cosine similarities float32 [n, min(k, n - 1)])`; a row
    is never its own neighbour.

  Raises:
    ValueError: `k` < 1 or `vectors` not 2-D.

  Example:
    >>> nearest_neighbours(np.array([[1., 0.], [0.9, 0.1], [0., 1.]]), k=1)[0]
    array([[1], [0], [1]])
  """
  vectors = np.asarray(vectors, np.float64)
  if k < 1 or vectors.ndim != 2:
    raise ValueError(f'nearest_neighbours: expected k >= 1 and vectors [n, hidden]; found k={k}, '
                     f'shape {list(vectors.shape)}')
  norms = np.linalg.norm(vectors, axis=1, keepdims=True)
  unit = vectors / np.where(norms > 0, norms, 1.0)
  similarity = unit @ unit.T
  np.fill_diagonal(similarity, -np.inf)
  k = min(k, max(len(vectors) - 1, 0))
  order = np.argsort(-similarity, axis=1, kind='stable')[:, :k]
  return order.astype(np.int64), np.take_along_axis(similarity, order, axis=1).astype(np.float32)


def words_file(output_file: str) -> str:
  """The sidecar of a token-level `.npy`: one row per vector (`line`, `word_index`, `word`)."""
  return output_file + '.words.tsv'


def write_token_embeddings(result: TokenEmbeddings, output_file: str, output_format: str) -> None:
  """Writes token-level vectors: `.npy` float32 [words, hidden] plus `words_file(output_file)`
  (tab-separated `line word_index word`, a header first), or JSON lines
  `{"line", "word_index", "word", "embedding"}` (`-`: stdout).

  Raises:
    ValueError: `.npy` to stdout.
    OSError: a file cannot be written.
  """
  if output_format == 'npy':
    write_embeddings(result.vectors, [], output_file, 'npy')
    with open(words_file(output_file), 'w', encoding='utf-8') as f:
      f.write('line\tword_index\tword\n')
      for line, index, word in zip(result.lines, result.word_indices, result.words):
        f.write(f'{line}\t{index}\t{word}\n')
    return
  if output_file != '-' and os.path.dirname(output_file):
    os.makedirs(os.path.dirname(output_file), exist_ok=True)
  out = sys.stdout if output_file == '-' else open(output_file, 'w', encoding='utf-8')
  try:
    for line, index, word, vector in zip(result.lines, result.word_indices, result.words,
                                         result.vectors):
      out.write(json.dumps({'line': int(line), 'word_index': int(index), 'word': word,
                            'embedding': [float(v) for v in vector]}) + '\n')
  finally:
    if out is not sys.stdout:
      out.close()


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
                    'pooled: the encoder\'s pooled_output (BERT: its tanh pooler; ModernBERT: '
                    'the [CLS] vector).', flag_values=fv)
  flags.DEFINE_integer('batch_size', 32, 'Lines per encoder call.', lower_bound=1, flag_values=fv)
  flags.DEFINE_integer('seq_length', None, 'Longest input in tokens (default: the model\'s).',
                       lower_bound=2, flag_values=fv)
  flags.DEFINE_boolean('token_level', False, 'One vector per word instance (words as the '
                       'tokenizer pre-splits them, before WordPiece) instead of one per line; .npy '
                       'output gets a sidecar <output_file>.words.tsv (line, word_index, word).',
                       flag_values=fv)
  flags.DEFINE_enum('subword_pooling', 'first', SUBWORD_POOLINGS, 'With --token_level: a '
                    'word\'s vector is its first sub-word\'s (first) or the mean of its '
                    'sub-words\' (mean).', flag_values=fv)
  flags.DEFINE_string('fit_zscore', None, 'Fit per-dimension mean and std on the vectors of '
                      '--input_file (the corpus), save them to this .npz, and write the output '
                      'standardised with them.', flag_values=fv)
  flags.DEFINE_string('zscore', None, 'Standardise the output with stats saved by --fit_zscore: '
                      '(x - mean) / std per dimension (stats of another hidden size or pooling are '
                      'refused).', flag_values=fv)
  flags.DEFINE_boolean('progress', True, 'Show a progress bar on stderr.', flag_values=fv)
  flags.DEFINE_boolean('overwrite', False, 'Replace an existing --output_file (without it, an '
                       'existing file is refused before any work).', flag_values=fv)
  flags.mark_flags_as_required(['model_dir', 'output_file'], flag_values=fv)
  return fv


def _check_flag_combinations(fv: flags.FlagValues) -> Optional[str]:
  """A one-line complaint about flags that do not go together (None: they do)."""
  if fv['subword_pooling'].present and not fv.token_level:
    return '--subword_pooling needs --token_level (sentence vectors use --pooling)'
  if fv['pooling'].present and fv.token_level:
    return '--pooling is for sentence vectors; with --token_level use --subword_pooling'
  if fv.fit_zscore is not None and fv.zscore is not None:
    return ('give one of --fit_zscore (fit on --input_file and apply) and --zscore (apply saved '
            'stats); found both')
  return None


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point (`mlm-embed`)."""
  fv = _define_flags()
  status = cli_utils.parse_flags(fv, argv, PROGRAM, __doc__)
  if status is not None:
    return status
  complaint = _check_flag_combinations(fv)
  if complaint:
    return cli_utils.error(PROGRAM, complaint, status=2)
  output_format = fv.format or ('jsonl' if fv.output_file == '-' or
                                fv.output_file.endswith('.jsonl') else 'npy')
  pooling = fv.subword_pooling if fv.token_level else fv.pooling
  kind = embedding_stats.describe_pooling(pooling, True) if fv.token_level else fv.pooling
  try:
    if output_format == 'npy' and fv.output_file == '-':
      raise ValueError('--output_file=- (stdout) needs --format=jsonl; .npy goes to a file')
    # Before the corpus is read and the model loaded: a bad output path should cost nothing.
    cli_utils.check_output_file(fv.output_file, '--output_file', fv.overwrite)
    if (fv.token_level and output_format == 'npy' and os.path.exists(words_file(fv.output_file))
        and not fv.overwrite):
      raise ValueError(f'{words_file(fv.output_file)}: exists (the word list of --output_file='
                       f'{fv.output_file}); expected a new file, or pass --overwrite to replace it')
    if fv.fit_zscore is not None:
      cli_utils.check_output_file(fv.fit_zscore, '--fit_zscore', fv.overwrite)
    stats = None
    if fv.zscore is not None:
      stats = embedding_stats.load_zscore(fv.zscore, '--zscore')
      embedding_stats.check_compatible(stats, fv.zscore, None, pooling, fv.token_level)
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
    tokens = None
    if fv.token_level:
      tokens = token_embeddings(model, tokenizer, texts, fv.subword_pooling, fv.batch_size,
                                fv.seq_length, show_progress=fv.progress)
      embeddings, truncated = tokens.vectors, tokens.cut_lines
    else:
      embeddings, truncated = embed_texts(model, tokenizer, texts, fv.pooling, fv.batch_size,
                                          fv.seq_length, show_progress=fv.progress)
    if fv.fit_zscore is not None:
      if not embeddings.shape[0]:
        raise ValueError(f'--fit_zscore={fv.fit_zscore}: --input_file={fv.input_file} gave no '
                         'vectors to fit on (no words); expected some text')
      stats = embedding_stats.fit_zscore(embeddings, pooling, fv.token_level, fv.model_dir,
                                         fv.input_file)
      embedding_stats.save_zscore(stats, fv.fit_zscore)
    if stats is not None:
      embedding_stats.check_compatible(stats, fv.zscore or fv.fit_zscore, embeddings.shape[1],
                                       pooling, fv.token_level)
      embeddings = embedding_stats.apply_zscore(embeddings, stats)
    if tokens is not None:
      tokens.vectors = embeddings
      write_token_embeddings(tokens, fv.output_file, output_format)
    else:
      write_embeddings(embeddings, texts, fv.output_file, output_format)
  except cli_utils.USER_ERRORS as e:
    return cli_utils.error(PROGRAM, cli_utils.message_of(e))
  if truncated:
    left_out = f' ({tokens.cut_words} words left out)' if tokens is not None else ''
    print(f'{PROGRAM}: {truncated} of {len(texts)} lines were cut to '
          f'{fv.seq_length or model.seq_length} tokens{left_out}', file=sys.stderr)
  if fv.fit_zscore is not None:
    print(f'fitted z-score stats on {stats.count} vectors, saved to {fv.fit_zscore}',
          file=sys.stderr)
  elif stats is not None and stats.model and stats.model != fv.model_dir:
    print(f'{PROGRAM}: note: --zscore={fv.zscore} was fitted with model {stats.model}, not '
          f'{fv.model_dir}', file=sys.stderr)
  if fv.output_file != '-':
    scaled = ' z-scored' if stats is not None else ''
    sidecar = (f' (words: {words_file(fv.output_file)})'
               if tokens is not None and output_format == 'npy' else '')
    print(f'wrote {embeddings.shape[0]} x {embeddings.shape[1]}{scaled} {kind} embeddings to '
          f'{fv.output_file}{sidecar}', file=sys.stderr)
  return 0


if __name__ == '__main__':
  sys.exit(main())
