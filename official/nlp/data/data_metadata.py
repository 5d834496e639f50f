"""The metadata file that makes pretraining TFRecords self-describing.

`create_pretraining_data` writes, next to the records, one JSON file per output name:
`<dir>/<stem>.metadata.json`, where `<stem>` is the output file's base name without a shard suffix
(`-00000-of-00004`) and without a record extension (`.tfrecord`, `.tfrecords`, `.tfr`, `.record`,
`.gz`). So `out/train.tfrecord` (and its shards `out/train.tfrecord-0000i-of-0000n`) are described
by `out/train.metadata.json`, which the usual globs `out/train.tfrecord*` or `out/*.tfrecord` miss.

Keys (all JSON scalars or lists/dicts of them):
  format ("mlm_garden.pretraining_data"), format_version, tool, tool_version, max_seq_length,
  max_predictions_per_seq, feature_names (names in the records, in order), use_v2_feature_names,
  dynamic (no masks stored), next_sentence (NSP pairs; False: single segments or packed rows, whose
  next_sentence_labels are all 0), sentence_order, packed (rows of several documents with
  position_ids; absent in older files: False), vocab_size, vocab_sha256 (see
  tokenization.vocab_sha256), vocab_source, vocab (the tokens, index = id: training writes them to
  model_dir/vocab.txt, see vocab_assets), do_lower_case, special_token_ids ({"[PAD]": id, ...}:
  BERT's token names as the keys of the roles, whatever a BPE or Unigram tokenizer calls them),
  and for a tokenizer other than WordPiece: tokenizer_type, special_tokens (role -> the tokenizer's
  token), tokenizer_json (the tokenizer.json text: training writes it to model_dir) and
  tokenizer_json_sha256,
  do_whole_word_mask, max_ngram_size, masked_lm_prob, short_seq_prob, dupe_factor, random_seed,
  compression ("" or "GZIP"), files (base names), instances_per_file, num_instances, num_tokens
  (non-padding tokens written), num_padding_tokens (`num_instances * max_seq_length -
  num_tokens`, see `padding_fraction`), num_pieces (packed: pieces of documents; else the
  instances), num_masked_tokens, num_random_next, num_documents, num_sentences, num_corpus_tokens
  (tokens read), num_invalid_lines, input_files, split ("train", or "validation" for the documents
  held out by `validation_fraction`), validation_fraction, validation_files (train sets with a
  split: the held-out set's record files, relative to this file's directory),
  shards: one entry per record file of the set, `{"file": path relative to the metadata file's
  directory, "records": count, "bytes": file size, "crc32": zlib CRC-32 of the file's bytes}`
  (computed while writing).
A set being replaced has `"state": "committing"` (and `replaces`: the old files still to delete)
until the new files are all in place (`commit_record_set`); `verify_record_files` refuses such a
set, and any listed file that is missing, of the wrong size (or checksum), and any matched file the
metadata does not list.

Example:
  meta = load_metadata("out/train.tfrecord*")
  if meta and meta["max_seq_length"] != 128: ...
"""

import glob
import json
import logging
import os
import re
import zlib
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from official.common import file_utils

logger = logging.getLogger(__name__)

FORMAT = 'mlm_garden.pretraining_data'
FORMAT_VERSION = 1
METADATA_SUFFIX = '.metadata.json'
SHARD_SUFFIX = re.compile(r'-\d{5}-of-\d{5}$')
_RECORD_EXTENSIONS = ('.gz', '.tfrecords', '.tfrecord', '.tfr', '.record')
# Fields that must agree between the metadata of files read together.
CONSISTENT_KEYS = ('max_seq_length', 'max_predictions_per_seq', 'feature_names', 'vocab_size',
                   'dynamic', 'next_sentence', 'packed', 'compression')
# The value of a key that files written before it existed lack.
_DEFAULTS = {'packed': False}


def metadata_path(record_path: str) -> str:
  """The metadata file describing `record_path` (see the module docstring)."""
  directory, name = os.path.split(record_path)
  name = SHARD_SUFFIX.sub('', name)
  for extension in _RECORD_EXTENSIONS:
    if name.endswith(extension) and len(name) > len(extension):
      name = name[:-len(extension)]
  return os.path.join(directory, name + METADATA_SUFFIX)


def write_metadata(path: str, metadata: Dict[str, Any]) -> None:
  """Writes `metadata` as indented JSON to `path` (through a temporary file and a rename)."""
  file_utils.atomic_write_text(path, json.dumps(metadata, indent=2, sort_keys=False) + '\n')


