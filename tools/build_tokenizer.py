"""Rebuild the tokenizer shipped in dllm_nb/assets/tokenizer/ (deterministic: same files every run).

    python tools/build_tokenizer.py [--vocab-size 1024] [--seed 0] [--out dllm_nb/assets/tokenizer]
"""
import argparse
from pathlib import Path

from dllm_nb.tokenizer import asset_dir, build_tokenizer

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--vocab-size', type=int, default=1024)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--out', default=None, help='output folder (default: the package assets folder)')
    args = ap.parse_args()
    out = Path(args.out) if args.out else asset_dir()
    tok = build_tokenizer(out, vocab_size=args.vocab_size, seed=args.seed)
    print(f'{len(tok)} tokens -> {out}: ' + ', '.join(f'{f.name} {f.stat().st_size} B' for f in sorted(out.iterdir())))
