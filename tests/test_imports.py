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


def test_no_private_names_cross_modules():
    bad = [f'{p.name}: from {m} import {n}' for p in MODULES for m, n in imports(p) if n.startswith('_') and m]
    assert not bad, bad


def test_the_check_can_fail(tmp_path):
    f = tmp_path / 'x.py'; f.write_text('from .generate import _hidden\nfrom dllm_nb.models import public\n')
    assert [n for m, n in imports(f) if n.startswith('_')] == ['_hidden']


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
