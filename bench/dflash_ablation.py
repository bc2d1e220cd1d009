"""DFlash drafter ablation on a real target, scored without decoding (not a timed test).

    python bench/dflash_ablation.py --target <SmolLM2 .gguf> --drafters runs/a/final runs/b/final [--n 56]

The target's greedy responses to the held-out prompts (`shipped:test`, max_new_tokens + block_size tokens, so every
block can be judged) are generated once (HF `generate`, batch 1, KV cache) and kept in `--refs`; each drafter is then
scored by `replay_acceptance` (one teacher-forced drafter pass per prompt): the accept lengths speculative decoding at
batch 1 would record, so tau here is the bench's tau without its minutes of decoding. Columns: tau with whole blocks
verified and with drafts cut below `--min-confidence` (the bench's default), the share of calls whose first draft
was accepted, with `--lookup N` tau@min-confidence when rows copy after a recurring 2..N-gram (`lookup_draft`), and the drafter's settings that differ between the rows. One row per drafter, in the order given.

`--per-offset` adds, per drafter, the teacher-forced accuracy at each block offset (`offset_accuracy`) on the held-out
responses, the same with the target's features zeroed (how much the drafter leans on them), and with `--seen FILE` (the
distilled chat JSONL it was trained on) on that file's first `--n` rows: the gap between seen and held-out rows.

`--corpus FILE` (a distilled chat JSONL, e.g. the drafters' training data) adds the column `+corpus`: tau@min-confidence
when rows with nothing to copy from their own context (`--lookup`) copy from the file's answers (`NgramIndex`, a
continuation at least `--min-share` of the suffix's occurrences agree on) before the drafter runs, and a last row, the
same copies with no drafter at all.
"""
import argparse, json, sys
from pathlib import Path

from common import one_thread, refs_for


def seen_rows(path, tok, n, n_tokens):
    "Prompt ids and (cut) response ids of the first `n` rows of a distilled chat JSONL, tokenized as in training."
    from dllm_nb.dflash import chat_responses
    P, R = chat_responses(path, tok)
    return P[:n], [r[:n_tokens] for r in R[:n]]


def main():
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.dflash import DFlashDrafter, load_target, offset_accuracy, read_prompts, replay_acceptance
    from dllm_nb.cli import at_least, at_least_float, off_or_at_least
    ap = argparse.ArgumentParser()
    ap.add_argument('--target', required=True)
    ap.add_argument('--drafters', nargs='+', required=True, help="drafters' final/ folders")
    ap.add_argument('--prompts', default='shipped:test')
    ap.add_argument('--n', type=int, default=None)
    ap.add_argument('--max-new-tokens', type=int, default=64)
    ap.add_argument('--min-confidence', type=float, default=0.5)
    ap.add_argument('--max-draft', type=at_least(0), default=0, help='verify at most N drafts per call in every column (0 = whole blocks)')
    ap.add_argument('--lookup', type=off_or_at_least(2), default=0, help='also tau@min-confidence with copies after a recurring 2..N-gram')
    ap.add_argument('--refs', default='runs/dflash_refs.json', help='cache of the target greedy responses')
    ap.add_argument('--per-offset', action='store_true', help='also print accuracy by block offset (held-out, features zeroed, --seen)')
    ap.add_argument('--seen', default=None, help='with --per-offset: a distilled chat JSONL the drafters were trained on')
    ap.add_argument('--corpus', default=None, help="also tau with copies from this distilled chat JSONL's answers")
    ap.add_argument('--min-share', type=at_least_float(0, 1), default=0.5, help='--corpus: copy while this share of the occurrences agree')
    args = ap.parse_args()
    if args.seen and not args.per_offset: ap.error('--seen is read only with --per-offset')
    one_thread()
    tok, target = load_tokenizer(args.target), load_target(args.target)
    prompts = read_prompts(args.prompts)[:args.n]
    first = json.loads((Path(args.drafters[0]) / 'dflash_config.json').read_text())
    ids, resp = refs_for(target, tok, prompts, args.max_new_tokens + first['block_size'], Path(args.refs))
    corpus = None
    if args.corpus:
        from dllm_nb.dflash import NgramIndex
        corpus = NgramIndex.from_chat_jsonl(args.corpus, tok, min_share=args.min_share)
        if set(map(tuple, ids)) & corpus.prompts: raise SystemExit(f'--corpus {args.corpus} answers held-out prompts')
    seen = seen_rows(args.seen, tok, len(prompts), args.max_new_tokens + first['block_size']) if args.seen else None
    confs = [json.loads((Path(d) / 'dflash_config.json').read_text()) for d in args.drafters]
    varying = [k for k in confs[0] if k not in ('target', 'target_info') and len({json.dumps(c.get(k)) for c in confs}) > 1]
    print(f'{len(prompts)} held-out prompts, max_new_tokens {args.max_new_tokens}; tau = tokens committed per target call at batch 1 (replayed)')
    lk = f'+lookup{args.lookup}' if args.lookup else ''
    print(f"{'drafter':<36} {'tau':>5} {f'tau@{args.min_confidence}':>8} {'1st ok':>6}" + (f' {lk:>9}' if lk else '')
          + (f" {'+corpus':>8}" if corpus else '') + '  settings')
    for d, c in zip(args.drafters, confs):
        dr = DFlashDrafter.from_pretrained(d, target=target)
        dr.feature_cache = {}        # every column below replays the same rows: one target pass per row, not one per column
        full = replay_acceptance(dr, ids, resp, args.max_new_tokens, tok.eos_token_id, max_draft=args.max_draft)
        cut = replay_acceptance(dr, ids, resp, args.max_new_tokens, tok.eos_token_id, args.min_confidence, max_draft=args.max_draft)
        copy = replay_acceptance(dr, ids, resp, args.max_new_tokens, tok.eos_token_id, args.min_confidence, args.lookup,
                                 args.max_draft) if lk else []
        rag = replay_acceptance(dr, ids, resp, args.max_new_tokens, tok.eos_token_id, args.min_confidence, args.lookup,
                                args.max_draft, corpus=corpus) if corpus else []
        print(f'{d:<36} {sum(full) / len(full):>5.2f} {sum(cut) / len(cut):>8.2f} {sum(a > 1 for a in full) / len(full):>6.2f}'
              + (f' {sum(copy) / len(copy):>9.2f}' if lk else '') + (f' {sum(rag) / len(rag):>8.2f}' if corpus else '') + '  '
              + ' '.join(f'{k}={c.get(k)}' for k in varying), flush=True)
        if args.per_offset:
            show = lambda name, a: print(f"    {name:<32} {' '.join(f'{x:.2f}' for x in a.tolist())}", flush=True)
            print(f"    accuracy at block offsets 1..{c['block_size'] - 1}:")
            show('held-out', offset_accuracy(dr, ids, resp))
            show("held-out, target's features 0", offset_accuracy(dr, ids, resp, zero_context=True))
            if seen: show(f'seen ({len(seen[0])} rows of --seen)', offset_accuracy(dr, *seen))

    if corpus:
        only = replay_acceptance(dr, ids, resp, args.max_new_tokens, tok.eos_token_id, lookup=args.lookup,
                                 max_draft=args.max_draft, corpus=corpus, use_drafter=False)
        print(f"copies only ({f'lookup {args.lookup} + ' if args.lookup else ''}{corpus}, no drafter): tau {sum(only) / len(only):.2f}")


if __name__ == '__main__':
    sys.exit(main())
