"""Tests of official/nlp/tools/pretrain.py (`mlm-pretrain`): text to a trained encoder, held-out
evaluation against the context-free predictor, a Hugging Face folder transformers loads, resume."""

import json
import random
import subprocess
import sys

import pytest

from official.nlp.tools import pretrain
from tests import cli
from tests import paths
from tests.nlp.tools import tiny_hf

WORDS = [f'w{i}' for i in range(30)]
TINY = dict(size='tiny', vocab_size=60, seq_length=32, batch_size=16, dupe_factor=3,
            validation_fraction=0.1, num_workers=1)


def _walking_text(seed: int) -> str:
  """Documents whose sentences walk the word list in order (`w7 w8 w9 w10.`): a masked word is
  given by its neighbours, while its frequency alone says little (one word in 30)."""
  rng = random.Random(seed)
  documents = []
  for _ in range(120):
    sentences = []
    for _ in range(rng.randint(2, 4)):
      start = rng.randrange(len(WORDS))
      sentences.append(' '.join(WORDS[(start + i) % len(WORDS)] for i in range(rng.randint(5, 9)))
                       + '.')
    documents.append('\n'.join(sentences))
  return '\n\n'.join(documents) + '\n'


@pytest.fixture(name='run', scope='module')
def fixture_run(tmp_path_factory):
  root = tmp_path_factory.mktemp('pretrain')
  (root / 'corpus').mkdir()
  (root / 'corpus' / 'a.txt').write_text(_walking_text(0), encoding='utf-8')
  (root / 'corpus' / 'b.txt').write_text(_walking_text(1), encoding='utf-8')
  (root / 'corpus' / '.hidden').write_text('not text', encoding='utf-8')
  summary = pretrain.pretrain([str(root / 'corpus')], str(root / 'out'), steps=120, **TINY)
  return root, summary


@pytest.mark.slow
def test_text_to_an_encoder_that_beats_the_context_free_predictor(run):
  root, summary = run
  out = root / 'out'
  assert summary['step'] == 120
  validation, context_free = summary['validation'], summary['context_free']
  # Walking sentences: the neighbours give the word; alone, the context-free predictor gets the
  # kept tokens it copies (10% of the masked) and the period where it guesses it (about one token
  # in eight, the likeliest): about 0.1 + 0.9 / 8 = 0.21, well under 0.35.
  assert context_free['masked_lm_accuracy'] < 0.35
  assert validation['masked_lm_accuracy'] > context_free['masked_lm_accuracy'] + 0.2
  assert validation['lm_example_loss'] < context_free['lm_example_loss']
  assert json.loads((out / 'summary.json').read_text()) == summary
  for name in ('vocab/vocab.txt', 'data/train.metadata.json', 'data/validation.metadata.json',
               'model/params.yaml', 'hf/config.json', 'hf/model.safetensors',
               'hf/tokenizer.json', 'hf/tokenizer_config.json', 'pretrain.json'):
    assert (out / name).exists(), name
  stamp = json.loads((out / 'pretrain.json').read_text())
  assert [p.rsplit('/', 1)[-1] for p, _ in stamp['inputs']] == ['a.txt', 'b.txt']  # no .hidden


@pytest.mark.slow
def test_the_hugging_face_folder_loads_in_transformers_and_fills_masks(run):
  transformers = pytest.importorskip('transformers')
  root, _ = run
  hf = str(root / 'out' / 'hf')
  tokenizer = transformers.AutoTokenizer.from_pretrained(hf)
  model = transformers.AutoModelForMaskedLM.from_pretrained(hf)
  ids = tokenizer('w3 w4 w5')['input_ids']
  assert tokenizer.convert_ids_to_tokens(ids) == ['[CLS]', 'w3', 'w4', 'w5', '[SEP]']
  fill = transformers.pipeline('fill-mask', model=model, tokenizer=tokenizer)
  best = [fill(f'w{i} w{i + 1} [MASK] w{i + 3} w{i + 4}.')[0]['token_str'] for i in range(5, 10)]
  assert sum(word == f'w{i + 2}' for i, word in zip(range(5, 10), best)) >= 3, best


