"""What a newcomer reads as breakage (issue 25, item 7): a CLI piped into `head` ends quietly, every notebook cell has an id
(nbformat's MissingIDFieldWarning), and building the package prints no setuptools 'Package would be ignored' banner."""
import os, subprocess, sys, warnings
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(ROOT)}
NBS = sorted(p for p in (ROOT / 'nbs').rglob('*.ipynb') if '.ipynb_checkpoints' not in p.parts)


@pytest.mark.parametrize('flag', ['--print-config', '--list-keys'])
def test_cli_output_into_a_closed_pipe_ends_quietly(flag):
    "`python -m dllm_nb.train --print-config | head`: the reader is gone before the output is written; exit 0, no traceback."
    p = subprocess.Popen([sys.executable, '-m', 'dllm_nb.train', flag], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=ENV, cwd=ROOT)
    p.stdout.close()                                           # as `head` does once it has its lines (here: before any)
    err = p.stderr.read().decode(); rc = p.wait(timeout=300)
    assert rc == 0 and err == '', (rc, err[-2000:])


def test_every_notebook_cell_has_an_id():
    "nbformat 4.5 notebooks need cell ids; without them every read warns (MissingIDFieldWarning) in tests and docs builds."
    bad = {}
    for p in NBS:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            nb = nbformat.read(p, as_version=4)
        missing = [i for i, c in enumerate(nb.cells) if 'id' not in c]
        if missing or any('MissingIDField' in type(x.message).__name__ for x in w): bad[str(p.relative_to(ROOT))] = missing
    assert not bad, f'cells without an id (run python tools/strip_widgets.py, which adds them): {bad}'


def test_package_build_prints_no_setuptools_banner(tmp_path):
    "Building the wheel lists the data folders as packages: no 'Package would be ignored' banner for dllm_nb.assets.tokenizer."
    r = subprocess.run([sys.executable, '-m', 'pip', '--disable-pip-version-check', 'wheel', '--no-deps', '--no-build-isolation',
                        '-v', '-w', str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout + r.stderr
    assert "adding 'dllm_nb/assets/tokenizer/tokenizer.json'" in out, out[-3000:]        # the verbose log, the data shipped
    assert 'would be ignored' not in out and 'SetuptoolsDeprecationWarning' not in out, out[-3000:]
