"""DFlash speculative decoding (not a timed test): `python bench/speculative.py [--out runs/spec] [--n 20]`.

Real target (`--target T --drafter D`): SmolLM2-135M-Instruct (the .gguf or its HF folder) and a drafter trained for it
(configs/dflash_smollm2_cpu.yaml); the held-out prompts of the shipped prompt set (`shipped:test`, first `--n`), at
batch 1 and each `--batch-sizes` size: tau and its histogram, the target's greedy tokens/s (HF `generate`, KV cache, the
same batch size), speculative tokens/s, speed-up and `identical` (every prompt token-identical to the target's own
batch-1 greedy output), timed in process CPU time after one warm-up, the two alternating batch by batch (a run that
timed all of one, then all of the other, moved by 8 % between two runs on a shared machine). Last line:
`dflash on <target>: tau T, X.XXx tokens/s at batch 1, identical: True`. `--corpus FILE` (the distilled chat JSONL):
rows with nothing to copy from their own context copy from its answers (`NgramIndex`) before the drafter runs;
`--no-drafter`: copies only (the bench refuses a corpus that answers any benched prompt). `--linear skinny` (default):
the target's and drafter's linear layers run through `dllm_nb.sampling.skinny_linears` on both sides (the target's own
greedy decoding too); `--linear stock`: plain `nn.Linear` on both sides. `--drafter` may be a `NextTokenHead` (`python -m dllm_nb.dflash
head`): one draft per call.

Tiny target (default):

1. target: the tiny AR baseline (`dllm.mode=ar`: the default config's backbone, causal next-token loss on the
   response, same data order and optimizer) trained for `--target-steps`, its `final/` copied to `OUT/target`;
2. drafter: `python -m dllm_nb.train dllm.mode=dflash dflash.target=OUT/target ...` for `--drafter-steps`, `OUT/drafter`;
3. the first `--n` test prompts of each built-in task, one at a time (batch 1): the target's own greedy decoding
   (HF `generate`, KV cache) vs `dllm_nb.dflash.speculative_generate`, both timed after one warm-up prompt.
Prints the mean acceptance length tau (tokens per target verification call), its histogram, tokens/s of both, and
`identical: True/False` (every prompt token-identical to the target's greedy output) as the final line.
Existing `OUT/target` / `OUT/drafter/final` are reused; delete them to retrain. Extra `key=value` args go to the drafter run.
"""
import argparse, collections, contextlib, time
from pathlib import Path

from common import one_thread, timed
from dllm_nb.builtin import task_examples
from dllm_nb.dflash import DFlashDrafter, draft_block, load_drafter, speculative_generate, target_greedy, target_id
from dllm_nb.cli import at_least, at_least_float, off_or_at_least
from dllm_nb.sampling import encode_prompts, skinny_linears


def train_target(out: Path, steps: int):
    "The default config's backbone trained as a plain causal LM (`dllm.mode=ar`); its `final/` is an HF folder."
    import shutil
    from dllm_nb.train import main
    if main(['dllm.mode=ar', f'output_dir={out}/target_run', f'train.max_steps={steps}', 'train.save_every=0']):
        raise SystemExit('target training failed')
    shutil.copytree(out / 'target_run' / 'final', out / 'target')


def train_drafter(out: Path, steps: int, block_size: int, extra: list[str]):
    from dllm_nb.train import main
    rc = main(['dllm.mode=dflash', f'dflash.target={out}/target', f'output_dir={out}/drafter', f'train.max_steps={steps}',
               f'dflash.block_size={block_size}', 'train.micro_batch_size=32', 'train.eval_every=100', *extra])
    if rc: raise SystemExit(f'drafter training failed (exit {rc})')


def bench_real(args):
    "The real-target bench (see the module docstring)."
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.dflash import read_prompts
    one_thread()
    target_path = target_id(args.target)                 # as drafters record it
    tok = load_tokenizer(args.target)
    drafter = load_drafter(args.drafter)                  # a DFlashDrafter or a NextTokenHead (one draft per call)
    if drafter.config.target != target_path: print(f'note: the drafter records target {drafter.config.target}')
    target = drafter.target
    prompts = read_prompts(args.prompts)[:args.n]
    ids, eos, N = encode_prompts(prompts, tok), tok.eos_token_id, args.max_new_tokens
    corpus = None
    if args.corpus:                                       # retrieval drafts from the distilled answers
        from dllm_nb.dflash import NgramIndex
        corpus = NgramIndex.from_chat_jsonl(args.corpus, tok, min_share=args.min_share)
        held = set(map(tuple, ids)) & corpus.prompts
        if held: raise SystemExit(f'--corpus {args.corpus} answers {len(held)} of the benched prompts: use a file without them')
    with skinny_linears(target, drafter) if args.linear == 'skinny' else contextlib.nullcontext():   # both sides alike
        return _bench_real(args, tok, drafter, target, prompts, ids, eos, N, corpus)


