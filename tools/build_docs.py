"""Offline docs build: the same notebooks nbdev_docs renders, as a static HTML site without quarto.

    python tools/build_docs.py [--out _site] [--no-check]

1. nbdev's own doc processors (`nbdev.quarto.proc_nbs`) write `_proc/` (front matter, hidden cells removed,
   `show_doc` API reference cells inserted and executed), exactly what quarto would render. (We call it directly:
   the `nbdev_proc_nbs` command first tries to install quarto with sudo and `pip install -e` the project.)
   One deviation: of a demo cell that nbdev runs only because it holds an import, only the imports run
   (see `_run_imports_only`); nbdev would run the whole cell and fail on names from unexecuted cells.
2. Each processed notebook is rendered with nbconvert's `basic` HTML template from its stored outputs
   (pictures embedded as data URIs; nothing is re-executed), inputs of `#| echo: false` cells dropped, and
   wrapped in a page with a sidebar linking every page. Pages are named as quarto names them (the front
   matter's `output-file`: `03_masks.ipynb` -> `masks.html`, `index.ipynb` -> `index.html`), so nbdev's
   cross-reference links (`masks.html#build_batched_block_mask`, written against `doc_host`) are made relative
   and resolve inside the site; heading ids are lower-cased as quarto does.
3. `check_site` lists links to missing pages, links to missing anchors (nbdev links a `Class.method` mention to
   `page.html#class.method`, which exists only where a notebook calls `show_doc` on the method) and images neither
   embedded nor present; the build fails on any (`--no-check` skips it).
Code wraps instead of scrolling sideways (`pre-wrap`): long lines stay readable at a 1280 px window.
"""
import argparse, contextlib, ast, html, json, os, re, shutil, sys
from configparser import ConfigParser
from pathlib import Path

import nbformat, yaml
from nbconvert import HTMLExporter
from nbconvert.preprocessors import Preprocessor

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / 'nbs'

CSS = """
body{margin:0;font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;line-height:1.5;color:#222}
nav{position:fixed;top:0;left:0;bottom:0;width:230px;overflow-y:auto;background:#f6f7f9;border-right:1px solid #ddd;padding:1rem}
nav a{display:block;padding:.2rem .4rem;color:#235;text-decoration:none;border-radius:4px;font-size:.95rem}
nav a.active{background:#dde6f3;font-weight:600}
nav h2{font-size:1.1rem;margin:.2rem 0 1rem}
main{margin-left:262px;max-width:1100px;padding:1rem 1.5rem 4rem}
pre,code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.84rem}
pre{white-space:pre-wrap;overflow-wrap:anywhere}
code,td,th{overflow-wrap:anywhere}
div.jp-InputArea pre,div.input_area pre,.jp-RenderedMarkdown pre,.text_cell_render pre{background:#f5f5f5;padding:.6rem;border-radius:4px}
.jp-OutputArea pre,.output_text pre{padding:.3rem .6rem;border-left:2px solid lightsalmon}
img{max-width:100%}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .5rem}
.description{font-style:italic;font-size:1.25rem;opacity:.7}
.jp-InputPrompt,.jp-OutputPrompt,.prompt{display:none}
a.anchor-link{visibility:hidden;margin-left:.3rem;text-decoration:none}
h1:hover a.anchor-link,h2:hover a.anchor-link,h3:hover a.anchor-link,h4:hover a.anchor-link{visibility:visible}
"""

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{title_text} – dllm_nb</title>
<style>{css}</style></head><body>
<nav><h2><a href="index.html">dllm_nb</a></h2>{nav}</nav>
<main><h1>{title}</h1>{desc}{body}</main></body></html>"""


def front_matter(nb) -> dict:
    "The YAML front matter nbdev writes into the first raw cell (`title`, `description`, `output-file`), or {}."
    for c in nb.cells:
        if c.cell_type == 'raw' and c.source.startswith('---'):
            return yaml.safe_load(c.source.strip().strip('-')) or {}
    return {}


def page_name(nb_path: Path, fm: dict) -> str:
    "The page quarto would write: the front matter's `output-file`, else the notebook's stem."
    return fm.get('output-file') or ('index.html' if nb_path.stem == 'index' else nb_path.stem + '.html')


def inline_md(s: str) -> str:
    "Escape a front-matter string and render its `code` spans."
    return re.sub(r'`([^`]+)`', r'<code>\1</code>', html.escape(s))


def clean(nb):
    """Drop front matter, drop inputs of `echo: false` cells, strip `#|` directive lines from shown code, drop the
    (empty) widget state nbdev's doc processor adds (no kernel behind a static page)."""
    nb.metadata.pop('widgets', None)
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


