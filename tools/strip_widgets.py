"""Remove ipywidgets state from notebooks (nbdev_clean keeps it on purpose: its `clean_nb` whitelists `widgets`), and give
every cell an id (nbformat 4.5 requires one; a cell built by hand without it makes every read warn MissingIDFieldWarning).

    python tools/strip_widgets.py [NB ...]          # strip in place (default: every notebook under nbs/)
    python tools/strip_widgets.py --check [NB ...]  # exit 1 and list the notebooks that still hold widget state

Run it after executing a notebook that builds widgets (`jupyter nbconvert --execute` stores the widget models in
`metadata.widgets` and the displayed widgets as `application/vnd.jupyter.widget-view+json` outputs) and before
`nbdev_clean`. The rendered docs have no kernel, so that state is dead weight (and can hold whole figures).
"""
import json, sys, warnings
from pathlib import Path

import nbformat
from nbformat.warnings import MissingIDFieldWarning

ROOT = Path(__file__).resolve().parents[1]
VIEW, STATE = 'application/vnd.jupyter.widget-view+json', 'application/vnd.jupyter.widget-state+json'


def widget_state(nb) -> list[str]:
    "Where `nb` holds widget state: notebook metadata and the indices of cells with widget-view outputs."
    found = [f'metadata.widgets ({STATE})'] if 'widgets' in nb.metadata else []
    for i, c in enumerate(nb.cells):
        if any(VIEW in o.get('data', {}) for o in c.get('outputs', [])): found.append(f'cell {i}: {VIEW} output')
        if 'widgets' in c.get('metadata', {}): found.append(f'cell {i}: metadata.widgets')
    return found


def strip(nb):
    "Drop notebook/cell `widgets` metadata and every output that displays a widget (its text fallback included)."
    nb.metadata.pop('widgets', None)
    for c in nb.cells:
        c.get('metadata', {}).pop('widgets', None)
        if 'outputs' in c: c.outputs = [o for o in c.outputs if VIEW not in o.get('data', {})]
    return nb


def missing_ids(path) -> int:
    "How many cells of the notebook file lack an id (read raw: nbformat's reader quietly fills them in memory)."
    return sum('id' not in c for c in json.loads(Path(path).read_text())['cells'])


def notebooks(args) -> list[Path]:
    return [Path(a) for a in args] or sorted(p for p in (ROOT / 'nbs').rglob('*.ipynb') if '.ipynb_checkpoints' not in p.parts)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    check = '--check' in argv
    bad = []
    for p in notebooks([a for a in argv if a != '--check']):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', MissingIDFieldWarning)          # the missing ids are what this adds
            nb = nbformat.read(p, as_version=4)
        found = widget_state(nb)
        if check:
            if found: bad.append(f'{p}: {", ".join(found)}')
            continue
        if found: strip(nb); print(f'stripped {p}: {", ".join(found)}')
        if (n := missing_ids(p)): print(f'{p}: added {n} cell ids')           # nbformat's reader made them
        if found or n: nbformat.write(nb, p)
    if bad: print('widget state in committed notebooks (run tools/strip_widgets.py):\n' + '\n'.join(bad))
    return int(bool(bad))


if __name__ == '__main__': sys.exit(main())
