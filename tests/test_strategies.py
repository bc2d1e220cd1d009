"""The strategy protocol end to end: every YAML preset and every mode builds its typed settings from the config, a
misspelt setting is an error naming the accepted ones, and a step's counts do not depend on how the batch is split."""
from dataclasses import fields
from pathlib import Path

import pytest
import torch

from dllm_nb.config import load_config
from dllm_nb.modes import get_mode, get_strategy, mode_names, settings_from_config
from dllm_nb.stages import Batch, Counts

ROOT = Path(__file__).resolve().parents[1]
MODES = ('mdlm', 'hybrid', 'block_diffusion', 'idlm', 'dflash', 'ar')


def build(cfg):
    return get_strategy(cfg.dllm.mode, **settings_from_config(cfg, mask_token_id=5, vocab_size=64, pad_token_id=0))


@pytest.mark.parametrize('preset', sorted(p.name for p in (ROOT / 'configs').glob('*.yaml')))
def test_every_preset_builds_its_strategy(preset):
    cfg = load_config(ROOT / 'configs' / preset, ['dflash.target=x'] if 'dflash' in preset else [])
    assert build(cfg).name == cfg.dllm.mode


@pytest.mark.parametrize('mode', MODES)
def test_config_values_reach_the_settings(mode):
    own = dict(mdlm=['mdlm.ar_warmup_steps=3', 'mdlm.ar_loss_weight=0.5'], hybrid=['hybrid.block_size=8', 'hybrid.diffusion_weight=0.5'],
               block_diffusion=['block_diffusion.block_size=8', 'block_diffusion.scored_blocks=one', 'block_diffusion.self_cond_prob=0.25'],
               idlm=['idlm.block_size=2', 'idlm.clean_loss_weight=0.5', 'idlm.ar_warmup_steps=7'],
               dflash=['dflash.block_size=6', 'dflash.target=x', 'dflash.num_blocks_per_sample=3'], ar=[])[mode]   # its own section
    s = build(load_config(None, [f'dllm.mode={mode}', 'dllm.eps=0.01', *own])).settings
    got = {f.name: getattr(s, f.name) for f in fields(s)}
    want = dict(mdlm=dict(eps=0.01, mask_token_id=5, ar_warmup_steps=3, ar_loss_weight=0.5),
                hybrid=dict(eps=0.01, block_size=8, diffusion_weight=0.5),
                block_diffusion=dict(eps=0.01, block_size=8, vocab_size=64, scored_blocks='one', self_cond_prob=0.25),
                idlm=dict(block_size=2, clean_loss_weight=0.5, ar_warmup_steps=7, vocab_size=64),
                dflash=dict(block_size=6, num_blocks_per_sample=3), ar={})[mode]
    assert {k: got[k] for k in want} == want


def test_unknown_setting_names_the_accepted_ones():
    with pytest.raises(ValueError, match=r"mode 'hybrid' has no setting\(s\) \['half_life'\]; its settings are \[.*'half_life_ratio'"):
        get_strategy('hybrid', mask_token_id=3, half_life=0.5)
    assert set(MODES) == set(mode_names())                              # every registered built-in mode tested here
    assert all(get_mode(m).Strategy.name == m for m in MODES)           # one registry: the strategy is the mode's record's


@pytest.mark.parametrize('mode', MODES)
def test_counts_do_not_depend_on_the_split(mode):
    g = torch.Generator().manual_seed(0)
    B, L = 6, 24
    ids = torch.randint(6, 64, (B, L), generator=g)
    lens = torch.randint(12, L + 1, (B,), generator=g)
    am = (torch.arange(L)[None] < lens[:, None]).long()
    lm = am * (torch.arange(L)[None] >= 4)
    seeds = torch.arange(B) * 7 + 1
    strat = build(load_config(None, [f'dllm.mode={mode}'] + (['dflash.target=x', 'dflash.block_size=4'] if mode == 'dflash' else [])))

    def counts(cuts):
        stages = [strat.prepare(Batch.from_collated(dict(input_ids=ids[a:b], loss_mask=lm[a:b], attention_mask=am[a:b]),
                                                    seeds[a:b], range(a, b), B)) for a, b in zip(cuts, cuts[1:])]
        c = strat.denominators(stages)
        assert isinstance(c, Counts)
        return int(c.diffusion), int(c.ar)
    assert counts([0, B]) == counts([0, 1, 4, B]) == counts([0, 3, B])
    assert counts([0, B])[0] > 0


