"""Pretraining records from non-WordPiece tokenizers (byte-level BPE, Unigram): special-token roles,
ids and word boundaries against the tokenizer's own encoding, records, metadata and the CLI."""

import json

import numpy as np
import pytest
import tensorflow as tf
from tokenizers import Tokenizer

from data_tools import create_pretraining_data as cli
from official.nlp.data import create_pretraining_data as cpd
from official.nlp.data import data_metadata
from official.nlp.data import pretraining_instances as pi
from official.nlp.data import tokenization
from official.nlp.data import tokenized_corpus
from tests.nlp.data import bpe_tokenizers as bt

SEQ, MAX_PRED = 64, 20
# Text the fast path must leave to Rust or reproduce: non-ASCII, an added token, tabs, runs of
# spaces, contractions, digits, leading and trailing spaces, a control character.
EDGE_TEXTS = ['Hello,  world\tfoo', "don't stop 123abc", 'caf\u00e9 na\u00efve',
              'a [MASK] b <mask>', 'x\x0by', '  spaced ', "it's 'quoted' (paren) [CLS]",
              'end', '42']


@pytest.fixture(scope='module')
def files(tmp_path_factory):
  root = tmp_path_factory.mktemp('bpe')
  lines = bt.corpus_lines(300)
  (root / 'corpus.txt').write_text(bt.documents_text(lines), encoding='utf-8')
  return {
      'root': root, 'lines': lines,
      'modernbert': bt.byte_level_bpe(root / 'modernbert' / 'tokenizer.json', lines),
      'roberta': bt.byte_level_bpe(root / 'roberta' / 'tokenizer.json', lines,
                                   bt.ROBERTA_SPECIALS, post_processor='roberta'),
      'prefix_space': bt.byte_level_bpe(root / 'prefix' / 'tokenizer.json', lines,
                                        add_prefix_space=True, post_processor='none'),
      'unigram': bt.unigram(root / 'unigram' / 'tokenizer.json', lines),
  }


def _word_starts(encoding):
  starts, previous = [], object()
  for word in encoding.word_ids:
    starts.append(word is None or word != previous)
    previous = word
  return starts


# ---------------------------------------------------------------------------- special tokens


def test_roles_of_a_modernbert_style_template(files):
  tokenizer = tokenization.load_tokenizer(tokenizer_json=files['modernbert'])
  rust = Tokenizer.from_file(files['modernbert'])
  assert tokenizer.kind == 'bpe' and not isinstance(tokenizer, tokenization.WordPieceTokenizer)
  assert tokenizer.special_tokens == {'pad': '[PAD]', 'unk': '[UNK]', 'cls': '[CLS]',
                                      'sep': '[SEP]', 'mask': '[MASK]'}
  assert (tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id) == tuple(
      rust.token_to_id(t) for t in ('[CLS]', '[SEP]', '[MASK]'))
  # The post-processor's own layout is [CLS] A [SEP] with the same ids.
  ids = rust.encode('Kalo mi.').ids
  assert ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id


def test_roles_of_a_roberta_style_tokenizer(files):
  tokenizer = tokenization.load_tokenizer(tokenizer_json=files['roberta'])
  rust = Tokenizer.from_file(files['roberta'])
  expected = {'pad': '<pad>', 'unk': '<unk>', 'cls': '<s>', 'sep': '</s>', 'mask': '<mask>'}
  assert tokenizer.special_tokens == expected
  # The metadata's special_token_ids name the roles by BERT's tokens.
  assert tokenizer.special_token_ids() == {
      '[PAD]': rust.token_to_id('<pad>'), '[UNK]': rust.token_to_id('<unk>'),
      '[CLS]': rust.token_to_id('<s>'), '[SEP]': rust.token_to_id('</s>'),
      '[MASK]': rust.token_to_id('<mask>')}


