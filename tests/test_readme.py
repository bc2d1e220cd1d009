"The README is the docs landing page (nbs/index.ipynb); keep them identical, and keep the two commands real."
import re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_matches_index():
    r = subprocess.run([sys.executable, str(ROOT / 'tools' / 'sync_readme.py'), '--check'], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_readme_commands_are_make_targets():
    readme = (ROOT / 'README.md').read_text()
    cmds = re.findall(r'```bash\n(.+?)\n```', readme)
    assert cmds[:2] == ['make train', 'make test'], cmds
    makefile = (ROOT / 'Makefile').read_text()
    for target in ('train', 'test'): assert re.search(rf'^{target}:', makefile, re.M), target
