"""lm-evaluation-harness against `python -m dllm_nb.eval` on one checkpoint: `python bench/harness.py [--checkpoint runs/default/final]`.

1. Exact match on the built-in generation tasks (addition, reverse; whole test splits unless `--n`), the model loaded once
   and decoded two ways: `dllm_nb.eval.exact_match` (what `python -m dllm_nb.eval` runs, `--nll-samples 0`) and
   `dllm_nb.harness.harness_evaluate` (lm-eval's evaluator; `--env-record`: `lm_eval.simple_evaluate` with its
   environment record) with the `dllm_nb` model on the tasks `dllm_nb.harness.write_tasks` writes (chat template on,
   the checkpoint's own sampler settings, batch size `--batch-size` for both). Prints both accuracies, how many
   completions are identical, both wall times and CPU times (this process and the programs it runs; median of
   `--repeats`, the order alternating) and the ratios harness / eval.
2. `--cli`: the same through the two command lines, each a fresh process (imports and model load included): two
   `python -m dllm_nb.eval` runs (one per task) against one `python -m dllm_nb.harness run` with both tasks.
3. The multiple-choice task `dllm_nb_addition_mc` through `loglikelihood` (`--mc-samples` draws of the bound per request):
   acc and acc_norm with lm-eval's bootstrap stderr, the Monte-Carlo standard error of each request's bound (mean,
   max), and the questions whose decision is within two standard errors of the runner-up.
`--json FILE` writes all numbers (bench/results/harness.json is what the tutorial nbs/tutorials/evaluate.ipynb prints).
"""
import argparse, datetime, json, os, platform, statistics, subprocess, sys, tempfile
from pathlib import Path

import torch

from common import TASKS, one_thread, timed


def eval_side(lm, n, batch_size):
    "`python -m dllm_nb.eval`'s exact match on each task, with the harness model's checkpoint and settings."
    from dllm_nb.eval import exact_match
    return {t: exact_match(lm.model, lm.tok, t, 'test', n, lm.seed, batch_size, lm.max_gen_toks, steps=lm.steps,
                           steps_per_block=lm.steps_per_block, block_size=lm.block_size) for t in TASKS}


def harness_side(lm, tasks_dir, n, env_record=False):
    "The same through lm-eval (tasks read from `tasks_dir`, chat template applied as in training)."
    from dllm_nb.harness import harness_evaluate
    return harness_evaluate(lm, [f'dllm_nb_{t}' for t in TASKS], tasks_dir, limit=n, env_record=env_record)


def compare(args, lm, tasks_dir) -> dict:
    "Accuracies, identical completions and median times of both sides, alternating which runs first."
    t_eval, t_harness, c_eval, c_harness = [], [], [], []
    for r in range(args.repeats):
        for side in (('eval', 'harness') if r % 2 == 0 else ('harness', 'eval')):
            if side == 'eval': ours, dt, dc = timed(lambda: eval_side(lm, args.n, args.batch_size), children=True); t_eval.append(dt); c_eval.append(dc)
            else:
                res, dt, dc = timed(lambda: harness_side(lm, tasks_dir, args.n, args.env_record), children=True)
                t_harness.append(dt); c_harness.append(dc)
            print(f'  run {r}: {side} {dt:.1f} s wall, {dc:.1f} s CPU', file=sys.stderr)
    out = {}
    for t in TASKS:
        h = sorted(res['samples'][f'dllm_nb_{t}'], key=lambda s: s['doc_id'])
        same = sum(s['resps'][0][0] == o['completion'] for s, o in zip(h, ours[t]['samples']))
        out[t] = dict(eval_exact_match=ours[t]['accuracy'], harness_exact_match=res['results'][f'dllm_nb_{t}']['exact_match,none'],
                      n=ours[t]['n'], identical_completions=same)
    e, h, ce, ch = (statistics.median(x) for x in (t_eval, t_harness, c_eval, c_harness))
    return dict(tasks=out, harness_path='lm_eval.simple_evaluate' if args.env_record else 'dllm_nb.harness.harness_evaluate',
                eval_seconds=t_eval, harness_seconds=t_harness, eval_median_s=e, harness_median_s=h, ratio=h / e,
                eval_cpu_seconds=c_eval, harness_cpu_seconds=c_harness, eval_cpu_median_s=ce, harness_cpu_median_s=ch,
                cpu_ratio=ch / ce)


