"""Open a docs page in headless Chromium and check what a reader would see: every picture decoded, the API reference.

    python tools/browser_check.py [--site _site] [--build] [--page masks.html] [--screenshot PNG]

Builds the site with tools/build_docs.py when `--build` is given or the page is missing. Then, with the plain
Chromium CLI (no selenium):
1. `--dump-dom` of a copy of the page with a small script appended that, after `load`, records what the browser
   made of it (images present / decoded with a non-zero natural size, heading ids, the signature text of the API
   reference, the section's offset) into a `<pre id="browser-check">` the dump then carries;
2. `--screenshot` of the page itself, cropped to start at the pictures section (default
   `_site/screenshot_<page>.png`).
Checks: as many decoded images as the source notebook has PNG outputs; a heading for every function the module
exports (nbdev's `show_doc`); the `build_batched_block_mask(prefix_len: ...)` signature text. Exit 1 on failure.
Needs `chromium` (Debian: `apt-get install -y chromium`); the path can be given as $CHROMIUM.
"""
import argparse, inspect, importlib, json, os, re, shutil, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--hide-scrollbars',
         '--disable-dev-shm-usage', '--no-first-run', '--mute-audio']
WIDTH = 1280

PROBE = """<pre id="browser-check"></pre><script>
window.addEventListener('load', () => {
  const imgs = [...document.querySelectorAll('main img')];
  const sec = document.getElementById(%(section)s);
  document.getElementById('browser-check').textContent = JSON.stringify({
    images: imgs.length,
    decoded: imgs.filter(i => i.complete && i.naturalWidth > 0 && i.naturalHeight > 0).length,
    sizes: imgs.map(i => [i.naturalWidth, i.naturalHeight]),
    headings: [...document.querySelectorAll('main h2[id], main h3[id], main h4[id]')].map(h => h.id),
    text: document.querySelector('main').innerText,
    section_top: sec ? Math.round(sec.getBoundingClientRect().top + window.scrollY) : null,
    height: document.documentElement.scrollHeight});
});
</script>"""


def find_chromium() -> str | None:
    "The Chromium binary: $CHROMIUM, else the first of chromium / chromium-browser / google-chrome on PATH."
    if os.environ.get('CHROMIUM'): return shutil.which(os.environ['CHROMIUM'])
    return next((p for p in map(shutil.which, ('chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable')) if p), None)


def run_chromium(args: list[str], timeout: int = 120) -> str:
    "Run headless Chromium with a throw-away profile (parallel runs do not share a lock); returns stdout."
    exe = find_chromium()
    if exe is None: raise FileNotFoundError('chromium not found: apt-get install -y chromium (or set $CHROMIUM)')
    with tempfile.TemporaryDirectory(prefix='dllm_nb_chromium_') as profile:
        r = subprocess.run([exe, *FLAGS, f'--user-data-dir={profile}', *args], capture_output=True, text=True,
                           timeout=timeout)
    if r.returncode != 0: raise RuntimeError(f'chromium {args[:2]} exited {r.returncode}:\n{r.stderr[-2000:]}')
    return r.stdout


def dom_report(page: Path, section: str) -> dict:
    "What the browser rendered: load a probed copy of `page` and read the probe's JSON back from `--dump-dom`."
    page = page.resolve()
    with tempfile.TemporaryDirectory(prefix='dllm_nb_probe_') as d:
        probed = Path(d) / page.name                      # images are data URIs, so the copy renders the same
        probed.write_text(page.read_text().replace('</body>', PROBE % dict(section=json.dumps(section)) + '</body>'))
        dom = run_chromium(['--virtual-time-budget=5000', f'--window-size={WIDTH},1000', '--dump-dom', probed.as_uri()])
    m = re.search(r'<pre id="browser-check">(.*?)</pre>', dom, re.S)
    if not m or not m.group(1).strip(): raise RuntimeError(f'the probe did not run in {page.name} (no result in the DOM)')
    import html
    return json.loads(html.unescape(m.group(1)))


OVERFLOW_PROBE = """<pre id="overflow-check"></pre><script>
window.addEventListener('load', () => {
  const m = document.querySelector('main'), right = m.getBoundingClientRect().right - parseFloat(getComputedStyle(m).paddingRight);
  const out = e => e.getBoundingClientRect().right > right + 1;
  document.getElementById('overflow-check').textContent = JSON.stringify([...m.querySelectorAll('*')]
    .filter(e => e.id !== 'overflow-check' && out(e) && !(e.parentElement && out(e.parentElement)))
    .map(e => `${e.tagName.toLowerCase()}: ${e.textContent.trim().slice(0, 60)}`));
});
</script>"""


