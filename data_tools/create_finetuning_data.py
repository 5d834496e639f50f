"""Creates fine-tuning TFRecords: sentence prediction from CSV/TSV/JSONL, tagging from CoNLL files.

A thin command line over `official.nlp.data.create_finetuning_data.create_finetuning_data`; see that
module for the record schema and the metadata file (`<stem>.metadata.json`: num_classes,
label_list, max_seq_length). Write the train split first and pass its metadata to the other
splits with --label_map_file so that label ids agree.

Usage:
  python -m data_tools.create_finetuning_data --task=sentence_prediction --input_file=train.tsv \\
      --output_file=out/train.tfrecord --vocab_file=vocab.txt --max_seq_length=128 \\
      --text_column=sentence1 --text_b_column=sentence2 --label_column=label
  python -m data_tools.create_finetuning_data --task=tagging --input_file=dev.conll \\
      --output_file=out/dev.tfrecord --vocab_file=vocab.txt --label_map_file=out/train.metadata.json
  python -m data_tools.create_finetuning_data --task=squad --input_file=dev-v1.1.json \\
      --output_file=out/squad_dev.tfrecord --vocab_file=vocab.txt --max_seq_length=384
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import sys
from typing import Optional, Sequence

from absl import flags

from official.common import cli_utils

from official.nlp.data import create_finetuning_data as cfd


def _define_flags() -> flags.FlagValues:
  fv = flags.FlagValues()
  define = dict(flag_values=fv)
  flags.DEFINE_enum('task', None, list(cfd.TASKS), 'What the records are for.', **define)
  flags.DEFINE_string('input_file', None, 'Labelled text: CSV/TSV (header row) or JSONL for '
                      'sentence_prediction; CoNLL-style (token ... tag per line) for tagging; '
                      'SQuAD JSON for squad.', **define)
  flags.DEFINE_string('output_file', None, 'The TFRecord file to write.', **define)
  flags.DEFINE_string('vocab_file', None, 'BERT vocab.txt.', **define)
  flags.DEFINE_string('tokenizer_json', None,
                      'Hugging Face tokenizer.json (instead of --vocab_file).', **define)
  flags.DEFINE_bool('do_lower_case', True, 'Lower-case and strip accents (uncased models).',
                    **define)
  flags.DEFINE_integer('max_seq_length', 128, 'Sequence length.', **define)
  flags.DEFINE_enum('input_format', 'auto', list(cfd.INPUT_FORMATS),
                    'Input format (auto: by extension; tagging reads conll).', **define)
  flags.DEFINE_string('text_column', 'text', 'Column (JSON key) of the first text.', **define)
  flags.DEFINE_string('text_b_column', 'text_b', 'Column of the second text of a pair, used when '
                      "present ('' to ignore).", **define)
  flags.DEFINE_string('label_column', 'label', 'Column of the label.', **define)
  flags.DEFINE_enum('label_type', 'int', ['int', 'float'], 'int: class names; float: regression.',
                    **define)
  flags.DEFINE_list(
      'label_list', None, 'Class names / tags in id order (default: --label_map_file, '
      'else the sorted distinct labels of --input_file).', **define)
  flags.DEFINE_string('label_map_file', None, 'Metadata JSON of another split (e.g. '
                      'out/train.metadata.json) whose label_list to use.', **define)
  flags.DEFINE_integer('ignore_label_id', -1, 'Tagging: the label of positions without a loss.',
                       **define)
  flags.DEFINE_bool('gzip_compress', False, 'GZIP-compress the TFRecords.', **define)
  flags.DEFINE_integer('doc_stride', 128, 'squad: tokens between consecutive windows of a long '
                       'context.', **define)
  flags.DEFINE_integer('max_query_length', 64, 'squad: question tokens kept.', **define)
  flags.DEFINE_bool('version_2_with_negative', False, 'squad: SQuAD v2.0 JSON (is_impossible).',
                    **define)
  flags.mark_flags_as_required(['task', 'input_file', 'output_file'], flag_values=fv)
  return fv


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point (`data_tools.create_finetuning_data:main`); returns the exit code."""
  fv = _define_flags()
  status = cli_utils.parse_flags(fv, argv, 'create_finetuning_data', __doc__)
  if status is not None:
    return status
  try:
    metadata = cfd.create_finetuning_data(
        fv.task, fv.input_file, fv.output_file, fv.vocab_file, tokenizer_json=fv.tokenizer_json,
        do_lower_case=fv.do_lower_case, max_seq_length=fv.max_seq_length,
        input_format=fv.input_format, text_column=fv.text_column,
        text_b_column=fv.text_b_column or None, label_column=fv.label_column,
        label_type=fv.label_type, label_list=fv.label_list, label_map_file=fv.label_map_file,
        ignore_label_id=fv.ignore_label_id, gzip_compress=fv.gzip_compress,
        doc_stride=fv.doc_stride, max_query_length=fv.max_query_length,
        version_2_with_negative=fv.version_2_with_negative)
  except (ValueError, FileNotFoundError, KeyError) as e:
    print(f'create_finetuning_data: error: {e}', file=sys.stderr)
    return 1
  if fv.task == 'squad':
    print(f'wrote {metadata["num_examples"]} windows of {metadata["num_questions"]} questions to '
          f'{fv.output_file} (eval sidecar {metadata["eval_sidecar"]})')
    return 0
  labels = metadata.get('label_list')
  print(f'wrote {metadata["num_examples"]} examples to {fv.output_file} (num_classes '
        f'{metadata["num_classes"]}{", labels " + ",".join(labels) if labels else ""})')
  return 0


if __name__ == '__main__':
  sys.exit(main())
