"""The BERT recipe against the modern (ModernBERT-class) recipe at the same wall-clock budget.

Both recipes pretrain on the same corpus (the Python documentation, `make_python_docs_corpus.py`)
with the same WordPiece vocabulary (16,000 words) for the same wall-clock budget, one after the
other with the whole machine each (`--parallel`: at once, pinned to one core each, so that both
see the same load on a shared machine). The steps are planned from a short calibration run of
each recipe, so that the learning rate decays to 0 at about the budget. Then:

  * both are evaluated on the same held-out records (documents neither saw), single segments
    masked at 15% with one fixed set of positions: masked-LM loss and accuracy, every 1/6 of
    the run (the curves) and at the end;
  * both are fine-tuned on the same labelled task, and so is each architecture from random
    initialization (which tells whether pretraining matters on the task).

The recipes (same width and depth: 4 layers, hidden 256, 4 heads):
  * bert: `configs/pretraining/bert_mini.yaml`: post-LN, learned absolute positions, GELU,
    biases, dropout 0.1, NSP head, 15% masking, rows padded to 128 tokens (Google BERT's data).
  * modern: `configs/pretraining/modernbert_mini.yaml`: pre-LN, bias-free, RoPE, GeGLU,
    alternating global/local attention, no dropout, no NSP, 30% masking, packed rows (no padding;
    attention within each document).
Both: AdamW (each config's betas and weight decay; peak lr 1e-3, 10% warmup, linear decay to 0
at the planned step), batch 32, 128 tokens a row, bfloat16 where the CPU has it (else float32).

The fine-tuning task (`--tasks`, default "replaced"): sentences of held-out documents (never
pretrained on), half of them with a fifth of their words replaced by words drawn at the text's own
word frequencies; the label says whether the sentence is as written. Telling them apart takes
knowing which words go together, which a few thousand labelled examples do not teach a network
from scratch. ("swap", two words of a sentence swapped, proved too hard at a 20-minute budget:
both BERTs stayed at chance.) 4,000 sentences train (`bert/sentence_prediction`, 64 tokens, 500
steps of 32, peak lr 2e-4), the other ~3,500 are the dev set; the four fine-tuning runs go two at
a time, one core each (they are not timed).

Outputs in --work_dir: `results.json`, `results.md` (the table of the README) and
`curves.png` (held-out masked-LM loss and training loss against wall-clock minutes).
Every stage is skipped when its output exists (a rerun resumes); `--fresh` starts over.

Usage:
  .venv/bin/python scripts/compare_recipes.py --work_dir=/tmp/recipes --budget_minutes=20
  .venv/bin/python scripts/compare_recipes.py --work_dir=/tmp/smoke --budget_minutes=2 \
      --finetune_steps=60  # a smoke run
"""

import argparse
import dataclasses
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

SEQ_LENGTH = 128
BATCH = 32
VOCAB_SIZE = 16000
FINETUNE_SEQ = 64
HELD_OUT_SEED = 4321


@dataclasses.dataclass(frozen=True)
class Recipe:
  """One pretraining recipe: its model config and how its records are made."""
  name: str
  config: str
  data_flags: Tuple[str, ...]
  max_predictions: int
  data_overrides: Tuple[Tuple[str, object], ...] = ()


RECIPES = (
    Recipe('bert', 'configs/pretraining/bert_mini.yaml',
           ('--masked_lm_prob=0.15', '--max_predictions_per_seq=20'), 20),
    Recipe('modern', 'configs/pretraining/modernbert_mini.yaml',
           ('--pack', '--masked_lm_prob=0.3', '--max_predictions_per_seq=38'), 38,
           (('use_position_id', True),)),
)


def _python() -> str:
  venv = os.path.join(REPO, '.venv', 'bin', 'python')
  return venv if os.path.exists(venv) else sys.executable


def _run(args: Sequence[str], log_path: Optional[str] = None, core: Optional[int] = None,
         background: bool = False):
  """Runs a command from the repository root (pinned to `core`); its output goes to `log_path`."""
  command = list(args)
  if core is not None:
    command = ['taskset', '-c', str(core)] + command
  env = dict(os.environ, PYTHONPATH=REPO)
  out = open(log_path, 'w') if log_path else None
  process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out or None,
                             stderr=subprocess.STDOUT if out else None)
  if background:
    return process
  code = process.wait()
  if out:
    out.close()
  if code:
    tail = open(log_path).read()[-3000:] if log_path else ''
    raise RuntimeError(f'command failed ({code}): {" ".join(command)}\n{tail}')
  return None


