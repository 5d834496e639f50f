"""Tests for official/nlp/tools/embedding_stats.py."""

import numpy as np
import pytest

from official.nlp.tools import embedding_stats


def _corpus():
  rng = np.random.default_rng(3)
  vectors = rng.normal(5.0, 3.0, size=(40, 6)).astype(np.float32)
  vectors[:, 2] = 7.0  # a constant dimension: std 0
  return vectors


def test_fit_matches_numpy_and_apply_standardises_the_corpus():
  vectors = _corpus()
  stats = embedding_stats.fit_zscore(vectors, pooling='mean', token_level=True, model='m')
  np.testing.assert_allclose(stats.mean, vectors.astype(np.float64).mean(axis=0), rtol=1e-6)
  np.testing.assert_allclose(stats.std, vectors.astype(np.float64).std(axis=0), rtol=1e-6)
  assert stats.count == 40 and stats.hidden_size == 6 and stats.std[2] == 0
  standardised = embedding_stats.apply_zscore(vectors, stats)
  assert standardised.dtype == np.float32 and np.isfinite(standardised).all()
  np.testing.assert_allclose(standardised.mean(axis=0), 0, atol=1e-5)
  np.testing.assert_allclose(np.delete(standardised.std(axis=0), 2), 1, atol=1e-5)
  np.testing.assert_array_equal(standardised[:, 2], 0)  # centred only: no division by ~0
  new = np.full([1, 6], 8.0, np.float32)
  expected = (8.0 - stats.mean) / np.where(np.arange(6) == 2, 1.0, stats.std)
  np.testing.assert_allclose(embedding_stats.apply_zscore(new, stats), [expected], rtol=1e-5)
  assert expected[2] == 1.0


def test_docstring_examples():
  stats = embedding_stats.fit_zscore(np.array([[1., 2.], [3., 2.]]))
  assert (stats.mean.tolist(), stats.std.tolist(), stats.count) == ([2, 2], [1, 0], 2)
  np.testing.assert_array_equal(
      embedding_stats.apply_zscore(np.array([[1., 2.], [3., 5.]]), stats), [[-1, 0], [1, 3]])


def test_save_load_round_trip(tmp_path):
  stats = embedding_stats.fit_zscore(_corpus(), pooling='first', token_level=True,
                                     model='runs/tiny', input_file='corpus.txt')
  path = str(tmp_path / 'd' / 'stats')  # written as named: no .npz added
  embedding_stats.save_zscore(stats, path)
  loaded = embedding_stats.load_zscore(path)
  np.testing.assert_array_equal(loaded.mean, stats.mean)
  np.testing.assert_array_equal(loaded.std, stats.std)
  assert (loaded.count, loaded.pooling, loaded.token_level, loaded.model, loaded.input_file) == (
      40, 'first', True, 'runs/tiny', 'corpus.txt')


def test_bad_inputs_are_refused_in_one_line_naming_the_file(tmp_path):
  stats = embedding_stats.fit_zscore(_corpus(), pooling='first', token_level=True)
  with pytest.raises(ValueError, match=r'^apply_zscore: vectors of size 4; expected the stats\' '
                                       r'hidden size 6$'):
    embedding_stats.apply_zscore(np.zeros([2, 4]), stats)
  with pytest.raises(ValueError,
                     match=r'expected vectors \[n >= 1, hidden\]; found shape \[0, 3\]'):
    embedding_stats.fit_zscore(np.zeros([0, 3]))
  path = str(tmp_path / 's.npz')
  with pytest.raises(ValueError) as e:
    embedding_stats.check_compatible(stats, path, 16, 'first', True)
  assert str(e.value) == (f'--zscore={path}: stats of hidden size 6; these embeddings have 16; '
                          'expected stats fitted with this model (refit with --fit_zscore)')
  with pytest.raises(ValueError, match=r'stats fitted on token-level \(first sub-word\) '
                                       r'embeddings; these are sentence \(mean\) embeddings'):
    embedding_stats.check_compatible(stats, path, 6, 'mean', False)
  embedding_stats.check_compatible(stats, path, 6, 'first', True)  # the same kind: accepted
  garbage = tmp_path / 'garbage.npz'
  garbage.write_text('not numpy')
  with pytest.raises(ValueError, match=f'^zscore={garbage}: not an .npz file'):
    embedding_stats.load_zscore(str(garbage))
  partial = tmp_path / 'partial.npz'
  with open(partial, 'wb') as f:
    np.savez(f, mean=np.zeros(3))
  with pytest.raises(ValueError) as e:
    embedding_stats.load_zscore(str(partial), '--zscore')
  assert str(e.value) == (f'--zscore={partial}: lacks std, count, pooling, token_level, model, '
                          'input_file; expected z-score stats written by --fit_zscore')
