"""Does it learn? (not a timed test): `python bench/learns.py [--config configs/default.yaml] [--max-steps N] [--n 50]`.

Trains the embedded default config four ways on the built-in tasks, single process, on the same data order:
  * `mdlm`            - `dllm_nb.trainer.Trainer(cfg).fit()` with `dllm.mode=mdlm`;
  * `block_diffusion` - the same with `dllm.mode=block_diffusion` (the default);
  * `idlm`            - the same with `dllm.mode=idlm` (08b_idlm: decoded with the cached I-DLM sampler, anchor + drafts);
  * `autoregressive`  - the same backbone config, same batches (`GlobalBatchSampler`), optimizer, schedule, clipping
                        and step count, trained with the plain causal next-token loss on the response
                        (`dllm_nb.loss.ar_loss`), decoded greedily.
Then prints the test exact-match accuracy of each on `addition` and `reverse` (`dllm_nb.eval.exact_match`, first
`--n` test examples; MDLM: one step per token, blocks of 8; block diffusion: the training block size, steps per block =
block size; I-DLM: `block_size` drafts per pass; all greedy). Extra `key=value` arguments override the config
(e.g. `train.lr=1e-3`); `--modes` runs a subset, e.g. `--modes block_diffusion dllm.scored_blocks=one` for the reference's one-scored-block objective.
"""
import argparse, time

import torch

from dllm_nb.config import load_config
from dllm_nb.eval import exact_match, generate_autoregressive
from dllm_nb.loss import ar_loss, ar_pair_count, ar_pair_mask
from dllm_nb.trainer import Trainer, lr_factor

TASKS = ('addition', 'reverse')
MODES = ('mdlm', 'block_diffusion', 'idlm', 'autoregressive')


def train_autoregressive(cfg, tr: Trainer):
    "AR baseline on the trainer's data, sampler, optimizer settings and schedule; returns the causal backbone."
    from dllm_nb.models import build_backbone, tiny_config
    from dllm_nb.collate import DLLMCollator
    m, t = cfg.model, cfg.train
    torch.manual_seed(cfg.seed)
    model = build_backbone(tiny_config(m.arch, vocab_size=m.vocab_size or len(tr.tokenizer), hidden_size=m.hidden_size,
                                       num_layers=m.num_layers, num_heads=m.num_heads, num_kv_heads=m.num_kv_heads,
                                       intermediate_size=m.intermediate_size or 3 * m.hidden_size)).train()
    coll = DLLMCollator(tr.tokenizer.pad_token_id, tr.tokenizer.eos_token_id)
    opt = torch.optim.AdamW(model.parameters(), lr=t.lr, betas=tuple(t.betas), weight_decay=t.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, t.warmup_steps, t.max_steps, t.min_lr_ratio))
    for step in range(t.max_steps):
        mbs = tr.sampler.micro_batches(step)
        batches = [coll([tr.train_ds[int(i)] for i in mb.indices]) for mb in mbs]
        n_ar = sum(ar_pair_count(b['attention_mask'], b['loss_mask']) for b in batches)   # global denominator
        opt.zero_grad()
        for b in batches:
            logits = model(input_ids=b['input_ids'], attention_mask=b['attention_mask']).logits
            ar_loss(logits, b['input_ids'], ar_pair_mask(b['attention_mask'], b['loss_mask']), n_ar).loss.backward()
        if t.grad_clip: torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
        opt.step(); sched.step()
    return model.eval()


def accuracy(model, tok, n, **kw):
    return {task: exact_match(model, tok, task, 'test', n, **kw)['accuracy'] for task in TASKS}


def main():
    from datasets import disable_progress_bars
    disable_progress_bars()
    ap = argparse.ArgumentParser()
    ap.add_argument('--config', default=None, help='YAML preset (default: the embedded default = configs/default.yaml)')
    ap.add_argument('--max-steps', type=int, default=None, help='override train.max_steps')
    ap.add_argument('--n', type=int, default=50, help='test examples per task')
    ap.add_argument('--output-dir', default='runs/learns')
    ap.add_argument('--modes', default=','.join(MODES),
                    help='comma-separated subset, e.g. block_diffusion (with dllm.scored_blocks=one for the reference)')
    ap.add_argument('overrides', nargs='*')
    args = ap.parse_args()
    extra = list(args.overrides) + ([f'train.max_steps={args.max_steps}'] if args.max_steps else [])
    results = {}
    for mode in args.modes.split(','):
        if mode not in MODES: raise SystemExit(f'unknown mode {mode!r}; use a comma-separated subset of {",".join(MODES)}')
        tic = time.perf_counter()
        dmode = 'mdlm' if mode == 'autoregressive' else mode
        cfg = load_config(args.config, [f'dllm.mode={dmode}', f'output_dir={args.output_dir}/{mode}', *extra], world_size=1)
        tr = Trainer(cfg, quiet=True)
        if mode == 'autoregressive':
            model = train_autoregressive(cfg, tr)
            acc = accuracy(model, tr.tokenizer, args.n, sampler=generate_autoregressive)
            val = ''
        else:
            records = tr.fit()
            model = tr.model.eval()
            acc = accuracy(model, tr.tokenizer, args.n, block_size=cfg.dllm.block_size if mode in ('block_diffusion', 'idlm') else None)
            vals = [r['val_loss'] for r in records if 'val_loss' in r]
            val = f'val loss {vals[0]:.3f} -> {vals[-1]:.3f}' if vals else ''
        results[mode] = acc
        print(f"{mode:>16}: {', '.join(f'{k} {v:.3f}' for k, v in acc.items())}   "
              f"({cfg.train.max_steps} steps, {time.perf_counter() - tic:.0f} s) {val}", flush=True)
    return results


if __name__ == '__main__':
    main()