class _RemoveSource(Preprocessor):
    "Empty the input of cells marked for source removal (nbdev's `echo: false`)."
    def preprocess_cell(self, cell, resources, index):
        if cell.get('metadata', {}).get('transient', {}).get('remove_source'): cell.source = ''
        return cell, resources


def doc_base() -> str:
    "The hosted site's address nbdev writes cross-reference links against (`doc_host` + `doc_baseurl` + '/')."
    cfg = ConfigParser(delimiters=['=']); cfg.read(ROOT / 'settings.ini')
    d = cfg['DEFAULT']
    return d.get('doc_host', '').rstrip('/') + '/' + d.get('doc_baseurl', '').strip('/') + '/'


def postprocess(body: str, names: dict[str, str], base: str) -> str:
    """Make links into the site relative (`base` prefix dropped, `NN_x.ipynb` -> its page, a page in a folder such as
    `tutorials/why.html` -> `why.html`), heading ids lower-case,
    and apply pandoc link attributes (`[source](url){target="_blank" style=...}`, which nbconvert leaves as text)."""
    body = body.replace(f'href="{base}', 'href="')
    body = re.sub(r'(<a\s[^>]*)>([^<]*)</a>\{((?:\s*[\w-]+="[^"]*")+)\s*\}', r'\1 \3>\2</a>', body)
    body = re.sub(r'href="([\w./-]+)\.ipynb(#[^"]*)?"',
                  lambda m: f'href="{names.get(Path(m[1]).name, m[1] + ".html")}{m[2] or ""}"', body)
    pages = set(names.values())                 # quarto keeps a folder's pages in it (tutorials/why.html); this site is flat
    body = re.sub(r'href="(?:[\w-]+/)+([\w-]+\.html)(#[^"]*)?"',
                  lambda m: f'href="{m[1]}{m[2] or ""}"' if m[1] in pages else m[0], body)
    body = re.sub(r'(<h[1-6] id=")([^"]+)"', lambda m: m[1] + m[2].lower() + '"', body)
    return re.sub(r'(class="anchor-link" href="#)([^"]+)"', lambda m: m[1] + m[2].lower() + '"', body)


def render(nb_path: Path, pages: list[tuple[str, str]], names: dict[str, str], out: Path) -> str:
    nb = nbformat.read(nb_path, as_version=4)
    fm = front_matter(nb)
    nb = clean(nb)
    title = fm.get('title')
    if title is None:
        m = next((re.search(r'^# (.+)$', c.source, re.M) for c in nb.cells if c.cell_type == 'markdown'), None)
        title = m.group(1) if m else nb_path.stem
    ex = HTMLExporter(template_name='basic', exclude_input_prompt=True, exclude_output_prompt=True)
    ex.register_preprocessor(_RemoveSource, enabled=True)
    body, _ = ex.from_notebook_node(nb)
    name = page_name(nb_path, fm)
    nav = ''.join(f'<a href="{n}" class="{"active" if n == name else ""}">{html.escape(t)}</a>' for n, t in pages)
    desc = fm.get('description', '')
    (out / name).write_text(PAGE.format(title=inline_md(str(title)), title_text=html.escape(str(title)), css=CSS,
                                        nav=nav, body=postprocess(body, names, doc_base()),
                                        desc=f'<p class="description">{inline_md(desc)}</p>' if desc else ''))
    return name


_SHOW_DIRECTIVES = {'export', 'exports', 'exporti', 'exec_doc'}

def _run_imports_only():
    """Make nbdev's doc executor run only the import statements of demo cells.

    nbdev's `exec_show_docs` executes every cell that contains an import (to bring names into scope for
    `show_doc`), so a demo cell that also uses names from earlier, unexecuted cells fails the whole build
    (nbdev warns "Found cells containing imports and other code"). The API reference only needs the imports.
    Cells that are exported, `exec_doc`, or call `show_doc` run as nbdev runs them."""
    import nbdev.processors as P
    if getattr(P.exec_show_docs, '_imports_only', False): return
    nbdev_call = P.exec_show_docs.__call__
    def call(self, cell):
        trees = cell.parsed_() if cell.cell_type == 'code' else None
        demo = (trees and hasattr(self, 'k') and self.nb.has_docs_ and not cell.directives_.keys() & _SHOW_DIRECTIVES
                and not P._show_docs(trees) and P._ast_contains(trees, (ast.Import, ast.ImportFrom))
                and cell.directives_.get('eval:', [''])[0].lower() != 'false')
        if not demo: return nbdev_call(self, cell)
        src = '\n'.join(ast.unparse(t) for t in trees if isinstance(t, (ast.Import, ast.ImportFrom)))
        if src: self.k.run(src)
        if self.k.exc: raise Exception(f"docs: the imports of cell {cell.idx_} failed:\n{src}") from self.k.exc
    P.exec_show_docs.__call__, P.exec_show_docs._imports_only = call, True


