"""Property tests for `DLLMCollator` over random ragged batches (hypothesis).

Each invariant of the DESIGN.md collator contract is checked against a plain-Python reading of the spec:
shapes and dtypes, `T` divisibility and cap, the three regions of every row (content / block fill / global pad)
with their `input_ids`, `loss_mask` and `attention_mask` values, `input_lengths`, truncation counting, the
single-turn guard, and that a row collated alone equals the same row collated inside a batch.
"""
import math
import warnings

import pytest
import torch
from hypothesis import given, settings, strategies as st

from dllm_nb.collate import DLLMCollator

PAD, EOS = 0, 1


@st.composite
def rows(draw, single_run: bool):
    "One example: prompt, a supervised run, an unsupervised tail (or, when not single_run, any 0/1 mask)."
    p, r, tail = draw(st.integers(0, 10)), draw(st.integers(0, 12)), draw(st.integers(0, 3))
    n = max(p + r + tail, 1)
    lm = ([0] * p + [1] * r + [0] * tail)[:n] + [0] * max(0, n - (p + r + tail))
    if not single_run: lm = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    ids = draw(st.lists(st.integers(2, 63), min_size=n, max_size=n))
    ex = dict(input_ids=ids, loss_mask=lm)
    if draw(st.booleans()): ex['attention_mask'] = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    return ex


@st.composite
def configs(draw):
    b = draw(st.sampled_from([None, 1, 2, 3, 4, 8]))
    div = draw(st.sampled_from([None, 1, 2, 3, 8]))
    m = math.lcm(b or 1, div or 1)
    cap = draw(st.one_of(st.none(), st.integers(1, 4).map(lambda k: k * m)))
    return dict(eos_token_id=draw(st.sampled_from([EOS, None])), block_size=b, pad_seq_len_divisible=div,
                max_seq_len=cap, supervise_padding=draw(st.booleans()), response_window=draw(st.booleans()))


@st.composite
def cases(draw):
    cfg = draw(configs())
    batch = draw(st.lists(rows(single_run=cfg['response_window']), min_size=1, max_size=6))
    as_tensors = draw(st.booleans())
    if as_tensors: batch = [{k: torch.tensor(v) for k, v in ex.items()} for ex in batch]
    return cfg, batch


