"""RL post-training from the command line: 1 process vs 2 (torchrun/gloo) on the same global batch, a SIGTERM/resume
that ends with the weights of an uninterrupted run, the mdlm and ar policies, bad rewards and bad task files."""
import json, os, re, signal, subprocess, sys, time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, 'OMP_NUM_THREADS': '1', 'HF_HUB_OFFLINE': '1', 'TOKENIZERS_PARALLELISM': 'false'}


def make_init(d: Path, kind: str = 'block_diffusion') -> Path:
    "A tiny random policy of `kind` saved as a final/-style folder (weights + tokenizer)."
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.models import build_backbone, tiny_config
    from dllm_nb.block_diffusion import BlockDiffusionLM
    from dllm_nb.ar import CausalLM
    from dllm_nb.mdlm import MaskedDiffusionLM
    tok = load_tokenizer(); torch.manual_seed(0)
    bb = build_backbone(tiny_config(vocab_size=len(tok), hidden_size=32))
    model = dict(block_diffusion=lambda: BlockDiffusionLM(bb, block_size=4), mdlm=lambda: MaskedDiffusionLM(bb),
                 ar=lambda: CausalLM(bb))[kind]()
    out = d / f'init_{kind}'
    model.save_pretrained(out); tok.save_pretrained(out)
    return out


REWARD = "def length(prompt, completion): return min(len(completion) / 20, 1.0)\n"


def rl_args(init: Path, out: Path, *extra) -> list:
    return ['-m', 'dllm_nb.rl', f'rl.init={init}', f'output_dir={out}', 'rl.group_size=4', 'rl.prompts_per_step=2',
            'rl.max_new_tokens=12', 'rl.eval_n=0', 'rl.reward=rl_test_reward:length', 'train.max_steps=3', 'train.lr=1e-3',
            'train.warmup_steps=0', 'train.save_every=1', 'train.eval_every=0', *extra]


def run(args, cwd: Path, torchrun: int = 0, check: bool = True) -> subprocess.CompletedProcess:
    head = [sys.executable, '-m', 'torch.distributed.run', '--standalone', f'--nproc_per_node={torchrun}'] if torchrun else [sys.executable]
    if torchrun: args = args[1:]                                     # torchrun -m dllm_nb.rl ...
    if torchrun: head.append('-m')
    p = subprocess.run(head + args, cwd=cwd, env={**ENV, 'PYTHONPATH': f'{cwd}{os.pathsep}{ROOT}'}, capture_output=True, text=True, timeout=600)
    if check: assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p


def final_weights(path: Path) -> torch.Tensor:
    from dllm_nb.checkpoint import load_checkpoint
    model, _ = load_checkpoint(path)
    return torch.cat([p.detach().flatten() for p in model.parameters()])


@pytest.fixture(scope='module')
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp('rl')
    (d / 'rl_test_reward.py').write_text(REWARD)
    return d


def test_two_processes_equal_one(work):
    "The same global batch (2 prompts x 4 completions) on 1 process and on 2: the same weights after 3 steps."
    init = make_init(work)
    run(rl_args(init, work / 'one'), work)
    run(rl_args(init, work / 'two'), work, torchrun=2)
    a, b = final_weights(work / 'one' / 'final'), final_weights(work / 'two' / 'final')
    assert not torch.equal(a, final_weights(init))                   # it trained
    assert torch.allclose(a, b, atol=1e-6), (a - b).abs().max()
    recs = [json.loads(l) for l in (work / 'two' / 'metrics.jsonl').read_text().splitlines()]
    assert [r['step'] for r in recs] == [1, 2, 3]                    # logged once, by rank 0
    # the broken twin: the same 2 processes without the gradient sum over ranks must not match one process
    (work / 'rl_no_sync.py').write_text("import sys, dllm_nb.rl as rl\nrl.sync_grads = lambda model: None\nsys.exit(rl.main())\n")
    p = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2', 'rl_no_sync.py',
                        *rl_args(init, work / 'two_unsynced')[2:]], cwd=work, env={**ENV, 'PYTHONPATH': f'{work}{os.pathsep}{ROOT}'},
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    c = final_weights(work / 'two_unsynced' / 'final')
    assert not torch.allclose(a, c, atol=1e-6), 'a 2-process run without the gradient sum matched one process: the test cannot fail'


