"""Tests for official/nlp/tools/fill_mask.py."""

import json
import os
import re
import shutil

import numpy as np
import pytest

from official.nlp.data import tokenization
from official.nlp.modeling import layers
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.serving import inference
from official.nlp.tools import fill_mask
from tests.cli import call_main
from tests.nlp.serving import tiny_run

WORDS = ['return', 'a', 'copy', 'of', 'the', 'list', '.']


@pytest.fixture(name='tokenizer')
def _tokenizer(tmp_path):
  path = tmp_path / 'vocab.txt'
  path.write_text('\n'.join(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + WORDS) + '\n')
  return tokenization.WordPieceTokenizer.from_vocab_file(str(path))


def test_encode_keeps_mask_tokens(tokenizer):
  inputs, counts = fill_mask.encode_masked_texts(
      tokenizer, ['Return a [MASK] of the list.', '[MASK] [MASK] .'], seq_length=12)
  ids = tokenizer.token_to_id
  assert counts == [1, 2]
  assert list(inputs['input_word_ids'][0, :9]) == [ids[t] for t in [
      '[CLS]', 'return', 'a', '[MASK]', 'of', 'the', 'list', '.', '[SEP]']]
  assert list(inputs['masked_lm_positions'][0]) == [3, 0]
  assert list(inputs['masked_lm_positions'][1]) == [1, 2]
  assert inputs['input_mask'][0].sum() == 9
  with pytest.raises(ValueError, match='has no \\[MASK\\]'):
    fill_mask.encode_masked_texts(tokenizer, ['no mask here'], 12)
  with pytest.raises(ValueError, match='seq_length is 4'):
    fill_mask.encode_masked_texts(tokenizer, ['Return a [MASK] of the list.'], 4)


def test_fill_mask_returns_sorted_probabilities(tokenizer):
  encoder = networks.BertEncoder(vocab_size=len(tokenizer.vocab), hidden_size=8, num_layers=1,
                                 num_attention_heads=2, inner_dim=16, max_sequence_length=16,
                                 dict_outputs=True)
  pretrainer = models.BertPretrainerV2(encoder, classification_heads=[
      layers.ClassificationHead(8, 2, name='next_sentence')])
  results = fill_mask.fill_mask(pretrainer, tokenizer, ['Return a [MASK] of the list.'], top_k=3,
                                seq_length=16)
  (guesses,), = results
  assert len(guesses) == 3
  probabilities = [p for _, p in guesses]
  assert probabilities == sorted(probabilities, reverse=True)
  assert all(token in tokenizer.vocab for token, _ in guesses)
  assert 0 < sum(probabilities) <= 1.0 + 1e-6


# ---- the mlm-fill-mask command line -----------------------------------------------------------

TEXTS = ['Paris is the [MASK] of France.', '[MASK] is a [MASK] .']
_LINE = re.compile(r'^  \[MASK\] (\d+): (.+)$')
_GUESS = re.compile(r'^(\S+) \((\d\.\d{4})\)$')


@pytest.fixture(name='run')
def _run(bert_run):
  """The session's tiny BERT run and its export (tests/nlp/tiny_runs.py)."""
  return bert_run


def _parse(output):
  """{text: [[(token, probability), ...] per mask]} from the printed predictions."""
  parsed, text = {}, None
  for line in output.splitlines():
    match = _LINE.match(line)
    if not match:
      text = line
      parsed[text] = []
      continue
    assert int(match.group(1)) == len(parsed[text]) + 1
    guesses = [_GUESS.match(g) for g in match.group(2).split(', ')]
    assert all(guesses), line
    parsed[text].append([(g.group(1), float(g.group(2))) for g in guesses])
  return parsed


def _cli_output_of_checkpoint_and_export(run, capsys) -> str:
  """mlm-fill-mask's stdout for TEXTS, the same from the run's model_dir and from its export."""
  outputs = []
  for model_dir in (run['model_dir'], run['export_dir']):
    argv = ['fill_mask', f'--model_dir={model_dir}', '--top_k=3'] + [f'--text={t}' for t in TEXTS]
    assert fill_mask.main(argv) == 0
    outputs.append(capsys.readouterr().out)
  assert outputs[0] == outputs[1]
  return outputs[0]


@pytest.mark.slow
def test_cli_prints_the_same_predictions_from_checkpoint_and_saved_model(run, capsys):
  parsed = _parse(_cli_output_of_checkpoint_and_export(run, capsys))
  assert list(parsed) == TEXTS
  assert [len(masks) for masks in parsed.values()] == [1, 2]
  # The printed numbers are the python API's, rounded.
  model = inference.load_inference_model(run['model_dir'])
  tokenizer = model.load_tokenizer()
  expected = fill_mask.fill_mask(model, tokenizer, TEXTS, top_k=3, seq_length=tiny_run.SEQ_LENGTH)
  for text, masks in zip(TEXTS, expected):
    assert [[t for t, _ in m] for m in parsed[text]] == [[t for t, _ in m] for m in masks]
    for printed, exact in zip(parsed[text], masks):
      np.testing.assert_allclose([p for _, p in printed], [p for _, p in exact], atol=5e-5)