@pytest.mark.slow
def test_rerun_resumes_and_other_inputs_are_refused(run):
  root, summary = run
  out = str(root / 'out')
  again = pretrain.pretrain([str(root / 'corpus')], out, steps=120, **TINY)
  assert again['step'] == 120 and again['seconds']['training'] < summary['seconds']['training']
  with pytest.raises(ValueError, match=r'holds a run made from other inputs'):
    pretrain.pretrain([str(root / 'corpus' / 'a.txt')], out, steps=120, **TINY)


def test_options_and_cli_errors(tmp_path):
  with pytest.raises(ValueError, match=r'give one of minutes and steps'):
    pretrain.pretrain(['x'], str(tmp_path), minutes=1, steps=5)
  with pytest.raises(ValueError, match=r"recipe must be one of \['modern', 'bert'\], found 'x'"):
    pretrain.pretrain(['x'], str(tmp_path), recipe='x')
  with pytest.raises(FileNotFoundError,
                     match=r'the modern recipe has no config .*modernbert_small'):
    pretrain.pretrain(['x'], str(tmp_path), size='small')
  result = cli.call_main(pretrain.main, ['mlm-pretrain', f'--output_dir={tmp_path}'])
  assert result.returncode == 2 and 'no input: give text files or folders' in result.stderr
  result = cli.call_main(pretrain.main, ['mlm-pretrain', str(tmp_path / 'missing.txt'),
                                         f'--output_dir={tmp_path / "out"}', '--steps=3'])
  assert result.returncode == 1, result.stderr
  assert "mlm-pretrain: error: input_file: '" in result.stderr
  assert 'matches no file' in result.stderr
  with pytest.raises(ValueError, match=r"engine must be one of \['local', 'beam'\], found 'spark'"):
    pretrain.pretrain(['x'], str(tmp_path), engine='spark')
  result = cli.call_main(pretrain.main, ['mlm-pretrain', 'x', f'--output_dir={tmp_path / "o"}',
                                         '--beam_pipeline_options=runner=DataflowRunner'])
  assert result.returncode == 1
  assert 'mlm-pretrain: error: --beam_pipeline_options needs --engine=beam' in result.stderr
  empty = tmp_path / 'empty'
  empty.mkdir()
  with pytest.raises(FileNotFoundError, match='holds no file'):
    pretrain.text_files([str(empty)])


def test_plain_paragraphs_become_documents(tmp_path):
  paragraphs = tmp_path / 'p.txt'
  paragraphs.write_text('First paragraph here.\nSecond one.\n', encoding='utf-8')
  sentences = tmp_path / 's.txt'
  sentences.write_text('A.\nB.\n\nC.\n', encoding='utf-8')
  converted = pretrain._as_documents([str(paragraphs), str(sentences)], str(tmp_path / 'work'))
  assert converted[1] == str(sentences)
  assert open(converted[0], encoding='utf-8').read() == 'First paragraph here.\n\nSecond one.\n\n'


@pytest.fixture(name='hf_bert', scope='module')
def fixture_hf_bert(tmp_path_factory):
  """A tiny Hugging Face BERT folder (random weights) with a WordPiece vocab.txt."""
  pytest.importorskip('transformers')
  return tiny_hf.write_bert(tmp_path_factory.mktemp('hf_bert'), WORDS)


@pytest.mark.slow
def test_continued_pretraining_from_a_hugging_face_bert(hf_bert, tmp_path):
  transformers = pytest.importorskip('transformers')
  corpus = tmp_path / 'corpus.txt'
  corpus.write_text(_walking_text(2), encoding='utf-8')
  summary = pretrain.pretrain([str(corpus)], str(tmp_path / 'out'), init_from=str(hf_bert),
                              steps=40, learning_rate=1e-3, **dict(TINY, vocab_size=8000))
  # The checkpoint's own vocabulary and model: no vocabulary trained, its weights the start.
  assert not (tmp_path / 'out' / 'vocab').exists()
  assert summary['paths']['vocab'] == str(hf_bert / 'vocab.txt')
  assert summary['initial_validation']['lm_example_loss'] > (
      summary['validation']['lm_example_loss'])
  text = pretrain.summary_text(summary)
  assert f'from {hf_bert} with the modern recipe' in text and 'the starting checkpoint: ' in text
  hf = tmp_path / 'out' / 'hf'
  model = transformers.AutoModelForMaskedLM.from_pretrained(str(hf))
  assert type(model).__name__ == 'BertForMaskedLM' and model.config.hidden_size == 32
  assert (hf / 'vocab.txt').read_text() == (hf_bert / 'vocab.txt').read_text()