def overflowing(page: Path) -> list[str]:
    "Elements of `page`'s main column that stick out of it at a `WIDTH` px window (the outermost of each), as 'tag: text'."
    page = page.resolve()
    with tempfile.TemporaryDirectory(prefix='dllm_nb_probe_') as d:
        probed = Path(d) / page.name
        probed.write_text(page.read_text().replace('</body>', OVERFLOW_PROBE + '</body>'))
        dom = run_chromium(['--virtual-time-budget=5000', f'--window-size={WIDTH},1000', '--dump-dom', probed.as_uri()])
    m = re.search(r'<pre id="overflow-check">(.*?)</pre>', dom, re.S)
    if not m or not m.group(1).strip(): raise RuntimeError(f'the overflow probe did not run in {page.name}')
    import html
    return json.loads(html.unescape(m.group(1)))


def screenshot(page: Path, png: Path, top: int = 0, height: int = 1400) -> Path:
    "Screenshot `page` at `WIDTH` px and keep `height` px from `top` (fragment scrolling is unreliable headless)."
    page, full = page.resolve(), png.with_suffix('.full.png')
    run_chromium(['--virtual-time-budget=5000', f'--window-size={WIDTH},{top + height}', f'--screenshot={full}',
                  page.as_uri()])
    import matplotlib.image as mpimg
    img = mpimg.imread(full)
    mpimg.imsave(png, img[top:top + height]); full.unlink()
    return png


def notebook_pngs(nb: Path) -> int:
    "PNG outputs stored in a notebook (what the page must show)."
    cells = json.loads(nb.read_text())['cells']
    return sum('image/png' in o.get('data', {}) for c in cells for o in c.get('outputs', []))


def exported_functions(module: str) -> list[str]:
    mod = importlib.import_module(module)
    return [n for n in mod.__all__ if inspect.isfunction(getattr(mod, n)) and getattr(mod, n).__module__ == module]


def check_page(site: Path, page: str = 'masks.html', module: str = 'dllm_nb.masks', notebook: str = '03_masks.ipynb',
               signature: str = 'build_batched_block_mask (prefix_len:torch.Tensor', section: str = 'pictures-of-masks',
               png: Path | None = None) -> tuple[dict, list[str]]:
    "Render `site/page` in Chromium; returns `(report, failures)` and writes the screenshot `png`."
    path = site / page
    rep = dom_report(path, section)
    want_imgs = notebook_pngs(ROOT / 'nbs' / notebook)
    missing = [f for f in exported_functions(module) if f.lower() not in rep['headings']]
    failures = []
    if rep['decoded'] != want_imgs or rep['images'] != want_imgs:
        failures.append(f"{page}: {rep['decoded']} of {rep['images']} images decoded, the notebook has {want_imgs}")
    if missing: failures.append(f"{page}: no API reference heading for {missing}")
    if signature not in rep['text'].replace('\n', ' '): failures.append(f"{page}: signature text {signature!r} not found")
    if rep['section_top'] is None: failures.append(f"{page}: no section #{section}")
    png = png or site / f'screenshot_{Path(page).stem}.png'
    screenshot(path, png, top=max(0, (rep['section_top'] or 0) - 20))
    rep.update(png=str(png), want_images=want_imgs, api_functions=len(exported_functions(module)))
    return rep, failures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--site', default=str(ROOT / '_site'))
    ap.add_argument('--build', action='store_true', help='rebuild the site first (tools/build_docs.py)')
    ap.add_argument('--page', default='masks.html')
    ap.add_argument('--screenshot', default=None)
    args = ap.parse_args(argv)
    site = Path(args.site).resolve()
    if args.build or not (site / args.page).exists():
        sys.path.insert(0, str(ROOT / 'tools')); import build_docs
        build_docs.build(site)
    rep, failures = check_page(site, args.page, png=Path(args.screenshot) if args.screenshot else None)
    print(f"{args.page}: {rep['decoded']}/{rep['images']} images decoded (notebook: {rep['want_images']}), "
          f"{len(rep['headings'])} headings, {rep['api_functions']} exported functions, page {rep['height']} px; "
          f"screenshot {rep['png']}")
    for f in failures: print('FAIL', f)
    return int(bool(failures))


if __name__ == '__main__': sys.exit(main())
