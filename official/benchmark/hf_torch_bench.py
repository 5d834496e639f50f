"""The Hugging Face variants of the comparison, built and timed in the PyTorch child (`compare_hf`).

`HfBench` builds every variant (model x dtype x mode x, for BERT, MASKED / ALL logits), each a
`HfVariant` (`hf_torch_step`'s model, batch, loss and AdamW, with gradient clipping at the config's
norm), and times them a round at a time, then its matmul roofline (`torch_matmul_peak`). bfloat16
is `torch.autocast` around the forward pass (float32 weights, as ours); the compile mode is
`torch.compile` of the loss function, and a compile that fails is the variant's result ('n/a').

Example:
  bench = HfBench(dict(models=ours_info['models'], dtypes=['float32'], modes=['eager'],
                       warmup_steps=0, matmul_size=256, threads=0))
  bench.run_round(2, 0.5)  # {'rates': {'hf bert_tiny float32 eager masked': ...}, ...}
"""

import time
from typing import Any, Callable, Dict, List, Optional

from official.benchmark import hf_shared
from official.benchmark import hf_torch_step
from official.benchmark.hf_shared import ALL, HF, MASKED, SEED


class HfVariant:
  """One Hugging Face variant: model, optimizer and (compiled) loss, warmed up.

  Args:
    name: the variant's name in the report.
    description: `describe_model`'s description.
    dtype: 'float32' or 'bfloat16' (autocast).
    mode: 'eager' or 'compile'.
    mlm_logits: MASKED or ALL (see `hf_torch_step.hf_loss_fn`).
    warmup_steps: untimed steps after the first.
    compile_fn: `torch.compile` (tests pass one that fails).
  """

  def __init__(self, name: str, description: Dict[str, Any], dtype: str, mode: str,
               mlm_logits: str, warmup_steps: int, compile_fn: Optional[Callable] = None):
    # Function-level: PyTorch loads in its child only (test extra; our runtime never imports it).
    import torch
    self._torch = torch
    self.name, self.dtype = name, dtype
    self.error: Optional[str] = None
    self.build_seconds = self.first_step_seconds = None
    self.rates: List[float] = []
    self.cpu_per_step: List[float] = []
    start = time.perf_counter()
    torch.manual_seed(SEED)
    self.model = hf_torch_step.hf_model(description)
    self.parameters = self.model.parameters
    self.optimizer = hf_torch_step.adamw(self.model, description['optimizer'])
    self.clip_norm = description['optimizer']['clip_norm']
    self.batch = hf_torch_step.synthetic_batch(description)
    self.loss_fn = hf_torch_step.hf_loss_fn(self.model, description, mlm_logits)
    self.graph_breaks: Optional[int] = None
    breaks_before = graph_breaks()
    try:
      if mode == 'compile':
        self.loss_fn = (compile_fn or torch.compile)(self.loss_fn)
      self.build_seconds = time.perf_counter() - start
      start = time.perf_counter()
      self.step()  # the compile happens here
      self.first_step_seconds = time.perf_counter() - start
      for _ in range(warmup_steps):
        self.step()
    except Exception as e:  # pylint: disable=broad-except  (any compile failure is a result)
      self.error = hf_shared.reason(e)
      hf_shared.log(f'{name}: n/a ({self.error})')
    if mode == 'compile':
      self.graph_breaks = graph_breaks() - breaks_before

  def step(self) -> float:
    """One training step; returns the loss (reading it waits for the step)."""
    torch = self._torch
    with torch.autocast('cpu', dtype=torch.bfloat16, enabled=self.dtype == 'bfloat16'):
      loss = self.loss_fn(self.batch)
    loss.backward()
    if self.clip_norm:
      torch.nn.utils.clip_grad_norm_(self.parameters(), self.clip_norm)
    self.optimizer.step()
    self.optimizer.zero_grad(set_to_none=True)
    return float(loss.detach())

  def time_window(self, steps: int) -> Optional[float]:
    """steps/s of `steps` steps (None once the variant has failed)."""
    if self.error:
      return None
    try:
      start, cpu_start = time.perf_counter(), time.process_time()
      for _ in range(steps):
        self.step()
      seconds = time.perf_counter() - start
    except Exception as e:  # pylint: disable=broad-except  (e.g. a recompile that fails)
      self.error = hf_shared.reason(e)
      hf_shared.log(f'{self.name}: n/a ({self.error})')
      return None
    self.cpu_per_step.append((time.process_time() - cpu_start) / steps)
    self.rates.append(steps / seconds)
    return self.rates[-1]


