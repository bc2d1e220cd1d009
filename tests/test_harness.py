"""lm-evaluation-harness: the built-in tasks written offline and run from the command line, the harness's generations equal
`python -m dllm_nb.eval`'s on a seeded block-diffusion checkpoint, the multiple-choice task through `loglikelihood`, and the
one-line error when the `eval` extra is missing."""
import json, os, subprocess, sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(ROOT), 'TOKENIZERS_PARALLELISM': 'false'}


def run(*a, cwd, extra=()):
    return subprocess.run([sys.executable, *extra, '-m', 'dllm_nb.harness', *a], env=ENV, capture_output=True, text=True,
                          timeout=600, cwd=cwd)


def tiny_checkpoint(path, kind='ar'):
    "A tiny random checkpoint with the shipped tokenizer: `ar` (CausalLM) or `bd` (random-token block diffusion)."
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.models import build_backbone, tiny_config
    from dllm_nb.block_diffusion import BlockDiffusionLM
    from dllm_nb.ar import CausalLM
    tok = load_tokenizer()
    torch.manual_seed(0)
    bb = build_backbone(tiny_config(vocab_size=len(tok), hidden_size=32))
    (CausalLM(bb) if kind == 'ar' else BlockDiffusionLM(bb, self_conditioning=False)).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_harness_cli_runs_the_builtin_tasks_offline(tmp_path):
    ck = tiny_checkpoint(tmp_path / 'ar')
    r = run('tasks', '--out', str(tmp_path / 'tasks'), '--n', '4', cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(p.name for p in (tmp_path / 'tasks').glob('*.yaml')) == [
        'dllm_nb_addition.yaml', 'dllm_nb_addition_mc.yaml', 'dllm_nb_reverse.yaml']
    r = run('run', '--model', 'dllm_nb', '--model_args', f'checkpoint={ck},max_gen_toks=8', '--batch_size', '4',
            '--tasks', 'dllm_nb_addition,dllm_nb_reverse,dllm_nb_addition_mc', '--include_path', str(tmp_path / 'tasks'),
            '--apply_chat_template', '--output_path', str(tmp_path / 'out'), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert 'dllm_nb_addition' in r.stdout and 'exact_match' in r.stdout, r.stdout[-2000:]
    assert '16 loglikelihoods = the exact log-likelihood' in r.stderr, r.stderr[-2000:]     # 4 questions x 4 choices
    res = json.loads(next((tmp_path / 'out').rglob('results*.json')).read_text())['results']
    assert set(res) == {'dllm_nb_addition', 'dllm_nb_reverse', 'dllm_nb_addition_mc'}
    assert all(0 <= res[t]['exact_match,none'] <= 1 for t in ('dllm_nb_addition', 'dllm_nb_reverse'))
    assert 0 <= res['dllm_nb_addition_mc']['acc,none'] <= 1
    assert run('tasks', '--out', str(tmp_path / 't2'), '--n', '0', cwd=tmp_path).returncode == 2


def harness_vs_eval(ck, tasks_dir, n, batch_size, seed=0):
    "`(harness completions per task, dllm_nb.eval completions per task, accuracies)` for the same checkpoint and prompts."
    import lm_eval
    from lm_eval.tasks import TaskManager
    from dllm_nb.eval import exact_match
    from dllm_nb.checkpoint import saved_block_size
    from dllm_nb.harness import DLLMEvalLM, write_tasks
    names = write_tasks(tasks_dir, ('addition', 'reverse'))
    lm = DLLMEvalLM(checkpoint=str(ck), batch_size=batch_size)
    res = lm_eval.simple_evaluate(model=lm, tasks=names, task_manager=TaskManager(include_path=str(tasks_dir), include_defaults=False),
                                  apply_chat_template=True, limit=n, log_samples=True)
    ours = {t: exact_match(lm.model, lm.tok, t, 'test', n, seed, batch_size, lm.max_gen_toks, block_size=saved_block_size(ck))
            for t in ('addition', 'reverse')}
    harness = {t: [s['resps'][0][0] for s in sorted(res['samples'][f'dllm_nb_{t}'], key=lambda s: s['doc_id'])] for t in ours}
    acc = {t: (res['results'][f'dllm_nb_{t}']['exact_match,none'], ours[t]['accuracy']) for t in ours}
    return harness, {t: [s['completion'] for s in v['samples']] for t, v in ours.items()}, acc


def test_harness_generations_equal_dllm_nb_eval(tmp_path):
    "Identical decoding: every completion (and so the exact match) of the harness equals `exact_match`'s, for a seeded sampler."
    from dllm_nb.eval import exact_match
    from dllm_nb.checkpoint import load_checkpoint
    ck = tiny_checkpoint(tmp_path / 'bd', 'bd')
    harness, ours, acc = harness_vs_eval(ck, tmp_path / 'tasks', n=6, batch_size=4)
    assert harness == ours
    assert all(h == o for h, o in acc.values()), acc
    model, tok = load_checkpoint(ck)                   # the comparison can fail: another seed gives other completions
    other = [s['completion'] for s in exact_match(model, tok, 'addition', 'test', 6, 1, 4, 40)['samples']]
    assert other != ours['addition']


def test_multiple_choice_through_loglikelihood(tmp_path):
    "The MC task on a block-diffusion checkpoint: one answer per choice, each minus the stated bound, with its standard error."
    import lm_eval
    from lm_eval.tasks import TaskManager
    from dllm_nb.harness import DLLMEvalLM, write_tasks
    ck = tiny_checkpoint(tmp_path / 'bd', 'bd')
    names = write_tasks(tmp_path / 'tasks', ('addition_mc',), n=5)
    lm = DLLMEvalLM(checkpoint=str(ck), batch_size=8, mc_samples=3)
    res = lm_eval.simple_evaluate(model=lm, tasks=names, task_manager=TaskManager(include_path=str(tmp_path / 'tasks'), include_defaults=False),
                                  apply_chat_template=True, log_samples=True)
    assert len(lm.mc_se) == 20 and all(0 < e < float('inf') for e in lm.mc_se)
    samples = res['samples']['dllm_nb_addition_mc']
    acc = sum(int(torch.tensor([r[0][0] for r in s['resps']]).argmax() == s['target']) for s in samples) / len(samples)
    assert res['results']['dllm_nb_addition_mc']['acc,none'] == pytest.approx(acc)


def test_harness_evaluate_is_simple_evaluate_without_the_environment_record(tmp_path):
    "The in-process path (`lm_eval.evaluator.evaluate` on the local tasks) gives `simple_evaluate`'s results, samples and configs."
    import lm_eval
    from lm_eval.tasks import TaskManager
    from dllm_nb.harness import DLLMEvalLM, harness_evaluate, write_tasks
    ck = tiny_checkpoint(tmp_path / 'bd', 'bd')
    names = write_tasks(tmp_path / 'tasks', ('addition', 'addition_mc'), n=4)
    lm = DLLMEvalLM(checkpoint=str(ck), batch_size=4, mc_samples=2, max_gen_toks=8)
    full = lm_eval.simple_evaluate(model=lm, tasks=names, task_manager=TaskManager(include_path=str(tmp_path / 'tasks'), include_defaults=False),
                                   apply_chat_template=True, log_samples=True)
    lean = harness_evaluate(lm, names, tmp_path / 'tasks')
    assert 'pretty_env_info' in full and 'pretty_env_info' not in lean and lean['config']['env_record'] is False
    for k in set(lean) - {'config'}: assert lean[k] == full[k], k
    assert harness_evaluate(lm, names, tmp_path / 'tasks', env_record=True)['pretty_env_info']
    other = DLLMEvalLM(checkpoint=str(ck), batch_size=4, mc_samples=2, max_gen_toks=8, seed=1)   # the comparison can fail
    assert harness_evaluate(other, names, tmp_path / 'tasks')['samples'] != full['samples']


BLOCK_LM_EVAL = ("import sys, runpy\n"
                 "class Block:\n"
                 "    def find_spec(self, name, path=None, target=None):\n"
                 "        if name.split('.')[0] == 'lm_eval': raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
                 "sys.meta_path.insert(0, Block())\n")


def test_missing_eval_extra_is_one_clear_error(tmp_path):
    "Without lm-eval: the CLI prints one line naming `pip install -e .[eval]` (exit 2); importing the module raises it."
    r = subprocess.run([sys.executable, '-c', BLOCK_LM_EVAL + "sys.argv = ['x', 'tasks', '--out', 'o']\n"
                        "runpy.run_module('dllm_nb.harness', run_name='__main__', alter_sys=True)"],
                       env=ENV, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and 'pip install -e .[eval]' in lines[0] and 'lm_eval' in lines[0], r.stderr
    r = subprocess.run([sys.executable, '-c', BLOCK_LM_EVAL + "import dllm_nb.harness"], env=ENV, capture_output=True, text=True,
                       timeout=300, cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1].startswith('ImportError: dllm_nb.harness needs lm-evaluation-harness')
    assert 'pip install -e .[eval]' in r.stderr.strip().splitlines()[-1]