def _bench_real(args, tok, drafter, target, prompts, ids, eos, N, corpus):
    target_greedy(target, ids[:1], 8, eos); speculative_generate(drafter, ids[:1], 8, eos)      # warm-up
    print(f'target {args.target}; {type(drafter).__name__} {args.drafter} (block size {drafter.config.block_size}, '
          f'{sum(p.numel() for p in drafter.parameters()) / 1e6:.2f}M parameters); {len(ids)} held-out prompts, '
          f'max_new_tokens {N}, drafts verified while the drafter gives them >= {args.min_confidence}'
          f'{f", copies from the context after a recurring 2..{args.lookup}-gram (lookup)" if args.lookup else ""}'
          f'{f", at most {args.max_draft} drafts verified per call" if args.max_draft else ""}'
          f'{f", copies from {corpus} (>= {args.min_share} of its occurrences agree)" if corpus else ""}'
          f'{", no drafter (copies only)" if args.no_drafter else ""}; {args.linear} linears on both sides; times are process CPU '
          f'seconds (1 thread), the target and speculative decoding alternating batch by batch')
    print(f"{'batch':>5} {'tau':>5} {'target tok/s':>12} {'spec tok/s':>10} {'speed-up':>8} {'identical':>9}  accepted tokens per call")
    res, t_draft = {}, [0.0]
    def timed_draft(*a):                                  # the profile's split: drafter vs target verification
        propose = getattr(type(drafter), 'propose', draft_block)
        out, _, dt = timed(lambda: propose(*a, min_confidence=args.min_confidence)); t_draft[0] += dt; return out
    def target_batch(rows):                               # the target's own greedy decoding of a batch: (rows, CPU s)
        if len(rows) == 1:
            g, _, dt = timed(lambda: target_greedy(target, rows, N, eos)); return g, dt
        x, am = _left(rows)
        out, _, dt = timed(lambda: target.generate(x, attention_mask=am, max_new_tokens=N, do_sample=False,
                                                eos_token_id=eos, pad_token_id=eos))
        return [_cut(r, eos) for r in out[:, x.shape[1]:].tolist()], dt
    ref = None if 1 in args.batch_sizes else target_greedy(target, ids, N, eos)   # batch-1 greedy: what every run must equal
    for B in sorted(args.batch_sizes):
        t_ar = n_ar = t_sp = 0
        seqs, acc, t_draft[0], greedy = [], [], 0, []
        for i, s in enumerate(range(0, len(ids), B)):     # alternate, so a slower or faster spell of the machine hits both
            def spec():                                   # (output, CPU s)
                sp, _, dt = timed(lambda: speculative_generate(drafter, ids[s:s + B], N, eos, draft_fn=timed_draft,
                                                               lookup=args.lookup, max_draft=args.max_draft,
                                                               corpus=corpus, use_drafter=not args.no_drafter))
                return sp, dt
            if i % 2: (sp, dt), (g, dg) = spec(), target_batch(ids[s:s + B])
            else: (g, dg), (sp, dt) = target_batch(ids[s:s + B]), spec()
            t_sp += dt; seqs += sp.sequences; acc += sp.accept_lengths
            t_ar += dg; n_ar += sum(map(len, g)); greedy += g
        if B == 1: ref = greedy
        tau, n_sp, same = sum(acc) / len(acc), sum(map(len, seqs)), seqs == ref
        hist = dict(sorted(collections.Counter(acc).items()))
        res[B] = (tau, n_sp / t_sp / (n_ar / t_ar), same)
        print(f'{B:>5} {tau:>5.2f} {n_ar / t_ar:>12.1f} {n_sp / t_sp:>10.1f} {res[B][1]:>7.2f}x {str(same):>9}  {hist}  '
              f'(drafting {100 * t_draft[0] / t_sp:.0f}% of the time)')
    print(f'sample: {prompts[0]!r} -> {tok.decode(ref[0])!r}')
    b0 = 1 if 1 in res else next(iter(res))                      # the figure is batch 1; else the first size run
    tau, speed, same = res[b0]
    print(f'dflash on {Path(args.target).name}: tau {tau:.2f}, {speed:.2f}x tokens/s at batch {b0}, identical: {same}')


def _left(rows):
    from dllm_nb.dflash import pad_rows
    return pad_rows(rows, 'cpu', left=True)


def _cut(row, eos):
    return row[:row.index(eos)] if eos in row else row


