"""Exact-match scoring, the likelihood estimators against exact answers, and the eval CLI end to end."""
import json, math, os, subprocess, sys

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st

from dllm_nb.eval import exact_match, generate_autoregressive, score_completion
from dllm_nb.block_diffusion import block_diffusion_losses, CachedContext, BlockDiffusionLM
from dllm_nb.mdlm import mdlm_nll_bound, MaskedDiffusionLM
from dllm_nb.models import build_backbone, tiny_config

torch.set_num_threads(1)
MASK = 2


@pytest.mark.parametrize('task,text,answer,ok', [
    ('addition', '1+2+0=3. Answer: 3', '3', True),
    ('addition', 'Answer: 1 2 3', '123', True),
    ('addition', 'Answer: 124', '123', False),
    ('addition', 'no answer here', '123', False),
    ('addition', 'Answer:', '123', False),
    ('reverse', '2:b 1:a. Answer: dog cat.', 'dog cat', True),
    ('reverse', 'Answer: dog  cat', 'dog cat', True),
    ('reverse', 'Answer: cat dog', 'dog cat', False),
])
def test_score_completion(task, text, answer, ok):
    assert score_completion(task, text, answer) is ok


def test_exact_match_counts_with_scripted_sampler():
    from dllm_nb.builtin import task_examples
    from dllm_nb.tokenizer import load_tokenizer
    tok = load_tokenizer()
    exs = task_examples('reverse', 'test')[:10]
    answers = {e['messages'][0]['content']: e['answer'] for e in exs}

    class Out:
        def __init__(self, s): self.sequences = s

    def half_right(model, prompt_ids, tokenizer, max_new_tokens, seeds=None):
        texts = [tokenizer.decode(p).split('<|user|>')[1].split('<|end|>')[0] for p in prompt_ids]
        outs = [f"Answer: {answers[t]}" if i % 2 == 0 else "Answer: wrong" for i, t in enumerate(texts)]
        return Out([tokenizer(o, add_special_tokens=False)['input_ids'] for o in outs])
    r = exact_match(None, tok, 'reverse', n=10, batch_size=3, sampler=half_right)
    # batches of 3: rows 0, 2 of each batch are right -> 2 + 2 + 2 + 1 of 10
    assert (r['correct'], r['n']) == (7, 10) and r['accuracy'] == 0.7


def _two_token_exact(model, ids):
    "Closed form of the MDLM bound for a 2-token response at positions 1, 2 (see the notebook)."
    x = torch.tensor([ids])
    with torch.no_grad():
        ce = lambda inp: F.cross_entropy(model(torch.tensor([inp])).logits[0], x[0], reduction='none')
        a = ce([ids[0], MASK, MASK])[1:].sum()
        b = ce([ids[0], MASK, ids[2]])[1] + ce([ids[0], ids[1], MASK])[2]
    return ((a + b) / 2).item()


@pytest.mark.parametrize('arch', ['llama', 'qwen3'])
def test_mdlm_bound_matches_closed_form(arch):
    torch.manual_seed(1)
    m = MaskedDiffusionLM(build_backbone(tiny_config(arch, vocab_size=12, hidden_size=32))).eval()
    ids = [5, 8, 3]
    exact = _two_token_exact(m, ids)
    est = mdlm_nll_bound(m, torch.tensor([ids]).expand(128, 3), torch.tensor([[0, 1, 1]]).expand(128, 3), MASK,
                         n_samples=32)['per_example'].mean().item()
    assert abs(est - exact) < 0.02 * exact, (est, exact)


@settings(max_examples=5, deadline=None)
@given(lens=st.lists(st.integers(1, 5), min_size=2, max_size=4), seed=st.integers(0, 100))
def test_mdlm_bound_batch_invariance(lens, seed):
    torch.manual_seed(0)
    m = MaskedDiffusionLM(build_backbone(tiny_config(vocab_size=12, hidden_size=32))).eval()
    T = max(lens) + 2
    ids = torch.randint(3, 12, (len(lens), T))
    lm = torch.zeros_like(ids); am = torch.zeros_like(ids)
    for b, L in enumerate(lens): lm[b, 2:2 + L] = 1; am[b, :2 + L] = 1
    seeds = [seed + b for b in range(len(lens))]
    batch = mdlm_nll_bound(m, ids, lm, MASK, am, n_samples=4, seeds=seeds)['per_example']
    for b, L in enumerate(lens):
        alone = mdlm_nll_bound(m, ids[b:b + 1, :2 + L], lm[b:b + 1, :2 + L], MASK, am[b:b + 1, :2 + L], 4, [seeds[b]])
        assert torch.allclose(batch[b], alone['per_example'][0], rtol=1e-4)


def test_one_step_bound_matches_enumeration_through_sampler_cache():
    torch.manual_seed(2)
    V, bs = 6, 2
    m = BlockDiffusionLM(build_backbone(tiny_config('qwen2', vocab_size=V, hidden_size=32))).eval()
    prompt, resp = [3, 5], [4, 1, 2, 0]
    noise = torch.cartesian_prod(torch.arange(V), torch.arange(V))
    ctx, expect, nll = CachedContext(m, [prompt] * len(noise)), 0., 0.
    for k in range(0, 4, bs):
        tgt = torch.tensor(resp[k:k + bs]).expand(len(noise), bs)
        with torch.no_grad(): lp = ctx.logits(noise).log_softmax(-1).gather(-1, tgt[..., None])[..., 0].sum(-1)
        expect -= lp.mean().item(); nll -= (torch.logsumexp(lp, 0) - math.log(len(noise))).item()
        ctx.commit(tgt)
    ids, lm = torch.tensor([prompt + resp]), torch.tensor([[0, 0, 1, 1, 1, 1]])
    est = block_diffusion_losses(m, ids.expand(256, 6), lm.expand(256, 6), bs, n_samples=4)
    assert abs(est['one_step_nll_bound'] - expect / 4) < 0.01 * expect / 4
    assert expect >= nll
    with torch.no_grad():                                     # encoder_nll is the causal head's exact NLL
        logits = m.backbone(ids).logits[0]
    want = F.cross_entropy(logits[1:-1], ids[0, 2:], reduction='sum').item() / 4
    assert abs(est['encoder_nll'] - want) < 1e-4


