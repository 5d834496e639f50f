"""The import graph of the package follows the layers of ARCHITECTURE.md (read from the source's
AST: nothing is imported).

Every import of one of our modules points to a module of the same or a lower layer, no import
cycle exists (counting imports inside functions), and an import inside a function carries a
`# Function-level: <reason>` comment (on its line, or above a block of imports).
"""

import ast
import os
import re
from typing import Dict, List, Set, Tuple

import pytest

from tests.paths import ROOT

PACKAGES = ('official', 'orbit', 'data_tools', 'scripts', 'examples', 'tensorflow_models')
MARKER = '# Function-level:'


def read_layers(text: str) -> List[Tuple[str, List[str]]]:
  """The layers of the ```layers block of ARCHITECTURE.md, lowest first: (name, module prefixes).

  Raises:
    ValueError: no such block, or a line that is not `name: prefix ...`.
  """
  match = re.search(r'```layers\n(.*?)```', text, re.S)
  if not match:
    raise ValueError('ARCHITECTURE.md: no ```layers block')
  layers = []
  for line in match.group(1).splitlines():
    line = line.split('#', 1)[0].strip()
    if not line:
      continue
    name, sep, prefixes = line.partition(':')
    if not sep or not prefixes.split():
      raise ValueError(f'ARCHITECTURE.md: expected "name: module ..." in the layers block, '
                       f'found {line!r}')
    layers.append((name.strip(), prefixes.split()))
  return layers


def find_modules(root: str) -> Dict[str, str]:
  """{dotted module name: file path} of every .py file of PACKAGES under `root`."""
  modules = {}
  for package in PACKAGES:
    for dirpath, _, filenames in os.walk(os.path.join(root, package)):
      for filename in filenames:
        if filename.endswith('.py'):
          path = os.path.join(dirpath, filename)
          name = os.path.relpath(path, root)[:-3].replace(os.sep, '.')
          modules[name[:-len('.__init__')] if name.endswith('.__init__') else name] = path
  return modules


class _ImportVisitor(ast.NodeVisitor):
  """Collects (imported name, line, inside a function) of every import statement."""

  def __init__(self, module: str, is_package: bool):
    self.module, self.is_package = module, is_package
    self.imports: List[Tuple[str, List[str], int, bool]] = []
    self._depth = 0

  def _function(self, node):
    self._depth += 1
    self.generic_visit(node)
    self._depth -= 1

  visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function  # noqa: N815

  def visit_Import(self, node: ast.Import):  # noqa: N802
    for alias in node.names:
      self.imports.append((alias.name, [], node.lineno, self._depth > 0))

  def visit_ImportFrom(self, node: ast.ImportFrom):  # noqa: N802
    base = node.module or ''
    if node.level:
      parts = self.module.split('.')
      parts = parts if self.is_package else parts[:-1]
      parts = parts[:len(parts) - (node.level - 1)]
      base = '.'.join(parts + ([node.module] if node.module else []))
    self.imports.append((base, [a.name for a in node.names], node.lineno, self._depth > 0))


def _marked(lines: List[str], lineno: int) -> bool:
  """Whether the import at `lineno` (1-based) carries the marker: on its line, or on a comment
  line above it with only imports (a block of them) in between."""
  index = lineno - 1
  if MARKER in lines[index]:
    return True
  index -= 1
  while index >= 0:
    line = lines[index].strip()
    if MARKER in line:
      return True
    if not line.startswith(('import ', 'from ', '#')) or not line:
      return False
    index -= 1
  return False


def import_edges(modules: Dict[str, str]) -> Tuple[Dict[str, Set[str]], List[str]]:
  """The import graph between our modules, and the unmarked function-level imports.

  `from a import b` points to module `a.b` when there is one, else to `a`.
  """
  def ours(name: str) -> str:
    while name and name not in modules:
      name = name.rpartition('.')[0]
    return name

  edges: Dict[str, Set[str]] = {name: set() for name in modules}
  unmarked = []
  for module, path in modules.items():
    with open(path, encoding='utf-8') as f:
      source = f.read()
    lines = source.splitlines()
    visitor = _ImportVisitor(module, path.endswith('__init__.py'))
    visitor.visit(ast.parse(source, path))
    for base, names, lineno, in_function in visitor.imports:
      targets = [f'{base}.{n}' if f'{base}.{n}' in modules else base for n in names] or [base]
      for target in targets:
        target = ours(target)
        if target and target != module:
          edges[module].add(target)
      if in_function and not _marked(lines, lineno):
        unmarked.append(f'{os.path.relpath(path, ROOT)}:{lineno} imports {base} inside a function')
  return edges, unmarked


def layer_of(module: str, layers: List[Tuple[str, List[str]]]) -> int:
  """The index of the layer whose longest prefix matches `module` (-1: none)."""
  best, best_length = -1, -1
  for index, (_, prefixes) in enumerate(layers):
    for prefix in prefixes:
      if (module == prefix or module.startswith(prefix + '.')) and len(prefix) > best_length:
        best, best_length = index, len(prefix)
  return best


