"""Benchmark of the block-diffusion mask builders (not a timed test): `python -m bench.ablations.masks [--step-batch 4]`.

1. batched (vectorised) builder vs the reference loop (per-example builds copied into a padded mask), B=32,
   enc_len=1024, response lengths U[64, 512] (seeded), block 32;
2. mask build time as a share of one training step (forward + backward) of a tiny Llama (sdpa, 4D mask) over
   `[encoder S ; canvas R]` with the combined mask (about one encode + one decode pass; the real step adds a no-grad
   decode pass, so the true share is smaller);
3. bytes of the dense mask vs the FlexAttention BlockMask;
4. the masks as the training path builds them, per attention kernel (`--training-path` runs only this part):
   the batch goes through the block_diffusion strategy's prepare (its window holds `DecoderMask`/`EncoderMask`
   descriptions) and each mask is built by `models.model_attention_mask`, the call `BlockDiffusionLM.forward` makes:
   dense bool for sdpa, additive fp32 for eager, a `BlockMask` from the predicate for flex_attention. B=32, S=1024,
   R=512 (response lengths U[64, 512], one of 512), block 4 and 32. Printed: bytes the step holds, build time (best
   of 3), and the transient peak while building (VmHWM growth, one child process per row, glibc told to mmap large
   blocks so freed memory leaves the process).
"""
import argparse, json, os, re, subprocess, sys, warnings

import torch

from bench.common import ROOT, repeat, timed
from dllm_nb.masks import (block_diffusion_block_mask, build_batched_block_mask, build_encoder_mask,
                           stack_example_masks)

warnings.filterwarnings('ignore', message='.*flex_attention.*')


CPU = {}

def timeit(fn, n=5, warmup=1):
    """Best wall time (s) of `fn()` over `n` runs after `warmup` runs (the minimum: the machine is shared and noisy).
    The best process CPU time (all threads) is kept in `CPU['last']`."""
    wall, cpu, _ = repeat(fn, n, warmup)
    CPU['last'] = min(cpu)
    return min(wall)


def ms(t): return f"{t * 1e3:8.2f} ms wall {CPU['last'] * 1e3:8.2f} ms cpu"


def batch(B, enc_len, lo, hi, seed=0):
    g = torch.Generator().manual_seed(seed)
    rl = torch.randint(lo, hi + 1, (B,), generator=g)
    pl = (torch.rand(B, generator=g) * (enc_len - rl + 1)).long()
    am = (torch.arange(enc_len)[None] < (pl + rl)[:, None]).long()       # right-padded encoder rows
    return pl, rl, am


def block_mask_bytes(bm):
    return sum(t.numel() * t.element_size() for t in vars(bm).values() if isinstance(t, torch.Tensor))


def tiny_llama_step_time(pl, rl, am, enc_len, bs, n=2):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=4096, hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=4096)
    cfg._attn_implementation = 'sdpa'
    model = LlamaForCausalLM(cfg)
    B, S = am.shape
    dec = build_batched_block_mask(pl, rl, enc_len, bs)[:, 0]                 # [B, R, S+R]
    R = dec.shape[1]
    enc = torch.cat([build_encoder_mask(am)[:, 0], torch.zeros(B, S, R, dtype=torch.bool)], -1)
    mask = torch.cat([enc, dec], 1)[:, None]                                   # [B, 1, S+R, S+R]
    ids = torch.randint(0, cfg.vocab_size, (B, S + R))
    pos = torch.cat([torch.arange(S).expand(B, S), pl[:, None] + torch.arange(R)], 1)
    def step():
        model.zero_grad(set_to_none=True)
        out = model(input_ids=ids, attention_mask=mask, position_ids=pos, labels=ids)
        out.loss.backward()
    return timeit(step, n=n), mask.shape


KERNELS = ('sdpa', 'eager', 'flex_attention')


