"""Step time of the trainer with `data.num_workers` = 0, 1, 2 (collation on the loop's thread vs in worker processes).

    python -m bench.ablations.loader [--steps 30] [--workers 0 1 2] [--rounds 2] [--mode mdlm]

A small CPU run (one thread per process): the trainer's own per-step timings (`tokens_per_step / tps` of every
logged step, from the end of one step to the end of the next, so it includes waiting for the loader), first 3 steps
dropped (worker start-up). The settings run in alternating order (0 1 2, then 2 1 0, ...) so that a change in the
machine's load during the bench does not favour one; prints per setting the median of each round and their spread. On a GPU the collation overlaps the
model's kernels; on a CPU box every worker competes with the model for the same cores.
"""
import argparse, os, statistics, tempfile
os.environ.setdefault('HF_HUB_OFFLINE', '1'); os.environ.setdefault('HF_DATASETS_OFFLINE', '1')
import torch

from dllm_nb.config import load_config
from dllm_nb.trainer import Trainer


def step_times(workers: int, steps: int, mode: str) -> list[float]:
    with tempfile.TemporaryDirectory() as out:
        cfg = load_config(None, [f'dllm.mode={mode}', 'data.train_size=512', 'data.val_size=0', 'train.global_batch_size=32',
                                 'train.micro_batch_size=8', f'train.max_steps={steps}', 'train.warmup_steps=1',
                                 'train.eval_every=0', 'train.log_every=1', 'train.save_every=0',
                                 f'data.num_workers={workers}', f'output_dir={out}'], world_size=1)
        recs = Trainer(cfg, quiet=True).fit()
    return [r['tokens_per_step'] / r['tps'] for r in recs if 'tps' in r][3:]


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--steps', type=int, default=30); ap.add_argument('--workers', type=int, nargs='+', default=[0, 1, 2])
    ap.add_argument('--mode', default='mdlm'); ap.add_argument('--rounds', type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(1)
    med = {w: [] for w in a.workers}
    for r in range(a.rounds):
        for w in (a.workers if r % 2 == 0 else a.workers[::-1]):
            med[w].append(1000 * statistics.median(step_times(w, a.steps, a.mode)))
    for w, m in med.items():
        print(f'{a.mode} data.num_workers={w}: median step {statistics.median(m):.1f} ms (rounds: '
              f'{", ".join(f"{x:.1f}" for x in m)}), global batch 32 in 4 micro-batches of 8, {a.steps - 3} steps per round')
