"""Where countdown completions go wrong, checkpoint by checkpoint (a benchmark's reading aid, not a timed test).

`python bench/rl_failures.py [--n 1000] LABEL=CHECKPOINT ...` scores each checkpoint greedily on the same `n` held-out
countdown prompts as `bench/rl.py` scores them (`dllm_nb.builtin.held_out_examples`: the test split, then unseen prompts) and sorts every completion
into one class: right; no parseable `Answer:`; an answer that does not use each number exactly once; each number once
but another value than the target. It also checks the worked steps (`a+b=c, ...` before the answer): the share of
steps whose arithmetic is right, and of completions whose every step is right. An answer is scored on its expression
alone, so a completion can be right with wrong working, and wrong with right working (the wrong plan, done right).
"""
import argparse, os, re, sys
from fractions import Fraction

os.environ.setdefault('HF_HUB_OFFLINE', '1'); os.environ.setdefault('HF_DATASETS_OFFLINE', '1')
from common import one_thread  # noqa: E402  (exits unless `import dllm_nb` is this checkout's)

STEP = re.compile(r'(\d+)\s*([-+*/])\s*(\d+)\s*=\s*(-?\d+)')
CLASSES = ('right', 'no answer', 'wrong numbers', 'wrong value')


def classify(prompt: str, completion: str) -> str:
    "One of `CLASSES` for a countdown completion (the verifier's decision, split by why it failed)."
    from dllm_nb.builtin import task_answer
    from dllm_nb.tasks import countdown_numbers, parse_arithmetic
    numbers, target = countdown_numbers(prompt)
    answer = task_answer('countdown', completion)
    try: value, used = parse_arithmetic(answer) if answer else (None, None)
    except ValueError: value, used = None, None
    if used is None: return 'no answer'
    if sorted(used) != sorted(numbers): return 'wrong numbers'
    return 'right' if value == target else 'wrong value'


def steps(completion: str) -> list[bool]:
    "For each worked step `a op b = c` before the answer, whether its arithmetic is right (`/` exactly)."
    work = completion.split('Answer:')[0]
    out = []
    for a, op, b, c in STEP.findall(work):
        a, b, c = int(a), int(b), int(c)
        if op == '/': out.append(b != 0 and Fraction(a, b) == c)
        else: out.append({'+': a + b, '-': a - b, '*': a * b}[op] == c)
    return out


def failures(final: str, n: int, seed: int = 0) -> dict:
    "Shares of each class and the worked-step numbers of one checkpoint on `n` held-out countdown prompts of `seed`'s splits."
    from rl import held_out, scored           # bench/rl.py: the same prompts and the same greedy scoring as its table
    samples = scored(final, 'countdown', held_out('countdown', n, seed))
    cls = [classify(s['prompt'], s['completion']) for s in samples]
    assert cls.count('right') == sum(s['correct'] for s in samples), 'the classes disagree with the verifier'
    st = [steps(s['completion']) for s in samples]
    flat = [x for s in st for x in s]
    return {**{c: cls.count(c) / len(cls) for c in CLASSES}, 'steps right': sum(flat) / max(len(flat), 1),
            'all steps right': sum(bool(s) and all(s) for s in st) / len(st), 'n': len(cls)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('runs', nargs='+', help='LABEL=CHECKPOINT (a final/ folder)')
    ap.add_argument('--n', type=int, default=1000, help='held-out prompts (the test split, then unseen ones)')
    ap.add_argument('--seed', type=int, default=0, help="the runs' seed (bench/rl.py --seed): its splits are held out")
    args = ap.parse_args(argv)
    one_thread()
    runs = [r.split('=', 1) if '=' in r else (r, r) for r in args.runs]
    cols = [*CLASSES, 'steps right', 'all steps right']
    print(f"countdown, greedy, {args.n} held-out prompts of seed {args.seed}: share of completions per class; worked steps with right arithmetic")
    print(f"{'checkpoint':<16}" + ''.join(f"{c:>16}" for c in cols))
    for label, final in runs:
        r = failures(final, args.n, args.seed)
        print(f"{label:<16}" + ''.join(f"{r[c]:>16.3f}" for c in cols), flush=True)


if __name__ == '__main__':
    sys.exit(main())