def record_paths(path_or_glob: Union[str, Sequence[str]]) -> List[str]:
  """The files of a `DataConfig.input_path`-style value: comma-separated (or listed) paths and
  globs, a glob expanded (sorted), a plain path kept as given."""
  patterns = path_or_glob.split(',') if isinstance(path_or_glob, str) else list(path_or_glob)
  paths = []
  for pattern in (p.strip() for p in patterns):
    if not pattern:
      continue
    matches = file_utils.glob(pattern) if glob.has_magic(pattern) else [pattern]
    paths.extend(matches)
  return paths


def load_metadata(path_or_glob: Union[str, Sequence[str]]) -> Optional[Dict[str, Any]]:
  """Loads the metadata of the records named by `path_or_glob`, or None when there is none.

  Args:
    path_or_glob: a record file, a glob, a comma-separated list or a list of them (as
      `DataConfig.input_path`), or a `.metadata.json` file itself.

  Returns:
    The metadata dict (with an added `metadata_path`), or None when no record file has a metadata
    file.

  Raises:
    ValueError: two metadata files of the given records disagree on a field of `CONSISTENT_KEYS`, or
      a metadata file is not of this format.
  """
  found: Dict[str, Dict[str, Any]] = {}
  for path in record_paths(path_or_glob):
    candidate = path if path.endswith(METADATA_SUFFIX) else metadata_path(path)
    if candidate in found or not file_utils.isfile(candidate):
      continue
    with file_utils.open_file(candidate, 'r') as f:
      try:
        metadata = json.load(f)
      except json.JSONDecodeError as e:
        raise ValueError(f'metadata file {candidate!r} is not valid JSON: {e}') from None
    if not isinstance(metadata, dict) or metadata.get('format') != FORMAT:
      raise ValueError(
          f"metadata file {candidate!r}: 'format' should be {FORMAT!r}, found "
          f"{metadata.get('format') if isinstance(metadata, dict) else type(metadata).__name__!r}")
    metadata['metadata_path'] = candidate
    found[candidate] = metadata
  if not found:
    return None
  first_path, first = next(iter(found.items()))
  for other_path, other in found.items():
    for key in CONSISTENT_KEYS:
      value, first_value = other.get(key, _DEFAULTS.get(key)), first.get(key, _DEFAULTS.get(key))
      if value != first_value:
        raise ValueError(
            f'records read together disagree on {key}: {first_value!r} in {first_path!r} but '
            f'{value!r} in {other_path!r}')
  return first


def padding_fraction(metadata: Mapping[str, Any]) -> float:
  """Padding tokens over all the tokens of the rows written (`num_instances * max_seq_length`).

  Example:
    padding_fraction(load_metadata('out/train.tfrecord'))  # e.g. 0.002 for packed rows
  """
  slots = metadata['num_instances'] * metadata['max_seq_length']
  padding = metadata.get('num_padding_tokens', slots - metadata['num_tokens'])
  return padding / max(slots, 1)


COMMITTING = 'committing'
_CHECKSUM_BLOCK = 1 << 22
_logged_unverified = set()


def file_crc32(path: str) -> int:
  """zlib CRC-32 of a file's bytes, read in 4 MB blocks."""
  crc = 0
  with file_utils.open_file(path, 'rb') as f:
    for block in iter(lambda: f.read(_CHECKSUM_BLOCK), b''):
      crc = zlib.crc32(block, crc)
  return crc


def shard_entries(metadata_file: str,
                  shards: Mapping[str, Mapping[str, int]]) -> List[Dict[str, Any]]:
  """The `shards` list of `metadata_file` for `{record path: {"records", "bytes", "crc32"}}` (paths
  made relative to the metadata file's directory).

  Example:
    shard_entries('out/train.metadata.json',
                  {'out/train.tfrecord': {'records': 3, 'bytes': 90, 'crc32': 7}})
  """
  directory = os.path.dirname(file_utils.absolute(metadata_file))
  return [
      dict(file=file_utils.relative(path, directory), **dict(info))
      for path, info in shards.items()
  ]


def _listed_paths(metadata_file: str, metadata: Mapping[str, Any],
                  key: str = 'shards') -> List[str]:
  directory = os.path.dirname(file_utils.absolute(metadata_file))
  if key == 'shards' and 'shards' not in metadata:  # metadata of an older version: base names only
    names = metadata.get('files', [])
  else:
    names = [entry['file'] if isinstance(entry, dict) else entry for entry in metadata.get(key, [])]
  return [file_utils.join_relative(directory, name) for name in names]


def _read_json(path: str) -> Optional[Dict[str, Any]]:
  if not file_utils.isfile(path):
    return None
  try:
    with file_utils.open_file(path, 'r') as f:
      metadata = json.load(f)
  except (OSError, ValueError):  # unreadable, or not JSON (JSONDecodeError, UnicodeDecodeError)
    return None
  return metadata if isinstance(metadata, dict) and metadata.get('format') == FORMAT else None