def test_roles_from_tokenizer_config_and_from_the_caller(files, tmp_path):
  spec = json.loads(open(files['roberta'], encoding='utf-8').read())
  directory = tmp_path / 'hf'
  directory.mkdir()
  (directory / 'tokenizer.json').write_text(json.dumps(spec), encoding='utf-8')
  # Hugging Face's tokenizer_config.json beside the file wins over the conventional names.
  (directory / 'tokenizer_config.json').write_text(
      json.dumps({'mask_token': {'content': '<unk>'}, 'cls_token': '</s>'}), encoding='utf-8')
  tokenizer = tokenization.load_tokenizer(tokenizer_json=str(directory / 'tokenizer.json'))
  assert tokenizer.special_tokens['mask'] == '<unk>' and tokenizer.special_tokens['cls'] == '</s>'
  tokenizer = tokenization.load_tokenizer(tokenizer_json=str(directory / 'tokenizer.json'),
                                          special_tokens={'mask': '<pad>'})
  assert tokenizer.special_tokens['mask'] == '<pad>'


def test_a_tokenizer_without_a_mask_token_is_a_one_line_error(files, tmp_path):
  path = bt.without_token(files['roberta'], '<mask>', tmp_path / 'no_mask.json')
  with pytest.raises(ValueError, match=r"no_mask.json'.*no mask token") as error:
    tokenization.load_tokenizer(tokenizer_json=path)
  assert '\n' not in str(error.value)
  with pytest.raises(ValueError, match='no mask token'):
    cpd.create_pretraining_data(str(files['root'] / 'corpus.txt'), str(tmp_path / 'o.tfrecord'),
                                tokenizer_json=path, num_workers=1)
  with pytest.raises(ValueError, match=r"the mask token 'nope' \(from special_tokens\)"):
    tokenization.load_tokenizer(tokenizer_json=files['roberta'], special_tokens={'mask': 'nope'})


# -------------------------------------------------------------------- ids and word boundaries


@pytest.mark.parametrize('name', ['modernbert', 'prefix_space', 'unigram'])
def test_ids_and_word_starts_are_the_tokenizers_own(files, name):
  tokenizer = tokenization.load_tokenizer(tokenizer_json=files[name])
  rust = Tokenizer.from_file(files[name])
  texts = EDGE_TEXTS + files['lines'][:150]
  encodings = rust.encode_batch(texts, add_special_tokens=False)
  ids, lengths = tokenizer.encode_to_arrays(texts)
  assert ids.tolist() == [i for e in encodings for i in e.ids]
  assert lengths.tolist() == [len(e.ids) for e in encodings]
  ids, lengths, starts = tokenizer.encode_with_word_starts(texts)
  assert ids.tolist() == [i for e in encodings for i in e.ids]
  assert starts.tolist() == [s for e in encodings for s in _word_starts(e)]
  table = tokenizer.continuation_table()
  if name == 'unigram':  # the ▁ marker tells word starts exactly, per id
    assert (~table[ids]).tolist() == starts.tolist()
  else:  # byte-level BPE: a line's first word has no Ġ, "world," is two words: per token only
    assert table is None


def test_byte_level_word_cache_is_used_for_ascii(files):
  tokenizer = tokenization.load_tokenizer(tokenizer_json=files['modernbert'])
  assert tokenizer._ascii_cache is not None  # pylint: disable=protected-access
  assert tokenization.load_tokenizer(
      tokenizer_json=files['unigram'])._ascii_cache is None  # pylint: disable=protected-access


def test_corpus_carries_word_starts_only_where_the_vocabulary_cannot(files):
  corpus_file = [str(files['root'] / 'corpus.txt')]
  bpe = tokenization.load_tokenizer(tokenizer_json=files['modernbert'])
  corpus, _ = tokenized_corpus.read_tokenized_corpus(corpus_file, bpe, whole_words=True)
  assert corpus.token_ids.dtype.names == pi.WORD_START_FIELDS
  plain, _ = tokenized_corpus.read_tokenized_corpus(corpus_file, bpe)
  assert plain.token_ids.dtype == np.uint16
  np.testing.assert_array_equal(corpus.token_ids['id'], plain.token_ids)
  unigram = tokenization.load_tokenizer(tokenizer_json=files['unigram'])
  corpus, _ = tokenized_corpus.read_tokenized_corpus(corpus_file, unigram, whole_words=True)
  assert corpus.token_ids.dtype == np.uint16


