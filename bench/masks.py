"""Benchmark of the block-diffusion mask builders (not a timed test): `python bench/masks.py [--step-batch 4]`.

1. batched (vectorised) builder vs the reference loop (per-example builds copied into a padded mask), B=32,
   enc_len=1024, response lengths U[64, 512] (seeded), block 32;
2. mask build time as a share of one training step (forward + backward) of a tiny Llama (sdpa, 4D mask) over
   `[encoder S ; canvas R]` with the combined mask (about one encode + one decode pass; the real step adds a no-grad
   decode pass, so the true share is smaller);
3. bytes of the dense mask vs the FlexAttention BlockMask.
"""
import argparse, time, warnings

import torch

from dllm_nb.masks import (block_diffusion_block_mask, build_batched_block_mask, build_encoder_mask,
                           stack_example_masks)

warnings.filterwarnings('ignore', message='.*flex_attention.*')


CPU = {}

def timeit(fn, n=5, warmup=1):
    """Best wall time (s) of `fn()` over `n` runs after `warmup` runs (the minimum: the machine is shared and noisy).
    The best process CPU time (all threads) is kept in `CPU['last']`."""
    for _ in range(warmup): fn()
    ts, cs = [], []
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.process_time(); fn()
        ts.append(time.perf_counter() - t0); cs.append(time.process_time() - c0)
    CPU['last'] = min(cs)
    return min(ts)


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--B', type=int, default=32); ap.add_argument('--enc-len', type=int, default=1024)
    ap.add_argument('--block', type=int, default=32); ap.add_argument('--step-batch', type=int, default=4)
    ap.add_argument('--threads', type=int, default=1,
                    help='torch threads; 1 by default so CPU time is real work, not OpenMP spin-waiting on a shared box')
    a = ap.parse_args()
    torch.manual_seed(0); torch.set_num_threads(a.threads)
    print(f'torch {torch.__version__}, threads={torch.get_num_threads()}')
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
    t0 = time.perf_counter(); bm = block_diffusion_block_mask(pl, rl, a.enc_len, a.block); t_bm = time.perf_counter() - t0
    for name, nbytes in [('dense bool', dense.numel()), ('dense additive bf16', 2 * dense.numel()),
                         ('dense additive fp32', 4 * dense.numel()), ('FlexAttention BlockMask', block_mask_bytes(bm))]:
        print(f'{name:24s} {nbytes / 2**20:10.3f} MiB')
    print(f'dense bool / BlockMask = {dense.numel() / block_mask_bytes(bm):.0f}x; create_block_mask (eager, CPU) took {t_bm * 1e3:.0f} ms')


if __name__ == '__main__':
    main()
