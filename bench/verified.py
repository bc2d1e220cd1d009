"""Where the verified sampler's speed comes from, on one trained shifted block-diffusion run (not a timed test).

    python bench/verified.py --checkpoint runs/adapt/bd/final          # the bd row of bench/adapt.py
    python bench/verified.py --checkpoint runs/adapt/bd/final --dtypes float32 bfloat16

`dllm_nb.block_diffusion.speculative` decodes a block-diffusion model trained with `shift_logits` by its encoder's greedy rule:
each backbone call verifies the previous call's draft with the causal (clean) rows and drafts the next block with the
canvas rows. Its tokens are exactly what Hugging Face `generate` gives on the same backbone, so this bench compares the
two on the SAME weights, which separates the two things that set the speed-up:
  * draft accuracy: the canvas's drafts teacher-forced along the greedy output (every prefix is the right one), per
    draft position, with its calibration, and what they bound: P(the first k draft tokens are all right);
  * call cost: one verified call (1 or b clean rows + b canvas rows) against one AR step, at batch 1 and 16, with a
    context of the prompt's length; a call yields at most b tokens, so `b x AR step / call(b clean)` bounds the
    speed-up even when every draft is right;
  * measured: tokens/s (generated tokens, EOS included, per process CPU second, 1 thread) of HF generate + KV cache
    and of the verified sampler at batch 1 and 16, best of `--repeats` round-robin rounds, exact match, and whether
    the tokens are identical; per `--dtypes` (bf16 pays off only on CPUs with native bf16 dot products).
The last line: `verified vs HF generate on the same weights: X.XXx tokens/s at batch 1 (dtype), ...`.
"""
import argparse, statistics, sys, time

import torch

from common import ROOT, heldout_examples, one_thread, run_samplers, timed


def teacher_forced_drafts(model, prompts, greedy, seeds):
    "Per prompt and output position k: the canvas's drafts (tokens, probabilities) after prompt + greedy[:k]; batched, one call per position."
    from dllm_nb.block_diffusion import VerifyContext
    from dllm_nb.core import randint_rows, row_generators
    b, V = model.block_size, model.backbone.get_input_embeddings().num_embeddings
    ctx, gens = VerifyContext(model, prompts), row_generators(seeds, 'sampling')
    live, drafts = list(range(len(prompts))), [[] for _ in prompts]
    with torch.no_grad():
        for k in range(max(map(len, greedy))):
            if k:
                for r, i in enumerate(live): ctx.pending[r] = [greedy[i][k - 1]]
            noise = (torch.full((len(live), b), model.mask_token_id) if model.mask_token_id is not None
                     else randint_rows(V, (len(live), b), [gens[i] for i in live], 'cpu'))
            _, _, canvas = ctx.verify(noise)
            conf, arg = canvas.softmax(-1).max(-1)
            for r, i in enumerate(live): drafts[i].append((arg[r].tolist(), conf[r].tolist()))
            keep = [r for r, i in enumerate(live) if k + 1 < len(greedy[i])]
            if len(keep) < len(live):
                ctx.retire(torch.tensor(keep, dtype=torch.long))
                live = [live[r] for r in keep]
            if not live: break
    return drafts


def draft_accuracy(model, tok, prompts, max_new):
    "Per draft position: accuracy and count; calibration bins; P(first k drafts right); from teacher-forced drafts."
    from dllm_nb.block_diffusion import generate_block_speculative
    greedy, drafts = [], []
    for s in range(0, len(prompts), 16):
        out = generate_block_speculative(model, prompts[s:s + 16], max_new, tok, chat=False, seeds=list(range(s, min(s + 16, len(prompts)))))
        g = [list(x) + ([tok.eos_token_id] if len(x) < max_new else []) for x in out.sequences]   # EOS is a token too
        greedy += g
        drafts += teacher_forced_drafts(model, prompts[s:s + 16], g, list(range(s, s + len(g))))
    b = model.block_size
    right, chain, bins, off = {i: [] for i in range(1, b)}, {i: [] for i in range(1, b)}, {}, 0
    for g, D in zip(greedy, drafts):
        for k, (toks, conf) in enumerate(D):       # toks[0] is the anchor (the encoder's token k), toks[i] drafts token k + i
            off += toks[0] != g[k]                 # the anchor is the greedy token (unless a near-tie flips in another batch layout)
            ok_all = True
            for i in range(1, b):
                if k + i >= len(g): break
                ok = toks[i] == g[k + i]
                ok_all &= ok
                right[i].append(ok); chain[i].append(ok_all)
                bins.setdefault(min(int(conf[i] * 5), 4), []).append(ok)
    return dict(anchor_off=off, acc={i: statistics.mean(v) for i, v in right.items() if v}, n={i: len(v) for i, v in right.items()},
                chain={i: statistics.mean(v) for i, v in chain.items() if v},
                calib={f'{lo / 5:.1f}-{(lo + 1) / 5:.1f}': (statistics.mean(v), len(v)) for lo, v in sorted(bins.items())})