def cli_compare(args, tasks_dir) -> dict:
    "Wall and CPU time of the two command lines, each a fresh process (imports, model load and evaluation)."
    env = {**os.environ, 'OMP_NUM_THREADS': os.environ.get('OMP_NUM_THREADS', '1')}
    n = ['--n', str(args.n)] if args.n else []
    def run(cmd):
        r, dt, dc = timed(lambda: subprocess.run(cmd, env=env, capture_output=True, text=True), children=True)
        if r.returncode: sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
        return dt, r.stdout, dc
    ev = [run([sys.executable, '-m', 'dllm_nb.eval', '--checkpoint', args.checkpoint, '--task', t, '--nll-samples', '0',
               '--batch-size', str(args.batch_size), *n]) for t in TASKS]
    lim = ['--limit', str(args.n)] if args.n else []
    ht, out, hc = run([sys.executable, '-m', 'dllm_nb.harness', 'run', '--model', 'dllm_nb', '--model_args', f'checkpoint={args.checkpoint}',
                       '--batch_size', str(args.batch_size), '--tasks', ','.join(f'dllm_nb_{t}' for t in TASKS), '--include_path',
                       str(tasks_dir), '--apply_chat_template', *lim])
    e, ec = sum(t for t, _, _ in ev), sum(c for *_, c in ev)
    return dict(eval_cli_s=e, harness_cli_s=ht, cli_ratio=ht / e, eval_cli_cpu_s=ec, harness_cli_cpu_s=hc, cli_cpu_ratio=hc / ec,
                eval_cli_stdout=[o.strip() for _, o, _ in ev],
                harness_cli_table=out.strip().splitlines()[-6:])


