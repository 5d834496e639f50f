"""Where a training step's time goes: a TensorFlow profiler trace summed by part of the model.

`profile_steps` traces a few steps of a running train loop with `tf.profiler`, reads the trace
(`*.xplane.pb`, the host plane's compute threads) and sums every TensorFlow op's duration into
`CATEGORIES` by the op's type and scope name: the encoder's dense matmuls, the attention matmuls,
the masked-LM vocabulary projection, the loss over the vocabulary (softmax, cross-entropy and the
accuracy's argmax), the fused element-wise kernels (XLA: GELU, dropout, residual + LayerNorm,
attention softmax), the optimizer update, the input pipeline and the rest. Time no op runs on any
compute thread is reported as `host/idle` (executor and Python overhead, waiting for input).

Op times are summed over the compute threads, so with several ops running at once the op time per
step exceeds the wall time per step; each category's share is of the summed op time. The wall
column shares every instant equally among the ops running in it (`wall_shares`), so it adds up to
the busy wall time: what a category costs the step when ops overlap.

Example:
  >>> summary = profile_steps(lambda n: runner.run(n), num_steps=5, logdir='/tmp/trace')
  >>> print(format_summary(summary))  # one line per category, ms per step and share
"""

import dataclasses
import glob
import os
import re
import tempfile
import time
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

MATMUL_DENSE = 'dense matmuls'
MATMUL_ATTENTION = 'attention matmuls (QK, AV)'
MATMUL_VOCAB = 'vocabulary projection (MLM logits)'
VOCAB_LOSS = 'vocabulary softmax, loss, accuracy'
FUSED = 'fused element-wise kernels (XLA)'
OPTIMIZER = 'optimizer (clipping, AdamW)'
INPUT = 'input pipeline'
OTHER = 'other ops (casts, gathers, sums)'
CATEGORIES = (MATMUL_DENSE, MATMUL_ATTENTION, MATMUL_VOCAB, VOCAB_LOSS, FUSED, OPTIMIZER, INPUT,
              OTHER)

_MATMUL_TYPES = re.compile(r'MatMul|Einsum|Conv2D')
_BATCH_MATMUL = re.compile(r'BatchMatMul')
# Scopes of the masked-LM head's vocabulary projection and of the optimizer update.
_VOCAB_SCOPE = re.compile(r'(cls/predictions|masked_lm|mlm_head|lm_head)/(?!transform)')
_OPTIMIZER_SCOPE = re.compile(r'adam|lamb|sgd|optimizer|global_norm|ResourceApply', re.IGNORECASE)
# Scopes under the model (everything else in the step is loss, metrics, optimizer, gradients).
_MODEL_SCOPE = re.compile(r'(^|/)(bert|[a-z_]*encoder[a-z_]*|cls|pretrainer|next_sentence|'
                          r'masked_lm)/')


@dataclasses.dataclass(frozen=True)
class OpTime:
  """One op execution of a trace: its node name, op type, compute thread and duration."""
  name: str
  op_type: str
  thread: str
  start_ps: int
  duration_ps: int


def categorize(name: str, op_type: str) -> str:
  """The `CATEGORIES` entry of an op from its node name and type.

  Args:
    name: the op's node name, e.g. 'while/body/_1/.../bert/cls/predictions/MatMul'.
    op_type: its kernel type, e.g. '_MklMatMul', 'PartitionedCall'.

  Example:
    >>> categorize('while/cond_1/bert/cls/predictions/MatMul', '_MklMatMul')
    'vocabulary projection (MLM logits)'
    >>> categorize('while/cond_1/bert/bert_encoder/transformer/layer_0/self_attention/MatMul',
    ...            '_MklBatchMatMulV2')
    'attention matmuls (QK, AV)'
  """
  if 'IteratorGetNext' in op_type or name.endswith('IteratorGetNext'):
    return INPUT
  if _OPTIMIZER_SCOPE.search(name) or op_type.startswith('ResourceApply'):
    return OPTIMIZER
  if op_type in ('PartitionedCall', 'StatefulPartitionedCall', '_XlaRun', 'XlaLaunch'):
    return FUSED
  in_vocab = _VOCAB_SCOPE.search(name) is not None
  if _MATMUL_TYPES.search(op_type):
    if _BATCH_MATMUL.search(op_type):
      return MATMUL_ATTENTION
    return MATMUL_VOCAB if in_vocab else MATMUL_DENSE
  if in_vocab or not _MODEL_SCOPE.search(_step_scope(name)):
    if op_type in _OTHER_TOP_LEVEL_TYPES:
      return OTHER
    return VOCAB_LOSS
  return OTHER


