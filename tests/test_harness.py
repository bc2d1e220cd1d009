"""lm-evaluation-harness from the command line: the built-in tasks written offline, then `python -m dllm_nb.harness run`."""
import json, os, subprocess, sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(ROOT), 'TOKENIZERS_PARALLELISM': 'false'}


def test_harness_cli_runs_the_builtin_tasks_offline(tmp_path):
    from dllm_nb.data import load_tokenizer
    from dllm_nb.models import CausalLM, build_backbone, tiny_config
    tok = load_tokenizer()
    torch.manual_seed(0)
    ck = tmp_path / 'ar'
    CausalLM(build_backbone(tiny_config(vocab_size=len(tok), hidden_size=32))).save_pretrained(ck); tok.save_pretrained(ck)
    run = lambda *a: subprocess.run([sys.executable, '-m', 'dllm_nb.harness', *a], env=ENV, capture_output=True, text=True,
                                    timeout=600, cwd=tmp_path)
    r = run('tasks', '--out', str(tmp_path / 'tasks'), '--n', '4')
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(p.name for p in (tmp_path / 'tasks').glob('*.yaml')) == ['dllm_nb_addition.yaml', 'dllm_nb_reverse.yaml']
    r = run('run', '--model', 'dllm_nb', '--model_args', f'checkpoint={ck},max_gen_toks=8', '--batch_size', '4',
            '--tasks', 'dllm_nb_addition,dllm_nb_reverse', '--include_path', str(tmp_path / 'tasks'),
            '--apply_chat_template', '--output_path', str(tmp_path / 'out'))
    assert r.returncode == 0, r.stderr[-3000:]
    assert 'dllm_nb_addition' in r.stdout and 'exact_match' in r.stdout, r.stdout[-2000:]
    res = json.loads(next((tmp_path / 'out').rglob('results*.json')).read_text())['results']
    assert set(res) == {'dllm_nb_addition', 'dllm_nb_reverse'} and all(0 <= v['exact_match,answer'] <= 1 for v in res.values())
    assert run('tasks', '--out', str(tmp_path / 't2'), '--n', '0').returncode == 2
