"""Write README.md from nbs/index.ipynb (the docs landing page is the source; README is its copy).

    python tools/sync_readme.py          # rewrite README.md
    python tools/sync_readme.py --check  # exit 1 if README.md is out of date
"""
import sys
from pathlib import Path
import nbformat

ROOT = Path(__file__).resolve().parents[1]

def readme_text() -> str:
    nb = nbformat.read(ROOT / 'nbs' / 'index.ipynb', as_version=4)
    return '\n\n'.join(c.source.strip() for c in nb.cells if c.cell_type == 'markdown') + '\n'

if __name__ == '__main__':
    want, have = readme_text(), (ROOT / 'README.md').read_text()
    if '--check' in sys.argv:
        if want != have: sys.exit('README.md differs from nbs/index.ipynb: edit the notebook, then run tools/sync_readme.py')
    else: (ROOT / 'README.md').write_text(want)
