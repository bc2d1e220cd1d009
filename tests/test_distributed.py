"""dllm_nb.distributed: sampler properties in-process (hypothesis), and ONE real 2-process torchrun/gloo launch that
checks reductions, the sampler layout, FSDP2 and DDP gradients against a single-process reference, clipping, an
optimizer step and full-state-dict checkpointing."""
import json, os, subprocess, sys, textwrap
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings, strategies as st

from dllm_nb.distributed import DistInfo, GlobalBatchSampler, shard_global_batch

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- sampler, in-process
@st.composite
def splits(draw):
    "A (num_examples, G, dp, local_bs, grad_acc) with dp * local_bs * grad_acc == G."
    dp, b, acc = draw(st.sampled_from([1, 2, 4, 8])), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    return draw(st.integers(1, 40)), dp * b * acc, dp, b, acc


def assemble(n, G, dp, b, step, seed):
    "{global position: (index, seed)} from every rank's micro-batches of `step`."
    out = {}
    for r in range(dp):
        s = GlobalBatchSampler(n, G, b, DistInfo(rank=r, world_size=dp), seed=seed)
        for mb in s.micro_batches(step):
            assert len(mb.indices) == b
            out.update(zip(mb.positions, zip(mb.indices, mb.seeds(base_seed=7).tolist())))
    return out


@settings(max_examples=40, deadline=None)
@given(splits(), st.integers(0, 30), st.integers(0, 3))
def test_union_is_global_batch_for_any_split(split, step, seed):
    n, G, dp, b, acc = split
    got = assemble(n, G, dp, b, step, seed)
    ref = assemble(n, G, 1, G, step, seed)  # one rank, one micro-batch
    assert got == ref
    assert sorted(got) == list(range(step * G, (step + 1) * G))
    assert [got[p][0] for p in sorted(got)] == GlobalBatchSampler(n, G, G, seed=seed).global_batch(step)


