"""Offline docs build: the same notebooks nbdev_docs renders, as a static HTML site without quarto.

    python tools/build_docs.py [--out _site]

1. nbdev's own doc processors (`nbdev.quarto.proc_nbs`) write `_proc/` (front matter, hidden cells removed,
   `show_doc` API reference cells inserted and executed), exactly what quarto would render. (We call it directly:
   the `nbdev_proc_nbs` command first tries to install quarto with sudo and `pip install -e` the project.)
2. Each processed notebook is rendered with nbconvert's `basic` HTML template from its stored outputs
   (pictures included; nothing is re-executed), inputs of `#| echo: false` cells dropped, and wrapped in a
   page with a sidebar linking every page. `index.ipynb` becomes `index.html`.
"""
import argparse, html, re, shutil, subprocess, sys
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / 'nbs'

CSS = """
body{margin:0;font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;line-height:1.5;color:#222}
nav{position:fixed;top:0;left:0;bottom:0;width:230px;overflow-y:auto;background:#f6f7f9;border-right:1px solid #ddd;padding:1rem}
nav a{display:block;padding:.2rem .4rem;color:#235;text-decoration:none;border-radius:4px;font-size:.95rem}
nav a.active{background:#dde6f3;font-weight:600}
nav h2{font-size:1.1rem;margin:.2rem 0 1rem}
main{margin-left:262px;max-width:980px;padding:1rem 2rem 4rem}
pre,code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.88rem}
div.jp-InputArea pre,div.input_area pre{background:#f5f5f5;padding:.6rem;border-radius:4px;overflow-x:auto}
.jp-OutputArea pre{padding:.3rem .6rem;border-left:2px solid lightsalmon;overflow-x:auto}
img{max-width:100%}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .5rem}
.description{font-style:italic;font-size:1.25rem;opacity:.7}
.jp-InputPrompt,.jp-OutputPrompt,.prompt{display:none}
"""

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{title} – dllm_nb</title>
<style>{css}</style></head><body>
<nav><h2><a href="index.html">dllm_nb</a></h2>{nav}</nav>
<main><h1>{title}</h1>{desc}{body}</main></body></html>"""


def front_matter(nb):
    "Title and description from the raw front-matter cell nbdev writes (or the first H1)."
    title, desc = None, ''
    for c in nb.cells:
        if c.cell_type == 'raw' and c.source.startswith('---'):
            for line in c.source.splitlines():
                if line.startswith('title:'): title = line.split(':', 1)[1].strip().strip("'\"")
                if line.startswith('description:'): desc = line.split(':', 1)[1].strip().strip("'\"")
    return title, desc


def clean(nb):
    "Drop front matter, drop inputs of `echo: false` cells, strip `#|` directive lines from shown code."
    cells = []
    for c in nb.cells:
        if c.cell_type == 'raw': continue
        if c.cell_type == 'code':
            lines = c.source.splitlines()
            if any(re.match(r'#\|\s*echo:\s*false', l) for l in lines): c.metadata['transient'] = {'remove_source': True}
            c.source = '\n'.join(l for l in lines if not l.startswith('#|'))
        cells.append(c)
    nb.cells = cells
    return nb


def render(nb_path, pages, out):
    nb = nbformat.read(nb_path, as_version=4)
    title, desc = front_matter(nb)
    nb = clean(nb)
    if title is None:
        m = next((re.search(r'^# (.+)$', c.source, re.M) for c in nb.cells if c.cell_type == 'markdown'), None)
        title = m.group(1) if m else nb_path.stem
    ex = HTMLExporter(template_name='basic', exclude_input_prompt=True, exclude_output_prompt=True)
    ex.register_preprocessor(_RemoveSource, enabled=True)
    body, _ = ex.from_notebook_node(nb)
    name = 'index.html' if nb_path.stem == 'index' else nb_path.stem + '.html'
    nav = ''.join(f'<a href="{n}" class="{"active" if n == name else ""}">{html.escape(t)}</a>' for n, t in pages)
    (out / name).write_text(PAGE.format(title=html.escape(title), css=CSS, nav=nav, body=body,
                                        desc=f'<p class="description">{html.escape(desc)}</p>' if desc else ''))
    return name


from nbconvert.preprocessors import Preprocessor
class _RemoveSource(Preprocessor):
    "Empty the input of cells marked for source removal (nbdev's `echo: false`)."
    def preprocess_cell(self, cell, resources, index):
        if cell.get('metadata', {}).get('transient', {}).get('remove_source'): cell.source = ''
        return cell, resources


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=str(ROOT / '_site'))
    args = ap.parse_args()
    import os
    from nbdev.quarto import proc_nbs
    os.chdir(ROOT)
    proc_nbs(NBS, n_workers=0)
    proc = ROOT / '_proc'
    nbs = sorted(p for p in proc.rglob('*.ipynb') if not p.name.startswith(('_', '.')))
    nbs.sort(key=lambda p: (p.stem != 'index', str(p.relative_to(proc))))
    out = Path(args.out); shutil.rmtree(out, ignore_errors=True); out.mkdir(parents=True)
    pages = []
    for p in nbs:
        t, _ = front_matter(nbformat.read(p, as_version=4))
        pages.append(('index.html' if p.stem == 'index' else p.stem + '.html', t or p.stem))
    for p in nbs: render(p, pages, out)
    print(f'wrote {len(nbs)} pages to {out}')


if __name__ == '__main__': main()
