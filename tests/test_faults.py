"""Issue 13, "nothing silent, nothing lost": bad input, faults and misuse get a clear answer before any work, and a
run never destroys its own good state. One test (or one parametrised case) per row of the issue.

Subprocesses only where the CLI process itself is the subject (exit code, one-line stderr, Ctrl-C, torchrun);
the rest call the library or `main()` in-process. The long-lives section (issue 55) forks its many lives from one
imported process (tests/scripts/lives.py): about a minute of CPU for that section, several for the whole file.
"""
import ast, contextlib, json, os, re, signal, subprocess, sys, time
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(ROOT), 'TOKENIZERS_PARALLELISM': 'false'}
ENV.pop('DLLM_NB_DEBUG', None)
TINY = ['dllm.mode=mdlm', 'model.hidden_size=32', 'model.num_layers=1', 'model.num_heads=2', 'model.num_kv_heads=1',
        'data.train_size=16', 'data.val_size=8', 'train.global_batch_size=4', 'train.micro_batch_size=2',
        'train.warmup_steps=1', 'train.eval_every=0', 'train.log_every=1', 'train.save_every=2', 'train.keep_last=2',
        'train.max_steps=6']
ROW = {'messages': [{'role': 'user', 'content': 'What is 1 + 2?'}, {'role': 'assistant', 'content': 'Answer: 3'}]}


def cli(args, timeout=120, **kw):
    return subprocess.run([sys.executable, *args], env=ENV, capture_output=True, text=True, cwd=ROOT, timeout=timeout, **kw)


def one_error_line(r) -> str:
    "The CLI's stderr (a `CompletedProcess` or the text) holds exactly one `error: ...` line and no traceback."
    err = r if isinstance(r, str) else r.stderr
    lines = [l for l in err.splitlines() if l.startswith('error:')]
    assert 'Traceback' not in err and len(lines) == 1, err[-3000:]
    return lines[0]


@pytest.fixture(scope='module')
def tok():
    from dllm_nb.tokenizer import load_tokenizer
    return load_tokenizer()


def cfg_of(tmp, *over):
    from dllm_nb.config import load_config
    return load_config(None, TINY + [f'output_dir={tmp}', *over])


# ---------------------------------------------------------------- data, model and paths (exit 2, one line, no setup)
def write_rows(path, rows): path.write_text(''.join(json.dumps(r) + '\n' for r in rows)); return path

@pytest.mark.parametrize('name, content, expect', [
    ('badjson.jsonl', b'{"prompt": "a", "response": "b"}\n{"prompt": "a", "response": "b"}\n{"prompt": "a", "resp\n',
     r'badjson\.jsonl:3: invalid JSON \(.*column \d+\); fix or delete the line'),
    ('empty.jsonl', b'', r'empty\.jsonl: the file is empty'),
    ('blank.jsonl', b'\n  \n', r'blank\.jsonl: the file is empty'),
    ('latin1.jsonl', b'{"prompt": "ok", "response": "b"}\n{"prompt": "caf\xe9", "response": "b"}\n',
     r'latin1\.jsonl:2: byte 0xe9 at column 16 is not UTF-8; re-save the file as UTF-8'),
    ('list.jsonl', b'[1, 2]\n', r'list\.jsonl:1: expected a JSON object'),
    ('mixed.jsonl', b'{"prompt": "a", "response": "b"}\n{"prompt": ["x"], "response": "b"}\n', r'mixed\.jsonl: the rows do not share one schema'),
])
def test_bad_jsonl_names_file_and_line(tmp_path, tok, name, content, expect):
    from dllm_nb.data import DataError, load_sft_dataset
    (tmp_path / name).write_bytes(content)
    with pytest.raises(DataError, match=expect): load_sft_dataset(tmp_path / name, tokenizer=tok)


def test_bad_row_names_1_based_line(tmp_path, tok):
    from dllm_nb.data import DataError, load_sft_dataset
    rows = [ROW] * 5; rows[3] = {'messages': [{'role': 'user', 'content': 'hi'}, {'role': 'bot', 'content': 'x'}]}
    p = tmp_path / 'd.jsonl'; p.write_text('\n'.join(json.dumps(r) for r in rows[:2]) + '\n\n' + '\n'.join(json.dumps(r) for r in rows[2:]))
    with pytest.raises(DataError, match=r"d\.jsonl:5: example 3: messages\[1\]\['role'\] = 'bot'"):   # line 5: a blank line 3
        load_sft_dataset(p, tokenizer=tok)


def test_every_example_overlong_says_so(tmp_path, tok):
    from dllm_nb.data import DataError, load_sft_dataset
    p = write_rows(tmp_path / 'd.jsonl', [ROW] * 3)
    with pytest.raises(DataError, match=r'all 3 examples are longer than max_len=4 tokens \(the shortest has \d+\); '
                                        r'raise data\.max_len to at least \d+ or set data\.overlong=truncate'):
        load_sft_dataset(p, tokenizer=tok, max_len=4)


def test_truncate_to_nothing_is_dropped_and_counted(tmp_path, tok, caplog):
    from dllm_nb.data import DataError, load_sft_dataset
    long_prompt = {'messages': [{'role': 'user', 'content': 'word ' * 40}, {'role': 'assistant', 'content': 'ok'}]}
    p = write_rows(tmp_path / 'd.jsonl', [ROW, long_prompt, ROW])
    ds = load_sft_dataset(p, tokenizer=tok, max_len=30, overlong='truncate')
    assert len(ds) == 2 and ds.sft_info['n_unsupervised'] == 1 and all(any(m) for m in ds['loss_mask'])
    assert '1 truncated examples kept no supervised token' in caplog.text
    with pytest.raises(DataError, match='no supervised token after truncation'):
        load_sft_dataset(write_rows(tmp_path / 'e.jsonl', [long_prompt]), tokenizer=tok, max_len=30, overlong='truncate')


def test_tiny_dataset_big_batch_warns(tmp_path, caplog):
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.data import load_datasets
    cfg = cfg_of(tmp_path, f'data.dataset={write_rows(tmp_path / "one.jsonl", [ROW])}', 'data.val_size=0',
                 'data.train_size=null', 'train.global_batch_size=32', 'train.micro_batch_size=16')
    train, val = load_datasets(cfg, load_tokenizer())
    assert len(train) == 1 and val is None
    assert '1 training example(s) but train.global_batch_size=32: every step repeats each example about 32 times' in caplog.text


def test_val_size_message_names_the_real_problem(tmp_path):
    from dllm_nb.data import DataError
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.data import load_datasets
    cfg = cfg_of(tmp_path, f'data.dataset={write_rows(tmp_path / "d.jsonl", [ROW] * 3)}', 'data.train_size=null')
    with pytest.raises(DataError, match=r'data\.val_size=8 would hold out all 3 usable training examples'):
        load_datasets(cfg, load_tokenizer())


def test_cli_bad_data_is_one_line_exit_2(tmp_path):
    "The CLI prints the DataError as one line (no traceback), exit 2, nothing trained; --debug shows the traceback."
    from dllm_nb.data import DataError
    from dllm_nb.train import main
    data = tmp_path / 'd.jsonl'; data.write_text(json.dumps(ROW) + '\n{"messages": [}\n')
    args = ['-m', 'dllm_nb.train', f'data.dataset={data}', f'output_dir={tmp_path / "run"}', *TINY[:5]]
    r = cli(args)
    assert r.returncode == 2
    assert one_error_line(r) == f'error: {data}:2: invalid JSON (Expecting value, column 15); fix or delete the line'
    assert not (tmp_path / 'run' / 'metrics.jsonl').exists()
    with pytest.raises(DataError): main(args[2:] + ['--debug'])        # in-process: the traceback is the exception


def test_cli_preflight_before_any_setup(tmp_path):
    "Missing model.path, missing tensorboard package and a file as output_dir: all named at once, in about a second."
    (tmp_path / 'file').write_text('x')
    t = time.perf_counter()
    r = cli(['-m', 'dllm_nb.train', f'model.path={tmp_path}/no/such/model', 'train.tensorboard=true',
             f'output_dir={tmp_path / "file"}'])
    assert r.returncode == 2, r.stderr
    assert f"model.path='{tmp_path}/no/such/model' does not exist" in r.stderr
    assert f"output_dir='{tmp_path / 'file'}' is a file" in r.stderr
    import importlib.util
    if importlib.util.find_spec('tensorboard') is None: assert "pip install 'dllm_nb[tensorboard]'" in r.stderr
    assert 'Traceback' not in r.stderr and time.perf_counter() - t < 60


