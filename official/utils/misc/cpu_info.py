"""The CPU a figure was measured on: its model name and the flags that decide matmul speed.

A throughput or roofline figure means little without the CPU: float32 matmuls run on AVX2 or
AVX-512 units, bfloat16 ones natively only with `avx512_bf16` or AMX (`amx_bf16`, `amx_tile`),
else TensorFlow emulates them in float32. Read from Linux's `/proc/cpuinfo` (the model name is
the one `lscpu` prints); elsewhere the model comes from `platform` and the flags are unknown.

`MLM_CPU_FLAGS` (`FLAGS_OVERRIDE_VARIABLE`) makes the CPU report other flags, to check from one
machine what another would choose: `MLM_CPU_FLAGS=avx2` reports an AVX2-only CPU,
`MLM_CPU_FLAGS=avx2,avx512f` one with AVX-512 but no bfloat16 units (listed flags present, the
other `MATMUL_FLAGS` absent; the model name says so). It changes what this module reports (and
so `runtime.mixed_precision_dtype: auto`), not the kernels TensorFlow runs: cap those with
`ONEDNN_MAX_CPU_ISA`, `XLA_FLAGS=--xla_cpu_max_isa=...` and `TF_ENABLE_ONEDNN_OPTS` (`.ci/run`).

Example:
  >>> info = read_cpu_info()
  >>> info.line()
  'AMD EPYC (avx2 avx512f avx512_bf16; no amx_bf16 amx_tile)'
"""

import dataclasses
import os
import platform
from typing import Dict, Optional

# The flags reported, in the order of the matmul units they enable.
MATMUL_FLAGS = ('avx2', 'avx512f', 'avx512_bf16', 'amx_bf16', 'amx_tile')
# The environment variable whose flags (comma or space separated) replace the CPU's.
FLAGS_OVERRIDE_VARIABLE = 'MLM_CPU_FLAGS'


@dataclasses.dataclass(frozen=True)
class CpuInfo:
  """A CPU model name and which of `MATMUL_FLAGS` it has.

  Attributes:
    model: the model name (`lscpu`'s "Model name"), e.g. 'AMD EPYC 9B14 96-Core Processor'.
    flags: each of `MATMUL_FLAGS` -> present; empty when the flags could not be read.
  """
  model: str
  flags: Dict[str, bool]

  def line(self) -> str:
    """The model and the flags in one line, e.g. 'Xeon (avx2 avx512f; no amx_bf16 amx_tile)'.

    Returns:
      `<model> (<present flags>; no <absent flags>)`, or `<model> (flags unknown)`.

    Example:
      >>> CpuInfo('AMD EPYC', {'avx2': True, 'amx_tile': False}).line()
      'AMD EPYC (avx2; no amx_tile)'
    """
    if not self.flags:
      return f'{self.model} (flags unknown)'
    present = [name for name, on in self.flags.items() if on]
    absent = [name for name, on in self.flags.items() if not on]
    described = [' '.join(present)] if present else []
    described += ['no ' + ' '.join(absent)] if absent else []
    return f"{self.model} ({'; '.join(described)})"


def read_cpu_info(cpuinfo_path: str = '/proc/cpuinfo', use_override: bool = True) -> CpuInfo:
  """The first CPU's model name and `MATMUL_FLAGS` from `cpuinfo_path`.

  Args:
    cpuinfo_path: a file in `/proc/cpuinfo`'s format (`key<tabs>: value` lines).
    use_override: report the flags of `$MLM_CPU_FLAGS` when it is set (see the module).

  Returns:
    A `CpuInfo`; without a readable file (not Linux) or its fields, the model is
    `platform.processor()` (or the machine type) and the flags are empty (unknown).

  Raises:
    ValueError: `$MLM_CPU_FLAGS` names a flag that is not one of `MATMUL_FLAGS`.

  Example:
    >>> read_cpu_info().flags['avx512_bf16']  # on a Zen 4 EPYC or a Sapphire Rapids Xeon
    True
  """
  model: Optional[str] = None
  flags: Optional[set] = None
  try:
    with open(cpuinfo_path, encoding='utf-8', errors='replace') as f:
      for line in f:
        key, _, value = line.partition(':')
        key = key.strip()
        if key == 'model name' and model is None:
          model = ' '.join(value.split())
        elif key == 'flags' and flags is None:
          flags = set(value.split())
        if model is not None and flags is not None:
          break
  except OSError:
    pass
  model = model or platform.processor() or platform.machine() or 'unknown CPU'
  override = os.environ.get(FLAGS_OVERRIDE_VARIABLE) if use_override else None
  if override is not None:
    flags = set(override.replace(',', ' ').split())
    unknown = sorted(flags - set(MATMUL_FLAGS))
    if unknown:
      raise ValueError(f'{FLAGS_OVERRIDE_VARIABLE}: unknown flag(s) {", ".join(unknown)}; '
                       f'expected some of {", ".join(MATMUL_FLAGS)}, found {override!r}')
    model = f'{model} [flags from {FLAGS_OVERRIDE_VARIABLE}]'
  return CpuInfo(model=model,
                 flags={} if flags is None else {name: name in flags for name in MATMUL_FLAGS})


def default_precision(cpuinfo_path: str = '/proc/cpuinfo') -> str:
  """'bfloat16' when the CPU computes it natively (`amx_bf16` or `avx512_bf16`), else 'float32'.

  Without these instructions TensorFlow emulates bfloat16 in float32 and float32 is the faster
  choice; an unreadable `cpuinfo_path` (not Linux) gives 'float32'.

  Example:
    >>> default_precision()  # on a Zen 4 EPYC or a Sapphire Rapids Xeon
    'bfloat16'
  """
  flags = read_cpu_info(cpuinfo_path).flags
  return 'bfloat16' if flags.get('amx_bf16') or flags.get('avx512_bf16') else 'float32'
