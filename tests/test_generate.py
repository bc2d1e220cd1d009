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

from dllm_nb.block_diffusion import generate_block_diffusion, BlockDiffusionLM
from dllm_nb.checkpoint import load_checkpoint
from dllm_nb.mdlm import generate_mdlm, MaskedDiffusionLM
from dllm_nb.models import build_backbone, tiny_config
from dllm_nb.sampling import NEW

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


@settings(max_examples=8, deadline=None)
@given(prompts=prompt_lists, seed=st.integers(0, 1000), temperature=st.sampled_from([0.0, 1.0]),
       threshold=st.sampled_from([None, 0.03, 0.0]), window=st.sampled_from([None, 1, 4]))
def test_block_diffusion_batch_invariance_and_cache(prompts, seed, temperature, threshold, window):
    seeds = [seed + 7 * i for i in range(len(prompts))]
    kw = dict(max_blocks=3, block_size=3, steps_per_block=3, temperature=temperature, threshold=threshold,
              sliding_window=window)
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


@pytest.mark.parametrize('temperature,steps', [(0.0, 4), (0.0, 8), (1.0, 3), (1.0, 4)])
def test_block_threshold_one_is_the_schedule(temperature, steps):
    "No probability is above 1: threshold 1 (or more) writes the schedule sampler's tokens with the same calls."
    prompts, kw = [[5, 6, 7], [9], [10, 11, 12, 13]], dict(max_blocks=5, block_size=4, steps_per_block=steps,
                                                            temperature=temperature, seeds=[4, 5, 6])
    base = generate_block_diffusion(BD, prompts, **kw)
    for th in (1.0, 1.5):
        out = generate_block_diffusion(BD, prompts, **kw, threshold=th)
        assert torch.equal(out.canvas, base.canvas) and out.nfe == base.nfe
    assert generate_block_diffusion(BD, prompts, **kw, threshold=0.0).nfe == 5 < base.nfe   # one call per block


def _reference_block_diffusion(model, prompts, max_blocks, block_size, steps, temperature, seeds, threshold, use_cache):
    "The sampler before per-row blocks: blocks in lockstep, every row runs every step of a block (the naive reference)."
    from dllm_nb.core import randint_rows, row_generators
    from dllm_nb.block_diffusion import keep_schedule
    from dllm_nb.sampling import block_generators, predict_tokens, row_seeds, select_transfer
    from dllm_nb.block_diffusion import CachedContext, ReencodeContext
    B, V = len(prompts), model.backbone.get_input_embeddings().num_embeddings
    ctx = (CachedContext if use_cache else ReencodeContext)(model, prompts)
    gens, blocks, calls = row_generators(row_seeds(seeds, B), 'sampling'), [], 0
    for _ in range(max_blocks):
        bg = block_generators(gens)
        canvas = randint_rows(V, (B, block_size), bg)
        final, active = canvas.clone(), torch.ones(B, dtype=torch.bool)
        everything, prev_logits, prev_arg = torch.ones_like(canvas, dtype=torch.bool), None, None
        for n_keep in keep_schedule(block_size, steps):
            logits = ctx.logits(canvas, prev_logits).float(); calls += 1
            x0, conf = predict_tokens(logits, temperature, bg)
            noise, arg = randint_rows(V, (B, block_size), bg), logits.argmax(-1)
            keep = select_transfer(conf, everything, n_keep) | (conf > (2.0 if threshold is None else threshold))
            stable = (arg == prev_arg).all(-1) if prev_arg is not None else torch.zeros_like(active)
            done = active & (stable | keep.all(-1))
            keep = keep | done[:, None]
            final = torch.where(done[:, None], x0, final)
            canvas = torch.where(active[:, None], torch.where(keep, x0, noise), canvas)
            active, prev_logits, prev_arg = active & ~done, logits, arg
            if not active.any(): break
        blocks.append(final); ctx.commit(final)
    return torch.cat(blocks, 1), calls


@pytest.mark.parametrize('temperature,steps,threshold,use_cache', [(0.0, 4, None, True), (1.0, 3, None, True),
                                                                   (0.0, 8, 0.03, True), (1.0, 4, 0.02, False)])
def test_block_sampler_equals_naive_reference(temperature, steps, threshold, use_cache):
    "Each row runs its own blocks (a finished row moves on, no lockstep): same tokens as the lockstep sampler, fewer calls."
    prompts = [[5, 6, 7], [9], [10, 11, 12, 13], [14, 15]]
    kw = dict(block_size=4, temperature=temperature, seeds=[4, 5, 6, 7], threshold=threshold, use_cache=use_cache)
    fast = generate_block_diffusion(BD, prompts, max_blocks=5, steps_per_block=steps, **kw)
    ref, calls = _reference_block_diffusion(BD, prompts, 5, steps=steps, **kw)
    assert torch.equal(fast.canvas, ref) and fast.nfe <= calls


