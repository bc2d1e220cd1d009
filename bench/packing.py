"""Packing vs padding on a long-tailed chat set: padding, supervised tokens per CPU second of a training step, peak RSS.

    python bench/packing.py [--examples 256] [--batch 32] [--modes mdlm block_diffusion ar hybrid idlm] [--out FILE]

The data: `--examples` single-turn chats written here (seed 0). Each chat's total length is drawn lognormal with a median
of 300 tokens and sigma 0.8 (p90 ~ 830, p99 ~ 1,900), cut to [24, 2,000]; a fifth of it is the user's message, the rest
the reply, both made of words drawn Zipf-like from the shipped tokenizer's corpus (~1.3 tokens a word: the token
lengths the table reports are measured after tokenizing). `data.max_len=2048`, so no example is dropped.

The model: the tiny default one (`model.hidden_size=64`, 2 layers, 4 heads, fp32, sdpa), `train.global_batch_size` =
`train.micro_batch_size` = `--batch`. For each mode and each layout -- `none` (padded), `group_by_length`, `packing`
(`data.packing=greedy`) -- a fresh process (1 torch thread) runs one whole epoch, every example once, through the
library's collator and `dllm_nb.trainer.train_step` (AdamW, clipping), after one untimed warm-up step. Reported:
- padding: share of the `[B, T]` cells of the collated batches that hold no example (block fill and EOS tails count as
  the example's); for block_diffusion also the canvas `[B, R]` padding (`cpad`);
- sup tok/s: supervised tokens of the epoch / CPU seconds of its steps (collate + train_step, process time);
- peak RSS of the process (MiB);
- the CPU split of a step: collate, prepare (corruption + window), mask build (`dllm_nb.models.model_attention_mask`:
  where block diffusion's mask descriptions become dense masks; mdlm, ar, hybrid and idlm build theirs inside the
  wrapper's forward, so for them it is counted in forward), forward (the loss call, minus mask build), backward +
  optimizer (the rest of `train_step`).
Every mode listed packs (hybrid and idlm pack their `[x_t ; x_0]` pass row for row, `02a_packing`); a mode that refuses
packing (a config error: dflash, not in the default list) gets a row that says so.
"""
import argparse, json, os, re, subprocess, sys, tempfile, time
from collections import Counter
from pathlib import Path

import numpy as np
from common import ROOT, cpu_s, one_thread, peak_rss_mb

LAYOUTS = dict(none=[], group_by_length=['data.group_by_length=true'], packing=['data.packing=greedy'])
TINY = ['model.hidden_size=64', 'model.num_layers=2', 'model.num_heads=4', 'model.num_kv_heads=2', 'data.max_len=2048',
        'data.val_size=0', 'train.warmup_steps=1', 'train.eval_every=0', 'train.save_every=0', 'train.log_every=1']
MEDIAN, SIGMA, LO, HI = 300, 0.8, 24, 2000


def write_chats(path: Path, n: int, seed: int = 0) -> None:
    "`n` single-turn chats, total length ~ lognormal(median 300 tokens, sigma 0.8) in [24, 2000], a fifth of it the prompt."
    from dllm_nb.tokenizer import tokenizer_corpus
    words = [w for w, _ in Counter(w for t in tokenizer_corpus() for w in re.findall(r'[a-z]+', t.lower())).most_common()]
    rng = np.random.default_rng(seed)
    p = 1 / np.arange(1, len(words) + 1) ** 1.1; p /= p.sum()
    total = np.clip(rng.lognormal(np.log(MEDIAN), SIGMA, n), LO, HI) / 1.3      # ~1.3 tokens a word
    say = lambda k: ' '.join(rng.choice(words, max(1, int(k)), p=p))
    with open(path, 'w') as f:
        for t in total:
            f.write(json.dumps(dict(messages=[dict(role='user', content=say(t / 5) + '?'),
                                              dict(role='assistant', content=say(t * 4 / 5) + '.')])) + '\n')


