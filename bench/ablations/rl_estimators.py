"""The likelihood estimators of RL side by side (not a timed test):
`python -m bench.ablations.rl_estimators --init RUN/final [--task sudoku] [--rows 64] [--draws 8]`.

On one rollout batch of the policy in `--init` (`--rows` completions sampled at temperature 1 from the task's train
prompts, 8 per prompt), for each estimator (`mean_field`, `coupled`, `mc_elbo` with 2 masks; for an mdlm policy also
`trace` with 4 replayed sampler states per completion and with every state, the exact log-prob of the sampler's draws):
  * the spread of the sequence log-prob estimate over `--draws` mask seeds: the standard deviation of
    `sum_t log p_t` across seeds, averaged over completions (0 for an exact estimate), and its mean;
  * the cost of one update's likelihood: process CPU seconds of the estimate with grad + backward over the batch
    (1 thread), and forwards per completion.
The RL accuracy each estimator reaches under the same budget is `bench/rl.py ... rl.estimator=NAME` (its table is in
nbs/16_rl.ipynb).
"""
import argparse, inspect, statistics, time
import torch
from dllm_nb.builtin import task_examples
from dllm_nb.checkpoint import load_checkpoint, saved_block_size
from dllm_nb.eval import saved_canvas
from dllm_nb.modes import mode_of_model
from dllm_nb.rewards import load_reward
from dllm_nb.grpo import rollout

ESTIMATORS = (('mean_field', 1), ('coupled', 2), ('mc_elbo', 2))
TRACE = (('trace', 4), ('trace', 0))          # (name, rl.trace_states): 4 states, every state


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--init', required=True, help='a trained final/ folder')
    ap.add_argument('--task', default='sudoku')
    ap.add_argument('--rows', type=int, default=64)
    ap.add_argument('--draws', type=int, default=8)
    args = ap.parse_args(argv)
    torch.set_num_threads(1); torch.manual_seed(0)
    model, tok = load_checkpoint(args.init)
    mode, bs, canvas = mode_of_model(model), saved_block_size(args.init), saved_canvas(args.init)
    rows = [dict(prompt=ex['messages'][0]['content'], answer=ex['answer']) for ex in task_examples(args.task, 'train')[:args.rows // 8]]
    trace = 'order' in inspect.signature(mode.completion_logprobs).parameters      # mdlm: its sampler's states can be replayed
    ro = rollout(model, tok, rows, 8, load_reward('task', args.task), list(range(len(rows) * 8)), canvas, 1.0, args.task,
                 trace=trace, block_size=bs)
    kw = dict(tokenizer=tok, block_size=bs, canvas_len=canvas, n_samples=2, **(dict(canvas=ro.canvas, order=ro.order) if trace else {}))
    steps = [len(ro.order[b, :len(c)].unique()) for b, c in enumerate(ro.completion_ids)] if trace else []
    print(f"{mode.name} policy {args.init}: {len(ro.completion_ids)} completions of {args.task}, mean length "
          f"{statistics.mean(map(len, ro.completion_ids)):.1f} tokens, reward {ro.rewards.mean():.3f}")
    print(f"{'estimator':<12}{'forwards':>9}{'seq logp mean':>15}{'std over seeds':>16}{'CPU s / update':>16}")
    for name, n in ESTIMATORS + (TRACE if trace else ()):
        est = dict(estimator=name, **(dict(trace_states=n) if name == 'trace' else {}))
        label = name if name != 'trace' else f"trace ({n or 'all'})"
        fwd = n if name != 'trace' else (n if n else statistics.mean(steps))
        with torch.no_grad():
            draws = torch.stack([mode.completion_logprobs(model, ro.prompt_ids, ro.completion_ids,
                                                          seeds=[s * 1000 + d for s in range(len(ro.seeds))], **est, **kw).sum(1)
                                 for d in range(args.draws)])                                  # [draws, rows]
        cpu = time.process_time()
        lp = mode.completion_logprobs(model, ro.prompt_ids, ro.completion_ids, seeds=ro.seeds, **est, **kw)
        lp.sum().backward(); model.zero_grad(set_to_none=True)
        cpu = time.process_time() - cpu
        print(f"{label:<12}{fwd:>9.4g}{draws.mean().item():>15.2f}{draws.std(0).mean().item():>16.3f}{cpu:>16.2f}")


if __name__ == '__main__':
    main()
