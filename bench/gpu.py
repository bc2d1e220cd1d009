"""GPU checks (issue 18), one script: `python bench/gpu.py [--smoke] [--out gpu.json] [--only flex,bf16,mfu,sample]`.

Runs on one CUDA GPU in under ~8 minutes and writes a JSON file plus a printed table. `--smoke` runs every part at
toy sizes on the CPU (FlexAttention forward only: it has no CPU backward), so the script itself is tested here.

Every timed step is `dllm_nb.trainer.train_step`, the step `Trainer.fit` runs (prepare: corruption and the masks'
window, so `flex_dense`'s step includes building its dense masks, as that path did in training; denominators; loss;
backward; gradient norm, not clipped; AdamW), under bf16 autocast on the GPU.

1. **flex**: block-diffusion training step (encode + no-grad decode + decode, backward, AdamW), bf16 autocast,
   at S = 1k/2k/4k with B*S fixed, for three mask paths over the *same* weights and batch:
   `sdpa` (dense bool masks, the CPU training path), `flex` (the training path with
   `attn_implementation=flex_attention`: the window's `DecoderMask`/`EncoderMask` become BlockMasks built from the
   mask predicate inside the model's forward, never a dense tensor) and `flex_dense` (the old path, kept as the
   baseline: dense masks wrapped into BlockMasks by `models.dense_to_block_mask`). Step time (median), peak memory,
   mask bytes and build time (the masks as `models.model_attention_mask` builds them), and first-step loss (must
   agree to 1e-3).
2. **bf16**: 50 steps of the default config (default data) with FSDP2 `fully_shard` (a 1-rank mesh) under
   `MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)` vs plain fp32; loss curves compared.
3. **mfu**: a Qwen2-0.5B-shaped backbone from config (hidden 896, 24 layers, 14/2 heads, MLP 4864, vocab 151936,
   tied embeddings), bf16 autocast, block_diffusion and mdlm training steps: tokens/s and MFU.
   FLOPs counted (PaLM-style, attention over every key, masked or not):
     per token through a pass with grad: 6*N + 12*L*d*K, without grad (self-conditioning pass 1): 2*N + 4*L*d*K,
     N = non-embedding parameters + the LM head (d*V), L layers, d hidden size, K keys attended by that pass
     (encoder: S; canvas: S + R; mdlm: S).
   Peak: H200 SXM dense bf16 989 TFLOP/s (datasheet); the 8192^3 bf16 matmul measured here on one H200 ran at
   ~790 TFLOP/s, so MFU against that is also printed.
4. **sample**: the sampler bench (`bench/sample.py`) on the GPU.

Device run: the GPU image has torch and transformers but not `datasets`, `dill`, `multiprocess`, `fastcore`;
`bash bench/gpu_wheels.sh` downloads them into `.whl/` here (git-ignored; carry it), then on the device:
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
    python3 bench/gpu.py --out $OUT/gpu.json 2>&1 | tee $OUT/gpu.log
"""
import argparse, json, os, statistics, subprocess, sys, time, warnings
from dataclasses import replace
from pathlib import Path

import torch

from common import ROOT, peak_rss_mb, repeat

warnings.filterwarnings('ignore', message='.*flex_attention.*')
H200_PEAK, H200_MEASURED = 989e12, 790e12


def sync(dev):
    if dev.type == 'cuda': torch.cuda.synchronize(dev)


def peak_mb(dev):
    return torch.cuda.max_memory_allocated(dev) / 2**20 if dev.type == 'cuda' else peak_rss_mb()


def reset_peak(dev):
    if dev.type == 'cuda': torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats(dev)


def tensor_bytes(m):
    "Bytes of a dense mask or of every tensor inside a BlockMask."
    if isinstance(m, torch.Tensor): return m.numel() * m.element_size()
    return sum(t.numel() * t.element_size() for t in vars(m).values() if isinstance(t, torch.Tensor))


