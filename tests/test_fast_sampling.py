"""The fast-sampling pieces over random ragged batches (hypothesis).

Invariants: the MDLM K/V cache refreshed every step is the uncached sampler (tokens and calls), for both cache kinds
and every sampler setting; every sampler here is batch invariant (a row writes the same tokens alone as inside any
ragged batch); the HF-generate baseline writes naive greedy decoding's tokens.
"""
import pytest
import torch
from hypothesis import given, settings, strategies as st

from dllm_nb.eval import generate_autoregressive
from dllm_nb.ar import generate_autoregressive_cached
from dllm_nb.mdlm import generate_mdlm, generate_mdlm_cached, MaskedDiffusionLM
from dllm_nb.models import build_backbone, tiny_config
from dllm_nb.block_diffusion import BlockDiffusionLM

V, MASK = 64, 2
torch.set_num_threads(1)


def _model(cls, seed=0):
    torch.manual_seed(seed)
    return cls(build_backbone(tiny_config(vocab_size=V, hidden_size=32))).eval()


MDLM, BD = _model(MaskedDiffusionLM), _model(BlockDiffusionLM)
prompt_lists = st.lists(st.lists(st.integers(3, V - 1), min_size=1, max_size=9), min_size=2, max_size=4)
MODES = dict(greedy={}, sample=dict(temperature=1.0), random=dict(temperature=0.5, remasking='random'),
             threshold=dict(threshold=0.03, temperature=1.0))


@settings(max_examples=8, deadline=None)
@given(prompts=prompt_lists, seed=st.integers(0, 1000), mode=st.sampled_from(sorted(MODES)),
       cache=st.sampled_from(['prefix', 'dual']))
def test_mdlm_cache_refreshed_every_step_is_uncached(prompts, seed, mode, cache):
    seeds = [seed + 7 * i for i in range(len(prompts))]
    ref = generate_mdlm(MDLM, prompts, 10, 4, 6, MASK, seeds=seeds, **MODES[mode])
    out = generate_mdlm_cached(MDLM, prompts, 10, 4, 6, MASK, seeds=seeds, cache=cache, refresh_every=1, **MODES[mode])
    assert torch.equal(out.canvas, ref.canvas) and out.nfe == ref.nfe


@settings(max_examples=8, deadline=None)
@given(prompts=prompt_lists, seed=st.integers(0, 1000), mode=st.sampled_from(sorted(MODES)),
       cache=st.sampled_from(['prefix', 'dual']), refresh=st.sampled_from([None, 2]))
def test_mdlm_cache_batch_invariance(prompts, seed, mode, cache, refresh):
    seeds = [seed + 7 * i for i in range(len(prompts))]
    kw = dict(cache=cache, refresh_every=refresh, **MODES[mode])
    both = generate_mdlm_cached(MDLM, prompts, 10, 4, 8, MASK, seeds=seeds, **kw)
    assert (both.canvas != MASK).all()
    for b, (p, s) in enumerate(zip(prompts, seeds)):
        assert generate_mdlm_cached(MDLM, [p], 10, 4, 8, MASK, seeds=[s], **kw).sequences[0] == both.sequences[b]


def test_mdlm_cache_is_an_approximation():
    "Without refreshes the cached steps see stale keys: a model that reads its context writes other tokens somewhere."
    m = _model(MaskedDiffusionLM, seed=3)
    with torch.no_grad():
        for p in m.backbone.parameters(): p.mul_(4)                              # a sharper, context-hungry model
    prompts = [[5, 6, 7, 8], [9, 10], [11, 12, 13, 14, 15, 16]]
    ref = generate_mdlm(m, prompts, 16, 8, 16, MASK, seeds=[1, 2, 3])
    outs = [generate_mdlm_cached(m, prompts, 16, 8, 16, MASK, seeds=[1, 2, 3], cache=c) for c in ('prefix', 'dual')]
    assert any(not torch.equal(o.canvas, ref.canvas) for o in outs)


@settings(max_examples=6, deadline=None)
@given(prompts=prompt_lists)
def test_autoregressive_cached_is_greedy_and_batch_invariant(prompts):
    out = generate_autoregressive_cached(BD, prompts, 8)
    assert torch.equal(out.canvas, generate_autoregressive(BD.backbone, prompts, max_new_tokens=8).canvas)
    for b, p in enumerate(prompts): assert generate_autoregressive_cached(BD, [p], 8).sequences[0] == out.sequences[b]


def test_errors():
    with pytest.raises(ValueError, match='bidirectional'): generate_autoregressive_cached(MDLM, [[5]], 4)
    with pytest.raises(ValueError, match="'prefix' or 'dual'"): generate_mdlm_cached(MDLM, [[5]], 4, 4, 4, MASK, cache='x')