def spec_fill_end(lm: list[int], content_len: int, cfg) -> int:
    "The contract's fill end for one row before the cap, in plain Python."
    b, sup = cfg['block_size'] or 1, [j for j, x in enumerate(lm[:content_len]) if x]
    if b <= 1 or not sup: return content_len
    prefix = sup[0] if cfg['response_window'] else 0
    return prefix + -(-(content_len - prefix) // b) * b


def collate(cfg, batch):
    col = DLLMCollator(PAD, **cfg)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return col, col(batch)


@settings(max_examples=200, deadline=None)
@given(cases())
def test_invariants(case):
    cfg, batch = case
    col, out = collate(cfg, batch)
    ids, lm, attn, lens = out['input_ids'], out['loss_mask'], out['attention_mask'], out['input_lengths']
    B, T = ids.shape
    assert B == len(batch) and lm.shape == attn.shape == (B, T) and lens.shape == (B,)
    assert ids.dtype == lm.dtype == attn.dtype == lens.dtype == torch.long
    m, cap = math.lcm(cfg['block_size'] or 1, cfg['pad_seq_len_divisible'] or 1), cfg['max_seq_len']
    assert T % m == 0 and (cap is None or T <= cap)
    fill_id = PAD if cfg['eos_token_id'] is None else EOS
    ends, n_clipped = [], 0
    for i, ex in enumerate(batch):
        x, mask = [int(v) for v in ex['input_ids']], [int(v) for v in ex['loss_mask']]
        a = [int(v) for v in ex['attention_mask']] if 'attention_mask' in ex else [1] * len(x)
        c = len(x) if cap is None else min(len(x), cap)
        e_uncapped = spec_fill_end(mask, c, cfg)
        e = e_uncapped if cap is None else min(e_uncapped, cap)
        ends.append(e)
        n_clipped += e != e_uncapped
        assert lens[i] == c
        assert ids[i, :c].tolist() == x[:c] and lm[i, :c].tolist() == mask[:c] and attn[i, :c].tolist() == a[:c]
        assert ids[i, c:e].tolist() == [fill_id] * (e - c) and lm[i, c:e].tolist() == [1] * (e - c)
        assert attn[i, c:e].tolist() == [int(cfg['response_window'])] * (e - c)
        assert ids[i, e:].tolist() == [PAD] * (T - e) and attn[i, e:].tolist() == [0] * (T - e)
        assert lm[i, e:].tolist() == [int(cfg['supervise_padding'])] * (T - e)
    want_T = -(-max(ends) // m) * m
    assert T == (want_T if cap is None else min(want_T, cap))
    assert col.truncated == (sum(len(ex['input_ids']) > cap for ex in batch) if cap else 0)
    assert col.fill_clipped == n_clipped


@settings(max_examples=100, deadline=None)
@given(cases())
def test_row_alone_equals_row_in_batch(case):
    "Per-row content and fill do not depend on the other rows (only the trailing global pad does)."
    cfg, batch = case
    _, out = collate(cfg, batch)
    for i, ex in enumerate(batch):
        _, alone = collate(cfg, [ex])
        t = min(alone['input_ids'].shape[1], out['input_ids'].shape[1])
        for k in ('input_ids', 'loss_mask', 'attention_mask'): assert torch.equal(alone[k][0, :t], out[k][i, :t])


@settings(max_examples=100, deadline=None)
@given(st.lists(rows(single_run=True), min_size=0, max_size=4), rows(single_run=True), st.integers(1, 3))
def test_guard_names_the_multi_turn_row(before, ex, gap):
    "Splitting a supervised run with an unsupervised gap makes response-window mode raise, naming that row."
    two = dict(input_ids=[5] * 2 + [6] * gap + [7] * 3, loss_mask=[1] * 2 + [0] * gap + [1] * 3)
    col = DLLMCollator(PAD, EOS, block_size=4, response_window=True)
    with pytest.raises(ValueError, match=rf"row {len(before)} has 2 runs .*\[\(0, 2\), \({2 + gap}, {5 + gap}\)\].*mask_history=True"):
        col(before + [two, ex])
    col(before + [ex])                                                      # single runs pass
    DLLMCollator(PAD, EOS, block_size=4)(before + [two, ex])                 # plain mode has no guard


def test_guard_runs_on_raw_mask_before_truncation():
    "A second turn beyond max_seq_len still trips the guard: truncation must not hide a multi-turn example."
    ex = dict(input_ids=list(range(2, 14)), loss_mask=[0, 1, 1, 1] + [0] * 4 + [1] * 4)
    with pytest.raises(ValueError, match='row 0 has 2 runs'):
        DLLMCollator(PAD, EOS, block_size=4, max_seq_len=4, response_window=True)([ex])


def test_truncation_warns_once_and_counts():
    col = DLLMCollator(PAD, EOS, block_size=4, max_seq_len=8)
    long = dict(input_ids=list(range(2, 14)), loss_mask=[0] * 4 + [1] * 8)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        for _ in range(3): out = col([long, dict(input_ids=[3, 4], loss_mask=[0, 1])])
    assert len(w) == 1 and 'max_seq_len=8' in str(w[0].message) and 'rows [0]' in str(w[0].message)
    assert col.truncated == 3 and out['input_ids'].shape == (2, 8) and out['input_lengths'].tolist() == [8, 2]


@pytest.mark.parametrize('response_window', [False, True])
def test_truncation_that_drops_all_supervision_means_no_fill(response_window):
    "A prompt longer than the cap leaves no supervised token: no fill, nothing counted as fill-clipped."
    col = DLLMCollator(PAD, EOS, block_size=4, max_seq_len=4, response_window=response_window)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        out = col([dict(input_ids=[5] * 8, loss_mask=[0] * 5 + [1] * 3)])
    assert out['input_ids'].tolist() == [[5] * 4] and out['loss_mask'].tolist() == [[0] * 4]
    assert col.truncated == 1 and col.fill_clipped == 0


def test_response_relative_fill_is_clipped_at_the_cap():
    col = DLLMCollator(PAD, EOS, block_size=4, max_seq_len=8, response_window=True)
    out = col([dict(input_ids=[5] * 7, loss_mask=[0] * 5 + [1] * 2), dict(input_ids=[5] * 2, loss_mask=[0, 1])])
    assert out['input_ids'].tolist() == [[5] * 7 + [EOS], [5, 5, EOS, EOS, EOS, PAD, PAD, PAD]]   # 5 + 4 > 8: cut
    assert out['loss_mask'][0].tolist() == [0] * 5 + [1] * 3 and col.fill_clipped == 1 and col.truncated == 0


@pytest.mark.parametrize('kw,msg', [
    (dict(block_size=4, max_seq_len=30), 'set max_seq_len=32 or 28'),
    (dict(block_size=8, max_seq_len=4), 'set max_seq_len=8.'),
    (dict(block_size=4, pad_seq_len_divisible=6, max_seq_len=30), '= 12'),
    (dict(block_size=0), 'block_size must be a positive int'),
])
def test_bad_config(kw, msg):
    with pytest.raises(ValueError, match=msg.replace('.', r'\.').replace('(', r'\(')):
        DLLMCollator(PAD, EOS, **kw)


@pytest.mark.parametrize('batch,msg', [
    ([], 'empty batch'),
    ([dict(input_ids=[2, 3], loss_mask=[0, 1]), dict(input_ids=[2, 3, 4], loss_mask=[0, 1])],
     'example 1: input_ids has 3 tokens but loss_mask has 2'),
    ([dict(input_ids=[2, 3], loss_mask=[0, 1], attention_mask=[1, 1, 1])], 'example 0: input_ids has 2 tokens but attention_mask has 3'),
    ([dict(input_ids=[2, 3], loss_mask=[0, 1]), dict(input_ids=[2])], "example 1 has no 'loss_mask'"),
    ([dict(input_ids=[], loss_mask=[])], 'example 0 has no tokens'),
    ([dict(input_ids=torch.ones(2, 2, dtype=torch.long), loss_mask=[0, 1, 1, 1])], 'must be 1-D'),
])
def test_bad_batch(batch, msg):
    with pytest.raises(ValueError, match=msg):
        DLLMCollator(PAD, EOS, block_size=2)(batch)