def test_output_dir_not_writable_or_under_a_file(tmp_path):
    from dllm_nb.config import ConfigError
    from dllm_nb.rundir import preflight
    (tmp_path / 'f').write_text('x')
    with pytest.raises(ConfigError, match="lies under the file"): preflight(cfg_of(tmp_path / 'f' / 'run'))
    if os.geteuid() != 0:                                             # root may write anywhere
        ro = tmp_path / 'ro'; ro.mkdir(); ro.chmod(0o500)
        with pytest.raises(ConfigError, match='is not writable'): preflight(cfg_of(ro / 'run'))


def test_cli_eval_rejects_unknown_task_before_loading(tmp_path, monkeypatch, capsys):
    import dllm_nb.eval as E
    from dllm_nb.eval import main
    monkeypatch.setattr(E, 'load_checkpoint', lambda *a, **k: pytest.fail('loaded the model before checking --task'))
    with pytest.raises(SystemExit) as e: main(['--checkpoint', str(tmp_path), '--task', 'multiplication'])
    assert e.value.code == 2
    assert "invalid choice: 'multiplication' (choose from 'addition', 'countdown', 'reverse', 'sudoku')" in capsys.readouterr().err


@pytest.fixture(scope='module')
def tiny_export(tmp_path_factory):
    "A tiny MDLM `final/` folder (random weights) and its tokenizer."
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.modes import build_model
    d, tok = tmp_path_factory.mktemp('final'), load_tokenizer()
    model, _ = build_model(cfg_of(d), tok)
    model.save_pretrained(d); tok.save_pretrained(d)
    return d


def test_generate_prompt_longer_than_positions_is_an_error(tiny_export, capsys):
    from dllm_nb.generate import main
    assert main(['--checkpoint', str(tiny_export), '--prompt', 'word ' * 600, '--max-new-tokens', '8']) == 2
    err = capsys.readouterr().err
    assert re.search(r"error: prompt 1 is \d+ tokens; with --max-new-tokens 8 that is \d+ > the model's 512 positions", err)


def test_generate_truncated_final_says_so(tiny_export, tmp_path, capsys):
    import shutil
    from dllm_nb.generate import main
    d = tmp_path / 'final'; shutil.copytree(tiny_export, d)
    w = d / 'model.safetensors'; w.write_bytes(w.read_bytes()[:1000])
    assert main(['--checkpoint', str(d), '--prompt', 'hi']) == 2
    err = capsys.readouterr().err
    assert err.startswith(f'error: {d} cannot be loaded (') and 'a file may be truncated' in err and len(err.splitlines()) == 1


def test_generate_default_max_new_tokens_fits_builtin_answers(tok):
    "The longest built-in response (worked steps + answer + EOS) fits the CLI's default --max-new-tokens."
    from dllm_nb.builtin import TASKS, task_examples
    from dllm_nb.generate import DEFAULT_MAX_NEW_TOKENS, _parser
    n = _parser().parse_args(['--checkpoint', 'x']).max_new_tokens or DEFAULT_MAX_NEW_TOKENS   # no final/ run record
    longest = max(len(tok(e['messages'][1]['content'])['input_ids']) + 1 for t in TASKS for e in task_examples(t, 'test'))
    assert longest <= n, (longest, n)


# ---------------------------------------------------------------- runs and checkpoints
def nan_after(monkeypatch, k: int):
    "Make the gradient norm NaN from the (k+1)-th step on (as a diverged run would report it)."
    import dllm_nb.trainer as T
    calls, real = [0], T.clip_grad_norm_
    def fake(params, max_norm):
        calls[0] += 1
        gn = real(params, max_norm)
        return gn * float('nan') if calls[0] > k else gn
    monkeypatch.setattr(T, 'clip_grad_norm_', fake)


def test_nonfinite_steps_skipped_then_stop(tmp_path, monkeypatch):
    from dllm_nb.checkpoint import list_checkpoints
    from dllm_nb.trainer import NonFiniteError, Trainer
    nan_after(monkeypatch, 2)
    tr = Trainer(cfg_of(tmp_path, 'train.max_bad_steps=3', 'train.save_every=1', 'train.keep_last=1'), quiet=True)
    with pytest.raises(NonFiniteError, match=r'stopped at step 5: loss or gradient norm NaN/inf for 3 steps in a row '
                                             r'\(train.max_bad_steps=3\); last finite checkpoint: .*ckpt-0000004'):
        tr.fit()
    assert all(torch.isfinite(p).all() for p in tr.model.parameters())        # skipped steps changed no weight
    assert [p.name for p in list_checkpoints(tmp_path)] == ['ckpt-0000004']   # saved while skipping, still finite
    recs = [json.loads(l) for l in (tmp_path / 'metrics.jsonl').read_text().splitlines()]
    assert [r['step'] for r in recs if r.get('skipped')] == [3, 4, 5]


def test_skipped_step_changes_no_weight(tmp_path, monkeypatch):
    from dllm_nb.trainer import Trainer
    nan_after(monkeypatch, 0)
    tr = Trainer(cfg_of(tmp_path, 'train.max_bad_steps=2', 'train.save_every=0'), quiet=True)
    w0 = [p.detach().clone() for p in tr.model.parameters()]
    with pytest.raises(Exception): tr.fit()
    assert all(torch.equal(a, b.detach()) for a, b in zip(w0, tr.model.parameters()))


def test_nonfinite_weights_never_written_last_finite_kept(tmp_path):
    "Issue 24: a save with NaN/inf weights writes nothing (it used to write a NONFINITE-marked ckpt) and prunes nothing."
    from dllm_nb.checkpoint import list_checkpoints, save_checkpoint
    m = torch.nn.Linear(2, 2); opt = torch.optim.SGD(m.parameters(), lr=0.1)
    save_checkpoint(tmp_path, 1, m, opt, {}, keep_last=1)
    for s in (2, 3): assert save_checkpoint(tmp_path, s, m, opt, {}, keep_last=1, finite=False) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ['ckpt-0000001']


def test_cli_inf_weights_no_checkpoint_then_exit_3(tmp_path, monkeypatch, capsys):
    "Weights turned inf by an update: no ckpt is written after it, the run stops with exit 3 naming the last finite one."
    import dllm_nb.trainer as T
    from dllm_nb.train import main
    real = T.train_step
    def blow_up(model, *a, **k):
        r = real(model, *a, **k)
        if r.loss and len(T.finite_checkpoints(tmp_path)) >= 1:          # after the first checkpoint: an inf update
            with torch.no_grad(): next(model.parameters()).fill_(float('inf'))
        return r
    monkeypatch.setattr(T, 'train_step', blow_up)
    assert main([f'output_dir={tmp_path}', *TINY, 'train.max_bad_steps=2']) == 3
    out, err = capsys.readouterr()
    assert 'the weights hold NaN/inf, so no checkpoint was written; last finite checkpoint: ' in out
    assert re.search(r'error: stopped at step \d+: .*last finite checkpoint: .*ckpt-0000002\. ', err), err
    assert [p.name for p in tmp_path.glob('ckpt-*')] == ['ckpt-0000002'] and not (tmp_path / 'final').exists()


def test_cli_never_exports_nonfinite_model(tmp_path, monkeypatch, capsys):
    import dllm_nb.trainer as T
    from dllm_nb.train import main
    def fit(self, stop_at=None):
        with torch.no_grad(): next(self.model.parameters()).fill_(float('nan'))
        return []
    monkeypatch.setattr(T.Trainer, 'fit', fit)
    assert main([f'output_dir={tmp_path}', *TINY]) == 3
    assert 'error: the final weights hold NaN/inf, so' in capsys.readouterr().err and not (tmp_path / 'final').exists()


def test_reused_output_dir_refused_unless_resume_or_overwrite(tmp_path, capsys):
    from dllm_nb.config import ConfigError
    from dllm_nb.checkpoint import list_checkpoints
    from dllm_nb.rundir import preflight
    from dllm_nb.trainer import Trainer
    Trainer(cfg_of(tmp_path, 'train.max_steps=2'), quiet=True).fit()
    with pytest.raises(ConfigError, match=r"already holds a run \(ckpt-0000002, .*\); resume it with train.resume=auto, "
                                          r"choose a new output_dir, or set train.overwrite=true"):
        preflight(cfg_of(tmp_path))
    preflight(cfg_of(tmp_path, 'train.resume=auto'))                   # fine
    (tmp_path / 'notes.txt').write_text('mine')
    preflight(cfg_of(tmp_path, 'train.overwrite=true'))
    assert sorted(p.name for p in tmp_path.iterdir()) == ['.dllm_nb.lock', 'notes.txt'] and not list_checkpoints(tmp_path)


