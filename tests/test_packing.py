"""Packing (data.packing=greedy) is exact: a packed batch gives every example the loss and gradient it gets unpacked
(same noise), no example's logits depend on another example of its row, and a deliberately leaky mask fails both."""
import pytest
import torch

import dllm_nb.masks as masks
import dllm_nb.mdlm as mdlm_mod
import dllm_nb.hybrid as hybrid_mod
import dllm_nb.idlm as idlm_mod
import dllm_nb.packing as packing
from dllm_nb.ar import CausalLM
from dllm_nb.block_diffusion import BlockDiffusionLM
from dllm_nb.collate import DLLMCollator
from dllm_nb.hybrid import HybridDiffusionLM
from dllm_nb.idlm import IntrospectiveDiffusionLM
from dllm_nb.mdlm import MaskedDiffusionLM
from dllm_nb.models import build_backbone, tiny_config
from dllm_nb.modes import get_strategy
from dllm_nb.packing import first_fit_decreasing, pack_collated, padding_fraction
from dllm_nb.stages import Batch

PAD, EOS, MASK, V = 0, 1, 63, 64
LENGTHS = [(5, 20), (3, 2), (7, 6), (2, 1), (4, 9), (6, 3), (2, 5), (3, 3), (0, 13)]   # (prompt, response): one long, several short, one all supervised
MODES = dict(mdlm=dict(collate=dict(response_fill=4), settings=dict(mask_token_id=MASK)),
             block_diffusion=dict(collate=dict(block_size=4, response_window=True),
                                  settings=dict(vocab_size=V, block_size=4, pad_token_id=PAD, self_cond_prob=0.5)),
             ar=dict(collate={}, settings={}),
             hybrid=dict(collate=dict(block_size=4, response_fill=6), settings=dict(mask_token_id=MASK, block_size=4)),
             idlm=dict(collate={}, settings=dict(mask_token_id=MASK, vocab_size=V, block_size=2)))
WRAPPERS = dict(mdlm=MaskedDiffusionLM, ar=CausalLM, block_diffusion=lambda bb: BlockDiffusionLM(bb, self_conditioning=True, block_size=4),
                hybrid=lambda bb: HybridDiffusionLM(bb, block_size=4, mask_token_id=MASK),
                idlm=lambda bb: IntrospectiveDiffusionLM(bb, block_size=2))


