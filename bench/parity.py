"""Bit-level fingerprint of training, for refactors (not a timed test): `python bench/parity.py [--steps 12] [--json F]`.

Trains a tiny model for a few steps in every mode (ar, mdlm, hybrid, block_diffusion with self-conditioning and the
AR co-loss, the same under bf16 autocast, idlm, dflash against a saved tiny target), single process, and prints per
mode the exact loss of every step (float.hex) and a hash of the final weights. Run it before and after a change that must not move behaviour and diff
the two outputs: any difference in data order, noise, masks, loss maths or optimiser shows up as a different line.
Extra overrides for every mode go after `--set`. Against a checkout from before the losses projected only the rows they
score (da530cc), compare with `--set train.full_logits=true`: that is bit-identical to the old code, while the default
(the head on the scored rows only) rounds the last bit of some losses and gradient norms differently (a smaller GEMM).
"""
import argparse, hashlib, json, os, tempfile
from pathlib import Path

os.environ.setdefault('HF_HUB_OFFLINE', '1'); os.environ.setdefault('HF_DATASETS_OFFLINE', '1')
import common  # noqa: F401,E402  (exits unless `import dllm_nb` is this checkout's: a fingerprint of another copy would diff clean)
import torch  # noqa: E402

from dllm_nb.config import load_config  # noqa: E402
from dllm_nb.trainer import Trainer  # noqa: E402

TINY = ['model.hidden_size=32', 'model.num_layers=2', 'model.num_heads=2', 'model.num_kv_heads=1',
        'data.train_size=64', 'data.val_size=16', 'train.global_batch_size=8', 'train.micro_batch_size=4',
        'train.warmup_steps=2', 'train.eval_every=4', 'train.eval_batches=1', 'train.log_every=1',
        'train.save_every=0']
MODES = {
    'ar': ['dllm.mode=ar'],
    'mdlm': ['dllm.mode=mdlm', 'dllm.t_sampling=stratified'],
    'mdlm_warmup': ['dllm.mode=mdlm', 'mdlm.ar_warmup_steps=4', 'mdlm.shift_logits=true', 'mdlm.response_fill=40'],
    'hybrid': ['dllm.mode=hybrid'],
    'block_diffusion': ['dllm.mode=block_diffusion', 'block_diffusion.self_conditioning=true'],
    'block_diffusion_bf16': ['dllm.mode=block_diffusion', 'block_diffusion.self_conditioning=true', 'model.dtype=bfloat16',
                             'model.attn_implementation=eager'],
    'idlm': ['dllm.mode=idlm'],
    'dflash': ['dllm.mode=dflash', 'dflash.block_size=4'],
}


def make_target(path: Path) -> str:
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.models import build_backbone, tiny_config
    tok = load_tokenizer()
    torch.manual_seed(0)
    build_backbone(tiny_config('llama', vocab_size=len(tok), hidden_size=32, num_layers=2, num_heads=2,
                               num_kv_heads=1)).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def weights_hash(model) -> str:
    h = hashlib.sha256()
    for n, p in sorted(model.state_dict().items()):
        h.update(n.encode()); h.update(p.detach().float().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def fingerprint(mode: str, steps: int, tmp: Path, extra=()) -> dict:
    over = TINY + MODES[mode] + [*extra, f'train.max_steps={steps}', f'output_dir={tmp / mode}']
    if mode == 'dflash': over.append(f'dflash.target={tmp / "target"}')
    tr = Trainer(load_config(None, over), quiet=True)
    recs = tr.fit()
    keys = ('loss', 'val_loss', 'grad_norm')
    lines = [' '.join(f"{k}={float(r[k]).hex()}" for k in keys if k in r) for r in recs]
    return dict(mode=mode, steps=lines, weights=weights_hash(tr.model))


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--steps', type=int, default=12)
    ap.add_argument('--modes', nargs='*', default=list(MODES))
    ap.add_argument('--json', help='write the fingerprints to this file as well')
    ap.add_argument('--set', nargs='*', default=[], metavar='KEY=VALUE', help='config overrides for every mode')
    a = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d); make_target(tmp / 'target')
        out = [fingerprint(m, a.steps, tmp, a.set) for m in a.modes]
    for f in out:
        print(f"== {f['mode']}: weights {f['weights']}")
        for i, s in enumerate(f['steps']): print(f'  {i:3d} {s}')
    if a.json: Path(a.json).write_text(json.dumps(out, indent=1))