def multiple_choice(args, tasks_dir) -> dict:
    "acc of `dllm_nb_addition_mc` through `loglikelihood`, the bound's MC standard errors and how many decisions are close."
    from dllm_nb.harness import DLLMEvalLM, harness_evaluate
    lm = DLLMEvalLM(checkpoint=args.checkpoint, batch_size=args.batch_size, mc_samples=args.mc_samples)
    res, dt, _ = timed(lambda: harness_evaluate(lm, ['dllm_nb_addition_mc'], tasks_dir, limit=args.n,
                                           env_record=args.env_record), children=True)
    r, samples = res['results']['dllm_nb_addition_mc'], sorted(res['samples']['dllm_nb_addition_mc'], key=lambda s: s['doc_id'])
    se = torch.tensor(lm.mc_se, dtype=torch.float64).view(len(samples), -1)   # requests arrive question by question, choice by choice
    close = 0
    for s, e in zip(samples, se):
        ll = torch.tensor([x[0][0] for x in s['resps']], dtype=torch.float64)
        top2 = ll.topk(2).indices
        close += int((ll[top2[0]] - ll[top2[1]]) < 2 * (e[top2[0]] ** 2 + e[top2[1]] ** 2).sqrt())
    return dict(acc=r['acc,none'], acc_stderr=r['acc_stderr,none'], acc_norm=r['acc_norm,none'], n=len(samples),
                mc_samples=args.mc_samples, bound=lm.likelihood_kind(), se_mean=se.mean().item(), se_max=se.max().item(),
                close_calls=close, seconds=dt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--checkpoint', default='runs/default/final')
    ap.add_argument('--n', type=int, default=None, help='first N test examples per task (default: all 200)')
    ap.add_argument('--batch-size', type=int, default=32)
    ap.add_argument('--repeats', type=int, default=2, help='timed runs per side (medians reported)')
    ap.add_argument('--mc-samples', type=int, default=8, help='draws of the likelihood bound per multiple-choice request')
    ap.add_argument('--cli', action='store_true', help='also time the two command lines in fresh processes')
    ap.add_argument('--env-record', action='store_true', help='the harness through lm_eval.simple_evaluate, with its environment record')
    ap.add_argument('--json', default=None)
    args = ap.parse_args()
    one_thread(int(os.environ.get('OMP_NUM_THREADS', '1')))
    from dllm_nb.harness import DLLMEvalLM, write_tasks
    tasks_dir = Path(tempfile.mkdtemp(prefix='dllm_nb_tasks_'))
    write_tasks(tasks_dir)
    lm = DLLMEvalLM(checkpoint=args.checkpoint, batch_size=args.batch_size)
    rec = dict(command='python bench/harness.py ' + ' '.join(sys.argv[1:]), date=datetime.date.today().isoformat(),
               checkpoint=args.checkpoint, batch_size=args.batch_size, max_gen_toks=lm.max_gen_toks, block_size=lm.block_size,
               threads=torch.get_num_threads(), machine=f'{platform.machine()} {os.cpu_count()} cpus', torch=torch.__version__)
    rec['generation'] = compare(args, lm, tasks_dir)
    if args.cli: rec['cli'] = cli_compare(args, tasks_dir)
    rec['multiple_choice'] = multiple_choice(args, tasks_dir)
    g, m = rec['generation'], rec['multiple_choice']
    print(f"checkpoint {args.checkpoint}: canvas {lm.max_gen_toks} tokens, block {lm.block_size}, batch {args.batch_size}")
    print(f"{'task':<10} {'n':>4} {'dllm_nb.eval EM':>16} {'harness EM':>11} {'identical':>10}")
    for t, v in g['tasks'].items():
        print(f"{t:<10} {v['n']:>4} {v['eval_exact_match']:>16.3f} {v['harness_exact_match']:>11.3f} {v['identical_completions']:>6}/{v['n']}")
    print(f"time (model loaded once, median of {args.repeats}; harness: {g['harness_path']}): dllm_nb.eval {g['eval_median_s']:.1f} s, "
          f"harness {g['harness_median_s']:.1f} s, ratio {g['ratio']:.3f} ({100 * (g['ratio'] - 1):+.1f} %)")
    print(f"CPU time (this process and the programs it ran, median of {args.repeats}): dllm_nb.eval {g['eval_cpu_median_s']:.1f} s, "
          f"harness {g['harness_cpu_median_s']:.1f} s, ratio {g['cpu_ratio']:.3f} ({100 * (g['cpu_ratio'] - 1):+.1f} %)")
    if args.cli:
        c = rec['cli']
        print(f"command lines (fresh processes): dllm_nb.eval x2 {c['eval_cli_s']:.1f} s, harness {c['harness_cli_s']:.1f} s, "
              f"ratio {c['cli_ratio']:.3f}; CPU {c['eval_cli_cpu_s']:.1f} s and {c['harness_cli_cpu_s']:.1f} s, ratio {c['cli_cpu_ratio']:.3f}")
    print(f"dllm_nb_addition_mc: acc {m['acc']:.3f} ± {m['acc_stderr']:.3f} (acc_norm {m['acc_norm']:.3f}), n {m['n']}; "
          f"loglikelihood = {m['bound']}; MC standard error per request: mean {m['se_mean']:.4f}, max {m['se_max']:.4f} nats; "
          f"{m['close_calls']} decisions within 2 standard errors of the runner-up; {m['seconds']:.1f} s")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True); Path(args.json).write_text(json.dumps(rec, indent=1) + '\n')


if __name__ == '__main__': main()
