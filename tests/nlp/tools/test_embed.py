"""Tests for official/nlp/tools/embed.py."""

import io
import json

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.serving import inference
from official.nlp.tools import embed
from tests.nlp.serving import tiny_run

TEXTS = ['paris is the capital of france .', 'a new city', '',
         ' '.join(['paris', 'is', 'a', 'city'] * 5)]  # 20 words: cut to 14 + [CLS] [SEP]


@pytest.fixture(name='run', scope='module')
def _run(tmp_path_factory):
  return tiny_run.shared_run(tmp_path_factory)


@pytest.fixture(name='reference', scope='module')
def _reference(run):
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


def test_pool_and_encode_texts():
  outputs = {'sequence_output': np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2),
             'pooled_output': np.ones([2, 2], np.float32)}
  mask = np.array([[1, 1, 0], [1, 1, 1]])
  np.testing.assert_allclose(embed.pool(outputs, mask, 'mean'), [[1, 2], [8, 9]])
  np.testing.assert_allclose(embed.pool(outputs, mask, 'cls'), [[0, 1], [6, 7]])
  with pytest.raises(ValueError, match="pooling 'max': expected one of mean, cls, pooled"):
    embed.pool(outputs, mask, 'max')


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
