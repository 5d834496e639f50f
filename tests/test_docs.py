"""Tests of README.md and docs/*.md against the code: what a reader copies must run.

- The README stays a page a user reads (at most 200 lines) and begins with the two set-up
  commands, `make demo` and `make test` (the command `.ci/run` reaches through `make test-all`).
- Every relative link resolves to a file of the repository, and every `#anchor` to a heading of
  its target (GitHub's slugs).
- Every command of a shell block (```bash, ```sh, ```shell) calls something that exists: a module
  (`python -m ...`), a script, a console script of setup.py or a make target; every `--flag` given
  to one of our tools is a flag it defines (read from its `--help`, run once per tool in this
  process with tests/cli.py: one TensorFlow import for all of them, no child process); every
  `--config_file` and `configs/...yaml` path exists. Commands that are not ours (pip, git, ...)
  are listed in `_NOT_OURS`; any other command fails, naming the file and line.

The flag test imports the tools (TensorFlow: about 5 s alone, about 1 s in a worker that has it
already); the rest reads files only. Two tests feed the checkers broken commands and links, so
that a checker that finds nothing fails too.
"""

import dataclasses
import functools
import glob
import importlib
import importlib.util
import os
import re
import shlex
import sys
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple
from urllib.parse import unquote

from tests import cli
from tests.paths import ROOT

README = 'README.md'
# The README, the reference pages and each research project's README and dated pages.
DOC_FILES = [README] + sorted(
    os.path.relpath(p, ROOT)
    for pattern in (('docs', '*.md'), ('official', 'projects', '*', '*.md'),
                    ('official', 'projects', '*', 'results', '*.md'))
    for p in glob.glob(os.path.join(ROOT, *pattern)))
MAX_README_LINES = 200

_SHELL_LANGS = ('bash', 'sh', 'shell')
# Programs that are not ours: their commands are not checked.
_NOT_OURS = frozenset([
    'apt-get', 'apt', 'cat', 'cd', 'cp', 'curl', 'echo', 'export', 'git', 'head', 'ls', 'mkdir',
    'mv', 'npm', 'pip', 'pip3', 'rm', 'source', 'tail', 'tar', 'tensorboard', 'unzip', 'wc',
    'wget'])
# Modules of others that `python -m` may run.
_NOT_OURS_MODULES = frozenset(['pip', 'pytest', 'venv', 'coverage', 'ruff', 'apache_beam'])
_PYTHONS = frozenset(['python', 'python3'])
_VENV_BIN = '.venv/bin/'
# Shell operators that end a simple command, and redirections (their target is skipped).
_SEPARATORS = frozenset(['|', '||', '&&', ';', '&'])
_REDIRECTIONS = frozenset(['>', '>>', '<', '>&', '&>', '2>', '2>>'])


def _read(path: str) -> List[str]:
  with open(os.path.join(ROOT, path), encoding='utf-8') as f:
    return f.read().split('\n')


# --- Markdown ---------------------------------------------------------------------------------

_FENCE = re.compile(r'^\s*(```+|~~~+)\s*([\w+-]*)')


@dataclasses.dataclass
class Block:
  """A fenced code block: its language and its lines, the first at `line` (1-based)."""
  path: str
  line: int
  lang: str
  lines: List[str]


def _blocks(path: str) -> List[Block]:
  blocks, current = [], None
  for number, line in enumerate(_read(path), 1):
    match = _FENCE.match(line)
    if current is None and match:
      current = Block(path, number + 1, match.group(2).lower(), [])
    elif current is not None and match and not match.group(2):
      blocks.append(current)
      current = None
    elif current is not None:
      current.lines.append(line)
  assert current is None, f'{path}:{current.line - 1}: a code block is never closed'
  return blocks


def _prose(path: str) -> List[str]:
  """The file's lines with the fenced blocks blanked (line numbers kept)."""
  lines = _read(path)
  for block in _blocks(path):
    for i in range(block.line - 2, block.line + len(block.lines)):
      lines[i] = ''
  return lines


def github_slug(heading: str) -> str:
  """The anchor GitHub gives a heading: lower case, punctuation but '-' and '_' removed,
  spaces to '-'.

  >>> github_slug('Numerics across CPUs')
  'numerics-across-cpus'
  >>> github_slug('Downstream evaluation: `mlm-eval`')
  'downstream-evaluation-mlm-eval'
  """
  text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading).strip().lower()
  return re.sub(r'[^\w\- ]', '', text).replace(' ', '-')


