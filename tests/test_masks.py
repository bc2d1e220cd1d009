"Property tests (hypothesis) for dllm_nb.masks over random ragged batches."
import warnings

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st, HealthCheck
from torch.nn.attention.flex_attention import flex_attention

from dllm_nb.masks import (bd3_training_mask, block_diffusion_block_mask, block_diffusion_mask_mod,
                           build_batched_block_mask, build_block_diffusion_training_mask, build_encoder_mask,
                           dense_mask, encoder_block_mask, encoder_mask_mod, stack_example_masks, to_additive)

# flex_attention runs eagerly on purpose here (CPU, tiny sizes); pytest resets module-level filters per test, so mark them
pytestmark = pytest.mark.filterwarnings('ignore:flex_attention called without torch.compile')
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def ragged(draw, max_b=5, max_e=40):
    "A ragged batch: (prefix_len [B], response_len [B], enc_len, block_size, sliding_window); empty responses included."
    B = draw(st.integers(1, max_b))
    E = draw(st.integers(1, max_e))
    rl = [draw(st.integers(0, E)) for _ in range(B)]
    pl = [draw(st.integers(0, E - L)) for L in rl]
    bs = draw(st.integers(1, 12))
    w = draw(st.one_of(st.none(), st.integers(1, E + 4)))
    return torch.tensor(pl), torch.tensor(rl), E, bs, w


