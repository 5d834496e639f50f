"""The embedded demo: pretrain BERT-tiny on the Python standard library's docstrings, no download.

Steps (each prints what it did): extract the docstrings of the running interpreter's standard library as a
corpus (one sentence a line, documents separated by blank lines), hold out 5% of the documents, build a
WordPiece vocabulary, write masked-LM TFRecords, pretrain `configs/pretraining/bert_tiny.yaml` with
`train.py --mode=train_and_eval`, plot `training_curves.png`, and print fill-mask predictions.

Usage:
  python scripts/demo.py [--output_dir=demo_output] [--train_steps=1200]
"""

import argparse
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

SENTENCES = [
    'Return a [MASK] of the list.',
    'If the file does not exist, a [MASK] is raised.',
    'This function returns the number of [MASK] in the string.',
    'The default [MASK] is None.',
    'Create a new [MASK] object.',
]


def _split_documents(corpus_path: str, train_path: str, eval_path: str, eval_every: int = 20):
  """Writes every `eval_every`-th document to the eval file, the rest to the train file."""
  with open(corpus_path, encoding='utf-8') as f:
    documents = [d.strip() for d in f.read().split('\n\n') if d.strip()]
  train = [d for i, d in enumerate(documents) if i % eval_every]
  evaluation = [d for i, d in enumerate(documents) if not i % eval_every]
  for path, docs in ((train_path, train), (eval_path, evaluation)):
    with open(path, 'w', encoding='utf-8') as f:
      f.write('\n\n'.join(docs) + '\n')
  return len(train), len(evaluation)


