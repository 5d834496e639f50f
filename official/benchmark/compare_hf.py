"""Training speed of mlm-garden and of Hugging Face `transformers` (PyTorch) in one run (issue 30).

For each model (`--models`: bert_mini with its next-sentence head, modernbert_mini; any name of
`configs/pretraining/` or a YAML path) and dtype (`--precisions`: float32, bfloat16) one training
step is timed in each framework on the same shapes: forward, loss (masked LM, plus next sentence
when the config has that head), backward, gradient clipping at the config's norm and an AdamW
update, on a synthetic batch of `--batch_size` rows of `--seq_length` tokens with the config's
`max_predictions_per_seq` masked positions a row (20 for bert_mini, 38 for modernbert_mini;
scaled with the length when `--seq_length` differs from the config's).

- Ours: `official/nlp/tools/benchmark.py`'s `VariantRunner` (what `mlm-benchmark` times: the
  trainer's compiled train loop, synthetic batches of `pretrain_dataloader.dummy_dataset`);
  bfloat16 is the `mixed_bfloat16` policy (`hf_ours`).
- Hugging Face: the model built from the config that our interop writes for the same model
  (`hf_bert` / `bert_encoder_config.external_config`, `hf_modernbert.hf_config`), so the sizes are
  stated once; bfloat16 is `torch.autocast` around the forward pass (float32 weights, as ours).
  `--modes`: eager, and `torch.compile` of the loss function (a compile that fails is reported as
  'n/a (reason)' and the run goes on). AdamW is `torch.optim.AdamW(fused=True)`, transformers'
  Trainer default, with the config's betas, epsilon and weight decay (not on biases and norms).
  BERT: `BertForPreTraining` as shipped computes the vocabulary logits at all `seq_length`
  positions (`mlm_logits` 'all'); the 'masked' variant gathers the masked positions before
  `cls.predictions` as ours does (like for like). ModernBERT: `ModernBertForMaskedLM` with
  `sparse_prediction` (the masked positions only). Both sides see one document a row (ours
  reads modernbert_mini's `position_ids`, 0..seq-1 in the synthetic rows). (`hf_torch_step`,
  `hf_torch_bench`.)

Each framework runs in its own child process (TensorFlow and PyTorch in one process contend for
threads; `hf_children`: this module with `--worker`), both pinned to `--cores` with `--threads`
compute threads (default one per core). After both have built and warmed up their variants they
are timed in turn, ours then Hugging Face's, `--rounds` times; each turn runs `--steps_per_round`
steps of every variant, then measures its own matmul roofline (chained `--matmul_size`^3 matmuls
in float32 and bfloat16, best over the rounds). Reported per variant (`hf_report`): the median
steps/s and tokens/s, the share of its own framework's roofline in its dtype (model FLOP/s from
`model_flops`, one count for both frameworks: a variant that computes more, such as the
all-position logits, gets no credit for it), and ours / Hugging Face's tokens/s (the median of the
per-round ratios, so a drift of the machine's speed cancels). Issue 30's target: ours >= 1.3x the
like-for-like Hugging Face variant at each model, dtype and mode. Measure on a quiet machine: when
other processes compete for the cores, PyTorch's OpenMP threads wait for each other at every
operation and the 2-thread figures fall several-fold (ours less so); `--threads=1` shows how much
of a gap that is.

The command line is `scripts/compare_hf.py` (`main`). `--dtypes`, the old name of `--precisions`,
still works (with a note on stderr). The report keeps the key `dtypes` in its settings.

Example:
  .venv/bin/python scripts/compare_hf.py --models=bert_tiny --batch_size=4 --seq_length=32 \
      --rounds=2 --steps_per_round=2 --matmul_size=256 --modes=eager
"""

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

from official.benchmark import hf_children
from official.benchmark import hf_report
from official.benchmark import hf_shared
from official.benchmark.hf_shared import DTYPES, HF, MODES, OURS
from official.common import cli_utils
from official.utils.misc import cpu_info

# Old flag names -> the names shared by the tools (`cli_utils.renamed_flags`).
RENAMED_FLAGS = {'dtypes': 'precisions'}


def run_comparison(args: argparse.Namespace) -> Dict[str, Any]:
  """Starts both children, times them in turn for `args.rounds` rounds; returns the report.

  Args:
    args: `parse_args`'s flags.

  Raises:
    RuntimeError: a child failed, naming it.

  Example:
    >>> report = run_comparison(parse_args(['--models=bert_tiny', '--modes=eager']))
  """
  cores = hf_shared.parse_cores(args.cores)
  threads = args.threads or len(cores)
  common = dict(dtypes=args.precisions, warmup_steps=args.warmup_steps,
                matmul_size=args.matmul_size, threads=threads, cores=cores)
  load_before = _load_average()
  models = [dict(label=hf_shared.model_label(m), config_file=hf_shared.config_path(m))
            for m in args.models]
  children: List[hf_children.Child] = []
  try:
    hf_shared.log(f'building ours ({len(models) * len(args.precisions)} variants) on cores {cores}')
    ours = hf_children.Child(OURS, dict(common, models=models, batch_size=args.batch_size,
                                        seq_length=args.seq_length))
    children.append(ours)
    ours_info = ours.receive()
    hf_shared.log('building Hugging Face\'s variants (a torch.compile can take minutes)')
    hf = hf_children.Child(HF, dict(common, models=ours_info['models'], modes=args.modes))
    children.append(hf)
    hf_info = hf.receive()
    rounds: Dict[str, List[Dict[str, Any]]] = {OURS: [], HF: []}
    for index in range(args.rounds):
      for child in children:
        reply = child.request({'command': 'round', 'steps': args.steps_per_round,
                               'peak_seconds': args.peak_seconds})
        rounds[child.kind].append(reply)
        shown = ', '.join(f'{name} {rate:.3f}' for name, rate in reply['rates'].items()
                          if rate)
        hf_shared.log(f'round {index + 1}/{args.rounds} {child.kind}: steps/s {shown}')
  finally:
    for child in children:
      child.close()
  settings = dict(models=[m['label'] for m in models], dtypes=args.precisions, modes=args.modes,
                  batch_size=args.batch_size, seq_length=args.seq_length, rounds=args.rounds,
                  steps_per_round=args.steps_per_round, warmup_steps=args.warmup_steps,
                  matmul_size=args.matmul_size, cores=cores, threads=threads)
  cpu = cpu_info.read_cpu_info()
  machine = dict(cpu_model=cpu.model, cpu_flags=cpu.flags, cpu_line=cpu.line(),
                 cpu_count=os.cpu_count(), load_average_before=load_before,
                 load_average_after=_load_average(),
                 versions=dict(ours_info['versions'], **hf_info['versions'],
                               python=sys.version.split()[0]))
  return hf_report.build_report(settings, machine, ours_info, hf_info, rounds)


