"""Options of block-diffusion adaptation from a pretrained causal LM (issue 22): the encoder's next-token loss on the
response only (the `ar` mode's pairs), and the verified sampler on a shifted model."""
import pytest
import torch

from dllm_nb.config import load_config
from dllm_nb.stages import Batch
from dllm_nb.modes import get_strategy, settings_from_config


def _batch():
    g = torch.Generator().manual_seed(0)
    B, L = 4, 20
    ids = torch.randint(6, 64, (B, L), generator=g)
    am = (torch.arange(L)[None] < torch.tensor([20, 17, 12, 15])[:, None]).long()
    lm = am * (torch.arange(L)[None] >= 6)
    return Batch.from_collated(dict(input_ids=ids, loss_mask=lm, attention_mask=am), torch.arange(B) + 1, range(B), B)


def _strategy(mode, *over):
    cfg = load_config(None, [f'dllm.mode={mode}', *over])
    return get_strategy(mode, **settings_from_config(cfg, mask_token_id=5, vocab_size=64, pad_token_id=0))


@pytest.mark.parametrize('tokens', ['all', 'response'])
def test_encoder_loss_tokens_counts(tokens):
    b = _batch()
    bd = _strategy('block_diffusion', f'block_diffusion.encoder_loss_tokens={tokens}', 'block_diffusion.self_conditioning=false')
    n_bd = int(bd.denominators([bd.prepare(b)]).ar)
    ar = _strategy('ar')
    n_ar = int(ar.denominators([ar.prepare(b)]).ar)
    n_all = int((b.attention_mask[:, 1:] & b.attention_mask[:, :-1]).sum())
    assert n_bd == (n_ar if tokens == 'response' else n_all) and n_ar < n_all


def test_encoder_loss_tokens_is_checked():
    with pytest.raises(Exception, match='encoder_loss_tokens'):
        _strategy('block_diffusion', 'block_diffusion.encoder_loss_tokens=prompt')


def _cli(*args):
    import os, subprocess, sys
    env = {**os.environ, 'PYTHONPATH': os.getcwd(), 'OMP_NUM_THREADS': '1'}
    return subprocess.run([sys.executable, '-m', 'dllm_nb.generate', *args], capture_output=True, text=True, env=env, timeout=300)


def test_generate_cli_verified_is_the_encoders_greedy_output(tmp_path):
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.ar import generate_autoregressive_cached
    from dllm_nb.models import build_backbone, tiny_config
    from dllm_nb.block_diffusion import BlockDiffusionLM
    tok = load_tokenizer(); torch.manual_seed(0)
    model = BlockDiffusionLM(build_backbone(tiny_config('llama', vocab_size=len(tok), hidden_size=32)), self_conditioning=False,
                             shift_logits=True, block_size=4).eval()
    model.save_pretrained(tmp_path / 'ckpt')
    prompts = ['What is 12 + 34?', 'Reverse the words: cat dog']
    r = _cli('--checkpoint', str(tmp_path / 'ckpt'), *[a for p in prompts for a in ('--prompt', p)], '--max-new-tokens', '10',
             '--device', 'cpu', '--verified')
    assert r.returncode == 0, r.stderr
    ref = generate_autoregressive_cached(model, prompts, 10, tok).sequences
    assert r.stdout.splitlines() == [f'{p} -> {tok.decode(s)}' for p, s in zip(prompts, ref)]
    bad = _cli('--checkpoint', str(tmp_path / 'ckpt'), '--prompt', 'Hi', '--verified', '--threshold', '0.9')
    assert bad.returncode == 2 and '--verified is greedy' in bad.stderr