def examples(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [dict(input_ids=torch.randint(2, 60, (p + r,), generator=g).tolist(), loss_mask=[0] * p + [1] * r) for p, r in LENGTHS]


def make(mode, seed=0, attn='sdpa'):
    torch.manual_seed(seed)
    bb = build_backbone(tiny_config(vocab_size=V, hidden_size=32, num_layers=2, num_heads=2, num_kv_heads=1), attn_implementation=attn)
    return WRAPPERS[mode](bb).train(), get_strategy(mode, **MODES[mode]['settings']), DLLMCollator(PAD, EOS, **MODES[mode]['collate'])


def batches(collator, exs):
    seeds = torch.arange(len(exs)) * 7919 + 11
    unpacked = collator(exs)
    return Batch.from_collated(unpacked, seeds), Batch.from_collated(pack_collated(unpacked, PAD), seeds)


def loss_and_grads(model, strategy, batch):
    model.zero_grad()
    st = strategy.prepare(batch)
    loss = strategy.loss(model, st, strategy.denominators([st])).loss
    loss.backward()
    return loss.item(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_ffd_packs_the_toy_batch_tighter():
    model, strategy, collator = make('block_diffusion')
    u, p = batches(collator, examples())
    assert len(p.input_ids) < len(u.input_ids) and p.input_ids.shape[1] == u.input_ids.shape[1]
    coll = collator(examples())
    assert padding_fraction(pack_collated(coll, PAD)) < padding_fraction(coll)
    assert first_fit_decreasing([5, 3, 8, 2, 4], 8) == [[2], [0, 1], [3, 4]]


def _leaky(monkeypatch):
    "Document predicates that let every example see the whole row (the positive control)."
    monkeypatch.setattr(masks, 'with_documents', lambda mod, doc_ids: mod)
    monkeypatch.setattr(mdlm_mod, 'document_mask_mod', lambda doc_ids: (lambda b, h, q, kv: q >= 0))
    monkeypatch.setattr(packing, 'document_mask_mod', lambda doc_ids: (lambda b, h, q, kv: q >= 0))   # hybrid, idlm: the
    whole = lambda mod, W, d, am=None: masks.dense_mask(packing.two_copy_documents(mod, W, d, am), len(d), 2 * W, 2 * W)
    for m in (hybrid_mod, idlm_mod): monkeypatch.setattr(m, 'two_copy_dense', whole)   # predicate on every cell, leaky now
    rows = masks.packed_block_diffusion_rows
    monkeypatch.setattr(masks, 'packed_block_diffusion_rows', lambda o, *a, **k: rows(torch.zeros_like(o), *a, **k))


def _close(a, b, rel=1e-6):
    return abs(a - b) <= rel * abs(b)


@pytest.mark.parametrize('mode', list(MODES))
def test_packed_loss_and_gradients_equal_unpacked(mode, monkeypatch):
    model, strategy, collator = make(mode)
    u, p = batches(collator, examples())
    lu, gu = loss_and_grads(model, strategy, u)
    lp, gp = loss_and_grads(model, strategy, p)
    assert _close(lp, lu), (mode, lp, lu)
    bad = [n for n in gu if (gp[n] - gu[n]).abs().max() > 1e-6 * gu[n].abs().max() + 1e-9]
    assert gp.keys() == gu.keys() and not bad, (mode, bad[:4])
    _leaky(monkeypatch)                                             # the positive control: the test can fail
    ll, gl = loss_and_grads(model, strategy, p)
    assert not _close(ll, lu) or any((gl[n] - gu[n]).abs().max() > 1e-6 * gu[n].abs().max() + 1e-9 for n in gu)


def _logits(mode, model, strategy, b):
    "Every logit the packed batch's loss can read, per position: [B, T, V] (+ the canvas [B, R, V] for block diffusion)."
    with torch.no_grad():
        if mode == 'block_diffusion':
            st = strategy.prepare(b)
            out = model(**st.model_inputs(), return_encoder_logits=True)
            return out.encoder_logits, out.logits, st.window.canvas_doc_ids
        if mode in ('hybrid', 'idlm'):                              # both copies' logits side by side: [B, T, 2V]
            st, T = strategy.prepare(b), b.input_ids.shape[1]
            if mode == 'hybrid':
                out = model(b.input_ids, masked_indices=st.noise_mask, attention_mask=b.attention_mask, doc_ids=b.doc_ids)
                return torch.cat([out.logits, out.causal_logits], -1), None, None
            lg = model(b.input_ids, st.noised.noisy_ids, b.attention_mask, doc_ids=b.doc_ids).logits
            return torch.cat([lg[:, :T], lg[:, T:]], -1), None, None
        return model(input_ids=b.input_ids, attention_mask=b.attention_mask, doc_ids=b.doc_ids).logits, None, None


@pytest.mark.parametrize('mode', list(MODES))
def test_perturbing_one_example_changes_no_other(mode, monkeypatch):
    model, strategy, collator = make(mode)
    model.eval()
    exs = examples()
    _, p = batches(collator, exs)
    changed = [dict(e) for e in exs]
    r = next(r for r, row in enumerate(p.doc_ids.tolist()) if len(set(row) - {-1}) > 1)   # a row shared by examples
    victim = int(p.doc_ids[r, 0])                                   # its first example: the others come after it
    changed[victim] = dict(input_ids=[(t + 5) % 58 + 2 for t in exs[victim]['input_ids']], loss_mask=exs[victim]['loss_mask'])
    _, p2 = batches(collator, changed)
    assert torch.equal(p.doc_ids, p2.doc_ids)
    def others_equal():
        (e1, c1, d1), (e2, c2, d2) = _logits(mode, model, strategy, p), _logits(mode, model, strategy, p2)
        keep = (p.doc_ids != victim) & (p.doc_ids >= 0)
        ok = torch.allclose(e1[keep], e2[keep], atol=1e-6, rtol=0)
        if c1 is not None: ok &= torch.allclose(c1[(d1 != victim) & (d1 >= 0)], c2[(d1 != victim) & (d1 >= 0)], atol=1e-6, rtol=0)
        return ok, not torch.allclose(e1[p.doc_ids == victim], e2[p.doc_ids == victim])
    ok, victim_moved = others_equal()
    assert ok and victim_moved
    _leaky(monkeypatch)
    assert not others_equal()[0], 'the leaky mask should let the perturbation reach the other examples'


# ---------------------------------------------------------------- the trainer, the sampler, the config, overlong rows
from dllm_nb.config import ConfigError, load_config
from dllm_nb.distributed import GlobalBatchSampler
from packing_data import ragged_chats


def tiny_cfg(tmp_path, data, **over):
    o = ['dllm.mode=block_diffusion', 'model.hidden_size=32', 'model.num_layers=2', 'model.num_heads=2', 'model.num_kv_heads=1',
         f'data.dataset={data}', 'data.max_len=96', 'data.val_size=8', 'train.global_batch_size=8', 'train.micro_batch_size=4',
         'train.max_steps=5', 'train.warmup_steps=1', 'train.eval_every=0', 'train.log_every=1', 'train.save_every=3',
         'data.packing=greedy', f'output_dir={tmp_path}'] + [f'{k}={v}' for k, v in over.items()]
    return load_config(None, o, world_size=1)


FILL = {'mdlm': {'mdlm.response_fill': 8}, 'hybrid': {'hybrid.response_fill': 8}}   # a short EOS tail: rows are shared


@pytest.mark.parametrize('mode,grouped', [('block_diffusion', False), ('block_diffusion', True), ('hybrid', False)])
def test_resume_is_exact_with_packing(tmp_path, mode, grouped):
    from dllm_nb.trainer import Trainer
    data, g = ragged_chats(tmp_path / 'chats.jsonl'), {'data.group_by_length': grouped, 'dllm.mode': mode, **FILL.get(mode, {})}
    full = Trainer(tiny_cfg(tmp_path / 'full', data, **g), quiet=True).fit()
    first = Trainer(tiny_cfg(tmp_path / 'part', data, **g), quiet=True).fit(stop_at=4)     # "killed" after step 4
    tr = Trainer(tiny_cfg(tmp_path / 'part', data, **g, **{'train.resume': 'auto'}), quiet=True)
    second = tr.fit()                                                                  # resumes at the step-3 checkpoint
    loss = lambda recs: [(r['step'], r['loss'], r['grad_norm']) for r in recs]
    assert loss(first) == loss(full[:4]) and loss(second) == loss(full[3:])          # exact, not close
    bs = [tr.micro_batch(m) for s in range(5) for m in tr.sampler.micro_batches(s)]
    assert all(b.doc_ids is not None for b in bs)
    assert grouped or sum(len(b.input_ids) for b in bs) < sum(len(b.sample_seeds) for b in bs)   # the run did pack


def test_group_by_length_groups_each_global_batch(tmp_path):
    g = torch.Generator().manual_seed(0)
    lengths = (torch.randn(400, generator=g) * 0.8 + 5.5).exp().long()               # lognormal, like chat data
    plain, grouped = GlobalBatchSampler(400, 16, 4), GlobalBatchSampler(400, 16, 4, lengths=lengths)
    assert sorted(grouped.epoch_order(0).tolist()) == list(range(400))                # still each example once an epoch
    spread = lambda s: sum((lengths[s.global_batch(k)].max() - lengths[s.global_batch(k)].min()).item() for k in range(25))
    assert spread(grouped) < spread(plain) / 4
    with pytest.raises(ValueError, match='group_by_length'):                          # a resume must not change the order
        plain.load_state_dict(grouped.state_dict())
    with pytest.raises(ValueError, match='group_by_length'):
        grouped.load_state_dict(plain.state_dict())


@pytest.mark.parametrize('mode', ['dflash'])
def test_modes_without_document_masks_refuse_packing(mode, tmp_path):
    with pytest.raises(ConfigError, match=rf'data.packing=greedy is not available for dllm.mode={mode}.*data.group_by_length=true'):
        load_config(None, [f'dllm.mode={mode}', 'data.packing=greedy', f'output_dir={tmp_path}'], world_size=1)
    with pytest.raises(ConfigError, match='shift_logits'):
        load_config(None, ['block_diffusion.shift_logits=true', 'data.packing=greedy', f'output_dir={tmp_path}'], world_size=1)
    with pytest.raises(ConfigError, match='supervise_padding'):
        load_config(None, ['dllm.supervise_padding=true', 'data.packing=greedy', f'output_dir={tmp_path}'], world_size=1)


@pytest.mark.parametrize('mode', ['block_diffusion', 'hybrid', 'idlm'])
def test_an_example_longer_than_the_row_follows_the_overlong_policy(tmp_path, caplog, mode):
    from dllm_nb.data import load_data
    from dllm_nb.modes import build_collator
    data = ragged_chats(tmp_path / 'chats.jsonl', long_reply=60)                       # some replies of ~120 tokens
    for policy, verb in (('drop', 'dropped'), ('truncate', 'truncated')):
        cfg = tiny_cfg(tmp_path / policy, data, **{'data.max_len': 64, 'data.overlong': policy, 'dllm.mode': mode})
        with caplog.at_level('WARNING'):
            tok, train, _ = load_data(cfg)
        assert f'longer than max_len=64 tokens and were {verb}' in caplog.text
        assert max(len(x) for x in train['input_ids']) <= 64
        packed = build_collator(cfg, tok)([train[i] for i in range(16)])              # every example lands, whole, in a row
        assert sorted(set(packed['doc_ids'].flatten().tolist()) - {-1}) == list(range(16))
    with pytest.raises(ValueError, match='example 1 has 9 tokens.*data.max_len and data.overlong'):
        first_fit_decreasing([3, 9], 8)                                               # the packer names the example


@pytest.mark.parametrize('mode', ['block_diffusion', 'mdlm', 'hybrid', 'idlm'])
def test_validation_is_the_same_packed_or_not(tmp_path, mode):
    from dllm_nb.trainer import Trainer, validate
    data, res, fill = ragged_chats(tmp_path / 'chats.jsonl'), {}, FILL.get(mode, {})
    for packing in ('none', 'greedy'):
        tr = Trainer(tiny_cfg(tmp_path / packing, data, **{'data.packing': packing, 'dllm.mode': mode,
                                                          'data.val_size': 16, 'train.eval_batches': 2, **fill}), quiet=True)
        bs = tr.val_batches()
        res[packing] = validate(tr.model, tr.strategy, bs), sum(len(b.input_ids) for b in bs)
    (v0, rows0), (v1, rows1) = res['none'], res['greedy']
    assert rows1 < rows0 and v0['val_tokens'] == v1['val_tokens']
    assert abs(v1['val_loss'] - v0['val_loss']) <= 1e-6 * abs(v0['val_loss'])


def test_dense_and_flex_masks_come_from_one_predicate():
    "Every packed mask's dense form equals its predicate on a grid, and the same predicate builds the Flex BlockMask (the kernel"
    " itself runs in test_flex / bench/gpu.py: compiled Flex on this CPU costs ~20 s a shape)."
    for mode in ('block_diffusion', 'mdlm'):
        strategy, collator = get_strategy(mode, **MODES[mode]['settings']), DLLMCollator(PAD, EOS, **MODES[mode]['collate'])
        _, p = batches(collator, examples())
        B, T = p.input_ids.shape
        if mode == 'block_diffusion':
            w = strategy.prepare(p).window
            specs = [(w.decoder_mask.dense(), w.decoder_mask.mask_mod(), w.decoder_mask), (w.encoder_mask.dense(), w.encoder_mask.mask_mod(), w.encoder_mask)]
        else:
            specs = [(mdlm_mod.mdlm_attention_mask(p.attention_mask, T, doc_ids=p.doc_ids).expand(B, 1, T, T),
                      mdlm_mod.mdlm_mask_mod(p.attention_mask, doc_ids=p.doc_ids), None)]
        for dense, mod, spec in specs:
            assert torch.equal(dense, masks.dense_mask(mod, *dense.shape[:1], *dense.shape[2:]))
            if spec is not None:
                bm = spec.block_mask(BLOCK_SIZE=8)
                assert bm.shape == spec.shape
        bm = mdlm_mod.mdlm_block_mask(p.attention_mask, B, T, doc_ids=p.doc_ids, BLOCK_SIZE=8)
        assert bm.shape == (B, 1, T, T)


def _sliding_backbone(family):
    "A tiny backbone whose layers use a 4-token sliding window (shorter than the longest example): Mistral (every layer), Gemma 3 (mixed)."
    from transformers import Gemma3TextConfig, MistralConfig
    kw = dict(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
              sliding_window=4, max_position_embeddings=128)
    conf = MistralConfig(**kw) if family == 'mistral' else Gemma3TextConfig(**kw, head_dim=16, layer_types=['sliding_attention', 'full_attention'])
    torch.manual_seed(0)
    return build_backbone(conf, attn_implementation='eager')


@pytest.mark.parametrize('family', ['mistral', 'gemma3'])
@pytest.mark.parametrize('mode', list(MODES))
def test_packing_keeps_sliding_window_layers(mode, family):
    "The document predicate composes with the backbone's per-layer windows (03a_layer_masks): packed == unpacked on sliding layers."
    bb = _sliding_backbone(family)
    model = WRAPPERS[mode](bb).train()
    strategy, collator = get_strategy(mode, **MODES[mode]['settings']), DLLMCollator(PAD, EOS, **MODES[mode]['collate'])
    u, p = batches(collator, examples())
    lu, gu = loss_and_grads(model, strategy, u)
    lp, gp = loss_and_grads(model, strategy, p)
    assert _close(lp, lu), (mode, family, lp, lu)
    assert all((gp[n] - gu[n]).abs().max() <= 1e-6 * gu[n].abs().max() + 1e-9 for n in gu), (mode, family)


def test_two_copy_dense_and_block_masks_come_from_one_predicate():
    "hybrid and idlm on packed rows: the dense mask is the BlockMask's own predicate on a grid, and the BlockMask skips no tile it needs."
    _, p = batches(DLLMCollator(PAD, EOS, **MODES['hybrid']['collate']), examples())
    (B, W), am, d, t = p.input_ids.shape, p.attention_mask, p.doc_ids, 8
    for dense, bm in ((hybrid_mod.hybrid_mask(W, 4, am, doc_ids=d), hybrid_mod.hybrid_block_mask(W, 4, am, BLOCK_SIZE=t, doc_ids=d)),
                      (idlm_mod.idlm_mask(W, 2, am, doc_ids=d), idlm_mod.idlm_block_mask(W, 2, am, BLOCK_SIZE=t, doc_ids=d))):
        assert bm.shape == (B, 1, 2 * W, 2 * W) and torch.equal(dense, masks.dense_mask(bm.mask_mod, B, 2 * W, 2 * W))
        n = -(-2 * W // t)
        tiles = torch.nn.functional.pad(dense, (0, n * t - 2 * W, 0, n * t - 2 * W)).view(B, 1, n, t, n, t).any(3).any(-1)
        assert torch.equal(bm.to_dense().bool(), tiles)


@pytest.mark.filterwarnings('ignore:flex_attention called without torch.compile')
def test_two_copy_flex_forward_equals_dense(monkeypatch, mode='hybrid'):
    """Packed `[x_t ; x_0]` rows: the Flex `BlockMask` from the one predicate gives the sdpa (dense) logits, and no dense mask is
    built. hybrid only (idlm builds its BlockMask with the same `two_copy_documents`; one compiled shape costs ~25 CPU s here)."""
    import torch._dynamo
    cfg = tiny_config('llama', vocab_size=V, hidden_size=64, num_heads=2, num_kv_heads=1)   # head_dim 32: see test_flex.pair
    torch.manual_seed(0)
    sdpa, flex = (WRAPPERS[mode](build_backbone(cfg, attn)).eval() for attn in ('sdpa', 'flex_attention'))
    flex.load_state_dict(sdpa.state_dict())
    strategy, collator = get_strategy(mode, **MODES[mode]['settings']), DLLMCollator(PAD, EOS, **MODES[mode]['collate'])
    _, p = batches(collator, examples())
    want = _logits(mode, sdpa, strategy, p)[0]
    def no_dense(*a, **k): raise AssertionError('the Flex path built a dense mask')
    for mod, name in ((hybrid_mod, 'hybrid_mask'), (idlm_mod, 'idlm_mask'), (masks, 'dense_mask')): monkeypatch.setattr(mod, name, no_dense)
    with torch._dynamo.config.patch(automatic_dynamic_shapes=False): got = _logits(mode, flex, strategy, p)[0]
    keep = p.doc_ids >= 0
    torch.testing.assert_close(got[keep], want[keep], atol=1e-5, rtol=0)
