"""Sampler throughput (not a timed test): `python bench/sample.py [--threads 1] [--mdlm-checkpoint DIR]`.

1. Block diffusion: the cached sampler (prompt encoded once, each committed block appended with one causal pass)
   vs the reference that re-encodes prompt + committed blocks at every step, for 4 and 16 blocks. Both write the
   same tokens (checked here too); tokens/s counts generated tokens.
2. MDLM: fixed schedule (one token per step) vs the confidence threshold (parallel decoding). An untrained model is
   never confident, so the threshold rows also show threshold 0 (a whole block per step, the upper bound); pass
   `--mdlm-checkpoint` (a `save_pretrained` folder, e.g. `runs/mdlm/final`) to measure a trained model.

Model: tiny Llama of the embedded default's size (hidden 128, 4 layers; the shipped tokenizer's 611 tokens), fp32,
CPU, batch 4, ragged prompts of about `--prompt-len` tokens (default 16), block 4, 4 steps per block, greedy. Times
are the best of `--repeats` runs (the machine is shared). `backbone calls` counts transformer passes (decode steps,
prompt encode, block appends; the re-encode sampler makes an encode and a decode per step). The re-encode sampler
makes two calls per step to the cached sampler's one; the rest of the speed-up comes from re-encoding ever longer
contexts, so it grows with model size and prompt length (`--hidden 256 --prompt-len 64`) and falls toward 2x for toy
models (`--hidden 64 --layers 2`).
"""
import argparse, time

import torch

from dllm_nb.generate import generate_block_diffusion, generate_mdlm, load_checkpoint
from dllm_nb.models import BlockDiffusionLM, MaskedDiffusionLM, build_backbone, count_backbone_calls, tiny_config


def best_time(fn, repeats):
    out, ts = None, []
    for _ in range(repeats):
        t0 = time.perf_counter(); out = fn(); ts.append(time.perf_counter() - t0)
    return min(ts), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--threads', type=int, default=1); ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--mdlm-checkpoint', default=None)
    ap.add_argument('--hidden', type=int, default=128); ap.add_argument('--layers', type=int, default=4)
    ap.add_argument('--prompt-len', type=int, default=16)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    P = args.prompt_len
    prompts = [torch.randint(7, 611, (n,), generator=g).tolist() for n in (P - 4, P + 4, P, P - 2)]
    cfg = tiny_config(vocab_size=611, hidden_size=args.hidden, num_layers=args.layers)
    torch.manual_seed(0)
    bd = BlockDiffusionLM(build_backbone(cfg)).eval()
    print(f'block diffusion, hidden {args.hidden}, {args.layers} layers, batch {len(prompts)}, prompts {P - 4}-{P + 4} '
          f'tokens, block 4, 4 steps/block, threads {args.threads}')
    print(f"{'blocks':>6} {'cached tok/s':>13} {'re-encode tok/s':>16} {'speed-up':>9} {'steps':>6} "
          f"{'backbone calls':>15} {'same tokens':>12}")
    for n_blocks in (4, 16):
        kw = dict(max_blocks=n_blocks, block_size=4, steps_per_block=4, seeds=0)
        tc, oc = best_time(lambda: generate_block_diffusion(bd, prompts, **kw), args.repeats)
        tr, orf = best_time(lambda: generate_block_diffusion(bd, prompts, **kw, use_cache=False), args.repeats)
        n_tok = oc.canvas.numel()
        calls = []
        for use_cache in (True, False):
            with count_backbone_calls(bd.backbone) as c: generate_block_diffusion(bd, prompts, **kw, use_cache=use_cache)
            calls.append(len(c))
        print(f'{n_blocks:>6} {n_tok / tc:>13.0f} {n_tok / tr:>16.0f} {tr / tc:>8.2f}x {oc.nfe:>6} '
              f'{calls[0]:>7} vs {calls[1]:>4} {str(torch.equal(oc.canvas, orf.canvas)):>12}')

    if args.mdlm_checkpoint:
        mdlm, tok = load_checkpoint(args.mdlm_checkpoint, 'cpu')
        mask_id, what = tok.mask_token_id, args.mdlm_checkpoint
    else:
        torch.manual_seed(0)
        mdlm, mask_id, what = MaskedDiffusionLM(build_backbone(cfg)).eval(), 2, 'untrained'
    print(f'\nMDLM ({what}), batch {len(prompts)}, 32 new tokens, blocks of 8')
    print(f"{'setting':>22} {'tok/s':>8} {'calls':>6}")
    for name, kw in (('32 steps (1 tok/step)', dict(steps=32)), ('threshold 0.9', dict(steps=32, threshold=0.9)),
                     ('threshold 0.5', dict(steps=32, threshold=0.5)), ('threshold 0 (bound)', dict(steps=32, threshold=0.0))):
        t, o = best_time(lambda: generate_mdlm(mdlm, prompts, 32, 8, mask_token_id=mask_id, seeds=0, **kw), args.repeats)
        print(f'{name:>22} {o.canvas.numel() / t:>8.0f} {o.nfe:>6}')


if __name__ == '__main__':
    main()
