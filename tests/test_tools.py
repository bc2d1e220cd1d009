"The maintainer's tools: the prompt generator still writes the shipped prompt sets, byte for byte."
import shutil, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / 'tools' / 'make_prompts.py'


def check(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), '--check', '--out', str(folder)], capture_output=True, text=True)


def test_prompt_sets_equal_their_generator(tmp_path):
    r = check(ROOT / 'dllm_nb' / 'assets' / 'prompts')
    assert r.returncode == 0 and r.stdout.count(' equals ') == 3, r.stdout + r.stderr
    copy = shutil.copytree(ROOT / 'dllm_nb' / 'assets' / 'prompts', tmp_path / 'p')
    rows = (copy / 'instructions_extra.jsonl').read_text().splitlines()
    (copy / 'instructions_extra.jsonl').write_text('\n'.join(rows[1:]) + '\n')          # one prompt dropped: caught
    r = check(copy)
    assert r.returncode == 1 and 'instructions_extra.jsonl' in r.stderr, r.stdout + r.stderr