# --- hybrid (08c_hybrid): the model the strategy trains, and its sampler -------------------------------------------
from dllm_nb.hybrid import HybridDiffusionLM, HybridOutput, generate_hybrid, generate_hybrid_ar, hybrid_mask_mod  # noqa: E402
import dllm_nb.hybrid as hybrid_mod  # noqa: E402
from dllm_nb.models import build_backbone, tiny_config  # noqa: E402

V, MASK = 64, 63


def tiny_hybrid(cls=HybridDiffusionLM, block_size=4):
    torch.manual_seed(0)
    return cls(build_backbone(tiny_config('llama', vocab_size=V, hidden_size=32, num_layers=2)), block_size=block_size,
               mask_token_id=MASK).eval()


def hybrid_batch(B=3, L=14):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 60, (B, L), generator=g)
    am = torch.ones(B, L, dtype=torch.long); am[1, 10:] = 0
    return ids, am, torch.rand(B, L, generator=g) < 0.5


def test_hybrid_ar_logits_are_a_plain_causal_pass():
    m, (ids, am, noise) = tiny_hybrid(), hybrid_batch()
    out = m(ids, masked_indices=noise, attention_mask=am)
    plain = m.backbone(input_ids=ids, attention_mask=am).logits            # HF's causal pass on the clean tokens
    v = am.bool()
    err = (out.causal_logits - plain)[v].abs().max().item()
    assert err < 1e-5, f"the clean copy's logits differ from a plain causal pass by {err}: its mask must be token-causal"
    assert (m.causal_logits(ids, am) - plain)[v].abs().max().item() < 1e-5


