"""Samplers over random ragged batches (hypothesis) and the generate CLI end to end.

Invariants: a prompt writes the same tokens alone and inside any ragged batch (same per-row seed), for MDLM (greedy,
sampled, random remasking, threshold) and block diffusion; the cached block-diffusion sampler writes exactly the
re-encode-everything sampler's tokens (three backbone families); threshold >= 1 commits one token per step and
threshold 0 a whole block per step; no mask token survives in an MDLM output.
"""
import os, subprocess, sys

import pytest
import torch
from hypothesis import given, settings, strategies as st

from dllm_nb.generate import (NEW, BlockDiffusionLM, MaskedDiffusionLM, generate_block_diffusion, generate_mdlm,
                              load_checkpoint)
from dllm_nb.models import build_backbone, tiny_config

V, MASK, EOS = 64, 2, 1
torch.set_num_threads(1)


def _model(cls, arch='llama', seed=0, vocab=V):
    torch.manual_seed(seed)
    m = cls(build_backbone(tiny_config(arch, vocab_size=vocab, hidden_size=32)))
    if cls is BlockDiffusionLM:
        with torch.no_grad(): m.self_cond.down.weight.normal_(0, .5)       # make self-conditioning matter
    return m.eval()


MDLM, BD = _model(MaskedDiffusionLM), _model(BlockDiffusionLM)
prompt_lists = st.lists(st.lists(st.integers(3, V - 1), min_size=1, max_size=9), min_size=2, max_size=4)


@settings(max_examples=8, deadline=None)
@given(prompts=prompt_lists, seed=st.integers(0, 1000), mode=st.sampled_from(['greedy', 'sample', 'random', 'threshold']))
def test_mdlm_batch_invariance(prompts, seed, mode):
    kw = dict(greedy={}, sample=dict(temperature=1.0), random=dict(temperature=0.5, remasking='random'),
              threshold=dict(threshold=0.03, temperature=1.0))[mode]
    seeds = [seed + 7 * i for i in range(len(prompts))]
    both = generate_mdlm(MDLM, prompts, 10, 4, 6, MASK, seeds=seeds, **kw)
    assert (both.canvas != MASK).all()
    for b, (p, s) in enumerate(zip(prompts, seeds)):
        assert generate_mdlm(MDLM, [p], 10, 4, 6, MASK, seeds=[s], **kw).sequences[0] == both.sequences[b]


@settings(max_examples=6, deadline=None)
@given(prompts=prompt_lists, seed=st.integers(0, 1000), temperature=st.sampled_from([0.0, 1.0]))
def test_block_diffusion_batch_invariance_and_cache(prompts, seed, temperature):
    seeds = [seed + 7 * i for i in range(len(prompts))]
    kw = dict(max_blocks=3, block_size=3, steps_per_block=3, temperature=temperature)
    both = generate_block_diffusion(BD, prompts, **kw, seeds=seeds)
    assert torch.equal(both.canvas, generate_block_diffusion(BD, prompts, **kw, seeds=seeds, use_cache=False).canvas)
    for b, (p, s) in enumerate(zip(prompts, seeds)):
        assert generate_block_diffusion(BD, [p], **kw, seeds=[s]).sequences[0] == both.sequences[b]


@pytest.mark.parametrize('arch', ['llama', 'qwen2', 'qwen3'])
def test_cached_equals_reencode_across_archs(arch):
    m = _model(BlockDiffusionLM, arch, seed=3)
    prompts = [[5, 6, 7, 8], [9], [10, 11, 12, 13, 14, 15, 16]]
    kw = dict(max_new_tokens=14, block_size=4, steps_per_block=4, temperature=1.0, seeds=[1, 2, 3])
    a, b = generate_block_diffusion(m, prompts, **kw), generate_block_diffusion(m, prompts, **kw, use_cache=False)
    assert torch.equal(a.canvas, b.canvas) and a.canvas.shape == (3, 14) and a.nfe == b.nfe


def test_wrong_bidirectional_model_breaks_equality_check():
    "The cache test can fail: the re-encode reference of a *different* model (other seed) writes other tokens."
    prompts, kw = [[5, 6, 7], [9, 10]], dict(max_blocks=3, block_size=4, steps_per_block=4, temperature=1.0, seeds=[1, 2])
    other = _model(BlockDiffusionLM, seed=1)
    assert not torch.equal(generate_block_diffusion(BD, prompts, **kw).canvas,
                           generate_block_diffusion(other, prompts, **kw, use_cache=False).canvas)