# ---------------------------------------------------------------------------------------------
# Data.

def split_documents(corpus_path: str, work_dir: str) -> Dict[str, str]:
  """Writes train.txt (17 of 20 documents), held_out.txt (1 of 20) and finetune.txt (2 of 20)."""
  documents = [d for d in open(corpus_path, encoding='utf-8').read().split('\n\n') if d.strip()]
  parts = {'train': [], 'held_out': [], 'finetune': []}
  for index, document in enumerate(documents):
    name = 'held_out' if index % 20 == 0 else 'finetune' if index % 20 in (1, 2) else 'train'
    parts[name].append(document.strip('\n'))
  paths = {}
  for name, docs in parts.items():
    paths[name] = os.path.join(work_dir, f'{name}.txt')
    with open(paths[name], 'w', encoding='utf-8') as f:
      f.write('\n\n'.join(docs) + '\n')
  return paths


def word_swap_examples(text: str, seed: int, min_words: int = 6,
                       max_words: int = 40) -> List[Tuple[str, int]]:
  """(sentence, label) pairs: each sentence of `min_words`..`max_words` words once, half of them
  (chosen at random) with two distinct words swapped (label 1; as written: label 0).

  Example:
    >>> word_swap_examples('the cat sat on the mat today', seed=0)
    [('the cat mat on the sat today', 1)]
  """
  rng = random.Random(seed)
  examples = []
  for line in text.splitlines():
    words = line.split()
    if not min_words <= len(words) <= max_words:
      continue
    label = rng.random() < 0.5
    if label:
      pairs = [(i, j) for i in range(len(words)) for j in range(i + 1, len(words))
               if words[i].lower() != words[j].lower()]
      if not pairs:
        continue
      i, j = rng.choice(pairs)
      words[i], words[j] = words[j], words[i]
    examples.append((' '.join(words), int(label)))
  return examples


def replaced_word_examples(text: str, seed: int, fraction: float = 0.2, min_words: int = 6,
                           max_words: int = 40) -> List[Tuple[str, int]]:
  """(sentence, label) pairs: each sentence of `min_words`..`max_words` words once, half of them
  (chosen at random) with `fraction` of their words (at least one) replaced by words drawn from
  the text's own word frequencies (label 1; as written: label 0).

  The replacements keep the word frequencies of the text, so telling the two apart takes knowing
  which words go together in context (what masked-LM pretraining learns), not spotting rare words.

  Example:
    >>> replaced_word_examples('the cat sat on the mat today', seed=1)
    [('the cat sat on the mat the', 1)]
  """
  rng = random.Random(seed)
  lines = [line.split() for line in text.splitlines()]
  pool = [word for words in lines for word in words]
  examples = []
  for words in lines:
    if not min_words <= len(words) <= max_words:
      continue
    label = rng.random() < 0.5
    if label:
      words = list(words)
      for i in rng.sample(range(len(words)), max(1, round(fraction * len(words)))):
        replacement = rng.choice(pool)
        while replacement.lower() == words[i].lower():
          replacement = rng.choice(pool)
        words[i] = replacement
    examples.append((' '.join(words), int(label)))
  return examples


TASKS = {'replaced': replaced_word_examples, 'swap': word_swap_examples}