def _step(message: str):
  print(f'\n== {message}', flush=True)
  return time.time()


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--output_dir', default=os.path.join(ROOT, 'demo_output'))
  parser.add_argument('--train_steps', type=int, default=1200)
  parser.add_argument('--batch_size', type=int, default=32)
  parser.add_argument('--vocab_size', type=int, default=8000)
  parser.add_argument('--learning_rate', type=float, default=2e-3,
                      help='peak learning rate (a tiny model trained briefly takes a high one)')
  args = parser.parse_args()

  from data_tools import build_vocab  # pylint: disable=g-import-not-at-top
  from data_tools import stdlib_corpus  # pylint: disable=g-import-not-at-top
  from official.nlp.data import create_pretraining_data  # pylint: disable=g-import-not-at-top

  out = args.output_dir
  os.makedirs(out, exist_ok=True)
  start = _step('Corpus: docstrings of the Python standard library')
  corpus = os.path.join(out, 'stdlib_docstrings.txt')
  stats = stdlib_corpus.write_stdlib_corpus(corpus)
  train_text, eval_text = os.path.join(out, 'train.txt'), os.path.join(out, 'eval.txt')
  num_train, num_eval = _split_documents(corpus, train_text, eval_text)
  print(f'{stats} -> {num_train} train / {num_eval} eval documents ({time.time() - start:.1f} s)')

  start = _step('Vocabulary: WordPiece')
  vocab_dir = os.path.join(out, 'vocab')
  build_vocab.build_vocab(train_text, vocab_dir, vocab_size=args.vocab_size)
  vocab_file = os.path.join(vocab_dir, 'vocab.txt')
  with open(vocab_file, encoding='utf-8') as f:
    vocab_size = sum(1 for _ in f)
  print(f'{vocab_file}: {vocab_size} tokens ({time.time() - start:.1f} s)')

  start = _step('TFRecords: masked-LM instances (whole-word masking, seq 128, 20 predictions)')
  data_dir = os.path.join(out, 'data')
  common = dict(vocab_file=vocab_file, do_whole_word_mask=True, max_seq_length=128,
                max_predictions_per_seq=20, show_progress=True)
  create_pretraining_data.create_pretraining_data(
      train_text, os.path.join(data_dir, 'train.tfrecord'), dupe_factor=5, **common)
  create_pretraining_data.create_pretraining_data(
      eval_text, os.path.join(data_dir, 'eval.tfrecord'), dupe_factor=1, **common)
  print(f'({time.time() - start:.1f} s)')

  start = _step(f'Pretraining BERT-tiny for {args.train_steps} steps of batch {args.batch_size}')
  model_dir = os.path.join(out, 'bert_tiny')
  shutil.rmtree(model_dir, ignore_errors=True)  # a fresh run: the data above was just rewritten
  overrides = ','.join([
      f'task.model.encoder.bert.vocab_size={vocab_size}',
      f'task.train_data.input_path={os.path.join(data_dir, "train.tfrecord")}',
      f'task.validation_data.input_path={os.path.join(data_dir, "eval.tfrecord")}',
      f'task.train_data.global_batch_size={args.batch_size}',
      f'task.validation_data.global_batch_size={args.batch_size}',
      f'trainer.train_steps={args.train_steps}',
      f'trainer.optimizer_config.learning_rate.polynomial.decay_steps={args.train_steps}',
      f'trainer.optimizer_config.learning_rate.polynomial.initial_learning_rate={args.learning_rate}',
      'trainer.optimizer_config.warmup.polynomial.warmup_steps=100',
      'trainer.steps_per_loop=100', 'trainer.summary_interval=100',
      'trainer.checkpoint_interval=400', f'trainer.validation_interval={args.train_steps // 2}',
      'trainer.validation_steps=50', 'runtime.distribution_strategy=one_device',
  ])
  command = [sys.executable, '-m', 'official.nlp.train', '--experiment=bert/pretraining',
             f'--config_file={os.path.join(ROOT, "configs/pretraining/bert_tiny.yaml")}',
             '--mode=train_and_eval', f'--model_dir={model_dir}', f'--params_override={overrides}']
  print(' '.join(command), flush=True)
  result = subprocess.run(command, cwd=ROOT, check=False)
  if result.returncode:
    print(f'training failed with exit code {result.returncode}', file=sys.stderr)
    return result.returncode
  print(f'({time.time() - start:.1f} s)')

  _step('Training curves')
  from official.nlp.tools import training_curves  # pylint: disable=g-import-not-at-top
  try:
    print(training_curves.plot_training_curves(model_dir,
                                               os.path.join(model_dir, 'training_curves.png')))
  except ImportError:
    print('matplotlib is not installed: skipping training_curves.png (pip install matplotlib)')
  validation = training_curves.read_scalars(os.path.join(model_dir, 'validation'))
  for tag in ('masked_lm_accuracy', 'lm_example_loss', 'masked_lm_perplexity'):
    if validation.get(tag):
      step, value = validation[tag][-1]
      print(f'eval {tag} at step {step}: {value:.4f}')

  _step('Fill-mask predictions')
  _print_fill_mask(model_dir, vocab_file)
  return 0


def _print_fill_mask(model_dir: str, vocab_file: str) -> None:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from official.core import exp_factory  # pylint: disable=g-import-not-at-top
  from official.common import registry_imports  # pylint: disable=g-import-not-at-top,unused-import
  from official.modeling import hyperparams  # pylint: disable=g-import-not-at-top
  from official.nlp.data import tokenization  # pylint: disable=g-import-not-at-top
  from official.nlp.tasks import masked_lm  # pylint: disable=g-import-not-at-top
  from official.nlp.tools import fill_mask  # pylint: disable=g-import-not-at-top

  params = exp_factory.get_exp_config('bert/pretraining')
  params.override(hyperparams.read_yaml(os.path.join(model_dir, 'params.yaml')))
  model = masked_lm.MaskedLMTask(params.task).build_model()
  tokenizer = tokenization.WordPieceTokenizer.from_vocab_file(vocab_file)
  fill_mask.fill_mask(model, tokenizer, SENTENCES[:1], top_k=1)  # builds the variables
  tf.train.Checkpoint(model=model).read(tf.train.latest_checkpoint(model_dir)).expect_partial()
  for text, masks in zip(SENTENCES, fill_mask.fill_mask(model, tokenizer, SENTENCES, top_k=5)):
    guesses = ', '.join(f'{token} ({p:.2f})' for token, p in masks[0])
    print(f'{text}\n    -> {guesses}')


if __name__ == '__main__':
  sys.exit(main())