def training_window(B, S, R, block, seed=0):
    "A B x S batch (responses U[64, R], one of length R) through the block_diffusion strategy: its response window."
    from dllm_nb.modes import get_strategy
    g = torch.Generator().manual_seed(seed)
    rl = torch.randint(64, R + 1, (B,), generator=g); rl[0] = R
    pl = (torch.rand(B, generator=g) * (S - rl + 1)).long()
    k = torch.arange(S)[None]
    am = (k < (pl + rl)[:, None]).long()
    lm = ((k >= pl[:, None]) & (am == 1)).long()
    batch = dict(input_ids=torch.randint(4, 1000, (B, S), generator=g) * am, loss_mask=lm, attention_mask=am)
    strat = get_strategy('block_diffusion', vocab_size=1000, block_size=block)
    from dllm_nb.stages import Batch
    return strat.prepare(Batch.from_collated(batch, torch.arange(B))).window


def _status_mib(key):
    return int(re.search(rf'{key}:\s+(\d+)', open('/proc/self/status').read()).group(1)) / 1024


def held_bytes(m):
    if isinstance(m, torch.Tensor): return m.numel() * m.element_size()
    return sum(t.numel() * t.element_size() for t in vars(m).values() if isinstance(t, torch.Tensor))


def child(kernel, B, S, R, block):
    "One row of part 4, in its own process: peak while building (first build), then best-of-3 build time."
    from dllm_nb.models import model_attention_mask
    w = training_window(B, S, R, block)
    build = lambda: [model_attention_mask(m, kernel) for m in (w.decoder_mask, w.encoder_mask)]
    import gc; gc.collect()
    open('/proc/self/clear_refs', 'w').write('5')               # reset the peak RSS (VmHWM) to the current RSS
    rss0 = _status_mib('VmRSS')
    (dec, enc), first, _ = timed(build)
    peak = _status_mib('VmHWM') - rss0
    nbytes = [held_bytes(dec), held_bytes(enc)]
    del dec, enc
    best = timeit(build, n=3, warmup=0)
    print(json.dumps(dict(kernel=kernel, block=block, shape=list(w.decoder_mask.shape), dec=nbytes[0], enc=nbytes[1],
                          first_ms=first * 1e3, best_ms=best * 1e3, peak_mib=peak)))


