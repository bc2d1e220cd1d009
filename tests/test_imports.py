"""Package hygiene: no module imports another module's private name, and module-level imports form no cycle. Subpackages
(`dllm_nb/dflash/`) count: each of their files is a module of its own (`dflash.head`), their `__init__` the package (`dflash`)."""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / 'dllm_nb'
MODULES = sorted(p for p in PKG.rglob('*.py') if p.relative_to(PKG).as_posix() not in ('__init__.py', '_modidx.py'))
PACKAGES = {'', *('.'.join(p.relative_to(PKG).parts) for p in PKG.rglob('*') if (p / '__init__.py').exists())}   # '' = dllm_nb


def _rel(path: Path) -> Path:
    "`path` inside the package (a file elsewhere, e.g. a test's, counts as a top-level module)."
    return path.relative_to(PKG) if path.is_relative_to(PKG) else Path(path.name)


def module_name(path: Path) -> str:
    "`dflash.head` for dllm_nb/dflash/head.py, `dflash` for dllm_nb/dflash/__init__.py, `core` for dllm_nb/core.py."
    parts = _rel(path).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def resolve(path: Path, node: ast.ImportFrom) -> str:
    "The package module an import in `path` names (`from ..core import x` in dflash/head.py -> `core`; '' = dllm_nb itself)."
    if not node.level: return (node.module or '').removeprefix('dllm_nb.').removeprefix('dllm_nb')
    base = list(_rel(path).parent.parts)
    base = base[:len(base) - (node.level - 1)]
    return '.'.join(base + ([node.module] if node.module else []))


def _ours(node) -> bool: return isinstance(node, ast.ImportFrom) and bool(node.level or (node.module or '').startswith('dllm_nb'))


def imports(path: Path, top_level_only: bool = False):
    "`(module, name)` for every `from .x import name` / `from ..x import name` / `from dllm_nb.x import name` in `path`."
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if _ours(node):
            for a in node.names: yield resolve(path, node), a.name


def _join(pkg: str, name: str) -> str: return f'{pkg}.{name}' if pkg else name


def module_aliases(path: Path) -> dict:
    "Local name -> package module, for `from . import x [as y]`, `from dllm_nb import x`, `import dllm_nb.x [as y]`."
    out = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if _ours(node) and resolve(path, node) in PACKAGES | {''}:
            out |= {a.asname or a.name: _join(resolve(path, node), a.name) for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.asname: a.name.removeprefix('dllm_nb.') for a in node.names if a.name.startswith('dllm_nb.') and a.asname}
    return out


def private_uses(path: Path) -> list:
    "`module._name` for every private name of another package module that `path` imports or reads through a module alias."
    tree, me = ast.parse(path.read_text()), module_name(path)
    pkg = lambda m: m in PACKAGES | {''}                                  # `from . import x`: x is a module of that package
    bad = [f'{m}.{n}' for m, n in imports(path) if n.startswith('_') and not pkg(m) and m != me]
    bad += [_join(m, n) for m, n in imports(path) if n.startswith('_') and pkg(m)]    # `from . import _modidx`
    alias = module_aliases(path)
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


def test_private_names_across_subpackage_modules_are_caught(tmp_path, monkeypatch):
    "Modules of one subpackage are modules too: `from .drafter import _load` in dflash/head.py is a private cross-module import."
    (tmp_path / 'dflash').mkdir(); f = tmp_path / 'dflash' / 'head.py'
    f.write_text('from .drafter import _load, public\nfrom ..core import _seed\nfrom . import speculative as s\ns._copy(); s.ok\n')
    monkeypatch.setitem(globals(), 'PKG', tmp_path)
    assert private_uses(f) == ['dflash.drafter._load', 'core._seed', 'dflash.speculative._copy']


def test_subpackage_imports_resolve():
    node = lambda s: ast.parse(s).body[0]
    head = PKG / 'dflash' / 'head.py'
    assert [resolve(head, node(s)) for s in ('from .drafter import x', 'from ..core import x', 'from dllm_nb.dflash.mode import x',
                                              'from . import x')] == ['dflash.drafter', 'core', 'dflash.mode', 'dflash']
    assert ('dflash.drafter', 'DFlashDrafter') in set(imports(head)) and module_name(head) == 'dflash.head'
    assert {'dflash.drafter', 'dflash.speculative', 'sampling'} <= all_imports(head)
    assert {'dflash.drafter', 'dflash.cli'} <= all_imports(PKG / 'dflash' / '__init__.py')          # `from . import drafter, ..., cli`
    assert 'dflash' in all_imports(PKG / 'modes.py') and 'dflash' in all_imports(PKG / 'generate.py')  # the package's __init__ runs


