"""Tests of official/utils/misc/cpu_info.py: the model name and matmul flags of /proc/cpuinfo."""

import pytest

from official.utils.misc import cpu_info

# Two processors of a /proc/cpuinfo (x86 layout): the first one's fields are read.
CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9B14 96-Core   Processor
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_tile_x
bogomips\t: 5200.00

processor\t: 1
model name\t: Other CPU
flags\t\t: amx_bf16 amx_tile
"""


@pytest.fixture(autouse=True)
def _no_flags_override(monkeypatch):
  """The files' own flags (`scripts/test_cpu_classes.sh` sets MLM_CPU_FLAGS for its legs)."""
  monkeypatch.delenv(cpu_info.FLAGS_OVERRIDE_VARIABLE, raising=False)


def test_reads_the_model_and_the_matmul_flags(tmp_path):
  path = tmp_path / 'cpuinfo'
  path.write_text(CPUINFO)
  info = cpu_info.read_cpu_info(str(path))
  assert info.model == 'AMD EPYC 9B14 96-Core Processor'
  assert info.flags == {'avx2': True, 'avx512f': True, 'avx512_bf16': True, 'amx_bf16': False,
                        'amx_tile': False}  # whole names only: amx_tile_x is not amx_tile
  assert info.line() == ('AMD EPYC 9B14 96-Core Processor (avx2 avx512f avx512_bf16; '
                         'no amx_bf16 amx_tile)')


def test_no_cpuinfo_gives_unknown_flags(tmp_path):
  info = cpu_info.read_cpu_info(str(tmp_path / 'missing'))
  assert info.flags == {} and info.model
  assert info.line() == f'{info.model} (flags unknown)'


def test_lines_with_all_or_no_flags():
  every = {name: True for name in cpu_info.MATMUL_FLAGS}
  assert cpu_info.CpuInfo('X', every).line() == 'X (avx2 avx512f avx512_bf16 amx_bf16 amx_tile)'
  none = {name: False for name in cpu_info.MATMUL_FLAGS}
  assert cpu_info.CpuInfo('X', none).line() == 'X (no avx2 avx512f avx512_bf16 amx_bf16 amx_tile)'


def test_this_machine():
  info = cpu_info.read_cpu_info()
  assert info.model and info.line().startswith(info.model)


def test_default_precision_is_bfloat16_only_where_native(tmp_path):
  cpuinfo = tmp_path / 'cpuinfo'
  cpuinfo.write_text('flags\t\t: fpu avx2 avx512f avx512_bf16\n')
  assert cpu_info.default_precision(str(cpuinfo)) == 'bfloat16'
  cpuinfo.write_text('flags\t\t: fpu avx2 amx_bf16 amx_tile\n')
  assert cpu_info.default_precision(str(cpuinfo)) == 'bfloat16'
  cpuinfo.write_text('flags\t\t: fpu avx2 avx512f\n')
  assert cpu_info.default_precision(str(cpuinfo)) == 'float32'
  assert cpu_info.default_precision(str(tmp_path / 'missing')) == 'float32'


def test_flags_override_reports_another_cpu(tmp_path, monkeypatch):
  path = tmp_path / 'cpuinfo'
  path.write_text(CPUINFO)
  monkeypatch.setenv(cpu_info.FLAGS_OVERRIDE_VARIABLE, 'avx2')
  info = cpu_info.read_cpu_info(str(path))
  assert info.flags == {'avx2': True, 'avx512f': False, 'avx512_bf16': False, 'amx_bf16': False,
                        'amx_tile': False}
  assert info.model == 'AMD EPYC 9B14 96-Core Processor [flags from MLM_CPU_FLAGS]'
  assert cpu_info.default_precision(str(path)) == 'float32'
  monkeypatch.setenv(cpu_info.FLAGS_OVERRIDE_VARIABLE, 'avx2, avx512f')  # AVX-512, no bfloat16
  assert cpu_info.read_cpu_info(str(path)).flags['avx512f']
  assert cpu_info.default_precision(str(path)) == 'float32'
  monkeypatch.setenv(cpu_info.FLAGS_OVERRIDE_VARIABLE, 'avx2 amx_bf16 amx_tile')
  assert cpu_info.default_precision(str(path)) == 'bfloat16'
  # The machine's own flags when asked (what TensorFlow's kernels see).
  assert cpu_info.read_cpu_info(str(path), use_override=False).flags['avx512_bf16']


def test_flags_override_names_an_unknown_flag(monkeypatch):
  monkeypatch.setenv(cpu_info.FLAGS_OVERRIDE_VARIABLE, 'avx2,avx512')
  with pytest.raises(ValueError) as raised:
    cpu_info.read_cpu_info()
  assert str(raised.value) == ("MLM_CPU_FLAGS: unknown flag(s) avx512; expected some of avx2, "
                               "avx512f, avx512_bf16, amx_bf16, amx_tile, found 'avx2,avx512'")