def call_costs(model, prompt, batch, reps):
    "CPU ms (median of `reps`) of one AR step and of one verified call with 1 and b clean rows + b canvas rows, after `prompt`."
    from transformers import DynamicCache
    from dllm_nb.block_diffusion import VerifyContext
    b, V, bb = model.block_size, model.backbone.get_input_embeddings().num_embeddings, model.backbone
    ps = [prompt] * batch
    def verify(nc):
        ctx, ts = VerifyContext(model, ps), []
        ctx.verify(torch.randint(V, (batch, b)))
        for _ in range(reps):
            for r in range(batch): ctx.pending[r] = list(range(100, 100 + nc))
            ts.append(timed(lambda: ctx.verify(torch.randint(V, (batch, b))))[2])
        return statistics.median(ts) * 1e3
    def ar():
        cache, ts = DynamicCache(), []
        out = bb(input_ids=torch.tensor(ps), past_key_values=cache, use_cache=True)
        nxt = out.logits[:, -1:].argmax(-1)
        for _ in range(reps):
            out, _, c = timed(lambda: bb(input_ids=nxt, past_key_values=cache, use_cache=True, logits_to_keep=1)); ts.append(c)
            nxt = out.logits[:, -1:].argmax(-1)
        return statistics.median(ts) * 1e3
    with torch.no_grad():
        res = dict(ar=ar(), v1=verify(1), vb=verify(b))
    res['bound'] = b * res['ar'] / res['vb']            # every draft right: b tokens per call of b clean + b canvas rows
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--checkpoint', default=str(ROOT / 'runs' / 'adapt' / 'bd' / 'final'), help="a shifted block-diffusion run's final/")
    ap.add_argument('--n', type=int, default=20, help='test prompts per task (speed and draft accuracy)')
    ap.add_argument('--batch-sizes', type=int, nargs='+', default=[1, 16])
    ap.add_argument('--dtypes', nargs='+', default=['float32'], choices=['float32', 'bfloat16'])
    ap.add_argument('--repeats', type=int, default=2, help='timing rounds (round robin, best kept)')
    ap.add_argument('--max-new-tokens', type=int, default=48)
    args = ap.parse_args()
    one_thread()
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error(); hf_logging.disable_progress_bar()
    from dllm_nb.ar import generate_autoregressive_cached
    from dllm_nb.block_diffusion import generate_block_speculative
    from dllm_nb.checkpoint import load_checkpoint
    from dllm_nb.sampling import encode_prompts
    model, tok = load_checkpoint(args.checkpoint, 'cpu')
    if not getattr(model, 'shift_logits', False):
        sys.exit(f'{args.checkpoint}: not a block-diffusion model trained with block_diffusion.shift_logits=true; '
                 'the verified sampler needs one (configs/smollm2_adapt.yaml trains it)')
    examples = heldout_examples(args.n)
    prompts = encode_prompts([ex['messages'][0]['content'] for ex in examples], tok)
    b, max_new = model.block_size, args.max_new_tokens
    print(f'## {args.checkpoint}: block size {b}, {args.n} test prompts per task, max_new_tokens {max_new}, 1 thread, process CPU time')

    t0 = time.perf_counter()
    da = draft_accuracy(model, tok, prompts, max_new)
    print(f'\ndraft accuracy, teacher-forced along the greedy output ({time.perf_counter() - t0:.0f} s):')
    for i in da['acc']:
        print(f'  draft token {i} (token {i + 1} of the block): right {da["acc"][i]:.2f} of {da["n"][i]}; '
              f'the first {i} all right {da["chain"][i]:.2f}')
    if da['anchor_off']: print(f"  (the encoder's token differed from the sampler's at {da['anchor_off']} positions: near-ties)")
    print('  calibration (canvas probability: accuracy, count): ' +
          ', '.join(f'{k}: {a:.2f} ({n})' for k, (a, n) in da['calib'].items()))
    best = 1 + sum(da['chain'].values())
    print(f'  a call whose draft follows a right prefix yields {best:.2f} tokens on average (at most {b}); one after a '
          'rejection has no draft and yields 1')

    summary = []
    for dtype in args.dtypes:
        model = model.to(getattr(torch, dtype))
        print(f'\n### {dtype}')
        for bs in args.batch_sizes:
            c = call_costs(model, prompts[0], bs, reps=5)
            print(f'batch {bs:>2}: AR step {c["ar"]:.1f} ms; verified call, 1 clean + {b} canvas rows {c["v1"]:.1f} ms, '
                  f'{b} + {b} rows {c["vb"]:.1f} ms; every draft right: at most {c["bound"]:.2f}x AR')
        samplers = {'HF generate + KV cache': (lambda p, n, s: generate_autoregressive_cached(model, p, n, tok, chat=False), model.backbone),
                    'verified': (lambda p, n, s: generate_block_speculative(model, p, n, tok, seeds=s, chat=False), model.backbone)}
        for bs in args.batch_sizes:
            res = run_samplers(samplers, tok, examples, bs, max_new, args.repeats)
            ar, v = res['HF generate + KV cache'], res['verified']
            x = (v['tokens'] / v['t']) / (ar['tokens'] / ar['t'])
            same = v['seqs'] == ar['seqs']
            for name, r in res.items():
                print(f'batch {bs:>2} {name:<24} {r["tokens"] / r["t"]:7.1f} tok/s  {r["tokens"] / r["calls"]:5.2f} tokens/call  '
                      f'exact {r["exact"]:.2f}')
            print(f'batch {bs:>2}: verified {x:.2f}x HF generate, identical tokens: {same}')
            summary.append(f'{x:.2f}x at batch {bs} ({dtype}, identical: {same})')
    print(f'\nverified vs HF generate on the same weights: tokens/s ' + ', '.join(summary))


if __name__ == '__main__':
    main()
