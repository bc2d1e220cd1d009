"Property tests for dllm_nb.corruption over ragged loss masks (what the notebook does badly)."
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from dllm_nb.core import row_generators, sample_seeds
from dllm_nb.corruption import (T_SAMPLING, corrupt_all_masked, corrupt_blockwise, corrupt_uniform,
                                corrupt_uniform_random, late_bias_logits, sample_t)

MASK, V, EPS = 63, 64, 1e-3
KERNELS = {
    'uniform': lambda x, l, g: corrupt_uniform(x, l, MASK, EPS, g),
    'blockwise': lambda x, l, g: corrupt_blockwise(x, l, MASK, 4, EPS, 0.25, g),
    'blockwise_flat': lambda x, l, g: corrupt_blockwise(x, l, MASK, 3, EPS, None, g),
    'uniform_random': lambda x, l, g: corrupt_uniform_random(x, l, V, EPS, g),
    'all_masked': lambda x, l, g: corrupt_all_masked(x, l, MASK, g),
}
SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def ragged_batch(draw):
    "A batch whose rows each have a prompt, a (possibly empty) contiguous response and padding."
    B, T = draw(st.integers(1, 4)), draw(st.integers(1, 14))
    x = torch.tensor(draw(st.lists(st.lists(st.integers(0, MASK - 1), min_size=T, max_size=T), min_size=B, max_size=B)))
    lm = torch.zeros(B, T, dtype=torch.long)
    for b in range(B):
        start = draw(st.integers(0, T)); stop = draw(st.integers(start, T))
        lm[b, start:stop] = 1
    seed = draw(st.integers(0, 2 ** 31))
    return x, lm, seed


def gens(seed, n, offset=0):
    return row_generators(sample_seeds(0, 8, 0, 1, 0, 8, base_seed=seed)[offset:offset + n], 'corruption')


@pytest.mark.parametrize('name', list(KERNELS))
@SETTINGS
@given(batch=ragged_batch())
def test_kernel_invariants(name, batch):
    x, lm, seed = batch
    state = torch.random.get_rng_state()
    xt, noise, p = KERNELS[name](x, lm, gens(seed, len(x)))
    assert torch.equal(torch.random.get_rng_state(), state), 'the global RNG was consumed'
    assert xt.shape == x.shape and noise.dtype == torch.bool and p.dtype == torch.float32
    assert not (noise & ~lm.bool()).any(), 'a prompt/pad position was corrupted'
    assert torch.equal(xt[~noise], x[~noise]), 'an uncorrupted position changed'
    assert ((p >= EPS - 1e-7) & (p <= 1)).all(), p
    assert ((xt >= 0) & (xt < V)).all()
    if name in ('uniform', 'blockwise', 'blockwise_flat', 'all_masked'): assert (xt[noise] == MASK).all()
    if name == 'all_masked': assert torch.equal(noise, lm.bool())


@pytest.mark.parametrize('name', ['uniform', 'blockwise', 'uniform_random'])
@SETTINGS
@given(batch=ragged_batch(), row=st.integers(0, 3))
def test_row_alone_equals_row_in_batch(name, batch, row):
    "Per-row generators make a row's noise independent of its batch-mates and of the padded length T."
    x, lm, seed = batch
    row = row % len(x)
    out = KERNELS[name](x, lm, gens(seed, len(x)))
    last = int(lm[row].nonzero().max()) + 1 if lm[row].any() else 1
    alone = KERNELS[name](x[row:row + 1, :last], lm[row:row + 1, :last], gens(seed, 1, row))
    for a, b in zip(alone, out):
        assert torch.equal(a, b[row:row + 1, :last])


@pytest.mark.parametrize('name', ['uniform', 'blockwise', 'uniform_random'])
def test_same_seed_same_output_different_seed_differs(name):
    x = torch.randint(0, MASK, (4, 32), generator=torch.Generator().manual_seed(0))
    lm = torch.ones_like(x)
    a, b, c = (KERNELS[name](x, lm, gens(s, 4)) for s in (1, 1, 2))
    for u, v in zip(a, b): assert torch.equal(u, v)
    assert not torch.equal(a[1], c[1])
    one_a = KERNELS[name](x, lm, torch.Generator().manual_seed(5))
    one_b = KERNELS[name](x, lm, torch.Generator().manual_seed(5))
    assert torch.equal(one_a[0], one_b[0])


@SETTINGS
@given(batch=ragged_batch(), bs=st.integers(1, 6), m=st.floats(0, 1), hl=st.sampled_from([0.1, 0.25, 1.0, None]))
def test_blockwise_exact_k(batch, bs, m, hl):
    "Every block masks exactly floor(m * n + 1/2) of its n supervised positions."
    x, lm, seed = batch
    B, T = x.shape
    _, noise, p = corrupt_blockwise(x, lm, MASK, bs, EPS, hl, gens(seed, B), m=torch.full((B,), m))
    for b in range(B):
        for s in range(0, T, bs):
            n = int(lm[b, s:s + bs].sum())
            assert int(noise[b, s:s + bs].sum()) == math.floor(m * n + 0.5)
    assert torch.allclose(p, torch.full_like(p, m))