def write_finetuning_data(finetune_txt: str, work_dir: str, vocab: str, train_examples: int,
                          task: str = 'replaced') -> Dict[str, object]:
  """A task's TSVs and records: the first `train_examples` to train, the rest dev."""
  examples = TASKS[task](open(finetune_txt, encoding='utf-8').read(), seed=7)
  random.Random(11).shuffle(examples)
  splits = {'train': examples[:train_examples], 'dev': examples[train_examples:]}
  out = {}
  for name, rows in splits.items():
    tsv = os.path.join(work_dir, f'{task}_{name}.tsv')
    with open(tsv, 'w', encoding='utf-8') as f:
      f.write('text\tlabel\n')
      for sentence, label in rows:
        f.write(f"{sentence.replace(chr(9), ' ')}\t{label}\n")
    record = os.path.join(work_dir, f'{task}_data', f'{name}.tfrecord')
    if not os.path.exists(record):
      _run([_python(), '-m', 'data_tools.create_finetuning_data', '--task=sentence_prediction',
            f'--input_file={tsv}', f'--output_file={record}', f'--vocab_file={vocab}',
            f'--max_seq_length={FINETUNE_SEQ}', '--text_column=text', '--label_column=label',
            '--text_b_column='], os.path.join(work_dir, f'{task}_{name}.log'))
    out[name] = record
    out[f'{name}_examples'] = len(rows)
    out[f'{name}_changed'] = sum(label for _, label in rows)
  return out


def make_data(work_dir: str, corpus: Optional[str]) -> Dict[str, object]:
  """Corpus, vocabulary, the two recipes' training records and the held-out records."""
  os.makedirs(work_dir, exist_ok=True)
  corpus_path = corpus or os.path.join(work_dir, 'corpus.txt')
  if not os.path.exists(corpus_path):
    _run([_python(), 'scripts/make_python_docs_corpus.py', f'--output_file={corpus_path}'],
         os.path.join(work_dir, 'corpus.log'))
  texts = split_documents(corpus_path, work_dir)
  vocab = os.path.join(work_dir, 'vocab', 'vocab.txt')
  if not os.path.exists(vocab):
    _run([_python(), '-m', 'data_tools.build_vocab', f'--input_file={texts["train"]}',
          f'--output_dir={os.path.dirname(vocab)}', f'--vocab_size={VOCAB_SIZE}'],
         os.path.join(work_dir, 'vocab.log'))
  common = [f'--vocab_file={vocab}', f'--max_seq_length={SEQ_LENGTH}', '--num_workers=2']
  records = {}
  for recipe in RECIPES:
    path = os.path.join(work_dir, 'data', recipe.name, 'train.tfrecord')
    if not os.path.exists(path):
      _run([_python(), '-m', 'data_tools.create_pretraining_data',
            f'--input_file={texts["train"]}', f'--output_file={path}', '--dupe_factor=5',
            *common, *recipe.data_flags], os.path.join(work_dir, f'data_{recipe.name}.log'))
    records[recipe.name] = path
  held_out = os.path.join(work_dir, 'data', 'held_out', 'held_out.tfrecord')
  if not os.path.exists(held_out):
    # One fixed set of masked positions, 15%, single segments: the same records for both.
    _run([_python(), '-m', 'data_tools.create_pretraining_data',
          f'--input_file={texts["held_out"]}', f'--output_file={held_out}', '--dupe_factor=1',
          '--no_next_sentence', '--masked_lm_prob=0.15', '--max_predictions_per_seq=20',
          '--short_seq_prob=0', f'--random_seed={HELD_OUT_SEED}', *common],
         os.path.join(work_dir, 'data_held_out.log'))
  records['held_out'] = held_out
  return dict(texts=texts, vocab=vocab, records=records)


def padding_fraction(record_path: str) -> float:
  """Padding tokens / row tokens of a record set, from its metadata."""
  from official.nlp.data import data_metadata  # Function-level: the script starts without TF.
  return data_metadata.padding_fraction(data_metadata.load_metadata(record_path))


# ---------------------------------------------------------------------------------------------
# Training.

def _yaml(data: dict, path: str) -> str:
  import yaml  # Function-level: pyyaml, loaded when a config is written.
  with open(path, 'w') as f:
    yaml.safe_dump(data, f, sort_keys=False)
  return path


def _vocab_size(vocab: str) -> int:
  with open(vocab, encoding='utf-8') as f:
    return sum(1 for _ in f)


def _encoder_config(recipe: Recipe, vocab: str) -> dict:
  import yaml  # Function-level: as above.
  encoder = yaml.safe_load(open(os.path.join(REPO, recipe.config)))['task']['model']['encoder']
  encoder[encoder['type']]['vocab_size'] = _vocab_size(vocab)
  return encoder