@pytest.mark.slow
def test_modernbert_run_and_its_export_print_the_models_predictions(modernbert_run, capsys):
  run = modernbert_run
  parsed = _parse(_cli_output_of_checkpoint_and_export(run, capsys))
  # Independent reference: the restored pretrainer's logits, softmax and sort in numpy.
  _, pretrainer, _ = inference.restore_model(run['model_dir'])
  assert type(pretrainer.encoder_network).__name__ == 'ModernBertEncoder'
  tokenizer = tokenization.WordPieceTokenizer.from_vocab_file(run['vocab_file'])
  inputs, counts = fill_mask.encode_masked_texts(tokenizer, TEXTS, tiny_run.SEQ_LENGTH)
  logits = pretrainer(inputs, training=False)['mlm_logits'].numpy().astype(np.float64)
  probabilities = np.exp(logits - logits.max(-1, keepdims=True))
  probabilities /= probabilities.sum(-1, keepdims=True)
  for t, text in enumerate(TEXTS):
    assert len(parsed[text]) == counts[t]
    for m, printed in enumerate(parsed[text]):
      best = np.argsort(-probabilities[t, m], kind='stable')[:3]
      assert [token for token, _ in printed] == tokenizer.convert_ids_to_tokens(best)
      np.testing.assert_allclose([p for _, p in printed], probabilities[t, m, best], atol=5e-5)
  # Its longest input is the config's max_position_embeddings (32): no position table.
  assert fill_mask.main(['fill_mask', f'--model_dir={run["export_dir"]}', '--seq_length=33',
                         f'--text={TEXTS[0]}']) == 2
  assert 'exceeds the 32 position embeddings' in capsys.readouterr().err


@pytest.mark.slow
def test_cli_vocab_file_flag_and_missing_vocab(run, tmp_path, capsys):
  model_dir = tmp_path / 'model'
  shutil.copytree(run['model_dir'], model_dir)
  os.remove(model_dir / 'vocab.txt')
  argv = ['fill_mask', f'--model_dir={model_dir}', f'--text={TEXTS[0]}']
  assert fill_mask.main(argv) == 1
  assert capsys.readouterr().err.strip() == (
      f"fill_mask: error: no vocabulary for model_dir '{model_dir}': pass --vocab_file (looked "
      f'for {model_dir}/vocab.txt)')
  export_dir = tmp_path / 'export'
  shutil.copytree(run['export_dir'], export_dir)
  os.remove(export_dir / 'assets.extra' / 'vocab.txt')
  assert fill_mask.main(['fill_mask', f'--model_dir={export_dir}', f'--text={TEXTS[0]}']) == 1
  assert capsys.readouterr().err.strip() == (
      f"fill_mask: error: no vocabulary for model_dir '{export_dir}': pass --vocab_file (looked "
      f'for {export_dir}/assets.extra/vocab.txt)')
  assert fill_mask.main(argv + [f'--vocab_file={run["vocab_file"]}']) == 0
  assert capsys.readouterr().out.startswith(TEXTS[0] + '\n  [MASK] 1: ')
  wrong = tmp_path / 'wrong_vocab.txt'
  wrong.write_text('\n'.join(tiny_run.VOCAB[:-1]) + '\n')
  assert fill_mask.main(argv + [f'--vocab_file={wrong}']) == 1
  assert (f"vocab_file '{wrong}' has 21 tokens but the model '{model_dir}/ckpt-2' has 22 word "
          'embeddings') in capsys.readouterr().err


def test_cli_errors(run, tmp_path, capsys):
  assert fill_mask.main(['fill_mask', '--help']) == 0
  usage = capsys.readouterr().out
  assert usage.startswith('Fill-mask predictions: the most likely tokens')
  assert '  python -m official.nlp.tools.fill_mask --model_dir=runs/tiny \\\n' in usage
  assert '--text: A text with one or more [MASK]' in usage

  assert fill_mask.main(['fill_mask', f'--model_dir={run["export_dir"]}',
                         '--text=no mask here']) == 1
  assert capsys.readouterr().err.strip() == (
      "fill_mask: error: --text='no mask here' has no [MASK]; expected at least one")

  assert fill_mask.main(['fill_mask', f'--model_dir={run["export_dir"]}']) == 1
  assert '--text is required' in capsys.readouterr().err

  assert fill_mask.main(['fill_mask', f'--model_dir={run["export_dir"]}', '--top_k=6',
                         f'--text={TEXTS[0]}']) == 1
  assert (f"top_k=6 exceeds the top_k=5 that '{run['export_dir']}' was exported with"
          in capsys.readouterr().err)

  missing = tmp_path / 'nowhere'
  assert fill_mask.main(['fill_mask', f'--model_dir={missing}', f'--text={TEXTS[0]}']) == 1
  assert capsys.readouterr().err.strip() == (
      f"fill_mask: error: model_dir '{missing}': no such directory; expected a training model_dir "
      '(params.yaml + ckpt-N) or a SavedModel directory (saved_model.pb)')

  assert fill_mask.main(['fill_mask', f'--model_dir={tmp_path}', f'--text={TEXTS[0]}']) == 1
  assert 'is neither a training model_dir (params.yaml + ckpt-N files' in capsys.readouterr().err

  long_text = ' '.join(['paris'] * 20) + ' [MASK]'
  assert fill_mask.main(['fill_mask', f'--model_dir={run["model_dir"]}',
                         f'--text={long_text}']) == 1
  assert 'has 23 tokens; seq_length is 16' in capsys.readouterr().err