def check_site(out: Path) -> tuple[list[str], list[str]]:
    """`(errors, warnings)` as 'page: problem'. Errors: links to missing pages, images neither embedded nor present.
    Warnings: links to a missing anchor of an existing page (nbdev links `Class.method` mentions to
    `page.html#class.method`, which exists only where the notebook calls `show_doc` on the method)."""
    pages = {p.name: p.read_text() for p in out.glob('*.html')}
    ids = {n: set(re.findall(r'\sid="([^"]+)"', t)) for n, t in pages.items()}
    problems, anchors = [], []
    for n, t in pages.items():
        for href in re.findall(r'<a\s[^>]*href="([^"]*)"', t):
            if re.match(r'^[a-z][\w+.-]*:', href): continue                 # http(s):, mailto:, data:
            target, _, anchor = href.partition('#')
            target = target or n
            if target not in pages and not (out / target).exists(): problems.append(f'{n}: link to missing {href}')
            elif anchor and target in pages and anchor not in ids[target]: anchors.append(f'{n}: no anchor {href}')
        for src in re.findall(r'<img\s[^>]*src="([^"]*)"', t):
            if not src.startswith('data:image/') and not (out / src).exists(): problems.append(f'{n}: image {src[:60]}')
    return problems, anchors


@contextlib.contextmanager
def _registries_kept():
    """The doc executor re-runs export cells in its own namespace, and a cell that registers a mode
    (`register_mode(...)`) would replace the package's record with the notebook's copy in this process (a test run
    builds the docs in-process): restore the registries afterwards."""
    import dllm_nb.modes                                        # the package's records: what to keep
    from dllm_nb.core import STREAMS
    from dllm_nb.registry import MODES
    saved = [(d, dict(d)) for d in (MODES, STREAMS)]
    try: yield
    finally:
        for d, old in saved: d.clear(); d.update(old)


def add_missing_ids(proc: Path) -> None:
    "nbdev's processors insert cells (`show_doc`, its warning) without ids: give them ids, so reading `_proc/` is clean."
    from nbformat.corpus.words import generate_corpus_id
    for p in proc.rglob('*.ipynb'):
        nb = json.loads(p.read_text())
        missing = [c for c in nb['cells'] if 'id' not in c]
        for c in missing: c['id'] = generate_corpus_id()
        if missing: p.write_text(json.dumps(nb, indent=1, ensure_ascii=False))


def build(out: Path = ROOT / '_site') -> list[str]:
    "Process the notebooks with nbdev and render every page into `out`; returns the page names written."
    from nbdev.quarto import proc_nbs
    os.chdir(ROOT)
    _run_imports_only()
    with _registries_kept(): proc_nbs(NBS, n_workers=0)
    proc = ROOT / '_proc'
    add_missing_ids(proc)
    nbs = sorted(p for p in proc.rglob('*.ipynb') if not p.name.startswith(('_', '.')))
    nbs.sort(key=lambda p: (p.stem != 'index', str(p.relative_to(proc))))
    shutil.rmtree(out, ignore_errors=True); out.mkdir(parents=True)
    fms = {p: front_matter(nbformat.read(p, as_version=4)) for p in nbs}
    pages = [(page_name(p, fm), str(fm.get('title') or p.stem)) for p, fm in fms.items()]
    names = {p.stem: page_name(p, fm) for p, fm in fms.items()}
    return [render(p, pages, names, out) for p in nbs]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=str(ROOT / '_site'))
    ap.add_argument('--no-check', action='store_true', help='skip the broken-link / image check')
    args = ap.parse_args()
    out = Path(args.out).resolve()
    written = build(out)
    print(f'wrote {len(written)} pages to {out}: {" ".join(written)}')
    if args.no_check: return
    problems, anchors = check_site(out)
    if problems or anchors: sys.exit('site check failed:\n  ' + '\n  '.join(problems + anchors))


if __name__ == '__main__': main()
