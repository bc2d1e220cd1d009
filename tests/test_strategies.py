"""The strategy protocol end to end: every YAML preset and every mode builds its typed settings from the config, a
misspelt setting is an error naming the accepted ones, and a step's counts do not depend on how the batch is split."""
from dataclasses import fields
from pathlib import Path
from typing import get_args, get_type_hints

import pytest
import torch

import dllm_nb.dflash, dllm_nb.idlm   # noqa: F401  (register the 'dflash' and 'idlm' strategies)
from dllm_nb.config import DLLMConfig, load_config
from dllm_nb.stages import Batch, Counts
from dllm_nb.strategies import STRATEGIES, get_strategy, settings_from_config

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
    own = dict(mdlm=['mdlm.ar_warmup_steps=3', 'mdlm.ar_loss_weight=0.5'], hybrid=['hybrid.block_size=8', 'hybrid.ar_loss_alpha=0.5'],
               block_diffusion=['block_diffusion.block_size=8', 'block_diffusion.scored_blocks=one', 'block_diffusion.self_cond_prob=0.25'],
               idlm=['idlm.block_size=2', 'idlm.clean_loss_weight=0.5'],
               dflash=['dflash.block_size=6', 'dflash.target=x', 'dflash.num_blocks_per_sample=3'], ar=[])[mode]   # its own section
    s = build(load_config(None, [f'dllm.mode={mode}', 'dllm.eps=0.01', *own])).settings
    got = {f.name: getattr(s, f.name) for f in fields(s)}
    want = dict(mdlm=dict(eps=0.01, mask_token_id=5, ar_warmup_steps=3, ar_loss_weight=0.5),
                hybrid=dict(eps=0.01, block_size=8, ar_loss_alpha=0.5),
                block_diffusion=dict(eps=0.01, block_size=8, vocab_size=64, scored_blocks='one', self_cond_prob=0.25),
                idlm=dict(block_size=2, clean_loss_weight=0.5, vocab_size=64),
                dflash=dict(block_size=6, num_blocks_per_sample=3), ar={})[mode]
    assert {k: got[k] for k in want} == want


def test_unknown_setting_names_the_accepted_ones():
    with pytest.raises(ValueError, match=r"mode 'hybrid' has no setting\(s\) \['half_life'\]; its settings are \[.*'half_life_ratio'"):
        get_strategy('hybrid', mask_token_id=3, half_life=0.5)
    assert set(STRATEGIES) >= set(MODES) == set(get_args(get_type_hints(DLLMConfig)['mode']))   # every mode tested here


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
