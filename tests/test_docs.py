"""The docs: no widget state in committed notebooks, the offline site (every page, its pictures, its API reference,
working links), and the masks page as headless Chromium renders it (skipped without chromium)."""
import fcntl, hashlib, re, sys, tempfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tools'))
import build_docs, browser_check, strip_widgets  # noqa: E402

NBS = sorted(p for p in (ROOT / 'nbs').rglob('*.ipynb') if '.ipynb_checkpoints' not in p.parts)
SITE = ROOT / '_site'


def test_no_widget_state_in_notebooks():
    bad = {p.name: strip_widgets.widget_state(nbformat.read(p, as_version=4)) for p in NBS}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f'widget state in committed notebooks (run python tools/strip_widgets.py): {bad}'


def test_strip_widgets_removes_state_keeps_outputs():
    nb = nbformat.v4.new_notebook(metadata={'widgets': {strip_widgets.STATE: {'state': {}}}})
    view = nbformat.v4.new_output('execute_result', {strip_widgets.VIEW: {'model_id': 'x'}, 'text/plain': 'VBox()'})
    png = nbformat.v4.new_output('display_data', {'image/png': 'iVBOR', 'text/plain': '<Figure>'})
    nb.cells = [nbformat.v4.new_code_cell('w', outputs=[view, png])]
    assert len(strip_widgets.widget_state(nb)) == 2
    strip_widgets.strip(nb)
    assert strip_widgets.widget_state(nb) == [] and nb.cells[0].outputs == [png]


@pytest.fixture(scope='module')
def site():
    "Build `_site/` (or reuse it when newer than every notebook, module and the build script), one build at a time."
    sources = [*NBS, *(ROOT / 'dllm_nb').rglob('*.py'), ROOT / 'tools' / 'build_docs.py']
    key = hashlib.sha1(str(ROOT).encode()).hexdigest()[:12]     # not hash(): str hashes differ between processes (xdist workers)
    with open(Path(tempfile.gettempdir()) / f'dllm_nb_site_{key}.lock', 'w') as lock:   # pytest -n 2: one worker builds, the other waits
        fcntl.flock(lock, fcntl.LOCK_EX)
        index = SITE / 'index.html'
        if not index.exists() or index.stat().st_mtime < max(p.stat().st_mtime for p in sources):
            build_docs.build(SITE)
    return SITE


def expected_page(nb: Path) -> str:
    return 'index.html' if nb.stem == 'index' else re.sub(r'^\d+[a-z]?_', '', nb.stem) + '.html'


def module_of(nb: Path) -> str | None:
    "The module a notebook exports (`#| default_exp name` -> `dllm_nb.name`), or None."
    for c in nbformat.read(nb, as_version=4).cells:
        m = re.search(r'^#\|\s*default_exp\s+(\S+)', c.source, re.M) if c.cell_type == 'code' else None
        if m: return f'dllm_nb.{m.group(1)}'



def test_site_has_every_page_with_pictures_and_api(site):
    pages = {p.name: p.read_text() for p in site.glob('*.html')}
    for nb in NBS:
        name = expected_page(nb)
        assert name in pages, f'{nb.name}: no page {name} in {sorted(pages)}'
        page = pages[name]
        pngs = browser_check.notebook_pngs(nb)
        assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', page)) == pngs, f'{name}: expected {pngs} pictures'
        assert 'widget-state' not in page, f'{name}: carries widget state'
        assert all(f'href="{expected_page(o)}"' in page for o in NBS), f'{name}: sidebar misses a page'
        mod = module_of(nb)
        if mod:
            missing = [f for f in browser_check.exported_functions(mod) if f'id="{f.lower()}"' not in page]
            assert not missing, f'{name}: no show_doc entry for {missing}'


def test_site_links_resolve(site):
    "Every link resolves, anchors included (a method that prose links to needs its `show_doc`)."
    problems, anchors = build_docs.check_site(site)
    assert not problems, problems
    assert not anchors, anchors


def test_check_site_catches_a_missing_anchor(tmp_path):
    (tmp_path / 'a.html').write_text('<h2 id="x">x</h2><a href="a.html#x">ok</a><a href="a.html#cachedcontext.retire">gone</a>')
    test = build_docs.check_site(tmp_path)
    assert test == ([], ['a.html: no anchor a.html#cachedcontext.retire'])


def _words(s: str) -> str: return ' '.join(re.findall(r'[A-Za-z0-9_]+', s))

def test_index_is_the_readme(site):
    "Every paragraph of the README (title and subtitle aside) is on the landing page, in order of its words."
    readme = (ROOT / 'README.md').read_text()
    page = _words(re.sub(r'<[^>]+>', ' ', (site / 'index.html').read_text().split('<main>', 1)[1]))
    paras = [re.sub(r'<!--.*?-->', '', p, flags=re.S) for p in readme.split('\n\n')]   # an HTML comment shows on no page
    body = [p for p in paras if p.strip() and not re.match(r'^(# |> )', p)]
    assert body, 'README.md has no body'
    for para in body:
        text = re.sub(r'\]\([^)]*\)', ']', re.sub(r'^```\w*$', '', para, flags=re.M))   # drop link targets, fences
        assert _words(text) in page, (
            f'index.html lacks README text {para[:80]!r}: nbdev takes the first markdown cell of nbs/index.ipynb '
            'as the title/description and drops the whole cell, so keep `# title` + `> subtitle` alone in it')


@pytest.mark.skipif(browser_check.find_chromium() is None,
                    reason='chromium not installed (apt-get install -y chromium chromium-driver, or set $CHROMIUM)')
def test_site_in_browser(site):
    rep, failures = browser_check.check_page(site, 'masks.html')
    assert not failures, failures
    assert rep['decoded'] >= 4 and 'build_batched_block_mask' in rep['headings']
    import matplotlib.image as mpimg
    shot = mpimg.imread(rep['png'])                                # the artefact: _site/screenshot_masks.png
    assert shot.shape[1] == browser_check.WIDTH and shot.shape[0] > 500
    assert shot[..., :3].std() > 0.05, 'the screenshot is blank'


@pytest.mark.skipif(browser_check.find_chromium() is None, reason='chromium not installed')
@pytest.mark.parametrize('page', ['index.html', 'generate.html', 'harness.html', 'evaluate.html'])
def test_long_code_lines_fit_at_1280px(site, page):
    "At a 1280 px window nothing sticks out of the main column: long code lines wrap (the pages with the longest lines)."
    assert browser_check.overflowing(site / page) == []
