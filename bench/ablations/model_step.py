"""Time of one training forward+backward per dLLM mode vs a plain causal-LM step, same backbone, same tokens.

    python -m bench.ablations.model_step [--batch 16] [--hidden 128] [--layers 4] [--reps 5]

Prints each mode's time and its ratio to the causal-LM step, with a token-count FLOP estimate for
block_diffusion: the encoder pass over S clean tokens (fwd+bwd), a no-grad canvas pass over R tokens (fwd),
and a canvas pass over R tokens (fwd+bwd): (3S + R + 3R) / 3S of the causal step, ignoring attention's S+R keys.
"""
import argparse, os, statistics
os.environ.setdefault('HF_HUB_OFFLINE', '1'); os.environ.setdefault('HF_DATASETS_OFFLINE', '1')
import torch
import torch.nn.functional as F
from bench.common import one_thread, repeat
from dllm_nb.collate import DLLMCollator
from dllm_nb.core import sample_seeds
from dllm_nb.builtin import builtin_examples
from dllm_nb.data import tokenize_example
from dllm_nb.tokenizer import load_tokenizer
from dllm_nb.hybrid import HybridDiffusionLM
from dllm_nb.models import build_backbone, tiny_config
from dllm_nb.block_diffusion import BlockDiffusionLM
from dllm_nb.mdlm import MaskedDiffusionLM
from dllm_nb.stages import Batch
from dllm_nb.modes import get_strategy


def timeit(fn, reps):
    "Median wall seconds of `reps` calls after one warm-up."
    return statistics.median(repeat(fn, reps, warmup=1)[0])


def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--batch', type=int, default=16); ap.add_argument('--hidden', type=int, default=128)
    ap.add_argument('--layers', type=int, default=4); ap.add_argument('--reps', type=int, default=5); ap.add_argument('--threads', type=int, default=1)
    a = ap.parse_args(); one_thread(a.threads)
    tok = load_tokenizer()
    exs = [tokenize_example(e['messages'], tok) for e in builtin_examples('default', 'validation')[:a.batch]]
    conf = tiny_config('llama', vocab_size=len(tok), hidden_size=a.hidden, num_layers=a.layers, num_heads=4, num_kv_heads=2)
    seeds = sample_seeds(0, a.batch, 0, 1, 0, a.batch)
    print(f'batch {a.batch}, tiny Llama hidden {a.hidden} x {a.layers} layers, vocab {len(tok)}, {a.threads} thread(s), median of {a.reps}')

    torch.manual_seed(0); bb = build_backbone(conf)
    plain = DLLMCollator(tok.pad_token_id, tok.eos_token_id)(exs)
    def causal():
        logits = bb(input_ids=plain['input_ids'], attention_mask=plain['attention_mask']).logits
        F.cross_entropy(logits[:, :-1].flatten(0, 1), plain['input_ids'][:, 1:].flatten(), reduction='none')[plain['attention_mask'][:, 1:].flatten().bool()].mean().backward()
    base = timeit(causal, a.reps)
    S = plain['input_ids'].shape[1]
    print(f'{"causal LM":>16}: {base * 1e3:8.1f} ms   1.00x   (S={S})')

    for mode in ('mdlm', 'hybrid', 'block_diffusion'):
        torch.manual_seed(0); bb = build_backbone(conf)
        model = {'block_diffusion': lambda: BlockDiffusionLM(bb), 'mdlm': lambda: MaskedDiffusionLM(bb),
                 'hybrid': lambda: HybridDiffusionLM(bb, block_size=4, mask_token_id=tok.mask_token_id)}[mode]()
        strat = get_strategy(mode, **(dict(vocab_size=len(tok), block_size=4, pad_token_id=tok.pad_token_id) if mode == 'block_diffusion'
                                      else dict(mask_token_id=tok.mask_token_id, **({} if mode == 'mdlm' else dict(block_size=4)))))
        coll = DLLMCollator(tok.pad_token_id, tok.eos_token_id, block_size=None if mode == 'mdlm' else 4, response_window=mode == 'block_diffusion')
        b = strat.prepare(Batch.from_collated(coll(exs), seeds))
        counts = strat.denominators([b])
        t = timeit(lambda: strat.loss(model, b, counts).loss.backward(), a.reps)
        extra = ''
        if mode == 'block_diffusion':
            Sb, R = b.batch.input_ids.shape[1], b.window.canvas_ids.shape[1]
            extra = f'   (S={Sb}, R={R}; token-FLOP estimate (3S+4R)/3S = {(3 * Sb + 4 * R) / (3 * Sb):.2f}x)'
        if mode == 'hybrid': extra = '   (one pass over [x_t ; x_0], 2S tokens: noisy copy block-wise, clean copy causal; estimate 2.00x)'
        if mode == 'mdlm': extra = '   (one bidirectional pass over S; estimate 1.00x)'
        print(f'{mode:>16}: {t * 1e3:8.1f} ms   {t / base:.2f}x{extra}')


if __name__ == '__main__': main()
