"""Package hygiene: no module imports another module's private name, and module-level imports form no cycle."""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / 'dllm_nb'
MODULES = sorted(p for p in PKG.glob('*.py') if p.name not in ('__init__.py', '_modidx.py'))


def imports(path: Path, top_level_only: bool = False):
    "`(module, name)` for every `from .x import name` / `from dllm_nb.x import name` in `path`."
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or '').startswith('dllm_nb')):
            mod = (node.module or '').removeprefix('dllm_nb.').removeprefix('dllm_nb')
            for a in node.names: yield mod, a.name


def module_aliases(tree: ast.AST) -> dict:
    "Local name -> package module, for `from . import x [as y]`, `from dllm_nb import x`, `import dllm_nb.x [as y]`."
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or '') in ('', 'dllm_nb') and (node.level or node.module):
            out |= {a.asname or a.name: a.name for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.asname: a.name.removeprefix('dllm_nb.') for a in node.names if a.name.startswith('dllm_nb.') and a.asname}
    return out


def private_uses(path: Path) -> list:
    "`module._name` for every private name of another package module that `path` imports or reads through a module alias."
    tree, me = ast.parse(path.read_text()), path.stem
    bad = [f'{m}.{n}' for m, n in imports(path) if n.startswith('_') and m and m != me]
    bad += [f'{m}.{n}' for m, n in imports(path) if n.startswith('_') and not m]          # `from . import _modidx`
    alias = module_aliases(tree)
    bad += [f'{alias[n.value.id]}.{n.attr}' for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in alias
            and n.attr.startswith('_') and not n.attr.startswith('__') and alias[n.value.id] != me]
    return bad


def test_no_private_names_cross_modules():
    "Issue 23: no module imports another module's private name, or reads one through a module alias."
    bad = [f'{p.name}: {u}' for p in MODULES for u in private_uses(p)]
    assert not bad, f"private names used across modules (make them public in the lower module, with a docstring): {bad}"


def test_the_check_can_fail(tmp_path):
    f = tmp_path / 'x.py'
    f.write_text('from .generate import _hidden\nfrom dllm_nb.models import public\nfrom . import config as c\n'
                 'import dllm_nb.core as core\nc._secret(); core.__name__; c.public\nfrom dllm_nb.sampling import (a,\n    _b)\n')
    assert private_uses(f) == ['generate._hidden', 'sampling._b', 'config._secret']


def test_module_level_imports_have_no_cycle():
    graph = {p.stem: {m for m, _ in imports(p, top_level_only=True) if m} for p in MODULES}
    state = {}
    def visit(m, stack):
        if state.get(m) == 'done': return
        assert state.get(m) != 'open', f"import cycle: {' -> '.join(stack + [m])}"
        state[m] = 'open'
        for n in sorted(graph.get(m, ())): visit(n, stack + [m])
        state[m] = 'done'
    for m in graph: visit(m, [])


def all_imports(path: Path) -> set:
    "Every package module `path` imports, at any depth of its code (lazy imports inside functions too)."
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or '').startswith('dllm_nb')):
            mod = (node.module or '').removeprefix('dllm_nb.').removeprefix('dllm_nb')
            out |= {mod} if mod else {a.name for a in node.names}                 # `from . import mdlm, hybrid`
    return out


def cycle(graph: dict) -> list | None:
    "One import cycle of `graph` (module -> imported modules), or None."
    state = {}
    def visit(m, stack):
        if state.get(m) == 'done': return None
        if state.get(m) == 'open': return stack[stack.index(m):] + [m]
        state[m] = 'open'
        for n in sorted(graph.get(m, ())):
            if n in graph and (c := visit(n, stack + [m])): return c
        state[m] = 'done'
    return next((c for m in graph if (c := visit(m, []))), None)


def test_no_cycle_even_through_lazy_imports():
    "Issue 23: the whole package's import graph, lazy (function-level) imports included, has no cycle; no module is exempt."
    graph = {p.stem: all_imports(p) for p in MODULES}
    assert cycle(graph) is None, f"import cycle: {' -> '.join(cycle(graph))}"
    assert cycle(dict(a={'b'}, b={'c'}, c={'a'})) == ['a', 'b', 'c', 'a']      # the check can fail


def test_lazy_imports_count(tmp_path):
    "A function-level import is an edge like any other: a cycle through one is caught."
    (tmp_path / 'a.py').write_text('from .b import f\n')
    (tmp_path / 'b.py').write_text('def f():\n    from dllm_nb.a import g\n    return g\n')
    graph = {p.stem: all_imports(p) for p in tmp_path.glob('*.py')}
    assert cycle(graph) in (['a', 'b', 'a'], ['b', 'a', 'b'])


LOOKUP_LAYER = ('trainer', 'generate', 'train')                # config names modes only in its legacy-key map and its default


def test_the_lookup_layer_names_no_mode():
    "Issue 23: trainer, generate and train look modes up in the registry; no mode name appears in their code as a string."
    from dllm_nb.modes import mode_names
    for m in LOOKUP_LAYER:
        strings = {n.value for n in ast.walk(ast.parse((PKG / f'{m}.py').read_text()))
                   if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert not strings & set(mode_names()), (m, strings & set(mode_names()))