class Clock:
    "CPU seconds spent inside wrapped functions, by name (nested calls are subtracted from the outer one's share)."
    def __init__(self): self.t, self.stack = Counter(), []
    def wrap(self, name, fn):
        def inner(*a, **k):
            self.stack.append(0.0); c = cpu_s()
            try: return fn(*a, **k)
            finally:
                dt = cpu_s() - c; inner_t = self.stack.pop()
                self.t[name] += dt - inner_t
                if self.stack: self.stack[-1] += dt
        return inner


def one(mode: str, layout: str, data: str, batch: int, out: str) -> dict:
    "One epoch of `mode` with `layout` in this process: the numbers of the table (see the module docstring)."
    one_thread()
    import torch
    import dllm_nb.models as models
    from dllm_nb.config import ConfigError, load_config
    from dllm_nb.packing import padding_fraction
    from dllm_nb.stages import Batch
    from dllm_nb.trainer import Trainer, train_step
    over = [f'dllm.mode={mode}', f'data.dataset={data}', f'train.global_batch_size={batch}', f'train.micro_batch_size={batch}',
            f'output_dir={out}', *TINY, *LAYOUTS[layout]]
    try: cfg = load_config(None, over, world_size=1)
    except ConfigError as e: return dict(mode=mode, layout=layout, refused=str(e))
    tr = Trainer(cfg, quiet=True)
    steps = -(-len(tr.train_ds) // batch)
    clock = Clock()
    tr.strategy.prepare = clock.wrap('prepare', tr.strategy.prepare)
    tr.strategy.loss = clock.wrap('forward', tr.strategy.loss)
    models.model_attention_mask = clock.wrap('mask build', models.model_attention_mask)
    collate = clock.wrap('collate', tr.collator)
    lengths = [len(x) for x in tr.train_ds['input_ids']]
    rec = dict(mode=mode, layout=layout, steps=steps, examples=len(tr.train_ds), rows=0, cells=0, pad=0, sup=0, ccells=0, cpad=0,
               tokens=dict(median=int(np.median(lengths)), p90=int(np.percentile(lengths, 90)), max=int(max(lengths))))
    windows = []
    if mode == 'block_diffusion':
        prep = tr.strategy.prepare
        tr.strategy.prepare = lambda b: windows.append(w := prep(b)) or w
    def step(s):
        mbs = tr.sampler.micro_batches(s)
        coll = [collate([tr.train_ds[int(i)] for i in m.indices]) for m in mbs]
        batches = [Batch.from_collated(c, m.seeds(cfg.seed), torch.tensor(m.slots), m.global_batch_size, s) for c, m in zip(coll, mbs)]
        train_step(tr.model, tr.strategy, tr.optimizer, batches, 1, cfg.train.grad_clip, scheduler=tr.scheduler)
        return coll
    step(steps); clock.t.clear(); windows.clear()           # warm-up (untimed) on a batch of the next epoch, then epoch 0
    c0 = cpu_s()
    for s in range(steps):
        for c in step(s):
            B, T = c['input_ids'].shape
            rec['rows'] += B; rec['cells'] += B * T; rec['pad'] += round(padding_fraction(c) * B * T); rec['sup'] += int(c['loss_mask'].sum())
    rec['cpu_s'] = cpu_s() - c0
    for w in windows:
        cw = w.window
        rec['ccells'] += cw.canvas_ids.numel()
        rec['cpad'] += int((cw.canvas_doc_ids < 0).sum() if cw.canvas_doc_ids is not None else
                           (torch.arange(cw.canvas_ids.shape[1])[None] >= cw.response_len[:, None]).sum())
    rec['split'] = {k: v for k, v in clock.t.items()}
    rec['split']['backward + optimizer'] = rec['cpu_s'] - sum(clock.t.values())
    rec['peak_rss_mb'] = peak_rss_mb()
    return rec


def table(recs: list) -> list[str]:
    lines = [f"{'mode':<16}{'layout':<17}{'rows':>6}{'padding':>9}{'cpad':>7}{'sup tok':>9}{'CPU s':>8}{'sup tok/s':>11}"
             f"{'vs none':>9}{'RSS MiB':>9}"]
    base = {r['mode']: r['sup'] / r['cpu_s'] for r in recs if r['layout'] == 'none' and 'cpu_s' in r}
    for r in recs:
        if 'refused' in r:
            lines.append(f"{r['mode']:<16}{r['layout']:<17}  refused: {r['refused'].split(';')[0][:90]}"); continue
        rate = r['sup'] / r['cpu_s']
        cpad = f"{100 * r['cpad'] / r['ccells']:6.1f}%" if r['ccells'] else f"{'-':>7}"
        lines.append(f"{r['mode']:<16}{r['layout']:<17}{r['rows']:>6}{100 * r['pad'] / r['cells']:8.1f}%{cpad}"
                     f"{r['sup']:>9}{r['cpu_s']:>8.1f}{rate:>11.0f}{rate / base[r['mode']]:>8.2f}x{r['peak_rss_mb']:>9.0f}")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--examples', type=int, default=256)
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--modes', nargs='+', default=['block_diffusion', 'mdlm', 'ar', 'hybrid', 'idlm'])
    ap.add_argument('--out', default=str(ROOT / 'bench' / 'results' / 'packing.txt'))
    ap.add_argument('--one', nargs=3, metavar=('MODE', 'LAYOUT', 'DATA'))
    a = ap.parse_args()
    if a.one:
        with tempfile.TemporaryDirectory() as d: print('RESULT ' + json.dumps(one(*a.one, a.batch, d + '/run'))); return
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'HF_HUB_OFFLINE': '1', 'HF_DATASETS_OFFLINE': '1'}
    recs, t0 = [], time.time()
    with tempfile.TemporaryDirectory() as d:
        data = Path(d) / 'chats.jsonl'
        write_chats(data, a.examples)
        env['HF_DATASETS_CACHE'] = d + '/cache'
        for mode in a.modes:
            for layout in LAYOUTS:
                p = subprocess.run([sys.executable, __file__, '--batch', str(a.batch), '--one', mode, layout, str(data)],
                                   env=env, capture_output=True, text=True)
                line = next((l for l in p.stdout.splitlines() if l.startswith('RESULT ')), None)
                if line is None: sys.exit(f'{mode} {layout} failed:\n{p.stderr[-3000:]}')
                recs.append(json.loads(line[7:])); print(json.dumps(recs[-1]), file=sys.stderr, flush=True)
    tok = next(r['tokens'] for r in recs if 'tokens' in r)
    out = [f"# python bench/packing.py --examples {a.examples} --batch {a.batch} --modes {' '.join(a.modes)}",
           f"bench/packing.py: {a.examples} chats (tokens per example: median {tok['median']}, p90 {tok['p90']}, max {tok['max']}), "
           f"batch {a.batch}, tiny model (64 x 2 layers), 1 thread, one epoch per row; {time.time() - t0:.0f} s", '']
    out += table(recs) + ['', 'CPU seconds per epoch, by part of the step (padded vs packed):']
    for r in recs:
        if r['layout'] in ('none', 'packing') and 'split' in r:
            out.append(f"  {r['mode']:<16}{r['layout']:<9}" + '  '.join(f"{k} {v:6.2f}" for k, v in r['split'].items()))
    bd = {r['layout']: r for r in recs if r['mode'] == 'block_diffusion' and 'cpu_s' in r}
    if {'none', 'packing'} <= bd.keys():
        x = (bd['packing']['sup'] / bd['packing']['cpu_s']) / (bd['none']['sup'] / bd['none']['cpu_s'])
        pa, pb = (100 * bd[k]['pad'] / bd[k]['cells'] for k in ('none', 'packing'))
        out += ['', f"packing vs padding (block_diffusion): {x:.2f}× supervised tokens/s, padding {pa:.1f} % → {pb:.1f} %"]
    text = '\n'.join(out)
    print(text)
    Path(a.out).write_text(text + '\n')


if __name__ == '__main__':
    main()
