"""What a NextTokenHead would gain from more of the target than its last state (not a timed test).

    python bench/head_ablation.py --target <SmolLM2 .gguf> --data runs/smollm2_corpus_all.jsonl --rows 2000 [--seeds 0 1]

The head `python -m dllm_nb.dflash head` trains reads the target's last hidden state at t (after its final norm) and
the token at t + 1, and proposes t + 2 through the target's LM head rows (a draft vocabulary of 8,192 tokens). Every
variant here is that head trained the same way (3 epochs over the positions, batches of 256, AdamW 1e-3 one-cycle, MLP
width 1024) on the same `--rows` rows drawn (seeded) from the distilled file's training rows (all but its last
`--val-rows`, as the head command holds out), and scored by top-1 on the target's greedy answers to the held-out
prompts (`--prompts`, cached in `--refs` as bench/dflash_ablation.py writes them):

  head        the shipped design
  +soft       + a KL term to the target's own distribution for t + 2 (its LM head over the draft vocabulary, applied to
              the target's state at t + 1, which the same pass computed): soft labels instead of the greedy token alone
  +layers     + the outputs of the target layers `--layers` (indices into `hidden_states`: 0 = the embeddings, N = the
              last layer before the final norm), each RMS-normed with a learned gain, concatenated into the MLP's input
  +both       + both
  rows        the head trained on whole rows (4 a batch, 4 epochs): the batching the next variant needs
  +attention  `rows` with one causal self-attention layer over the answer's positions before the MLP (EAGLE's decoder
              layer; no positional encoding), the head's input projected to the hidden size first

The target's states of the sampled rows are computed once (one pass per row, batched) and kept in `--features`.
Prints one row per variant: top-1 per seed, the mean, the difference to `head`, and the variant's parameters.
"""
import argparse, random, sys, time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm.auto import tqdm

from common import one_thread, refs_for


def states(target, P, R, layers, batch_size=32):
    "Per position t >= prompt's last token with t + 2 in the row: the final state, the chosen `layers`' outputs, token t+1, token t+2, row span."
    from dllm_nb.dflash import pad_rows
    rows = [(list(p), list(r)) for p, r in zip(P, R) if len(p) and len(r) >= 2]
    order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]) + len(rows[i][1]))
    body = target.get_decoder()
    out = dict(h=[], tokens=[], next=[], **{f'l{l}': [] for l in layers})
    spans, n = [], 0
    for s in tqdm(range(0, len(order), batch_size), desc='target states', unit='batch'):
        seqs = [rows[i][0] + rows[i][1] for i in order[s:s + batch_size]]
        ids, am = pad_rows(seqs, 'cpu')
        with torch.no_grad(): o = body(input_ids=ids, attention_mask=am, output_hidden_states=True)
        for b, i in enumerate(order[s:s + batch_size]):
            p, e = len(rows[i][0]), len(seqs[b])
            sl = slice(p - 1, e - 2)
            out['h'].append(o.last_hidden_state[b, sl].half()); out['tokens'].append(ids[b, p:e - 1]); out['next'].append(ids[b, p + 1:e])
            for l in layers: out[f'l{l}'].append(o.hidden_states[l][b, sl].half())
            spans.append((n, e - 1 - p)); n += e - 1 - p
    return dict({k: torch.cat(v) for k, v in out.items()}, spans=torch.tensor(spans))


class Head(nn.Module):
    "The NextTokenHead's MLP (optionally with extra layers' inputs and one causal attention layer), scored through `W`."
    def __init__(self, H, extra, width, attention, E, W):
        super().__init__()
        self.E, self.W, self.attention = E, W, attention
        self.ln = nn.ModuleList(nn.RMSNorm(H, eps=1e-6) for _ in range(extra))
        k = (2 + extra) * H
        if attention:
            self.inp, self.n1, self.qkv, self.o = nn.Linear(k, H), nn.RMSNorm(H, eps=1e-6), nn.Linear(H, 3 * H, bias=False), nn.Linear(H, H, bias=False)
            k = H
        self.fc1, self.fc2, self.norm = nn.Linear(k, width), nn.Linear(width, H), nn.RMSNorm(H, eps=1e-6)

    def forward(self, h, x, ls):                                          # [..., H], [...], [[..., H]] -> [..., H]
        z = torch.cat([h, *(n(l) for n, l in zip(self.ln, ls)), self.E[x]], -1)
        if self.attention:                                                 # z: [B, L, k]
            z = self.inp(z); B, L, H = z.shape; nh = 9 if H % 9 == 0 else 8
            q, k, v = self.qkv(self.n1(z)).view(B, L, 3, nh, H // nh).permute(2, 0, 3, 1, 4)
            z = z + self.o(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, L, H))
        return self.norm(h + self.fc2(F.silu(self.fc1(z))))


