"""The trainer's data loader: worker processes change no batch and no number, also across a resume."""
import torch

from dllm_nb.config import load_config
from dllm_nb.trainer import Trainer


def tiny(out, workers: int, **over):
    o = ['dllm.mode=mdlm', 'model.hidden_size=32', 'model.num_layers=2', 'model.num_heads=2', 'model.num_kv_heads=1',
         'data.train_size=40', 'data.val_size=0', 'train.global_batch_size=8', 'train.micro_batch_size=4',
         'train.max_steps=6', 'train.warmup_steps=1', 'train.eval_every=0', 'train.log_every=1', 'train.save_every=3',
         f'data.num_workers={workers}', f'output_dir={out}'] + [f'{k}={v}' for k, v in over.items()]
    return load_config(None, o, world_size=1)


def run(cfg, seen: dict, stop_at=None):
    "Train, recording per step what the loop was handed: (indices, input_ids, seeds, collated in a worker?) per micro-batch."
    tr = Trainer(cfg, quiet=True)
    step_fn = tr.fit_step
    def spy(step, val, bad, bar, mbs):
        seen[step] = [(m.indices, m.collated['input_ids'].clone(), m.seeds(cfg.seed), m.collated['input_ids'].is_shared())
                      for m in mbs]
        return step_fn(step, val, bad, bar, mbs)
    tr.fit_step = spy
    return tr, tr.fit(stop_at=stop_at)


def test_resume_with_workers_gives_the_same_batches_and_losses(tmp_path):
    ref, part, resumed = {}, {}, {}
    _, full = run(tiny(tmp_path / 'full', 0), ref)                                   # uninterrupted, no workers
    _, first = run(tiny(tmp_path / 'part', 2), part, stop_at=4)                      # 2 workers, "killed" after step 4
    tr, second = run(tiny(tmp_path / 'part', 2, **{'train.resume': 'auto'}), resumed)  # resumes at the step-3 checkpoint
    assert tr.num_workers == 2 and sorted(part) == [0, 1, 2, 3] and sorted(resumed) == [3, 4, 5]
    assert all(w for mbs in [*part.values(), *resumed.values()] for *_, w in mbs)   # collated in worker processes
    assert not any(w for mbs in ref.values() for *_, w in mbs)
    for seen in (part, resumed):
        for step, mbs in seen.items():
            assert len(mbs) == len(ref[step]) == 2
            for (i, x, s, _), (i0, x0, s0, _) in zip(mbs, ref[step]):
                assert i == i0 and torch.equal(x, x0) and torch.equal(s, s0), f'step {step}: another batch'
    loss = lambda recs: [(r['step'], r['loss'], r['grad_norm']) for r in recs]
    assert loss(first) == loss(full[:4]) and loss(second) == loss(full[3:])       # exact, not close


def test_num_workers_is_checked():
    import pytest
    from dllm_nb.config import ConfigError
    with pytest.raises(ConfigError, match=r'data.num_workers=-1 must be >= 0'): load_config(None, ['data.num_workers=-1'])
    assert load_config(None, ['data.num_workers=3']).data.num_workers == 3


def test_bf16_warning_only_on_cpus_without_bf16_units(tmp_path, caplog):
    "model.dtype=bfloat16 on a CPU warns exactly when the CPU lacks bf16 dot products (emulated bf16 is ~8x slower); float32 never does."
    from dllm_nb.core import native_bf16
    for dtype in ('bfloat16', 'float32'):
        caplog.clear()
        with caplog.at_level('WARNING', logger='dllm_nb.trainer'):
            Trainer(tiny(tmp_path / dtype, 0, **{'model.dtype': dtype}), quiet=True)
        warned = any('without bf16 dot products' in r.getMessage() for r in caplog.records)
        assert warned == (dtype == 'bfloat16' and not native_bf16()), (dtype, warned)


def test_resume_inside_idlm_warmup_is_exact(tmp_path, monkeypatch):
    "idlm.ar_warmup_steps=4, preempted after step 4 and resumed at the step-3 checkpoint (inside the warm-up): the same losses."
    from dllm_nb.idlm import IDLMStrategy
    warm = {'dllm.mode': 'idlm', 'idlm.ar_warmup_steps': 4}
    loss = lambda recs: [(r['step'], r['loss'], r['grad_norm']) for r in recs]
    def preempted_and_resumed(name):
        _, first = run(tiny(tmp_path / name, 0, **warm), {}, stop_at=4)
        _, second = run(tiny(tmp_path / name, 0, **warm, **{'train.resume': 'auto'}), {})
        return first, second
    _, full = run(tiny(tmp_path / 'full', 0, **warm), {})
    first, second = preempted_and_resumed('part')
    assert loss(first) == loss(full[:4]) and loss(second) == loss(full[3:])       # exact, not close
    assert full[3]['loss'] < full[4]['loss']                                      # step 4 is the first with both terms
    calls = {}                                                                    # control: a phase that counts calls
    def counted(self, batch):                                                     # (2 micro-batches a step) restarts
        calls[id(self)] = calls.get(id(self), -1) + 1                            # at 0 in the resumed process
        return batch.step is not None and calls[id(self)] // 2 < self.settings.ar_warmup_steps
    monkeypatch.setattr(IDLMStrategy, 'ar_phase', counted)
    first, second = preempted_and_resumed('broken')
    assert loss(first) == loss(full[:4]) and loss(second) != loss(full[3:])


def test_a_run_whose_folder_is_replaced_stops_without_writing(tmp_path):
    "`rm -r` of a live run's folder and a new run at the same path: the old run writes no metrics line or checkpoint into it."
    import shutil
    from dllm_nb.rundir import LOCK_FILE, RunDirLost
    out = tmp_path / 'run'
    tr = Trainer(tiny(out, 0), quiet=True)
    step_fn = tr.fit_step
    def replace_then_step(step, val, bad, bar, mbs):
        if step == 1:
            shutil.rmtree(out); out.mkdir(); (out / LOCK_FILE).write_text('{"pid": 1}')    # the new run's folder
        return step_fn(step, val, bad, bar, mbs)
    tr.fit_step = replace_then_step
    try:
        tr.fit()
        raise AssertionError('the run went on writing into a folder that is not its own')
    except RunDirLost as e:
        assert 'was replaced (another lock file) while this run held it' in str(e), e
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE] and (out / LOCK_FILE).read_text() == '{"pid": 1}'
