"""Tests for official/nlp/tools/embed.py."""

import io
import json

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import tokenization
from official.nlp.serving import inference
from official.nlp.tools import embed
from official.nlp.tools import embedding_stats
from tests.nlp.serving import tiny_run

TEXTS = ['paris is the capital of france .', 'a new city', '',
         ' '.join(['paris', 'is', 'a', 'city'] * 5)]  # 20 words: cut to 14 + [CLS] [SEP]


@pytest.fixture(name='run')
def _run(bert_run):
  """The session's tiny BERT run and its export (tests/nlp/tiny_runs.py)."""
  return bert_run


@pytest.fixture(name='reference', scope='module')
def _reference(bert_run):
  return _encoder_outputs(bert_run)


def _encoder_outputs(run):
  """Per text, the Keras encoder's outputs on the unpadded `[CLS] tokens [SEP]` (cut to 16)."""
  _, model, _ = inference.restore_model(run['model_dir'])
  ids = {t: i for i, t in enumerate(tiny_run.VOCAB)}
  outputs = []
  for text in TEXTS:
    row = [ids['[CLS]']] + [ids[w] for w in text.split()][:tiny_run.SEQ_LENGTH - 2] + [ids['[SEP]']]
    row = tf.constant([row], tf.int32)
    result = model.encoder_network({'input_word_ids': row, 'input_mask': tf.ones_like(row),
                                    'input_type_ids': tf.zeros_like(row)}, training=False)
    outputs.append({k: result[k].numpy()[0] for k in ('sequence_output', 'pooled_output')})
  return outputs


@pytest.mark.slow
@pytest.mark.parametrize('kind', ['model_dir', 'export_dir'])
def test_pooling_matches_numpy(run, reference, kind):
  model = inference.load_inference_model(run[kind])
  tokenizer = model.load_tokenizer()
  mean, truncated = embed.embed_texts(model, tokenizer, TEXTS, pooling='mean', batch_size=3)
  assert truncated == 1
  assert mean.dtype == np.float32 and mean.shape == (4, 16)
  np.testing.assert_allclose(mean, [r['sequence_output'].mean(axis=0) for r in reference],
                             atol=1e-5)
  cls, _ = embed.embed_texts(model, tokenizer, TEXTS, pooling='cls', batch_size=2)
  np.testing.assert_allclose(cls, [r['sequence_output'][0] for r in reference], atol=1e-5)
  pooled, _ = embed.embed_texts(model, tokenizer, TEXTS, pooling='pooled', batch_size=4)
  np.testing.assert_allclose(pooled, [r['pooled_output'] for r in reference], atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize('kind', ['model_dir', 'export_dir'])
def test_modernbert_pooling_matches_its_encoder(modernbert_run, kind):
  reference = _encoder_outputs(modernbert_run)  # unpadded rows: padding must not matter
  model = inference.load_inference_model(modernbert_run[kind])
  tokenizer = model.load_tokenizer()
  hidden = tiny_run.ENCODER_SIZES['modernbert']['hidden_size']
  mean, truncated = embed.embed_texts(model, tokenizer, TEXTS, pooling='mean', batch_size=3)
  assert truncated == 1 and mean.shape == (4, hidden)
  np.testing.assert_allclose(mean, [r['sequence_output'].mean(axis=0) for r in reference],
                             atol=1e-5)
  cls, _ = embed.embed_texts(model, tokenizer, TEXTS, pooling='cls', batch_size=2)
  np.testing.assert_allclose(cls, [r['sequence_output'][0] for r in reference], atol=1e-5)
  # ModernBERT has no pooler: `pooled` is the [CLS] vector.
  pooled, _ = embed.embed_texts(model, tokenizer, TEXTS, pooling='pooled', batch_size=4)
  np.testing.assert_allclose(pooled, cls, atol=1e-6)
  words = embed.token_embeddings(model, tokenizer, TEXTS[:2])
  assert words.words == TEXTS[0].split() + TEXTS[1].split()
  expected = np.concatenate([r['sequence_output'][1:-1] for r in reference[:2]])
  np.testing.assert_allclose(words.vectors, expected, atol=1e-5)


@pytest.mark.slow
def test_modernbert_cli_writes_the_same_vectors_from_checkpoint_and_export(modernbert_run,
                                                                           tmp_path, capsys):
  input_file = tmp_path / 'lines.txt'
  input_file.write_text('\n'.join(TEXTS) + '\n')
  vectors = []
  for kind in ('model_dir', 'export_dir'):
    output = tmp_path / f'{kind}.npy'
    assert embed.main(['embed', f'--model_dir={modernbert_run[kind]}',
                       f'--input_file={input_file}', f'--output_file={output}', '--pooling=cls',
                       '--noprogress']) == 0
    assert f'wrote 4 x 32 cls embeddings to {output}' in capsys.readouterr().err
    vectors.append(np.load(output))
  np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-5)
  np.testing.assert_allclose(vectors[0], [r['sequence_output'][0]
                                          for r in _encoder_outputs(modernbert_run)], atol=1e-5)


