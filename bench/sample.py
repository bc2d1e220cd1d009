"""Sampler speed against autoregressive decoding of the same backbone (not a timed test).

    python bench/sample.py --checkpoint runs/default/final [--mdlm-checkpoint DIR] [--n 100] [--batch-sizes 1 16]
    python bench/sample.py --cache-only            # just table 1 (random model, no checkpoint needed)
    python bench/sample.py --checkpoint runs/smollm2_cpu/final --base-model $GGUF --n 20 --no-cache-table

1. Block diffusion, cached vs re-encode: the cached sampler (prompt encoded once, each committed block appended
   with one causal pass fused with the next block's first step) vs the reference that re-encodes prompt +
   committed blocks at every step, at 4 and 16 blocks. A random model of the embedded default's size (hidden 128,
   4 layers, the shipped tokenizer's 611 tokens), batch 4, ragged prompts of about `--prompt-len` tokens, block 4,
   4 steps per block, greedy; both must write the same tokens (checked).
2. One table per checkpoint: every sampler on the first `--n` test prompts of the built-in tasks (the default mix,
   shuffled), at each batch size. `AR` is the **same backbone weights** decoded autoregressively by HF `generate`
   (greedy, its KV cache; left-padded batches): a BlockDiffusionLM's backbone is the causal encoder trained with the
   next-token co-loss, so this is the model's own AR decoder, not a different model. The block-diffusion rows use
   the checkpoint's block size; `schedule` keeps 1, 2, ..., b tokens over b steps (the one-token-per-step
   sampler); `tau=x` adds the confidence threshold. An MDLM checkpoint (bidirectional backbone: no AR row) is run
   uncached and with the prefix / dual K/V cache; `agree` is token agreement with the uncached sampler.
   Columns: tokens/s = generated tokens (up to and including EOS) per second of sampler time; calls/token =
   backbone forward passes per generated token (a batch-16 call serves 16 rows); exact = exact match of the stated answer.

Times are the CPU seconds of this process (`--clock process`, the default: with 1 thread, `--threads`, that is the
work done, and it stays put when other jobs share the cores; `--clock wall` for wall time on a quiet machine), the
best of `--repeats` runs, taken round robin (every sampler once, then again), so load that comes and goes on a shared
machine hits every sampler alike. `--base-model` adds a row: HF `generate` on the pretrained causal LM the
checkpoint was fine-tuned from (e.g. the SmolLM2 GGUF), same prompts and tokenizer. The last line names the fastest dLLM sampler whose exact match is within 0.02 of the schedule's.
"""
import argparse, random

import torch
from transformers.utils import logging as hf_logging

from common import best_of, one_thread, run_samplers
from dllm_nb.builtin import builtin_examples
from dllm_nb.ar import generate_autoregressive_cached
from dllm_nb.mdlm import generate_mdlm, generate_mdlm_cached, MaskedDiffusionLM
from dllm_nb.block_diffusion import generate_block_diffusion, BlockDiffusionLM
from dllm_nb.checkpoint import load_checkpoint, saved_block_size
from dllm_nb.models import build_backbone, count_backbone_calls, tiny_config


def cache_table(args):
    g = torch.Generator().manual_seed(0)
    P = args.prompt_len
    prompts = [torch.randint(7, 611, (n,), generator=g).tolist() for n in (P - 4, P + 4, P, P - 2)]
    torch.manual_seed(0)
    bd = BlockDiffusionLM(build_backbone(tiny_config(vocab_size=611, hidden_size=args.hidden, num_layers=args.layers))).eval()
    print(f'## 1. block diffusion, cached vs re-encode: random model, hidden {args.hidden}, {args.layers} layers, batch '
          f'{len(prompts)}, prompts {P - 4}-{P + 4} tokens, block 4, 4 steps/block, threads {args.threads}, '
          f'{args.clock} clock, best of {args.cache_repeats}')
    print(f"{'blocks':>6} {'cached tok/s':>13} {'re-encode tok/s':>16} {'speed-up':>9} {'backbone calls':>15} {'same tokens':>12}")
    for n_blocks in (4, 16):
        kw = dict(max_blocks=n_blocks, block_size=4, steps_per_block=4, seeds=0)
        tc, oc = best_of(lambda: generate_block_diffusion(bd, prompts, **kw), args.cache_repeats, args.clock)
        tr, orf = best_of(lambda: generate_block_diffusion(bd, prompts, **kw, use_cache=False), args.cache_repeats, args.clock)
        calls = []
        for use_cache in (True, False):
            with count_backbone_calls(bd.backbone) as c: generate_block_diffusion(bd, prompts, **kw, use_cache=use_cache)
            calls.append(len(c))
        n_tok = oc.canvas.numel()
        print(f'{n_blocks:>6} {n_tok / tc:>13.0f} {n_tok / tr:>16.0f} {tr / tc:>8.2f}x {calls[0]:>6} vs {calls[1]:>4} '
              f'{str(torch.equal(oc.canvas, orf.canvas)):>12}')


def block_samplers(model, tok, block_size, thresholds):
    bd = lambda **kw: (lambda p, n, seeds: generate_block_diffusion(model, p, n, block_size=block_size,
                                                                    steps_per_block=block_size, seeds=seeds,
                                                                    eos_token_id=tok.eos_token_id, **kw))
    out = {'AR (HF generate + KV cache)': lambda p, n, seeds: generate_autoregressive_cached(model, p, n, tok),
           f'block diffusion b={block_size}, schedule': bd()}
    out.update({f'block diffusion b={block_size}, tau={t}': bd(threshold=t) for t in thresholds})
    return out


