"""FlexAttention end to end (issue 14 part 5), on the CPU: forward only, since FlexAttention has no CPU backward
(training with `attn_implementation=flex_attention` needs a GPU; `bench/gpu.py` runs the full step there).

For block diffusion (with and without a sliding window), mdlm, hybrid and idlm the *training* forward (the strategy's
prepare + denominators + loss, as `train_step` runs it) gives the same loss and logits under `flex_attention` as under
`sdpa`, and on the Flex path no dense `[B, 1, Q, K]` mask is built: every dense builder is patched to raise. Also: the
chunked BlockMask build equals the one-shot one, and the mask descriptions (`DecoderMask`, `EncoderMask`) behave."""
import warnings

import pytest
import torch
import torch._dynamo
from hypothesis import given, settings, strategies as st
from torch.nn.attention.flex_attention import create_block_mask

import dllm_nb.hybrid as hybrid_mod
import dllm_nb.idlm as idlm_mod
import dllm_nb.mdlm as mdlm_mod
from dllm_nb import masks, models
from dllm_nb.hybrid import HybridDiffusionLM
from dllm_nb.idlm import IntrospectiveDiffusionLM
from dllm_nb.stages import Batch
from dllm_nb.masks import DecoderMask, EncoderMask, block_diffusion_mask_mod, chunked_block_mask, encoder_mask_mod
from dllm_nb.models import build_backbone, tiny_config
from dllm_nb.block_diffusion import BlockDiffusionLM
from dllm_nb.mdlm import MaskedDiffusionLM
from dllm_nb.modes import get_strategy

warnings.filterwarnings('ignore', message='.*flex_attention.*')
pytestmark = pytest.mark.filterwarnings('ignore:flex_attention called without torch.compile')   # per test, as pytest resets filters
V, MASK_ID = 64, 63


def raw_batch(prompts=(4, 2, 7), resps=(9, 5, 3), S=20, seed=0):
    "A ragged, right-padded batch: prompt then response (supervised), then padding."
    g = torch.Generator().manual_seed(seed)
    P, L = torch.tensor(prompts), torch.tensor(resps)
    k = torch.arange(S)[None]
    am = (k < (P + L)[:, None]).long()
    lm = ((k >= P[:, None]) & (am == 1)).long()
    return dict(input_ids=torch.randint(1, V - 1, (len(P), S), generator=g) * am, loss_mask=lm, attention_mask=am)


def pair(wrapper, **kw):
    "The same weights under `sdpa` and `flex_attention`, in training mode (the forward training runs)."
    # head_dim 32: torch 2.13's compiled CPU Flex kernel gives wrong values (even NaN) for head_dim 8/16 at some
    # sequence lengths on AVX2-only CPUs (measured 2026-12-03; e.g. causal, S=40, D=8); real models use head_dim >= 64
    cfg = tiny_config('llama', vocab_size=V, hidden_size=64, num_heads=2, num_kv_heads=1)
    torch.manual_seed(0)
    sdpa = wrapper(build_backbone(cfg, 'sdpa'), **kw)
    if getattr(sdpa, 'self_cond', None) is not None:         # a non-zero MLP, so self-conditioning changes the logits
        with torch.no_grad(): sdpa.self_cond.down.weight.normal_(0, .5)
    flex = wrapper(build_backbone(cfg, 'flex_attention'), **kw)
    flex.load_state_dict(sdpa.state_dict())
    return sdpa.train(), flex.train()


def prepare(strategy, batch, seeds, step=None):
    "The strategy's model input for a collated dict batch (of training step `step`; None: a validation batch)."
    return strategy.prepare(Batch.from_collated({k: v.clone() for k, v in batch.items()}, seeds, step=step))


def training_loss(strategy, model, batch, seeds, step=None):
    "One training forward as `train_step` runs it (prepare, the step's denominators, the loss), without backward."
    st = prepare(strategy, batch, seeds, step)
    with torch.no_grad(): return strategy.loss(model, st, strategy.denominators([st]))


