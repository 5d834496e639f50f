"""Every console script of setup.py prints its flags with `--help` and exits 0."""

import ast
import importlib
import os
import re

import pytest

from tests import cli
from tests import paths


def _console_scripts():
  """`(name, 'module:function')` of setup.py's `console_scripts`, read from its source."""
  with open(os.path.join(paths.ROOT, 'setup.py'), encoding='utf-8') as f:
    tree = ast.parse(f.read())
  for node in ast.walk(tree):
    if isinstance(node, ast.Dict):
      for key, value in zip(node.keys, node.values):
        if isinstance(key, ast.Constant) and key.value == 'console_scripts':
          specs = ast.literal_eval(value)
          return [tuple(s.replace(' ', '').split('=', 1)) for s in specs]
  raise AssertionError('setup.py has no console_scripts')


_SCRIPTS = _console_scripts()


def test_setup_lists_the_console_scripts():
  names = [name for name, _ in _SCRIPTS]
  assert 'mlm-train' in names and len(names) == len(set(names)) >= 10


@pytest.mark.parametrize('name,target', _SCRIPTS, ids=[name for name, _ in _SCRIPTS])
def test_help_lists_the_flags(name, target):
  module_name, function_name = target.split(':')
  entry = getattr(importlib.import_module(module_name), function_name)
  result = cli.call_main(lambda _argv: entry(), ['--help'])
  assert result.returncode == 0, result.stderr
  flag_lines = re.findall(r'^\s+--(?:\[no\])?(\w+)', result.stdout, re.M)
  assert len(flag_lines) >= 3, f'{name} --help lists {flag_lines}:\n{result.stdout}'
  if name == 'mlm-train':  # the console script's wrapper module defines no flags of its own
    assert {'experiment', 'model_dir', 'config_file', 'params_override'} <= set(flag_lines)