def rule(P, L, E, bs, w, R):
    "The DESIGN.md table, cell by cell in pure Python: the third, most literal implementation."
    keep = [[False] * (E + R) for _ in range(R)]
    for j in range(R):
        if j >= L: keep[j][E + j] = True; continue
        qb = j // bs
        for k in range(E):
            rel = k - P
            vis = rel < 0 or (rel < L and rel // bs < qb)
            keep[j][k] = vis and (w is None or k >= P + qb * bs - w + 1)
        for i in range(R): keep[j][E + i] = i // bs == qb and i < L
    return torch.tensor(keep, dtype=torch.bool).reshape(R, E + R)


def check_decoder(mask, pl, rl, E, bs):
    "Invariants of a [B,1,R,E+R] decoder mask (no window)."
    for b, (P, L) in enumerate(zip(pl.tolist(), rl.tolist())):
        m = mask[b, 0]
        assert m.any(-1).all(), f'example {b}: an all-masked row'
        if L == 0: continue
        assert m[:L, :P].all(), f'example {b}: prompt not fully visible'
        assert not m[:, P + L:E].any(), f'example {b}: tail padding visible'
        for i in range(1, -(-L // bs)):
            j = i * bs
            assert not m[j, P + i * bs], f'example {b}: block {i} sees its own clean block (leak)'
            assert m[j, P + (i - 1) * bs], f'example {b}: block {i} misses the previous clean block'
        blk = torch.arange(L) // bs
        assert torch.equal(m[:L, E:E + L], blk[:, None] == blk[None]), f'example {b}: canvas not block-diagonal'


@SETTINGS
@given(ragged())
def test_batched_equals_per_example_and_rule(case):
    pl, rl, E, bs, w = case
    mb = build_batched_block_mask(pl, rl, E, bs, w)
    R = max(1, int(rl.max()))
    assert mb.shape == (len(pl), 1, R, E + R) and mb.dtype == torch.bool
    assert torch.equal(mb, stack_example_masks(pl, rl, E, bs, w))
    assert torch.equal(mb, dense_mask(block_diffusion_mask_mod(pl, rl, E, bs, w), len(pl), R, E + R))
    for b in range(len(pl)):
        assert torch.equal(mb[b, 0], rule(pl[b].item(), rl[b].item(), E, bs, w, R)), f'example {b}'


@SETTINGS
@given(ragged())
def test_decoder_invariants(case):
    pl, rl, E, bs, _ = case
    check_decoder(build_batched_block_mask(pl, rl, E, bs), pl, rl, E, bs)


def test_checker_catches_a_leak():
    "The invariant checker is able to fail: an off-by-one (<=) mask that shows a block its own clean tokens."
    pl, rl, E, bs = torch.tensor([2]), torch.tensor([8]), 12, 2
    m = build_batched_block_mask(pl, rl, E, bs)
    leaky = m.clone()
    for j in range(8): leaky[0, 0, j, 2 + j // bs * bs:2 + (j // bs + 1) * bs] = True
    with pytest.raises(AssertionError, match='leak'): check_decoder(leaky, pl, rl, E, bs)


@SETTINGS
@given(ragged())
def test_sliding_subset_and_constant_within_block(case):
    pl, rl, E, bs, w = case
    w = w or 3
    full, slid = build_batched_block_mask(pl, rl, E, bs), build_batched_block_mask(pl, rl, E, bs, w)
    assert not (slid & ~full).any()
    for b, L in enumerate(rl.tolist()):
        for s in range(0, L, bs):
            rows = slid[b, 0, s:min(s + bs, L)]
            assert (rows == rows[:1]).all(), f'example {b}: block at {s} not constant'


@SETTINGS
@given(ragged(), st.sampled_from([torch.float32, torch.bfloat16, torch.float16]))
def test_additive_values(case, dtype):
    pl, rl, E, bs, w = case
    keep = build_batched_block_mask(pl, rl, E, bs, w)
    add = build_batched_block_mask(pl, rl, E, bs, w, dtype=dtype)
    assert add.dtype == dtype
    assert (add[keep] == 0).all() and (add[~keep] == torch.finfo(dtype).min).all()
    assert torch.equal(to_additive(keep, dtype), add)


@SETTINGS
@given(ragged())
def test_block_at_least_response_degenerates(case):
    pl, rl, E, _, _ = case
    bs = max(1, int(rl.max()))
    m = build_batched_block_mask(pl, rl, E, bs)
    for b, (P, L) in enumerate(zip(pl.tolist(), rl.tolist())):
        assert not m[b, 0, :, P:E].any()                       # no clean response key at all
        assert m[b, 0, :L, E:E + L].all()                      # fully bidirectional canvas


def test_errors():
    with pytest.raises(ValueError, match='prefix \\+ response_length <= enc_len'):
        build_block_diffusion_training_mask(3, 9, 11, 2)
    with pytest.raises(ValueError, match='prefix=-1'): build_block_diffusion_training_mask(-1, 2, 11, 2)
    with pytest.raises(ValueError, match='block_size=0'): build_block_diffusion_training_mask(0, 2, 11, 0)
    with pytest.raises(ValueError, match='example 2: prefix=5, response_length=7'):
        build_batched_block_mask(torch.tensor([0, 1, 5]), torch.tensor([3, 3, 7]), 11, 2)
    with pytest.raises(ValueError, match='example 1: prefix=-2'):
        build_batched_block_mask(torch.tensor([0, -2]), torch.tensor([3, 3]), 11, 2)
    with pytest.raises(ValueError, match='block_size=0'):
        build_batched_block_mask(torch.tensor([0]), torch.tensor([3]), 11, 0)


def attend(mask_or_block, B, Q, K, flex, H=2, D=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(B, H, Q, D, generator=g), *torch.randn(2, B, H, K, D, generator=g)
    if flex: return flex_attention(q, k, v, block_mask=mask_or_block)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask_or_block)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ragged(max_b=3, max_e=70), st.sampled_from([16, 32, 128]))
def test_dense_equals_block_mask_forward(case, tile):
    pl, rl, E, bs, w = case
    dm = build_batched_block_mask(pl, rl, E, bs, w)
    bm = block_diffusion_block_mask(pl, rl, E, bs, w, BLOCK_SIZE=tile)
    B, _, R, K = dm.shape
    torch.testing.assert_close(attend(dm, B, R, K, False), attend(bm, B, R, K, True), atol=1e-5, rtol=1e-5)


def test_block_mask_detects_a_different_mask():
    "The dense-vs-flex comparison is able to fail: a BlockMask of other geometry gives other outputs."
    pl, rl, E = torch.tensor([3, 0]), torch.tensor([9, 5]), 20
    dm = build_batched_block_mask(pl, rl, E, 2)
    bm = block_diffusion_block_mask(pl, rl, E, 3, BLOCK_SIZE=16)
    B, _, R, K = dm.shape
    assert not torch.allclose(attend(dm, B, R, K, False), attend(bm, B, R, K, True), atol=1e-5)


@st.composite
def attention_masks(draw):
    B, S = draw(st.integers(1, 4)), draw(st.integers(1, 40))
    rows = []
    for _ in range(B):
        n = draw(st.integers(0, S)); left = draw(st.booleans())
        rows.append([0] * (S - n) + [1] * n if left else [1] * n + [0] * (S - n))
    return torch.tensor(rows), draw(st.one_of(st.none(), st.integers(1, S + 2)))


@settings(max_examples=20, deadline=None)
@given(attention_masks())
def test_encoder_mask(case):
    am, w = case
    B, S = am.shape
    m = build_encoder_mask(am, w)[:, 0]
    assert torch.equal(m, dense_mask(encoder_mask_mod(am, w), B, S, S)[:, 0])      # builder == predicate
    q, k = torch.arange(S)[:, None], torch.arange(S)[None]
    want = (k <= q) & (am.bool()[:, None, :] | (k == q)) & (True if w is None else (q - k < w))
    assert torch.equal(m, want)
    assert m.any(-1).all()                                    # no all-masked row
    assert not (m & ~(k <= q)).any()                          # causal
    assert not m[:, :, :][(am == 0)[:, None, :].expand(B, S, S) & (k != q)].any()  # pad keys hidden off-diagonal
    torch.testing.assert_close(attend(m[:, None], B, S, S, False),
                               attend(encoder_block_mask(am, w, BLOCK_SIZE=16), B, S, S, True), atol=1e-5, rtol=1e-5)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 24), st.integers(1, 9))
def test_bd3_mask(L, bs):
    m = bd3_training_mask(L, bs)
    assert m.shape == (2 * L, 2 * L)
    blk = torch.arange(L) // bs
    assert torch.equal(m[:L, :L], blk[:, None] == blk[None])
    assert torch.equal(m[:L, L:], blk[None] < blk[:, None])
    assert torch.equal(m[L:, L:], blk[None] <= blk[:, None])
    assert not m[L:, :L].any()
    assert m.any(-1).all()


def test_bd3_block_size_one_is_causal():
    m = bd3_training_mask(7, 1)
    assert torch.equal(m[7:, 7:], torch.ones(7, 7, dtype=torch.bool).tril())
    assert torch.equal(m[:7, :7], torch.eye(7, dtype=torch.bool))
