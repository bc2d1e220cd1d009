"""A chat JSONL file at 100k / 300k / 1M rows: seconds to the first training step and peak memory, first and second start.

    python bench/data_scale.py [--rows 100000 300000 1000000] [--dir DIR] [--num-proc 1] [--keep] [--src DIR]

Each size is a seeded, long-tailed chat file (`write_chat_jsonl`: lognormal message lengths, 15% two or three turns,
20% with a system prompt, words drawn Zipf-like from the English words of the shipped tokenizer's corpus). Each measurement is a fresh
`python -m dllm_nb.train` process: a tiny mdlm model (1 layer x 32) trained for one step on the file
(`data.max_len=512`, longer rows dropped and counted, `data.val_size=64`, `data.num_proc` = `--num-proc`), timed from
launch to the end of step 1 (its `step=1 loss=...` log line; `ready` = the line the CLI prints once the data and the
model are built) and to exit (final/ written). Peak RSS is the process's high-water mark (`wait4`, which includes any
`data.num_proc` workers as the largest one, not their sum). The first start tokenizes the file into the cache
(`$HF_DATASETS_CACHE`, a fresh folder under `--dir`); the second start is a new run on the same file, which reuses it.
rows/s = rows / (first ready - second ready): the rate of the checking and tokenizing passes.
`base` is the same command on a 1,000-row file: the growth per GB of JSONL is `(peak - base) / file size`.
Generated files and caches are deleted at the end unless `--keep`. `--src DIR` runs another copy of the package (e.g. an
older commit's `git archive ... dllm_nb | tar -x -C DIR`) on the same files, for a before/after comparison.
"""
import argparse, json, os, re, shutil, subprocess, sys, tempfile, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TINY = ['dllm.mode=mdlm', 'model.hidden_size=32', 'model.num_layers=1', 'model.num_heads=2', 'model.num_kv_heads=1',
        'data.max_len=512', 'data.val_size=64', 'train.global_batch_size=8', 'train.micro_batch_size=8', 'train.max_steps=1',
        'train.warmup_steps=1', 'train.eval_every=0', 'train.save_every=0', 'train.log_every=1']


def vocabulary() -> np.ndarray:
    "The English words of the shipped tokenizer's corpus (about 300), most frequent first: text it tokenizes as a real one would."
    from collections import Counter
    from dllm_nb.tokenizer import tokenizer_corpus
    counts = Counter(w for t in tokenizer_corpus() for w in re.findall(r'[a-z]+', t.lower()))
    return np.array([w for w, _ in counts.most_common()])


def write_chat_jsonl(path: Path, rows: int, seed: int = 0, chunk: int = 20000) -> int:
    "A long-tailed chat JSONL file of `rows` conversations; returns its size in bytes."
    rng = np.random.default_rng(seed)
    vocab = vocabulary(); p = 1 / np.arange(1, len(vocab) + 1) ** 1.1; p /= p.sum()
    with open(path, 'w') as f:
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            turns = rng.choice([1, 2, 3], n, p=[0.85, 0.12, 0.03])
            system = rng.random(n) < 0.2
            for t, s in zip(turns, system):
                msgs = [dict(role='system', content=' '.join(rng.choice(vocab, 8, p=p)))] if s else []
                for _ in range(t):
                    nu = int(min(600, max(1, rng.lognormal(2.8, 0.9))))
                    na = int(min(1500, max(1, rng.lognormal(3.6, 1.0))))
                    msgs += [dict(role='user', content=' '.join(rng.choice(vocab, nu, p=p)) + '?'),
                             dict(role='assistant', content=' '.join(rng.choice(vocab, na, p=p)) + '.')]
                f.write(json.dumps(dict(messages=msgs)) + '\n')
    return path.stat().st_size