def gather(D, j, layers):
    return D['h'][j].float(), D['tokens'][j], [D[f'l{l}'][j].float() for l in layers]


def rows_batch(D, spans, layers):
    "Whole rows, right-padded: `(h, x, ls, y)`, y = -100 at padding."
    L = max(int(n) for _, n in spans)
    j = torch.stack([torch.arange(L).clamp(max=int(n) - 1) + int(s) for s, n in spans])
    real = torch.arange(L)[None] < spans[:, 1:]
    h, x, ls = gather(D, j, layers)
    y = torch.where(real, D['next'][j], -100)
    return h, x, ls, y


def score(m, D, layers, vocab, rows):
    m.eval(); hits = 0
    with torch.no_grad():
        if rows:
            for i in range(0, len(D['spans']), 8):
                h, x, ls, y = rows_batch(D, D['spans'][i:i + 8], layers)
                ok = y != -100; hits += int((vocab[(m(h, x, ls) @ m.W.T).argmax(-1)][ok] == y[ok]).sum())
        else:
            for s in range(0, len(D['next']), 1024):
                j = torch.arange(s, min(s + 1024, len(D['next'])))
                hits += int((vocab[(m(*gather(D, j, layers)) @ m.W.T).argmax(-1)] == D['next'][j]).sum())
    return hits / len(D['next'])