def _load_average() -> Optional[List[float]]:
  return list(os.getloadavg()) if hasattr(os, 'getloadavg') else None


def _list_flag(parser: argparse.ArgumentParser, name: str, text: str,
               choices: Optional[Sequence[str]] = None) -> List[str]:
  values = [v.strip() for v in text.split(',') if v.strip()]
  if not values:
    parser.error(f'--{name}: empty; expected a comma-separated list')
  unknown = [v for v in values if choices and v not in choices]
  if unknown:
    parser.error(f'--{name}: unknown {unknown}; expected some of {list(choices)}')
  if len(set(values)) != len(values):
    parser.error(f'--{name}: repeated entries in {values}')
  return values


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
  """The flags (lists split and checked; errors name the flag; old names taken with a note).

  Args:
    argv: the flags without the program name (default: `sys.argv[1:]`); the old names of
      `RENAMED_FLAGS` are replaced with a note on stderr.

  Example:
    >>> parse_args(['--models=bert_tiny', '--modes=eager']).modes
    ['eager']
  """
  argv = cli_utils.renamed_flags(sys.argv[1:] if argv is None else argv, RENAMED_FLAGS,
                                 'compare_hf')
  parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
  parser.add_argument('--models', default='bert_mini,modernbert_mini',
                      help='names in configs/pretraining/ or YAML paths')
  parser.add_argument('--precisions', default=','.join(DTYPES),
                      help='comma-separated of float32, bfloat16')
  parser.add_argument('--modes', default=','.join(MODES),
                      help="Hugging Face's: eager and/or compile (torch.compile)")
  parser.add_argument('--batch_size', type=int, default=32)
  parser.add_argument('--seq_length', type=int, default=128)
  parser.add_argument('--rounds', type=int, default=5, help='timed turns of each framework')
  parser.add_argument('--steps_per_round', type=int, default=5)
  parser.add_argument('--warmup_steps', type=int, default=2, help='untimed steps after the first')
  parser.add_argument('--cores', default='',
                      help='cores both children run on, e.g. 0,1 or 0-3 (default: all allowed)')
  parser.add_argument('--threads', type=int, default=0,
                      help='compute threads of each framework (default: one per core of --cores)')
  parser.add_argument('--peak_seconds', type=float, default=0.5,
                      help='matmul roofline measurement per dtype per round (0: skip)')
  parser.add_argument('--matmul_size', type=int, default=2048,
                      help='roofline matmul size (1024 or more: smaller ones measure overhead)')
  parser.add_argument('--output_json', default='', help='also write the report here')
  parser.add_argument('--worker', choices=(OURS, HF), help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.worker:
    return args
  args.models = _list_flag(parser, 'models', args.models)
  args.precisions = _list_flag(parser, 'precisions', args.precisions, DTYPES)
  args.modes = _list_flag(parser, 'modes', args.modes, MODES)
  for name in ('batch_size', 'seq_length', 'rounds', 'steps_per_round', 'matmul_size'):
    if getattr(args, name) < 1:
      parser.error(f'--{name} must be >= 1, found {getattr(args, name)}')
  for name in ('warmup_steps', 'threads'):
    if getattr(args, name) < 0:
      parser.error(f'--{name} must be >= 0, found {getattr(args, name)}')
  try:
    hf_shared.parse_cores(args.cores)
    for model in args.models:
      hf_shared.config_path(model)
  except (ValueError, FileNotFoundError) as e:
    parser.error(str(e))
  return args


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Runs the comparison; prints the markdown table (and writes the JSON with --output_json).

  Args:
    argv: the flags without the program name (default: `sys.argv[1:]`).

  Returns:
    0, or 1 when a child failed (the reason on stderr).

  Example:
    >>> main(['--models=bert_tiny', '--modes=eager', '--rounds=1'])
    0
  """
  args = parse_args(argv)
  if args.worker:
    status = hf_children.serve(args.worker)
    sys.stderr.flush()
    # The measurement is over: skip the interpreter's teardown (TensorFlow's, with the input
    # pipeline's threads still running, took up to a minute on a loaded machine).
    os._exit(status)  # pylint: disable=protected-access
  try:
    report = run_comparison(args)
  except RuntimeError as e:
    print(f'compare_hf: {e}', file=sys.stderr)
    return 1
  print(hf_report.format_table(report))
  if args.output_json:
    with open(args.output_json, 'w', encoding='utf-8') as f:
      json.dump(report, f, indent=2)
  return 0


if __name__ == '__main__':
  sys.exit(main())