def start(data: Path, out: Path, env: dict, num_proc: int) -> dict:
    "One fresh training process on `data`: seconds to `ready`, to step 1 and to exit, peak RSS (GB), training rows."
    # run from the data's folder: `python -m` puts the working folder first on sys.path, before PYTHONPATH (--src)
    cmd = [sys.executable, '-m', 'dllm_nb.train', *TINY, f'data.dataset={data}', f'data.num_proc={num_proc}', f'output_dir={out}',
           '--eval-n', '0']
    t0 = time.perf_counter(); marks = {}
    p = subprocess.Popen(cmd, env=env, cwd=data.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    log = []
    for line in p.stdout:
        log.append(line)
        if line.startswith('dllm_nb.train:'): marks.setdefault('ready', time.perf_counter() - t0)
        if 'step=1 ' in line: marks.setdefault('step1', time.perf_counter() - t0)      # the step's log line
    _, status, usage = os.wait4(p.pid, 0)
    total = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0: sys.exit(f"{' '.join(cmd)} exited {rc}:\n{''.join(log[-30:])}")
    metrics = [json.loads(l) for l in (out / 'metrics.jsonl').read_text().splitlines() if l.strip()]
    assert any(m.get('step') == 1 and 'loss' in m for m in metrics), 'no step 1 in metrics.jsonl'
    train_n = int(re.search(r'train=(\d+)', ''.join(log)).group(1))
    return dict(ready=marks.get('ready'), step1=marks.get('step1', total), exit=total, rss_gb=usage.ru_maxrss / 2 ** 20,
                train=train_n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rows', type=int, nargs='+', default=[100_000, 300_000, 1_000_000])
    ap.add_argument('--dir', default=None, help='where to write the files and caches (default: a temporary folder)')
    ap.add_argument('--num-proc', type=int, default=1, help='data.num_proc of the runs')
    ap.add_argument('--keep', action='store_true', help='keep the generated files and caches')
    ap.add_argument('--src', default=str(ROOT), help='the folder holding the dllm_nb package the runs import (PYTHONPATH)')
    a = ap.parse_args()
    work = Path(a.dir or tempfile.mkdtemp(prefix='dllm_nb_data_scale_')); work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, 'PYTHONPATH': a.src, 'OMP_NUM_THREADS': '1', 'HF_HUB_OFFLINE': '1', 'HF_DATASETS_OFFLINE': '1',
           'HF_DATASETS_CACHE': str(work / 'hf_datasets'), 'TOKENIZERS_PARALLELISM': 'false', 'DLLM_NB_DEBUG': ''}
    try:
        src = '' if a.src == str(ROOT) else f' --src {a.src}'
        print(f"# python bench/data_scale.py --rows {' '.join(map(str, a.rows))} --num-proc {a.num_proc}{src}; one thread per process; "
              f"{os.cpu_count()} CPUs; seconds from launch")
        small = work / 'base.jsonl'; write_chat_jsonl(small, 1000, seed=1)
        base = start(small, work / 'run-base', env, a.num_proc)
        print(f"base (1,000 rows): step 1 at {base['step1']:.1f} s, peak RSS {base['rss_gb']:.2f} GB", flush=True)
        print('| rows | MB | first: ready / step 1 (s) | rows/s | second: ready / step 1 (s) | peak RSS first / second (GB) '
              '| RSS growth per GB of JSONL |')
        print('|---|---|---|---|---|---|---|', flush=True)
        last, notes = None, []
        for n in a.rows:
            data = work / f'chat_{n}.jsonl'
            t0 = time.perf_counter(); size = write_chat_jsonl(data, n); gen = time.perf_counter() - t0
            first = start(data, work / f'run-{n}-a', env, a.num_proc)
            second = start(data, work / f'run-{n}-b', env, a.num_proc)
            gb, peak, rate = size / 1e9, max(first['rss_gb'], second['rss_gb']), n / (first['ready'] - second['ready'])
            print(f"| {n:,} | {size / 1e6:.0f} | {first['ready']:.1f} / {first['step1']:.1f} | {rate:,.0f} | "
                  f"{second['ready']:.1f} / {second['step1']:.1f} | {first['rss_gb']:.2f} / {second['rss_gb']:.2f} | "
                  f"{(peak - base['rss_gb']) / gb:.2f} |", flush=True)
            notes.append(f"{n:,} rows: generated in {gen:.0f} s; {first['train']:,} training rows (those over 512 tokens "
                         f"dropped, 64 held out); first start exit at {first['exit']:.0f} s, second at {second['exit']:.1f} s")
            last = (n, size, first, second, peak)
            for f in [data, *work.glob(f'run-{n}-*')]: shutil.rmtree(f) if f.is_dir() else f.unlink()
        print('\n'.join(notes))
        n, size, first, second, peak = last
        label = f'{n // 1_000_000}M' if n % 1_000_000 == 0 else f'{n // 1000}k' if n % 1000 == 0 else str(n)
        print(f"{label} rows ({size / 1e6:.0f} MB): first start {first['step1']:.0f} s, second {second['step1']:.1f} s, "
              f"peak RSS {peak:.2f} GB")
    finally:
        if not a.keep: shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