def test_resume_refuses_config_changes_that_break_exactness(tmp_path):
    from dllm_nb.config import ConfigError
    from dllm_nb.trainer import Trainer
    Trainer(cfg_of(tmp_path), quiet=True).fit(stop_at=2)
    changed = cfg_of(tmp_path, 'train.resume=auto', 'train.lr=0.01', 'seed=3', 'train.log_every=5')
    with pytest.raises(ConfigError) as e: Trainer(changed, quiet=True).fit()
    assert e.value.problems[1:] == ['train.lr: 0.003 -> 0.01', 'seed: 0 -> 3'], e.value.problems  # log_every is harmless
    loose = cfg_of(tmp_path, 'train.resume=auto', 'train.lr=0.01', 'train.resume_strict=false')
    assert [r['step'] for r in Trainer(loose, quiet=True).fit(stop_at=3) if 'loss' in r] == [3]


def test_corrupt_latest_checkpoint_falls_back(tmp_path, capsys):
    from dllm_nb.metrics import read_metrics
    from dllm_nb.trainer import Trainer
    full = Trainer(cfg_of(tmp_path / 'a'), quiet=True).fit()
    Trainer(cfg_of(tmp_path / 'b'), quiet=True).fit(stop_at=4)
    shard = next((tmp_path / 'b' / 'ckpt-0000004').glob('*.distcp'))
    shard.write_bytes(shard.read_bytes()[:100])                        # truncated shard
    res = Trainer(cfg_of(tmp_path / 'b', 'train.resume=auto'), quiet=True).fit()
    out = capsys.readouterr().out
    assert re.search(r'warning: checkpoint .*ckpt-0000004 is broken \(.+\); falling back to an older one', out), out
    assert [r['step'] for r in res] == [3, 4, 5, 6]
    assert [r['loss'] for r in res] == [r['loss'] for r in full if r['step'] >= 3]     # still exact
    assert [r['step'] for r in read_metrics(tmp_path / 'b')] == [1, 2, 3, 4, 5, 6]   # no step logged twice
    (tmp_path / 'b' / 'ckpt-0000006' / 'trainer_state.json').write_bytes(b'{"step": 6, "sam')   # truncated JSON
    (tmp_path / 'b' / 'ckpt-0000004' / '.metadata').unlink()                          # missing metadata
    with pytest.raises(RuntimeError, match='no checkpoint in .* can be loaded'):
        Trainer(cfg_of(tmp_path / 'b', 'train.resume=auto'), quiet=True).fit()
    out = capsys.readouterr().out
    assert 'ckpt-0000006 is broken' in out and 'ckpt-0000004 is broken' in out