def train(name, D, test, layers, soft, attention, rows, seed, E, W, vocab, tok2head, width=1024):
    if soft and rows: raise ValueError('soft labels are implemented for the position batches only')
    torch.manual_seed(seed); g = torch.Generator().manual_seed(seed)
    m = Head(E.shape[1], len(layers), width, attention, E, W)
    n = len(D['next']); y = tok2head[D['next']]
    nxt = torch.arange(1, n + 1).clamp(max=n - 1)                          # t + 1's state, where t + 1 is in the row
    has_next = torch.ones(n, dtype=torch.bool); has_next[D['spans'][:, 0] + D['spans'][:, 1] - 1] = False
    if rows:
        sp = D['spans'][torch.argsort(D['spans'][:, 1], stable=True)]
        batches, epochs = [sp[i:i + 4] for i in range(0, len(sp), 4)], 4
    else:
        batches, epochs = None, 3
    steps = epochs * (len(batches) if rows else -(-n // 256))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, 1e-3, total_steps=steps, pct_start=0.05)
    tic, bar = time.process_time(), tqdm(total=steps, desc=f'{name} seed {seed}', unit='step')
    for ep in range(epochs):
        m.train()
        order = torch.randperm(len(batches) if rows else n, generator=g)
        for s in (order.tolist() if rows else range(0, n, 256)):
            if rows:
                h, x, ls, yy = rows_batch(D, batches[s], layers); ok = yy != -100
                target = torch.where(ok, tok2head[yy.clamp_min(0)], -100)
            else:
                j = order[s:s + 256]; h, x, ls = gather(D, j, layers); target = y[j]
            z = m(h, x, ls); logits = z @ W.T
            loss = F.cross_entropy(logits.flatten(0, -2), target.flatten(), ignore_index=-100)
            if soft:
                k = j[has_next[j]]; sel = has_next[j]
                ref = (D['h'][nxt[k]].float() @ W.T).log_softmax(-1)
                loss = loss + soft * F.kl_div(logits[sel].log_softmax(-1), ref, log_target=True, reduction='batchmean')
            opt.zero_grad(); loss.backward(); opt.step(); sched.step(); bar.update(1)
    acc = score(m, test, layers, vocab, rows)
    bar.close(); print(f'{name} seed {seed}: top-1 {acc:.4f} ({time.process_time() - tic:.0f} CPU s)', file=sys.stderr)
    return acc, sum(p.numel() for p in m.parameters())


def main():
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.dflash import chat_responses, draft_vocab, load_target, read_prompts
    ap = argparse.ArgumentParser()
    ap.add_argument('--target', required=True)
    ap.add_argument('--data', required=True, help="the distilled chat JSONL the head command trains on")
    ap.add_argument('--rows', type=int, default=2000, help='training rows sampled (seed 0) from all but the last --val-rows')
    ap.add_argument('--val-rows', type=int, default=64)
    ap.add_argument('--layers', default='18,24', help='+layers: hidden_states indices, comma-separated')
    ap.add_argument('--seeds', type=int, nargs='+', default=[0])
    ap.add_argument('--variants', nargs='+', default=['head', '+soft', '+layers', '+both', 'rows', '+attention'])
    ap.add_argument('--prompts', default='shipped:test')
    ap.add_argument('--n-tokens', type=int, default=72, help='target greedy tokens per held-out prompt (72: the --refs cache bench/dflash_ablation.py writes for an 8-token block)')
    ap.add_argument('--refs', default='runs/dflash_refs.json')
    ap.add_argument('--features', default='runs/head_ablation_states.pt', help='cache of the target states')
    args = ap.parse_args()
    one_thread()
    layers = [int(x) for x in args.layers.split(',') if x]
    tok, target = load_tokenizer(args.target), load_target(args.target)
    if not all(0 <= l <= target.config.num_hidden_layers for l in layers): ap.error(f'--layers: indices in 0..{target.config.num_hidden_layers}')
    ids, resp = refs_for(target, tok, read_prompts(args.prompts), args.n_tokens, Path(args.refs))
    P, R = chat_responses(args.data, tok)
    n = len(P) - args.val_rows
    if not 0 < args.rows <= n: ap.error(f'--rows {args.rows}: the file has {n} training rows')
    pick = sorted(random.Random(0).sample(range(n), args.rows))
    key = dict(target=str(args.target), data=str(args.data), pick=pick, layers=layers, refs=[ids, resp])
    feats = Path(args.features)
    saved = torch.load(feats, weights_only=False) if feats.exists() else None
    if saved is not None and saved['key'] == key: D, test = saved['train'], saved['test']
    else:
        D, test = states(target, [P[i] for i in pick], [R[i] for i in pick], layers), states(target, ids, resp, layers)
        feats.parent.mkdir(parents=True, exist_ok=True); torch.save(dict(key=key, train=D, test=test), feats)
    V = target.get_output_embeddings().weight.shape[0]
    vocab = draft_vocab([R[i] for i in pick], 8192, V, [tok.eos_token_id])
    W, E = target.get_output_embeddings().weight[vocab].detach(), target.get_input_embeddings().weight.detach()
    tok2head = torch.full((V,), -100, dtype=torch.long); tok2head[vocab] = torch.arange(len(vocab))
    spec = {'head': ([], 0, False, False), '+soft': ([], 1.0, False, False), '+layers': (layers, 0, False, False),
            '+both': (layers, 1.0, False, False), 'rows': ([], 0, False, True), '+attention': ([], 0, True, True)}
    res = {}
    for v in args.variants:
        ls, soft, att, rows = spec[v]
        res[v] = [train(v, D, test, ls, soft, att, rows, s, E, W, vocab, tok2head) for s in args.seeds]
    print(f"NextTokenHead variants on {Path(args.target).name}: {args.rows} training rows of {args.data} ({len(D['next'])} positions), "
          f"top-1 on the target's answers to {len(ids)} {args.prompts} prompts ({len(test['next'])} positions), seeds {args.seeds}")
    print(f"{'variant':<11} {'top-1 per seed':<24} {'mean':>6} {'vs head':>8} {'params':>8}")
    base = sum(a for a, _ in res['head']) / len(args.seeds) if 'head' in res else None
    for v, r in res.items():
        mean = sum(a for a, _ in r) / len(r)
        print(f"{v:<11} {' '.join(f'{a:.4f}' for a, _ in r):<24} {mean:6.4f} {'' if base is None else f'{mean - base:+8.4f}':>8} {r[0][1] / 1e6:7.2f}M")


if __name__ == '__main__':
    main()
