"""Does it learn? (not a timed test): `python bench/learns.py [--config configs/default.yaml] [--seeds 3] [--n 50]`.

Trains the config five ways on the built-in tasks, single process, on the same data order, once per seed
(`--seeds N` from `--first-seed`; the config's `seed` = model init, data order and noise):
  * `mdlm`            - `dllm_nb.trainer.Trainer(cfg).fit()` with `dllm.mode=mdlm` (use `--config configs/mdlm_cpu.yaml`
                        for the mdlm recipe that learns at this scale: AR warm-up + shifted logits + AR co-loss +
                        suffix masks);
  * `block_diffusion` - the same with `dllm.mode=block_diffusion` (the default);
  * `hybrid`          - the same with `dllm.mode=hybrid` (08c_hybrid: one pass over [x_t ; x_0], block-diffusion logits
                        from the noisy copy, causal AR logits from the clean copy, loss alpha * D + AR; decoded
                        self-speculatively: diffusion drafts, the AR copy verifies; use `--config configs/hybrid_cpu.yaml`);
  * `idlm`            - the same with `dllm.mode=idlm` (08b_idlm: decoded with the cached I-DLM sampler, anchor + drafts; use
                        `--config configs/idlm_cpu.yaml`: the clean-copy term at weight 1: 0.94-1.00 on seeds 0, 2, 3, 4);
  * `autoregressive`  - the same with `dllm.mode=ar`: the same backbone config, batches, optimizer, schedule, clipping
                        and step count, trained with the plain causal next-token loss on the response, decoded
                        greedily with HF `generate` (the library's `ar` baseline mode).
Then prints one table: mode, task, median and worst test exact match over the seeds (`dllm_nb.eval.exact_match`,
first `--n` test examples), steps, median process CPU seconds (one thread: what a run costs, whatever else shares
the box) and validation loss. Sampling uses `dllm_nb.eval.sampler_settings`
(the same as `python -m dllm_nb.train`'s report): a fixed `dllm.max_new_tokens` canvas with EOS stopping, blocks of
the mode's own `<mode>.block_size`, one step per token (I-DLM: `block_size` drafts per pass), greedy; it never reads the reference
answers. `--all-presets` trains every mode with its own preset (`PRESETS`) instead of `--config`, one table for all.
Extra `key=value` arguments override the config (e.g. `train.lr=1e-3`); `--modes` runs a subset, e.g.
`--modes block_diffusion block_diffusion.scored_blocks=one` for the reference's one-scored-block objective; `--json FILE` appends
one line per run (`val`: the last validation loss, `val_dllm`: its diffusion term). `--nproc-per-node 2` trains each run under
`torchrun -m dllm_nb.train` instead (CPU s: every rank's) and scores its `final/` here the same way.
"""
import argparse, json, os, statistics, subprocess, sys, time
from pathlib import Path

from common import TASKS, child_cpu_s, one_thread
from dllm_nb.checkpoint import load_checkpoint
from dllm_nb.config import load_config
from dllm_nb.eval import exact_match, sampler_settings
from dllm_nb.metrics import read_metrics
from dllm_nb.trainer import Trainer

MODES = ('mdlm', 'hybrid', 'block_diffusion', 'idlm', 'autoregressive')
# each mode's own preset (None = the embedded default) and step count (None = the preset's), as the README quotes them
PRESETS = dict(mdlm=('configs/mdlm_cpu.yaml', None), hybrid=('configs/hybrid_cpu.yaml', None), block_diffusion=(None, None),
               idlm=('configs/idlm_cpu.yaml', None), autoregressive=(None, None))


def dllm_mode(mode: str) -> str: return 'ar' if mode == 'autoregressive' else mode


def accuracy(model, tok, n, settings, **kw):
    return {task: exact_match(model, tok, task, 'test', n, **settings, **kw)['accuracy'] for task in TASKS}


def mode_config(args, mode, extra):
    "`(config path, overrides)` of `mode`: `--config` and `extra`, or with `--all-presets` the mode's own preset and steps."
    if not args.all_presets: return args.config, list(extra)
    path, steps = PRESETS[mode]
    return path, ([f'train.max_steps={steps}'] if steps and not args.max_steps else []) + list(extra)