def test_generate_cli_dtype(tmp_path, monkeypatch, capsys):
    "`--dtype bfloat16` decodes with bf16 weights (the sampler sees them), and the output is the bf16 backbone's greedy decoding."
    import dllm_nb.generate as G
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.ar import generate_autoregressive_cached
    from dllm_nb.models import build_backbone, tiny_config
    from dllm_nb.block_diffusion import BlockDiffusionLM
    tok = load_tokenizer(); torch.manual_seed(0)
    model = BlockDiffusionLM(build_backbone(tiny_config('llama', vocab_size=len(tok), hidden_size=32)), self_conditioning=False,
                             shift_logits=True, block_size=4).eval()
    model.save_pretrained(tmp_path / 'ckpt')
    seen, orig = [], G.generate
    monkeypatch.setattr(G, 'generate', lambda m, *a, **kw: seen.append(next(m.parameters()).dtype) or orig(m, *a, **kw))
    args = ['--checkpoint', str(tmp_path / 'ckpt'), '--prompt', 'What is 12 + 34?', '--max-new-tokens', '6', '--device', 'cpu', '--verified']
    assert G.main(args + ['--dtype', 'bfloat16']) == 0 and seen == [torch.bfloat16]
    ref = generate_autoregressive_cached(model.to(torch.bfloat16), ['What is 12 + 34?'], 6, tok).sequences[0]
    assert capsys.readouterr().out.splitlines() == [f'What is 12 + 34? -> {tok.decode(ref)}']
    assert G.main(args) == 0 and seen[-1] == torch.float32         # default: as saved


def test_generate_cli_max_draft_rows(tmp_path, capsys):
    "`--max-draft-rows` reaches the verified sampler (0: no drafts, the same greedy output); without --verified it is refused."
    import dllm_nb.generate as G
    import dllm_nb.block_diffusion.speculative as BS
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.models import build_backbone, tiny_config
    from dllm_nb.block_diffusion import BlockDiffusionLM
    tok = load_tokenizer(); torch.manual_seed(0)
    BlockDiffusionLM(build_backbone(tiny_config('llama', vocab_size=len(tok), hidden_size=32)), self_conditioning=False,
                     shift_logits=True, block_size=4).eval().save_pretrained(tmp_path / 'ckpt')
    args = ['--checkpoint', str(tmp_path / 'ckpt'), '--prompt', 'What is 12 + 34?', '--prompt', 'Hi', '--max-new-tokens', '6',
            '--device', 'cpu', '--verified']
    canvases, orig = [], BS.VerifyContext.verify
    def spy(self, canvas, skip=0): canvases.append(canvas is not None); return orig(self, canvas, skip)
    BS.VerifyContext.verify = spy
    try:
        assert G.main(args) == 0; drafted = capsys.readouterr().out
        assert all(canvases); canvases.clear()
        assert G.main(args + ['--max-draft-rows', '0']) == 0
        assert capsys.readouterr().out == drafted and canvases and not any(canvases)
    finally: BS.VerifyContext.verify = orig
    assert G.main(args[:-1] + ['--max-draft-rows', '1']) == 2 and '--verified decoding only' in capsys.readouterr().err


@pytest.mark.parametrize('shift', [False, True])
def test_validation_scores_the_encoder_loss_like_training(shift):
    "The validation loss is the training objective: eval mode scores the encoder's next-token loss too (it logged 0 before)."
    from dllm_nb.models import build_backbone, tiny_config
    from dllm_nb.block_diffusion import BlockDiffusionLM
    from dllm_nb.trainer import validate
    torch.manual_seed(0)
    model = BlockDiffusionLM(build_backbone(tiny_config('llama', vocab_size=64, hidden_size=32)), self_conditioning=False,
                             shift_logits=shift, block_size=4, mask_token_id=5)
    bd = _strategy('block_diffusion', 'block_diffusion.self_conditioning=false', 'block_diffusion.encoder_loss_weight=2.0')
    b = _batch()
    with torch.no_grad():
        train = bd.loss(model.train(), bd.prepare(b), bd.denominators([bd.prepare(b)]))
    val = validate(model, bd, [b], all_reduce=lambda t: t)
    assert train.ar_loss is not None and val['val_second_loss'] > 0
    assert val['val_second_loss'] == pytest.approx(float(train.ar_loss), rel=1e-5)
    assert val['val_loss'] == pytest.approx(val['val_dllm_loss'] + 2.0 * val['val_second_loss'], rel=1e-5)
