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


README = (ROOT / 'README.md').read_text()
BLOCKS = re.findall(r'```(\w+)\n(.+?)\n```', README, re.S)
CODE_LINES = [l for lang, b in BLOCKS if lang == 'bash' for l in b.replace('\\\n', ' ').splitlines()]


def section(title: str) -> str:
    return README.split(f'\n## {title}\n', 1)[1].split('\n## ', 1)[0]


def test_front_page_order_and_length():
    """A front door: what it is -> the two commands -> modes -> RL -> API example -> ...; at most ~1,500 words, the measured
    logs on the results page (built from bench/results/), not here."""
    heads = re.findall(r'^## (.+)$', README, re.M)
    assert heads[:4] == ['The two commands', 'Modes', 'RL post-training', 'The Python API'], heads
    assert len(README.split()) <= 1500, len(README.split())
    assert 'Results' not in heads and 'results.html' in section('Modes'), heads
    first = section('The two commands')
    assert len(first.split()) < 300 and 'median' not in first, len(first.split())
    python = re.search(r'^PYTHON \?= (\S+)', (ROOT / 'Makefile').read_text(), re.M).group(1)
    assert f'`{python}`' in first                                         # the interpreter the Makefile needs, named


def test_modes_table_has_one_row_per_mode_with_a_command():
    from dllm_nb.modes import mode_names
    rows = [r for r in section('Modes').splitlines() if r.startswith('| `')]
    modes = [re.match(r'\| `(\w+)` \|', r).group(1) for r in rows]
    every = mode_names()                                                # every registered dllm.mode, ar included
    assert sorted(modes) == sorted(every), modes                       # every mode, once (a new mode needs its row)
    for r in rows:
        cells = [c.strip() for c in re.split(r'(?<!\\)\|', r)[1:-1]]
        assert len(cells) == 4 and re.fullmatch(r'`[^`]+`', cells[3]), r  # mode | what | measured | `command`


def test_make_commands_in_readme_exist():
    makefile = (ROOT / 'Makefile').read_text()
    targets = set(re.findall(r'^([\w-]+):', makefile, re.M))
    variables = set(re.findall(r'^(\w+)\s*\??=', makefile, re.M))
    for cmd in re.findall(r'`(make [^`]+)`', README) + [l for l in CODE_LINES if l.startswith('make')]:
        words = cmd.split()[1:]
        assert all(w in targets for w in words if '=' not in w and w != '...'), cmd
        assert all(w.split('=')[0] in variables for w in words if '=' in w), cmd


def test_readme_commands_name_what_they_need():
    "A resume names its output_dir (else it resumes runs/default); a preset that logs to TensorBoard comes with the extra."
    from dllm_nb.config import load_config
    for l in CODE_LINES:
        if 'train.resume=auto' in l and not l.startswith('#'): assert 'output_dir=' in l, l
    for lang, block in BLOCKS:
        for name in re.findall(r'--config (\S+)', block):
            if load_config(name, world_size=1).train.tensorboard: assert "[tensorboard]" in block, block

