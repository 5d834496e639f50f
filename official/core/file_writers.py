"""`write_small_dataset`: writes a list of `tf.train.Example`s to one record file (tests, demos).

It writes the examples one by one from Python: meant for small datasets (unit tests, infra
checks); the data tools (`official.nlp.data`) write large ones.

Example:
  >>> example = tf_example_builder.TfExampleBuilder().add_ints_feature('label', 1).example
  >>> write_small_dataset([example], '/tmp/data/train.tfrecord')
  >>> write_small_dataset([example], '/tmp/data/train.tfrecord.gz', 'tfrecord_compressed')
"""

from typing import Optional, Sequence, Union

import tensorflow as tf

Example = Union[tf.train.Example, tf.train.SequenceExample]

# file_type (lower case) -> TFRecord compression
_TFRECORD_COMPRESSION = {
    'tfrecord': None,
    'tfrecords': None,
    'tfrecord_compressed': 'GZIP',
    'tfrecords_gzip': 'GZIP',
}


def write_small_dataset(examples: Sequence[Example], output_path: str,
                        file_type: str = 'tfrecord') -> None:
  """Writes `examples` to `output_path`, one record each.

  Args:
    examples: `tf.train.Example`s or `tf.train.SequenceExample`s.
    output_path: the file to write (replaced if it exists).
    file_type: 'tfrecord' / 'tfrecords' (plain TFRecord), 'tfrecord_compressed' /
      'tfrecords_gzip' (GZIP TFRecord) or 'riegeli' (needs the `riegeli` package); any case.

  Raises:
    ValueError: an unknown `file_type`.
    ImportError: 'riegeli' without the `riegeli` package.
  """
  kind = file_type.lower()
  if kind == 'riegeli':
    _write_riegeli(examples, output_path)
    return
  if kind not in _TFRECORD_COMPRESSION:
    raise ValueError(f'file_type: expected one of {sorted(_TFRECORD_COMPRESSION) + ["riegeli"]} '
                     f'(any case), found {file_type!r}')
  _write_tfrecord(examples, output_path, _TFRECORD_COMPRESSION[kind])


def _write_tfrecord(examples: Sequence[Example], output_path: str,
                    compression: Optional[str]) -> None:
  options = tf.io.TFRecordOptions(compression_type=compression) if compression else None
  with tf.io.TFRecordWriter(output_path, options) as writer:
    for example in examples:
      writer.write(example.SerializeToString())


def _write_riegeli(examples: Sequence[Example], output_path: str) -> None:
  try:
    # Function-level: riegeli is an optional dependency.
    import riegeli  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError("file_type 'riegeli' needs the riegeli package (pip install riegeli)") from e
  with tf.io.gfile.GFile(output_path, 'wb') as stream, riegeli.RecordWriter(stream) as writer:
    writer.write_messages(examples)