def graph_breaks() -> int:
  """The graph breaks torch.compile has met in this process so far.

  Example:
    >>> graph_breaks()
    0
  """
  # Function-level: as `HfVariant`.
  from torch._dynamo import utils as dynamo_utils  # pylint: disable=protected-access
  return sum(dynamo_utils.counters['graph_break'].values())


def torch_matmul_peak(dtype: str, size: int, seconds: float) -> float:
  """The best FLOP/s of chained square `size` matmuls in `dtype` (torch, CPU).

  Args:
    dtype: 'float32' or 'bfloat16'.
    size: the side of the square matrices.
    seconds: how long to measure.

  Example:
    >>> torch_matmul_peak('float32', 1024, 0.5) / 1e12  # TFLOP/s
  """
  # Function-level: as `HfVariant`.
  import torch
  a = (torch.randn(size, size) * size ** -0.5).to(getattr(torch, dtype))
  chain, best = 4, 0.0
  with torch.no_grad():
    x = a @ a
    start = time.perf_counter()
    while True:
      t0 = time.perf_counter()
      x = a
      for _ in range(chain):
        x = x @ a
      float(x[0, 0])
      now = time.perf_counter()
      best = max(best, chain * 2.0 * size ** 3 / (now - t0))
      if now - start > seconds:
        return best


class HfBench:
  """The Hugging Face variants: model x dtype x mode x (BERT) MASKED / ALL logits.

  Args:
    spec: `models` ({label: `describe_model` description}), `dtypes`, `modes`, `warmup_steps`,
      `matmul_size`, `threads`.
    compile_fn: replaces `torch.compile` (tests).
  """

  def __init__(self, spec: Dict[str, Any], compile_fn: Optional[Callable] = None):
    # Function-level: as `HfVariant`.
    import torch
    import transformers
    self._torch, self._transformers = torch, transformers
    if spec.get('threads'):
      torch.set_num_threads(spec['threads'])
    # Every variant compiles the same transformers code: room for all their graphs, and an error
    # (reported as n/a) rather than a silent fallback to eager when the room runs out.
    torch._dynamo.config.recompile_limit = 64  # pylint: disable=protected-access
    torch._dynamo.config.fail_on_recompile_limit_hit = True  # pylint: disable=protected-access
    self.matmul_size = spec['matmul_size']
    self.variants: List[Dict[str, Any]] = []
    self._runners: Dict[str, HfVariant] = {}
    for label, description in spec['models'].items():
      heads = [MASKED, ALL] if description['family'] == 'bert' else [MASKED]
      for dtype in spec['dtypes']:
        for mode in spec['modes']:
          for head in heads:
            name = f'{HF} {label} {dtype} {mode}' + (f' {head}' if len(heads) > 1 else '')
            runner = HfVariant(name, description, dtype, mode, head, spec['warmup_steps'],
                               compile_fn)
            self._runners[name] = runner
            self.variants.append(dict(
                name=name, framework=HF, model=label, dtype=dtype, mode=mode, mlm_logits=head,
                error=runner.error, build_seconds=runner.build_seconds,
                first_step_seconds=runner.first_step_seconds,
                graph_breaks=runner.graph_breaks,
                parameters=sum(p.numel() for p in runner.model.parameters())))
            if not runner.error:
              hf_shared.log(f'{name}: first step {runner.first_step_seconds:.1f}s')

  def close(self) -> None:
    """Nothing to release (the process ends next)."""

  def info(self) -> Dict[str, Any]:
    """The first reply to the parent: `variants` and `versions` (torch, transformers)."""
    return dict(variants=self.variants, versions={
        'torch': self._torch.__version__, 'transformers': self._transformers.__version__})

  def run_round(self, steps: int, peak_seconds: float) -> Dict[str, Any]:
    """Times `steps` steps of every variant, then the matmul roofline of each dtype."""
    rates, cpu, errors = {}, {}, {}
    for name, runner in self._runners.items():
      rates[name] = runner.time_window(steps)
      cpu[name] = runner.cpu_per_step[-1] if rates[name] else None
      errors[name] = runner.error
    dtypes = sorted({v['dtype'] for v in self.variants})
    roofline = {dtype: torch_matmul_peak(dtype, self.matmul_size, peak_seconds)
                for dtype in dtypes} if peak_seconds > 0 else {}
    return dict(rates=rates, cpu_seconds_per_step=cpu, roofline=roofline, errors=errors)
