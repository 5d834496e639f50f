"""The metadata file that makes pretraining TFRecords self-describing.

`create_pretraining_data` writes, next to the records, one JSON file per output name:
`<dir>/<stem>.metadata.json`, where `<stem>` is the output file's base name without a shard suffix
(`-00000-of-00004`) and without a record extension (`.tfrecord`, `.tfrecords`, `.tfr`, `.record`, `.gz`). So
`out/train.tfrecord` (and its shards `out/train.tfrecord-0000i-of-0000n`) are described by
`out/train.metadata.json`; the usual globs `out/train.tfrecord*` or `out/*.tfrecord` do not match it.

Keys (all JSON scalars or lists/dicts of them):
  format ("mlm_garden.pretraining_data"), format_version, tool, tool_version,
  max_seq_length, max_predictions_per_seq, feature_names (names in the records, in order),
  use_v2_feature_names, dynamic (no masks stored), next_sentence (NSP pairs; False: single segments whose
  next_sentence_labels are all 0), vocab_size, vocab_sha256 (see tokenization.vocab_sha256), vocab_source,
  do_lower_case, special_token_ids ({"[PAD]": id, ...}), do_whole_word_mask, max_ngram_size, masked_lm_prob,
  short_seq_prob, dupe_factor, random_seed, compression ("" or "GZIP"), files (base names),
  instances_per_file, num_instances, num_tokens (non-padding tokens written), num_masked_tokens,
  num_random_next, num_documents, num_sentences, num_corpus_tokens (tokens read), num_invalid_lines,
  input_files.

Example:
  meta = load_metadata("out/train.tfrecord*")
  if meta and meta["max_seq_length"] != 128: ...
"""

import glob
import json
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Union

FORMAT = "mlm_garden.pretraining_data"
FORMAT_VERSION = 1
METADATA_SUFFIX = ".metadata.json"
_SHARD_SUFFIX = re.compile(r"-\d{5}-of-\d{5}$")
_RECORD_EXTENSIONS = (".gz", ".tfrecords", ".tfrecord", ".tfr", ".record")
# Fields that must agree between the metadata of files read together.
CONSISTENT_KEYS = ("max_seq_length", "max_predictions_per_seq", "feature_names", "vocab_size", "dynamic",
                   "next_sentence", "compression")


def metadata_path(record_path: str) -> str:
  """The metadata file describing `record_path` (see the module docstring)."""
  directory, name = os.path.split(record_path)
  name = _SHARD_SUFFIX.sub("", name)
  for extension in _RECORD_EXTENSIONS:
    if name.endswith(extension) and len(name) > len(extension):
      name = name[:-len(extension)]
  return os.path.join(directory, name + METADATA_SUFFIX)


def write_metadata(path: str, metadata: Dict[str, Any]) -> None:
  """Writes `metadata` as indented JSON to `path` (through a temporary file and a rename)."""
  partial = path + ".partial"
  with open(partial, "w", encoding="utf-8") as f:
    json.dump(metadata, f, indent=2, sort_keys=False)
    f.write("\n")
  os.replace(partial, path)


def _record_paths(path_or_glob: Union[str, Sequence[str]]) -> List[str]:
  patterns = path_or_glob.split(",") if isinstance(path_or_glob, str) else list(path_or_glob)
  paths = []
  for pattern in (p.strip() for p in patterns):
    if not pattern:
      continue
    matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
    paths.extend(matches)
  return paths


def load_metadata(path_or_glob: Union[str, Sequence[str]]) -> Optional[Dict[str, Any]]:
  """Loads the metadata of the records named by `path_or_glob`, or None when there is none.

  Args:
    path_or_glob: a record file, a glob, a comma-separated list or a list of them (as `DataConfig.input_path`),
      or a `.metadata.json` file itself.

  Returns:
    The metadata dict (with an added `metadata_path`), or None when no record file has a metadata file.

  Raises:
    ValueError: two metadata files of the given records disagree on a field of `CONSISTENT_KEYS`, or a
      metadata file is not of this format.
  """
  found: Dict[str, Dict[str, Any]] = {}
  for path in _record_paths(path_or_glob):
    candidate = path if path.endswith(METADATA_SUFFIX) else metadata_path(path)
    if candidate in found or not os.path.isfile(candidate):
      continue
    with open(candidate, "r", encoding="utf-8") as f:
      try:
        metadata = json.load(f)
      except json.JSONDecodeError as e:
        raise ValueError(f"metadata file {candidate!r} is not valid JSON: {e}") from None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
      raise ValueError(f"metadata file {candidate!r}: 'format' should be {FORMAT!r}, found "
                       f"{metadata.get('format') if isinstance(metadata, dict) else type(metadata).__name__!r}")
    metadata["metadata_path"] = candidate
    found[candidate] = metadata
  if not found:
    return None
  first_path, first = next(iter(found.items()))
  for other_path, other in found.items():
    for key in CONSISTENT_KEYS:
      if other.get(key) != first.get(key):
        raise ValueError(f"records read together disagree on {key}: {first.get(key)!r} in {first_path!r} but "
                         f"{other.get(key)!r} in {other_path!r}")
  return first