def test_module_level_imports_have_no_cycle():
    graph = {module_name(p): all_imports(p, top_level_only=True) for p in MODULES}
    state = {}
    def visit(m, stack):
        if state.get(m) == 'done': return
        assert state.get(m) != 'open', f"import cycle: {' -> '.join(stack + [m])}"
        state[m] = 'open'
        for n in sorted(graph.get(m, ())): visit(n, stack + [m])
        state[m] = 'done'
    for m in graph: visit(m, [])


NAMES = {module_name(p) for p in MODULES}


def all_imports(path: Path, top_level_only: bool = False) -> set:
    """Every package module `path` imports, at any depth of its code (lazy imports inside functions too, unless
    `top_level_only`); importing `dflash.head` from outside `dflash` runs `dflash/__init__` first, so it counts too."""
    me, out = module_name(path), set()
    for m, n in imports(path, top_level_only):
        t = _join(m, n) if m in PACKAGES and (_join(m, n) in NAMES or not m) else m   # `from . import mdlm, hybrid`: the modules
        parts = t.split('.')
        out |= {t} | {p for p in ('.'.join(parts[:i]) for i in range(1, len(parts))) if not (me == p or me.startswith(p + '.'))}
    return out - {''}


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
    graph = {module_name(p): all_imports(p) for p in MODULES}
    assert cycle(graph) is None, f"import cycle: {' -> '.join(cycle(graph))}"
    assert cycle(dict(a={'b'}, b={'c'}, c={'a'})) == ['a', 'b', 'c', 'a']      # the check can fail


def test_lazy_imports_count(tmp_path):
    "A function-level import is an edge like any other: a cycle through one is caught."
    (tmp_path / 'a.py').write_text('from .b import f\n')
    (tmp_path / 'b.py').write_text('def f():\n    from dllm_nb.a import g\n    return g\n')
    graph = {p.stem: all_imports(p) for p in tmp_path.glob('*.py')}
    assert cycle(graph) in (['a', 'b', 'a'], ['b', 'a', 'b'])


LOOKUP_LAYER = ('trainer', 'generate', 'train', 'eval', 'harness')   # config names modes only in its legacy-key map and its default
SCORING_LAYER = ('eval', 'harness')                             # issue 50: a mode's scoring is a hook on its record


def _strings(tree) -> set:
    "String constants of a module, except the migration map of its `moved_names(...)` (old name -> the module it moved to)."
    moved = {id(n) for c in ast.walk(tree) if isinstance(c, ast.Call) and getattr(c.func, 'id', None) == 'moved_names'
             for n in ast.walk(c)}
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in moved}


def test_the_lookup_layer_names_no_mode():
    "Issues 23, 50: trainer, generate, train, eval and the harness look modes up in the registry; no mode name appears in their code as a string."
    from dllm_nb.modes import mode_names
    for m in LOOKUP_LAYER:
        strings = _strings(ast.parse((PKG / f'{m}.py').read_text()))
        assert not strings & set(mode_names()), (m, strings & set(mode_names()))
    assert _strings(ast.parse("x = 'mdlm'\n__getattr__ = moved_names(__name__, dict(f='ar'))")) == {'mdlm'}   # the check can fail


def scoring_leaks(path: Path) -> set:
    "Model classes a module names, and mode modules it imports: what a scoring layer that only reads mode records never needs."
    from dllm_nb.modes import MODES
    classes = {c.__name__ for m in MODES.values() for c in m.model_classes}
    tree = ast.parse(path.read_text())
    named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {a.name for _, a in ((0, a) for n in ast.walk(tree)
             if isinstance(n, ast.ImportFrom) for a in n.names)}
    modes = {m.split('.')[0] for m in all_imports(path)} & set(MODES)
    return (named & classes) | modes


def test_eval_and_harness_never_test_a_model_class(tmp_path):
    "Issue 50: likelihood and loglikelihood come from the mode record's hooks; eval and the harness name no model class, import no mode."
    for m in SCORING_LAYER: assert not scoring_leaks(PKG / f'{m}.py'), (m, scoring_leaks(PKG / f'{m}.py'))
    (tmp_path / 'ladder.py').write_text('from .block_diffusion import BlockDiffusionLM\ndef f(m): return isinstance(m, CausalLM)\n')
    assert scoring_leaks(tmp_path / 'ladder.py') == {'BlockDiffusionLM', 'CausalLM', 'block_diffusion'}   # the check can fail