# Ops outside the model that are bookkeeping rather than the loss over the vocabulary.
_OTHER_TOP_LEVEL_TYPES = frozenset((
    'AddN', 'AddV2', 'ReadVariableOp', 'AssignAddVariableOp', 'AssignVariableOp', 'Identity',
    'StridedSlice', 'Pack', 'Unpack', 'Reshape', 'Less', 'SelectV2', 'Cast', 'Const', 'NoOp',
    'UnsortedSegmentSum', 'Tile', 'GatherV2', 'ConcatV2', 'Split', 'ZerosLike', 'Fill'))


def _step_scope(name: str) -> str:
  """The part of a node name below the train loop's control-flow scopes."""
  name = name.replace('gradient_tape/', '')
  return re.sub(r'^.*(while/cond_\d+/|while/body/_\d+/)', '', name)


def read_trace(logdir: str) -> List[OpTime]:
  """The op executions on the compute threads of the newest trace under `logdir`.

  Args:
    logdir: the directory given to `tf.profiler.experimental.start`.

  Raises:
    FileNotFoundError: no `*.xplane.pb` under `logdir`.
  """
  paths = sorted(glob.glob(os.path.join(logdir, '**', '*.xplane.pb'), recursive=True),
                 key=os.path.getmtime)
  if not paths:
    raise FileNotFoundError(f'no *.xplane.pb trace under {logdir}')
  space = xplane_pb2.XSpace()
  with open(paths[-1], 'rb') as f:
    space.ParseFromString(f.read())
  ops: List[OpTime] = []
  for plane in space.planes:
    if plane.name != '/host:CPU':
      continue
    stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
    for line in plane.lines:
      if not line.name.startswith('tf_Compute'):
        continue
      for event in line.events:
        parsed = _op_of(plane.event_metadata[event.metadata_id].name, event, stat_names)
        if parsed:
          ops.append(OpTime(parsed[0], parsed[1], line.name, event.offset_ps, event.duration_ps))
  return ops


def _op_of(label: str, event, stat_names: Dict[int, str]) -> Optional[Tuple[str, str]]:
  """(node name, op type) of an op event, None for executor/runtime events."""
  if label == 'ExecutorState::ProcessAsync::Start':  # an asynchronous op (e.g. an XLA function)
    stats = {}
    for stat in event.stats:
      stats[stat_names.get(stat.metadata_id)] = stat.str_value or stat_names.get(stat.ref_value,
                                                                                 '')
    return (stats.get('name', ''), stats.get('kernel_type', '')) if stats.get('name') else None
  if ':' not in label or '::' in label or label.startswith('end:'):
    return None
  name, op_type = label.rsplit(':', 1)
  return (name, op_type) if op_type and ' ' not in op_type else None


def busy_ps(ops: Iterable[OpTime]) -> int:
  """Picoseconds during which at least one op runs (the union of the ops' intervals)."""
  total, end = 0, None
  for op in sorted(ops, key=lambda o: o.start_ps):
    stop = op.start_ps + op.duration_ps
    if end is None or op.start_ps >= end:
      total += op.duration_ps
      end = stop
    elif stop > end:
      total += stop - end
      end = stop
  return total


def wall_shares(ops: Iterable[OpTime]) -> Dict[str, float]:
  """Picoseconds of wall time per category, each instant split equally among the ops running then.

  The values add up to `busy_ps(ops)`. Example: a 10 ps matmul alone, then 10 ps beside a softmax,
  gives the matmul 15 ps and the softmax 5.
  """
  events = []
  for index, op in enumerate(ops):
    category = categorize(op.name, op.op_type)
    events.append((op.start_ps, 1, index, category))
    events.append((op.start_ps + op.duration_ps, -1, index, category))
  events.sort(key=lambda e: (e[0], e[1]))
  shares = dict.fromkeys(CATEGORIES, 0.0)
  running: Dict[int, str] = {}
  last = None
  for time_ps, kind, index, category in events:
    if running and time_ps > last:
      part = (time_ps - last) / len(running)
      for running_category in running.values():
        shares[running_category] += part
    if kind > 0:
      running[index] = category
    else:
      running.pop(index, None)
    last = time_ps
  return shares


