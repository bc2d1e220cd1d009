"""Throughput of `DLLMCollator` vs `transformers.DataCollatorWithPadding` (a benchmark, not a test).

    python -m bench.ablations.collate [--n 10000] [--batch-size 32] [--repeats 3]

Both collate the same deterministic 10k tokenized examples (prompt 10-120 tokens, response 5-250 tokens, random ids
in a 64-token vocabulary) in batches of 32, from Python lists (what a `datasets` map without a tensor format yields).
`DataCollatorWithPadding` gets `input_ids` + `attention_mask` (it cannot pad a `loss_mask`); `DLLMCollator` gets
`input_ids` + `loss_mask` + `attention_mask` and does more: block fill, loss mask, and in response-window mode the
single-turn guard. Each number is the best of `--repeats` passes over all examples, single-threaded torch.
"""
import argparse, random

from tokenizers import Tokenizer, models
from transformers import DataCollatorWithPadding, PreTrainedTokenizerFast

from bench.common import best_of, one_thread
from dllm_nb.collate import DLLMCollator

VOCAB = 64


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    "A WordLevel tokenizer over `t0..t63` plus `[PAD]` (id 64) and `[EOS]` (id 65): only its pad logic is used."
    vocab = {f't{i}': i for i in range(VOCAB)} | {'[PAD]': VOCAB, '[EOS]': VOCAB + 1, '[UNK]': VOCAB + 2}
    tok = Tokenizer(models.WordLevel(vocab, unk_token='[UNK]'))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token='[PAD]', eos_token='[EOS]', unk_token='[UNK]')


def make_examples(n: int, seed: int = 0) -> list[dict]:
    "Deterministic tokenized examples: prompt 10-120 tokens (unsupervised) then response 5-250 tokens (supervised)."
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        p, r = rng.randint(10, 120), rng.randint(5, 250)
        out.append(dict(input_ids=[rng.randrange(VOCAB) for _ in range(p + r)], loss_mask=[0] * p + [1] * r,
                        attention_mask=[1] * (p + r)))
    return out


def samples_per_s(collate, examples: list[dict], bs: int, repeats: int) -> float:
    "Best-of-`repeats` throughput of `collate` over all of `examples` in batches of `bs`."
    def once():
        for i in range(0, len(examples), bs): collate(examples[i:i + bs])
    return len(examples) / best_of(once, repeats, 'wall')[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--n', type=int, default=10_000)
    ap.add_argument('--batch-size', type=int, default=32)
    ap.add_argument('--repeats', type=int, default=3)
    args = ap.parse_args()
    one_thread()
    tok, examples = tiny_tokenizer(), make_examples(args.n)
    hf_examples = [dict(input_ids=e['input_ids'], attention_mask=e['attention_mask']) for e in examples]
    n_tok = sum(len(e['input_ids']) for e in examples)
    print(f"{args.n} examples, {n_tok / args.n:.1f} tokens/example on average, batch size {args.batch_size}, "
          f"best of {args.repeats}, torch threads 1")
    hf = samples_per_s(DataCollatorWithPadding(tok, return_tensors='pt'), hf_examples, args.batch_size, args.repeats)
    print(f"{'transformers.DataCollatorWithPadding':58s} {hf:10.0f} samples/s")
    ours = dict(plain=DLLMCollator(tok.pad_token_id, tok.eos_token_id, block_size=32, pad_seq_len_divisible=64),
                response_window=DLLMCollator(tok.pad_token_id, tok.eos_token_id, block_size=32,
                                             pad_seq_len_divisible=64, response_window=True))
    for name, col in ours.items():
        sps = samples_per_s(col, examples, args.batch_size, args.repeats)
        print(f"{'DLLMCollator ' + name + ' (block_size=32, divisible=64)':58s} {sps:10.0f} samples/s"
              f"   ratio vs HF {sps / hf:5.2f}")


if __name__ == '__main__':
    main()