# ------------------------------------------------------------------------------------ records


def _read(path):
  records = []
  for raw in tf.data.TFRecordDataset(path):
    example = tf.train.Example.FromString(raw.numpy())
    records.append({name: np.array(getattr(feature, feature.WhichOneof('kind')).value)
                    for name, feature in example.features.feature.items()})
  return records


def _originals(record):
  ids = record['input_ids'].copy()
  count = int(record['masked_lm_weights'].sum())
  ids[record['masked_lm_positions'][:count]] = record['masked_lm_ids'][:count]
  return ids


def _records(files, tmp_path, name, **options):
  output = str(tmp_path / f'{name}.tfrecord')
  settings = dict(max_seq_length=SEQ, max_predictions_per_seq=MAX_PRED, dupe_factor=1,
                  num_workers=1, no_next_sentence=True)
  settings.update(options)
  metadata = cpd.create_pretraining_data(str(files['root'] / 'corpus.txt'), output,
                                         tokenizer_json=files[name], **settings)
  return _read(output), metadata


@pytest.mark.parametrize('name', ['roberta', 'unigram'])
def test_records_hold_the_tokenizers_ids_between_its_cls_and_sep(files, tmp_path, name):
  records, metadata = _records(files, tmp_path, name)
  rust = Tokenizer.from_file(files[name])
  tokenizer = tokenization.load_tokenizer(tokenizer_json=files[name])
  expected = [i for line in files['lines']
              for i in rust.encode(line, add_special_tokens=False).ids]
  found = []
  for record in records:
    ids = _originals(record)[:int(record['input_mask'].sum())]
    assert ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id
    masked = record['masked_lm_positions'][:int(record['masked_lm_weights'].sum())]
    assert set(record['input_ids'][masked]) <= set(range(tokenizer.vocab_size))
    found.extend(ids[1:-1].tolist())
  # Single segments cut at sentence ends, documents in a random order: the same tokens.
  assert sorted(found) == sorted(expected)
  assert metadata['num_corpus_tokens'] == len(expected)
  assert (np.concatenate([r['input_ids'] for r in records]) == tokenizer.mask_id).sum() > 0


def test_metadata_records_the_tokenizer(files, tmp_path):
  _, metadata = _records(files, tmp_path, 'roberta')
  stored = data_metadata.load_metadata(str(tmp_path / 'roberta.tfrecord'))
  text = open(files['roberta'], encoding='utf-8').read()
  tokenizer = tokenization.load_tokenizer(tokenizer_json=files['roberta'])
  assert stored['tokenizer_type'] == metadata['tokenizer_type'] == 'bpe'
  assert stored['tokenizer_json'] == text
  assert stored['tokenizer_json_sha256'] == tokenizer.tokenizer_json_sha256()
  assert stored['vocab'] == tokenizer.vocab and stored['vocab_size'] == len(tokenizer.vocab)
  assert stored['special_tokens'] == tokenizer.special_tokens
  assert stored['special_token_ids'] == tokenizer.special_token_ids()
  assert stored['do_lower_case'] is None and stored['vocab_source'] == 'tokenizer.json'
  # The stored text is the tokenizer: it loads and encodes alike.
  again = Tokenizer.from_str(stored['tokenizer_json'])
  original = Tokenizer.from_file(files['roberta'])
  assert again.encode('Kalo mi.').ids == original.encode('Kalo mi.').ids


@pytest.mark.parametrize('name,options', [('modernbert', {}), ('modernbert', {'pack': True}),
                                          ('modernbert', {'max_ngram_size': 3}),
                                          ('unigram', {})])
