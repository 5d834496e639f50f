"""Input text from URLs: TensorFlow's in-memory filesystem (ram://) stands in for gs://."""

import os

import pytest
import tensorflow as tf

from official.nlp.data import create_pretraining_data as cpd
from official.nlp.data import text_files
from official.nlp.data import vocab_builder
from tests.nlp.data.test_create_pretraining_data import VOCAB, _corpus_text


@pytest.fixture(scope='module')
def texts(tmp_path_factory):
  """The same two files on disk and under ram://."""
  root = tmp_path_factory.mktemp('texts')
  halves = _corpus_text(num_docs=24).split('\n\n')
  contents = {'a.txt': '\n\n'.join(halves[:12]) + '\n', 'b.txt': '\n\n'.join(halves[12:])}
  tf.io.gfile.makedirs('ram://texts')
  for name, text in contents.items():
    (root / name).write_text(text, encoding='utf-8')
    with tf.io.gfile.GFile(f'ram://texts/{name}', 'w') as f:
      f.write(text)
  (root / 'vocab.txt').write_text(''.join(t + '\n' for t in VOCAB), encoding='utf-8')
  return root


def test_urls_are_matched_sized_and_read_as_local_files_are(texts):
  assert text_files.match('ram://texts/*.txt') == ['ram://texts/a.txt', 'ram://texts/b.txt']
  assert text_files.match('ram://texts/a.txt') == ['ram://texts/a.txt']
  assert text_files.match('ram://texts/none*.txt') == []
  assert text_files.size('ram://texts/b.txt') == os.path.getsize(texts / 'b.txt')
  with text_files.open_binary('ram://texts/a.txt') as f:
    first = f.readline(5)
    f.seek(100)
    middle = f.read(20)
  local = (texts / 'a.txt').read_bytes()
  assert first == local[:5] and middle == local[100:120]


def test_records_from_urls_equal_the_local_files(texts, tmp_path):
  written = {}
  for name, inputs in (('local', f'{texts}/a.txt,{texts}/b.txt'), ('url', 'ram://texts/*.txt')):
    output = str(tmp_path / name / 'train.tfrecord')
    cpd.create_pretraining_data(inputs, output, str(texts / 'vocab.txt'), dupe_factor=2,
                                max_seq_length=64, num_workers=1)
    with open(output, 'rb') as f:
      written[name] = f.read()
  assert written['url'] == written['local'] and written['local']


def test_a_vocabulary_sample_of_urls_reads_the_local_files_lines(texts, tmp_path):
  # The sample's text (the trainer itself orders tied tokens differently from run to run).
  sample = lambda files: [line for batch in vocab_builder._sampled_batches(  # pylint: disable=protected-access
      files, 3_000, 7, block_bytes=500) for line in batch]
  local = sample([str(texts / 'a.txt'), str(texts / 'b.txt')])
  assert sample(['ram://texts/a.txt', 'ram://texts/b.txt']) == local and local
  paths = vocab_builder.build_vocab('ram://texts/*.txt', str(tmp_path / 'url'), vocab_size=80,
                                    sample_bytes=3_000)
  assert os.path.getsize(paths['vocab_file']) > 0


def test_a_scheme_nothing_reads_is_named():
  with pytest.raises(ValueError, match=r"input_file: 'nosuch://b/x\.txt': neither TensorFlow nor "
                     r"Apache Beam reads the scheme 'nosuch'"):
    text_files.match('nosuch://b/x.txt')


def test_local_paths_do_not_import_tensorflow():
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  code = ('import sys; from official.nlp.data import text_files; text_files.match("setup.py"); '
          'print("tensorflow" in sys.modules)')
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          check=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                              os.path.dirname(os.path.abspath(__file__))))))
  assert result.stdout.strip() == 'False'
