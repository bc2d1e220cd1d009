"""Issue 23's proof that a mode is one file: a toy seventh mode, declared and registered here and nowhere in the library,
trains 3 steps through `dllm_nb.train.main` (the `python -m dllm_nb.train` code), saves `final/`, and samples it through
`dllm_nb.generate` (the entry point and the CLI); its settings are a config section with defaults, `--help` text and
validation feeding the one `ConfigError`."""
from dataclasses import dataclass, field
from typing import Optional

import pytest
import torch

from dllm_nb.config import ConfigError, config_help, config_to_dict, load_config, saved_config
from dllm_nb.loss import count_tokens, mdlm_loss
from dllm_nb.mdlm import masked_backbone, MaskedDiffusionLM, generate_mdlm
from dllm_nb.modes import MODES, get_mode, mode_of_model
from dllm_nb.registry import RUNTIME, Mode, register_mode
from dllm_nb.stages import Counts
from dllm_nb.strategies import uniform_masking

TINY = ['model.hidden_size=32', 'model.num_layers=2', 'model.num_heads=2', 'model.num_kv_heads=1',
        'data.train_size=24', 'data.val_size=8', 'train.global_batch_size=8', 'train.micro_batch_size=4',
        'train.warmup_steps=1', 'train.eval_every=0', 'train.log_every=1', 'train.save_every=0', 'train.max_steps=3']


@dataclass
class ToySettings:
    "The toy mode's settings = its `toy:` config section."
    gen_block: int = 4                      # toy: sampler block length
    loss_scale: float = 1.0                 # toy: multiplies the MDLM loss
    mask_token_id: Optional[int] = field(default=None, metadata=RUNTIME)
    def problems(self, cfg=None) -> list[str]:
        return [] if self.loss_scale > 0 else [f"toy.loss_scale={self.loss_scale} must be > 0"]
    @classmethod
    def from_config(cls, cfg, mask_token_id, vocab_size, pad_token_id) -> dict:
        return dict(gen_block=cfg.toy.gen_block, loss_scale=cfg.toy.loss_scale, mask_token_id=mask_token_id)


class ToyStrategy:
    "MDLM masking with a scaled loss (library pieces, assembled here)."
    name, Settings = 'toy', ToySettings
    def __init__(self, settings): self.settings = settings
    def prepare(self, batch): return uniform_masking(batch, self.settings.mask_token_id, 1e-3, 'iid')
    def denominators(self, stages): return Counts(sum(count_tokens(s.batch.loss_mask) for s in stages), torch.zeros((), dtype=torch.long))
    def loss(self, model, st, counts):
        b = st.batch
        p = mdlm_loss(model(input_ids=st.noisy_ids, attention_mask=b.attention_mask).logits, b.input_ids, st.noise_mask,
                      b.loss_mask, st.p_mask, counts.diffusion)
        return type(p)(p.loss * self.settings.loss_scale, p.dllm_loss, p.ar_loss)


class ToyLM(MaskedDiffusionLM):
    "The toy mode's model class (what its final/ names)."


def build_toy(cfg, tokenizer, backbone, verbose=True):
    mask_id = masked_backbone(cfg, tokenizer, backbone, verbose)
    return ToyLM(backbone), mask_id


calls = []
def sample_toy(model, prompts, tokenizer=None, max_new_tokens=32, steps=None, block_size=None, **kw):
    calls.append(block_size)
    return generate_mdlm(model, prompts, max_new_tokens, min(block_size or 4, max_new_tokens), max_new_tokens, tokenizer=tokenizer, **kw)


@pytest.fixture
def toy_mode():
    mode = register_mode(Mode('toy', ToySettings, ToyStrategy, build_toy, sample_toy, model_classes=(ToyLM,),
                              streams=dict(toy_noise=77)))
    yield mode
    del MODES['toy']
    from dllm_nb.core import STREAMS; STREAMS.pop('toy_noise', None)


def test_toy_mode_config_section(toy_mode):
    cfg = load_config(None, ['dllm.mode=toy', 'toy.gen_block=2'])
    assert cfg.toy.gen_block == 2 and get_mode('toy') is toy_mode
    assert config_help()['toy.loss_scale'] == ('float', 1.0, 'toy: multiplies the MDLM loss')
    assert 'mask_token_id' not in config_to_dict(cfg)['toy']                      # RUNTIME fields are not config keys
    assert saved_config(config_to_dict(cfg)) == cfg
    with pytest.raises(ConfigError, match=r"toy.loss_scale=0.0 must be > 0"): load_config(None, ['dllm.mode=toy', 'toy.loss_scale=0'])
    with pytest.raises(ConfigError, match=r"toy.gen_block=3 is set, but only dllm.mode=toy reads"):
        load_config(None, ['dllm.mode=mdlm', 'toy.gen_block=3'])


def test_toy_mode_trains_saves_and_samples(toy_mode, tmp_path, capsys):
    from dllm_nb.checkpoint import load_checkpoint
    from dllm_nb.generate import generate, main as generate_main
    from dllm_nb.train import main as train_main
    out = tmp_path / 'run'
    assert train_main(['--eval-n', '0', 'dllm.mode=toy', 'toy.gen_block=2', *TINY, f'output_dir={out}']) == 0
    lines = [l for l in (out / 'metrics.jsonl').read_text().splitlines() if '"loss"' in l]
    assert len(lines) == 3                                                       # 3 optimizer steps logged
    model, tok = load_checkpoint(out / 'final')
    assert type(model) is ToyLM and mode_of_model(model) is toy_mode
    res = generate(model, ['What is 1 + 2?'], tok, max_new_tokens=4, block_size=2)
    assert len(res.canvas[0]) == 4 and calls[-1] == 2                            # the toy sampler ran
    assert generate_main(['--checkpoint', str(out / 'final'), '--prompt', 'Hi', '--max-new-tokens', '4']) == 0
    assert capsys.readouterr().out.count('Hi -> ') == 1


def test_generate_steps_flags_have_one_meaning():
    "Issue 23: `--steps` is a total (mdlm); `--steps-per-block` is block diffusion's; the old double meaning is a named error."
    from dllm_nb.generate import _parser, steps_problem
    args = lambda *a: _parser().parse_args(['--checkpoint', 'x', *a])
    assert steps_problem(args('--steps', '8'), get_mode('mdlm')) is None
    assert steps_problem(args('--steps-per-block', '2'), get_mode('block_diffusion')) is None
    assert steps_problem(args('--steps', '4'), get_mode('block_diffusion')) == (
        "--steps is the total number of denoising steps; for this block_diffusion checkpoint (steps per block, what --steps "
        "meant for it before) write --steps-per-block 4")
    assert 'does not apply to a hybrid checkpoint' in steps_problem(args('--steps-per-block', '2'), get_mode('hybrid'))