def synthetic_batch(B, S, vocab, block, seed=0):
    "A ragged block-diffusion batch: prompt U[S/8, S/2], response to a block multiple, right padding."
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(S // 8, S // 2 + 1, (B,), generator=g)
    resp = torch.minimum(torch.randint(S // 4, S // 2 + 1, (B,), generator=g) // block * block, S - prompt)
    k = torch.arange(S)[None]
    attn = (k < (prompt + resp)[:, None]).long()
    loss = ((k >= prompt[:, None]) & (attn == 1)).long()
    ids = torch.randint(4, vocab, (B, S), generator=g) * attn
    return dict(input_ids=ids, loss_mask=loss, attention_mask=attn)


def build_bd(cfg, attn, dev, state=None):
    from dllm_nb.models import build_backbone
    from dllm_nb.block_diffusion import BlockDiffusionLM
    torch.manual_seed(0)
    m = BlockDiffusionLM(build_backbone(cfg, attn_implementation=attn)).to(dev)
    if state is not None: m.load_state_dict(state)
    return m


def dense_masks(window):
    "The window with its masks materialised densely: what Flex training did before issue 14 (the model wraps them)."
    return replace(window, decoder_mask=window.decoder_mask.dense(), encoder_mask=window.encoder_mask.dense())


def model_masks(window, attn):
    "The masks as the model's forward builds them for `attn` (`models.model_attention_mask`, the same call)."
    from dllm_nb.models import model_attention_mask
    return [model_attention_mask(m, attn) for m in (window.encoder_mask, window.decoder_mask)]


class DenseWindows:
    "`strategy` whose prepared windows hold dense masks (the `flex_dense` path); everything else is the strategy's own."
    def __init__(self, strategy): self.strategy = strategy
    def __getattr__(self, name): return getattr(self.strategy, name)
    def prepare(self, batch):
        st = self.strategy.prepare(batch)
        return replace(st, window=dense_masks(st.window))


def step(model, strategy, batch, opt, dev, train=True) -> float:
    """The loss of one step on `batch` (a collated `Batch`), bf16 autocast on a GPU. `train`: `dllm_nb.trainer.train_step`,
    the step `Trainer.fit` runs (prepare, denominators, loss, backward, gradient norm (no clipping), AdamW); else the same
    prepare and loss without grad (FlexAttention has no CPU backward)."""
    from dllm_nb.trainer import step_denominators, train_step
    with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == 'cuda'):
        if train: return train_step(model, strategy, opt, [batch], grad_clip=None).loss
        st = strategy.prepare(batch)
        with torch.no_grad(): return float(strategy.loss(model, st, step_denominators(strategy, [st])).loss)


def timed_steps(fn, dev, n, warmup):
    "`(median wall seconds of n steps after warmup, every step's output)`."
    wall, _, outs = repeat(fn, n, warmup, sync=lambda: sync(dev))
    return statistics.median(wall), outs


def part_flex(dev, smoke):
    from dllm_nb.models import tiny_config
    from dllm_nb.modes import get_strategy
    from dllm_nb.stages import Batch
    vocab, block = (64, 4) if smoke else (32000, 16)
    cfg = tiny_config('llama', vocab_size=vocab, **(dict(hidden_size=64, num_layers=2) if smoke else
                                                    dict(hidden_size=1024, num_layers=12, num_heads=16, num_kv_heads=8)),
                      max_position_embeddings=8192)
    lengths, tokens = ([64, 128], 256) if smoke else ([1024, 2048, 4096], 16384)
    paths = ['sdpa', 'flex_dense', 'flex']
    if dev.type == 'cpu':   # torch 2.13 CPU: the dynamic-shape recompile of the flex template fails to build (S 64 -> 128)
        import torch._dynamo; torch._dynamo.config.automatic_dynamic_shapes = False
    rows, ref_state = [], build_bd(cfg, 'sdpa', dev).state_dict()
    for S in lengths:
        B = tokens // S
        raw = {k: v.to(dev) for k, v in synthetic_batch(B, S, vocab, block).items()}
        strat = get_strategy('block_diffusion', vocab_size=vocab, block_size=block, scored_blocks='all')
        seeds = torch.arange(B)
        for path in paths:
            model = build_bd(cfg, 'sdpa' if path == 'sdpa' else 'flex_attention', dev, ref_state)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
            reset_peak(dev)
            batch, path_strat = Batch.from_collated(raw, seeds), DenseWindows(strat) if path == 'flex_dense' else strat
            w = strat.prepare(batch).window                          # the masks one step holds (train_step prepares its own)
            sync(dev); t0 = time.perf_counter()
            if path == 'flex_dense': w = dense_masks(w)
            built = model_masks(w, 'sdpa' if path == 'sdpa' else 'flex_attention')
            sync(dev); build_s = time.perf_counter() - t0
            held = [m for m in (w.decoder_mask, w.encoder_mask) if isinstance(m, torch.Tensor)]   # flex_dense keeps both
            mask_b = sum(tensor_bytes(m) for m in built + held)
            del built
            train = not (smoke and path != 'sdpa')                   # Flex has no CPU backward
            try:
                sec, losses = timed_steps(lambda: step(model, path_strat, batch, opt, dev, train), dev,
                                          n=2 if smoke else 5, warmup=1 if smoke else 2)
                rows.append(dict(S=S, B=B, path=path, step_ms=sec * 1e3, peak_mb=peak_mb(dev), mask_kib=mask_b / 2**10,
                                 mask_build_ms=build_s * 1e3, first_loss=losses[0], trained=train))
            except Exception as e:                                   # record, keep going: one failure must not hide the rest
                msg = f'{type(e).__name__}: {e}'
                rows.append(dict(S=S, B=B, path=path, error=msg if len(msg) < 600 else msg[:200] + ' ... ' + msg[-400:]))
            del model, opt, batch
    for r in rows:
        ref = next((x for x in rows if x['S'] == r['S'] and x['path'] == 'sdpa' and 'first_loss' in x), None)
        if ref and 'first_loss' in r:
            r['loss_diff_vs_sdpa'] = abs(r['first_loss'] - ref['first_loss'])
            r['speedup_vs_sdpa'] = ref['step_ms'] / r['step_ms'] if r['trained'] and ref['trained'] else None
    return rows


def part_bf16(dev, smoke, steps):
    "Default config, `steps` steps: FSDP2 (1-rank mesh) with bf16 MixedPrecisionPolicy vs fp32."
    import tempfile
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from dllm_nb.config import load_config
    from dllm_nb.distributed import DistInfo, find_decoder_layers
    from dllm_nb.trainer import Trainer, lr_factor, train_step
    if not dist.is_initialized():
        os.environ.setdefault('MASTER_ADDR', '127.0.0.1'); os.environ.setdefault('MASTER_PORT', '29533')
        dist.init_process_group('nccl' if dev.type == 'cuda' else 'gloo', rank=0, world_size=1)
    mesh, curves = init_device_mesh(dev.type, (1,)), {}
    for name, mp in (('fp32', None), ('bf16', torch.bfloat16)):
        over = [f'train.max_steps={steps}', 'train.eval_every=0', 'train.save_every=0', 'data.val_size=0',
                f'train.warmup_steps={min(20, steps)}', f'output_dir={tempfile.mkdtemp(prefix="gpu_bf16_")}']
        if smoke: over += ['data.train_size=64', 'model.hidden_size=32', 'model.num_layers=1', 'train.global_batch_size=4',
                           'train.micro_batch_size=4']
        tr = Trainer(load_config(ROOT / 'configs' / 'default.yaml', over), DistInfo(device=dev), quiet=True)
        policy = MixedPrecisionPolicy(param_dtype=mp, reduce_dtype=torch.float32) if mp else MixedPrecisionPolicy()
        for layer in find_decoder_layers(tr.model): fully_shard(layer, mesh=mesh, mp_policy=policy)
        tr.model = fully_shard(tr.model, mesh=mesh, mp_policy=policy)
        t = tr.cfg.train
        opt = torch.optim.AdamW(tr.model.parameters(), lr=t.lr, betas=tuple(t.betas))
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, t.warmup_steps, t.max_steps, t.min_lr_ratio))
        losses, t0 = [], time.perf_counter()
        for step in range(steps):
            mbs = tr.sampler.micro_batches(step)
            res = train_step(tr.model, tr.strategy, opt, [tr.micro_batch(m) for m in mbs], 1, t.grad_clip, scheduler=sched)
            losses.append(res.loss)
        curves[name] = dict(losses=losses, seconds=time.perf_counter() - t0)
    a, b = curves['fp32']['losses'], curves['bf16']['losses']
    tail = slice(max(0, len(a) - 10), None)
    curves['summary'] = dict(max_abs_diff=max(abs(x - y) for x, y in zip(a, b)),
                             last10_mean_fp32=statistics.mean(a[tail]), last10_mean_bf16=statistics.mean(b[tail]),
                             last10_rel_diff=abs(statistics.mean(a[tail]) - statistics.mean(b[tail])) / statistics.mean(a[tail]))
    return curves


