"""End-to-end trainer checks that notebooks do badly: torchrun processes, the CLI, resume under FSDP2, bad input.

torchrun launches cost ~10 s each on a 2-core CPU; keep their number small.
"""
import json, os, re, subprocess, sys
from pathlib import Path

import pytest
import torch

from packing_data import ragged_chats

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(ROOT), 'TOKENIZERS_PARALLELISM': 'false'}
TORCHRUN = [sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2']
TINY = ['model.hidden_size=32', 'model.num_layers=2', 'model.num_heads=2', 'model.num_kv_heads=1',
        'data.train_size=48', 'data.val_size=8', 'train.global_batch_size=8', 'train.micro_batch_size=2',
        'train.warmup_steps=1', 'train.eval_every=2', 'train.eval_batches=1', 'train.log_every=1',
        'train.save_every=2', 'train.keep_last=2']


def run(cmd, timeout=600):
    r = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert r.returncode == 0, f'{cmd}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-5000:]}'
    return r


def _close(a, b, rel=1e-5, abs_=1e-7):
    return (a - b).abs().max().item() <= rel * b.abs().max().item() + abs_


PACKED_MODES = ('mdlm', 'block_diffusion', 'ar', 'hybrid', 'idlm')
PACKED = [f'{m}_{k}' for m in PACKED_MODES + ('idlm_warm',) for k in ('packed', 'ragged')]


def test_split_invariance_across_processes(tmp_path):
    """(1 proc, acc 1, bs 8) == (1 proc, acc 4, bs 2) == (2 torchrun procs with FSDP2, acc 2, bs 2), every mode (+ LoRA);
    with data.packing=greedy on ragged chats too, where the packed step also equals the unpacked one."""
    script, modes = str(ROOT / 'tests' / 'scripts' / 'split_step.py'), ['mdlm', 'hybrid', 'block_diffusion', 'idlm', 'ar', 'bd_lora',
                                                                         'idlm_warm']
    ENV['PACK_DATA'] = str(ragged_chats(tmp_path / 'ragged.jsonl'))
    run([sys.executable, script, str(tmp_path / 'a.pt'), '8'] + modes + PACKED)
    run([sys.executable, script, str(tmp_path / 'b.pt'), '2'] + modes + PACKED)
    run(TORCHRUN + [script, str(tmp_path / 'c.pt'), '2'] + modes + PACKED)
    del ENV['PACK_DATA']
    a, b, c = (torch.load(tmp_path / f'{k}.pt') for k in 'abc')
    assert a['idlm_warm']['loss'] != a['idlm']['loss']                          # the warm-up step is another loss (CE_clean alone)
    for m in PACKED_MODES + ('idlm_warm',):                                      # packing changes no number
        assert a[f'{m}_packed']['num_diffusion'] == a[f'{m}_ragged']['num_diffusion'], m
        assert abs(a[f'{m}_packed']['loss'] - a[f'{m}_ragged']['loss']) <= 1e-6 * abs(a[f'{m}_ragged']['loss']), m
        assert a[f'{m}_packed']['rows'] < a[f'{m}_ragged']['rows'], m            # and several examples did share a row
    for mode in modes + PACKED:
        for other in (b, c):
            assert other[mode]['num_diffusion'] == a[mode]['num_diffusion'], mode
            assert abs(other[mode]['loss'] - a[mode]['loss']) <= 1e-5 * abs(a[mode]['loss']), mode
            assert other[mode]['grads'].keys() == a[mode]['grads'].keys()
            bad = [n for n, g in a[mode]['grads'].items() if not _close(other[mode]['grads'][n], g)]
            assert not bad, f'{mode}: gradients differ for {bad[:5]}'
    moved = {n for n, g in a['bd_lora']['grads'].items() if g.abs().max() > 0}    # LoRA: only what should train moves
    assert moved and all('lora_' in n or n.startswith(('added_tokens.', 'self_cond.')) for n in moved), sorted(moved)[:5]
    assert any('lora_B' in n for n in moved)


def test_torchrun_cli_checkpoints_and_resume(tmp_path):
    "2-process run to the end vs the same run preempted at step 2 and resumed: same losses; loadable export."
    full, part = tmp_path / 'full', tmp_path / 'part'
    args = ['-m', 'dllm_nb.train', '--config', 'configs/default.yaml', 'train.max_steps=4'] + TINY
    r = run(TORCHRUN + args + [f'output_dir={full}'])
    assert 'validation loss' in r.stdout
    run(TORCHRUN + args + [f'output_dir={part}', '--stop-at', '2'])
    assert sorted(p.name for p in part.iterdir() if p.name.startswith('ckpt')) == ['ckpt-0000002']
    r = run(TORCHRUN + args + [f'output_dir={part}', 'train.resume=auto'])
    summary = next(l for l in r.stdout.splitlines() if l.startswith('validation loss'))
    assert '(step 0) ->' in summary and '(step 4)' in summary, summary   # the whole run, not the resumed tail
    losses = lambda d: {r['step']: r['loss'] for r in map(json.loads, (d / 'metrics.jsonl').read_text().splitlines()) if 'loss' in r}
    lf, lp = losses(full), losses(part)
    assert [lf[s] for s in (3, 4)] == pytest.approx([lp[s] for s in (3, 4)], rel=1e-6, abs=0)
    assert sorted(p.name for p in full.iterdir() if p.name.startswith('ckpt')) == ['ckpt-0000002', 'ckpt-0000004']
    assert (full / 'loss_curve.png').exists()
    card = (full / 'final' / 'README.md').read_text()                    # the model card, from the run's own data
    assert str(tmp_path) not in card and '--checkpoint . --prompt' in card   # an absolute output_dir: shown as '.'
    from dllm_nb.builtin import task_examples
    for task in ('addition', 'reverse'):
        first = task_examples(task, 'test')[0]['messages'][0]['content']
        assert f"| `{first}` |" in card                                  # a test prompt of each task, with its result
        assert re.search(rf"\| `{task}` \| .+ \| \d\.\d\d \(\d+/100\) \|", card), card  # measured exact match
    from transformers import AutoModelForCausalLM
    from dllm_nb.block_diffusion import BlockDiffusionLM
    BlockDiffusionLM.from_pretrained(full / 'final')
    AutoModelForCausalLM.from_pretrained(full / 'final')


def test_bad_config_fails_before_work(tmp_path):
    r = subprocess.run([sys.executable, '-m', 'dllm_nb.train', 'train.max_step=3', 'block_diffusion.block_size=0',
                        f'output_dir={tmp_path}'], env=ENV, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2
    assert 'train.max_step' in r.stderr and 'max_steps' in r.stderr   # names the key and suggests the right one
    assert not any(tmp_path.iterdir())


def test_bad_data_fails_before_training(tmp_path):
    data = tmp_path / 'bad.jsonl'
    rows = [{'messages': [{'role': 'user', 'content': 'hi'}, {'role': 'assistant', 'content': 'hello'}]}] * 20
    rows[7] = {'messages': [{'role': 'user', 'content': 'hi'}, {'role': 'bot', 'content': 'hello'}]}
    data.write_text('\n'.join(json.dumps(r) for r in rows))
    r = subprocess.run([sys.executable, '-m', 'dllm_nb.train', f'data.dataset={data}', 'data.val_size=2',
                        f'output_dir={tmp_path / "run"}'] + TINY[:4], env=ENV, capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode != 0
    assert 'example 7' in r.stderr and 'bot' in r.stderr
    assert not (tmp_path / 'run' / 'metrics.jsonl').exists()


def test_bf16_autocast_under_ddp_but_not_fsdp():
    "model.dtype=bfloat16: autocast on one process and under DDP; FSDP2's MixedPrecisionPolicy does it when sharded."
    from types import SimpleNamespace as NS
    from dllm_nb.distributed import DistInfo
    from dllm_nb.trainer import Trainer
    def ctx(world, fsdp, dtype=torch.bfloat16):
        return Trainer.autocast(NS(mp_dtype=dtype, dist=DistInfo(world_size=world), cfg=NS(train=NS(fsdp=fsdp))))
    assert isinstance(ctx(1, True), torch.autocast) and isinstance(ctx(2, False), torch.autocast)
    assert not isinstance(ctx(2, True), torch.autocast) and not isinstance(ctx(1, True, None), torch.autocast)


def test_resume_check_ignores_other_modes_sections():
    "A block_diffusion run's resume is not refused over other modes' sections it never reads; its own keys still count."
    import dataclasses
    from dllm_nb.config import load_config
    from dllm_nb.checkpoint import config_changes
    old = load_config('default', world_size=1)
    other = dataclasses.replace(old, sections={**old.sections,                                      # (load_config refuses
        'mdlm': dataclasses.replace(old.mdlm, ar_loss_weight=1.0), 'hybrid': dataclasses.replace(old.hybrid, block_size=8),
        'idlm': dataclasses.replace(old.idlm, block_size=3), 'dflash': dataclasses.replace(old.dflash, block_size=4)})
    assert (other.hybrid.block_size, old.hybrid.block_size) == (8, 4)     # these; an older checkpoint may hold them)
    assert config_changes(old, other) == []
    assert config_changes(old, load_config('default', ['block_diffusion.block_size=8'], world_size=1)) == \
        ['block_diffusion.block_size: 4 -> 8']
    idlm = load_config('default', ['dllm.mode=idlm'], world_size=1)
    assert config_changes(idlm, load_config('default', ['dllm.mode=idlm', 'idlm.block_size=2'], world_size=1)) == \
        ['idlm.block_size: 1 -> 2']


def _tiny_base(path):
    "A small pretrained-style checkpoint folder (random weights + the shipped tokenizer) for model.path."
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.models import build_backbone, tiny_config
    tok = load_tokenizer()
    torch.manual_seed(0)
    build_backbone(tiny_config(vocab_size=len(tok), hidden_size=32, num_heads=2, num_kv_heads=1)).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_ar_mode_exports_a_plain_causal_lm(tmp_path):
    "dllm.mode=ar trains the backbone causally; final/ loads and decodes with plain transformers; generate uses it."
    from transformers import AutoModelForCausalLM
    from dllm_nb.tokenizer import load_tokenizer
    out = tmp_path / 'ar'
    run([sys.executable, '-m', 'dllm_nb.train', '--config', 'configs/default.yaml', 'dllm.mode=ar', 'train.max_steps=2',
         f'output_dir={out}', '--eval-n', '0'] + TINY)
    assert json.loads((out / 'final' / 'dllm_config.json').read_text())['model_class'] == 'CausalLM'
    lm, tok = AutoModelForCausalLM.from_pretrained(out / 'final').eval(), load_tokenizer(out / 'final')
    ids = tok('What is 1 + 2?', return_tensors='pt')['input_ids']
    assert lm.generate(ids, max_new_tokens=3, do_sample=False).shape[1] == ids.shape[1] + 3
    r = run([sys.executable, '-m', 'dllm_nb.generate', '--checkpoint', str(out / 'final'), '--prompt', 'What is 1 + 2?',
             '--max-new-tokens', '4'])
    assert r.stdout.startswith('What is 1 + 2? -> ')


def test_lora_resume_export_and_bad_targets(tmp_path):
    "LoRA: a preempted + resumed run equals the uninterrupted one; final/ is the adapter; the merged export has the same logits."
    base = _tiny_base(tmp_path / 'base')
    args = [sys.executable, '-m', 'dllm_nb.train', '--config', 'configs/default.yaml', f'model.path={base}',
            'block_diffusion.corruption=mask', 'block_diffusion.shift_logits=true', 'model.lora.rank=4', 'train.max_steps=4',
            'train.lr=1e-2', '--eval-n', '0'] + TINY
    full, part = tmp_path / 'full', tmp_path / 'part'
    run(args + [f'output_dir={full}'])
    run(args + [f'output_dir={part}', '--stop-at', '2'])
    run(args + [f'output_dir={part}', 'train.resume=auto'])
    losses = lambda d: {r['step']: r['loss'] for r in map(json.loads, (d / 'metrics.jsonl').read_text().splitlines()) if 'loss' in r}
    assert [losses(full)[s] for s in (3, 4)] == pytest.approx([losses(part)[s] for s in (3, 4)], rel=1e-6, abs=0)
    assert sorted(p.name for p in (full / 'final').iterdir() if p.suffix == '.safetensors') == ['adapter.safetensors']
    run([sys.executable, '-m', 'dllm_nb.export', '--checkpoint', str(full / 'final'), '--out', str(tmp_path / 'merged')])
    from transformers import AutoModelForCausalLM
    from dllm_nb.checkpoint import load_checkpoint
    model, tok = load_checkpoint(full / 'final')
    assert model.lora['rank'] == 4
    plain = AutoModelForCausalLM.from_pretrained(tmp_path / 'merged').eval()
    ids = torch.tensor([[1, 5, tok.mask_token_id, 9, 12]])
    with torch.no_grad(): assert (model.backbone(ids).logits - plain(ids).logits).abs().max() < 1e-5
    bad = subprocess.run(args + [f'output_dir={tmp_path / "bad"}', 'model.lora.target_modules=query,v_proj'], env=ENV,
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert bad.returncode == 2, bad.stderr[-2000:]
    err = [l for l in bad.stderr.splitlines() if l.strip()]
    assert err[-1].startswith('error: ') and "['query'] match no Linear" in err[-1] and 'Traceback' not in bad.stderr, err


def test_second_make_train_is_one_line_and_exit_2(tmp_path):
    "`make train` into a folder that holds a run: one error line in make's words, exit 2, torchrun never starts."
    run_dir = tmp_path / 'run'; run_dir.mkdir(); (run_dir / 'metrics.jsonl').write_text('{"step": 0}\n')
    r = subprocess.run(['make', '-o', 'install', 'train', f'PY={sys.executable}', f'RUN={run_dir}'], env=ENV,
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [l for l in r.stderr.splitlines() if not re.match(r'make(\[\d+\])?: \*\*\*', l)]   # make's own "Error 2" trailer (make[1] under make test)
    assert len(lines) == 1 and 'Traceback' not in r.stderr, r.stderr
    assert lines[0].startswith(f"error: output_dir='{run_dir}' already holds a run (metrics.jsonl); "), lines[0]
    for how in (f'make train-resume RUN={run_dir}', 'make train RUN=runs/other', 'ARGS=train.overwrite=true'):
        assert how in lines[0], how
    assert 'torch.distributed.run' not in r.stdout                      # the launch line never ran
    assert [p.name for p in run_dir.iterdir()] == ['metrics.jsonl']


def test_check_writes_nothing(tmp_path):
    "`--check` on a fresh folder: exit 0 and the folder is not even created; on a used one the CLI words, exit 2."
    r = subprocess.run([sys.executable, '-m', 'dllm_nb.train', '--check', '--config', 'default',
                        f'output_dir={tmp_path / "new"}'], env=ENV, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 0 and 'checked:' in r.stdout and not (tmp_path / 'new').exists(), r.stderr
    (tmp_path / 'new').mkdir(); (tmp_path / 'new' / 'config.yaml').write_text('')
    r = subprocess.run([sys.executable, '-m', 'dllm_nb.train', '--check', f'output_dir={tmp_path / "new"}'], env=ENV,
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 2 and r.stderr.count('\n') == 1 and 'resume it with train.resume=auto' in r.stderr, r.stderr