def bd_inputs(strategy, st) -> dict:
    "`BlockDiffusionLM.forward` keyword arguments of a prepared block-diffusion batch."
    return st.model_inputs()


def _no_dense(*a, **k): raise AssertionError('the Flex training path built a dense mask')

DENSE_BUILDERS = [(models, 'dense_to_block_mask'), (mdlm_mod, 'mdlm_attention_mask'), (masks, 'build_batched_block_mask'),
                  (masks, 'build_encoder_mask'), (masks, 'dense_mask'), (idlm_mod, 'idlm_mask'),
                  (hybrid_mod, 'hybrid_mask')]


@pytest.fixture
def no_dense_masks(monkeypatch):
    "Inside the test, any dense mask builder raises."
    def arm():
        for mod, name in DENSE_BUILDERS: monkeypatch.setattr(mod, name, _no_dense)
    return arm


@pytest.fixture(autouse=True)
def static_shapes():
    # torch 2.13 CPU: a dynamic-shape recompile of the flex template fails to build; keep shapes static
    with torch._dynamo.config.patch(automatic_dynamic_shapes=False): yield


def check_same(strategy, sdpa, flex, arm, seeds=torch.tensor([3, 1, 4]), logits=None, step=None):
    batch = raw_batch()
    want = training_loss(strategy, sdpa, batch, seeds, step)
    want_logits = logits(sdpa, strategy, batch, seeds) if logits else None
    arm()                                                     # from here on a dense mask is an error
    got = training_loss(strategy, flex, batch, seeds, step)
    for name in ('loss', 'dllm_loss', 'ar_loss'):
        a, b = getattr(got, name, None), getattr(want, name, None)
        if isinstance(b, torch.Tensor): torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5, msg=name)
    assert want.loss > 0
    if logits: torch.testing.assert_close(logits(flex, strategy, batch, seeds), want_logits, atol=1e-5, rtol=0)


def bd_logits(model, strategy, batch, seeds):
    with torch.no_grad(): out = model(**bd_inputs(strategy, prepare(strategy, batch, seeds)))
    return torch.cat([out.logits.flatten(), out.encoder_logits.flatten()])


@pytest.mark.parametrize('window', [None, 6])
def test_block_diffusion_flex_training_forward(no_dense_masks, window):
    sdpa, flex = pair(BlockDiffusionLM)
    strat = get_strategy('block_diffusion', vocab_size=V, block_size=4, sliding_window=window)
    check_same(strat, sdpa, flex, no_dense_masks, logits=bd_logits)


def mdlm_logits(model, strategy, batch, seeds):
    st = prepare(strategy, batch, seeds)
    ids, am = st.noisy_ids, st.batch.attention_mask
    with torch.no_grad(): return model(ids, am).logits


def test_mdlm_flex_training_forward(no_dense_masks):
    sdpa, flex = pair(MaskedDiffusionLM)
    check_same(get_strategy('mdlm', mask_token_id=MASK_ID), sdpa, flex, no_dense_masks, logits=mdlm_logits)


def hybrid_logits(model, strategy, batch, seeds):
    st = prepare(strategy, batch, seeds)
    with torch.no_grad(): out = model(st.batch.input_ids, masked_indices=st.noise_mask, attention_mask=st.batch.attention_mask)
    return torch.cat([out.logits.flatten(), out.causal_logits.flatten()])


def test_hybrid_flex_training_forward(no_dense_masks):
    sdpa, flex = pair(HybridDiffusionLM, block_size=4, mask_token_id=MASK_ID)
    check_same(get_strategy('hybrid', mask_token_id=MASK_ID, block_size=4), sdpa, flex, no_dense_masks, logits=hybrid_logits)


def test_idlm_flex_training_forward(no_dense_masks):
    sdpa, flex = pair(IntrospectiveDiffusionLM, block_size=2)
    check_same(get_strategy('idlm', mask_token_id=MASK_ID, vocab_size=V, block_size=2), sdpa, flex, no_dense_masks)


def idlm_clean_logits(model, strategy, batch, seeds):
    st = prepare(strategy, batch, seeds, step=0)
    assert st.warmup
    with torch.no_grad(): return model(st.batch.input_ids, attention_mask=st.batch.attention_mask).logits