def summarize(ops: List[OpTime], num_steps: int, wall_seconds: float) -> Dict[str, object]:
  """Milliseconds per step and share of the summed op time for each category.

  Args:
    ops: `read_trace`'s op executions.
    num_steps: the steps the trace covers.
    wall_seconds: their wall time.

  Returns:
    {'steps', 'wall_ms_per_step', 'op_ms_per_step', 'idle_ms_per_step', 'categories':
    {category: {'ms_per_step', 'share', 'wall_ms_per_step'}}, 'top_ops': [(name, type,
    ms_per_step)]}; idle is the wall time during which no op ran on any compute thread;
    a category's wall_ms_per_step is its `wall_shares`.
  """
  totals = dict.fromkeys(CATEGORIES, 0)
  by_op: Dict[Tuple[str, str], int] = {}
  for op in ops:
    totals[categorize(op.name, op.op_type)] += op.duration_ps
    key = (re.sub(r'layer_\d+', 'layer_N', _step_scope(op.name)), op.op_type)
    by_op[key] = by_op.get(key, 0) + op.duration_ps
  op_ps = sum(totals.values())
  per_step = lambda ps: ps / 1e9 / num_steps
  wall_ms = 1e3 * wall_seconds / num_steps
  idle_ms = max(0.0, wall_ms - per_step(busy_ps(ops)))
  top = sorted(by_op.items(), key=lambda kv: -kv[1])[:40]
  wall = wall_shares(ops)
  return {
      'steps': num_steps, 'wall_ms_per_step': wall_ms, 'op_ms_per_step': per_step(op_ps),
      'idle_ms_per_step': idle_ms,
      'categories': {c: {'ms_per_step': per_step(ps), 'share': ps / op_ps if op_ps else 0.0,
                         'wall_ms_per_step': per_step(wall[c])}
                     for c, ps in totals.items()},
      'top_ops': [(name, op_type, categorize(name, op_type), per_step(ps))
                  for (name, op_type), ps in top]}


def profile_steps(run: Callable[[int], object], num_steps: int,
                  logdir: Optional[str] = None) -> Dict[str, object]:
  """Traces `run(num_steps)` (a warmed-up train loop) and returns `summarize`'s breakdown.

  Args:
    run: runs that many train steps and returns when they are done.
    num_steps: steps to trace (a few: the trace holds every op of every step).
    logdir: where the trace is written (kept for TensorBoard's profile plugin); default a
      temporary directory, removed afterwards.
  """
  with tempfile.TemporaryDirectory(prefix='mlm_profile_') as tmp:
    target = logdir or tmp
    tf.profiler.experimental.start(target)
    start = time.perf_counter()
    try:
      run(num_steps)
    finally:
      wall = time.perf_counter() - start
      tf.profiler.experimental.stop()
    ops = read_trace(target)
  return summarize(ops, num_steps, wall)


def format_summary(summary: Dict[str, object], title: str = '', top: int = 10) -> str:
  """The breakdown as text: wall and op time per step, then one line per category.

  Example:
    >>> print(format_summary(summary, 'bfloat16'))
    bfloat16: 612.0 ms a step of wall time, 1,150.3 ms of op time over the compute threads, ...
  """
  lines = [f"{title + ': ' if title else ''}{summary['wall_ms_per_step']:.1f} ms a step of wall "
           f"time, {summary['op_ms_per_step']:,.1f} ms of op time summed over the compute "
           f"threads, {summary['idle_ms_per_step']:.1f} ms with no op running (host/idle)"]
  width = max(len(c) for c in CATEGORIES)
  lines.append(f"  {'':{width}}  {'op time':>11}  {'share':>6}  {'wall share':>10}")
  for category, entry in summary['categories'].items():
    lines.append(f"  {category.ljust(width)}  {entry['ms_per_step']:8.1f} ms  "
                 f"{100 * entry['share']:5.1f}%  {entry['wall_ms_per_step']:7.1f} ms")
  lines.append('  largest ops (layers merged), ms a step:')
  for name, op_type, category, ms in summary['top_ops'][:top]:
    lines.append(f'    {ms:7.1f}  {op_type:<24} {name[-70:]:<70}  {category.split(" (")[0]}')
  return '\n'.join(lines)