def step_flops(n_params, L, d, passes):
    "Model FLOPs of one step: `passes` = [(tokens, keys, with_grad)] (see the module docstring)."
    return sum(t * ((6 * n_params + 12 * L * d * k) if g else (2 * n_params + 4 * L * d * k)) for t, k, g in passes)


def part_mfu(dev, smoke):
    from dllm_nb.models import tiny_config, build_backbone
    from dllm_nb.mdlm import MaskedDiffusionLM
    from dllm_nb.modes import get_strategy
    from dllm_nb.stages import Batch
    shape = (dict(vocab_size=512, hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=128)
             if smoke else dict(vocab_size=151936, hidden_size=896, num_layers=24, num_heads=14, num_kv_heads=2,
                                intermediate_size=4864))
    cfg = tiny_config('qwen2', tie_word_embeddings=True, max_position_embeddings=8192, **shape)
    B, S, block = (2, 64, 4) if smoke else (8, 2048, 16)
    raw = {k: v.to(dev) for k, v in synthetic_batch(B, S, shape['vocab_size'], block).items()}
    L, d, V = shape['num_layers'], shape['hidden_size'], shape['vocab_size']
    rows = []
    for mode in ('block_diffusion', 'mdlm'):
        torch.manual_seed(0)
        bb = build_backbone(cfg, attn_implementation='sdpa' if smoke else 'flex_attention')
        # N = non-embedding parameters + the LM head (d*V): with tied embeddings the one matrix counts once, as the head
        N = sum(p.numel() for p in bb.parameters()) - (0 if cfg.tie_word_embeddings else V * d)
        if mode == 'block_diffusion':
            from dllm_nb.block_diffusion import BlockDiffusionLM
            model = BlockDiffusionLM(bb).to(dev)
            strat = get_strategy(mode, vocab_size=V, block_size=block, scored_blocks='all')
        else:
            model = MaskedDiffusionLM(bb).to(dev)
            strat = get_strategy(mode, mask_token_id=V - 1)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=dev.type == 'cuda')
        batch = Batch.from_collated(raw, torch.arange(B))
        reset_peak(dev)
        sec, _ = timed_steps(lambda: step(model, strat, batch, opt, dev), dev, n=2 if smoke else 6, warmup=1 if smoke else 3)
        if mode == 'block_diffusion':
            R = int(strat.prepare(batch).window.canvas_ids.shape[1])
            passes = [(B * S, S, True), (B * R, S + R, False), (B * R, S + R, True)]
        else:
            passes = [(B * S, S, True)]
        flops = step_flops(N, L, d, passes)
        rows.append(dict(mode=mode, params_M=sum(p.numel() for p in model.parameters()) / 1e6, B=B, S=S,
                         step_ms=sec * 1e3, tokens_per_s=B * S / sec, tflops=flops / sec / 1e12,
                         mfu_peak=flops / sec / H200_PEAK, mfu_measured=flops / sec / H200_MEASURED,
                         peak_mb=peak_mb(dev)))
        del model, opt, batch
    return rows


