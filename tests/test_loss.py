"Property tests for dllm_nb.loss: reference equality, split invariance under global denominators, finiteness."
import pytest
import torch
from hypothesis import given, settings, strategies as st

from dllm_nb.corruption import corrupt_uniform
from dllm_nb.loss import (LossParts, ar_loss, ar_pair_count, ar_pair_mask, block_diffusion_loss, count_noise,
                          count_tokens, hybrid_loss, mdlm_loss, token_ce)

V, MASK = 8, 7
SETTINGS = settings(max_examples=25, deadline=None)


@st.composite
def ragged(draw):
    "Rows with a prompt, a possibly empty response, padding; random corruption and logits."
    B, T = draw(st.integers(1, 5)), draw(st.integers(2, 10))
    seed = draw(st.integers(0, 2 ** 31))
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, MASK, (B, T), generator=g)
    lm, attn = torch.zeros(B, T, dtype=torch.long), torch.zeros(B, T, dtype=torch.long)
    for b in range(B):
        start = draw(st.integers(0, T)); stop = draw(st.integers(start, T)); content = draw(st.integers(stop, T))
        lm[b, start:stop] = 1; attn[b, :content] = 1
    t = torch.tensor(draw(st.lists(st.floats(0, 1), min_size=B, max_size=B)))
    _, noise, p = corrupt_uniform(x0, lm, MASK, generator=g, t=t)
    logits = (3 * torch.randn(B, T, V, generator=g)).requires_grad_()
    cuts = sorted(set(draw(st.lists(st.integers(1, B - 1), max_size=3)))) if B > 1 else []
    return dict(x0=x0, lm=lm, attn=attn, noise=noise, p=p, logits=logits, cuts=[0, *cuts, B])


def reference_ce(z, y):
    "CE of one position by an explicit log-softmax (fp64)."
    z = z.double()
    return -(z[y] - z.max() - torch.log(torch.exp(z - z.max()).sum()))


def all_losses(d, sl, dens):
    "Every loss on the rows `sl`, with the given (global) denominators."
    lg, x0, lm, noise, p, attn = (d[k][sl] for k in ('logits', 'x0', 'lm', 'noise', 'p', 'attn'))
    pairs = ar_pair_mask(attn)
    return dict(
        mdlm=mdlm_loss(lg, x0, noise, lm, p, dens['sup']),
        hybrid=hybrid_loss(lg, x0, noise, lm, p, dens["noise"], dens["sup"], diffusion_weight=0.3, ar_logits=lg),
        bd=block_diffusion_loss(lg, x0, lm, dens['sup'], lg, x0, pairs, dens['pairs'], encoder_loss_weight=0.5),
        ar=ar_loss(lg, x0, pairs, dens['pairs']))


def global_dens(d, sl=slice(None)):
    return dict(sup=count_tokens(d['lm'][sl]), noise=count_noise(d['noise'][sl], d['lm'][sl]),
                pairs=ar_pair_count(d['attn'][sl]))


@SETTINGS
@given(d=ragged())
def test_matches_explicit_reference(d):
    lg, x0, lm, noise, p, attn = (d[k] for k in ('logits', 'x0', 'lm', 'noise', 'p', 'attn'))
    B, T = x0.shape
    diff = sum((reference_ce(lg[b, i], x0[b, i]) / p[b, i].double()
                for b in range(B) for i in range(T) if noise[b, i] and lm[b, i]), torch.zeros((), dtype=torch.float64))
    flat = sum((reference_ce(lg[b, i], x0[b, i]) for b in range(B) for i in range(T) if lm[b, i]),
               torch.zeros((), dtype=torch.float64))
    pairs = ar_pair_mask(attn)
    ar = sum((reference_ce(lg[b, i - 1], x0[b, i]) for b in range(B) for i in range(1, T) if pairs[b, i]),
             torch.zeros((), dtype=torch.float64))
    n_sup, n_noise, n_pairs = (max(int(n), 1) for n in (lm.sum(), (noise & lm.bool()).sum(), pairs.sum()))
    out = all_losses(d, slice(None), global_dens(d))
    tol = dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out['mdlm'].loss.double(), diff / n_sup, **tol)
    torch.testing.assert_close(out['hybrid'].dllm_loss.double(), 0.3 * diff / n_noise, **tol)
    torch.testing.assert_close(out['hybrid'].loss, out['hybrid'].dllm_loss + out['hybrid'].ar_loss)  # alpha * D + A
    torch.testing.assert_close(out['bd'].dllm_loss.double(), flat / n_sup, **tol)
    torch.testing.assert_close(out['ar'].loss.double(), ar / n_pairs, **tol)
    torch.testing.assert_close(out['bd'].loss, out['bd'].dllm_loss + 0.5 * out['bd'].ar_loss)