def main():
    from datasets import disable_progress_bars
    disable_progress_bars()
    ap = argparse.ArgumentParser()
    ap.add_argument('--target', default=None, help='a real causal target (.gguf / HF folder): bench it with --drafter')
    ap.add_argument('--drafter', default=None, help="the drafter's final/ folder (with --target)")
    ap.add_argument('--prompts', default='shipped:test', help='prompts for --target (shipped:test = the held-out split)')
    ap.add_argument('--batch-sizes', type=int, nargs='+', default=[1, 4])
    ap.add_argument('--min-confidence', type=float, default=0.5,
                    help='--target: verify drafts only while the drafter gives them this probability (0 = the whole block)')
    ap.add_argument('--max-draft', type=at_least(0), default=0,
                    help='--target: verify at most N drafted/copied tokens per row per call (0 = the whole block)')
    ap.add_argument('--lookup', type=off_or_at_least(2), default=0,
                    help='--target: rows whose last 2..N tokens recur copy what followed them instead of drafting (0 = off)')
    ap.add_argument('--corpus', default=None,
                    help='--target: a distilled chat JSONL (the drafter\'s training data): rows with nothing to copy from '
                         'their context copy what followed the same suffix in its answers (NgramIndex)')
    ap.add_argument('--min-share', type=at_least_float(0, 1), default=0.5, help='--corpus: copy while this share of the occurrences agree')
    ap.add_argument('--no-drafter', action='store_true', help='--target: copies only (lookup / corpus), the drafter never runs')
    ap.add_argument('--linear', choices=('skinny', 'stock'), default='skinny',
                    help="--target: the target's and drafter's linear layers, the same for the target's own decoding and "
                         "speculative decoding: skinny_linears (faster for a few rows on a CPU) or stock nn.Linear")
    ap.add_argument('--out', default='runs/spec')
    ap.add_argument('--target-steps', type=int, default=600)
    ap.add_argument('--drafter-steps', type=int, default=600)
    ap.add_argument('--block-size', type=int, default=8)
    ap.add_argument('--n', type=int, default=None, help='test prompts per task (tiny: 20) / held-out prompts (--target: all)')
    ap.add_argument('--max-new-tokens', type=int, default=None, help='tiny: 48, --target: 64')
    ap.add_argument('overrides', nargs='*')
    args = ap.parse_args()
    if args.target:
        if not args.drafter: raise SystemExit('--target needs --drafter DIR (a drafter trained for it)')
        args.max_new_tokens = args.max_new_tokens or 64
        return bench_real(args)
    args.n, args.max_new_tokens = args.n or 20, args.max_new_tokens or 48
    out = Path(args.out)
    tic = time.perf_counter()
    if not (out / 'target' / 'config.json').exists(): train_target(out, args.target_steps)
    print(f'target ready ({time.perf_counter() - tic:.0f} s)'); tic = time.perf_counter()
    if not (out / 'drafter' / 'final' / 'dflash_config.json').exists():
        train_drafter(out, args.drafter_steps, args.block_size, args.overrides)
    print(f'drafter ready ({time.perf_counter() - tic:.0f} s)')
    drafter = DFlashDrafter.from_pretrained(out / 'drafter' / 'final')
    from dllm_nb.tokenizer import load_tokenizer
    tok, target = load_tokenizer(out / 'drafter' / 'final'), drafter.target
    prompts = [ex['messages'][0]['content'] for t in ('addition', 'reverse') for ex in task_examples(t, 'test')[:args.n]]
    ids = encode_prompts(prompts, tok)
    eos, N = tok.eos_token_id, args.max_new_tokens
    one_thread()
    target_greedy(target, ids[:1], N, eos); speculative_generate(drafter, ids[:1], N, eos)      # warm-up
    t_ar = t_sp = n_ar = n_sp = 0; acc, same = [], []
    for p in ids:
        ref, dt, _ = timed(lambda: target_greedy(target, [p], N, eos)); t_ar += dt; n_ar += len(ref[0])
        sp, dt, _ = timed(lambda: speculative_generate(drafter, [p], N, eos)); t_sp += dt; n_sp += len(sp.sequences[0])
        acc += sp.accept_lengths; same.append(sp.sequences == ref)
    tau = sum(acc) / len(acc)
    hist = collections.Counter(acc)
    print(f'prompts: {len(ids)} (batch 1), block size {drafter.config.block_size}, max_new_tokens {N}')
    print(f'acceptance length histogram: {dict(sorted(hist.items()))}')
    print(f'mean acceptance length tau: {tau:.2f} tokens per target call')
    print(f'target greedy (HF generate, KV cache): {n_ar / t_ar:.1f} tokens/s; speculative: {n_sp / t_sp:.1f} tokens/s; '
          f'speed-up {n_sp / t_sp / (n_ar / t_ar):.2f}x')
    print(f'sample: {prompts[0]!r} -> {tok.decode(sp.sequences[0]) if len(ids) == 1 else tok.decode(target_greedy(target, ids[:1], N, eos)[0])!r}')
    print(f'identical: {all(same)}')


if __name__ == '__main__':
    main()
