"""Overhead of the dLLM recipe: full train step vs the model's forward/backward alone, and 1 vs 2 processes.

    python -m bench.ablations.train_overhead [--steps 20] [--no-dist]

Part 1 (one process): for mdlm and block_diffusion, steps/s of the whole `train_step` (collate -> corrupt ->
denominators -> forward/backward -> clip -> AdamW) vs the same strategy's forward/backward alone on an already
prepared batch; the ratio is the share of time the recipe leaves to the model (goal >= 0.9 for mdlm).
Part 2: steps/s of the full trainer on the default config's global batch (32) with 1 process vs 2 torchrun
processes (gloo, FSDP2, one thread each), from the run's own per-step timings.
"""
import argparse, json, os, subprocess, sys, tempfile, time
from pathlib import Path
os.environ.setdefault('HF_HUB_OFFLINE', '1'); os.environ.setdefault('HF_DATASETS_OFFLINE', '1')

from bench.common import ROOT, one_thread


def part1(steps):
    from dllm_nb.config import load_config
    from dllm_nb.trainer import Trainer, train_step
    for mode in ('mdlm', 'block_diffusion'):
        cfg = load_config(None, [f'dllm.mode={mode}', 'data.train_size=512', 'data.val_size=8', 'train.global_batch_size=16',
                                 'train.micro_batch_size=16', f'train.max_steps={steps + 2}', 'train.warmup_steps=1',
                                 'output_dir=/tmp/dllm_nb_bench'], world_size=1)
        tr = Trainer(cfg, quiet=True)
        t0 = time.perf_counter()
        for s in range(steps):
            mbs = tr.sampler.micro_batches(s)
            train_step(tr.model, tr.strategy, tr.optimizer, [tr.micro_batch(m) for m in mbs], scheduler=tr.scheduler)
        full = steps / (time.perf_counter() - t0)
        mbs = tr.sampler.micro_batches(0)
        b = tr.strategy.prepare(tr.micro_batch(mbs[0]))
        counts = tr.strategy.denominators([b])
        t0 = time.perf_counter()
        for _ in range(steps): tr.strategy.loss(tr.model, b, counts).loss.backward()
        fb = steps / (time.perf_counter() - t0)
        print(f'{mode:>16}: full train step {full:6.2f} steps/s | forward+backward alone {fb:6.2f} steps/s | ratio {full / fb:.2f}')


def part2(steps):
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(ROOT)}
    res = {}
    for n in (1, 2):
        out = Path(tempfile.mkdtemp()) / 'run'
        cmd = [sys.executable, '-m', 'torch.distributed.run', '--standalone', f'--nproc_per_node={n}', '-m', 'dllm_nb.train',
               '--config', 'configs/default.yaml', f'train.max_steps={steps + 5}', 'train.eval_every=0', 'train.save_every=0',
               'train.log_every=1', 'train.warmup_steps=1', f'output_dir={out}']
        subprocess.run(cmd, env=env, cwd=ROOT, check=True, capture_output=True)
        recs = [json.loads(l) for l in (out / 'metrics.jsonl').read_text().splitlines()][5:]   # skip warm-up steps
        res[n] = sum(r['tps'] for r in recs) / len(recs) / (sum(r['tokens_per_step'] for r in recs) / len(recs))
        print(f'{n} process(es): {res[n]:.2f} steps/s (global batch 32, {len(recs)} timed steps)')
    print(f'2 vs 1 processes: {res[2] / res[1]:.2f}x')


if __name__ == '__main__':
    ap = argparse.ArgumentParser(); ap.add_argument('--steps', type=int, default=20); ap.add_argument('--no-dist', action='store_true')
    a = ap.parse_args(); one_thread()
    part1(a.steps)
    if not a.no_dist: part2(a.steps)