def training_path(a):
    print(f'masks as the training path builds them (strategy prepare -> window -> models.model_attention_mask), '
          f'B={a.B} S={a.enc_len} R={a.R}; MiB held by the step, build ms (best of 3), transient peak MiB while building')
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_='65536', OMP_NUM_THREADS=str(a.threads))
    for block in (4, 32):
        rows = {}
        for kernel in KERNELS:
            out = subprocess.run([sys.executable, '-m', __spec__.name, '--child', kernel, '--B', str(a.B), '--enc-len', str(a.enc_len),
                                  '--R', str(a.R), '--block', str(block)], capture_output=True, text=True, env=env, cwd=ROOT)
            if out.returncode: raise RuntimeError(out.stderr[-3000:])
            rows[kernel] = r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"block {block:2d} {kernel:14s} decoder {list(r['shape'])}: {r['dec'] / 2**20:9.3f} MiB  encoder "
                  f"{r['enc'] / 2**20:9.3f} MiB  total {(r['dec'] + r['enc']) / 2**20:9.3f} MiB  build {r['best_ms']:8.1f} ms "
                  f"(first {r['first_ms']:7.1f})  peak while building {r['peak_mib']:7.1f} MiB")
        f, d = rows['flex_attention'], rows['sdpa']
        tot = lambda r: r['dec'] + r['enc']
        print(f"block {block:2d} held: sdpa / flex = {tot(d) / tot(f):.0f}x, eager / flex = {tot(rows['eager']) / tot(f):.0f}x; "
              f"build time flex / sdpa = {f['best_ms'] / d['best_ms']:.1f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--B', type=int, default=32); ap.add_argument('--enc-len', type=int, default=1024)
    ap.add_argument('--block', type=int, default=32); ap.add_argument('--step-batch', type=int, default=4)
    ap.add_argument('--threads', type=int, default=1,
                    help='torch threads; 1 by default so CPU time is real work, not OpenMP spin-waiting on a shared box')
    ap.add_argument('--R', type=int, default=512, help='longest response (canvas length) of part 4')
    ap.add_argument('--training-path', action='store_true', help='run only part 4')
    ap.add_argument('--child', help=argparse.SUPPRESS)
    a = ap.parse_args()
    torch.manual_seed(0); torch.set_num_threads(a.threads)
    if a.child: return child(a.child, a.B, a.enc_len, a.R, a.block)
    print(f'torch {torch.__version__}, threads={torch.get_num_threads()}')
    if a.training_path: return training_path(a)
    pl, rl, am = batch(a.B, a.enc_len, 64, 512)
    R = int(rl.max())
    print(f'B={a.B} enc_len={a.enc_len} block={a.block} R={R} response_len mean={rl.float().mean():.0f} '
          f'mask [B,1,R,S+R]={[a.B, 1, R, a.enc_len + R]}')
    assert torch.equal(build_batched_block_mask(pl, rl, a.enc_len, a.block), stack_example_masks(pl, rl, a.enc_len, a.block))
    t_vec = timeit(lambda: build_batched_block_mask(pl, rl, a.enc_len, a.block)); c_vec = CPU['last']
    print(f'batched bool build          {ms(t_vec)}')
    print(f'batched bool, window 256    {ms(timeit(lambda: build_batched_block_mask(pl, rl, a.enc_len, a.block, 256)))}')
    print(f'batched additive fp32       {ms(timeit(lambda: build_batched_block_mask(pl, rl, a.enc_len, a.block, dtype=torch.float32)))}')
    t_loop = timeit(lambda: stack_example_masks(pl, rl, a.enc_len, a.block), n=3)
    print(f'reference loop (bool)       {ms(t_loop)}   loop / batched = {t_loop / t_vec:.1f}x wall, '
          f"{CPU['last'] / c_vec:.1f}x cpu")
    print(f'encoder mask [B,1,S,S] bool {ms(timeit(lambda: build_encoder_mask(am)))}')

    sb = a.step_batch
    spl, srl, sam = pl[:sb], rl[:sb], am[:sb]
    t_step, shape = tiny_llama_step_time(spl, srl, sam, a.enc_len, a.block)
    c_step = CPU['last']
    t_masks = timeit(lambda: (build_batched_block_mask(spl, srl, a.enc_len, a.block), build_encoder_mask(sam)))
    print(f'tiny Llama (2 layers, hidden 64, vocab 4096, sdpa) fwd+bwd at B={sb} (not {a.B}: a B={a.B} step '
          f'is too slow on this shared CPU), combined mask {list(shape)}: {t_step * 1e3:.0f} ms wall, {c_step * 1e3:.0f} ms cpu')
    print(f"decoder+encoder mask build at B={sb}: {ms(t_masks)} = {100 * t_masks / t_step:.2f}% of the step (wall), "
          f"{100 * CPU['last'] / c_step:.2f}% (cpu)")

    dense = build_batched_block_mask(pl, rl, a.enc_len, a.block)
    bm, t_bm, _ = timed(lambda: block_diffusion_block_mask(pl, rl, a.enc_len, a.block))
    for name, nbytes in [('dense bool', dense.numel()), ('dense additive bf16', 2 * dense.numel()),
                         ('dense additive fp32', 4 * dense.numel()), ('FlexAttention BlockMask', block_mask_bytes(bm))]:
        print(f'{name:24s} {nbytes / 2**20:10.3f} MiB')
    print(f'dense bool / BlockMask = {dense.numel() / block_mask_bytes(bm):.0f}x; create_block_mask (eager, CPU) took {t_bm * 1e3:.0f} ms')
    training_path(a)


if __name__ == '__main__':
    main()
