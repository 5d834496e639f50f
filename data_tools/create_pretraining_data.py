"""Creates BERT pretraining TFRecords from text (Model Garden's flags), fast and in bounded memory.

A thin command line over `official.nlp.data.create_pretraining_data.create_pretraining_data`; see
that module for the output schema, the metadata file and the packing/masking semantics.

Usage:
  python -m data_tools.create_pretraining_data --input_file=corpus.txt \\
      --output_file=out/train.tfrecord --vocab_file=vocab.txt --max_seq_length=128 \\
      --max_predictions_per_seq=20 --dupe_factor=5
  # Hold out 5% of the documents as a validation set (out/validation.tfrecord + its metadata):
  python -m data_tools.create_pretraining_data --input_file='text/*.txt' \\
      --output_file=out/train.tfrecord --num_output_shards=4 --vocab_file=vocab.txt \\
      --validation_fraction=0.05
  # Packed rows (the ModernBERT-class recipe: several documents a row, no NSP, 30% masked):
  python -m data_tools.create_pretraining_data --input_file=corpus.txt \\
      --output_file=out/packed.tfrecord --vocab_file=vocab.txt --pack --max_seq_length=512 \\
      --masked_lm_prob=0.3 --max_predictions_per_seq=154 --dupe_factor=5
  # The same records from an Apache Beam pipeline (any runner; docs/data_at_scale.md):
  python -m data_tools.create_pretraining_data --input_file=corpus.txt \\
      --output_file=out/train.tfrecord --vocab_file=vocab.txt --engine=beam \\
      --beam_pipeline_options=direct_num_workers=2
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import logging
import sys
from typing import Optional, Sequence

from absl import flags

from official.common import cli_utils
from official.common import file_utils

from official.nlp.data import beam_engine
from official.nlp.data import create_pretraining_data as cpd


def _define_flags() -> flags.FlagValues:
  fv = flags.FlagValues()
  define = dict(flag_values=fv)
  # Model Garden's flags and defaults.
  flags.DEFINE_string(
      'input_file', None, 'Input text files: comma-separated paths or globs (one sentence a '
      'line, blank line between documents).', **define)
  flags.DEFINE_string('output_file', None, 'Output TFRecord files, comma-separated: local paths or '
                      'URLs TensorFlow writes (gs://bucket/data/train.tfrecord).', **define)
  flags.DEFINE_string('vocab_file', None, 'BERT vocab.txt.', **define)
  flags.DEFINE_bool('do_lower_case', True, 'Lower-case and strip accents (uncased models).',
                    **define)
  flags.DEFINE_bool('do_whole_word_mask', False, 'Mask whole words (a word and its ## pieces).',
                    **define)
  flags.DEFINE_integer('max_ngram_size', None, 'Mask n-grams of up to this many words/tokens.',
                       **define)
  flags.DEFINE_integer('max_seq_length', 128, 'Sequence length.', **define)
  flags.DEFINE_integer('max_predictions_per_seq', 20, 'Maximum masked tokens per sequence.',
                       **define)
  flags.DEFINE_integer('random_seed', 12345,
                       'Random seed (the output depends on it, not on --num_workers).', **define)
  flags.DEFINE_integer('dupe_factor', 10, 'Times the input is used, with different masks.',
                       **define)
  flags.DEFINE_float('masked_lm_prob', 0.15, 'Fraction of tokens masked.', **define)
  flags.DEFINE_float('short_seq_prob', 0.1, 'Probability of a shorter target sequence length.',
                     **define)
  flags.DEFINE_bool('gzip_compress', False, 'GZIP-compress the TFRecords.', **define)
  flags.DEFINE_bool('use_v2_feature_names', False, 'Name features input_word_ids/input_type_ids.',
                    **define)
  # mlm-garden additions.
  flags.DEFINE_string('tokenizer_json', None,
                      'Hugging Face tokenizer.json (instead of --vocab_file).', **define)
  flags.DEFINE_integer('num_workers', None,
                       'Worker processes (default and at most: the CPUs available).', lower_bound=1,
                       **define)
  flags.DEFINE_integer(
      'num_output_shards', None, 'Split a single --output_file into this many shards '
      '(<output_file>-0000i-of-0000n).', lower_bound=1, **define)
  flags.DEFINE_bool('no_next_sentence', False,
                    'Single full-length segments without NSP (RoBERTa style).', **define)
  flags.DEFINE_bool(
      'sentence_order', False, 'Sentence-order prediction (ALBERT): next_sentence_labels is 1 '
      'where two consecutive segments of a document are swapped, instead of NSP\'s random '
      'segment.', **define)
  flags.DEFINE_bool(
      'pack', False, 'Packed rows (ModernBERT-style, implies --no_next_sentence): documents back '
      'to back, each piece [CLS] tokens [SEP], a document cut at a row end going on in the next '
      'row; writes position_ids (restarting at every [CLS]), so train with use_position_id: true. '
      'The modern recipe masks more: e.g. --masked_lm_prob=0.3 --max_predictions_per_seq=38 at '
      '--max_seq_length=128.', **define)
  flags.DEFINE_bool(
      'dynamic', False, 'Write only token ids, mask and segments (+ NSP label) for masking '
      'while training (bert/pretraining_dynamic).', **define)
  flags.DEFINE_float(
      'validation_fraction', 0.0, 'Hold out this fraction of the documents (drawn by '
      '--random_seed; none of their text reaches the training records) and write them once as a '
      'validation set with metadata of its own, for task.validation_data.', lower_bound=0.0,
      upper_bound=0.99, **define)
  flags.DEFINE_string(
      'validation_output_file', None, 'The held-out records (with --validation_fraction; '
      'default: validation.tfrecord beside --output_file).', **define)
  flags.DEFINE_enum(
      'engine', 'local', cpd.ENGINES, 'local: a pool of --num_workers processes; beam: an Apache '
      'Beam pipeline (pip install \'mlm-garden[beam]\'; docs/data_at_scale.md), the same records.',
      **define)
  flags.DEFINE_string(
      'beam_pipeline_options', '', 'With --engine=beam: Beam\'s pipeline options, comma-separated '
      'name=value (e.g. runner=FlinkRunner,flink_master=HOST:8081,environment_type=LOOPBACK); '
      'default: Beam\'s portable runner on this machine, --num_workers processes.', **define)
  flags.mark_flags_as_required(['input_file', 'output_file'], flag_values=fv)
  return fv


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point (`data_tools.create_pretraining_data:main`); returns the exit code."""
  fv = _define_flags()
  status = cli_utils.parse_flags(fv, argv, 'create_pretraining_data', __doc__)
  if status is not None:
    return status
  logging.basicConfig(level=logging.INFO, format='%(levelname)s: %(message)s', stream=sys.stderr)
  logging.getLogger('official').setLevel(logging.WARNING)  # the summary is printed below, once
  try:
    beam_options = beam_engine.options_from_flags(fv.engine, fv.beam_pipeline_options)
    cpd.create_pretraining_data(
        fv.input_file, fv.output_file, fv.vocab_file, tokenizer_json=fv.tokenizer_json,
        do_lower_case=fv.do_lower_case, do_whole_word_mask=fv.do_whole_word_mask,
        max_ngram_size=fv.max_ngram_size, max_seq_length=fv.max_seq_length,
        max_predictions_per_seq=fv.max_predictions_per_seq, random_seed=fv.random_seed,
        dupe_factor=fv.dupe_factor, masked_lm_prob=fv.masked_lm_prob,
        short_seq_prob=fv.short_seq_prob, gzip_compress=fv.gzip_compress,
        use_v2_feature_names=fv.use_v2_feature_names, num_workers=fv.num_workers,
        num_output_shards=fv.num_output_shards, no_next_sentence=fv.no_next_sentence,
        sentence_order=fv.sentence_order, dynamic=fv.dynamic, pack=fv.pack, show_progress=True,
        validation_fraction=fv.validation_fraction,
        validation_output_file=fv.validation_output_file, engine=fv.engine,
        beam_options=beam_options)
  except (ValueError, FileNotFoundError) as e:
    print(f'create_pretraining_data: error: {e}', file=sys.stderr)
    return 1
  except OSError as e:  # e.g. the disk filled up while writing: one line naming the file
    print(f"create_pretraining_data: error: {e.filename or 'output_file'}: {e.strerror or e}",
          file=sys.stderr)
    return 1
  except Exception as e:  # pylint: disable=broad-except
    # TensorFlow's filesystem errors (writing to a URL: a bucket without permission, ...) are not
    # OSErrors; their message names the path.
    if not file_utils.is_tensorflow_error(e):
      raise
    print(f'create_pretraining_data: error: {getattr(e, "message", e)}', file=sys.stderr)
    return 1
  return 0


if __name__ == '__main__':
  sys.exit(main())