@functools.lru_cache(maxsize=None)
def _anchors(path: str) -> FrozenSet[str]:
  anchors, seen = set(), {}
  for line in _prose(path):
    match = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
    if match:
      slug = github_slug(match.group(1))
      count = seen.get(slug, 0)
      seen[slug] = count + 1
      anchors.add(slug if count == 0 else f'{slug}-{count}')
  return frozenset(anchors)


_LINK = re.compile(r'!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)')
_REFERENCE = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)', re.M)


def _links(path: str) -> List[Tuple[int, str]]:
  """(line, target) of every link outside code blocks and code spans."""
  text = '\n'.join(_prose(path))
  # A code span may wrap onto the next line; keep the newlines so that line numbers hold.
  text = re.sub(r'(`+)(.+?)\1', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
  matches = sorted((m for pattern in (_LINK, _REFERENCE) for m in pattern.finditer(text)),
                   key=lambda m: m.start(1))
  return [(text.count('\n', 0, m.start(1)) + 1, m.group(1)) for m in matches]


def _link_problem(path: str, target: str) -> Optional[str]:
  """Why a link of `path` does not resolve, or None (links with a scheme are not checked)."""
  if re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', target):
    return None
  file_part, _, anchor = target.partition('#')
  if file_part:
    resolved = os.path.normpath(os.path.join(os.path.dirname(path), unquote(file_part)))
    if resolved.startswith('..') or os.path.isabs(resolved):
      return f'{target}: outside the repository'
    if not os.path.exists(os.path.join(ROOT, resolved)):
      return f'{target}: no such file ({resolved})'
  else:
    resolved = path
  if anchor and resolved.endswith('.md') and anchor not in _anchors(resolved):
    return f'{target}: {resolved} has no heading with the anchor #{anchor}'
  return None


# --- Shell commands ---------------------------------------------------------------------------

@dataclasses.dataclass
class Command:
  """One simple command of a shell block (continuation lines joined), at `path`:`line`."""
  path: str
  line: int
  words: List[str]

  @property
  def where(self) -> str:
    return f'{self.path}:{self.line}'


def _split_words(text: str) -> List[str]:
  lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
  lexer.whitespace_split = True
  lexer.commenters = '#'
  return list(lexer)


def _commands(block: Block) -> List[Command]:
  """The simple commands of a shell block: continuations joined, comments dropped, split at
  `|`, `&&`, `;`, redirections left out."""
  commands, pending, start = [], [], None
  for number, line in enumerate(block.lines, block.line):
    if not pending and (not line.strip() or line.strip().startswith('#')):
      continue
    if start is None:
      start = number
    if line.rstrip().endswith('\\'):
      pending.append(line.rstrip()[:-1])
      continue
    pending.append(line)
    words = _split_words(' '.join(pending))
    current: List[str] = []
    skip = False
    for word in words + [';']:
      if skip:
        skip = False
      elif word in _SEPARATORS:
        if current:
          commands.append(Command(block.path, start, current))
        current = []
      elif word in _REDIRECTIONS or re.fullmatch(r'\d?[<>]+&?', word):
        skip = True
        if current[-1:] in (['1'], ['2']):  # shlex splits `2>&1` into 2, >&, 1
          current.pop()
      else:
        current.append(word)
    pending, start = [], None
  return commands


def _shell_commands(paths: Sequence[str] = tuple(DOC_FILES)) -> List[Command]:
  return [command for path in paths for block in _blocks(path)
          if block.lang in _SHELL_LANGS for command in _commands(block)]


@functools.lru_cache(maxsize=None)
def _console_scripts() -> Dict[str, str]:
  """setup.py's `console_scripts`: name -> 'module:function'."""
  with open(os.path.join(ROOT, 'setup.py'), encoding='utf-8') as f:
    text = f.read()
  section = re.search(r"'console_scripts':\s*\[(.*?)\]", text, re.S).group(1)
  return dict(re.findall(r"'([\w-]+)\s*=\s*([\w.]+:\w+)'", section))


@functools.lru_cache(maxsize=None)
def _make_targets() -> FrozenSet[str]:
  with open(os.path.join(ROOT, 'Makefile'), encoding='utf-8') as f:
    text = f.read()
  targets: Set[str] = set()
  for match in re.finditer(r'^([^\s:#=][^:=]*?)\s*::?(?!=)', text, re.M):
    targets.update(match.group(1).split())
  return frozenset(targets)


_HELP_FLAG = re.compile(r'(?:^[ \t]*|\[|, |\| )--(\[no\])?([A-Za-z0-9][\w-]*)', re.M)


def flags_in_help(text: str) -> FrozenSet[str]:
  """The flags a help text defines: absl's `  --name:` and `  --[no]name:` (both spellings of a
  boolean), argparse's `[--name NAME]` and `  -n NAME, --name NAME`.

  >>> sorted(flags_in_help('  --[no]pack: Pack.\\n  --seed: Seed.\\nusage: x [-h] [--steps N]'))
  ['nopack', 'pack', 'seed', 'steps']
  """
  names = set()
  for negatable, name in _HELP_FLAG.findall(text):
    names.add(name)
    if negatable:
      names.add('no' + name)
  return frozenset(names)


def _load_script(path: str):
  """Imports scripts/x.py as a module of its own (not as __main__: nothing runs)."""
  name = '_docs_' + re.sub(r'\W', '_', os.path.splitext(path)[0])
  spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
  module = importlib.util.module_from_spec(spec)
  sys.modules[name] = module  # dataclasses look their module up while it executes
  try:
    spec.loader.exec_module(module)
  finally:
    del sys.modules[name]
  return module


def _help_of(module, program: str, function: str = 'main') -> str:
  """A tool's `--help`, in this process: the module's `help_text()` (absl programs on the global
  flags, whose `--help` lists the main module's flags), else `function([program, '--help'])`."""
  if hasattr(module, 'help_text'):
    return module.help_text()
  result = cli.call_main(getattr(module, function), [program, '--help'])
  assert result.returncode == 0, (
      f'{program} --help exited {result.returncode}: {result.stderr[-2000:]}')
  return result.stdout + result.stderr


@functools.lru_cache(maxsize=None)
def tool_flags(kind: str, name: str) -> FrozenSet[str]:
  """The flags of a tool: kind 'module' (a module path), 'console' (a console script) or
  'script' (a path under the repository)."""
  if kind == 'module':
    return flags_in_help(_help_of(importlib.import_module(name), name))
  if kind == 'console':
    module, function = _console_scripts()[name].split(':')
    return flags_in_help(_help_of(importlib.import_module(module), name, function))
  if name.endswith('.sh'):  # the patterns of its `case "$arg" in` (--name=*) or --name))
    with open(os.path.join(ROOT, name), encoding='utf-8') as f:
      patterns = re.findall(r'^\s*([^\s()]+)\)', f.read(), re.M)
    return frozenset(option[2:].split('=')[0] for pattern in patterns
                     for option in pattern.split('|') if option.startswith('--'))
  return flags_in_help(_help_of(_load_script(name), name))


def _tool(command: Command) -> Tuple[Optional[Tuple[str, str]], List[str], List[str]]:
  """What a command runs: ((kind, name) or None when not ours, its arguments, problems)."""
  words = list(command.words)
  while words and re.match(r'^[A-Za-z_]\w*=', words[0]):  # VAR=value before the program
    words.pop(0)
  if not words:
    return None, [], []
  program, args = words[0], words[1:]
  name = program[len(_VENV_BIN):] if program.startswith(_VENV_BIN) else program
  if name in _PYTHONS:
    if args[:1] == ['-m'] and len(args) > 1:
      module = args[1]
      if module.split('.')[0] in _NOT_OURS_MODULES:
        return None, [], []
      try:
        found = importlib.util.find_spec(module) is not None
      except ImportError:
        found = False
      if not found:
        return None, [], [f'no module {module}']
      return ('module', module), args[2:], []
    if args and args[0].endswith(('.py', '.sh')):
      return _script(args[0], args[1:])
    return None, [], [f'{program} {" ".join(args[:1])}: expected -m MODULE or a script']
  if name in _console_scripts():
    return ('console', name), args, []
  if name == 'make':
    missing = [t for t in args if not t.startswith('-') and '=' not in t
               and t not in _make_targets()]
    return None, [], [f'no make target {t}' for t in missing]
  if name.startswith(('scripts/', './scripts/', 'examples/', './examples/')):
    return _script(name, args)
  if name in _NOT_OURS:
    return None, [], []
  return None, [], [f'unknown command {program} (not ours? add it to _NOT_OURS)']


def _script(path: str, args: List[str]):
  path = os.path.normpath(path)
  if not os.path.isfile(os.path.join(ROOT, path)):
    return None, [], [f'no script {path}']
  return ('script', path), args, []


def command_problems(command: Command, check_flags: bool = True) -> List[str]:
  """What is wrong with a command: an unknown program, module, script or make target, a flag its
  tool does not define, a config file that does not exist."""
  problems = []
  for i, word in enumerate(command.words):
    path = None
    if word.startswith('--config_file='):
      path = word.split('=', 1)[1]
    elif word == '--config_file' and i + 1 < len(command.words):
      path = command.words[i + 1]
    for candidate in [path] + re.findall(r'(?<![\w/.])configs/[\w./*-]+\.yaml', word):
      if candidate and not glob.glob(os.path.join(ROOT, candidate)):
        problems.append(f'no config file {candidate}')
  tool, args, found = _tool(command)
  problems += found
  if '--' in args:  # `launcher --its_flags -- another command`
    index = args.index('--')
    inner = Command(command.path, command.line, args[index + 1:])
    problems += command_problems(inner, check_flags)
    args = args[:index]
  if tool is not None and check_flags:
    defined = tool_flags(*tool)
    for arg in args:
      if arg.startswith('--') and len(arg) > 2:
        flag = arg[2:].split('=', 1)[0]
        if flag not in defined:
          problems.append(f'{tool[1]} has no flag --{flag}')
  return sorted(set(problems))


# --- Tests ------------------------------------------------------------------------------------

def test_readme_is_short_and_starts_with_the_set_up_commands():
  lines = _read(README)
  assert len(lines) - (lines[-1] == '') <= MAX_README_LINES, f'{README}: {len(lines)} lines'
  assert lines[0] == '# mlm-garden'
  first = _blocks(README)[0]
  assert [line for line in lines[1:first.line - 2] if line.strip()] == [], (
      'the set-up commands come first, right after the title')
  assert first.lang == 'bash'
  assert [shlex.split(line, comments=True) for line in first.lines] == [
      ['make', 'demo'], ['make', 'test']]
  # The README's test command is the one CI runs: .ci/run -> make test-all -> make test.
  with open(os.path.join(ROOT, '.ci', 'run'), encoding='utf-8') as f:
    assert re.search(r'^make test-all$', f.read(), re.M)
  with open(os.path.join(ROOT, 'Makefile'), encoding='utf-8') as f:
    assert re.search(r'^test-all:.*\btest\b', f.read(), re.M)


def _targets(path: str) -> Set[str]:
  """The files `path` links to, relative to the repository."""
  return {os.path.normpath(os.path.join(os.path.dirname(path), t.partition('#')[0]))
          for _, t in _links(path) if not t.startswith(('http://', 'https://', '#'))}


def test_every_docs_page_has_a_title_a_sentence_and_a_way_back():
  """Each page: a title, a sentence, a link up (the README; a dated page: its project's README),
  and a link to it from the README or from a page the README links to."""
  readme_targets = _targets(README)
  reachable = readme_targets.union(*(_targets(p) for p in readme_targets if p in DOC_FILES))
  for path in DOC_FILES[1:]:
    lines = _read(path)
    assert re.match(r'^# \S', lines[0]), f'{path}: starts with a "# Title"'
    assert lines[1] == '' and lines[2].strip() and not lines[2].startswith(('#', '[', '|')), (
        f'{path}: a sentence on what the page covers follows the title')
    up = os.path.normpath(os.path.join(os.path.dirname(path), os.pardir, 'README.md'))
    assert {README, up} & _targets(path), f'{path}: links back to the README'
    assert path in reachable, f'{README} (or a page it links to) links to {path}'


def test_relative_links_and_anchors_resolve():
  problems = [f'{path}:{line}: {problem}' for path in DOC_FILES
              for line, target in _links(path)
              for problem in [_link_problem(path, target)] if problem]
  assert problems == []
  assert len([1 for path in DOC_FILES for _ in _links(path)]) > 20  # the links were found


def test_shell_commands_call_what_exists():
  """Programs, modules, scripts, make targets and config files; flags in the next test."""
  commands = _shell_commands()
  assert len(commands) >= 20, [c.words for c in commands]  # the blocks were parsed
  problems = [f'{c.where}: {p}' for c in commands for p in command_problems(c, check_flags=False)]
  assert problems == []


def test_shell_commands_give_our_tools_only_flags_they_define():
  commands = _shell_commands()
  problems = [f'{c.where}: {p}' for c in commands for p in command_problems(c)]
  assert problems == []
  tools = {tool for c in commands for tool in [_tool(c)[0]] if tool}
  assert ('module', 'official.nlp.train') in tools and len(tools) >= 8, tools


def _block(text: str, path: str = 'doc.md') -> Block:
  return Block(path, 2, 'bash', text.split('\n'))


def test_the_checker_finds_broken_commands():
  commands = _commands(_block(
      '# a comment\n'
      '.venv/bin/python -m data_tools.build_vocab --input_file=a.txt \\\n'
      '  --vocab_sise=10   # a misspelt flag\n'
      'python -m data_tools.no_such_tool --x=1\n'
      'mlm-fill-mask --model_dir=m --text="a [MASK]" 2>&1 | tail -1 && make no_such_target\n'
      'X=1 .venv/bin/mlm-train --config_file=configs/pretraining/no_such.yaml --nobogus\n'
      'scripts/no_such.sh --a\n'
      'frobnicate --all\n'
      'pip install -e . && git status'))
  assert [(c.line, c.words[:2]) for c in commands] == [
      (3, ['.venv/bin/python', '-m']), (5, ['python', '-m']),
      (6, ['mlm-fill-mask', '--model_dir=m']), (6, ['tail', '-1']), (6, ['make', 'no_such_target']),
      (7, ['X=1', '.venv/bin/mlm-train']),
      (8, ['scripts/no_such.sh', '--a']), (9, ['frobnicate', '--all']), (10, ['pip', 'install']),
      (10, ['git', 'status'])]
  assert commands[2].words == ['mlm-fill-mask', '--model_dir=m', '--text=a [MASK]']
  assert [command_problems(c) for c in commands] == [
      ['data_tools.build_vocab has no flag --vocab_sise'],
      ['no module data_tools.no_such_tool'],
      [],
      [],
      ['no make target no_such_target'],
      ['mlm-train has no flag --nobogus', 'no config file configs/pretraining/no_such.yaml'],
      ['no script scripts/no_such.sh'],
      ['unknown command frobnicate (not ours? add it to _NOT_OURS)'],
      [],
      []]


def test_the_link_checker_finds_broken_links(tmp_path, monkeypatch):
  monkeypatch.setattr(sys.modules[__name__], 'ROOT', str(tmp_path))
  _anchors.cache_clear()
  (tmp_path / 'docs').mkdir()
  (tmp_path / 'docs' / 'a.md').write_text(
      '# A page: `x`\n\n## Numerics across CPUs\n\n```bash\n# not a heading\n```\n'
      '[ok](../README.md) [ok](#numerics-across-cpus) `[not a link](nowhere.md)`\n'
      '[bad](b.md) [bad anchor](#not-a-heading) [web](https://example.com/x.md)\n',
      encoding='utf-8')
  (tmp_path / 'README.md').write_text('[a](docs/a.md#a-page-x) [up](../outside.md)\n',
                                      encoding='utf-8')
  try:
    assert [(line, target, _link_problem('docs/a.md', target))
            for line, target in _links('docs/a.md')] == [
                (8, '../README.md', None), (8, '#numerics-across-cpus', None),
                (9, 'b.md', 'b.md: no such file (docs/b.md)'),
                (9, '#not-a-heading', '#not-a-heading: docs/a.md has no heading with the anchor '
                 '#not-a-heading'),
                (9, 'https://example.com/x.md', None)]
    assert [_link_problem(README, t) for _, t in _links(README)] == [
        None, '../outside.md: outside the repository']
  finally:
    _anchors.cache_clear()