def upward_imports(edges: Dict[str, Set[str]], layers: List[Tuple[str, List[str]]]) -> List[str]:
  """'a (layer x) imports b (layer y, above)' for every import pointing up."""
  problems = []
  for module, targets in sorted(edges.items()):
    for target in sorted(targets):
      here, there = layer_of(module, layers), layer_of(target, layers)
      if there > here:
        problems.append(f'{module} ({layers[here][0]}) imports {target} ({layers[there][0]}, a '
                        'higher layer)')
  return problems


def cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
  """The strongly connected components of more than one module (Tarjan's algorithm)."""
  index, low, stack, on_stack, found = {}, {}, [], set(), []
  counter = [0]

  def visit(node: str) -> None:
    index[node] = low[node] = counter[0]
    counter[0] += 1
    stack.append(node)
    on_stack.add(node)
    for target in sorted(edges.get(node, ())):
      if target not in index:
        visit(target)
        low[node] = min(low[node], low[target])
      elif target in on_stack:
        low[node] = min(low[node], index[target])
    if low[node] == index[node]:
      component = []
      while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == node:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for node in sorted(edges):
    if node not in index:
      visit(node)
  return found


@pytest.fixture(scope='module')
def graph():
  with open(os.path.join(ROOT, 'ARCHITECTURE.md'), encoding='utf-8') as f:
    layers = read_layers(f.read())
  modules = find_modules(ROOT)
  edges, unmarked = import_edges(modules)
  return layers, modules, edges, unmarked


def test_every_module_has_a_layer(graph):
  layers, modules, _, _ = graph
  assert [m for m in sorted(modules) if layer_of(m, layers) < 0] == []


def test_imports_point_down_the_layers(graph):
  layers, _, edges, _ = graph
  assert upward_imports(edges, layers) == []


def test_no_import_cycle(graph):
  _, _, edges, _ = graph
  assert cycles(edges) == []


def test_function_level_imports_are_marked(graph):
  assert graph[3] == []


def test_the_checks_fail_on_a_bad_graph():
  layers = [('low', ['pkg.low']), ('high', ['pkg.high'])]
  edges = {'pkg.low.a': {'pkg.high.b'}, 'pkg.high.b': {'pkg.high.c'}, 'pkg.high.c': {'pkg.high.b'}}
  assert upward_imports(edges, layers) == [
      'pkg.low.a (low) imports pkg.high.b (high, a higher layer)']
  assert cycles(edges) == [['pkg.high.b', 'pkg.high.c']]
  with pytest.raises(ValueError, match='expected "name: module ..."'):
    read_layers('```layers\nno colon here\n```')


def test_unmarked_function_level_import_is_found(tmp_path):
  package = tmp_path / 'official'
  package.mkdir()
  (package / '__init__.py').write_text('')
  (package / 'a.py').write_text('def f():\n  from official import b\n')
  (package / 'b.py').write_text('def g():\n  # Function-level: reason.\n  import os\n'
                                '  from official import a\n')
  modules = find_modules(str(tmp_path))
  edges, unmarked = import_edges(modules)
  assert edges['official.a'] == {'official.b'} and edges['official.b'] == {'official.a'}
  assert len(unmarked) == 1 and unmarked[0].endswith('a.py:2 imports official inside a function')


# Size bounds of issue 58: scripts/ holds thin entry points; the training core's modules stay small.
MAX_SCRIPT_LINES = 150
MAX_CORE_MODULE_LINES = 500
LIBRARY_PREFIXES = ('official', 'orbit', 'data_tools', 'tensorflow_models')


def _line_count(path: str) -> int:
  with open(path, encoding='utf-8') as f:
    return sum(1 for _ in f)


def test_no_library_module_imports_a_project(graph):
  """The library (everything but official/projects, official/benchmark and the programs) never
  imports a research project or a benchmark."""
  _, _, edges, _ = graph
  library = [m for m in edges if m.startswith(LIBRARY_PREFIXES)
             and not m.startswith(('official.projects', 'official.benchmark'))]
  assert [f'{m} imports {t}' for m in sorted(library) for t in sorted(edges[m])
          if t.startswith(('official.projects', 'official.benchmark'))] == []


def test_scripts_are_thin_and_core_modules_small():
  long_scripts = [f'{name}: {_line_count(os.path.join(ROOT, "scripts", name))} lines'
                  for name in sorted(os.listdir(os.path.join(ROOT, 'scripts')))
                  if os.path.isfile(os.path.join(ROOT, 'scripts', name))
                  and name.endswith(('.py', '.sh'))
                  and _line_count(os.path.join(ROOT, 'scripts', name)) > MAX_SCRIPT_LINES]
  assert long_scripts == [], f'over {MAX_SCRIPT_LINES} lines: move the logic into a module'
  core = os.path.join(ROOT, 'official', 'core')
  long_core = [f'{name}: {_line_count(os.path.join(core, name))} lines'
               for name in sorted(os.listdir(core)) if name.endswith('.py')
               and _line_count(os.path.join(core, name)) > MAX_CORE_MODULE_LINES]
  assert long_core == [], f'over {MAX_CORE_MODULE_LINES} lines: give a piece a module of its own'