def test_whole_word_masking_masks_the_tokenizers_words_together(files, tmp_path, name, options):
  records, _ = _records(files, tmp_path, name, do_whole_word_mask=True, masked_lm_prob=0.3,
                        **options)
  tokenizer = tokenization.load_tokenizer(tokenizer_json=files[name])
  rust = Tokenizer.from_file(files[name])
  # Every word of the corpus as its token ids: a masked token's whole word must be masked.
  starts_of = {}
  for line in files['lines']:
    encoding = rust.encode(line, add_special_tokens=False)
    starts_of[tuple(encoding.ids)] = _word_starts(encoding)
  specials = {tokenizer.cls_id, tokenizer.sep_id}
  words_checked = split_words = 0
  # Sentence starts inside a row where one of the two sides is masked: a byte-level BPE
  # sentence's first word has no Ġ, yet it is no continuation of the previous sentence.
  split_sentence_starts = 0
  for record in records:
    ids = _originals(record)
    count = int(record['masked_lm_weights'].sum())
    masked = set(record['masked_lm_positions'][:count].tolist())
    length = int(record['input_mask'].sum())
    # Word starts of the row: from the sentences the row's text is made of.
    starts = np.ones(length, bool)
    position = 1
    while position < length:
      if ids[position] in specials:
        position += 1
        continue
      for line_ids, line_starts in starts_of.items():
        n = len(line_ids)
        if tuple(ids[position:position + n].tolist()) == line_ids:
          starts[position:position + n] = line_starts
          if ids[position - 1] not in specials:
            split_sentence_starts += (position in masked) != (position - 1 in masked)
          position += n
          break
      else:  # a sentence cut at the row's end: its start is still a word start
        position += 1
    word = None
    words = []
    for position in range(1, length):
      if ids[position] in specials:
        word = None
        continue
      if starts[position] or word is None:
        word = [position]
        words.append(word)
      else:
        word.append(position)
    for word in words:
      hit = masked & set(word)
      if hit:
        words_checked += 1
        split_words += hit != set(word)
  assert words_checked > 50
  assert split_words == 0
  assert split_sentence_starts > 0


def test_whole_word_masking_groups_a_sentence_start_alone(files, tmp_path):
  """Byte-level BPE: a sentence's first word has no Ġ; it is still a word of its own, not a piece
  of the previous sentence's last word (what a per-id Ġ flag would make of it)."""
  corpus = tmp_path / 'two.txt'
  corpus.write_text('Kalo mi ne.\nRuvo sa ti.\n', encoding='utf-8')
  tokenizer = tokenization.load_tokenizer(tokenizer_json=files['modernbert'])
  read, _ = tokenized_corpus.read_tokenized_corpus([str(corpus)], tokenizer, whole_words=True)
  tokens = tokenizer.convert_ids_to_tokens(read.token_ids['id'].tolist())
  second = read.sentence_starts[1]
  assert not tokens[second].startswith('\u0120') and read.token_ids['word_start'][second]
  assert read.token_ids['word_start'][second - 1]  # the period is a word of its own too


def test_cli_takes_a_bpe_tokenizer_json(files, tmp_path, capsys):
  output = tmp_path / 'cli.tfrecord'
  code = cli.main(['prog', f"--input_file={files['root'] / 'corpus.txt'}",
                   f'--output_file={output}', f"--tokenizer_json={files['roberta']}",
                   '--dupe_factor=1', '--max_seq_length=32', '--max_predictions_per_seq=5',
                   '--num_workers=1', '--do_whole_word_mask'])
  assert code == 0, capsys.readouterr().err
  metadata = data_metadata.load_metadata(str(output))
  assert metadata['tokenizer_type'] == 'bpe' and metadata['special_token_ids']['[CLS]'] == 0
  first = _read(str(output))[0]
  assert first['input_ids'][0] == 0  # <s>


def test_cli_names_a_missing_role_in_one_line(files, tmp_path, capsys):
  path = bt.without_token(files['roberta'], '<mask>', tmp_path / 'no_mask.json')
  code = cli.main(['prog', f"--input_file={files['root'] / 'corpus.txt'}",
                   f"--output_file={tmp_path / 'o.tfrecord'}", f'--tokenizer_json={path}'])
  assert code == 1
  err = capsys.readouterr().err
  assert 'no mask token' in err and 'no_mask.json' in err
