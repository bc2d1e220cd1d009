"""One train step of each mode on a fixed global batch of 8, run under torchrun or as a plain process.

    python tests/scripts/split_step.py OUT.pt MICRO_BATCH [modes...]     (a mode, or a VARIANTS name such as bd_lora)

Uses SGD(lr=1) without clipping, so the parameter change of the step equals the gradient. Rank 0 saves
{mode: {'loss': float, 'grads': {name: tensor}}} to OUT.pt (FSDP2 shards gathered with full_tensor()).
"""
import os, sys
os.environ.setdefault('HF_HUB_OFFLINE', '1'); os.environ.setdefault('HF_DATASETS_OFFLINE', '1')
import torch
from dllm_nb.config import load_config
from dllm_nb.distributed import exit_process, init_distributed
from dllm_nb.trainer import Trainer, train_step


def full(t):
    return t.full_tensor() if hasattr(t, 'full_tensor') else t


VARIANTS = {'bd_lora': ('block_diffusion', ['block_diffusion.corruption=mask', 'block_diffusion.shift_logits=true',
                                             'model.lora.rank=4']),   # the adaptation recipe with LoRA adapters
            'idlm_warm': ('idlm', ['idlm.ar_warmup_steps=1'])}                    # step 0 in idlm's AR warm-up (clean copy alone)
PACKED = ['data.packing=greedy', 'data.max_len=96']                    # on $PACK_DATA, a chat file of ragged lengths
FILL = dict(mdlm=['mdlm.response_fill=8'], block_diffusion=[], ar=[], hybrid=['hybrid.response_fill=8'], idlm=[])   # a short EOS tail: short chats share rows
VARIANTS.update({f'{m}_packed': (m, PACKED + FILL[m]) for m in FILL})
VARIANTS.update({f'{m}_ragged': (m, ['data.max_len=96'] + FILL[m]) for m in FILL})   # the same, unpacked
VARIANTS.update(idlm_warm_packed=('idlm', PACKED + ['idlm.ar_warmup_steps=1']),
                idlm_warm_ragged=('idlm', ['data.max_len=96', 'idlm.ar_warmup_steps=1']))


def run(name, micro, dist_info, out_dir):
    mode, extra = VARIANTS.get(name, (name, []))
    over = extra + [f'dllm.mode={mode}', 'model.hidden_size=32', 'model.num_layers=2', 'model.num_heads=2',
            'model.num_kv_heads=1', 'data.train_size=32', 'data.val_size=8', 'train.global_batch_size=8',
            f'train.micro_batch_size={micro}', 'train.max_steps=1', 'train.warmup_steps=0',
            f'output_dir={out_dir}'] + (['dllm.t_sampling=stratified'] if mode == 'mdlm' else [])  # stratified t too
    if mode == 'dflash': over += [f"dflash.target={os.environ['DFLASH_TARGET']}", 'dflash.block_size=4']  # a saved causal LM
    if name.endswith(('_packed', '_ragged')): over += [f"data.dataset={os.environ['PACK_DATA']}"]
    tr = Trainer(load_config(None, over, world_size=dist_info.world_size), dist_info, quiet=True)
    opt = torch.optim.SGD(tr.model.parameters(), lr=1.0)
    before = {n: full(p.detach()).clone() for n, p in tr.model.named_parameters()}
    mbs = tr.sampler.micro_batches(0)
    batches = [tr.micro_batch(m) for m in mbs]
    res = train_step(tr.model, tr.strategy, opt, batches, dist_info.world_size, grad_clip=None)
    grads = {n: before[n] - full(p.detach()) for n, p in tr.model.named_parameters()}
    return dict(loss=res.loss, num_diffusion=res.num_diffusion, grads=grads, rows=sum(len(b.input_ids) for b in batches))


if __name__ == '__main__':
    out, micro, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:] or ['mdlm', 'hybrid', 'block_diffusion', 'idlm', 'ar', 'bd_lora']
    dist_info = init_distributed()
    results = {m: run(m, micro, dist_info, os.path.dirname(out)) for m in modes}
    if dist_info.is_main: torch.save(results, out)
    exit_process(0)