@pytest.mark.parametrize('threshold,per_step,nfe', [(1.0, 1, 12), (1.5, 1, 12), (0.0, 4, 3)])
def test_threshold_extremes(threshold, per_step, nfe):
    out = generate_mdlm(MDLM, [[5, 6, 7], [8, 9]], 12, 4, 3, MASK, threshold=threshold, return_trajectory=True)
    commits = (out.trajectory.state[1:] == NEW).sum(-1)
    assert out.nfe == nfe and commits.unique().tolist() == [per_step]


def test_schedule_without_threshold():
    out = generate_mdlm(MDLM, [[5, 6, 7]], 12, 4, 6, MASK, return_trajectory=True)   # 3 blocks x 2 steps x 2 tokens
    assert out.nfe == 6 and (out.trajectory.state[1:] == NEW).sum(-1).flatten().tolist() == [2] * 6


def _boost(model, token, by=50.0):
    "Add `by` to one token's logit everywhere (a forward hook on the LM head)."
    def hook(mod, inp, out):
        out = out.clone(); out[..., token] += by
        return out
    model.backbone.lm_head.register_forward_hook(hook)


def test_mdlm_never_outputs_mask_even_when_model_prefers_it():
    m = _model(MaskedDiffusionLM, seed=5)
    _boost(m, MASK)                                                          # the model's favourite token is [MASK]
    out = generate_mdlm(m, [[5, 6], [7, 8, 9]], 8, 4, 8, MASK, temperature=1.0)
    assert (out.canvas != MASK).all() and all(MASK not in s for s in out.sequences)


def test_eos_cut_and_stop():
    "Force EOS: completions are cut before it, and decoding stops once every row has one."
    m = _model(MaskedDiffusionLM, seed=6)
    _boost(m, EOS)
    out = generate_mdlm(m, [[5, 6], [7, 8, 9]], 16, 4, 16, MASK, eos_token_id=EOS)
    assert out.sequences == [[], []] and out.nfe == 4                        # first block only
    b = _model(BlockDiffusionLM, seed=6)
    _boost(b, EOS)
    out = generate_block_diffusion(b, [[5, 6], [7, 8, 9]], max_blocks=4, block_size=4, eos_token_id=EOS)
    assert out.sequences == [[], []] and out.canvas.shape == (2, 4)


def test_argument_errors():
    with pytest.raises(ValueError, match='one seed per prompt'): generate_mdlm(MDLM, [[5]], 4, 4, 4, MASK, seeds=[1, 2])
    with pytest.raises(ValueError, match='at least one step'): generate_mdlm(MDLM, [[5]], 8, 2, 3, MASK)
    with pytest.raises(ValueError, match='exactly one'): generate_block_diffusion(BD, [[5]])
    with pytest.raises(ValueError, match='tokenizer='): generate_mdlm(MDLM, ['hi'], 4, 4, 4, MASK)


def _run(*args):
    env = {**os.environ, 'PYTHONPATH': os.getcwd()}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize('cls', [MaskedDiffusionLM, BlockDiffusionLM])
def test_cli_end_to_end(cls, tmp_path):
    from dllm_nb.data import load_tokenizer
    tok = load_tokenizer()
    _model(cls, vocab=len(tok)).save_pretrained(tmp_path / 'ckpt')
    (tmp_path / 'prompts.txt').write_text('What is 12 + 34?\n\nReverse the words: cat dog\n')
    r = _run('-m', 'dllm_nb.generate', '--checkpoint', str(tmp_path / 'ckpt'), '--prompt', 'Hi', '--prompts-file',
             str(tmp_path / 'prompts.txt'), '--max-new-tokens', '8', '--device', 'cpu', '--batch-size', '2')
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [l.split(' -> ')[0] for l in lines] == ['Hi', 'What is 12 + 34?', 'Reverse the words: cat dog']
    model, _ = load_checkpoint(tmp_path / 'ckpt')
    assert type(model) is cls


def test_cli_rejects_non_checkpoint(tmp_path):
    r = _run('-m', 'dllm_nb.generate', '--checkpoint', str(tmp_path), '--prompt', 'Hi')
    assert r.returncode != 0 and 'not a dllm_nb checkpoint' in r.stderr