def test_idlm_warmup_flex_training_forward(no_dense_masks):
    "The AR warm-up (idlm.ar_warmup_steps): the clean copy's own pass is the same on the Flex path."
    sdpa, flex = pair(IntrospectiveDiffusionLM, block_size=2)
    strat = get_strategy('idlm', mask_token_id=MASK_ID, vocab_size=V, block_size=2, ar_warmup_steps=1)
    check_same(strat, sdpa, flex, no_dense_masks, logits=idlm_clean_logits, step=0)


def test_guard_catches_the_dense_path(no_dense_masks):
    "The guard can fail: the same Flex model fed dense masks (the pre-issue-14 path) hits `dense_to_block_mask`."
    _, flex = pair(BlockDiffusionLM)
    strat = get_strategy('block_diffusion', vocab_size=V, block_size=4)
    inputs = bd_inputs(strat, prepare(strat, raw_batch(), torch.tensor([3, 1, 4])))
    dense = {**inputs, 'encoder_mask': inputs['encoder_mask'].dense(), 'decoder_mask': inputs['decoder_mask'].dense()}
    no_dense_masks()
    with torch.no_grad():
        flex(**inputs)                                                        # the descriptions: fine
        with pytest.raises(AssertionError, match='built a dense mask'): flex(**dense)


BM_FIELDS = ('kv_num_blocks', 'kv_indices', 'full_kv_num_blocks', 'full_kv_indices', 'q_num_blocks', 'q_indices',
             'full_q_num_blocks', 'full_q_indices')


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_chunked_block_mask_is_the_one_shot_block_mask(data):
    "Any chunking of a ragged batch (uneven last chunk included) gives the one-shot BlockMask, tile table for tile table."
    B, E = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 70))
    rl = torch.tensor(data.draw(st.lists(st.integers(0, E), min_size=B, max_size=B)))
    pl = torch.tensor([data.draw(st.integers(0, E - int(r))) for r in rl])
    bs, w, tile = data.draw(st.integers(1, 9)), data.draw(st.none() | st.integers(1, 20)), data.draw(st.sampled_from([16, 32]))
    spec = DecoderMask(pl, rl, E, bs, w)
    R = spec.canvas_len
    mod = block_diffusion_mask_mod(pl, rl, E, bs, w)
    one = create_block_mask(mod, B, None, R, E + R, device='cpu', BLOCK_SIZE=tile)
    cells = data.draw(st.integers(1, B * R * (E + R)))
    got = chunked_block_mask(mod, B, R, E + R, device='cpu', BLOCK_SIZE=tile, max_cells=cells)
    for name in BM_FIELDS: assert torch.equal(getattr(got, name), getattr(one, name)), name
    assert torch.equal(got.to_dense(), one.to_dense())
    assert torch.equal(spec.dense(), masks.build_batched_block_mask(pl, rl, E, bs, w))


def test_mask_specs():
    "Shapes without building, `.to` keeps the geometry, bad geometry fails where the description is made."
    pl, rl, am = torch.tensor([3, 0]), torch.tensor([5, 2]), torch.tensor([[1] * 8 + [0] * 2, [1] * 2 + [0] * 8])
    d, e = DecoderMask(pl, rl, 10, 2, 3), EncoderMask(am, 4)
    assert d.shape == (2, 1, 5, 15) and e.shape == (2, 1, 10, 10)
    assert d.to('cpu').canvas_len == 5 and torch.equal(d.to('cpu').dense(), d.dense())
    assert torch.equal(e.block_mask(BLOCK_SIZE=16).to_dense(),
                       create_block_mask(encoder_mask_mod(torch.nn.functional.pad(am, (0, 6)), 4), 2, None, 10, 10,
                                         device='cpu', BLOCK_SIZE=16).to_dense())
    with pytest.raises(ValueError, match='do not fit enc_len=6'): DecoderMask(pl, rl, 6, 2)
    with pytest.raises(ValueError, match='block_size=0'): DecoderMask(pl, rl, 10, 0)