def test_sigterm_then_resume_is_exact(work):
    "SIGTERM mid-run: exit 143 after a checkpoint; `train.resume=auto` ends with the weights of an uninterrupted run."
    init = make_init(work)
    run(rl_args(init, work / 'whole', 'train.max_steps=20'), work)
    p = subprocess.Popen([sys.executable, *rl_args(init, work / 'cut', 'train.max_steps=20')], cwd=work,
                         env={**ENV, 'PYTHONPATH': f'{work}{os.pathsep}{ROOT}'}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300                                     # signal once the first checkpoint exists (keep_last
    while not list((work / 'cut').glob('ckpt-*')) and time.time() < deadline: time.sleep(0.05)   # prunes old ones)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=300)
    if p.returncode == 0: pytest.skip('the run finished before the signal arrived')
    assert p.returncode == 143, err[-2000:]
    assert 'resume with:' in err and 'train.resume=auto' in err
    run(rl_args(init, work / 'cut', 'train.max_steps=20', 'train.resume=auto'), work)
    assert torch.equal(final_weights(work / 'whole' / 'final'), final_weights(work / 'cut' / 'final'))
    steps = [json.loads(l)['step'] for l in (work / 'cut' / 'metrics.jsonl').read_text().splitlines()]
    assert steps == list(range(1, 21))


@pytest.mark.parametrize('kind', ['mdlm', 'ar'])
def test_other_modes_train(work, kind):
    "mdlm (coupled estimator, d1's prompt masking, mu = 2, a KL term) and ar (plain GRPO) run end to end and change weights."
    init = make_init(work, kind)
    cache = ['rl.sampler_cache=prefix'] if kind == 'mdlm' else []          # mdlm rollouts with the K/V-cached sampler
    run(rl_args(init, work / f'rl_{kind}', 'rl.estimator=coupled', 'rl.prompt_mask_p=0.15', 'rl.inner_steps=2',
                'rl.beta=0.04', 'train.max_steps=2', *cache), work)
    assert not torch.equal(final_weights(work / f'rl_{kind}' / 'final'), final_weights(init))
    rec = json.loads((work / f'rl_{kind}' / 'metrics.jsonl').read_text().splitlines()[-1])
    assert rec['kl'] >= 0 and 0 <= rec['clip_frac'] <= 1
    # an RL ckpt-NNNNNNN/ opens like an SFT one (its model is its init's, not the RL config's default), and exports
    from dllm_nb.checkpoint import load_checkpoint, saved_run
    ckpt, final = work / f'rl_{kind}' / 'ckpt-0000002', work / f'rl_{kind}' / 'final'
    assert type(load_checkpoint(ckpt)[0]) is type(load_checkpoint(final)[0])
    assert torch.equal(final_weights(ckpt), final_weights(final))
    p = run(['-m', 'dllm_nb.export', '--checkpoint', str(ckpt), '--out', str(work / f'rl_{kind}_exported')], work)
    assert torch.equal(final_weights(work / f'rl_{kind}_exported'), final_weights(final))
    assert saved_run(work / f'rl_{kind}_exported')['rl']['rl_steps'] == 2


def test_sampler_cache_needs_a_cached_sampler(work):
    "rl.sampler_cache on a mode whose sampler has no cache option is one error line, exit 2, before any rollout."
    init = make_init(work, 'block_diffusion')
    p = run(rl_args(init, work / 'rl_bd_cache', 'rl.sampler_cache=dual'), work, check=False)
    assert p.returncode == 2, p.stderr[-2000:]
    assert "rl.sampler_cache='dual': the block_diffusion sampler has no K/V cache option" in p.stderr
    assert not (work / 'rl_bd_cache' / 'metrics.jsonl').exists()


def test_trace_estimator(work):
    "rl.estimator=trace: an mdlm policy trains on replayed sampler states; a block_diffusion policy is refused, one line, exit 2."
    init = make_init(work, 'mdlm')
    run(rl_args(init, work / 'rl_trace', 'rl.estimator=trace', 'rl.trace_states=2', 'train.max_steps=1'), work)
    assert not torch.equal(final_weights(work / 'rl_trace' / 'final'), final_weights(init))
    p = run(rl_args(make_init(work, 'block_diffusion'), work / 'rl_bd_trace', 'rl.estimator=trace'), work, check=False)
    assert p.returncode == 2 and "rl.estimator=trace replays the sampler's denoising steps, which only mdlm records" in p.stderr, p.stderr[-2000:]
    assert not (work / 'rl_bd_trace' / 'metrics.jsonl').exists()


@pytest.mark.parametrize('reward, says', [('no_such_mod:f', 'cannot be loaded'), ('rl_test_reward:nope', 'cannot be loaded'),
                                          ('rl_test_reward', "use 'task', 'shaped' or 'package.module:function'")])
def test_bad_reward_is_one_line(work, reward, says, capsys, monkeypatch):
    "A reward that cannot be used: one error line, exit 2, before the policy loads (in process: the CLI's main)."
    from dllm_nb.rl import main
    monkeypatch.syspath_prepend(str(work))
    init = make_init(work); capsys.readouterr()                     # (saving it printed a progress bar)
    assert main(rl_args(init, work / 'bad', f'rl.reward={reward}')[2:]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize('task, text, says', [
    ('countdown', '{"input": "1,2,3", "output": "6"}\n{"input": "1,2"}\n', 'data.jsonl:2'),
    ('sudoku', 'Puzzle,Solution\n103004023010020,1234341221434321\n', 'data.jsonl:2'),
    ('sudoku', 'Grid,Answer\n1030040230100201,1234341221434321\n', "'Puzzle,Solution'")])
def test_bad_task_file_is_one_line(work, task, text, says, capsys):
    "Wrong columns, a 15-digit grid, a row without its target: one error line, exit 2, before the model loads."
    from dllm_nb.eval import main
    f = work / 'data.jsonl'; f.write_text(text)
    assert main(['--checkpoint', str(work / 'missing'), '--task', task, '--data', str(f)]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err


def test_lora_reference_is_the_base_model_without_a_copy():
    "With `model.lora` and beta > 0 the KL reference is the policy with its adapters off: the base model's log-probs, no second copy."
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.lora import add_lora
    from dllm_nb.models import build_backbone, tiny_config
    from dllm_nb.block_diffusion import BlockDiffusionLM
    from dllm_nb.modes import mode_of_model
    from dllm_nb.rl import Reference
    tok = load_tokenizer(); torch.manual_seed(0)
    policy = BlockDiffusionLM(build_backbone(tiny_config(vocab_size=len(tok), hidden_size=32)), block_size=4).eval()
    prompts, comps = [[5, 6, 7], [8, 9]], [[10, 11, 12, 13, 14], [15, 16]]
    lp = lambda m: mode_of_model(policy).completion_logprobs(m, prompts, comps, seeds=[1, 2], tokenizer=tok, block_size=4)
    with torch.no_grad(): base = lp(policy)
    add_lora(policy, rank=4)
    with torch.no_grad():
        for n, p in policy.named_parameters():
            if 'lora_B' in n: p.normal_(0, 0.5)                       # adapters that change the outputs
        moved = lp(policy)
    assert (moved - base).abs().max() > 1e-3                          # the adapters matter
    ref = Reference(policy, beta=0.1)
    assert ref.model is None and ref.lora                             # no copy held
    torch.testing.assert_close(ref(lp), base, atol=1e-5, rtol=0)      # the base model's log-probs
    with torch.no_grad(): torch.testing.assert_close(lp(policy), moved)   # adapters back on afterwards
    assert all(p.requires_grad == ('lora_' in n) for n, p in policy.backbone.named_parameters())


def rl_config(init: Path, out: Path, *extra):
    from dllm_nb.config import load_config
    return load_config(None, rl_args(init, out, *extra)[2:])


def test_resume_check_catches_a_rollout_rng_that_is_not_restored(work, monkeypatch):
    """The broken-variant twin of test_sigterm_then_resume_is_exact: rollouts seeded from the process's torch RNG (seeded at
    start, never checkpointed) instead of from (seed, step). Stopped at step 1 and resumed, that run ends with other weights
    than the same variant uninterrupted (itself deterministic: run twice, equal), so the weight comparison can fail."""
    import dllm_nb.rl as R
    monkeypatch.syspath_prepend(str(work))
    real = R.rollout
    def process_rng(*a, **k):
        a = list(a); a[5] = torch.randint(0, 2**62, (len(a[5]),)).tolist()     # the rollout seeds
        return real(*a, **k)
    monkeypatch.setattr(R, 'rollout', process_rng)
    init, weights = make_init(work), lambda t: torch.cat([p.detach().flatten() for p in t.policy.parameters()])
    fit = lambda out, *x, stop_at=None: (t := R.RLTrainer(rl_config(init, work / out, 'train.max_steps=2', *x), quiet=True), t.fit(stop_at))[0]
    whole, again = fit('twin_whole'), fit('twin_again')
    assert torch.equal(weights(whole), weights(again))
    fit('twin_cut', stop_at=1)
    resumed = fit('twin_cut', 'train.resume=auto')
    assert not torch.equal(weights(whole), weights(resumed))


FLAKY = ("calls = 0\ndef flaky(prompt, completion):\n    global calls; calls += 1\n"
         "    if calls == 12: raise ValueError('cannot score this one')\n    return min(len(completion) / 20, 1.0)\n")


def test_reward_that_raises_mid_run_is_one_line_and_keeps_the_checkpoint(work, capsys, monkeypatch):
    """Issue 55 item 4: the reward raises on the 3rd completion of step 2 (call 12: one trial call, 8 per step): exit 2,
    one line naming the reward, the prompt, the completion and ckpt-1, which stays whole; the resume finishes the run."""
    from dllm_nb.checkpoint import is_training_checkpoint
    from dllm_nb.rl import main
    (work / 'rl_flaky_reward.py').write_text(FLAKY); monkeypatch.syspath_prepend(str(work))
    init, out = make_init(work), work / 'flaky'
    args = rl_args(init, out, 'rl.reward=rl_flaky_reward:flaky')[2:]
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.startswith('error:')]
    assert len(lines) == 1 and 'Traceback' not in err, err
    assert re.fullmatch(r"error: rl\.reward='rl_flaky_reward:flaky' raised ValueError: cannot score this one on prompt '.+', "
                        rf"completion '.*' \(last complete checkpoint: {re.escape(str(out))}/ckpt-0000001\)", lines[0]), lines[0]
    assert is_training_checkpoint(out / 'ckpt-0000001') and not (out / 'final').exists() and not list(out.glob('.*tmp'))
    assert [json.loads(l)['step'] for l in (out / 'metrics.jsonl').read_text().splitlines()] == [1]
    assert main([*args, 'train.resume=auto']) == 0                    # (call 12 is past: the reward scores again)
    assert [json.loads(l)['step'] for l in (out / 'metrics.jsonl').read_text().splitlines()] == [1, 2, 3]


def test_rl_final_past_a_file_size_limit_is_one_line_and_resumes(work, capsys, monkeypatch, fsize):
    """Issue 55 item 4 (whole writes): the file-size limit hit while RL writes final/: exit 1, one line with the folder,
    the OS error and the resume command; no final/ and no half folder; the resume writes it."""
    import dllm_nb.rl as R
    monkeypatch.syspath_prepend(str(work))
    init, out, real = make_init(work), work / 'full', R.RLTrainer.export
    monkeypatch.setattr(R.RLTrainer, 'export', lambda self, d: (fsize(100_000), real(self, d))[1])   # weights ~200 KB
    args = rl_args(init, out)[2:]
    capsys.readouterr()
    assert R.main(args) == 1
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.startswith('error:')]
    assert len(lines) == 1 and 'Traceback' not in err, err
    assert re.fullmatch(rf"error: {re.escape(str(out))}/final: File too large \(errno 27\); free space or fix permissions or limits, "
                        rf"then resume with: \S+ -m dllm_nb\.rl .* train\.resume=auto \(last complete checkpoint: "
                        rf"{re.escape(str(out))}/ckpt-0000003\)", lines[0]), lines[0]
    assert not (out / 'final').exists() and not list(out.glob('.*tmp'))
    fsize(None); monkeypatch.undo(); monkeypatch.syspath_prepend(str(work))
    assert R.main([*args, 'train.resume=auto']) == 0 and not torch.equal(final_weights(out / 'final'), final_weights(init))


def test_split_note_when_rl_seed_leaves_the_starts_splits():
    "RL on another seed than its start's built-in splits says so (its test split can hold the start's training prompts); silent otherwise."
    from dllm_nb.rl import split_note
    start = dict(seed=0, dataset='builtin:countdown')
    assert split_note(start, 'countdown', 0) is None
    note = split_note(start, 'countdown', 1)
    assert note.startswith("note: the start trained on seed 0's 'countdown' splits") and note.endswith('seed=0 keeps them apart')
    assert split_note(dict(seed=0, dataset='builtin:default'), 'addition', 2) is not None      # a mix holding the task
    assert split_note(dict(seed=0, dataset='builtin:sudoku'), 'countdown', 1) is None          # another task: no shared prompts
    assert split_note(dict(dataset='builtin:countdown'), 'countdown', 1) is None               # a start from before the record had a seed


def test_a_key_rl_does_not_read_is_one_line(work, capsys):
    "`model.lora.rank`, `data.*`: the policy and its data come from rl.init, so such an override is one error line, exit 2 (not ignored)."
    from dllm_nb.rl import main, unread_overrides
    assert unread_overrides(['rl.beta=0', 'train.lr=1e-5', 'model.dtype=bfloat16', 'seed=1']) == []
    assert unread_overrides(['train.lr_x=1', 'model.lora.rank=8', 'data.max_len=64']) == ['train.lr_x', 'model.lora.rank', 'data.max_len']
    assert main(rl_args(work / 'missing', work / 'x', 'model.lora.rank=8', 'data.max_len=64')[2:]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith('error: model.lora.rank, data.max_len: not read by dllm_nb.rl'), err


def test_bf16_autocast_over_fp32_weights(work, monkeypatch):
    "`model.dtype=bfloat16`: rollouts, log-probs and the update run under bf16 autocast (as SFT's), the weights stay fp32 and move."
    import dllm_nb.rl as R
    monkeypatch.syspath_prepend(str(work))                         # the work fixture wrote the reward module
    init, seen = make_init(work), set()
    t = R.RLTrainer(rl_config(init, work / 'bf16', 'train.max_steps=1', 'model.dtype=bfloat16', 'model.attn_implementation=eager'), quiet=True)
    lin = next(m for m in t.policy.modules() if isinstance(m, torch.nn.Linear))
    lin.register_forward_hook(lambda m, i, o: seen.add(o.dtype))
    before = [p.detach().clone() for p in t.policy.parameters()]
    t.fit()
    assert seen == {torch.bfloat16}
    assert all(p.dtype == torch.float32 for p in t.policy.parameters())
    assert any(not torch.equal(a, p) for a, p in zip(before, t.policy.parameters()))


def test_attn_implementation_from_a_training_checkpoint(work, monkeypatch):
    """`rl.init=RUN/ckpt-NNNNNNN` (a step of an RL run, rebuilt from its init) takes `model.attn_implementation` as a final/
    start does, and opening such a checkpoint without one gives its own run's kernel, not sdpa."""
    import dllm_nb.rl as R
    from dllm_nb.checkpoint import load_checkpoint
    monkeypatch.syspath_prepend(str(work))
    init = make_init(work)
    R.RLTrainer(rl_config(init, work / 'attn1', 'train.max_steps=1'), quiet=True).fit()          # sdpa, the default
    t = R.RLTrainer(rl_config(work / 'attn1' / 'ckpt-0000001', work / 'attn2', 'train.max_steps=1',
                              'model.attn_implementation=eager'), quiet=True)
    assert t.policy.attn_implementation == 'eager'
    t.fit()
    assert load_checkpoint(work / 'attn2' / 'ckpt-0000001')[0].attn_implementation == 'eager'
    assert load_checkpoint(work / 'attn1' / 'ckpt-0000001')[0].attn_implementation == 'sdpa'


def test_a_run_whose_folder_is_deleted_stops_with_one_line(work, capsys, monkeypatch):
    "The RL CLI: its output_dir deleted after step 1 (and made again, empty): exit 2, one line, nothing written there."
    import shutil
    import dllm_nb.rl as R
    monkeypatch.syspath_prepend(str(work))
    init, out = make_init(work), work / 'lost'
    step = R.RLTrainer.step
    def delete_then_step(self, k):
        rec = step(self, k)
        if k == 1: shutil.rmtree(out); out.mkdir()
        return rec
    monkeypatch.setattr(R.RLTrainer, 'step', delete_then_step)
    assert R.main(rl_args(init, out)[2:]) == 2
    err = [l for l in capsys.readouterr().err.replace('\r', '\n').splitlines() if 'error' in l]   # (progress bars around it)
    assert len(err) == 1 and err[0].strip().startswith(f"error: output_dir={str(out)!r} was deleted while this run held it"), err
    assert list(out.iterdir()) == []
