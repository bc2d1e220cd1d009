"""Does it learn? (not a timed test): `python bench/learns.py [--config configs/default.yaml] [--seeds 3] [--n 50]`.

Trains the config five ways on the built-in tasks, single process, on the same data order, once per seed
(`--seeds N` from `--first-seed`; the config's `seed` = model init, data order and noise):
  * `mdlm`            - `dllm_nb.trainer.Trainer(cfg).fit()` with `dllm.mode=mdlm` (use `--config configs/mdlm_cpu.yaml`
                        for the mdlm recipe that learns at this scale: AR warm-up + shifted logits + AR co-loss +
                        suffix masks);
  * `block_diffusion` - the same with `dllm.mode=block_diffusion` (the default);
  * `hybrid`          - the same with `dllm.mode=hybrid` (blockwise masking + next-token co-loss on a bidirectional
                        MDLM backbone; decoded with the MDLM sampler);
  * `idlm`            - the same with `dllm.mode=idlm` (08b_idlm: decoded with the cached I-DLM sampler, anchor + drafts);
  * `autoregressive`  - the same with `dllm.mode=ar`: the same backbone config, batches, optimizer, schedule, clipping
                        and step count, trained with the plain causal next-token loss on the response, decoded
                        greedily with HF `generate` (the library's `ar` baseline mode).
Then prints one table: mode, task, median and worst test exact match over the seeds (`dllm_nb.eval.exact_match`,
first `--n` test examples), steps, median seconds and validation loss. Sampling uses `dllm_nb.eval.sampler_settings`
(the same as `python -m dllm_nb.train`'s report): a fixed `dllm.response_canvas` canvas with EOS stopping, blocks of
the mode's own `<mode>.block_size`, one step per token (I-DLM: `block_size` drafts per pass), greedy; it never reads the reference
answers. Extra `key=value` arguments override the config (e.g. `train.lr=1e-3`); `--modes` runs a subset, e.g.
`--modes block_diffusion block_diffusion.scored_blocks=one` for the reference's one-scored-block objective; `--json FILE` appends
one line per run.
"""
import argparse, json, statistics, time

import torch

from dllm_nb.config import load_config
from dllm_nb.eval import exact_match, sampler_settings
from dllm_nb.trainer import Trainer

TASKS = ('addition', 'reverse')
MODES = ('mdlm', 'hybrid', 'block_diffusion', 'idlm', 'autoregressive')


def dllm_mode(mode: str) -> str: return 'ar' if mode == 'autoregressive' else mode


def accuracy(model, tok, n, settings, **kw):
    return {task: exact_match(model, tok, task, 'test', n, **settings, **kw)['accuracy'] for task in TASKS}


def run_one(args, mode, seed, extra):
    "Train `mode` with `seed`; returns `dict(mode, seed, val, seconds, steps, addition, reverse)`."
    tic = time.perf_counter()
    cfg = load_config(args.config, [f'dllm.mode={dllm_mode(mode)}', f'output_dir={args.output_dir}/{mode}-s{seed}', f'seed={seed}',
                                    *extra], world_size=1)
    tr = Trainer(cfg, quiet=True)
    records = tr.fit()
    vals = [r['val_loss'] for r in records if 'val_loss' in r]
    val = vals[-1] if vals else float('nan')
    acc = accuracy(tr.model.eval(), tr.tokenizer, args.n, sampler_settings(cfg))   # ar: HF generate (greedy, KV cache)
    return dict(mode=mode, seed=seed, val=val, seconds=time.perf_counter() - tic, steps=cfg.train.max_steps, **acc)


def table(rows: list[dict]) -> str:
    "One line per (mode, task): median and worst exact match over seeds, steps, median seconds, median val loss."
    out = [f"{'mode':>16} {'task':>9} {'median':>7} {'worst':>6} {'seeds':>5} {'steps':>6} {'seconds':>8} {'val loss':>9}"]
    for mode in dict.fromkeys(r['mode'] for r in rows):
        rs = [r for r in rows if r['mode'] == mode]
        for task in TASKS:
            acc = [r[task] for r in rs]
            out.append(f"{mode:>16} {task:>9} {statistics.median(acc):7.3f} {min(acc):6.3f} {len(rs):5d} {rs[0]['steps']:6d} "
                       f"{statistics.median(r['seconds'] for r in rs):8.0f} {statistics.median(r['val'] for r in rs):9.3f}")
    return '\n'.join(out)


def main():
    from datasets import disable_progress_bars
    disable_progress_bars()
    ap = argparse.ArgumentParser()
    ap.add_argument('--config', default=None, help='YAML preset (default: the embedded default = configs/default.yaml)')
    ap.add_argument('--max-steps', type=int, default=None, help='override train.max_steps')
    ap.add_argument('--n', type=int, default=50, help='test examples per task')
    ap.add_argument('--seeds', type=int, default=3, help='seeds per mode (seed, seed+1, ...): the table gives median and worst')
    ap.add_argument('--first-seed', type=int, default=0)
    ap.add_argument('--output-dir', default='runs/learns')
    ap.add_argument('--json', default=None, help='also append one JSON line per run to this file')
    ap.add_argument('--modes', default=','.join(MODES),
                    help='comma-separated subset, e.g. block_diffusion (with block_diffusion.scored_blocks=one for the reference)')
    ap.add_argument('overrides', nargs='*')
    args = ap.parse_args()
    extra = list(args.overrides) + ([f'train.max_steps={args.max_steps}'] if args.max_steps else [])
    modes = args.modes.split(',')
    for mode in modes:
        if mode not in MODES: raise SystemExit(f'unknown mode {mode!r}; use a comma-separated subset of {",".join(MODES)}')
    for mode in modes:   # every mode's config is checked before any training (a key of another mode's section is an error)
        load_config(args.config, [f"dllm.mode={dllm_mode(mode)}", *extra], world_size=1)
    rows = []
    for mode in modes:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            r = run_one(args, mode, seed, extra)
            rows.append(r)
            print(f"{mode:>16} seed {seed}: {', '.join(f'{t} {r[t]:.3f}' for t in TASKS)}  val loss {r['val']:.3f}  "
                  f"({r['steps']} steps, {r['seconds']:.0f} s)", flush=True)
            if args.json:
                with open(args.json, 'a') as f: f.write(json.dumps(dict(r, overrides=extra)) + '\n')
    print(table(rows))
    return rows


if __name__ == '__main__':
    main()