def test_reference_split_list():
    "The split list of dllm_nb.core: (dp, local_bs, grad_acc) for a global batch of 32."
    ref = assemble(50, 32, 1, 32, step=5, seed=0)
    for dp, b, acc in [(2, 16, 1), (4, 4, 2), (8, 1, 4), (2, 2, 8)]:
        assert GlobalBatchSampler(50, 32, b, DistInfo(0, dp)).grad_accum == acc
        assert assemble(50, 32, dp, b, step=5, seed=0) == ref


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 30), st.integers(1, 12), st.integers(0, 5))
def test_every_epoch_visits_every_example_once(n, G, seed):
    s = GlobalBatchSampler(n, G, G, seed=seed)
    stream = sum((s.global_batch(k) for k in range(-(-3 * n // G))), [])
    for e in range(3):
        assert sorted(stream[e * n:(e + 1) * n]) == list(range(n))


def test_shuffle_changes_order_and_seed_matters():
    a, b = GlobalBatchSampler(100, 16, 16, seed=0), GlobalBatchSampler(100, 16, 16, seed=1)
    assert a.global_batch(0) != list(range(16)) and a.global_batch(0) != b.global_batch(0)
    assert GlobalBatchSampler(100, 16, 16, shuffle=False).global_batch(1) == list(range(16, 32))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 8), st.sampled_from([(1, 8), (2, 4), (2, 2), (4, 1), (8, 1)]))
def test_resume_continues_identically_on_any_split(stop, split):
    dp, b = split
    full = GlobalBatchSampler(13, 8, 8, seed=4, max_steps=10)
    want = [s[0].indices for s in full]
    first = GlobalBatchSampler(13, 8, 8, seed=4, max_steps=10)
    it = iter(first)
    for _ in range(stop): next(it)
    state = json.loads(json.dumps(first.state_dict()))  # survives a JSON checkpoint
    resumed = []
    for r in range(dp):
        s = GlobalBatchSampler(13, 8, b, DistInfo(r, dp), seed=4, max_steps=10)
        s.load_state_dict(state)
        resumed.append([sum((m.indices for m in mbs), []) for mbs in s])
    got = [sum((resumed[r][k] for r in range(dp)), []) for k in range(10 - stop)]
    assert got == want[stop:]


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match='multiple of micro_batch_size \\* world_size = 8'):
        shard_global_batch(list(range(12)), DistInfo(0, 2), 4)
    s = GlobalBatchSampler(10, 4, 2)
    with pytest.raises(ValueError, match='num_examples=11'):
        s.load_state_dict(dict(GlobalBatchSampler(11, 4, 2).state_dict()))
    with pytest.raises(ValueError, match='empty'):
        GlobalBatchSampler(0, 4, 2)


# ---------------------------------------------------------------- one real torchrun launch (2 x gloo)
WORKER = textwrap.dedent('''
    import json, sys, torch, torch.nn as nn
    from torch.distributed.tensor import DTensor
    from torch.distributed.fsdp import FSDPModule
    from transformers import LlamaConfig, LlamaForCausalLM
    from dllm_nb.distributed import *

    torch.set_num_threads(1)
    out = sys.argv[1]
    info = init_distributed()
    res = dict(rank=info.rank, world_size=info.world_size, local_rank=info.local_rank, device=str(info.device),
               backend=torch.distributed.get_backend(), is_main=info.is_main)
    res['sum_int'] = all_reduce_sum(info.rank + 1)
    res['sum_list'] = all_reduce_sum([1.5, info.rank])
    res['mean_tensor'] = all_reduce_mean(torch.tensor([2.0 * info.rank, 1.0])).tolist()
    res['bcast'] = broadcast_object(f'from-{info.rank}')
    sampler = GlobalBatchSampler(20, 8, 2, info, seed=3)
    res['micro'] = [[mb.step, mb.micro_batch, mb.indices, mb.positions, mb.seeds().tolist()]
                    for step in range(3) for mb in sampler.micro_batches(step)]

    class Wrapper(nn.Module):
        "A backbone called twice per forward plus an extra module, like the block-diffusion wrapper."
        def __init__(self, backbone):
            super().__init__(); self.backbone, self.self_cond = backbone, nn.Linear(32, 32)
        def forward(self, ids):
            enc = self.backbone(input_ids=ids).logits
            E = self.backbone.get_input_embeddings()
            emb = E(ids) + self.self_cond(enc.softmax(-1) @ E.weight)
            return enc, self.backbone(inputs_embeds=emb).logits

    def make(seed=0):
        torch.manual_seed(seed)
        return Wrapper(LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)))

    g = torch.Generator().manual_seed(1)
    ids, mask = torch.randint(0, 64, (8, 12), generator=g), (torch.rand(8, 12, generator=g) < 0.6).float()

    def loss_sum(model, rows):
        enc, dec = model(ids[rows])
        ce = lambda z: nn.functional.cross_entropy(z[:, :-1].transpose(1, 2), ids[rows][:, 1:], reduction='none')
        return ((ce(enc) + 0.5 * ce(dec)) * mask[rows][:, 1:]).sum()

    def full(t): return t.full_tensor() if isinstance(t, DTensor) else t

    def train_step(model, micro, world):
        "The trainer's recipe: global denominator first, loss * world per micro-batch, sync on the last only."
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        local = int(sum(mask[rows][:, 1:].sum() for rows in micro))
        N = all_reduce_sum(local) if world > 1 else local  # the reference holds the whole batch on every rank
        none_after_first = None
        for m, rows in enumerate(micro):
            set_grad_sync(model, m == len(micro) - 1)
            (loss_sum(model, rows) / N * world).backward()
            if m == 0: none_after_first = all(p.grad is None for p in model.parameters())
        grads = {n: full(p.grad).clone() for n, p in model.named_parameters()}
        norm = clip_grad_norm_(model.parameters(), 0.05)
        opt.step()
        return grads, float(norm), opt, N, none_after_first

    micro = [mb.indices for mb in GlobalBatchSampler(8, 8, 2, info, seed=3).micro_batches(0)]
    ref_model = make()
    ref_grads, ref_norm, ref_opt, ref_N, _ = train_step(ref_model, [list(range(8))], 1)
    ref_sd = {k: v.clone() for k, v in ref_model.state_dict().items()}

    def maxdiff(a, b): return max(float((a[k] - b[k]).abs().max()) for k in b)

    fsdp = apply_fsdp(make(), info)
    layers = find_decoder_layers(fsdp)
    res['fsdp_layers_sharded'] = [isinstance(l, FSDPModule) for l in layers]
    res['fsdp_root_sharded'] = isinstance(fsdp, FSDPModule)
    res['fsdp_all_dtensor'] = all(isinstance(p, DTensor) for p in fsdp.parameters())
    res['self_cond_dtensor'] = isinstance(fsdp.self_cond.weight, DTensor)
    grads, norm, opt, N, none_after_first = train_step(fsdp, micro, info.world_size)
    res['N'], res['ref_N'], res['fsdp_deferred'] = N, ref_N, none_after_first
    res['fsdp_grad_maxdiff'] = maxdiff(grads, ref_grads)
    res['fsdp_norm'], res['ref_norm'] = norm, ref_norm
    sd = full_state_dict(fsdp, opt)
    res['fsdp_state_keys_match'] = (sorted(sd['model']) == sorted(ref_sd)) if info.is_main else None
    res['fsdp_param_maxdiff_after_step'] = maxdiff(sd['model'], ref_sd) if info.is_main else None

    # a fresh sharded model + optimizer loaded from the full checkpoint holds the same values
    sd = broadcast_object(sd)
    twin = apply_fsdp(make(seed=1), info)
    twin_opt = torch.optim.AdamW(twin.parameters(), lr=1e-2)
    load_full_state_dict(twin, sd, twin_opt)
    sd2 = full_state_dict(twin, twin_opt)
    if info.is_main:
        res['reload_param_maxdiff'] = maxdiff(sd2['model'], sd['model'])
        a, b = sd['optim']['state'], sd2['optim']['state']
        res['reload_exp_avg_maxdiff'] = max(float((a[k]['exp_avg'] - b[k]['exp_avg']).abs().max()) for k in a)

    ddp = wrap_model(make(), info, fsdp=False)
    res['ddp_type'] = type(ddp).__name__
    grads, norm, _, _, _ = train_step(ddp, micro, info.world_size)
    res['ddp_grad_maxdiff'] = maxdiff({k.removeprefix('module.'): v for k, v in grads.items()}, ref_grads)
    res['ddp_norm'] = norm
    res['ddp_param_maxdiff_after_step'] = maxdiff({k.removeprefix('module.'): v for k, v in ddp.state_dict().items()}, ref_sd)

    barrier()
    with open(f'{out}/rank{info.rank}.json', 'w') as f: json.dump(res, f)
    exit_process(0)
''')


@pytest.fixture(scope='module')
def torchrun(tmp_path_factory):
    d = tmp_path_factory.mktemp('torchrun')
    (d / 'worker.py').write_text(WORKER)
    env = {k: v for k, v in os.environ.items() if k not in ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'MASTER_ADDR', 'MASTER_PORT')}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), env.get('PYTHONPATH', '')]), OMP_NUM_THREADS='1', CUDA_VISIBLE_DEVICES='')
    cmd = [sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2', str(d / 'worker.py'), str(d)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f'torchrun failed:\n{p.stdout[-4000:]}\n{p.stderr[-6000:]}'
    return [json.loads((d / f'rank{r}.json').read_text()) for r in range(2)]


def test_init_and_reductions(torchrun):
    for r, res in enumerate(torchrun):
        assert (res['rank'], res['world_size'], res['local_rank'], res['is_main']) == (r, 2, r, r == 0)
        assert (res['backend'], res['device']) == ('gloo', 'cpu')
        assert res['sum_int'] == 3 and res['sum_list'] == [3.0, 1.0]
        assert res['mean_tensor'] == [1.0, 1.0]
        assert res['bcast'] == 'from-0'


def test_ranks_split_the_global_batch(torchrun):
    ref = GlobalBatchSampler(20, 8, 8, seed=3)
    for step in range(3):
        got = {}
        for res in torchrun:
            for s, m, idx, pos, seeds in res['micro']:
                if s == step: got.update(zip(pos, zip(idx, seeds)))
        assert sorted(got) == list(range(step * 8, step * 8 + 8))
        mb = ref.micro_batches(step)[0]
        assert [got[p] for p in sorted(got)] == list(zip(mb.indices, mb.seeds().tolist()))


def test_fsdp_gradients_match_single_process(torchrun):
    for res in torchrun:
        assert res['fsdp_root_sharded'] and res['fsdp_layers_sharded'] == [True, True]
        assert res['fsdp_all_dtensor'] and res['self_cond_dtensor']  # the wrapper's extra module is in the root shard
        assert res['N'] == res['ref_N']
        assert res['fsdp_deferred'] is True  # no reduce-scatter after the first (non-final) micro-batch
        assert res['fsdp_grad_maxdiff'] < 1e-5, res['fsdp_grad_maxdiff']
        assert abs(res['fsdp_norm'] - res['ref_norm']) < 1e-5 * max(1, res['ref_norm'])
        assert res['ref_norm'] > 0.05  # so clipping was active and is covered by the comparison below
    main = torchrun[0]
    assert main['fsdp_state_keys_match']
    assert main['fsdp_param_maxdiff_after_step'] < 1e-5, main['fsdp_param_maxdiff_after_step']


def test_fsdp_checkpoint_round_trip(torchrun):
    assert torchrun[0]['reload_param_maxdiff'] == 0.0
    assert torchrun[0]['reload_exp_avg_maxdiff'] == 0.0


def test_ddp_gradients_match_single_process(torchrun):
    for res in torchrun:
        assert res['ddp_type'] == 'DistributedDataParallel'
        assert res['ddp_grad_maxdiff'] < 1e-5, res['ddp_grad_maxdiff']
        assert abs(res['ddp_norm'] - res['ref_norm']) < 1e-5 * max(1, res['ref_norm'])
        assert res['ddp_param_maxdiff_after_step'] < 1e-5


def test_exit_process_flushes_and_keeps_the_code(tmp_path):
    "A torchrun worker ends via os._exit (no interpreter shutdown, pytorch#190489), so buffered output must be flushed first."
    code = ("import sys; from dllm_nb.distributed import exit_process\n"
            "sys.stdout.write('no newline'); sys.stderr.write('err too'); exit_process(3)")
    env = {**os.environ, 'RANK': '0', 'WORLD_SIZE': '1'}
    p = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout, p.stderr.strip()) == (3, 'no newline', 'err too'), p
    p = subprocess.run([sys.executable, '-c', code], env={k: v for k, v in env.items() if k not in ('RANK', 'WORLD_SIZE')},
                       capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout) == (3, 'no newline'), p                 # plain process: a normal sys.exit