def test_pool_and_encode_texts():
  outputs = {'sequence_output': np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2),
             'pooled_output': np.ones([2, 2], np.float32)}
  mask = np.array([[1, 1, 0], [1, 1, 1]])
  np.testing.assert_allclose(embed.pool(outputs, mask, 'mean'), [[1, 2], [8, 9]])
  np.testing.assert_allclose(embed.pool(outputs, mask, 'cls'), [[0, 1], [6, 7]])
  with pytest.raises(ValueError, match="pooling 'max': expected one of mean, cls, pooled"):
    embed.pool(outputs, mask, 'max')


@pytest.mark.slow
def test_cli_writes_npy_and_jsonl(run, tmp_path, capsys, monkeypatch):
  input_file = tmp_path / 'lines.txt'
  input_file.write_text('\n'.join(TEXTS) + '\n')
  npy = tmp_path / 'out.npy'
  assert embed.main(['embed', f'--model_dir={run["export_dir"]}', f'--input_file={input_file}',
                     f'--output_file={npy}', '--batch_size=2', '--noprogress']) == 0
  err = capsys.readouterr().err
  assert 'embed: 1 of 4 lines were cut to 16 tokens' in err
  assert f'wrote 4 x 16 mean embeddings to {npy}' in err
  vectors = np.load(npy)
  assert vectors.shape == (4, 16) and vectors.dtype == np.float32

  jsonl = tmp_path / 'out.jsonl'
  assert embed.main(['embed', f'--model_dir={run["model_dir"]}', f'--input_file={input_file}',
                     f'--output_file={jsonl}', '--noprogress']) == 0
  records = [json.loads(line) for line in jsonl.read_text().splitlines()]
  assert [r['line'] for r in records] == [0, 1, 2, 3]
  assert [r['text'] for r in records] == TEXTS
  np.testing.assert_allclose([r['embedding'] for r in records], vectors, atol=1e-5)

  monkeypatch.setattr('sys.stdin', io.StringIO('a new city\n'))
  assert embed.main(['embed', f'--model_dir={run["export_dir"]}', '--output_file=-',
                     '--pooling=cls', '--noprogress']) == 0
  (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
  model = inference.load_inference_model(run['export_dir'])
  cls, _ = embed.embed_texts(model, model.load_tokenizer(), ['a new city'], pooling='cls')
  np.testing.assert_allclose(record['embedding'], cls[0], atol=1e-6)


def test_cli_errors(run, tmp_path, capsys):
  base = ['embed', f'--model_dir={run["export_dir"]}', '--noprogress']
  assert embed.main(base + ['--output_file=-', '--format=npy']) == 1
  assert capsys.readouterr().err.strip() == (
      'embed: error: --output_file=- (stdout) needs --format=jsonl; .npy goes to a file')
  missing = tmp_path / 'missing.txt'
  assert embed.main(base + [f'--input_file={missing}', f'--output_file={tmp_path / "o.npy"}']) == 1
  assert str(missing) in capsys.readouterr().err
  empty = tmp_path / 'empty.txt'
  empty.write_text('')
  assert embed.main(base + [f'--input_file={empty}', f'--output_file={tmp_path / "o.npy"}']) == 1
  assert f'--input_file={empty}: no lines to embed' in capsys.readouterr().err
  assert embed.main(base + ['--pooling=max', '--output_file=x.npy']) == 2
  assert "flag --pooling=max: value should be one of <mean|cls|pooled>" in capsys.readouterr().err
  lines = tmp_path / 'lines.txt'
  lines.write_text('a city\n')
  assert embed.main(['embed', f'--model_dir={tmp_path}', f'--input_file={lines}',
                     f'--output_file={tmp_path / "o.npy"}']) == 1
  assert (f"embed: error: model_dir '{tmp_path}' is neither a training model_dir"
          in capsys.readouterr().err)


def _never_load(*args, **kwargs):
  raise AssertionError('the model was loaded before the output path was checked')


@pytest.mark.slow
def test_cli_output_paths_are_checked_before_any_work(run, tmp_path, capsys, monkeypatch):
  lines = tmp_path / 'lines.txt'
  lines.write_text('a city\n')
  base = ['embed', f'--model_dir={run["export_dir"]}', f'--input_file={lines}', '--noprogress']
  out = tmp_path / 'out' / 'vectors'  # no .npy suffix: written as named, its directory created
  assert embed.main(base + [f'--output_file={out}']) == 0
  assert np.load(out).shape == (1, 16)
  capsys.readouterr()

  monkeypatch.setattr(inference, 'load_inference_model', _never_load)
  assert embed.main(base + [f'--output_file={out}']) == 1
  assert capsys.readouterr().err == (f'embed: error: --output_file={out}: exists; expected a new '
                                     'file, or pass --overwrite to replace it\n')
  assert embed.main(base + [f'--output_file={tmp_path}']) == 1
  assert capsys.readouterr().err == (f'embed: error: --output_file={tmp_path}: a directory; '
                                     'expected a file path\n')
  assert embed.main(base + [f'--output_file={lines}/x.npy']) == 1
  assert capsys.readouterr().err == (f'embed: error: --output_file={lines}/x.npy: {lines} is a '
                                     'file; expected a directory there\n')
  assert embed.main(['embed', f'--model_dir={run["export_dir"]}', f'--input_file={tmp_path}',
                     f'--output_file={tmp_path / "new.npy"}']) == 1
  assert capsys.readouterr().err == (f'embed: error: --input_file={tmp_path}: a directory; '
                                     'expected a text file, one sentence a line\n')
  monkeypatch.undo()

  assert embed.main(base + [f'--output_file={out}', '--overwrite', '--pooling=cls']) == 0
  capsys.readouterr()


@pytest.mark.slow
def test_cli_write_failure_and_seq_length_are_one_line(run, tmp_path, capsys, monkeypatch):
  lines = tmp_path / 'lines.txt'
  lines.write_text('a city\n')
  base = ['embed', f'--model_dir={run["model_dir"]}', f'--input_file={lines}', '--noprogress']
  assert embed.main(base + ['--seq_length=40', f'--output_file={tmp_path / "o.npy"}']) == 2
  assert capsys.readouterr().err == (
      f"embed: error: --seq_length=40 exceeds the 32 position embeddings of '{run['checkpoint']}' "
      '(max_position_embeddings); expected at most 32\n')

  def disk_full(file, array):
    raise OSError(28, 'No space left on device', str(tmp_path / 'o.npy'))

  monkeypatch.setattr(embed.np, 'save', disk_full)
  assert embed.main(base + [f'--output_file={tmp_path / "o.npy"}']) == 1
  assert capsys.readouterr().err == (
      f'embed: error: {tmp_path / "o.npy"}: no space left on device; expected room for the output '
      '(free some space or choose another path) (errno 28)\n')


# Token level. A vocabulary of the tiny model's size with sub-words, so that words span several
# positions ('capital' -> cap ##ital); the reference splits words by hand, not with the tokenizer.
SUBWORD_VOCAB = (['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'paris', 'is', 'the', 'cap',
                  '##ital', 'of', 'fr', '##ance', 'a', 'city', '.', '##s', 'copy', 'list', 'new',
                  'object', 'file'])
PIECES = {'capital': ['cap', '##ital'], 'france': ['fr', '##ance'], 'citys': ['city', '##s'],
          'copys': ['copy', '##s'], 'lists': ['list', '##s']}
# The last line has 1 + 7 * 2 = 15 sub-words: the 7th 'capital' straddles position 14 (cut).
WORD_TEXTS = ['the capital of france is paris .', 'citys copys new lists', '',
              'paris' + ' capital' * 7]


@pytest.fixture(name='word_reference', scope='module')
def _word_reference(bert_run):
  """Per kept word instance: (line, word index, word, first-sub-word vector, mean vector)."""
  assert len(SUBWORD_VOCAB) == len(tiny_run.VOCAB)
  _, model, _ = inference.restore_model(bert_run['model_dir'])
  ids = {t: i for i, t in enumerate(SUBWORD_VOCAB)}
  rows = []
  for line, text in enumerate(WORD_TEXTS):
    pieces, spans = [], []
    for word in text.split():
      spans.append((word, len(pieces), len(pieces) + len(PIECES.get(word, [word]))))
      pieces += PIECES.get(word, [word])
    row = [ids['[CLS]']] + [ids[p] for p in pieces][:tiny_run.SEQ_LENGTH - 2] + [ids['[SEP]']]
    row = tf.constant([row], tf.int32)
    sequence = model.encoder_network({'input_word_ids': row, 'input_mask': tf.ones_like(row),
                                      'input_type_ids': tf.zeros_like(row)},
                                     training=False)['sequence_output'].numpy()[0]
    for index, (word, start, end) in enumerate(spans):
      if end <= tiny_run.SEQ_LENGTH - 2:
        rows.append((line, index, word, sequence[1 + start], sequence[1 + start:1 + end].mean(0)))
  return rows


@pytest.fixture(name='subword_tokenizer', scope='module')
def _subword_tokenizer(tmp_path_factory):
  vocab_file = tmp_path_factory.mktemp('subword_vocab') / 'vocab.txt'
  vocab_file.write_text('\n'.join(SUBWORD_VOCAB) + '\n')
  return tokenization.WordPieceTokenizer.from_vocab_file(str(vocab_file))


def test_split_words_gives_the_sub_word_span_of_each_word(subword_tokenizer):
  ((ids, words),) = embed.split_words(subword_tokenizer, ['The Capital, copys!'])
  assert subword_tokenizer.convert_ids_to_tokens(ids) == ['the', 'cap', '##ital', '[UNK]', 'copy',
                                                          '##s', '[UNK]']
  assert words == [('The', 0, 1), ('Capital', 1, 3), (',', 3, 4), ('copys', 4, 6), ('!', 6, 7)]
  assert embed.split_words(subword_tokenizer, ['']) == [([], [])]


@pytest.mark.slow
@pytest.mark.parametrize('kind', ['model_dir', 'export_dir'])
def test_token_embeddings_match_the_encoder_at_sub_word_positions(run, word_reference,
                                                                  subword_tokenizer, kind):
  model = inference.load_inference_model(run[kind])
  expected_words = sum(len(t.split()) for t in WORD_TEXTS)  # 7 + 4 + 0 + 8
  first = embed.token_embeddings(model, subword_tokenizer, WORD_TEXTS, 'first', batch_size=3)
  assert first.vectors.dtype == np.float32 and first.vectors.shape == (expected_words - 1, 16)
  assert (first.cut_lines, first.cut_words) == (1, 1)
  assert first.lines.tolist() == [r[0] for r in word_reference]
  assert first.word_indices.tolist() == [r[1] for r in word_reference]
  assert first.words == [r[2] for r in word_reference]
  np.testing.assert_allclose(first.vectors, [r[3] for r in word_reference], atol=1e-5)
  mean = embed.token_embeddings(model, subword_tokenizer, WORD_TEXTS, 'mean', batch_size=2)
  np.testing.assert_allclose(mean.vectors, [r[4] for r in word_reference], atol=1e-5)
  assert not np.allclose(mean.vectors[1], first.vectors[1])  # 'capital': two sub-words differ
  with pytest.raises(ValueError, match="subword_pooling 'last': expected one of first, mean"):
    embed.token_embeddings(model, subword_tokenizer, WORD_TEXTS, 'last')


def test_nearest_neighbours_against_brute_force():
  rng = np.random.default_rng(1)
  vectors = rng.normal(size=(7, 5))
  indices, similarities = embed.nearest_neighbours(vectors, k=3)
  assert indices.shape == similarities.shape == (7, 3)
  unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
  for i in range(7):
    others = [(float(unit[i] @ unit[j]), j) for j in range(7) if j != i]
    best = sorted(others, reverse=True)[:3]
    assert indices[i].tolist() == [j for _, j in best]
    np.testing.assert_allclose(similarities[i], [s for s, _ in best], atol=1e-6)
  assert embed.nearest_neighbours(vectors[:2], k=5)[0].tolist() == [[1], [0]]
  with pytest.raises(ValueError, match='expected k >= 1'):
    embed.nearest_neighbours(vectors, k=0)


@pytest.mark.slow
def test_cli_token_level_npy_jsonl_and_zscore(run, tmp_path, capsys):
  lines = tmp_path / 'lines.txt'
  lines.write_text('\n'.join(TEXTS) + '\n')
  n_words = sum(min(len(t.split()), tiny_run.SEQ_LENGTH - 2) for t in TEXTS)  # one word a piece
  base = ['embed', f'--model_dir={run["export_dir"]}', f'--input_file={lines}', '--noprogress',
          '--token_level']
  npy = tmp_path / 'words.npy'
  stats_file = tmp_path / 'stats.npz'
  assert embed.main(base + [f'--output_file={npy}', f'--fit_zscore={stats_file}']) == 0
  err = capsys.readouterr().err
  assert 'embed: 1 of 4 lines were cut to 16 tokens (6 words left out)' in err
  assert f'fitted z-score stats on {n_words} vectors, saved to {stats_file}' in err
  assert (f'wrote {n_words} x 16 z-scored token-level (first sub-word) embeddings to {npy} '
          f'(words: {npy}.words.tsv)') in err
  standardised = np.load(npy)
  assert standardised.shape == (n_words, 16)
  np.testing.assert_allclose(standardised.mean(axis=0), 0, atol=1e-5)
  np.testing.assert_allclose(standardised.std(axis=0), 1, atol=1e-4)
  sidecar = (tmp_path / 'words.npy.words.tsv').read_text().splitlines()
  assert sidecar[0] == 'line\tword_index\tword'
  expected = [f'{i}\t{j}\t{w}' for i, t in enumerate(TEXTS) for j, w in enumerate(t.split())
              if j < tiny_run.SEQ_LENGTH - 2]
  assert sidecar[1:] == expected

  # The raw vectors, and the saved stats applied to them, in JSON lines.
  raw = tmp_path / 'raw.jsonl'
  assert embed.main(base + [f'--output_file={raw}', '--subword_pooling=first']) == 0
  records = [json.loads(line) for line in raw.read_text().splitlines()]
  assert [f"{r['line']}\t{r['word_index']}\t{r['word']}" for r in records] == expected
  vectors = np.array([r['embedding'] for r in records])
  stats = np.load(stats_file)
  np.testing.assert_allclose(stats['mean'], vectors.mean(axis=0), atol=1e-5)
  np.testing.assert_allclose(stats['std'], vectors.std(axis=0), atol=1e-5)
  assert (int(stats['count']), str(stats['pooling']), bool(stats['token_level']),
          str(stats['model'])) == (n_words, 'first', True, run['export_dir'])
  applied = tmp_path / 'applied.npy'
  assert embed.main(base + [f'--output_file={applied}', f'--zscore={stats_file}']) == 0
  np.testing.assert_allclose(np.load(applied), standardised, atol=1e-5)
  capsys.readouterr()

  # Stats of another pooling or hidden size are refused, in one line naming the file.
  assert embed.main(base + [f'--output_file={tmp_path / "m.npy"}', '--subword_pooling=mean',
                            f'--zscore={stats_file}']) == 1
  assert capsys.readouterr().err == (
      f'embed: error: --zscore={stats_file}: stats fitted on token-level (first sub-word) '
      'embeddings; these are token-level (mean of sub-words) embeddings; expected stats fitted '
      'with the same pooling (refit with --fit_zscore)\n')
  narrow = tmp_path / 'narrow.npz'
  embedding_stats.save_zscore(embedding_stats.fit_zscore(np.eye(8), 'first', True), str(narrow))
  assert embed.main(base + [f'--output_file={tmp_path / "n.npy"}', f'--zscore={narrow}']) == 1
  assert capsys.readouterr().err == (
      f'embed: error: --zscore={narrow}: stats of hidden size 8; these embeddings have 16; '
      'expected stats fitted with this model (refit with --fit_zscore)\n')
  assert not (tmp_path / 'n.npy').exists()
  npy.unlink()  # the word list left behind is not overwritten silently either
  assert embed.main(base + [f'--output_file={npy}']) == 1
  assert capsys.readouterr().err == (
      f'embed: error: {npy}.words.tsv: exists (the word list of --output_file={npy}); expected '
      'a new file, or pass --overwrite to replace it\n')


@pytest.mark.slow
def test_cli_sentence_zscore_and_flag_combinations(run, tmp_path, capsys):
  lines = tmp_path / 'lines.txt'
  lines.write_text('\n'.join(TEXTS) + '\n')
  base = ['embed', f'--model_dir={run["model_dir"]}', f'--input_file={lines}', '--noprogress']
  stats_file = tmp_path / 'sub' / 'stats.npz'
  out = tmp_path / 'cls.npy'
  assert embed.main(base + [f'--output_file={out}', '--pooling=cls',
                            f'--fit_zscore={stats_file}']) == 0
  assert f'wrote 4 x 16 z-scored cls embeddings to {out}' in capsys.readouterr().err
  model = inference.load_inference_model(run['model_dir'])
  cls, _ = embed.embed_texts(model, model.load_tokenizer(), TEXTS, pooling='cls')
  # The same vectors as embed_texts, standardised with float32 stats: against float64 arithmetic
  # the error is a few float32 roundings of |mean| / std (the tiny model has columns of mean/std
  # in the hundreds, where 1e-4 is a few ulps) and of the result.
  exact = cls.astype(np.float64)
  mean, std = exact.mean(0), exact.std(0)
  expected = (exact - mean) / std
  ulps = 4 * np.finfo(np.float32).eps * (np.abs(mean) / std + np.abs(expected))
  np.testing.assert_array_less(np.abs(np.load(out) - expected), ulps + 1e-6)
  # An existing stats file is kept unless --overwrite, checked before any work.
  assert embed.main(base + [f'--output_file={tmp_path / "x.npy"}', '--pooling=cls',
                            f'--fit_zscore={stats_file}']) == 1
  assert capsys.readouterr().err == (f'embed: error: --fit_zscore={stats_file}: exists; expected '
                                     'a new file, or pass --overwrite to replace it\n')
  assert embed.main(base + [f'--output_file={tmp_path / "y.npy"}', f'--zscore={stats_file}']) == 1
  assert 'stats fitted on sentence (cls) embeddings; these are sentence (mean)' in (
      capsys.readouterr().err)
  for flags_, message in [
      (['--subword_pooling=mean'], '--subword_pooling needs --token_level'),
      (['--token_level', '--pooling=cls'], '--pooling is for sentence vectors'),
      ([f'--zscore={stats_file}', f'--fit_zscore={tmp_path / "s.npz"}'], 'give one of')]:
    assert embed.main(base + ['--output_file=z.npy'] + flags_) == 2
    err = capsys.readouterr().err
    assert err.startswith(f'embed: error: {message}') and err.count('\n') == 1
  missing = tmp_path / 'missing.npz'
  assert embed.main(base + ['--output_file=z.npy', f'--zscore={missing}']) == 1
  assert capsys.readouterr().err == (f'embed: error: --zscore={missing}: no such file; expected '
                                     'z-score stats written by --fit_zscore\n')