def diffusion_leaks(model, ids, noise, am, b=4):
    "(q, j): changing clean token j moves the diffusion logits of masked q though j is masked in q's block or in a later one."
    base, found = model(ids, masked_indices=noise, attention_mask=am).logits, []
    for j in range(ids.shape[1]):
        x = ids.clone(); x[0, j] = (x[0, j] + 1) % 60
        lg = model(x, masked_indices=noise, attention_mask=am).logits
        hidden = lambda q: (noise[0, j] and j // b == q // b) or j // b > q // b
        found += [(q, j) for q in range(ids.shape[1]) if noise[0, q] and hidden(q)
                  and not torch.allclose(lg[0, q], base[0, q], atol=1e-6)]
    return found, base


class LeakyHybrid(HybridDiffusionLM):
    "Wrong on purpose: noisy block k also reads clean block k."
    @staticmethod
    def mask_mod(L, b, am):
        good = hybrid_mask_mod(L, b, am)
        return lambda bi, h, q, kv: good(bi, h, q, kv) | ((q < L) & (kv >= L) & ((kv - L) // b == q // b))


def test_hybrid_diffusion_logits_never_see_what_they_predict():
    m, (ids, am, noise) = tiny_hybrid(), hybrid_batch()
    found, base = diffusion_leaks(m, ids, noise, am)
    assert not found, f"diffusion logits at masked positions depend on hidden clean tokens (query, key): {found[:8]}"
    q = next(i for i in range(4, ids.shape[1]) if noise[0, i])
    x = ids.clone(); x[0, q // 4 * 4 - 1] += 1                              # positive control: the previous block
    assert not torch.allclose(m(x, masked_indices=noise, attention_mask=am).logits[0, q], base[0, q]), \
        "the diffusion logits ignore the clean previous block: the noisy copy must attend to earlier clean blocks"
    leaky, _ = diffusion_leaks(LeakyHybrid(m.backbone, 4, MASK).eval(), ids, noise, am)
    assert leaky, "the leak check did not catch a noisy copy that reads its own clean block"


class OracleDrafts(HybridDiffusionLM):
    "Drafts from a known continuation (row found by its first token), positions 3, 10, 17, ... wrong."
    table: dict = {}
    def forward(self, input_ids, *, masked_indices, attention_mask=None):
        out = super().forward(input_ids, masked_indices=masked_indices, attention_mask=attention_mask)
        logits = torch.full_like(out.logits, -10.)
        for r in range(len(input_ids)):
            full = self.table[int(input_ids[r, 0])]
            for p in range(min(input_ids.shape[1], len(full))): logits[r, p, full[p] if p % 7 != 3 else (full[p] + 1) % V] = 10.
        return HybridOutput(logits, causal_logits=out.causal_logits)


@pytest.mark.parametrize('block_size', [1, 4, 5])
def test_hybrid_sampler_is_lossless_wrt_its_ar_head(block_size, monkeypatch):
    prompts = [[1, 7, 9], [2, 5, 8, 11, 13, 4, 6], [3, 9], [4, 12, 30, 31, 32]]
    m = tiny_hybrid(OracleDrafts, block_size)
    ref = generate_hybrid_ar(m, prompts, 21, chat=False)
    OracleDrafts.table = {p[0]: p + g for p, g in zip(prompts, ref.sequences)}
    out = generate_hybrid(m, prompts, 21, chat=False)
    assert out.sequences == ref.sequences, "self-speculative output differs from greedy decoding with the AR head"
    if block_size > 1: assert out.nfe < ref.nfe, f"{out.nfe} calls for {ref.nfe} tokens: accepted drafts should save calls"
    eos = generate_hybrid(tiny_hybrid(), prompts, 9, chat=False, eos_token_id=ref.sequences[0][2])
    assert all(len(s) <= 9 for s in eos.sequences) and len(eos.sequences[0]) <= 2
    monkeypatch.setattr(hybrid_mod, 'accepted_length', lambda d, v: len(d))   # control: accept without verifying
    if block_size > 1:
        assert generate_hybrid(m, prompts, 21, chat=False).sequences != ref.sequences, "the lossless check cannot fail"


# ---------------------------------------------------------------- logits only on the rows a loss scores (07_models RowLogits)
TINY_RUN = ['model.hidden_size=32', 'model.num_layers=1', 'model.num_heads=2', 'model.num_kv_heads=1', 'data.train_size=8',
            'data.val_size=0', 'train.global_batch_size=4', 'train.micro_batch_size=4', 'train.warmup_steps=0',
            'train.eval_every=0', 'train.save_every=0', 'train.max_steps=1']


@pytest.mark.parametrize('over', [
    ['dllm.mode=ar'],
    ['dllm.mode=mdlm'],
    ['dllm.mode=mdlm', 'mdlm.shift_logits=true'],
    ['dllm.mode=mdlm', 'mdlm.ar_warmup_steps=5'],                               # the causal pass of the AR warm-up
    ['dllm.mode=hybrid'],                                                        # both copies' rows of one pass
    ['dllm.mode=idlm'],
    ['dllm.mode=idlm', 'idlm.ar_warmup_steps=5'],                               # the clean copy alone (AR warm-up)
    ['dllm.mode=block_diffusion', 'block_diffusion.self_conditioning=true'],
    ['dllm.mode=block_diffusion', 'block_diffusion.self_conditioning=false', 'block_diffusion.shift_logits=true',
     'block_diffusion.corruption=random', 'block_diffusion.encoder_loss_weight=2.0'],
], ids=['ar', 'mdlm', 'mdlm-shift', 'mdlm-ar-phase', 'hybrid', 'idlm', 'idlm-ar-phase', 'bd-self-cond', 'bd-shift-encoder-loss'])
def test_losses_project_only_the_rows_they_score(over, tmp_path):
    "Loss and every gradient equal the full-logits path's, while the head sees only the supervised rows."
    from dllm_nb.trainer import Trainer, step_denominators
    tr = Trainer(load_config(None, TINY_RUN + [f'output_dir={tmp_path}', *over]), quiet=True)
    model, strategy = tr.model.train(), tr.strategy
    stages = [strategy.prepare(tr.micro_batch(m)) for m in tr.sampler.micro_batches(0)]
    counts = step_denominators(strategy, stages)
    rows = []
    hook = model.backbone.lm_head.register_forward_hook(lambda m, a, o: rows.append(a[0].reshape(-1, a[0].shape[-1]).shape[0]))
    res = {}
    for full in (True, False):
        model.full_logits, rows[:] = full, []
        torch.manual_seed(0)
        loss = sum(strategy.loss(model, st, counts).loss for st in stages)
        model.zero_grad(); loss.backward()
        res[full] = (loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}, sum(rows))
    hook.remove()
    (l_full, g_full, r_full), (l_lazy, g_lazy, r_lazy) = res[True], res[False]
    torch.testing.assert_close(l_lazy, l_full, rtol=1e-5, atol=1e-6)
    assert g_lazy.keys() == g_full.keys() and g_full
    for n in g_full: torch.testing.assert_close(g_lazy[n], g_full[n], rtol=1e-4, atol=1e-6, msg=n)
    assert r_lazy < r_full, (r_lazy, r_full)                 # the head projected fewer rows