def test_blockwise_drawn_levels_exact_k():
    x = torch.zeros(64, 20, dtype=torch.long); lm = torch.ones_like(x); lm[:, :3] = 0
    _, noise, p = corrupt_blockwise(x, lm, MASK, 8, EPS, 0.25, torch.Generator().manual_seed(0))
    for s in range(0, 20, 8):
        n = lm[:, s:s + 8].sum(1)
        m = p[:, s]
        assert torch.equal(noise[:, s:s + 8].sum(1), torch.floor(m * n + 0.5).long())
        assert torch.equal(p[:, s:s + 8], m[:, None].expand(-1, min(8, 20 - s)))  # one level per block
    assert p.min() >= EPS and p.max() <= 1 and p[:, 0].std() > 0.2                 # levels spread over (eps, 1)


def test_late_position_bias_measured():
    "Later offsets in a block are masked more often; without the bias all offsets are equally likely."
    n, L = 3000, 8
    x, lm = torch.zeros(n, 2 * L, dtype=torch.long), torch.ones(n, 2 * L, dtype=torch.long)
    freq = corrupt_blockwise(x, lm, MASK, L, EPS, 0.25, torch.Generator().manual_seed(0))[1].float()
    per_offset = freq.view(n, 2, L).mean((0, 1))
    assert (per_offset.diff() > 0).all(), per_offset
    assert per_offset[-1] > 1.5 * per_offset[0], per_offset   # faded bias (1 - m), averaged over drawn m: about 1.7x
    flat = corrupt_blockwise(x, lm, MASK, L, EPS, None, torch.Generator().manual_seed(0))[1].float()
    flat = flat.view(n, 2, L).mean((0, 1))
    assert (flat - flat.mean()).abs().max() < 0.04, flat
    # k=1: the single pick follows w / sum(w) (Plackett-Luce first choice).
    first = corrupt_blockwise(x, lm, MASK, L, EPS, 0.25, torch.Generator().manual_seed(1), m=torch.full((n,), 1 / L))[1]
    w = (late_bias_logits(L, 0.25) * (1 - 1 / L)).exp()             # the bias fades with the level: lambda (1 - m) j
    assert torch.allclose(first.float().view(n, 2, L).mean((0, 1)), w / w.sum(), atol=0.025)


def test_uniform_masking_rate_tracks_p():
    x = torch.zeros(2000, 16, dtype=torch.long); lm = torch.ones_like(x)
    for t in (0.1, 0.5, 0.9):
        _, noise, p = corrupt_uniform(x, lm, MASK, EPS, torch.Generator().manual_seed(0), t=torch.full((2000,), t))
        assert abs(noise.float().mean().item() - ((1 - EPS) * t + EPS)) < 0.01


def test_uniform_random_tokens_cover_vocab_and_stay_in_range():
    x = torch.zeros(200, 32, dtype=torch.long); lm = torch.ones_like(x)
    xt, noise, p = corrupt_uniform_random(x, lm, 7, EPS, torch.Generator().manual_seed(0), t=torch.ones(200))
    assert noise.all() and torch.equal(p, torch.ones_like(p))
    assert set(xt.unique().tolist()) == set(range(7))


@pytest.mark.parametrize('mode', T_SAMPLING)
def test_sample_t_range_and_one_draw_per_row(mode):
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    t = sample_t(16, g1, mode)
    assert ((t >= 0) & (t <= 1)).all()
    torch.rand(16, generator=g2)
    assert torch.equal(torch.rand(4, generator=g1), torch.rand(4, generator=g2))  # same generator state after


def test_stratified_global_split_invariance():
    seeds = sample_seeds(3, 12, 0, 1, 0, 12)
    full = sample_t(12, row_generators(seeds, 'corruption'), 'stratified', torch.arange(12), 12)
    parts = [sample_t(len(ix), row_generators(seeds[ix], 'corruption'), 'stratified', ix, 12)
             for ix in (torch.arange(0, 5), torch.arange(5, 6), torch.arange(6, 12))]
    assert torch.equal(torch.cat(parts), full)
    assert torch.equal((full * 12).floor().long(), torch.arange(12))


def test_empty_batches_and_bad_inputs():
    for name, k in KERNELS.items():
        for shape in ((0, 5), (3, 0)):
            x = torch.zeros(shape, dtype=torch.long)
            xt, noise, p = k(x, x, [torch.Generator() for _ in range(shape[0])])
            assert xt.shape == noise.shape == p.shape == shape, name
    x = torch.zeros(2, 4, dtype=torch.long)
    with pytest.raises(ValueError, match='differs'): corrupt_uniform(x, x[:, :3], MASK)
    with pytest.raises(ValueError, match=r'\[B, T\]'): corrupt_uniform(x[0], x[0], MASK)
    with pytest.raises(ValueError, match='eps'): corrupt_uniform(x, x, MASK, eps=1.5)
    with pytest.raises(ValueError, match='block_size'): corrupt_blockwise(x, x, MASK, 0)
    with pytest.raises(ValueError, match='half_life_ratio'): corrupt_blockwise(x, x, MASK, 2, half_life_ratio=0)
    with pytest.raises(ValueError, match='one per row'): corrupt_uniform(x, x, MASK, t=torch.ones(3))
    with pytest.raises(ValueError, match='known'): sample_t(2, None, 'sobol')
