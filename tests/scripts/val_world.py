"""Validation loss of a fresh tiny model on 1 or N processes (torchrun), plus the worker's safety settings.

usage: python tests/scripts/val_world.py OUT.json [overrides...]; rank 0 writes {val_loss, val_tokens, pdeathsig, timeout_s}.
"""
import ctypes, json, sys
import torch
from dllm_nb.config import load_config
from dllm_nb.distributed import exit_process, init_distributed
from dllm_nb.trainer import Trainer, validate

out, overrides = sys.argv[1], sys.argv[2:]
cfg = load_config(None, overrides)
info = init_distributed(device='cpu', timeout_s=cfg.train.dist_timeout_s)
tr = Trainer(cfg, info, quiet=True)
res = validate(tr.model, tr.strategy, tr.val_batches())
sig = ctypes.c_int(0)
ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0)                 # 2 = PR_GET_PDEATHSIG
try:                                                                   # private API: best effort
    from torch.distributed.distributed_c10d import _get_default_group
    timeout = _get_default_group()._get_backend(torch.device('cpu')).options._timeout.total_seconds()
except Exception: timeout = None
if info.is_main:
    with open(out, 'w') as f: json.dump(dict(res, pdeathsig=sig.value, timeout_s=timeout), f)
exit_process(0)
