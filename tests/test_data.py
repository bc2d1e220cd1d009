"Tests for dllm_nb.data that notebooks do badly: property tests, multi-process map, files, the CLI."
import json, os, subprocess, sys
from pathlib import Path

import pytest
from datasets import Dataset
from hypothesis import HealthCheck, given, settings, strategies as st

from dllm_nb.data import (END, ROLE_TOKENS, SPECIAL_TOKENS, asset_dir, build_tokenizer, builtin_examples,
                          ensure_chat_tokens, has_generation_tags, load_sft_dataset, load_tokenizer, task_answer,
                          task_examples, tokenize_example)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope='module')
def tok(): return load_tokenizer()


def naive(messages, tok):
    "Encode each rendered piece on its own and write the mask by hand (special tokens split text before BPE)."
    ids, mask = [], []
    for m in messages:
        body = tok(m['content'], add_special_tokens=False)['input_ids']
        close = tok.eos_token_id if m['role'] == 'assistant' else tok.convert_tokens_to_ids(END)
        ids += [tok.convert_tokens_to_ids(ROLE_TOKENS[m['role']]), *body, close]
        mask += [0] + [int(m['role'] == 'assistant')] * (len(body) + 1)
    return ids, mask


text = st.text(alphabet=st.sampled_from(list('ab xyz019+=.,:\n\té€😀')), min_size=1, max_size=12).filter(str.strip)
turn = st.tuples(text, text).map(lambda p: [dict(role='user', content=p[0]), dict(role='assistant', content=p[1])])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(turn, min_size=1, max_size=3), system=st.one_of(st.none(), text))
def test_loss_mask_is_exactly_assistant_plus_eos(tok, turns, system):
    msgs = ([] if system is None else [dict(role='system', content=system)]) + sum(turns, [])
    ex = tokenize_example(msgs, tok)
    assert (ex['input_ids'], ex['loss_mask']) == naive(msgs, tok)
    assert ex['attention_mask'] == [1] * len(ex['input_ids'])
    # mask_history: only the last assistant turn (content + EOS) stays supervised, as one contiguous run
    last = tokenize_example(msgs, tok, mask_history=True)['loss_mask']
    n_last = len(tok(turns[-1][1]['content'], add_special_tokens=False)['input_ids']) + 1
    assert sum(last) == n_last and last[len(last) - n_last:] == [1] * n_last


def test_tokenizer_rebuild_is_identical(tmp_path, tok):
    build_tokenizer(tmp_path)
    for f in ('tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja'):
        assert (tmp_path / f).read_bytes() == (asset_dir() / f).read_bytes(), f
    assert [tok.convert_ids_to_tokens(i) for i in range(len(SPECIAL_TOKENS))] == SPECIAL_TOKENS
    assert tok('Answer: 1998')['input_ids'][-4:] == [tok.convert_tokens_to_ids(d) for d in '1998']


def test_foreign_tokenizer_gets_pad_and_template_not_mask(tmp_path, tok):
    "load_tokenizer adds pad/EOS and the tagged template when missing; the mask token is dllm.mask_token's, at model build."
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast
    bare = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(tok.backend_tokenizer.to_str()), eos_token='<|endoftext|>')
    bare.save_pretrained(tmp_path)
    t = load_tokenizer(tmp_path)
    assert t.pad_token_id == 0 and t.mask_token is None and has_generation_tags(t.chat_template)
    assert tokenize_example(dict(prompt='hi', response='ok'), t) == tokenize_example(dict(prompt='hi', response='ok'), tok)


def test_tasks_deterministic_and_disjoint():
    for task in ('addition', 'reverse'):
        splits = {s: task_examples(task, s, seed=3, sizes=dict(train=500, validation=50, test=50))
                  for s in ('train', 'validation', 'test')}
        assert splits['train'] == task_examples(task, 'train', seed=3, sizes=dict(train=500, validation=50, test=50))
        prompts = {s: {e['messages'][0]['content'] for e in v} for s, v in splits.items()}
        assert sum(map(len, prompts.values())) == 600  # distinct within and across splits
        assert not prompts['test'] & prompts['train'] and not prompts['validation'] & prompts['train']
        for e in splits['test']: assert task_answer(task, e['messages'][1]['content']) == e['answer']
    mix = builtin_examples('default', 'test', sizes=dict(test=30))
    assert sorted(e['task'] for e in mix) == ['addition'] * 30 + ['reverse'] * 30


def write_jsonl(path, rows): path.write_text('\n'.join(json.dumps(r) for r in rows) + '\n')


