"""One saved mdlm model under several samplers, with the addition errors broken down by kind (tutorials/why, section 5).

    SPECS=ar,b1,b4 python -m bench.ablations.mdlm_decoding STATE.pt N [key=value ...]   (the overrides the model was trained with)

STATE.pt comes from bench/ablations/mdlm_train_save.py. Specs: `ar` = greedy decoding with the backbone's causal pass
(`causal=True`: what the AR warm-up trained); `bK` = the MDLM sampler (`dllm_nb.eval.sampler_settings`: fixed
`dllm.max_new_tokens` canvas, EOS stop, one token per step, low-confidence remasking, greedy) with blocks of K;
`b4_random` = random remasking; `b4_s2` = two tokens per step. Default: all of them. Per spec: test exact match on
the first N prompts of each task, and the fraction of addition completions with a wrong column sum (a+b+c=s with
s != a+b+c), a wrong operand (not the prompt's digits, or a wrong number of columns), a wrong carry, an answer that
is not read off the worked columns, a wrong first / last answer digit.
"""
import os, re, sys, json, torch
from torch import nn
from datasets import disable_progress_bars; disable_progress_bars()
from dllm_nb.config import load_config
from dllm_nb.tokenizer import load_tokenizer
from dllm_nb.modes import build_model
from dllm_nb.eval import exact_match, generate_autoregressive, sampler_settings

state, n, overrides = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
cfg = load_config('configs/mdlm_cpu.yaml', [f'output_dir=/tmp/mdlm_decoding_unused', *overrides], world_size=1)
tok = load_tokenizer(None)
model, mask_id = build_model(cfg, tok, verbose=False)
model.load_state_dict(torch.load(state)); model.eval()

class Causal(nn.Module):
    "The model's causal pass as a plain causal LM (for `generate_autoregressive`)."
    def __init__(s, m): super().__init__(); s.m = m
    def forward(s, input_ids, attention_mask):
        return s.m(input_ids, attention_mask, causal=True)       # an output with .logits, as generate_autoregressive expects

STEP = re.compile(r'(\d)\+(\d)\+(\d)=(\d\d)')
def breakdown(samples):
    "Fractions of addition samples with: a wrong column sum, a wrong operand copy, a wrong carry, an answer not read off the steps."
    k = dict(sum=0, operand=0, carry=0, readoff=0, ndigit_first=0, ndigit_last=0)
    for s in samples:
        a, b = re.findall(r'(\d+) \+ (\d+)', s['prompt'])[0]
        steps = STEP.findall(s['completion'])
        ra, rb = a[::-1], b[::-1]
        bad = dict.fromkeys(k, False); carry = 0
        for i, (x, y, c, z) in enumerate(steps):
            if int(x) + int(y) + int(c) != int(z): bad['sum'] = True
            if i >= len(ra) or x != ra[i] or y != rb[i]: bad['operand'] = True
            if int(c) != carry: bad['carry'] = True
            carry = int(z) // 10
        if len(steps) != len(ra): bad['operand'] = True
        if steps:
            read = (steps[-1][3][0] + ''.join(st[3][1] for st in reversed(steps))).lstrip('0') or '0'
            if s['prediction'] != read: bad['readoff'] = True
        p, r = s['prediction'] or '', s['answer']
        bad['ndigit_first'] = p[:1] != r[:1]; bad['ndigit_last'] = p[-1:] != r[-1:]
        for key in k: k[key] += bad[key]
    return {key: round(v / len(samples), 2) for key, v in k.items()}

base = sampler_settings(cfg)
runs = []
SPECS = os.environ.get('SPECS', '').split(',') if os.environ.get('SPECS') else None
for spec in SPECS or ['ar', 'b1', 'b2', 'b4', 'b8', 'b40', 'b4_random', 'b4_s2']:
    if spec == 'ar': kw, sampler = dict(max_new_tokens=base['max_new_tokens']), generate_autoregressive
    else:
        kw, sampler = dict(base), None
        bs = spec.split('_')[0][1:]; kw['block_size'] = int(bs)
        if 'random' in spec: kw['remasking'] = 'random'
        if spec.endswith('_s2'): kw['steps'] = base['max_new_tokens'] // 2
    m = Causal(model) if spec == 'ar' else model
    res = {t: exact_match(m, tok, t, 'test', n, sampler=sampler, **kw) for t in ('addition', 'reverse')}
    print(f"{spec:>10}: addition {res['addition']['accuracy']:.2f} reverse {res['reverse']['accuracy']:.2f} "
          f"addition errors {breakdown(res['addition']['samples'])}", flush=True)
    for s in res['addition']['samples'][:2]: print('     ', s['prompt'], '->', s['completion'])