def last_val(records) -> dict:
    "`dict(val, val_dllm)`: the last validation loss of a run's records and its diffusion term (NaN without validation)."
    vals = [r for r in records if 'val_loss' in r]
    return dict(val=vals[-1]['val_loss'], val_dllm=vals[-1]['val_dllm_loss']) if vals else dict(val=float('nan'), val_dllm=float('nan'))


def run_one(args, mode, seed, extra):
    "Train `mode` with `seed`; returns `dict(mode, seed, val, val_dllm, seconds, steps, addition, reverse)` (val: the whole validation loss, val_dllm: its diffusion term)."
    tic = time.process_time()
    path, extra = mode_config(args, mode, extra)
    over = [f'dllm.mode={dllm_mode(mode)}', f'output_dir={args.output_dir}/{mode}-s{seed}', f'seed={seed}', *extra]
    if args.nproc_per_node > 1: return run_torchrun(args, mode, seed, path, over)
    cfg = load_config(path, over, world_size=1)
    tr = Trainer(cfg, quiet=True)
    records = tr.fit()
    acc = accuracy(tr.model.eval(), tr.tokenizer, args.n, sampler_settings(cfg))   # ar: HF generate (greedy, KV cache)
    if mode == 'hybrid': acc['speculation'] = speculation_stats(tr.model, tr.tokenizer)
    return dict(mode=mode, seed=seed, **last_val(records), seconds=time.process_time() - tic, steps=cfg.train.max_steps, config=path, **acc)


def run_torchrun(args, mode, seed, path, over):
    "The same run as `torchrun --nproc_per_node=N -m dllm_nb.train` (the CLI's own end-of-run report skipped), scored here on its `final/`."
    cfg = load_config(path, over, world_size=args.nproc_per_node)
    out = Path(cfg.output_dir)
    cmd = [sys.executable, '-m', 'torch.distributed.run', f'--nproc_per_node={args.nproc_per_node}', '-m', 'dllm_nb.train', *(['--config', path] if path else []),
           '--eval-n', '0', *over, 'train.overwrite=true']
    tic = child_cpu_s()
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f'{out.name}.log', 'w') as log:
        if subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, OMP_NUM_THREADS='1')).returncode:
            raise SystemExit(f"{' '.join(cmd)} failed: see {log.name}")
    seconds = child_cpu_s() - tic                                         # every rank's CPU time, as a run costs
    model, tok = load_checkpoint(out / 'final')
    tic = time.process_time()
    acc = accuracy(model.eval(), tok, args.n, sampler_settings(cfg))
    return dict(mode=mode, seed=seed, **last_val(read_metrics(out)),
                seconds=seconds + time.process_time() - tic, steps=cfg.train.max_steps, config=path,
                nproc=args.nproc_per_node, **acc)


def speculation_stats(model, tok, n: int = 20, max_new: int = 40) -> dict:
    "hybrid: tokens per backbone call of its self-speculative sampler, and tokens/s against HF generate + KV cache of the same backbone (batch 1)."
    from dllm_nb.builtin import task_examples
    from dllm_nb.ar import generate_autoregressive_cached
    from dllm_nb.sampling import encode_prompts
    from dllm_nb.hybrid import generate_hybrid
    prompts = encode_prompts([ex['messages'][0]['content'] for t in TASKS for ex in task_examples(t, 'test', 0)[:n]], tok)
    outs, ars, tic = [], [], time.process_time()
    for p in prompts: outs.append(generate_hybrid(model, [p], max_new, tok))
    t_spec, tic = time.process_time() - tic, time.process_time()
    for p in prompts: ars.append(generate_autoregressive_cached(model, [p], max_new, tok))
    t_ar = time.process_time() - tic
    tokens = sum(min(len(o.sequences[0]) + 1, max_new) for o in outs)          # + the EOS it stopped at
    same = sum(o.sequences == a.sequences for o, a in zip(outs, ars))
    return dict(tokens_per_call=tokens / sum(o.nfe for o in outs), spec_tok_s=tokens / t_spec, ar_tok_s=tokens / t_ar,
                identical=same, prompts=len(prompts))