@SETTINGS
@given(d=ragged())
def test_finite_losses_and_gradients(d):
    for name, parts in all_losses(d, slice(None), global_dens(d)).items():
        assert isinstance(parts, LossParts) and parts.loss.dtype == torch.float32
        assert torch.isfinite(parts.loss), name
        d['logits'].grad = None
        parts.loss.backward()
        assert torch.isfinite(d['logits'].grad).all(), name


@SETTINGS
@given(d=ragged())
def test_split_invariance_with_global_denominators(d):
    "Summing micro-batch losses computed with the global counts reproduces the full-batch loss and gradient."
    dens, cuts, leaf = global_dens(d), d['cuts'], d['logits']
    full = all_losses(d, slice(None), dens)
    parts = [all_losses(d, slice(a, b), dens) for a, b in zip(cuts[:-1], cuts[1:])]
    for name in full:
        total = sum(p[name].loss for p in parts)
        g_parts, = torch.autograd.grad(total, leaf, retain_graph=True)
        g_full, = torch.autograd.grad(full[name].loss, leaf, retain_graph=True)
        torch.testing.assert_close(total.detach(), full[name].loss.detach(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(g_parts, g_full, rtol=1e-5, atol=1e-6)


def test_local_denominators_break_split_invariance():
    "The failure the design avoids: per-micro-batch means averaged over micro-batches depend on the split."
    g = torch.Generator().manual_seed(0)
    x0 = torch.randint(0, MASK, (2, 8), generator=g)
    lm = torch.tensor([[1] * 8, [0] * 6 + [1] * 2])
    logits = torch.randn(2, 8, V, generator=g)
    noise, p = lm.bool(), torch.ones(2, 8)
    full = mdlm_loss(logits, x0, noise, lm, p, count_tokens(lm)).loss
    halves_global = sum(mdlm_loss(logits[i:i + 1], x0[i:i + 1], noise[i:i + 1], lm[i:i + 1], p[i:i + 1],
                                  count_tokens(lm)).loss for i in range(2))
    halves_local = sum(mdlm_loss(logits[i:i + 1], x0[i:i + 1], noise[i:i + 1], lm[i:i + 1], p[i:i + 1],
                                 count_tokens(lm[i:i + 1])).loss for i in range(2)) / 2
    torch.testing.assert_close(halves_global, full)
    assert (halves_local - full).abs() > 1e-3, (halves_local, full)


def test_zero_when_nothing_corrupted_and_empty_inputs():
    x0 = torch.randint(0, MASK, (3, 6)); lm = torch.ones_like(x0)
    logits = torch.randn(3, 6, V, requires_grad=True)
    out = mdlm_loss(logits, x0, torch.zeros_like(lm), lm, torch.ones(3, 6), count_tokens(lm))
    assert out.loss.item() == 0.0
    out.loss.backward(); assert torch.equal(logits.grad, torch.zeros_like(logits))
    e = torch.zeros(0, 4, dtype=torch.long)
    for parts in (mdlm_loss(torch.randn(0, 4, V), e, e, e, torch.ones(0, 4), 0),
                  block_diffusion_loss(torch.randn(0, 4, V), e, e, 0),
                  ar_loss(torch.randn(0, 4, V), e, e, 0)):
        assert parts.loss.item() == 0.0


def test_low_precision_logits_are_upcast():
    x0 = torch.randint(0, MASK, (2, 6)); lm = torch.ones_like(x0)
    logits = torch.randn(2, 6, V)
    ce16 = token_ce(logits.bfloat16(), x0, lm.bool())
    assert ce16.dtype == torch.float32
    torch.testing.assert_close(ce16, token_ce(logits.bfloat16().float(), x0, lm.bool()))


def test_shape_errors_name_the_problem():
    x0 = torch.zeros(2, 6, dtype=torch.long)
    with pytest.raises(ValueError, match=r'\[B, T, V\]'): mdlm_loss(torch.randn(2, 5, V), x0, x0, x0, x0, 1)
    with pytest.raises(ValueError, match='p_mask'): mdlm_loss(torch.randn(2, 6, V), x0, x0, x0, x0[:, :3], 1)
    with pytest.raises(ValueError, match='enc_input_ids'):
        block_diffusion_loss(torch.randn(2, 6, V), x0, x0, 1, enc_logits=torch.randn(2, 6, V))
