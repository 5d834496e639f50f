"""official.common.quiet: TensorFlow's start-up lines are hidden from the CLIs, --verbose keeps
them."""

import os
import re
import subprocess
import sys

import pytest

from official.common import quiet
from tests.paths import ROOT

STARTUP = re.compile(r'absl::InitializeLog|oneDNN custom operations|cudart_stub|cpu_feature_guard|'
                     r'failed call to cuInit')
NOISE_LINES = [
    'WARNING: All log messages before absl::InitializeLog() is called are written to STDERR',
    'I0000 00:00:1795500317.152567   28994 port.cc:153] oneDNN custom operations are on. '
    'You may see',
    'I0000 00:00:1795500317.153275   28994 cudart_stub.cc:31] Could not find cuda drivers on your '
    'machine',
    'I0000 00:00:1795500317.254086   28994 cpu_feature_guard.cc:227] This TensorFlow binary is '
    'optimized',
    'To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow '
    'with the appropriate compiler flags.',
    'E0000 00:00:1795500318.927811   28994 cuda_platform.cc:52] failed call to cuInit: INTERNAL: '
    'CUDA error',
]


def _run(args, env_extra=None):
  env = dict(os.environ)
  env.pop(quiet.VERBOSE_ENV, None)
  env.pop('TF_CPP_MIN_LOG_LEVEL', None)
  env.update(env_extra or {})
  return subprocess.run([sys.executable] + args, cwd=ROOT, env=env, capture_output=True, text=True,
                        timeout=120)


def test_is_noise_matches_startup_lines_only():
  assert quiet.is_noise(NOISE_LINES[0]) and quiet.is_noise(NOISE_LINES[-1])
  assert not quiet.is_noise('E0000 00:00:1.2  7 op_kernel.cc:1] OP_REQUIRES failed: out of memory')
  assert not quiet.is_noise('fill_mask: error: --text is required')


def test_verbose_requested():
  assert quiet.verbose_requested(['prog', '--verbose'])
  assert not quiet.verbose_requested(['--verbose'])  # the program name is not a flag


def test_quiet_cli_is_a_no_op_on_import():
  argv = ['pytest', '--verbose']
  quiet.quiet_cli('official.nlp.tools.fill_mask', argv)
  assert argv == ['pytest', '--verbose'] and not quiet._state['installed']


def test_filter_drops_startup_lines_and_passes_the_rest():
  # Synthetic: the exact TF 2.21 lines written to fd 2, plus real lines and a partial progress bar.
  lines = (NOISE_LINES[:3] + ['real C++ error line', 'E0000 00:00:1.2  7 op_kernel.cc:1] OOM']
           + NOISE_LINES[3:])
  payload = ''.join(line + '\n' for line in lines) + '\rprogress 50%'
  code = ('import os, sys; from official.common import quiet; quiet.quiet_tensorflow(False); '
          f'os.write(2, {payload.encode()!r}); print("python stderr", file=sys.stderr)')
  result = _run(['-c', code])
  assert result.returncode == 0
  assert not STARTUP.search(result.stderr), result.stderr
  for kept in ('real C++ error line\n', 'op_kernel.cc:1] OOM\n', 'progress 50%', 'python stderr\n'):
    assert kept in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize('args,env', [(['--help'], None), (['--help', '--verbose'], None),
                                      (['--help'], {'MLM_VERBOSE': '1'})])
def test_fill_mask_startup_lines_hidden_unless_verbose(args, env):
  result = _run(['-m', 'official.nlp.tools.fill_mask'] + args, env)
  assert result.returncode == 0, result.stderr
  verbose = '--verbose' in args or env
  assert bool(STARTUP.search(result.stderr)) == bool(verbose), result.stderr


@pytest.mark.slow
def test_real_error_still_shown():
  result = _run(['-m', 'official.nlp.tools.fill_mask', '--model_dir=/nonexistent/run',
                 "--text=a [MASK]"])
  assert result.returncode == 1
  assert not STARTUP.search(result.stderr), result.stderr
  assert len(result.stderr.strip().splitlines()) == 1
  assert "fill_mask: error: model_dir '/nonexistent/run'" in result.stderr


ABSL_LINE = re.compile(r'^([IWEF])\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ (\S+):\d+\] (.*)$')


def test_use_absl_logging_writes_absl_lines_once_and_hides_tensorflow_info():
  code = ('import logging; from official.common import quiet; quiet.use_absl_logging(); '
          'quiet.use_absl_logging(); logging.info("step %d", 5); logging.debug("hidden"); '
          'logging.getLogger("tensorflow").info("chatter"); '
          'logging.getLogger("tensorflow").warning("tf warning"); print("result")')
  result = _run(['-c', code])
  assert result.returncode == 0, result.stderr
  assert result.stdout == 'result\n'
  lines = [ABSL_LINE.match(line) for line in result.stderr.splitlines()]
  assert [m.group(1, 3) for m in lines] == [('I', 'step 5'), ('W', 'tf warning')], result.stderr


def test_verbose_flag_is_defined_once_and_accepted_in_process():
  from absl import flags  # pylint: disable=g-import-not-at-top
  fv = flags.FlagValues()
  quiet.define_verbose_flag(fv)
  quiet.define_verbose_flag(fv)
  fv(['prog', '--verbose'])
  assert fv.verbose and fv['verbose'].help == quiet.VERBOSE_HELP


@pytest.mark.parametrize('module', [
    'data_tools.build_vocab', 'data_tools.create_finetuning_data',
    'data_tools.create_pretraining_data', 'data_tools.stdlib_corpus',
    'official.nlp.serving.export_savedmodel', 'official.nlp.tools.convert_checkpoint',
    'official.nlp.tools.fill_mask', 'official.nlp.tools.embed'])
def test_every_tool_lists_verbose_in_help(module, capsys):
  import importlib  # pylint: disable=g-import-not-at-top
  assert importlib.import_module(module).main(['prog', '--help']) == 0
  out = capsys.readouterr().out
  assert '--[no]verbose: ' in out and 'MLM_VERBOSE=1' in out


@pytest.mark.slow
def test_train_help_lists_verbose_and_the_gin_extra():
  result = _run(['-m', 'official.nlp.train', '--help'])
  assert result.returncode == 0, result.stderr[-2000:]  # help is not an error
  help_text = result.stdout
  assert '--[no]verbose: ' in help_text and '--experiment: ' in help_text, help_text[-2000:]
  assert help_text.count('needs the [gin] extra') == 2
  assert help_text.count('(pip install mlm-garden[gin])') == 2