@pytest.mark.slow
def test_seq_length_above_the_position_embeddings_is_a_flag_error(run, tmp_path, capsys):
  # tiny_run: max_position_embeddings 32. A SavedModel exported before `max_sequence_length` was
  # recorded in serving_config.json falls back on its position table.
  old_export = tmp_path / 'old_export'
  shutil.copytree(run['export_dir'], old_export)
  config_path = old_export / 'assets.extra' / 'serving_config.json'
  config = json.loads(config_path.read_text())
  del config['max_sequence_length']
  config_path.write_text(json.dumps(config))
  for model_dir, source in ((run['model_dir'], run['checkpoint']),
                            (run['export_dir'], run['export_dir']),
                            (str(old_export), str(old_export))):
    assert fill_mask.main(['fill_mask', f'--model_dir={model_dir}', '--seq_length=64',
                           f'--text={TEXTS[0]}']) == 2
    assert capsys.readouterr().err == (
        f"fill_mask: error: --seq_length=64 exceeds the 32 position embeddings of '{source}' "
        '(max_position_embeddings); expected at most 32\n')
  assert fill_mask.main(['fill_mask', f'--model_dir={old_export}', '--seq_length=32',
                         f'--text={TEXTS[0]}']) == 0


def test_corrupt_model_files_are_one_line(run, tmp_path, capsys):
  export = tmp_path / 'export'
  shutil.copytree(run['export_dir'], export)
  (export / 'assets.extra' / 'serving_config.json').write_text('{"seq_length": 1')
  assert fill_mask.main(['fill_mask', f'--model_dir={export}', f'--text={TEXTS[0]}']) == 1
  err = capsys.readouterr().err
  assert err.startswith(f'fill_mask: error: {export}/assets.extra/serving_config.json: not valid '
                        'JSON (') and err.count('\n') == 1
  pb = export / 'saved_model.pb'
  pb.write_bytes(pb.read_bytes()[:500])
  assert fill_mask.main(['fill_mask', f'--model_dir={export}', f'--text={TEXTS[0]}']) == 1
  err = capsys.readouterr().err
  assert err.startswith(f"fill_mask: error: SavedModel '{export}': cannot be loaded (")
  assert err.count('\n') == 1

  model_dir = tmp_path / 'model'
  shutil.copytree(run['model_dir'], model_dir)
  (model_dir / 'params.yaml').write_text('task: [\n')
  assert fill_mask.main(['fill_mask', f'--model_dir={model_dir}', f'--text={TEXTS[0]}']) == 1
  err = capsys.readouterr().err
  assert err.startswith(f'fill_mask: error: {model_dir}/params.yaml: not readable YAML (')
  assert err.count('\n') == 1


def test_model_dir_that_is_a_file_is_one_line(tmp_path, capsys):
  a_file = tmp_path / 'model'
  a_file.write_text('x')
  assert fill_mask.main(['fill_mask', f'--model_dir={a_file}', f'--text={TEXTS[0]}']) == 1
  assert capsys.readouterr().err == (
      f"fill_mask: error: model_dir '{a_file}': a file; expected a training model_dir (params.yaml "
      '+ ckpt-N) or a SavedModel directory (saved_model.pb)\n')


@pytest.mark.slow
def test_module_seq_length_error_has_no_traceback(run):
  # As `python -m official.nlp.tools.fill_mask` runs it (`sys.exit(main())`), in this process.
  result = call_main(fill_mask.main, ['fill_mask', f'--model_dir={run["export_dir"]}',
                                      '--seq_length=33', f'--text={TEXTS[0]}'])
  assert result.returncode == 2
  assert 'Traceback' not in result.stderr
  errors = [line for line in result.stderr.splitlines() if line.startswith('fill_mask')]
  assert errors == [f"fill_mask: error: --seq_length=33 exceeds the 32 position embeddings of "
                    f"'{run['export_dir']}' (max_position_embeddings); expected at most 32"]