@pytest.mark.parametrize('bad, contains', [
    ({'messages': [{'role': 'user', 'content': 'hi'}]}, "example 2: field 'messages' has no assistant turn"),
    ({'messages': [{'role': 'user', 'content': 'hi'}, {'role': 'robot', 'content': 'x'}]}, "example 2: messages[1]['role'] = 'robot'"),
    ({'messages': [{'role': 'user', 'content': ''}, {'role': 'assistant', 'content': 'x'}]}, "example 2: messages[0]['content'] must be a non-empty string"),
    ({'messages': None}, "example 2: field 'messages' must be a non-empty list"),
])
def test_bad_rows_name_index_and_field(tmp_path, tok, bad, contains):
    rows = [e | {} for e in builtin_examples('addition', 'test', sizes=dict(test=4))]
    rows[2] = {**rows[2], **bad}
    write_jsonl(tmp_path / 'd.jsonl', rows)
    with pytest.raises(ValueError) as e: load_sft_dataset(tmp_path / 'd.jsonl', tokenizer=tok)
    assert contains in str(e.value)


def test_bad_pairs_and_missing_columns(tmp_path, tok):
    write_jsonl(tmp_path / 'p.jsonl', [dict(prompt='a', response='b'), dict(prompt='a', response=None)])
    with pytest.raises(ValueError, match="example 1: field 'response'"): load_sft_dataset(tmp_path / 'p.jsonl', tokenizer=tok)
    write_jsonl(tmp_path / 'q.jsonl', [dict(question='a', answer='b')])
    with pytest.raises(ValueError, match="no 'messages' column.*question"): load_sft_dataset(tmp_path / 'q.jsonl', tokenizer=tok)
    with pytest.raises(FileNotFoundError, match='missing.jsonl'): load_sft_dataset(tmp_path / 'missing.jsonl', tokenizer=tok)
    with pytest.raises(ValueError, match='overlong'): load_sft_dataset('builtin:addition', overlong='skip', tokenizer=tok)


def test_num_proc_keeps_global_index_and_results(tmp_path, tok):
    rows = builtin_examples('default', 'test', sizes=dict(test=20))
    write_jsonl(tmp_path / 'ok.jsonl', rows)
    one, two = (load_sft_dataset(tmp_path / 'ok.jsonl', tokenizer=tok, num_proc=n) for n in (None, 2))
    assert one['input_ids'] == two['input_ids'] and one['loss_mask'] == two['loss_mask']
    rows[33]['messages'][1]['role'] = 'bot'
    write_jsonl(tmp_path / 'bad.jsonl', rows)
    with pytest.raises(Exception, match=r"example 33: messages\[1\]\['role'\]"):
        load_sft_dataset(tmp_path / 'bad.jsonl', tokenizer=tok, num_proc=2)


def test_overlong_policy_counts(tok, caplog):
    full = load_sft_dataset('builtin:default', 'test', tok, sizes=dict(test=50))
    lens = [len(x) for x in full['input_ids']]
    L = sorted(lens)[len(lens) // 2]
    n_long = sum(n > L for n in lens)
    assert 0 < n_long < len(lens)
    with caplog.at_level('WARNING', logger='dllm_nb.data'):
        drop = load_sft_dataset('builtin:default', 'test', tok, max_len=L, sizes=dict(test=50))
    assert f'{n_long} of 100 examples' in caplog.text
    assert drop.sft_info['n_overlong'] == n_long and len(drop) == 100 - n_long
    assert drop['input_ids'] == [x for x in full['input_ids'] if len(x) <= L]
    cut = load_sft_dataset('builtin:default', 'test', tok, max_len=L, overlong='truncate', sizes=dict(test=50))
    assert cut.sft_info['n_overlong'] == n_long and len(cut) == 100
    assert cut['input_ids'] == [x[:L] for x in full['input_ids']]
    assert cut['loss_mask'] == [m[:L] for m in full['loss_mask']]
    with pytest.raises(ValueError, match='all 100 examples are left with no supervised token'):  # prompts > 5 tokens
        load_sft_dataset('builtin:default', 'test', tok, max_len=5, overlong='truncate', sizes=dict(test=50))


def test_jsonl_parquet_roundtrip(tmp_path, tok):
    rows = builtin_examples('default', 'validation', sizes=dict(validation=10))
    write_jsonl(tmp_path / 'c.jsonl', rows)
    pairs = [dict(prompt=r['messages'][0]['content'], response=r['messages'][1]['content'], answer=r['answer'])
             for r in rows]
    Dataset.from_list(pairs).to_parquet(str(tmp_path / 'p.parquet'))
    a = load_sft_dataset(tmp_path / 'c.jsonl', tokenizer=tok)
    b = load_sft_dataset(tmp_path / 'p.parquet', tokenizer=tok)
    ref = load_sft_dataset('builtin:default', 'validation', tok, sizes=dict(validation=10))
    for k in ('input_ids', 'loss_mask', 'attention_mask', 'answer'): assert a[k] == b[k] == ref[k], k
    assert b.column_names == ['answer', 'input_ids', 'loss_mask', 'attention_mask']


def test_cli_demo():
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    r = subprocess.run([sys.executable, '-m', 'dllm_nb.data', '--demo', '--splits', 'test'], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "test: {'n': 400" in r.stdout and '<|assistant|>[' in r.stdout and 'Answer: ' in r.stdout