def table(rows: list[dict]) -> str:
    "One line per (mode, task): median and worst exact match over seeds, steps, median seconds, median val loss, preset."
    out = [f"{'mode':>16} {'task':>9} {'median':>7} {'worst':>6} {'seeds':>5} {'steps':>6} {'CPU s':>8} {'val loss':>9}  preset"]
    for mode in dict.fromkeys(r['mode'] for r in rows):
        rs = [r for r in rows if r['mode'] == mode]
        for task in TASKS:
            acc = [r[task] for r in rs]
            out.append(f"{mode:>16} {task:>9} {statistics.median(acc):7.3f} {min(acc):6.3f} {len(rs):5d} {rs[0]['steps']:6d} "
                       f"{statistics.median(r['seconds'] for r in rs):8.0f} {statistics.median(r['val'] for r in rs):9.3f}  "
                       f"{rs[0].get('config') or 'default'}")
    return '\n'.join(out)


def main():
    from datasets import disable_progress_bars
    disable_progress_bars()
    ap = argparse.ArgumentParser()
    ap.add_argument('--config', default=None, help='YAML preset (default: the embedded default = configs/default.yaml)')
    ap.add_argument('--all-presets', action='store_true', help="every mode with its own preset (PRESETS), not --config")
    ap.add_argument('--max-steps', type=int, default=None, help='override train.max_steps')
    ap.add_argument('--n', type=int, default=50, help='test examples per task')
    ap.add_argument('--seeds', type=int, default=3, help='seeds per mode (seed, seed+1, ...): the table gives median and worst')
    ap.add_argument('--first-seed', type=int, default=0)
    ap.add_argument('--output-dir', default='runs/learns')
    ap.add_argument('--nproc-per-node', type=int, default=1,
                    help='train each run under `torchrun --nproc_per_node=N -m dllm_nb.train` (CPU s: all ranks), then score its final/')
    ap.add_argument('--json', default=None, help='also append one JSON line per run to this file')
    ap.add_argument('--modes', default=','.join(MODES),
                    help='comma-separated subset, e.g. block_diffusion (with block_diffusion.scored_blocks=one for the reference)')
    ap.add_argument('overrides', nargs='*')
    args = ap.parse_args()
    one_thread()                        # one thread per process (seconds are process CPU time)
    extra = list(args.overrides) + ([f'train.max_steps={args.max_steps}'] if args.max_steps else [])
    modes = args.modes.split(',')
    for mode in modes:
        if mode not in MODES: raise SystemExit(f'unknown mode {mode!r}; use a comma-separated subset of {",".join(MODES)}')
    for mode in modes:   # every mode's config is checked before any training (a key of another mode's section is an error)
        path, over = mode_config(args, mode, extra)
        load_config(path, [f"dllm.mode={dllm_mode(mode)}", *over], world_size=args.nproc_per_node)
    rows = []
    for mode in modes:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            r = run_one(args, mode, seed, extra)
            rows.append(r)
            print(f"{mode:>16} seed {seed}: {', '.join(f'{t} {r[t]:.3f}' for t in TASKS)}  val loss {r['val']:.3f}  "
                  f"({r['steps']} steps, {r['seconds']:.0f} CPU s)", flush=True)
            if args.json:
                with open(args.json, 'a') as f: f.write(json.dumps(dict(r, overrides=extra)) + '\n')
    print(table(rows))
    for r in rows:
        if (sp := r.get('speculation')):
            print(f"hybrid seed {r['seed']}: self-speculation {sp['tokens_per_call']:.2f} tokens per backbone call (AR: 1), "
                  f"{sp['spec_tok_s']:.0f} tokens/s vs {sp['ar_tok_s']:.0f} for HF generate + KV cache of the same backbone "
                  f"(batch 1, {sp['prompts']} prompts, output identical on {sp['identical']})")
    return rows


if __name__ == '__main__':
    main()