def mdlm_samplers(model, tok, block_length, thresholds):
    kw = dict(mask_token_id=tok.mask_token_id, eos_token_id=tok.eos_token_id)
    def mdlm(cached=None, **extra):
        def run(p, n, seeds):
            n = -(-n // block_length) * block_length
            if cached is None: return generate_mdlm(model, p, n, block_length, n, seeds=seeds, **kw, **extra)
            return generate_mdlm_cached(model, p, n, block_length, n, seeds=seeds, cache=cached, **kw, **extra)
        return run
    out = {'MDLM uncached': mdlm(), 'MDLM prefix cache': mdlm('prefix'), 'MDLM dual cache': mdlm('dual')}
    for t in thresholds: out.update({f'MDLM tau={t}': mdlm(threshold=t), f'MDLM dual cache, tau={t}': mdlm('dual', threshold=t)})
    return out


def base_causal_lm(path):
    "A plain HF causal LM (a `.gguf` file, dequantised once, or an HF folder) for its own AR row."
    from transformers import AutoModelForCausalLM
    from dllm_nb.gguf import gguf_to_hf
    folder = gguf_to_hf(path) if str(path).endswith('.gguf') else path
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


def model_table(path, args):
    model, tok = load_checkpoint(path, 'cpu')
    examples = builtin_examples('default', 'test')[:args.n]
    max_new = max(len(tok(ex['messages'][-1]['content'], add_special_tokens=False)['input_ids']) for ex in examples) + 1
    block = saved_block_size(path) or 4
    if isinstance(model, BlockDiffusionLM): samplers, ref = block_samplers(model, tok, block, args.thresholds), 1
    elif isinstance(model, MaskedDiffusionLM): samplers, ref = mdlm_samplers(model, tok, args.mdlm_block, args.thresholds), 0
    else: raise SystemExit(f'{path}: not a dllm_nb diffusion checkpoint')
    names = list(samplers)
    samplers = {name: (fn, model.backbone) for name, fn in samplers.items()}
    if args.base_model:                         # the pretrained model before fine-tuning, same prompts and tokenizer
        base_lm = base_causal_lm(args.base_model)
        samplers['AR, base model before fine-tuning'] = (
            lambda p, n, seeds: generate_autoregressive_cached(base_lm, p, n, tok), base_lm)
    print(f'\n## {type(model).__name__} {path}: {len(examples)} test prompts (builtin:default), max_new_tokens {max_new}, '
          f'threads {args.threads}, {args.clock} clock, best of {args.repeats}')
    print(f"{'sampler':<40} {'batch':>5} {'tokens/s':>9} {'calls/token':>12} {'exact':>6} {'agree':>6} {'vs AR':>6}")
    cands = []
    for bs in args.batch_sizes:
        res = run_samplers(samplers, tok, examples, bs, max_new, args.repeats, args.clock)
        base, ar = res[names[ref]], (res[names[0]] if ref == 1 else None)
        for name, r in res.items():
            r['tps'] = r['tokens'] / r['t']
            agree = sum(a == b for x, y in zip(r['seqs'], base['seqs']) for a, b in zip(x, y)) / max(1, sum(map(len, base['seqs'])))
            vs_ar = '' if ar is None else f"{r['tps'] / ar['tps']:.2f}x"
            print(f"{name:<40} {bs:>5} {r['tps']:>9.1f} {r['calls'] / max(1, r['tokens']):>12.3f} {r['exact']:>6.2f} "
                  f"{agree:>6.2f} {vs_ar:>6}")
            if ar is not None and name in names[1:] and abs(r['exact'] - base['exact']) <= 0.02:
                cands.append((r['tps'] / ar['tps'], name, bs, r['exact'], ar['exact']))
    if cands:
        x, name, bs, a, b = max(cands)
        print(f'best dLLM sampler vs AR: {x:.2f}x tokens/s at exact match {a:.2f} vs {b:.2f} ({name}, batch {bs})')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--checkpoint', help='a block-diffusion (or MDLM) save_pretrained folder, e.g. runs/default/final')
    ap.add_argument('--mdlm-checkpoint', help='an MDLM save_pretrained folder (its own table)')
    ap.add_argument('--base-model', help='also time HF generate on this causal LM (the pretrained model a checkpoint was '
                    'fine-tuned from: a .gguf file or an HF folder), same prompts and tokenizer')
    ap.add_argument('--cache-only', action='store_true', help='only table 1')
    ap.add_argument('--no-cache-table', action='store_true', help='skip table 1')
    ap.add_argument('--n', type=int, default=100, help='test prompts')
    ap.add_argument('--batch-sizes', type=int, nargs='+', default=[1, 16])
    ap.add_argument('--thresholds', type=float, nargs='+', default=[0.9, 0.7, 0.5])
    ap.add_argument('--mdlm-block', type=int, default=8, help='MDLM semi-AR block length (one step per token)')
    ap.add_argument('--threads', type=int, default=1); ap.add_argument('--repeats', type=int, default=1)
    ap.add_argument('--cache-repeats', type=int, default=5)
    ap.add_argument('--clock', choices=['process', 'wall'], default='process', help='CPU seconds (default) or wall time')
    ap.add_argument('--hidden', type=int, default=128); ap.add_argument('--layers', type=int, default=4)
    ap.add_argument('--prompt-len', type=int, default=16)
    args = ap.parse_args()
    one_thread(args.threads); hf_logging.set_verbosity_error(); hf_logging.disable_progress_bar()
    random.seed(0)
    if not args.no_cache_table: cache_table(args)
    if args.cache_only: return
    for path in (args.checkpoint, args.mdlm_checkpoint):
        if path: model_table(path, args)


if __name__ == '__main__':
    with torch.no_grad(): main()
