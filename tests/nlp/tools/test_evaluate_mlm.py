"""Tests for official/nlp/tools/evaluate_mlm.py: a run's checkpoint on record sets of any masking
rate, packed or not, against the restored model's loss computed in numpy."""

import json

import numpy as np
import pytest

from official.nlp.data import create_pretraining_data
from official.nlp.serving import inference
from official.nlp.tools import context_free_mlm
from official.nlp.tools import evaluate_mlm
from tests.nlp.serving import tiny_run


def _records(tmp_path, vocab_file, name, **options):
  rng = np.random.default_rng(1)
  words = tiny_run.WORDS
  text = tmp_path / 'corpus.txt'
  text.write_text('\n\n'.join('\n'.join(' '.join(rng.choice(words, 6)) for _ in range(4))
                              for _ in range(8)) + '\n')
  path = str(tmp_path / f'{name}.tfrecord')
  create_pretraining_data.create_pretraining_data(
      str(text), path, vocab_file, max_seq_length=tiny_run.SEQ_LENGTH, num_workers=1,
      dupe_factor=1, **options)
  return path


def _numpy_metrics(model, path, batch_size):
  """Mean over batches of each batch's weighted mean cross-entropy, and accuracy, in numpy."""
  losses, correct, total = [], 0.0, 0.0
  for batch in context_free_mlm.masked_lm_batches(path, batch_size):
    logits = model(dict(input_word_ids=batch['input_word_ids'],
                        input_mask=(batch['input_word_ids'] > 0).astype(np.int32),
                        input_type_ids=np.zeros_like(batch['input_word_ids']),
                        masked_lm_positions=batch['masked_lm_positions']),
                   training=False)['mlm_logits'].numpy().astype(np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    labels, weights = batch['masked_lm_ids'], batch['masked_lm_weights']
    nll = -np.take_along_axis(log_p, labels[..., None], -1)[..., 0]
    losses.append((nll * weights).sum() / weights.sum())
    correct += ((logits.argmax(-1) == labels) * weights).sum()
    total += weights.sum()
  return np.mean(losses), correct / total


@pytest.mark.slow
def test_evaluates_single_segment_and_packed_records(tmp_path, tiny_runs):
  run = tiny_runs.saved('bert')  # the session's tiny BERT run, ckpt-2 (tests/nlp/tiny_runs.py)
  paths = {'single': _records(tmp_path, run['vocab_file'], 'single', no_next_sentence=True,
                              max_predictions_per_seq=3),
           'packed': _records(tmp_path, run['vocab_file'], 'packed', pack=True,
                              masked_lm_prob=0.3, max_predictions_per_seq=5)}
  results = evaluate_mlm.evaluate_checkpoint(run['model_dir'], paths, batch_size=4)
  _, model, _ = inference.restore_model(run['model_dir'])
  for name, path in paths.items():
    result = results[name]
    assert result['step'] == 2 and result['checkpoint'].endswith('ckpt-2')
    # The tiny BERT ignores position ids: the packed rows read as one document each.
    loss, accuracy = _numpy_metrics(model, path, 4)
    assert result['lm_example_loss'] == pytest.approx(loss, rel=1e-4)
    assert result['masked_lm_accuracy'] == pytest.approx(accuracy, abs=1e-6)
    assert result['records'] == sum(len(b['masked_lm_ids'])
                                    for b in context_free_mlm.masked_lm_batches(path, 4))
  # The command line writes the same JSON.
  output = tmp_path / 'eval.json'
  evaluate_mlm.main([f'--model_dir={run["model_dir"]}', f'--input_paths=single={paths["single"]}',
                     '--batch_size=4', f'--output_json={output}'])
  assert json.loads(output.read_text())['single'] == results['single']


def test_bad_input_paths_are_named(tmp_path, capsys):
  with pytest.raises(SystemExit):
    evaluate_mlm.main([f'--model_dir={tmp_path}', '--input_paths=no_equals_sign'])
  assert "--input_paths: expected name=path[,name=path...], found 'no_equals_sign'" in (
      capsys.readouterr().err)


def test_an_experiment_module_that_does_not_import_is_named(tmp_path, capsys):
  with pytest.raises(SystemExit) as exit_info:
    evaluate_mlm.main([f'--model_dir={tmp_path}', '--input_paths=a=b.tfrecord',
                       '--experiment_module=no_such_module_here'])
  assert exit_info.value.code == 2
  assert ('error: --experiment_module=no_such_module_here: cannot import it: No module named '
          "'no_such_module_here'") in capsys.readouterr().err
