"""`bench/rl.py`'s measuring parts (the bench itself is not a test): the wide held-out set never scores a prompt SFT or
RL could see, the paired s.e., the top-up that holds SFT continued to the RL stage's CPU seconds, and scoring in the precision `--bf16` trains in."""
import json, sys
import pytest
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'bench'))
import rl as bench_rl
from dllm_nb.builtin import task_examples


@pytest.mark.parametrize('seed', [0, 1])
def test_held_out_is_the_test_split_then_unseen_prompts(seed):
    "The runs of seed S are scored on S's test split, then prompts none of S's splits hold (seed 0's would not do for S=1)."
    rows = bench_rl.held_out('countdown', 260, seed)
    prompt = lambda ex: ex['messages'][0]['content']
    test = task_examples('countdown', 'test', seed)
    assert [r['prompt'] for r in rows[:200]] == [prompt(ex) for ex in test]      # the table's 200 come first, in order
    seen = {prompt(ex) for s in ('train', 'validation', 'test') for ex in task_examples('countdown', s, seed)}
    extra = [r['prompt'] for r in rows[200:]]
    assert len(extra) == 60 and len(set(extra)) == 60 and not seen & set(extra)
    if seed:                                                                     # the contamination the seed argument removes
        other = {r['prompt'] for r in bench_rl.held_out('countdown', 260, 0)}
        assert len(other & {prompt(ex) for ex in task_examples('countdown', 'train', seed)}) > 10


def test_paired_se():
    assert bench_rl.paired_se([1, 0, 1, 1], [0, 0, 1, 0]) == (1 / 12) ** 0.5    # differences 1 0 0 1: var 1/3, over 4
    assert bench_rl.paired_se([1, 0, 1], [1, 0, 1]) == 0.0
    acc, se = bench_rl.gains(dict(sft=[0, 0, 1, 0], rl=[1, 0, 1, 1], sftc=[0, 0, 1, 1]))
    assert acc == dict(sft=0.25, rl=0.75, sftc=0.5) and se['rl'] == (1 / 12) ** 0.5