def commit_record_set(staged: Mapping[str, str], metadata: Mapping[str, Any],
                      shards: Mapping[str, Mapping[str, int]]) -> None:
  """Moves a complete set of staged record files into place and writes its metadata, as one set.

  Order: each metadata file is first replaced by a `"state": "committing"` copy (which also names
  the old set's files still to delete), then the staged files are renamed over their final names,
  the old set's files that the new set does not reuse are deleted, and the final metadata is written
  last. A run killed in between leaves a metadata file that training refuses (and that a rerun
  completes), never old and new files under one metadata.

  Args:
    staged: final record path -> the complete file written elsewhere on the same file system.
    metadata: the metadata to write (without `shards`: added per metadata file from `shards`).
    shards: final record path -> `{"records", "bytes", "crc32"}`.

  Example:
    commit_record_set({"out/a.tfrecord": "out/.tmp/a.tfrecord"}, meta, {"out/a.tfrecord": info})
  """
  metadata_files = sorted({metadata_path(p) for p in staged})
  new = {file_utils.absolute(p) for p in staged}
  old = set()
  for path in metadata_files:
    previous = _read_json(path)
    if previous is not None:
      old.update(_listed_paths(path, previous), _listed_paths(path, previous, 'replaces'))
  old = sorted(p for p in {file_utils.absolute(p) for p in old} if p not in new)
  for path in metadata_files:
    directory = os.path.dirname(file_utils.absolute(path))
    write_metadata(path, dict(metadata, state=COMMITTING, shards=shard_entries(path, shards),
                              replaces=[file_utils.relative(p, directory) for p in old]))
  for final, source in staged.items():
    file_utils.replace(source, final)
  for path in old:
    if file_utils.isfile(path):
      file_utils.remove(path)
  for path in metadata_files:
    write_metadata(path, dict(metadata, shards=shard_entries(path, shards)))


def verify_record_files(files: Iterable[str], checksum: bool = False) -> None:
  """Checks record files against their metadata: the set is complete, each file the one written.

  Files without a metadata file (e.g. Google BERT's or Model Garden's records) are accepted (and
  logged once).

  Args:
    files: the record files to read (as matched by the input path).
    checksum: also compare each listed file's CRC-32 (reads the files once); otherwise sizes only
      (cheap).

  Raises:
    ValueError: one line naming the file, the metadata file, what was expected and what was found: a
      set left half-replaced by an interrupted run, a matched file the metadata does not list, a
      listed file that is missing, or a file whose size (or checksum) differs.

  Example:
    verify_record_files(glob.glob("out/train.tfrecord*"))
  """
  groups: Dict[str, List[str]] = {}
  unverified = []
  for path in files:
    candidate = metadata_path(path)
    if file_utils.isfile(candidate):
      groups.setdefault(candidate, []).append(path)
    else:
      unverified.append(path)
  if unverified and tuple(unverified) not in _logged_unverified:  # once per set of files
    _logged_unverified.add(tuple(unverified))
    logger.info(
        '%d record file(s) without a metadata file (e.g. %s, no %s): their completeness and sizes '
        'are not verified', len(unverified), unverified[0], metadata_path(unverified[0]))
  for source, matched in groups.items():
    metadata = _read_json(source)
    if metadata is None:
      raise ValueError(f'metadata file {source!r} is not readable JSON of format {FORMAT!r}')
    if metadata.get('state') == COMMITTING:
      raise ValueError(
          f"{source}: the record set is half-replaced (state 'committing': a "
          f'create_pretraining_data run was interrupted while moving its files in); expected a '
          f'complete set: rerun it')
    if 'shards' not in metadata:
      continue  # written before shards were listed: nothing to compare with
    directory = os.path.dirname(file_utils.absolute(source))
    listed = {file_utils.join_relative(directory, e['file']): e for e in metadata['shards']}
    for path in matched:
      if file_utils.absolute(path) not in listed:
        raise ValueError(
            f'{path}: not part of the record set of {source} (expected one of its {len(listed)} '
            f'listed files, found an extra or foreign file); remove it or narrow input_path')
    for path, entry in sorted(listed.items()):
      size = file_utils.file_size(path)
      if size is None:
        raise ValueError(
            f"{path}: missing (listed in {source} with {entry['records']} records, "
            f"{entry['bytes']} bytes; found no file)")
      if size != entry['bytes']:
        raise ValueError(
            f"{path}: {size} bytes, expected {entry['bytes']} (listed in {source}); the file is "
            f'truncated or from another run: regenerate the records')
      if checksum and 'crc32' in entry:
        found = file_crc32(path)
        if found != entry['crc32']:
          raise ValueError(
              f"{path}: CRC-32 {found:08x}, expected {entry['crc32']:08x} (listed in {source}); "
              f'the file is corrupt or from another run: regenerate the records')