def test_block_threshold_commits_confident_tokens():
    "A model sure of token 9 everywhere: with a threshold every block ends after one call, all 9s; without, later."
    m = _model(BlockDiffusionLM, seed=8)
    _boost(m, 9, by=30.0)
    kw = dict(max_blocks=4, block_size=4, steps_per_block=4, seeds=[1, 2])
    out = generate_block_diffusion(m, [[5, 6], [7]], **kw, threshold=0.9)
    assert out.nfe == 4 and (out.canvas == 9).all()
    assert generate_block_diffusion(m, [[5, 6], [7]], **kw).nfe == 8                 # argmax repeats after 2 calls


def _training_logits(model, prompts, blocks, canvas, w):
    "Canvas logits of the block after `blocks` in the training geometry (prompt = prefix, blocks + canvas = response)."
    from dllm_nb.sampling import right_pad
    from dllm_nb.masks import build_batched_block_mask, build_encoder_mask
    from dllm_nb.block_diffusion import canvas_position_ids
    k, (B, b) = len(blocks), canvas.shape
    ids, _ = right_pad([p + torch.cat(blocks + [canvas], 1)[i].tolist() for i, p in enumerate(prompts)])
    P, R = torch.tensor([len(p) for p in prompts]), b * (k + 1)
    am = (torch.arange(ids.shape[1])[None] < (P + R)[:, None]).long()
    can = torch.cat([torch.zeros(B, b * k, dtype=torch.long), canvas], 1)
    with torch.no_grad():
        out = model(ids, can, build_encoder_mask(am, w), build_batched_block_mask(P, torch.full_like(P, R), ids.shape[1],
                    b, w), canvas_position_ids(P, R))
    return out.logits[:, b * k:]


@pytest.mark.parametrize('window', [1, 2, 5, 9, None])
def test_sliding_window_sampler_equals_training_forward(window):
    from dllm_nb.block_diffusion import CachedContext, ReencodeContext
    g = torch.Generator().manual_seed(window or 0)
    prompts = [[5, 6, 7], [8, 9, 10, 11, 12, 13, 14], [15]]
    blocks = [torch.randint(3, V, (3, 3), generator=g) for _ in range(3)]
    canvas = torch.randint(3, V, (3, 3), generator=g)
    want = _training_logits(BD, prompts, blocks, canvas, window)
    for ctx in (CachedContext(BD, prompts, window), ReencodeContext(BD, prompts, window), CachedContext(BD, prompts)):
        for blk in blocks: ctx.commit(blk)
        with torch.no_grad(): err = (ctx.logits(canvas) - want).abs().max().item()
        assert err < 1e-6 if ctx.w == window else err > 1e-5      # the window-blind context must fail the check


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
    from dllm_nb.tokenizer import load_tokenizer
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


@pytest.mark.parametrize('use_cache', [True, False])
def test_finished_rows_leave_the_batch(use_cache):
    "A row that wrote EOS is not computed again (later passes carry fewer rows); every row's tokens are as if alone."
    prompts, kw = [[5, 6, 7], [9, 10], [11]], dict(max_blocks=4, block_size=4, steps_per_block=4, temperature=1.0,
                                                   use_cache=use_cache)
    for s in range(30):                       # seeds where row 0 writes a token in block 1 that row 1 avoids in blocks 1-2
        seeds = [s, s + 1, s + 2]
        free = generate_block_diffusion(BD, prompts, **kw, seeds=seeds)          # no EOS: every row writes 4 blocks
        eos = next((t for t in free.canvas[0, :4].tolist() if t not in free.canvas[1, :8].tolist()), None)
        if eos is not None: break
    assert eos is not None
    rows = []
    def hook(m, a, k, o): rows.append(len(k['input_ids'] if k.get('input_ids') is not None else k['inputs_embeds']))
    h = BD.backbone.base_model.register_forward_hook(hook, with_kwargs=True)
    try: out = generate_block_diffusion(BD, prompts, **kw, seeds=seeds, eos_token_id=eos)
    finally: h.remove()
    for b in range(3):
        solo = generate_block_diffusion(BD, [prompts[b]], **kw, seeds=[seeds[b]], eos_token_id=eos)
        assert out.sequences[b] == solo.sequences[0]
    assert out.sequences[0] == free.canvas[0, :free.canvas[0].tolist().index(eos)].tolist()
    assert (out.canvas[0, 4:] == eos).all() and rows[0] == 3 and rows[-1] < 3 and out.canvas.shape[1] > 4
