"""Train an mdlm config once (one process), saving the model state at the AR -> MDLM switch and at the end.

    python -m bench.ablations.mdlm_train_save OUT [key=value ...]      e.g. OUT=/tmp/m seed=1 mdlm.ar_loss_weight=1.0

Config: configs/mdlm_cpu.yaml plus the overrides. Writes OUT/ar.pt (after mdlm.ar_warmup_steps steps), OUT/final.pt
(state dicts of the MaskedDiffusionLM) and the run under OUT/run; prints validation losses and the seconds.
Evaluate the states with bench/ablations/mdlm_decoding.py (tutorials/why, section 5).
"""
import sys, time, torch
from tqdm import tqdm
from datasets import disable_progress_bars; disable_progress_bars()
from dllm_nb.config import load_config
from dllm_nb.trainer import Trainer
out, overrides = sys.argv[1], sys.argv[2:]
cfg = load_config('configs/mdlm_cpu.yaml', [f'output_dir={out}/run', *overrides], world_size=1)
tr = Trainer(cfg, quiet=True)
tic = time.perf_counter()
k = cfg.mdlm.ar_warmup_steps
recs = tr.fit(stop_at=k) if k else []
torch.save(tr.model.state_dict(), f'{out}/ar.pt'); print('AR phase', k, 'steps', time.perf_counter() - tic, flush=True)
val, bar = tr.val_batches(), tqdm(disable=True)
tr.model.train()
for mbs in tr.train_loader(k, cfg.train.max_steps):                 # the rest of fit's loop, without checkpoints
    step = mbs[0].step
    r = tr.fit_step(step, val, 0, bar, mbs)
    if 'val_loss' in r: print(step + 1, 'val', round(r['val_loss'], 4), 'loss', round(r['loss'], 3), 'gn', round(r['grad_norm'], 2), flush=True)
torch.save(tr.model.state_dict(), f'{out}/final.pt')
print('total seconds', time.perf_counter() - tic, flush=True)
