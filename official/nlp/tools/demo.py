"""The embedded demo: pretrain BERT-tiny on the Python standard library's docstrings, no download.

Steps (each prints what it did): extract the docstrings of the running interpreter's standard
library as a corpus (one sentence a line, documents separated by blank lines), hold out 5% of the
documents, pick the model size for this CPU (`choose_model_size`: BERT-tiny's 2 layers, an
8,000-token vocabulary and 64-token sequences where matmul in the training precision reaches 500
GFLOP/s, else 1 layer, 3,000 tokens and 32-token sequences, which learn more in the budget there),
build a WordPiece vocabulary, write masked-LM TFRecords (docstring sentences are short: 12.5 words
on average), pretrain `configs/pretraining/bert_tiny.yaml` with `train.py --mode=train_and_eval` for
a time budget (`--minutes`, 3 by default: `trainer.time_budget_minutes`, the schedule of
`--train_steps` steps mapped onto the steps the budget buys on this CPU; batch 64, no dropout,
bfloat16 where the CPU has bfloat16 instructions), plot `training_curves.png`, and show what the
model learned: fill-mask predictions (top-5 with probabilities) for new sentences in docstring
style, and one line before training (the freshly initialized model) and one after, each with the
count of top-1 predictions that are content words (`is_content_word`) and that fit their sentence
(`FITTING_WORDS`), and the masked-LM accuracy on held-out records.

The whole demo takes 3.3-4 minutes wherever it runs (2026-11-29: 199-200 s here). On 2 cores of
an AVX-512 BF16 EPYC (bfloat16, 2 layers) 3 minutes buy 5,093 steps, after which 8 of 8 top-1
predictions are content words and 6 of them fit, e.g.
  Return [MASK] if the path is a directory.  -> true (0.92), none (0.04), false (0.01), ...
  This [MASK] is called when the socket is closed.  -> method (0.63), function (0.09), ...
and the held-out masked-LM accuracy is 0.37 (0.00 before training); on one core capped to AVX2
(float32, 1 layer, 3,000 tokens, 32-token sequences) about 8,200 steps: 7-8 of 8 fitting,
accuracy 0.36-0.37. The README has the table. `--minutes=0 --train_steps=5000` trains a
fixed 5,000 steps instead.

Usage (`make demo` runs the first):
  python scripts/demo.py [--output_dir=demo_output] [--minutes=3] [--batch_size=64]
  python -m official.nlp.tools.demo --minutes=0 --train_steps=5000

`--train_minutes`, the old name of `--minutes`, still works (with a note on stderr).
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import argparse
import os
import shutil
import subprocess
import sys
import time
from typing import List, NamedTuple, Optional, Sequence, Tuple

from official.common import cli_utils
from official.utils.misc import cpu_info

# The repository (official/nlp/tools/ is three folders below it): the default output folder and
# the demo's config are there.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))

# New sentences in the style of the standard library's docstrings (none occurs in the corpus); each
# masked word is one the docstrings use often in that context ('Return True if', 'a list of',
# 'raise KeyError if', 'the number of bytes', 'does not exist', 'the current working directory',
# 'This method is called', 'the name of the file').
SENTENCES = [
    'Return [MASK] if the path is a directory.',
    'Return a [MASK] of the names of all files in the archive.',
    'Raise [MASK] if the key is not in the mapping.',
    'Return the number of [MASK] written to the file.',
    'If the directory does not [MASK], it is created.',
    'Return the current working [MASK] of the process.',
    'This [MASK] is called when the socket is closed.',
    'Return the [MASK] of the file as a string.',
]

# For each of SENTENCES, the top-1 predictions that fit it (lower case, as the vocabulary holds
# them): the word the docstrings use there and the ones that make an equally sensible docstring.
# The demo's "fitting" count is judged by these lists, not by eye.
FITTING_WORDS = (
    frozenset({'true', 'false'}),
    frozenset({'list', 'tuple', 'sequence', 'set', 'dict', 'dictionary', 'mapping', 'iterator',
               'iterable', 'generator', 'copy'}),
    frozenset({'keyerror', 'lookuperror', 'error', 'exception', 'valueerror', 'typeerror',
               'indexerror', 'runtimeerror'}),
    frozenset({'bytes', 'characters', 'chars', 'lines', 'items', 'elements', 'blocks', 'records',
               'entries', 'octets', 'frames'}),
    frozenset({'exist'}),
    frozenset({'directory', 'dir', 'folder'}),
    frozenset({'method', 'function', 'callback', 'handler', 'hook', 'routine'}),
    frozenset({'name', 'contents', 'content', 'path', 'text', 'data', 'mode', 'encoding',
               'filename', 'extension', 'suffix', 'type'}),
)

# English function words (articles, pronouns, prepositions, conjunctions, auxiliary and modal verbs,
# quantifiers, common adverbs): a top-1 prediction among them, or punctuation, a number, a word
# piece ('##...') or a special token, does not count as a content word.
STOP_WORDS = frozenset('''
a an the this that these those some any each every all both either neither no none other another
such own same few more most much many several
i me my we us our you your he him his she her it its they them their what which who whom whose
of in on at by for with from to into onto out over under about above below between through during
before after since until up down off upon via per within without against among across along around
and or but nor so yet if then else than as because while when where whether though although unless
once also only just not too very even still already again ever here there how why
is are was were be been being am has have had having do does did doing done
can could may might must shall should will would ought
'''.split())

SPECIAL_TOKENS = frozenset(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'])

Prediction = List[Tuple[str, float]]  # [(token, probability), ...], best first


def is_content_word(token: str) -> bool:
  """Whether a predicted token is a content word: a whole word of letters that is not a function
  word.

  Args:
    token: a vocabulary token, e.g. 'directory', 'the', '##s', ',', '[UNK]'.

  Returns:
    False for `STOP_WORDS`, special tokens, word pieces ('##...'), punctuation and numbers.

  Example:
    >>> is_content_word('directory'), is_content_word('the'), is_content_word('##s')
    (True, False, False)
  """
  if token in SPECIAL_TOKENS or token.startswith('##'):
    return False
  return token.isalpha() and token.lower() not in STOP_WORDS


def top1_summary(label: str, predictions: Sequence[Prediction],
                 fitting_words: Sequence[frozenset] = FITTING_WORDS) -> str:
  """One line: how many top-1 predictions are content words and how many fit their sentence,
  then the top-1 words.

  Args:
    label: what the predictions come from, e.g. 'after training (step 2000)'.
    predictions: one `[(token, probability), ...]` list (best first) per sentence.
    fitting_words: for each sentence, the top-1 tokens that fit it (`FITTING_WORDS`).

  Returns:
    e.g. 'after training (step 2000): top-1 content words 2/3, fitting 1/3: list, the, file'.
  """
  top1 = [guesses[0][0] for guesses in predictions]
  count = sum(is_content_word(token) for token in top1)
  fitting = sum(token.lower() in words for token, words in zip(top1, fitting_words))
  return (f'{label}: top-1 content words {count}/{len(top1)}, fitting {fitting}/{len(top1)}: '
          f'{", ".join(top1)}')


def format_predictions(sentences: Sequence[str], predictions: Sequence[Prediction]) -> str:
  """Each sentence, then its top-k predictions with probabilities, content words marked with '*'.

  Args:
    sentences: the probe sentences (`SENTENCES`).
    predictions: one `[(token, probability), ...]` list (best first) per sentence.

  Returns:
    Two lines a sentence: it, then e.g. '    -> directory* (0.41), file* (0.12), the (0.05)'.

  Example:
    >>> format_predictions(['Return a [MASK] of it.'], [[('list', 0.41), ('the', 0.05)]])
    'Return a [MASK] of it.\n    -> list* (0.41), the (0.05)'
  """
  lines = []
  for sentence, guesses in zip(sentences, predictions):
    words = ', '.join(f'{token}{"*" if is_content_word(token) else ""} ({p:.2f})'
                      for token, p in guesses)
    lines.append(f'{sentence}\n    -> {words}')
  return '\n'.join(lines)


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


# Old flag names -> the names shared by the tools (`cli_utils.renamed_flags`).
RENAMED_FLAGS = {'train_minutes': 'minutes'}


def _parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
  """The demo's flags (old names of `RENAMED_FLAGS` too, with a note); a bad value exits 2
  with one line naming the flag."""
  argv = cli_utils.renamed_flags(sys.argv[1:] if argv is None else argv, RENAMED_FLAGS, 'demo')
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--output_dir', default=os.path.join(ROOT, 'demo_output'))
  parser.add_argument('--minutes', type=float, default=3.0,
                      help='training time budget (trainer.time_budget_minutes): training ends '
                      'after it, its learning-rate schedule with it, whatever the CPU; 0: train '
                      'exactly --train_steps steps')
  parser.add_argument('--train_steps', type=int, default=5000,
                      help='the length the learning-rate schedule is written for (with '
                      '--minutes its warmup and decay become shares of the steps the '
                      'budget buys); with --minutes=0, the steps trained')
  parser.add_argument('--batch_size', type=int, default=64)
  parser.add_argument('--vocab_size', type=int, default=None,
                      help='WordPiece vocabulary size (default: by the CPU, `model_size_for`)')
  parser.add_argument('--num_layers', type=int, default=None,
                      help='encoder layers (default: by the CPU, `model_size_for`)')
  parser.add_argument('--seq_length', type=int, default=None,
                      help='tokens per training sequence (default: by the CPU, `model_size_for`; '
                      'docstring sentences are short)')
  parser.add_argument('--max_predictions_per_seq', type=int, default=None,
                      help='masked positions per sequence (default: 15%% of --seq_length)')
  parser.add_argument('--dupe_factor', type=int, default=10,
                      help='times each training document is cut and masked differently')
  parser.add_argument('--learning_rate', type=float, default=2e-3,
                      help='peak learning rate (a tiny model trained briefly takes a high one)')
  parser.add_argument('--dropout_rate', type=float, default=0.0,
                      help='encoder dropout (a few minutes of training learns faster without it)')
  parser.add_argument('--precision', choices=['auto', 'float32', 'bfloat16'], default='auto',
                      help='compute dtype of the training run; auto: bfloat16 where the CPU has '
                      'bfloat16 instructions (AMX or AVX-512 BF16), else float32')
  args = parser.parse_args(argv)
  if args.minutes < 0:
    parser.error(f'--minutes must be >= 0; got {args.minutes}')
  if not 0.0 <= args.dropout_rate < 1.0:
    parser.error(f'--dropout_rate must be in [0, 1); got {args.dropout_rate}')
  for name in ('train_steps', 'batch_size', 'vocab_size', 'num_layers', 'seq_length',
               'max_predictions_per_seq', 'dupe_factor'):
    if getattr(args, name) is not None and getattr(args, name) < 1:
      parser.error(f'--{name} must be at least 1; got {getattr(args, name)}')
  if args.precision == 'auto':
    args.precision = default_precision()
  return args


class DemoSize(NamedTuple):
  """What the demo trains: encoder layers, WordPiece vocabulary, tokens a sequence."""
  num_layers: int
  vocab_size: int
  seq_length: int


# Matmul GFLOP/s in the training precision (2048^3, the cores this process has) from which
# BERT-tiny's 2 layers, 8,000-token vocabulary and 64-token sequences learn the demo's sentences
# within 3 minutes (about 5,000 steps: 2 bfloat16 cores of an AVX-512 BF16 EPYC, 807-840 GFLOP/s);
# below, 1 layer, 3,000 tokens and 32-token sequences (5x the steps, most docstring sentences
# still whole) learn more in that time: one float32 AVX-512 core (244 GFLOP/s) got 3 of 8 fitting
# words from the full model, 6 and 8 from the small one (README: 2026-11-29).
FAST_CPU_GFLOPS = 500.0
FULL_SIZE, SMALL_SIZE = DemoSize(2, 8000, 64), DemoSize(1, 3000, 32)


def model_size_for(gflops: float) -> DemoSize:
  """The `DemoSize` that learns most in the demo's budget on a CPU whose matmul reaches `gflops`
  GFLOP/s in the training precision.

  Example:
    >>> tuple(model_size_for(840.0)), tuple(model_size_for(105.0))  # BF16 EPYC, 2-core Zen 3
    ((2, 8000, 64), (1, 3000, 32))
  """
  return FULL_SIZE if gflops >= FAST_CPU_GFLOPS else SMALL_SIZE


def choose_model_size(args: argparse.Namespace) -> str:
  """Fills `args.num_layers`, `args.vocab_size`, `args.seq_length` and
  `args.max_predictions_per_seq` (15% of the sequence) where the flags left them to the CPU.

  Args:
    args: the demo's flags (`_parse_args`); with `--minutes` and a field left to the CPU, matmul
      in `args.precision` is measured for a second.

  Returns:
    A line saying what was chosen and why.

  Example:
    >>> choose_model_size(_parse_args(['--minutes=0']))
    '2 layer(s), a 8,000-token vocabulary, 64-token sequences (a fixed number of steps)'
  """
  fields = DemoSize._fields
  if all(getattr(args, name) is not None for name in fields):
    why = 'flags'
  elif not args.minutes:
    chosen, why = FULL_SIZE, 'a fixed number of steps'
  else:
    from official.nlp.tools import benchmark  # Function-level: TensorFlow only when measuring.
    gflops = benchmark.measure_matmul_peak(args.precision, 2048, seconds=1.0) / 1e9
    chosen = model_size_for(gflops)
    why = (f'this CPU: {gflops:.0f} GFLOP/s {args.precision} matmul, '
           f'{"at or above" if gflops >= FAST_CPU_GFLOPS else "below"} {FAST_CPU_GFLOPS:.0f}')
  for name in fields:
    if getattr(args, name) is None:
      setattr(args, name, getattr(chosen, name))
  if args.max_predictions_per_seq is None:
    args.max_predictions_per_seq = max(1, round(0.15 * args.seq_length))
  return (f'{args.num_layers} layer(s), a {args.vocab_size:,}-token vocabulary, '
          f'{args.seq_length}-token sequences ({why})')


def default_precision(cpuinfo_path: str = '/proc/cpuinfo') -> str:
  """`cpu_info.default_precision`: on a CPU with AMX (a Xeon), bfloat16 trained the demo's
  BERT-tiny about 12% faster than float32; without native bfloat16, float32 is the safe choice.

  Args:
    cpuinfo_path: the file of the CPU's flags.

  Returns:
    'bfloat16' or 'float32'.

  Example:
    >>> default_precision()  # 'float32' on an AVX2-only Zen 3
  """
  return cpu_info.default_precision(cpuinfo_path)


def main(argv: Optional[List[str]] = None) -> int:
  """Runs the demo's steps (see the module docstring), printing what each did.

  Args:
    argv: the command line's arguments (default: `sys.argv[1:]`).

  Returns:
    The exit status: 0, or the training run's when it fails (a bad flag exits 2).

  Example:
    >>> main(['--output_dir=/tmp/demo', '--minutes=0', '--train_steps=20'])
  """
  args = _parse_args(argv)
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')  # also quiets the training child's start-up
  # Function-level: the demo prints its plan before TensorFlow loads (seconds on a cold start).
  from official.nlp.data import create_pretraining_data  # pylint: disable=g-import-not-at-top
  from official.nlp.data import stdlib_corpus  # pylint: disable=g-import-not-at-top
  from official.nlp.data import vocab_builder  # pylint: disable=g-import-not-at-top

  demo_start = time.time()
  out = args.output_dir
  os.makedirs(out, exist_ok=True)
  start = _step('Corpus: docstrings of the Python standard library')
  corpus = os.path.join(out, 'stdlib_docstrings.txt')
  stats = stdlib_corpus.write_stdlib_corpus(corpus)
  train_text, eval_text = os.path.join(out, 'train.txt'), os.path.join(out, 'eval.txt')
  num_train, num_eval = _split_documents(corpus, train_text, eval_text)
  print(f'{stats} -> {num_train} train / {num_eval} eval documents ({time.time() - start:.1f} s)')

  start = _step('Model size for the budget')
  print(f'BERT-tiny with {choose_model_size(args)} ({time.time() - start:.1f} s)')

  start = _step('Vocabulary: WordPiece')
  vocab_dir = os.path.join(out, 'vocab')
  vocab_builder.build_vocab(train_text, vocab_dir, vocab_size=args.vocab_size)
  vocab_file = os.path.join(vocab_dir, 'vocab.txt')
  with open(vocab_file, encoding='utf-8') as f:
    vocab_size = sum(1 for _ in f)
  print(f'{vocab_file}: {vocab_size} tokens ({time.time() - start:.1f} s)')

  start = _step(f'TFRecords: masked-LM instances (whole-word masking, seq {args.seq_length}, '
                f'{args.max_predictions_per_seq} predictions, dupe factor {args.dupe_factor})')
  data_dir = os.path.join(out, 'data')
  common = dict(vocab_file=vocab_file, do_whole_word_mask=True, max_seq_length=args.seq_length,
                max_predictions_per_seq=args.max_predictions_per_seq, show_progress=True)
  create_pretraining_data.create_pretraining_data(
      train_text, os.path.join(data_dir, 'train.tfrecord'), dupe_factor=args.dupe_factor, **common)
  create_pretraining_data.create_pretraining_data(
      eval_text, os.path.join(data_dir, 'eval.tfrecord'), dupe_factor=1, **common)
  print(f'({time.time() - start:.1f} s)')

  length = (f'{args.minutes:g} minutes (the steps they buy on this CPU)'
            if args.minutes else f'{args.train_steps} steps')
  start = _step(f'Pretraining BERT-tiny for {length} of batch {args.batch_size} '
                f'({args.precision})')
  model_dir = os.path.join(out, 'bert_tiny')
  shutil.rmtree(model_dir, ignore_errors=True)  # a fresh run: the data above was just rewritten
  overrides = ','.join(_overrides(args, vocab_size, data_dir))
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
  # Function-level: the demo prints its plan before TensorFlow loads (seconds on a cold start).
  from official.nlp.tools import training_curves  # pylint: disable=g-import-not-at-top
  try:
    print(training_curves.plot_training_curves(model_dir,
                                               os.path.join(model_dir, 'training_curves.png')))
  except ImportError:
    print('matplotlib is not installed: skipping training_curves.png (pip install matplotlib)')

  start = _step('Fill-mask predictions: top-5 with probabilities, * = content word')
  before, after = _probe(model_dir, vocab_file)
  print(format_predictions(SENTENCES, after[1]))
  print()
  for label, predictions, accuracy in (before, after):
    confidence = sum(guesses[0][1] for guesses in predictions) / len(predictions)
    print(f'{top1_summary(label, predictions)} | mean top-1 probability {confidence:.3f} | '
          f'eval masked-LM accuracy {accuracy:.3f}')
  print(f'({time.time() - start:.1f} s; the whole demo took {time.time() - demo_start:.0f} s)')
  return 0


def _overrides(args: argparse.Namespace, vocab_size: int, data_dir: str) -> List[str]:
  """`--params_override` entries that fit bert_tiny.yaml to the demo's data and schedule (with
  `--minutes`, the schedule and intervals are written for `--train_steps` steps and
  mapped onto the steps the budget buys: one checkpoint at the end, an evaluation half way and
  one at the end)."""
  return [
      f'task.model.encoder.bert.vocab_size={vocab_size}',
      f'task.model.encoder.bert.num_layers={args.num_layers or FULL_SIZE.num_layers}',
      f'task.train_data.input_path={os.path.join(data_dir, "train.tfrecord")}',
      f'task.validation_data.input_path={os.path.join(data_dir, "eval.tfrecord")}',
      f'task.train_data.global_batch_size={args.batch_size}',
      f'task.validation_data.global_batch_size={args.batch_size}',
      f'task.train_data.seq_length={args.seq_length}',
      f'task.validation_data.seq_length={args.seq_length}',
      f'task.train_data.max_predictions_per_seq={args.max_predictions_per_seq}',
      f'task.validation_data.max_predictions_per_seq={args.max_predictions_per_seq}',
      f'trainer.train_steps={args.train_steps}',
      f'trainer.optimizer_config.learning_rate.polynomial.decay_steps={args.train_steps}',
      f'trainer.optimizer_config.learning_rate.polynomial.initial_learning_rate={args.learning_rate}',
      'trainer.optimizer_config.warmup.polynomial.warmup_steps='
      f'{max(1, min(300, args.train_steps // 10))}',
      'trainer.steps_per_loop=100', 'trainer.summary_interval=100',
      f'trainer.checkpoint_interval={args.train_steps}',
      f'trainer.validation_interval={max(1, args.train_steps // 2)}',
      f'trainer.validation_steps={EVAL_BATCHES}', 'runtime.distribution_strategy=one_device',
      f'task.model.encoder.bert.dropout_rate={args.dropout_rate}',
      f'task.model.encoder.bert.attention_dropout_rate={args.dropout_rate}',
      f'runtime.mixed_precision_dtype={args.precision}',
      f'trainer.time_budget_minutes={args.minutes}',
  ]


EVAL_BATCHES = 50  # held-out batches for the masked-LM accuracy (training's validation and _probe)


def masked_lm_accuracy(model, dataset, num_batches: int) -> float:
  """Top-1 accuracy of `model`'s `mlm_logits` on the masked positions of `num_batches` batches.

  Args:
    model: a `BertPretrainerV2`.
    dataset: batches of pretraining features (`masked_lm_ids`, `masked_lm_weights`, inputs), e.g.
      `MaskedLMTask.build_inputs(validation_data)`.
    num_batches: batches to read.

  Returns:
    correct / counted masked positions (weight 1), 0.0 when there are none.
  """
  # Function-level: the demo prints its plan before TensorFlow loads (seconds on a cold start).
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # One traced graph for every batch (a Keras model called eagerly costs milliseconds a layer).
  logits_of = tf.function(lambda features: model(features, training=False)['mlm_logits'])
  correct = total = 0.0
  for features in dataset.take(num_batches):
    logits = logits_of(features)
    weights = features['masked_lm_weights'].numpy()
    hits = np.argmax(logits.numpy(), axis=-1) == features['masked_lm_ids'].numpy()
    correct += float((hits * weights).sum())
    total += float(weights.sum())
  return correct / total if total else 0.0


def _probe(model_dir: str, vocab_file: str):
  """Fill-mask predictions and held-out masked-LM accuracy, before and after training.

  "Before" is the model freshly built from the run's params (the same initializers, seed 0) without
  loading a checkpoint; "after" loads the run's latest checkpoint.

  Returns:
    `(label, predictions, accuracy)` for before and for after; `predictions[i]` is the top-5 list of
    `SENTENCES[i]`.
  """
  # Function-level: the demo prints its plan before TensorFlow loads (seconds on a cold start).
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top
  from official.core import exp_factory  # pylint: disable=g-import-not-at-top
  # Imported for its registrations (experiments and tasks).
  from official.common import registry_imports  # pylint: disable=g-import-not-at-top,unused-import  # noqa: F401
  from official.modeling import hyperparams  # pylint: disable=g-import-not-at-top
  from official.nlp.data import tokenization  # pylint: disable=g-import-not-at-top
  from official.nlp.tasks import masked_lm  # pylint: disable=g-import-not-at-top
  from official.nlp.tools import fill_mask  # pylint: disable=g-import-not-at-top

  params = exp_factory.get_exp_config('bert/pretraining')
  params.override(hyperparams.read_yaml(os.path.join(model_dir, 'params.yaml')))
  task = masked_lm.MaskedLMTask(params.task)
  tf_keras.utils.set_random_seed(0)
  model = task.build_model()
  tokenizer = tokenization.WordPieceTokenizer.from_vocab_file(vocab_file)
  seq_length = params.task.train_data.seq_length
  dataset = task.build_inputs(params.task.validation_data)

  def measure(label):
    predictions = [masks[0] for masks in fill_mask.fill_mask(model, tokenizer, SENTENCES, top_k=5,
                                                             seq_length=seq_length)]
    return label, predictions, masked_lm_accuracy(model, dataset, EVAL_BATCHES)

  before = measure('before training (step 0)')
  checkpoint = tf.train.latest_checkpoint(model_dir)
  tf.train.Checkpoint(model=model).read(checkpoint).expect_partial()
  step = checkpoint.rsplit('-', 1)[-1]
  return before, measure(f'after training (step {step})')


if __name__ == '__main__':
  sys.exit(main())