def test_block_diffusion_losses_rejects_multi_run():
    m = BlockDiffusionLM(build_backbone(tiny_config(vocab_size=8, hidden_size=32))).eval()
    with pytest.raises(ValueError, match='one contiguous supervised run per example, but batch row 1'):
        block_diffusion_losses(m, torch.ones(2, 6, dtype=torch.long), torch.tensor([[0, 1, 1, 0, 0, 0], [0, 1, 0, 1, 0, 0]]), 2)


def test_autoregressive_baseline_matches_naive_loop():
    torch.manual_seed(0)
    ar = build_backbone(tiny_config(vocab_size=32, hidden_size=32)).eval()
    ps = [[5, 6], [7, 8, 9, 10, 11]]
    out = generate_autoregressive(ar, ps, max_new_tokens=5)
    for b, p in enumerate(ps):
        x = torch.tensor([p])
        with torch.no_grad():
            for _ in range(5): x = torch.cat([x, ar(x).logits[:, -1:].argmax(-1)], 1)
        assert out.canvas[b].tolist() == x[0, len(p):].tolist()


def test_eval_cli(tmp_path):
    from dllm_nb.tokenizer import load_tokenizer
    torch.manual_seed(0)
    MaskedDiffusionLM(build_backbone(tiny_config(vocab_size=len(load_tokenizer()), hidden_size=32))).save_pretrained(tmp_path)
    env = {**os.environ, 'PYTHONPATH': os.getcwd()}
    r = subprocess.run([sys.executable, '-m', 'dllm_nb.eval', '--checkpoint', str(tmp_path), '--task', 'reverse',
                        '--n', '3', '--nll-samples', '2', '--max-new-tokens', '6', '--device', 'cpu'],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert 'reverse/test: exact match 0.000 (0/3)' in r.stdout and 'nll_bound' in r.stdout


def test_eval_cli_steps_mean_one_thing(tmp_path, capsys):
    "Issue 23: eval's --steps is the total (mdlm), --steps-per-block the block count (block_diffusion), as in generate."
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.eval import main
    from dllm_nb.block_diffusion import BlockDiffusionLM
    torch.manual_seed(0)
    V = len(load_tokenizer())
    MaskedDiffusionLM(build_backbone(tiny_config(vocab_size=V, hidden_size=32))).save_pretrained(tmp_path / 'mdlm')
    BlockDiffusionLM(build_backbone(tiny_config(vocab_size=V, hidden_size=32))).save_pretrained(tmp_path / 'bd')
    base = ['--task', 'reverse', '--n', '2', '--nll-samples', '0', '--max-new-tokens', '4', '--device', 'cpu']
    assert main(['--checkpoint', str(tmp_path / 'bd'), '--steps', '4', *base]) == 2
    assert 'for this block_diffusion checkpoint (steps per block, what --steps meant for it before) write --steps-per-block 4' \
        in capsys.readouterr().err
    assert main(['--checkpoint', str(tmp_path / 'mdlm'), '--steps-per-block', '2', *base]) == 2
    assert '--steps-per-block does not apply to a mdlm checkpoint' in capsys.readouterr().err
    assert main(['--checkpoint', str(tmp_path / 'bd'), '--steps-per-block', '2', *base]) == 0
    assert main(['--checkpoint', str(tmp_path / 'mdlm'), '--steps', '4', *base]) == 0
    assert 'reverse/test: exact match' in capsys.readouterr().out


def test_eval_cli_n_past_a_split(tmp_path, capsys):
    "--n past the validation split's 200 is one error line and exit 2 before the model loads; the test split goes on with held-out prompts."
    from dllm_nb.eval import main
    assert main(['--checkpoint', str(tmp_path / 'no_model_needed'), '--task', 'reverse', '--split', 'validation', '--n', '300']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and "error: the 'validation' split of 'reverse' holds 200 examples, fewer than n=300" in err


def test_eval_cli_scores_the_runs_own_test_split(tmp_path, capsys):
    "A run trained with seed=1 is scored on seed 1's test split (seed 0's shares prompts with its train split); --seed overrides."
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.eval import main
    from dllm_nb.config import load_config, save_config
    from dllm_nb.builtin import task_examples
    torch.manual_seed(0)
    MaskedDiffusionLM(build_backbone(tiny_config(vocab_size=len(load_tokenizer()), hidden_size=32))).save_pretrained(tmp_path / 'final')
    save_config(load_config(None, ['seed=1']), tmp_path / 'config.yaml')            # the run folder of that final/
    base = ['--checkpoint', str(tmp_path / 'final'), '--task', 'countdown', '--n', '3', '--nll-samples', '0',
            '--max-new-tokens', '4', '--device', 'cpu']
    prompts = lambda seed: [ex['messages'][0]['content'] for ex in task_examples('countdown', 'test', seed)[:3]]
    assert prompts(0) != prompts(1)
    for extra, seed in (([], 1), (['--seed', '0'], 0)):
        assert main([*base, *extra, '--out', str(tmp_path / 'o.jsonl')]) == 0
        rows = [json.loads(l) for l in (tmp_path / 'o.jsonl').read_text().splitlines()]
        assert [r['prompt'] for r in rows] == prompts(seed), (extra, seed)