def _bf16_available() -> bool:
  try:
    flags = open('/proc/cpuinfo').read()
  except OSError:
    return False
  return 'avx512_bf16' in flags or 'amx_bf16' in flags


def pretraining_overrides(recipe: Recipe, data: dict, steps: int, evals: int) -> dict:
  """The override YAML of a recipe's run: data, vocabulary, the schedule sized to `steps`."""
  interval = max(steps // evals, 1)
  steps = interval * evals
  records = data['records']
  train_data = dict(input_path=records[recipe.name], seq_length=SEQ_LENGTH,
                    max_predictions_per_seq=recipe.max_predictions, global_batch_size=BATCH)
  train_data.update(recipe.data_overrides)
  held_out = dict(input_path=records['held_out'], seq_length=SEQ_LENGTH,
                  max_predictions_per_seq=20, global_batch_size=BATCH,
                  use_next_sentence_label=False, use_position_id=False, is_training=False,
                  drop_remainder=False)
  return {
      'runtime': {'mixed_precision_dtype': 'bfloat16' if _bf16_available() else 'float32'},
      'task': {'model': {'encoder': _encoder_config(recipe, data['vocab'])},
               'train_data': train_data, 'validation_data': held_out},
      'trainer': {
          'train_steps': steps, 'steps_per_loop': min(interval, 100),
          'summary_interval': min(interval, 100), 'checkpoint_interval': interval,
          'validation_interval': interval, 'validation_steps': -1,
          'optimizer_config': {
              'learning_rate': {'type': 'polynomial', 'polynomial': {
                  'initial_learning_rate': 1e-3, 'decay_steps': steps,
                  'end_learning_rate': 0.0, 'power': 1.0}},
              'warmup': {'type': 'polynomial', 'polynomial': {
                  'warmup_steps': max(steps // 10, 1), 'power': 1.0}}}},
  }


def _train_command(recipe: Recipe, model_dir: str, override: str, mode: str = 'train_and_eval'):
  return [_python(), '-m', 'official.nlp.train', '--experiment=bert/pretraining',
          f'--config_file={recipe.config}', f'--params_override={override}', f'--mode={mode}',
          f'--model_dir={model_dir}']


def run_commands(commands: Sequence[Tuple[str, List[str], str]], parallel: bool,
                 deadline: Optional[float] = None) -> Dict[str, Dict[str, float]]:
  """Runs (name, command, log) triples; returns each one's start (Unix time) and seconds.

  `parallel`: all at once, each pinned to its own core (`taskset`); else one after the other,
  each with the whole machine. A run still going `deadline` seconds after its start gets
  SIGTERM: it saves a checkpoint and stops.
  """
  batches = [list(commands)] if parallel else [[command] for command in commands]
  seconds = {}
  for batch in batches:
    started = time.time()
    running = {name: (_run(command, log, core=i if parallel else None, background=True), log)
               for i, (name, command, log) in enumerate(batch)}
    stopped = set()
    while running:
      time.sleep(1)
      for name, (process, log) in list(running.items()):
        if process.poll() is not None:
          seconds[name] = dict(started=started, seconds=time.time() - started)
          del running[name]
          if process.returncode and name not in stopped:
            raise RuntimeError(f'{name} failed ({process.returncode}); see {log}')
        elif deadline is not None and time.time() - started > deadline and name not in stopped:
          process.send_signal(signal.SIGTERM)
          stopped.add(name)
  return seconds


def read_events(log_dir: str) -> Dict[str, List[Tuple[int, float, float]]]:
  """`{tag: [(step, wall_time, value), ...]}` of the scalar summaries in `log_dir`."""
  from official.nlp.tools import training_curves  # Function-level: imports TensorFlow.
  return training_curves.read_scalar_events(log_dir)


def calibrate(data: dict, work_dir: str, parallel: bool) -> Dict[str, float]:
  """Each recipe's steps/s (as the real runs will run), from a short run after compilation."""
  commands = []
  for recipe in RECIPES:
    model_dir = os.path.join(work_dir, 'calibrate', recipe.name)
    shutil.rmtree(model_dir, ignore_errors=True)
    os.makedirs(model_dir)
    overrides = pretraining_overrides(recipe, data, 50, 1)
    overrides['trainer'].update(steps_per_loop=10, summary_interval=10, validation_steps=1)
    override = _yaml(overrides, os.path.join(model_dir, '..', f'{recipe.name}.yaml'))
    commands.append((recipe.name, _train_command(recipe, model_dir, override, 'train'),
                     os.path.join(work_dir, 'calibrate', f'{recipe.name}.log')))
  run_commands(commands, parallel)
  rates = {}
  for recipe in RECIPES:
    events = read_events(os.path.join(work_dir, 'calibrate', recipe.name, 'train'))
    values = [v for _, _, v in events.get('steps_per_second', [])][1:]  # after compilation
    rates[recipe.name] = sorted(values)[len(values) // 2]
  return rates


def pretrain(data: dict, work_dir: str, budget_minutes: float, evals: int,
             parallel: bool) -> Dict[str, dict]:
  """Each recipe for the budget; returns per recipe its planned steps, start and seconds."""
  state_path = os.path.join(work_dir, 'pretrain.json')
  if os.path.exists(state_path):
    return json.load(open(state_path))
  rates = calibrate(data, work_dir, parallel)
  budget = budget_minutes * 60
  commands, plan = [], {}
  for recipe in RECIPES:
    model_dir = os.path.join(work_dir, 'runs', recipe.name)
    shutil.rmtree(model_dir, ignore_errors=True)
    os.makedirs(model_dir)
    # Start-up, compilation and the evaluations take a share of the budget: plan the steps for
    # 85% of it (the runs' real minutes are reported).
    steps = max(int(rates[recipe.name] * budget * 0.85), evals)
    overrides = pretraining_overrides(recipe, data, steps, evals)
    override = _yaml(overrides, os.path.join(work_dir, 'runs', f'{recipe.name}.yaml'))
    plan[recipe.name] = dict(planned_steps=overrides['trainer']['train_steps'],
                             calibrated_steps_per_second=rates[recipe.name])
    commands.append((recipe.name, _train_command(recipe, model_dir, override),
                     os.path.join(work_dir, 'runs', f'{recipe.name}.log')))
  seconds = run_commands(commands, parallel, deadline=budget * 1.15 + 60)
  for name in plan:
    plan[name].update(seconds[name], parallel=parallel)
  json.dump(plan, open(state_path, 'w'), indent=2)
  return plan


def _last(events: dict, tag: str) -> Optional[float]:
  series = events.get(tag) or []
  return series[-1][2] if series else None


def pretraining_results(work_dir: str, plan: Dict[str, dict], data: dict) -> Dict[str, dict]:
  """Held-out masked-LM loss/accuracy at the end, tokens/s, padding, from the runs' summaries."""
  results = {}
  for recipe in RECIPES:
    model_dir = os.path.join(work_dir, 'runs', recipe.name)
    validation = read_events(os.path.join(model_dir, 'validation'))
    train = read_events(os.path.join(model_dir, 'train'))
    rates = [v for _, _, v in train.get('steps_per_second', [])][1:]
    rate = sorted(rates)[len(rates) // 2] if rates else None
    padding = padding_fraction(data['records'][recipe.name])
    results[recipe.name] = dict(
        plan[recipe.name],
        steps=int((validation.get('lm_example_loss') or [(0, 0, 0)])[-1][0]),
        held_out_mlm_loss=_last(validation, 'lm_example_loss'),
        held_out_mlm_accuracy=_last(validation, 'masked_lm_accuracy'),
        steps_per_second=rate,
        tokens_per_second=rate * BATCH * SEQ_LENGTH if rate else None,
        real_tokens_per_second=rate * BATCH * SEQ_LENGTH * (1 - padding) if rate else None,
        padding_fraction=padding)
  return results


# ---------------------------------------------------------------------------------------------
# Fine-tuning.

def finetune(data: dict, records: dict, work_dir: str, steps: int,
             task: str = 'replaced') -> Dict[str, dict]:
  """Fine-tunes each recipe's pretrained encoder and the same architecture from random init."""
  results_path = os.path.join(work_dir, f'finetune_{task}.json')
  finetune_dir = os.path.join(work_dir, f'finetune_{task}')
  if os.path.exists(results_path):
    return json.load(open(results_path))
  runs = []
  for recipe in RECIPES:
    for start in ('pretrained', 'random'):
      runs.append((recipe, start))
  results = {}
  for batch_start in range(0, len(runs), 2):  # two at a time, one core each (not timed)
    commands = []
    for recipe, start in runs[batch_start:batch_start + 2]:
      name = f'{recipe.name}_{start}'
      model_dir = os.path.join(finetune_dir, name)
      shutil.rmtree(model_dir, ignore_errors=True)
      os.makedirs(model_dir)
      encoder = _encoder_config(recipe, data['vocab'])
      overrides = {
          'runtime': {'mixed_precision_dtype': 'float32'},
          'task': {
              'init_checkpoint': (os.path.join(work_dir, 'runs', recipe.name)
                                  if start == 'pretrained' else ''),
              'model': {'num_classes': 2, 'encoder': encoder},
              'train_data': {'input_path': records['train'], 'seq_length': FINETUNE_SEQ,
                             'global_batch_size': BATCH},
              'validation_data': {'input_path': records['dev'], 'seq_length': FINETUNE_SEQ,
                                  'global_batch_size': BATCH}},
          'trainer': {
              'train_steps': steps, 'steps_per_loop': min(100, steps),
              'summary_interval': min(100, steps), 'checkpoint_interval': steps,
              'validation_interval': steps, 'validation_steps': -1,
              'optimizer_config': {
                  'learning_rate': {'type': 'polynomial', 'polynomial': {
                      'initial_learning_rate': 2e-4, 'decay_steps': steps,
                      'end_learning_rate': 0.0}},
                  'warmup': {'type': 'polynomial', 'polynomial': {
                      'warmup_steps': max(steps // 10, 1)}}}},
      }
      override = _yaml(overrides, os.path.join(finetune_dir, f'{name}.yaml'))
      commands.append((name, [
          _python(), '-m', 'official.nlp.train', '--experiment=bert/sentence_prediction',
          '--config_file=configs/finetuning/sentence_prediction_tiny.yaml',
          f'--params_override={override}', '--mode=train_and_eval', f'--model_dir={model_dir}'],
                       os.path.join(finetune_dir, f'{name}.log')))
    run_commands(commands, parallel=True)
    for name, _, _ in commands:
      validation = read_events(os.path.join(finetune_dir, name, 'validation'))
      results[name] = dict(accuracy=_last(validation, 'cls_accuracy')
                           or _last(validation, 'accuracy'),
                           loss=_last(validation, 'validation_loss')
                           or _last(validation, 'loss'))
  json.dump(results, open(results_path, 'w'), indent=2)
  return results


# ---------------------------------------------------------------------------------------------
# Report.

def plot_curves(work_dir: str, plan: Dict[str, dict], output_path: str) -> str:
  """Held-out masked-LM loss (15%, fixed positions) and training loss against wall-clock."""
  import matplotlib  # Function-level: the [plot] extra.
  matplotlib.use('Agg')
  from matplotlib import pyplot  # Function-level: as above.
  figure, (held_out_axes, train_axes) = pyplot.subplots(1, 2, figsize=(12, 4.2))
  for recipe in RECIPES:
    start = plan[recipe.name]['started']
    model_dir = os.path.join(work_dir, 'runs', recipe.name)
    validation = read_events(os.path.join(model_dir, 'validation')).get('lm_example_loss', [])
    train = read_events(os.path.join(model_dir, 'train'))
    train = train.get('lm_example_loss') or train.get('training_loss') or []
    for axes, series in ((held_out_axes, validation), (train_axes, train)):
      if series:
        axes.plot([(t - start) / 60 for _, t, _ in series], [v for _, _, v in series],
                  marker='.', label=recipe.name)
  held_out_axes.set_title('held-out masked-LM loss (15%, fixed positions)')
  train_axes.set_title('training masked-LM loss (own masking rate: 15% / 30%)')
  for axes in (held_out_axes, train_axes):
    axes.set_xlabel('wall-clock minutes since the run started')
    axes.grid(alpha=0.3)
    axes.legend()
  figure.tight_layout()
  figure.savefig(output_path, dpi=100)
  pyplot.close(figure)
  return output_path


def markdown_table(results: dict) -> str:
  """The README's table: pretraining figures, then each task's fine-tuned accuracies."""
  pre = results['pretraining']
  lines = ['| | BERT recipe | modern recipe |', '|---|---|---|']
  row = lambda label, key, fmt: lines.append(
      f'| {label} | ' + ' | '.join(fmt.format(pre[r][key]) if pre[r].get(key) is not None
                                   else 'n/a' for r in ('bert', 'modern')) + ' |')
  row('wall-clock (min)', 'minutes', '{:.1f}')
  row('steps (batch 32 x 128 tokens)', 'steps', '{:d}')
  row('steps/s', 'steps_per_second', '{:.2f}')
  row('tokens/s (rows of 128)', 'tokens_per_second', '{:.0f}')
  row('real (non-padding) tokens/s', 'real_tokens_per_second', '{:.0f}')
  row('padding fraction of the training rows', 'padding_fraction', '{:.3f}')
  row('held-out masked-LM loss (15%)', 'held_out_mlm_loss', '{:.3f}')
  row('held-out masked-LM accuracy (15%)', 'held_out_mlm_accuracy', '{:.3f}')
  for task, fine in results['finetuning'].items():
    for start in ('pretrained', 'random'):
      values = [fine.get(f'{r}_{start}', {}).get('accuracy') for r in ('bert', 'modern')]
      lines.append(f'| {task} accuracy, fine-tuned from {start} | ' + ' | '.join(
          f'{v:.3f}' if v is not None else 'n/a' for v in values) + ' |')
  return '\n'.join(lines)


def main(argv: Optional[Sequence[str]] = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--work_dir', default='/tmp/compare_recipes')
  parser.add_argument('--corpus', default=None,
                      help='one sentence a line, blank lines between documents (default: the '
                      'Python documentation via make_python_docs_corpus.py)')
  parser.add_argument('--budget_minutes', type=float, default=20.0)
  parser.add_argument('--evals', type=int, default=6, help='held-out evaluations per run')
  parser.add_argument('--finetune_steps', type=int, default=500)
  parser.add_argument('--finetune_train_examples', type=int, default=4000)
  parser.add_argument('--tasks', default='replaced',
                      help=f'fine-tuning tasks, comma-separated, of {sorted(TASKS)}')
  parser.add_argument('--parallel', action='store_true',
                      help='run the two recipes at once, one core each (default: one after the '
                      'other, each with every core)')
  parser.add_argument('--fresh', action='store_true', help='delete --work_dir first')
  args = parser.parse_args(argv)
  if args.fresh:
    shutil.rmtree(args.work_dir, ignore_errors=True)
  data = make_data(args.work_dir, args.corpus)
  plan = pretrain(data, args.work_dir, args.budget_minutes, args.evals, args.parallel)
  pretraining = pretraining_results(args.work_dir, plan, data)
  for name in pretraining:
    pretraining[name]['minutes'] = pretraining[name]['seconds'] / 60
  finetuning, tasks = {}, {}
  for task in args.tasks.split(','):
    records = write_finetuning_data(data['texts']['finetune'], args.work_dir, data['vocab'],
                                    args.finetune_train_examples, task)
    tasks[task] = {k: v for k, v in records.items() if k.endswith(('examples', 'changed'))}
    print(f"{task} task: {records['train_examples']} train ({records['train_changed']} changed), "
          f"{records['dev_examples']} dev ({records['dev_changed']} changed)", file=sys.stderr)
    finetuning[task] = finetune(data, records, args.work_dir, args.finetune_steps, task)
  results = dict(pretraining=pretraining, finetuning=finetuning, tasks=tasks,
                 budget_minutes=args.budget_minutes, finetune_steps=args.finetune_steps)
  json.dump(results, open(os.path.join(args.work_dir, 'results.json'), 'w'), indent=2)
  table = markdown_table(results)
  open(os.path.join(args.work_dir, 'results.md'), 'w').write(table + '\n')
  plot_curves(args.work_dir, plan, os.path.join(args.work_dir, 'curves.png'))
  print(table)
  return results


if __name__ == '__main__':
  main()