def part_sample(smoke):
    cmd = [sys.executable, str(ROOT / 'bench' / 'sample.py')] + (['--help'] if smoke else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    return dict(returncode=r.returncode, tail=(r.stdout + r.stderr)[-3000:])


def table(res):
    lines = []
    if 'flex' in res:
        lines.append(f"{'S':>5} {'B':>3} {'path':>10} {'step ms':>9} {'peak MiB':>9} {'mask KiB':>10} {'build ms':>9} "
                     f"{'loss':>8} {'|dloss|':>8} {'speed-up':>8}")
        for r in res['flex']:
            if 'error' in r: lines.append(f"{r['S']:>5} {r['B']:>3} {r['path']:>10} ERROR {r['error']}"); continue
            sp = r.get('speedup_vs_sdpa')
            lines.append(f"{r['S']:>5} {r['B']:>3} {r['path']:>10} {r['step_ms']:9.1f} {r['peak_mb']:9.0f} {r['mask_kib']:10.1f} "
                         f"{r['mask_build_ms']:9.1f} {r['first_loss']:8.4f} {r.get('loss_diff_vs_sdpa', 0):8.1e} "
                         f"{(f'{sp:.2f}x' if sp else '-'):>8}")
    if 'bf16' in res:
        s = res['bf16']['summary']
        lines.append(f"bf16 vs fp32 (FSDP2 MixedPrecisionPolicy): max |dloss| {s['max_abs_diff']:.4f}, last-10 mean "
                     f"{s['last10_mean_fp32']:.4f} vs {s['last10_mean_bf16']:.4f} (rel {s['last10_rel_diff']:.3%})")
    for r in res.get('mfu', []):
        lines.append(f"MFU {r['mode']:>15}: {r['params_M']:.0f}M params, B={r['B']} S={r['S']}, {r['step_ms']:.0f} ms/step, "
                     f"{r['tokens_per_s']:.0f} tok/s, {r['tflops']:.1f} TFLOP/s = {r['mfu_peak']:.1%} of 989 "
                     f"({r['mfu_measured']:.1%} of measured 790)")
    if 'sample' in res: lines.append(f"sampler bench rc={res['sample']['returncode']}:\n{res['sample']['tail']}")
    return '\n'.join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--smoke', action='store_true', help='toy sizes on CPU (tests the script, measures nothing)')
    ap.add_argument('--out', default='gpu.json')
    ap.add_argument('--only', default='flex,bf16,mfu,sample')
    ap.add_argument('--bf16-steps', type=int, default=50)
    a = ap.parse_args(argv)
    dev = torch.device('cpu' if a.smoke or not torch.cuda.is_available() else 'cuda')
    if dev.type == 'cpu' and not a.smoke: sys.exit('no CUDA device: run with --smoke to test the script on CPU')
    parts, res = a.only.split(','), dict(device=torch.cuda.get_device_name() if dev.type == 'cuda' else 'cpu',
                                         torch=torch.__version__)
    runners = dict(flex=lambda: part_flex(dev, a.smoke), bf16=lambda: part_bf16(dev, a.smoke, 3 if a.smoke else a.bf16_steps),
                   mfu=lambda: part_mfu(dev, a.smoke), sample=lambda: part_sample(a.smoke))
    for p in parts:
        t0 = time.perf_counter()
        try: res[p] = runners[p]()
        except Exception as e: res[p + '_error'] = f'{type(e).__name__}: {e}'[:500]
        print(f'[{p}] {time.perf_counter() - t0:.0f} s', flush=True)
    Path(a.out).write_text(json.dumps(res, indent=1, default=str))
    print(table(res))
    for k in [k for k in res if k.endswith('_error')]: print(f'{k}: {res[k]}')
    return 1 if any(k.endswith('_error') for k in res) else 0


if __name__ == '__main__':
    sys.exit(main())