def test_checkpoint_source_names_what_it_expects(tmp_path):
  (tmp_path / 'config.json').write_text('{}')
  assert pretrain.checkpoint_source(str(tmp_path)) == 'hf'
  empty = tmp_path / 'empty'
  empty.mkdir()
  with pytest.raises(ValueError, match=r'expected our checkpoint \(params.yaml \+ ckpt-N\), '
                     r'Google BERT .* or Hugging Face'):
    pretrain.checkpoint_source(str(empty))
  with pytest.raises(ValueError, match=r"init_from must be an existing folder, found '/nowhere'"):
    pretrain.pretrain(['x'], str(tmp_path / 'o'), init_from='/nowhere', steps=1)
  # A folder that is no checkpoint is refused before output_dir is made (no stamp left behind
  # to refuse the corrected rerun).
  text = tmp_path / 'text.txt'
  text.write_text('A sentence.\n\nAnother one.\n', encoding='utf-8')
  with pytest.raises(ValueError, match=r'init_from=.*empty: expected our checkpoint'):
    pretrain.pretrain([str(text)], str(tmp_path / 'o'), init_from=str(empty), steps=1)
  assert not (tmp_path / 'o').exists()


@pytest.mark.slow
def test_continued_pretraining_of_a_hugging_face_modernbert_with_a_bpe_tokenizer(tmp_path):
  """A converted Hugging Face ModernBERT with a byte-level BPE tokenizer.json (no vocab.txt)
  pretrains further on new text (held-out loss lower than the checkpoint's) and exports back to a
  folder that transformers loads with the same tokenizer."""
  transformers = pytest.importorskip('transformers')
  pytest.importorskip('torch')
  from tests.nlp.data import bpe_tokenizers  # pylint: disable=g-import-not-at-top
  source = tiny_hf.write_modernbert(tmp_path / 'hf_modernbert')
  corpus = tmp_path / 'new_text.txt'  # other sentences than the tokenizer was trained on
  corpus.write_text(bpe_tokenizers.documents_text(bpe_tokenizers.corpus_lines(400, seed=1)),
                    encoding='utf-8')
  summary = pretrain.pretrain([str(corpus)], str(tmp_path / 'out'), init_from=str(source),
                              steps=40, learning_rate=1e-3, **TINY)
  assert summary['paths']['vocab'] == str(source / 'tokenizer.json')
  assert summary['validation']['lm_example_loss'] < (
      summary['initial_validation']['lm_example_loss'])
  hf = tmp_path / 'out' / 'hf'
  tokenizer = transformers.AutoTokenizer.from_pretrained(str(hf))
  original = transformers.AutoTokenizer.from_pretrained(str(source))
  text = 'Kalo mi ne pa, sati vore.'
  assert tokenizer(text)['input_ids'] == original(text)['input_ids']
  model = transformers.AutoModelForMaskedLM.from_pretrained(str(hf))
  assert type(model).__name__ == 'ModernBertForMaskedLM'
  fill = transformers.pipeline('fill-mask', model=model, tokenizer=tokenizer)
  assert len(fill('Kalo mi [MASK] ne pa.', top_k=3)) == 3
  # The model_dir alone serves the Python API with its BPE tokenizer (no vocab.txt there).
  from official.nlp import api  # pylint: disable=g-import-not-at-top
  model_dir = summary['paths']['model_dir']
  assert api.embed(model_dir, ['Kalo mi ne pa.', 'Sati vore.']).shape == (2, 32)
  assert len(api.fill_mask(model_dir, ['Kalo mi [MASK] ne pa.'], top_k=2)[0][0]) == 2


def test_the_records_stage_runs_without_tensorflow():
  """`mlm-pretrain` imports TensorFlow only after the records are written: their worker processes
  are then forked (with TensorFlow loaded they are spawned, each importing it anew: about 10 s a
  pool on 2 cores). A child process, since this one has TensorFlow already."""
  code = ('import sys; import official.nlp.tools.pretrain; '
          "print(sorted(m for m in ('tensorflow', 'tf_keras') if m in sys.modules))")
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          cwd=paths.ROOT, check=True)
  assert result.stdout.strip() == '[]', result.stderr[-2000:]
