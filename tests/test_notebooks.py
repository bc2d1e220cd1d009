"""Run every notebook under nbs/ as a pytest case, through nbdev's own executor.

`nbdev_test` prints only "Success."; wrapping `nbdev.test.test_nb` gives CI one pytest case per notebook
(and a closing "N passed"). Cells flagged with settings.ini's `tst_flags` (slow, cuda) are skipped unless the
flag is listed in the DLLM_NB_FORCE_FLAGS environment variable (e.g. `DLLM_NB_FORCE_FLAGS=slow`).
"""
import os
from configparser import ConfigParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
cfg = ConfigParser(delimiters=['=']); cfg.read(ROOT / 'settings.ini')
SKIP = cfg['DEFAULT'].get('tst_flags', '').split()
FORCE = os.environ.get('DLLM_NB_FORCE_FLAGS', '').split()
NBS = sorted(p for p in (ROOT / 'nbs').rglob('*.ipynb')
             if not any(part.startswith(('_', '.')) for part in p.relative_to(ROOT / 'nbs').parts))


@pytest.mark.parametrize('nb', NBS, ids=[str(p.relative_to(ROOT / 'nbs')) for p in NBS])
def test_notebook(nb):
    import torch
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // int(os.environ.get('PYTEST_XDIST_WORKER_COUNT', '1'))))
    from nbdev.test import test_nb
    ok, secs = test_nb(nb, skip_flags=[f for f in SKIP if f not in FORCE], force_flags=FORCE, basepath=ROOT)
    assert ok, f'{nb.name} failed (its traceback is printed above)'
