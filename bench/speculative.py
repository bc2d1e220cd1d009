"""DFlash speculative decoding (not a timed test): `python bench/speculative.py [--out runs/spec] [--n 20]`.

1. target: the tiny AR baseline of `bench/learns.py` (the default config's backbone, causal next-token loss on the
   response, same data order and optimizer) trained for `--target-steps`, saved as an HF folder `OUT/target`;
2. drafter: `python -m dllm_nb.train dllm.mode=dflash dflash.target=OUT/target ...` for `--drafter-steps`, `OUT/drafter`;
3. the first `--n` test prompts of each built-in task, one at a time (batch 1): the target's own greedy decoding
   (HF `generate`, KV cache) vs `dllm_nb.dflash.speculative_generate`, both timed after one warm-up prompt.
Prints the mean acceptance length tau (tokens per target verification call), its histogram, tokens/s of both, and
`identical: True/False` (every prompt token-identical to the target's greedy output) as the final line.
Existing `OUT/target` / `OUT/drafter/final` are reused; delete them to retrain. Extra `key=value` args go to the drafter run.
"""
import argparse, collections, sys, time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learns import train_autoregressive  # noqa: E402
from dllm_nb.config import load_config  # noqa: E402
from dllm_nb.data import task_examples  # noqa: E402
from dllm_nb.dflash import DFlashDrafter, speculative_generate, target_greedy  # noqa: E402
from dllm_nb.generate import encode_prompts  # noqa: E402
from dllm_nb.trainer import Trainer  # noqa: E402


def train_target(out: Path, steps: int):
    cfg = load_config(None, ['dllm.mode=mdlm', f'output_dir={out}/target_run', f'train.max_steps={steps}'], world_size=1)
    tr = Trainer(cfg, quiet=True)
    model = train_autoregressive(cfg, tr)
    model.save_pretrained(out / 'target'); tr.tokenizer.save_pretrained(out / 'target')


def train_drafter(out: Path, steps: int, block_size: int, extra: list[str]):
    from dllm_nb.train import main
    rc = main(['dllm.mode=dflash', f'dflash.target={out}/target', f'output_dir={out}/drafter', f'train.max_steps={steps}',
               f'dflash.block_size={block_size}', 'train.micro_batch_size=32', 'train.eval_every=100', *extra])
    if rc: raise SystemExit(f'drafter training failed (exit {rc})')


def timed(fn):
    tic = time.perf_counter(); res = fn(); return res, time.perf_counter() - tic


def main():
    from datasets import disable_progress_bars
    disable_progress_bars()
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', default='runs/spec')
    ap.add_argument('--target-steps', type=int, default=600)
    ap.add_argument('--drafter-steps', type=int, default=600)
    ap.add_argument('--block-size', type=int, default=8)
    ap.add_argument('--n', type=int, default=20, help='test prompts per task')
    ap.add_argument('--max-new-tokens', type=int, default=48)
    ap.add_argument('overrides', nargs='*')
    args = ap.parse_args()
    out = Path(args.out)
    tic = time.perf_counter()
    if not (out / 'target' / 'config.json').exists(): train_target(out, args.target_steps)
    print(f'target ready ({time.perf_counter() - tic:.0f} s)'); tic = time.perf_counter()
    if not (out / 'drafter' / 'final' / 'dflash_config.json').exists():
        train_drafter(out, args.drafter_steps, args.block_size, args.overrides)
    print(f'drafter ready ({time.perf_counter() - tic:.0f} s)')
    drafter = DFlashDrafter.from_pretrained(out / 'drafter' / 'final')
    from dllm_nb.data import load_tokenizer
    tok, target = load_tokenizer(out / 'drafter' / 'final'), drafter.target
    prompts = [ex['messages'][0]['content'] for t in ('addition', 'reverse') for ex in task_examples(t, 'test')[:args.n]]
    ids = encode_prompts(prompts, tok)
    eos, N = tok.eos_token_id, args.max_new_tokens
    torch.set_num_threads(1)
    target_greedy(target, ids[:1], N, eos); speculative_generate(drafter, ids[:1], N, eos)      # warm-up
    t_ar = t_sp = n_ar = n_sp = 0; acc, same = [], []
    for p in ids:
        ref, dt = timed(lambda: target_greedy(target, [p], N, eos)); t_ar += dt; n_ar += len(ref[0])
        sp, dt = timed(lambda: speculative_generate(drafter, [p], N, eos)); t_sp += dt; n_sp += len(sp.sequences[0])
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