def test_top_up_holds_the_control_to_rl_seconds(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(bench_rl, 'run', lambda cmd, log: calls.append(cmd) or 30.0)
    args = SimpleNamespace(task='countdown', mode='block_diffusion', seed=0, sft_rows=1000, sft_steps=None, backbone='tiny', bf16=False)
    (tmp_path / 'sftc').mkdir()
    (tmp_path / 'sftc' / 'cpu_s.json').write_text(json.dumps(dict(cpu_s=96.0)))
    assert bench_rl.top_up(args, tmp_path, 1000, 100.0, 96.0, 48) == (96.0, 48)     # within 95 %: nothing runs
    assert not calls
    (tmp_path / 'sftc' / 'cpu_s.json').write_text(json.dumps(dict(cpu_s=80.0)))
    assert bench_rl.top_up(args, tmp_path, 1000, 100.0, 80.0, 40) == (110.0, 50)    # 20 s short at 2 s a step: 10 more
    assert 'train.max_steps=1050' in calls[0] and 'train.resume=auto' in calls[0]
    assert json.loads((tmp_path / 'sftc' / 'cpu_s.json').read_text()) == dict(cpu_s=110.0, steps=50)
    assert bench_rl.top_up(args, tmp_path, 1000, 100.0, 110.0, 40) == (110.0, 50)   # reused: the recorded steps


def test_sft_args_of_each_backbone(tmp_path):
    "The tiny model's SFT command is the measured table's; `--backbone smollm2` swaps in its preset and GGUF, `--bf16` its keys."
    base = dict(task='countdown', seed=0, sft_rows=1000, sft_steps=None, gguf='/m.gguf')
    tiny = bench_rl.sft_args(SimpleNamespace(**base, mode='block_diffusion', backbone='tiny', bf16=False), tmp_path, 1000)
    assert tiny[:4] == ['-m', 'dllm_nb.train', '--config', 'configs/default.yaml'] and not any(a.startswith('model.') for a in tiny)
    smol = bench_rl.sft_args(SimpleNamespace(**base, mode='ar', backbone='smollm2', bf16=True), tmp_path, 150)
    assert smol[3] == 'configs/smollm2_ar.yaml' and {'model.path=/m.gguf', *bench_rl.BF16, 'train.max_steps=150'} <= set(smol)
    assert bench_rl.sft_steps(SimpleNamespace(**base, backbone='smollm2')) == 150
    with pytest.raises(SystemExit):                                  # no smollm2 preset for mdlm: an argparse error
        bench_rl.main(['--task', 'countdown', '--mode', 'mdlm', '--backbone', 'smollm2', '--out', str(tmp_path)])


def test_countdown_failure_classes():
    "bench/rl_failures.py's reading of a completion: the verifier's decision, split by why it failed; worked steps checked."
    import rl_failures as f
    p = 'Use 19, 3, 19 to make 76.'
    assert f.classify(p, '19*3=57, 57+19=76. Answer: (19*3)+19') == 'right'
    assert f.classify(p, '19+19=36, 36*3=76. Answer: (19+19)*3') == 'wrong value'     # claims the target, misses it
    assert f.classify(p, 'Answer: 19*3') == 'wrong numbers'
    assert f.classify(p, '19+19=38. Answer:') == f.classify(p, 'Answer: (19+') == 'no answer'
    assert f.steps('19+19=36, 36*3=108, 8/0=1, 9/3=3. Answer: x') == [False, True, False, True]


@pytest.mark.parametrize('bf16', [False, True])
def test_scoring_follows_bf16(monkeypatch, bf16):
    "`--bf16` scores as it trains: eager attention under bf16 autocast (fp32 weights); without it, the default kernel in fp32."
    import torch, dllm_nb.checkpoint, dllm_nb.eval
    seen = {}
    class Model: pass
    def load(final, attn_implementation=None): seen['attn'] = attn_implementation; return Model(), None
    def exact_match(model, tok, task, rows, **kw):
        seen.update(autocast=torch.is_autocast_enabled('cpu'), dtype=torch.get_autocast_dtype('cpu'), kw=kw)
        return dict(samples=[dict(correct=i % 2 == 0) for i in range(len(rows))])
    monkeypatch.setattr(dllm_nb.checkpoint, 'load_checkpoint', load)
    monkeypatch.setattr(dllm_nb.checkpoint, 'saved_block_size', lambda final: 4)
    monkeypatch.setattr(dllm_nb.eval, 'saved_canvas', lambda final: 32)
    monkeypatch.setattr(dllm_nb.eval, 'exact_match', exact_match)
    monkeypatch.setattr('dllm_nb.modes.mode_of_model', lambda m: SimpleNamespace(sample='the mode sampler'))
    assert bench_rl.correct(Path('final'), 'countdown', [{}] * 3, bf16) == [True, False, True]
    assert seen['attn'] == ('eager' if bf16 else None) and seen['autocast'] == bf16
    assert not bf16 or seen['dtype'] == torch.bfloat16
    assert seen['kw'] == dict(seed=0, batch_size=50, max_new_tokens=32, sampler='the mode sampler', block_size=4)
    bench_rl.sampled(Path('final'), 'countdown', 2, 0, G=4, bf16=bf16)           # 8 samples each at T=1, the same precision
    assert seen['autocast'] == bf16 and seen['kw']['temperature'] == 1.0 and seen['kw']['seed'] == 1 and seen['kw']['batch_size'] == 32


def test_control_steps_price_the_steps_the_control_runs(tmp_path):
    "A run whose first half cost 0.2 CPU s a step and second half 0.4 (mdlm's AR warm-up, then diffusion): the control buys 0.4 s steps."
    def write(costs):
        (tmp_path / 'metrics.jsonl').write_text(''.join(json.dumps(dict(step=(i + 1) * 10, loss=1.0, cpu_s=c)) + '\n' for i, c in enumerate(costs))
                                                + json.dumps(dict(step=100, eval_loss=1.0)) + '\n')     # an eval row: no cpu_s
    write([0.2] * 5 + [0.4] * 5)                    # 100 steps: 30 CPU s of steps, the mean price 0.3
    assert bench_rl.control_steps(tmp_path, 100, 30.0, 12.0) == 30          # 12 s at 0.4 a step (at the mean price: 40)
    write([0.3] * 10)                                                      # one kind of step: the mean price
    assert bench_rl.control_steps(tmp_path, 100, 30.0, 12.0) == 40


def test_the_control_resumes_from_the_sft_checkpoint(tmp_path, monkeypatch):
    "SFT continued needs the SFT run's step-S checkpoint: without it (a run copied without its ckpt-* folders) it is one clear exit, not a fresh run."
    calls = []
    monkeypatch.setattr(bench_rl, 'run', lambda cmd, log: calls.append(cmd) or 7.0)
    args = SimpleNamespace(task='sudoku', mode='mdlm', seed=1, sft_rows=256, sft_steps=None, backbone='tiny', bf16=False)
    (tmp_path / 'sft' / 'final').mkdir(parents=True)
    with pytest.raises(SystemExit, match='no checkpoint of step 600'): bench_rl.continue_sft(args, tmp_path, 600, 50)
    assert not calls and not (tmp_path / 'sftc').exists()
    (tmp_path / 'sft' / 'ckpt-0000600').mkdir(); (tmp_path / 'sft' / 'ckpt-0000600' / 'trainer_state.json').write_text('{}')
    assert bench_rl.continue_sft(args, tmp_path, 600, 50) == 7.0
    assert (tmp_path / 'sftc' / 'ckpt-0000600' / 'trainer_state.json').exists() and not (tmp_path / 'sftc' / 'final').exists()
    assert 'train.max_steps=650' in calls[0] and 'train.resume=auto' in calls[0]


def test_trim_reruns_an_over_budget_control_for_fewer_steps(tmp_path, monkeypatch):
    "A control that ran 120 % of RL's seconds runs again from the SFT checkpoint for the steps its own rate buys; once."
    calls = []
    monkeypatch.setattr(bench_rl, 'run', lambda cmd, log: calls.append(cmd) or 99.0)
    args = SimpleNamespace(task='sudoku', mode='mdlm', seed=0, sft_rows=256, sft_steps=None, backbone='tiny', bf16=False)
    (tmp_path / 'sft' / 'ckpt-0000600').mkdir(parents=True); (tmp_path / 'sft' / 'ckpt-0000600' / 'trainer_state.json').write_text('{}')
    (tmp_path / 'sftc' / 'ckpt-0000660').mkdir(parents=True); (tmp_path / 'sftc' / 'cpu_s.json').write_text(json.dumps(dict(cpu_s=104.0)))
    assert bench_rl.trim(args, tmp_path, 600, 100.0, 104.0, 60) == (104.0, 60)      # within 105 %: kept
    assert not calls
    (tmp_path / 'sftc' / 'cpu_s.json').write_text(json.dumps(dict(cpu_s=120.0)))
    assert bench_rl.trim(args, tmp_path, 600, 100.0, 120.0, 60) == (99.0, 50)       # 60 steps cost 120 s: 50 buy 100
    assert 'train.max_steps=650' in calls[0] and not (tmp_path / 'sftc' / 'ckpt-0000660').exists()
    assert json.loads((tmp_path / 'sftc' / 'cpu_s.json').read_text()) == dict(cpu_s=99.0, steps=50, over=dict(cpu_s=120.0, steps=60))
    assert bench_rl.trim(args, tmp_path, 600, 80.0, 99.0, 60) == (99.0, 50) and len(calls) == 1   # reused: not trimmed twice


def test_a_trimmed_control_that_lands_short_is_topped_up(tmp_path, monkeypatch):
    "The control's rate changes with the load: trimmed to 90 % of RL's seconds, it is topped up, and the record keeps the first run."
    cpu = iter([90.0, 12.0])
    monkeypatch.setattr(bench_rl, 'run', lambda cmd, log: next(cpu))
    args = SimpleNamespace(task='sudoku', mode='mdlm', seed=0, sft_rows=256, sft_steps=None, backbone='tiny', bf16=False)
    (tmp_path / 'sft' / 'ckpt-0000600').mkdir(parents=True); (tmp_path / 'sft' / 'ckpt-0000600' / 'trainer_state.json').write_text('{}')
    (tmp_path / 'sftc').mkdir(); (tmp_path / 'sftc' / 'cpu_s.json').write_text(json.dumps(dict(cpu_s=120.0)))
    c, n = bench_rl.trim(args, tmp_path, 600, 100.0, 120.0, 60)
    assert (c, n) == (90.0, 50)
    assert bench_rl.top_up(args, tmp_path, 600, 100.0, c, n) == (102.0, 56)           # 10 s short at 1.8 s a step: 6 more
    assert json.loads((tmp_path / 'sftc' / 'cpu_s.json').read_text()) == dict(cpu_s=102.0, steps=56, over=dict(cpu_s=120.0, steps=60))