def test_resume_auto_without_checkpoint_says_so(tmp_path, capsys):
    from dllm_nb.trainer import Trainer
    recs = Trainer(cfg_of(tmp_path, 'train.resume=auto', 'train.max_steps=1'), quiet=True).fit()
    assert f'train.resume=auto: no checkpoint in {tmp_path}; starting fresh' in capsys.readouterr().out
    assert recs[-1]['step'] == 1


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM])
def test_cli_ctrl_c_exit_130_names_checkpoint_and_resume(tmp_path, sig):
    "SIGINT -> 130, SIGTERM -> 143 (issue 24 item 3: SIGTERM used to exit 143 with no checkpoint and no message)."
    out = tmp_path / 'run'
    args = ['-m', 'dllm_nb.train', f'output_dir={out}', *TINY, 'train.max_steps=100000', 'train.save_every=1']
    p = subprocess.Popen([sys.executable, *args], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        t = time.time()
        while not list(out.glob('ckpt-*')) and time.time() - t < 120: time.sleep(0.2)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally: p.kill()
    assert p.returncode == 128 + sig, err[-2000:]
    step = int(re.search(rf'interrupted by {sig.name}; last complete checkpoint: .*ckpt-(\d+);', err).group(1))
    assert (out / f'ckpt-{step:07d}').exists() and step == max(r['step'] for r in map(json.loads, (out / 'metrics.jsonl').read_text().splitlines()))
    last = [l for l in re.split(r'[\r\n]', err) if l.startswith('interrupted')]
    assert len(last) == 1, err[-2000:]
    last = last[0]
    o = re.escape(str(out))
    assert re.fullmatch(rf'interrupted by {sig.name}; last complete checkpoint: {o}/ckpt-\d+; resume with: \S+ -m dllm_nb.train '
                        rf'output_dir={o} .* train.save_every=1 train.resume=auto', last), last
    assert 'Traceback' not in err


def test_validation_same_examples_any_world_size(tmp_path):
    "1 vs 2 torchrun processes: the same validation loss; workers get PDEATHSIG and the configured pg timeout."
    from dllm_nb.trainer import Trainer, validate
    over = [*TINY, f'output_dir={tmp_path}', 'data.val_size=10', 'train.eval_batches=2', 'train.dist_timeout_s=77']
    tr = Trainer(cfg_of(tmp_path, *over[len(TINY) + 1:]), quiet=True)                     # 1 process: here
    (tmp_path / '1.json').write_text(json.dumps(validate(tr.model, tr.strategy, tr.val_batches())))
    script = str(ROOT / 'tests' / 'scripts' / 'val_world.py')
    r = cli(['-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2', script, str(tmp_path / '2.json'), *over], timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    a, b = (json.loads((tmp_path / f'{k}.json').read_text()) for k in '12')
    assert a['val_tokens'] == b['val_tokens'] > 0
    assert b['val_loss'] == pytest.approx(a['val_loss'], rel=1e-5)
    assert b['pdeathsig'] == signal.SIGTERM
    if b['timeout_s'] is not None: assert b['timeout_s'] == 77


# ---------------------------------------------------------------- packaging and CLI
def _requirements() -> set[str]:
    src = (ROOT / 'setup.py').read_text()
    block = re.search(r'^requirements = \[(.*?)^\]', src, re.S | re.M).group(1)
    return {re.split(r'[<>=\[ ]', s)[0].lower().replace('_', '-') for s in re.findall(r"'([^']+)'", block)}


def test_every_runtime_import_is_an_install_requirement():
    "Every third-party module dllm_nb/*.py imports belongs to a distribution in install_requires (fails on fastcore today)."
    from importlib.metadata import packages_distributions
    dists, reqs, missing = packages_distributions(), _requirements(), {}
    optional = {'tensorboard', 'peft', 'lm_eval'}                      # extras (tensorboard, lora, eval), imported only when asked for
    for f in sorted((ROOT / 'dllm_nb').glob('*.py')):
        for node in ast.walk(ast.parse(f.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
            for top in {n.split('.')[0] for n in names}:
                if top in sys.stdlib_module_names or top == 'dllm_nb' or top in optional: continue
                ds = {d.lower().replace('_', '-') for d in dists.get(top, [top])}
                if not ds & reqs and not _transitive(ds): missing.setdefault(top, f.name)
    assert not missing, f'imported at runtime but not in install_requires: {missing}'


def _transitive(ds):
    "Modules shipped inside a required distribution's own requirement (e.g. huggingface_hub via transformers)."
    from importlib.metadata import requires
    out = set()
    for r in _requirements():
        try: out |= {re.split(r'[<>=!~;\[ ]', x)[0].lower().replace('_', '-') for x in (requires(r) or [])}
        except Exception: pass
    return ds & out


def test_tensorboard_is_an_extra():
    assert "'tensorboard': [" in (ROOT / 'setup.py').read_text()


def test_compile_trains_on_cpu(tmp_path, monkeypatch):
    """train.compile=true compiles the model in place (same checkpoint keys) and trains 2 finite steps on CPU.
    Dynamo + AOTAutograd run for real; the `aot_eager` backend skips inductor's C++ build (~50 s on 2 cores)."""
    from dllm_nb.trainer import Trainer
    real = torch.nn.Module.compile
    monkeypatch.setattr(torch.nn.Module, 'compile', lambda self, *a, **k: real(self, backend='aot_eager'))
    tr = Trainer(cfg_of(tmp_path, 'train.compile=true', 'train.max_steps=2', 'train.save_every=0', 'data.val_size=0'),
                 quiet=True)
    assert tr.model._compiled_call_impl is not None
    recs = tr.fit()
    assert [r['step'] for r in recs] == [1, 2] and all(torch.isfinite(torch.tensor(r['loss'])) for r in recs)
    assert not any('_orig_mod' in k for k in tr.model.state_dict())


def test_overrides_after_options_and_debug_flag():
    from dllm_nb.train import parse_args
    a = parse_args(['--eval-n', '0', 'data.val_size=0', '--stop-at', '3', 'train.lr=1e-3', '--debug'])
    assert (a.eval_n, a.stop_at, a.overrides, a.debug) == (0, 3, ['data.val_size=0', 'train.lr=1e-3'], True)


def test_list_keys_type_default_description(capsys):
    from dllm_nb.config import config_keys
    from dllm_nb.train import main
    assert main(['--list-keys']) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(config_keys()) and not any('<class' in l for l in lines)
    assert re.fullmatch(r'train\.lr +float +\= 0\.003 +peak learning rate \(AdamW\)', next(l for l in lines if l.startswith('train.lr ')))
    assert all(len(l.split('=', 1)[1].split()) >= 2 for l in lines), 'every key has a description'


def test_resume_command_drops_stop_at(monkeypatch):
    from dllm_nb.train import resume_command
    monkeypatch.delenv('WORLD_SIZE', raising=False)
    assert resume_command(['--config', 'c.yaml', '--stop-at', '5', 'train.resume=x', 'a.b=1']).endswith(
        "-m dllm_nb.train --config c.yaml a.b=1 train.resume=auto")


def test_rl_resume_command(monkeypatch):
    "RL's resume line: `--stop-at N`'s value goes with it (it was left behind as a stray override), paths are quoted, torchrun kept."
    from dllm_nb.train import resume_command
    monkeypatch.delenv('WORLD_SIZE', raising=False)
    argv = ['--config', 'rl_countdown', '--stop-at', '50', 'rl.init=my runs/final']
    assert resume_command(argv, 'dllm_nb.rl').endswith("-m dllm_nb.rl --config rl_countdown 'rl.init=my runs/final' train.resume=auto")
    monkeypatch.setenv('WORLD_SIZE', '2')
    assert resume_command(argv, 'dllm_nb.rl').startswith('torchrun --nproc_per_node=2 -m dllm_nb.rl --config rl_countdown ')


def test_readme_commands_use_the_venv_python():
    "The manual commands (outside `make`) run with the project's venv, not a bare `python`/`torchrun` from PATH."
    readme = (ROOT / 'README.md').read_text()
    manual = readme[readme.index('## The two commands'):]                                 # after `make train`
    cmds = re.findall(r'(?m)(?:^|`)((?:\S*/)?(?:python|torchrun) [^`\n]*-m dllm_nb[^`\n]*)', manual)
    assert len(cmds) >= 5 and all(c.lstrip("`").startswith(".venv/bin/") for c in cmds), cmds
    assert '--prompt "What is 123 + 456?"' in manual


# ---------------------------------------------------------------- fuzz: a dataset or DataError, nothing else
json_value = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                          lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(['messages', 'prompt', 'response', 'role', 'content', 'x']), c, max_size=3),
                          max_leaves=8)
message = st.fixed_dictionaries({'role': st.sampled_from(['user', 'assistant', 'system', 'bot']), 'content': st.text(max_size=6)})
row = st.one_of(json_value, st.fixed_dictionaries({'messages': st.lists(message, max_size=3)}),
                st.fixed_dictionaries({'prompt': st.text(max_size=6), 'response': st.text(max_size=6)}))
line = st.one_of(row.map(json.dumps).map(str.encode), st.binary(max_size=12), st.just(b''))


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(lines=st.lists(line, max_size=4))
def test_fuzz_jsonl_loader(tmp_path_factory, tok, lines):
    from dllm_nb.data import DataError, load_sft_dataset
    p = tmp_path_factory.mktemp('fuzz') / 'f.jsonl'
    p.write_bytes(b'\n'.join(lines))
    try: ds = load_sft_dataset(p, tokenizer=tok, max_len=64)
    except DataError as e: assert str(p) in str(e); return
    assert len(ds) >= 1 and all(any(m) for m in ds['loss_mask'])


# ---------------------------------------------------------------- issue 24: reliability under hostile files, concurrency, disk faults
class Payload:
    "Unpickling this writes `marker`: what a crafted checkpoint would do (run code) before any error."
    def __init__(self, marker): self.marker = str(marker)
    def __reduce__(self): return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def _craft(ckpt, how, marker):
    "Replace one part of a real checkpoint with a pickle that would run code."
    import pickle
    if how == 'trainer_state.pt':                                       # the pre-JSON format, still read
        for f in ckpt.glob('trainer_state.*'): f.unlink()
        torch.save(dict(step=2, x=Payload(marker)), ckpt / 'trainer_state.pt')
    elif how == '.metadata':
        (ckpt / '.metadata').write_bytes(pickle.dumps(Payload(marker)))
    else:                                                               # a non-tensor entry of the DCP shards
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.format_utils import dcp_to_torch_save
        dcp_to_torch_save(ckpt, ckpt.parent / 'full.pt')                # our own file: safe to unpickle here
        sd = torch.load(ckpt.parent / 'full.pt', weights_only=False); (ckpt.parent / 'full.pt').unlink()
        sd['optim']['param_groups'][0]['lr'] = Payload(marker)
        for f in ckpt.glob('*.distcp'): f.unlink()
        dcp.save(sd, checkpoint_id=str(ckpt))


@pytest.mark.filterwarnings('ignore:torch.distributed is disabled', 'ignore:Detected an existing checkpoint')   # the test's own re-save
@pytest.mark.parametrize('how', ['trainer_state.pt', '.metadata', 'distcp entry'])
def test_crafted_checkpoint_never_runs_code(tmp_path, capsys, how):
    "Issue 24 item 1: a resume of a crafted checkpoint is refused in one line, exit 2, and its code never runs."
    from dllm_nb.train import main
    run, marker = tmp_path / 'run', tmp_path / 'pwned'
    assert main([f'output_dir={run}', *TINY, '--stop-at', '2']) == 0
    _craft(run / 'ckpt-0000002', how, marker)
    capsys.readouterr()
    assert main([f'output_dir={run}', *TINY, 'train.resume=auto']) == 2
    err = capsys.readouterr().err
    assert not marker.exists(), 'the checkpoint ran code'
    line = one_error_line(err)
    assert re.search(r'asks to call (builtins\.)?exec, .* refused without loading it', line), line
    assert not (run / 'ckpt-0000004').exists()


def test_old_pickled_trainer_state_still_resumes(tmp_path):
    "A checkpoint written before JSON (`trainer_state.pt` with a pickled Config) resumes exactly, through weights_only=True."
    import shutil
    from dllm_nb.checkpoint import read_trainer_state
    from dllm_nb.trainer import Trainer
    Trainer(cfg_of(tmp_path / 'a'), quiet=True).fit(stop_at=2)
    shutil.copytree(tmp_path / 'a', tmp_path / 'b')
    ck = tmp_path / 'b' / 'ckpt-0000002'
    st = read_trainer_state(ck); st['config'] = cfg_of(tmp_path / 'a')
    for f in ck.glob('trainer_state.*'): f.unlink()
    torch.save(st, ck / 'trainer_state.pt')
    new, old = (Trainer(cfg_of(tmp_path / k, 'train.resume=auto'), quiet=True).fit(stop_at=3) for k in 'ab')
    assert [r['step'] for r in old] == [3] and old[0]['loss'] == new[0]['loss']


def _files(d):
    "name -> (size, mtime, bytes) of every file under `d` except the lock file."
    return {str(p.relative_to(d)): (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(Path(d).rglob('*')) if p.is_file() and p.name != '.dllm_nb.lock'}


def test_refused_resume_touches_nothing(tmp_path, capsys):
    "Issue 24 item 5: a refused resume (strict, or resume_strict=false with another model size) changes no file; exit 2."
    from dllm_nb.train import main
    assert main([f'output_dir={tmp_path}', *TINY, '--stop-at', '2']) == 0
    before = _files(tmp_path); capsys.readouterr()
    assert main([f'output_dir={tmp_path}', *TINY, 'train.resume=auto', 'train.lr=0.01']) == 2     # config.yaml was rewritten
    o = capsys.readouterr()
    assert 'train.lr: 0.003 -> 0.01' in o.err and _files(tmp_path) == before
    assert 'taking it over' not in o.out                              # the first run ended and emptied its lock record
    assert main([f'output_dir={tmp_path}', *TINY, 'train.resume=auto', 'train.resume_strict=false',
                 'model.hidden_size=64']) == 2                                                     # was a traceback
    err = one_error_line(capsys.readouterr().err)
    assert re.match(r'error: .*ckpt-0000002 cannot continue with train.resume_strict=false: '
                                             r'\d+ weight\(s\) do not fit this model \(.*\[.*32\] in the checkpoint, \[.*64\] now', err), err
    assert _files(tmp_path) == before
    assert main([f'output_dir={tmp_path}', *TINY, 'train.resume=auto', 'train.resume_strict=false', 'train.lr=0.01',
                 '--stop-at', '3']) == 0
    assert 'train.resume_strict=false: continuing ' in capsys.readouterr().out
    assert 'lr: 0.01' in (tmp_path / 'config.yaml').read_text()                                     # now it describes the run


def test_second_run_of_a_locked_folder_exit_2_names_holder(tmp_path, capsys):
    "Issue 24 item 2: while a run holds output_dir, a resume of it exits 2 naming the holder's PID; kill -9 frees it."
    from dllm_nb.train import main
    out = tmp_path / 'run'
    p = subprocess.Popen([sys.executable, '-m', 'dllm_nb.train', f'output_dir={out}', *TINY, 'train.max_steps=100000',
                          'train.save_every=1'], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        t = time.time()
        while not list(out.glob('ckpt-*')) and time.time() - t < 120 and p.poll() is None: time.sleep(0.2)
        for extra in (['train.resume=auto'], ['train.overwrite=true']):           # both used to clobber the running run
            assert main([f'output_dir={out}', *TINY, 'train.max_steps=100000', 'train.save_every=1', *extra,
                         '--stop-at', '1']) == 2
            err = one_error_line(capsys.readouterr().err)
            assert re.fullmatch(rf"error: output_dir='{re.escape(str(out))}' is in use by another run \(PID {p.pid} on .*\); "
                                r"wait for it to end, stop it, or choose another output_dir", err), err
        assert p.poll() is None and list(out.glob('ckpt-*'))                    # the running run lost nothing
    finally: p.kill(); p.wait()
    step = max(int(c.name[5:]) for c in out.glob('ckpt-*'))
    assert main([f'output_dir={out}', *TINY, 'train.max_steps=100000', 'train.save_every=1', 'train.resume=auto',
                 '--stop-at', str(step + 1)]) == 0
    assert f'was left by PID {p.pid}, which is no longer running; taking it over' in capsys.readouterr().out


@pytest.mark.parametrize('cmd, args, expect', [
    ('generate', ['--prompt', 'hi', '--max-new-tokens', '0'], 'argument --max-new-tokens: must be >= 1, got 0'),  # was 40 tokens
    ('generate', ['--prompt', 'hi', '--max-new-tokens', '-1'], 'argument --max-new-tokens: must be >= 1, got -1'),  # was IndexError
    ('generate', ['--prompt', 'hi', '--batch-size', '0'], 'argument --batch-size: must be >= 1, got 0'),
    ('eval', ['--task', 'addition', '--n', '0'], 'argument --n: must be >= 1, got 0'),                            # was 0.000 (0/0)
    ('eval', ['--task', 'addition', '--n', '-1'], 'argument --n: must be >= 1, got -1'),                          # scored 199
    ('eval', ['--task', 'addition', '--steps', 'x'], "argument --steps: expected an integer >= 1, got 'x'"),
    ('eval', ['--task', 'addition', '--split', 'dev2'], "argument --split: invalid choice: 'dev2' (choose from 'train', "
                                                        "'validation', 'val', 'test')"),                    # was a traceback
    ('generate', ['--prompt', 'hi', '--temperature', '-1'], 'argument --temperature: must be in [0, inf], got -1.0'),
    ('generate', ['--prompt', 'hi', '--threshold', '1.5'], 'argument --threshold: must be in [0, 1], got 1.5'),
    ('generate', ['--prompt', 'hi', '--speculative', '--lookup', '1'], 'argument --lookup: must be 0 (off) or >= 2, got 1'),
    ('generate', ['--prompt', 'hi', '--speculative', '--max-draft', '-1'], 'argument --max-draft: must be >= 0, got -1'),
])
def test_cli_counts_checked_before_loading(tmp_path, monkeypatch, capsys, cmd, args, expect):
    "Issue 24 item 7: counts < 1 are usage errors (exit 2, one line), found before the model loads."
    import importlib
    cli = importlib.import_module(f'dllm_nb.{cmd}')
    monkeypatch.setattr(cli, 'load_checkpoint', lambda *a, **k: pytest.fail('loaded the model before checking the arguments'))
    with pytest.raises(SystemExit) as e: cli.main(['--checkpoint', str(tmp_path), *args])
    err = capsys.readouterr().err
    assert e.value.code == 2 and 'Traceback' not in err and err.splitlines()[-1] == f'python -m dllm_nb.{cmd}: error: {expect}', err


@pytest.mark.parametrize('args, expect', [
    (['--prompts-file', 'no/such/file'], 'error: --prompts-file no/such/file: No such file or directory'),  # was a traceback
    (['--prompt', 'hi', '--device', 'cuda:7'], 'error: --device cuda:7: this machine has '),                # was 'truncated'
    ([], 'error: no prompts: pass --prompt'),
])
def test_generate_inputs_are_one_line_exit_2(tmp_path, monkeypatch, capsys, args, expect):
    import dllm_nb.generate as G
    monkeypatch.setattr(G, 'load_checkpoint', lambda *a, **k: pytest.fail('loaded the model before checking the arguments'))
    assert G.main(['--checkpoint', str(tmp_path), *args]) == 2
    assert one_error_line(capsys.readouterr().err).startswith(expect)


def test_eval_truncated_final_is_one_line(tiny_export, tmp_path, capsys):
    "Issue 24 item 7: eval handles a truncated model.safetensors as generate does (it was a traceback)."
    import shutil
    from dllm_nb.eval import main
    d = tmp_path / 'final'; shutil.copytree(tiny_export, d)
    w = d / 'model.safetensors'; w.write_bytes(w.read_bytes()[:1000])
    assert main(['--checkpoint', str(d), '--task', 'addition', '--n', '2']) == 2
    assert one_error_line(capsys.readouterr().err).startswith(f'error: {d} cannot be loaded (')


def test_unknown_builtin_dataset_is_a_config_error(tmp_path, capsys):
    "Issue 24 item 7: data.dataset=builtin:nosuch is refused by preflight, listing the built-in names (it was a traceback)."
    from dllm_nb.train import main
    assert main([f'output_dir={tmp_path / "run"}', 'data.dataset=builtin:nosuch']) == 2
    assert one_error_line(capsys.readouterr().err) == ("error: data.dataset='builtin:nosuch' is not a built-in dataset; known: builtin:addition, "
                                 "builtin:countdown, builtin:default, builtin:reverse, builtin:sudoku (or give a local file or a hub id)")
    assert not (tmp_path / 'run').exists()


def test_mid_run_checkpoint_samples_and_exports(tmp_path, capsys):
    "Issue 24 item 7: generate takes a ckpt-NNNNNNN/ folder (it said 'not a dllm_nb checkpoint'); export writes it as final/."
    from dllm_nb.export import main as export
    from dllm_nb.generate import main as generate
    from dllm_nb.trainer import Trainer
    Trainer(cfg_of(tmp_path / 'run', 'data.val_size=0'), quiet=True).fit(stop_at=2)
    ck = tmp_path / 'run' / 'ckpt-0000002'
    capsys.readouterr()
    assert generate(['--checkpoint', str(ck), '--prompt', 'What is 1 + 2?', '--max-new-tokens', '8']) == 0
    direct = capsys.readouterr().out.splitlines()[-1]
    assert export(['--checkpoint', str(ck), '--out', str(tmp_path / 'step2')]) == 0
    assert json.loads((tmp_path / 'step2' / 'dllm_config.json').read_text())['run']['steps_trained'] == 2
    capsys.readouterr()
    assert generate(['--checkpoint', str(tmp_path / 'step2'), '--prompt', 'What is 1 + 2?', '--max-new-tokens', '8']) == 0
    assert capsys.readouterr().out.splitlines()[-1] == direct
    assert export(['--checkpoint', str(tmp_path / 'run'), '--out', str(tmp_path / 'x')]) == 2
    assert 'is not a training checkpoint' in one_error_line(capsys.readouterr().err)


def _torchrun(args, **kw):
    return subprocess.Popen([sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2', '-m',
                             'dllm_nb.train', *args], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, **kw)


def test_torchrun_sigterm_saves_one_checkpoint_at_one_step(tmp_path):
    """Issue 24 item 3: SIGTERM to torchrun (what a scheduler sends) -> both workers stop at the same step, one complete
    checkpoint of it, one line with the resume command (it was a torchrun traceback, no checkpoint). torchrun exits 1."""
    from dllm_nb.checkpoint import list_checkpoints, read_trainer_state
    out = tmp_path / 'run'
    p = _torchrun([f'output_dir={out}', *TINY, 'train.max_steps=100000', 'train.save_every=5'])
    try:
        t = time.time()
        while not list(out.glob('ckpt-*')) and time.time() - t < 120 and p.poll() is None: time.sleep(0.2)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally: p.kill()
    lines = [l for l in re.split(r'[\r\n]', err) if l.startswith('interrupted')]
    assert len(lines) == 1 and lines[0].startswith('interrupted by SIGTERM; last complete checkpoint: '), err[-3000:]
    assert 'resume with: torchrun --nproc_per_node=2 -m dllm_nb.train' in lines[0] and lines[0].endswith('train.resume=auto')
    step = int(re.search(r'ckpt-(\d+);', lines[0]).group(1))
    logged = max(json.loads(l)['step'] for l in (out / 'metrics.jsonl').read_text().splitlines())
    assert list_checkpoints(out)[-1].name == f'ckpt-{step:07d}' and read_trainer_state(out / f'ckpt-{step:07d}')['step'] == step
    assert step == logged                                                                        # saved at the stop, not later
    assert not list(out.glob('.ckpt-*'))                                                         # no half-written folder
    assert p.returncode == 1                                                                     # torchrun's own code


@pytest.mark.parametrize('kind', ['config', 'data'])
def test_torchrun_config_error_printed_once_exit_2(tmp_path, kind):
    """Issue 24 item 4: under torchrun a config or data error is one `error:` line (it was missing in 2 of 6 tries, and
    the data error came after the process group formed), the failed worker exits 2; torchrun itself exits 1."""
    bad = tmp_path / 'd.jsonl'; bad.write_text(json.dumps(ROW) + '\n{"messages": [}\n')
    dataset = 'builtin:nosuch' if kind == 'config' else str(bad)
    p = _torchrun([f'output_dir={tmp_path / "run"}', f'data.dataset={dataset}', *TINY[:5]])
    _, err = p.communicate(timeout=120)
    assert len([l for l in err.splitlines() if l.startswith('error: ')]) == 1, err[-3000:]
    assert (f"error: data.dataset='builtin:nosuch' is not a built-in dataset" if kind == 'config' else
            f"error: {bad}:2: invalid JSON") in err
    assert re.search(r'exitcode\s*:\s*2', err), err[-3000:]                                        # torchrun's summary
    assert p.returncode == 1
    assert re.search(r'exitcode\s*:\s*2', err), err[-3000:]                                        # torchrun's summary
    assert p.returncode == 1


def test_disk_fault_is_one_line_exit_1_and_keeps_the_last_checkpoint(tmp_path):
    """Issue 24 item 6: a checkpoint write that fails (here a file-size limit: EFBIG) is one line with the path and the OS
    error, exit 1, no traceback (it was ~50 lines); the half-written folder is gone, ckpt-2 and metrics.jsonl intact."""
    import resource
    from dllm_nb.checkpoint import list_checkpoints, read_trainer_state
    from dllm_nb.train import main
    out = tmp_path / 'run'
    assert main([f'output_dir={out}', *TINY, '--stop-at', '2']) == 0
    before = _files(out)
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))   # shards are bigger, logs are not
    r = cli(['-m', 'dllm_nb.train', f'output_dir={out}', *TINY, 'train.resume=auto'], preexec_fn=limit)
    assert r.returncode == 1, r.stderr[-2000:]
    line = one_error_line(r)
    assert re.fullmatch(rf"error: {re.escape(str(out))}/ckpt-0000004: File too large \(errno 27\); free space or fix "
                        r"permissions or limits, then resume with: .* train\.resume=auto \(last complete checkpoint: "
                        rf"{re.escape(str(out))}/ckpt-0000002\)", line), line
    assert [p.name for p in list_checkpoints(out)] == ['ckpt-0000002'] and not list(out.glob('.ckpt-*'))
    assert all(before[k] == v for k, v in _files(out).items() if k.startswith('ckpt-0000002'))
    assert read_trainer_state(out / 'ckpt-0000002')['step'] == 2
    assert [r['step'] for r in map(json.loads, (out / 'metrics.jsonl').read_text().splitlines())] == [1, 2, 3, 4]


def test_two_nodes_on_one_machine_train_like_one_process(tmp_path):
    """Issue 24 item 8: `torchrun --nnodes=2 --nproc_per_node=1` (two launchers, c10d rendezvous on localhost) trains the
    same weights as one process on the same global batch (split invariance), to fp32 reduction-order tolerance."""
    import socket
    from dllm_nb.checkpoint import load_checkpoint
    from dllm_nb.trainer import Trainer
    with socket.socket() as s: s.bind(('localhost', 0)); port = s.getsockname()[1]
    over = [*TINY, 'train.max_steps=3', 'train.save_every=0', 'data.val_size=0']
    node = [sys.executable, '-m', 'torch.distributed.run', '--nnodes=2', '--nproc_per_node=1', '--rdzv_backend=c10d',
            f'--rdzv_endpoint=localhost:{port}', '--rdzv_id=two_nodes', '-m', 'dllm_nb.train',
            f'output_dir={tmp_path / "two"}', *over, '--eval-n', '0']
    ps = [subprocess.Popen(node, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT) for _ in '01']
    outs = [p.communicate(timeout=300) for p in ps]
    assert [p.returncode for p in ps] == [0, 0], outs[0][1][-2000:] + outs[1][1][-2000:]
    assert sum('world_size=2' in o for o, _ in outs) == 1                        # one header: rank 0 of two nodes
    two, _ = load_checkpoint(tmp_path / 'two' / 'final')
    one = Trainer(cfg_of(tmp_path / 'one', *over[len(TINY):]), quiet=True); one.fit()
    for (k, a), b in zip(one.model.state_dict().items(), two.state_dict().values()):
        torch.testing.assert_close(b, a, atol=2e-5, rtol=1e-4, msg=k)


def test_second_signal_ends_at_once(tmp_path):
    """Issue 24 item 3: the same signal again (>= 1 s after the first) ends the process at once, without waiting for the
    step's end; a copy within 1 s (a launcher forwarding the scheduler's signal) is merged into the first."""
    code = ("import os, signal, time\nfrom dllm_nb.trainer import DeferredInterrupt\n"
            "with DeferredInterrupt() as intr:\n"
            "    os.kill(os.getpid(), signal.SIGTERM); os.kill(os.getpid(), signal.SIGTERM); time.sleep(0.2)\n"
            "    print('merged', intr.signum, flush=True); time.sleep(1.1)\n"
            "    os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)\n"
            "    print('not reached', flush=True)\n")
    r = cli(['-c', code], timeout=60)
    assert r.returncode == -signal.SIGTERM and r.stdout == 'merged 15\n', (r.returncode, r.stdout, r.stderr[-2000:])


def test_fit_holds_the_folder_lock(tmp_path):
    "The in-process API too: Trainer.fit refuses a folder another process holds, and releases the lock it took."
    from dllm_nb.rundir import holds_lock
    from dllm_nb.config import ConfigError
    from dllm_nb.trainer import Trainer
    p = subprocess.Popen([sys.executable, '-c', f"from dllm_nb.rundir import lock_run_dir; import time; "
                          f"lock_run_dir({str(tmp_path)!r}); print('held', flush=True); time.sleep(60)"],
                         env=ENV, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert p.stdout.readline() == 'held\n'
        tr = Trainer(cfg_of(tmp_path, 'train.max_steps=1'), quiet=True)
        with pytest.raises(ConfigError, match=rf'is in use by another run \(PID {p.pid} on'): tr.fit()
    finally: p.kill(); p.wait()
    assert [r['step'] for r in tr.fit()] == [1] and not holds_lock(tmp_path)


# ---------------------------------------------------------------- issue 55 item 6: a resume on an edited data file
def _chat_file(path, n=40):
    from dllm_nb.builtin import builtin_examples
    return write_rows(path, builtin_examples('addition', 'test', sizes=dict(test=n)))


def _same_size_edit(path):
    "One reply's text changed in place: same size, modification time put back (size and mtime cannot tell)."
    st, raw = path.stat(), path.read_bytes()
    path.write_bytes(raw.replace(b'Answer: ', b'Answr:  ', 1)); os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.read_bytes() != raw and path.stat().st_size == st.st_size


def test_resume_on_an_edited_data_file_is_refused_or_stated(tmp_path, capsys, monkeypatch):
    "A same-size edit, then added rows: exit 2, one line naming the file, nothing re-tokenized nor written; resume_strict=false goes on."
    import datasets.config
    from dllm_nb.train import main
    monkeypatch.setattr(datasets.config, 'HF_DATASETS_CACHE', str(tmp_path / 'hf'))
    data, run = _chat_file(tmp_path / 'chat.jsonl'), tmp_path / 'run'
    args = [f'output_dir={run}', *TINY, f'data.dataset={data}', 'data.train_size=null']   # 32 training rows, then 33
    assert main([*args, '--stop-at', '2']) == 0
    caches = sorted((tmp_path / 'hf' / 'dllm_nb').glob('chat-*')); before = _files(run); capsys.readouterr()
    for edit in (_same_size_edit, lambda p: p.write_text(p.read_text() + json.dumps(ROW) + '\n')):
        edit(data)
        assert main([*args, 'train.resume=auto']) == 2
        line = one_error_line(capsys.readouterr().err)
        assert re.fullmatch(rf"error: {re.escape(str(run))}/ckpt-0000002: data\.dataset={re.escape(str(data))} changed since it was "
                            r"saved \(sha256:[0-9a-f]{12} then, sha256:[0-9a-f]{12} now\), so resuming would train on other rows in "
                            r"another order; restore the file, start over in a new output_dir, or set train\.resume_strict=false "
                            r"to continue on the changed file", line), line
        assert _files(run) == before and sorted((tmp_path / 'hf' / 'dllm_nb').glob('chat-*')) == caches   # refused before tokenizing
    assert main([*args, 'train.resume=auto', 'train.resume_strict=false']) == 0                       # 41 rows now: the sampler goes on
    out = capsys.readouterr().out
    said = [l for l in out.splitlines() if 'train.resume_strict=false: continuing' in l]
    assert len(said) == 1 and f'although data.dataset={data} changed since it was saved' in said[0], out
    assert 'resumed from' in out


def test_resume_drift_check_needs_the_bytes(tmp_path, capsys, monkeypatch):
    "The broken variant: a fingerprint of the size alone lets a same-size edit resume silently, so the test above can fail."
    import dllm_nb.checkpoint as checkpoint, dllm_nb.trainer as trainer
    from dllm_nb.train import main
    size_only = lambda s: str(Path(s).stat().st_size)
    monkeypatch.setattr(checkpoint, 'dataset_fingerprint', size_only); monkeypatch.setattr(trainer, 'dataset_fingerprint', size_only)
    data = _chat_file(tmp_path / 'chat.jsonl')
    args = [f'output_dir={tmp_path / "run"}', *TINY, f'data.dataset={data}']
    assert main([*args, '--stop-at', '2']) == 0
    _same_size_edit(data)
    assert main([*args, 'train.resume=auto', '--stop-at', '3']) == 0 and 'changed since' not in capsys.readouterr().out


# ---------------------------------------------------------------- issue 55 items 1-3: long lives (many interruptions, full disks, readers)
LONG = [*TINY[:-5], 'train.eval_every=4', 'train.log_every=1', 'train.save_every=3', 'train.keep_last=2', 'train.max_steps=12',
        '--eval-n', '0']
TIMING = ('tps', 'cpu_s', 'mem')                                        # what a record measures besides the run's numbers


def fault(step, rank=0, sig='SIGTERM', where='start', restart=0):
    "A fault of tests/scripts/lives.py: `sig` to `rank` as step `step` starts, or inside its checkpoint write ('save')."
    return dict(rank=rank, step=step, signal=sig, where=where, restart=restart)


def records(run):
    "metrics.jsonl without the timing keys: what an interrupted run must log exactly as an uninterrupted one."
    return [{k: v for k, v in r.items() if k not in TIMING} for r in map(json.loads, (Path(run) / 'metrics.jsonl').read_text().splitlines())]


def weights_bytes(run): return (Path(run) / 'final' / 'model.safetensors').read_bytes()


@pytest.fixture(scope='module')
def lives(tmp_path_factory):
    """One process of tests/scripts/lives.py plays every run below, each life forked from it (so the ~6 s of imports is
    paid once): the uninterrupted references, then the same runs preempted five times (and crashed once) on one and on
    two processes, and the positive control (a resume that forgets the schedule and never trims metrics.jsonl)."""
    d = tmp_path_factory.mktemp('lives')
    runs = dict(
        ref1=dict(world=1, lives=[{}]),
        pre1=dict(world=1, lives=[{'faults': [f]} for f in (fault(2), fault(4), fault(6, sig='SIGKILL', where='save'), fault(7),
                                                            fault(9), fault(11))] + [{}]),
        ref2=dict(world=2, lives=[{}]),
        pre2=dict(world=2, lives=[{'faults': f} for f in ([fault(2, 0)], [fault(4, 1)], [fault(5, 1, 'SIGKILL')], [fault(6, 0), fault(6, 1)],
                                                          [fault(8, 0)], [fault(10, 1)])] + [{}]),
        broken=dict(world=1, broken=True, lives=[{'faults': [fault(6, sig='SIGKILL', where='save')]}, {}]))
    for name, r in runs.items(): r['args'] = [f'output_dir={d / name}', *LONG] + (['train.resume=auto'] if 'ref' not in name else [])
    (d / 'plan.json').write_text(json.dumps(dict(runs=list(runs.values()))))
    r = cli([str(ROOT / 'tests' / 'scripts' / 'lives.py'), 'plan', str(d / 'plan.json'), str(d / 'report.json')], timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return d, dict(zip(runs, json.loads((d / 'report.json').read_text())))


@pytest.mark.parametrize('world', [1, 2])
def test_preempted_five_times_ends_bit_identical(lives, world):
    """Issue 55 item 2: SIGTERM at steps 2, 4, 6, 8/7, 10/9 (to one rank or both) and one SIGKILL (inside a checkpoint
    write on one process, mid-step on one of two), each followed by `train.resume=auto`: final/ holds the bytes of the
    uninterrupted run, and metrics.jsonl its records, each step once."""
    d, report = lives
    pre = report[f'pre{world}']
    terms = [l for l in pre if l['codes'] == [143] * world]
    assert len(terms) == 5 and pre[-1]['codes'] == [0] * world, pre
    for l in terms: assert re.fullmatch(rf'interrupted by SIGTERM; last complete checkpoint: {re.escape(str(d))}/pre{world}/ckpt-\d+; '
                                         r'resume with: .* train\.resume=auto', l['said']), l['said']
    assert any(-signal.SIGKILL in l['codes'] for l in pre)
    assert weights_bytes(d / f'pre{world}') == weights_bytes(d / f'ref{world}')
    assert records(d / f'pre{world}') == records(d / f'ref{world}')
    assert [r['step'] for r in records(d / f'pre{world}')] == list(range(13))
    assert not list((d / f'pre{world}').glob('.*tmp'))


def test_preemption_checks_can_fail(lives):
    "The positive control: a resume that restores no learning-rate schedule and keeps the rows a killed life logged fails both checks."
    d, report = lives
    assert [l['codes'] for l in report['broken']] == [[-signal.SIGKILL], [0]]
    assert weights_bytes(d / 'broken') != weights_bytes(d / 'ref1')
    steps = [r['step'] for r in records(d / 'broken')]
    assert steps != list(range(13)) and steps.count(5) == 2                 # steps 4-6 logged twice


def test_torchrun_restarts_after_sigkill_in_a_checkpoint_write(lives, tmp_path):
    """Issue 55 item 1: `torchrun --max-restarts=2`, rank 0 SIGKILLed inside the checkpoint write of step 6 (every file
    written, the folder not yet renamed): torchrun restarts both workers once, `train.resume=auto` takes ckpt-3 (the half
    checkpoint is never listed), and the run ends with the bytes of an uninterrupted 2-process run, each step logged once.
    (A worker killed mid-step, and five SIGTERMs, are the forked lives above: each torchrun life costs ~13 s of CPU.)"""
    d, _ = lives
    out = tmp_path / 'run'
    r = cli(['-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2', '--max-restarts=2',
             str(ROOT / 'tests' / 'scripts' / 'lives.py'), 'worker', json.dumps([fault(6, 0, 'SIGKILL', 'save')]),
             f'output_dir={out}', *LONG, 'train.resume=auto'], timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert re.findall(r'failed \(exitcode: (-?\d+)\) local_rank: (\d)', r.stderr) == [('-9', '0')], r.stderr[-3000:]   # one restart:
    assert 'connectFullMesh failed' not in r.stderr               # the new workers never dial a dead one (distributed.elastic_store)
    assert 'resumed from' in r.stdout and f'{out}/ckpt-0000003 at step 3' in r.stdout
    assert weights_bytes(out) == weights_bytes(d / 'ref2') and records(out) == records(d / 'ref2')
    assert not list(out.glob('.*tmp'))


def test_export_past_a_file_size_limit_leaves_no_half_folder(tmp_path, capsys, monkeypatch, fsize):
    """Issue 55 item 3: `export` whose weights do not fit: exit 1, one line with the folder and the OS error, no folder
    left (it was a SafetensorError traceback and a folder with config.json but no weights)."""
    import dllm_nb.export as X
    from dllm_nb.trainer import Trainer
    Trainer(cfg_of(tmp_path / 'run', 'data.val_size=0'), quiet=True).fit(stop_at=2)
    ck, out = tmp_path / 'run' / 'ckpt-0000002', tmp_path / 'step2'
    capsys.readouterr(); fsize(100_000)                                  # model.safetensors is ~200 KB
    assert X.main(['--checkpoint', str(ck), '--out', str(out)]) == 1
    assert one_error_line(capsys.readouterr().err) == f'error: {out}: File too large (errno 27); free space or choose another --out'
    assert sorted(p.name for p in tmp_path.iterdir()) == ['run']         # no step2/, no .step2.tmp
    @contextlib.contextmanager                                           # the positive control: written in place
    def in_place(folder): Path(folder).mkdir(); yield Path(folder)
    monkeypatch.setattr(X, 'whole_folder', in_place)
    with pytest.raises(Exception, match='File too large'): X.main(['--checkpoint', str(ck), '--out', str(out)])
    assert (out / 'config.json').exists() and not (out / 'model.safetensors').exists()   # a half folder: what the check catches


@pytest.fixture(scope='module')
def whole_run(tmp_path_factory):
    "The weights of the TINY run, uninterrupted."
    from dllm_nb.trainer import Trainer
    tr = Trainer(cfg_of(tmp_path_factory.mktemp('whole')), quiet=True); tr.fit()
    return {k: v.clone() for k, v in tr.model.state_dict().items()}


@pytest.mark.parametrize('where', ['final', 'card', 'metrics'])
def test_a_full_disk_is_one_line_and_the_run_resumes(tmp_path, capsys, monkeypatch, fsize, whole_run, where):
    """Issue 55 item 3: the file-size limit is hit while the run writes final/ (its weights), the model card (rewritten
    with the end-of-run scores) or metrics.jsonl (step 5's record): exit 1, one line with the path, the OS error and the
    resume command; nothing half-written (no final/; the card final/ was written with; whole records of steps 1-4), and
    the resume ends with the weights of the uninterrupted run, each step logged once."""
    import dllm_nb.metrics as M, dllm_nb.train as T
    from dllm_nb.checkpoint import load_checkpoint
    run = tmp_path / 'run'
    args = [f'output_dir={run}', *TINY, '--eval-n', '1']
    def capped(fn, n, when=lambda *a: True):                             # `fn`, with the limit set as it starts
        def wrapped(*a, **k):
            if when(*a): fsize(n(*a) if callable(n) else n)
            return fn(*a, **k)
        return wrapped
    if where == 'final': monkeypatch.setattr(T, 'export_final', capped(T.export_final, 100_000))
    if where == 'card': monkeypatch.setattr(T, 'write_model_card', capped(T.write_model_card, 500))
    if where == 'metrics': monkeypatch.setattr(M.MetricsLogger, 'log', capped(M.MetricsLogger.log, lambda self, *a: self.path.stat().st_size + 50,
                                                                          when=lambda self, step, *a: step == 5))
    capsys.readouterr()
    assert T.main(args) == 1
    path, ck = dict(final=run / 'final', card=run / 'final' / 'README.md', metrics=run / 'metrics.jsonl')[where], 6 if where != 'metrics' else 4
    line = one_error_line(capsys.readouterr().err)
    assert re.fullmatch(rf"error: {re.escape(str(path))}: File too large \(errno 27\); free space or fix permissions or limits, then "
                        rf"resume with: .* train\.resume=auto \(last complete checkpoint: {re.escape(str(run))}/ckpt-{ck:07d}\)", line), line
    steps = [r['step'] for r in map(json.loads, (run / 'metrics.jsonl').read_text().splitlines())]   # every line whole
    assert steps == ([1, 2, 3, 4] if where == 'metrics' else [1, 2, 3, 4, 5, 6])
    if where == 'final': assert not (run / 'final').exists()
    if where == 'card': assert 'not measured' in (run / 'final' / 'README.md').read_text()   # the card of write_final, whole
    assert not list(run.glob('.*tmp')) and not list(run.glob('*/.*tmp'))
    fsize(None); monkeypatch.undo()
    assert T.main([*args, 'train.resume=auto']) == 0
    assert [r['step'] for r in map(json.loads, (run / 'metrics.jsonl').read_text().splitlines())] == [1, 2, 3, 4, 5, 6]
    assert 'test exact match' in (run / 'final' / 'README.md').read_text()
    for k, v in load_checkpoint(run / 'final')[0].state_dict().items(): assert torch.equal(v, whole_run[k]), k


def test_reader_of_a_running_run_gets_the_last_whole_checkpoint(tmp_path, capsys, monkeypatch):
    """Issue 55 item 3: while the run is inside the write of ckpt-4 (every file written, paused before the rename),
    `generate --checkpoint RUN_DIR` runs and a reader of RUN_DIR loads the weights of ckpt-2; once the write ends, those
    of ckpt-4. The positive control: a reader taking the newest folder by its step number would open the one being written."""
    import threading
    import dllm_nb.checkpoint as C
    from dllm_nb.checkpoint import load_checkpoint, newest_checkpoint
    from dllm_nb.generate import main as generate
    from dllm_nb.trainer import Trainer
    run, mid, go, real = tmp_path / 'run', threading.Event(), threading.Event(), C.write_trainer_state
    def paused(ckpt, state):
        real(ckpt, state)
        if state['step'] == 4: mid.set(); assert go.wait(120)
    monkeypatch.setattr(C, 'write_trainer_state', paused)
    weights = lambda p: torch.cat([v.flatten() for v in load_checkpoint(p)[0].state_dict().values()])
    writer = threading.Thread(target=Trainer(cfg_of(run, 'data.val_size=0', 'train.max_steps=4'), quiet=True).fit); writer.start()
    try:
        assert mid.wait(120)
        assert generate(['--checkpoint', str(run), '--prompt', 'What is 1 + 2?', '--max-new-tokens', '4']) == 0
        assert newest_checkpoint(run) == run / 'ckpt-0000002' and torch.equal(weights(run), weights(run / 'ckpt-0000002'))
        naive = max((p.name for p in run.glob('*ckpt-*')), key=lambda n: int(re.search(r'ckpt-(\d+)', n).group(1)))   # by its step
        assert naive == '.ckpt-0000004.tmp' and (run / naive / 'trainer_state.json').exists()
    finally: go.set(); writer.join(120)
    assert newest_checkpoint(run) == run / 'ckpt-0000004' and torch.equal(weights(run), weights(run / 'ckpt-0000004'))
    assert not torch.equal(weights(run / 'ckpt-0000004'), weights(run / 'ckpt-0000002'))


def test_survivor_of_a_killed_peer_says_one_line(tmp_path):
    """A 2-process run whose rank 1 is SIGKILLed mid-run (step 5, after ckpt-3): rank 0's collective fails with gloo's
    'Connection closed/reset by peer'; it exits 4 with one `error:` line naming its rank, the last complete checkpoint and the
    resume command, not a traceback through the trainer (before: exit 1 and gloo's RuntimeError)."""
    plan = dict(runs=[dict(world=2, args=[f'output_dir={tmp_path / "run"}', *LONG],
                           lives=[{'faults': [fault(5, 1, 'SIGKILL')]}])])
    (tmp_path / 'plan.json').write_text(json.dumps(plan))
    r = cli([str(ROOT / 'tests' / 'scripts' / 'lives.py'), 'plan', str(tmp_path / 'plan.json'), str(tmp_path / 'report.json')], timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    life = json.loads((tmp_path / 'report.json').read_text())[0][0]
    assert life['codes'] == [4, -signal.SIGKILL], life
    assert life['said'].startswith('error: rank 0: another process of the group stopped during a collective'), life['said']
    assert 'ckpt-0000003' in life['said'] and life['said'].endswith('train.resume=auto')
    one_error_line((tmp_path / 'report.json.run0.life0.rank0').read_text())
