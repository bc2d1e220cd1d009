"Tests for dllm_nb.data that notebooks do badly: property tests, multi-process map, files, the CLI."
import json, os, subprocess, sys
from pathlib import Path

import pytest
from datasets import Dataset
from hypothesis import HealthCheck, given, settings, strategies as st

from dllm_nb.builtin import builtin_examples, task_answer, task_examples
from dllm_nb.data import load_sft_dataset, tokenize_example
from dllm_nb.tokenizer import END, ROLE_TOKENS, SPECIAL_TOKENS, asset_dir, build_tokenizer, ensure_chat_tokens, has_generation_tags, load_tokenizer

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


# ---------------------------------------------------------------- issue 55: JSON files streamed, tokenized once, cached by content
@pytest.fixture
def cache(tmp_path, monkeypatch):
    "A private tokenized cache (`datasets.config.HF_DATASETS_CACHE` is read at call time); its root."
    import datasets.config
    from dllm_nb.datafiles import cache_root
    monkeypatch.setattr(datasets.config, 'HF_DATASETS_CACHE', str(tmp_path / 'hf_datasets'))
    return cache_root()


def counting_tokenizer(monkeypatch):
    "Count `tokenize_example` calls made by the loader (in this process: num_proc=None)."
    import dllm_nb.data as data
    calls, real = [], data.tokenize_example
    monkeypatch.setattr(data, 'tokenize_example', lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def edit_in_place(path, old: bytes, new: bytes):
    "Replace `old` by `new` (same length) and put the modification time back: size and mtime cannot tell."
    st, raw = path.stat(), path.read_bytes()
    assert len(old) == len(new) and raw.count(old) >= 1
    path.write_bytes(raw.replace(old, new, 1)); os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_second_load_reuses_the_tokenized_cache(tmp_path, tok, cache, monkeypatch):
    rows = builtin_examples('default', 'test', sizes=dict(test=20))
    write_jsonl(tmp_path / 'd.jsonl', rows)
    calls = counting_tokenizer(monkeypatch)
    a = load_sft_dataset(tmp_path / 'd.jsonl', tokenizer=tok, max_len=40)
    assert len(calls) == 40 and a.cache_files and all(f['filename'].startswith(str(cache)) for f in a.cache_files)
    b = load_sft_dataset(tmp_path / 'd.jsonl', tokenizer=tok, max_len=40)
    assert len(calls) == 40, 'the second load tokenized again'
    assert a['input_ids'][:] == b['input_ids'][:] and a.sft_info == b.sft_info
    assert [p.name for p in cache.iterdir() if p.is_dir() and p.name != '.locks'] == [Path(a.cache_files[0]['filename']).parent.name]
    load_sft_dataset(tmp_path / 'd.jsonl', tokenizer=tok, mask_history=True)   # another setting that changes tokens: its own cache
    assert len(calls) == 80


def test_edited_file_gets_a_new_fingerprint_and_cache(tmp_path, tok, cache, monkeypatch):
    "An edit anywhere (same size, mtime put back) changes the tokens served; a size+mtime fingerprint would serve stale ones."
    import dllm_nb.data as data
    from dllm_nb.datafiles import file_fingerprint
    rows = builtin_examples('addition', 'test', sizes=dict(test=30))
    def stale_after_edit(name: str) -> bool:
        p = tmp_path / name; write_jsonl(p, rows)
        before, fp = load_sft_dataset(p, tokenizer=tok)['input_ids'][:], data.dataset_fingerprint(p)
        edit_in_place(p, b'Answer: ', b'Answr:  ')                      # the first row's reply, one letter moved
        after = load_sft_dataset(p, tokenizer=tok)['input_ids'][:]
        assert after[1:] == before[1:]
        return after[0] == before[0] or data.dataset_fingerprint(p) == fp
    assert not stale_after_edit('a.jsonl')
    assert file_fingerprint(tmp_path / 'a.jsonl').startswith('sha256:')
    monkeypatch.setattr(data, 'file_fingerprint', lambda p: f'{Path(p).stat().st_size}-{Path(p).stat().st_mtime_ns}')
    assert stale_after_edit('b.jsonl')                                   # the broken variant is caught


def test_cache_reused_by_a_new_process_and_built_once_by_two(tmp_path, tok):
    "Two processes starting together on one file tokenize it once (a lock); a third process never calls the tokenizer."
    write_jsonl(tmp_path / 'd.jsonl', builtin_examples('default', 'test', sizes=dict(test=300)))
    env = {**os.environ, 'PYTHONPATH': str(ROOT), 'HF_DATASETS_CACHE': str(tmp_path / 'hf'), 'OMP_NUM_THREADS': '1'}
    code = ("import sys, dllm_nb.data as d; real = d.tokenize_example; n = []\n"
            "d.tokenize_example = lambda *a, **k: n.append(1) or real(*a, **k)\n"
            f"ds = d.load_sft_dataset({str(tmp_path / 'd.jsonl')!r}); print(len(ds), len(n))")
    two = [subprocess.Popen([sys.executable, '-c', code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
           for _ in range(2)]
    outs = sorted(p.communicate(timeout=300)[0].split() for p in two)
    assert all(p.returncode == 0 for p in two)
    assert outs == [['600', '0'], ['600', '600']], outs                  # one built it, the other waited and reused it
    r = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, timeout=300)
    assert r.stdout.split() == ['600', '0'], r.stderr[-2000:]
    root = tmp_path / 'hf' / 'dllm_nb'
    assert len([p for p in root.iterdir() if p.is_dir() and p.name != '.locks']) == 1   # no half-built folder left


def test_json_array_streams_like_jsonl(tmp_path, tok, cache, monkeypatch):
    "A one-line JSON array read in 7-byte chunks gives the JSONL file's dataset; item numbers name its bad rows."
    import dllm_nb.datafiles as datafiles
    monkeypatch.setattr(datafiles, '_CHUNK', 7)
    rows = builtin_examples('default', 'test', sizes=dict(test=10))
    write_jsonl(tmp_path / 'l.jsonl', rows); (tmp_path / 'a.json').write_text(json.dumps(rows))
    a, b = (load_sft_dataset(tmp_path / f, tokenizer=tok) for f in ('l.jsonl', 'a.json'))
    for k in ('input_ids', 'loss_mask', 'answer'): assert a[k][:] == b[k][:], k
    rows[13]['messages'][1]['role'] = 'bot'; (tmp_path / 'bad.json').write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=r"bad\.json:14: example 13: messages\[1\]\['role'\] = 'bot'"):
        load_sft_dataset(tmp_path / 'bad.json', tokenizer=tok)


@pytest.mark.parametrize('array', [False, True])
def test_checking_pass_holds_no_file_in_memory(tmp_path, array):
    "The checking pass over a 12 MB file (JSONL, or a one-line JSON array) allocates under 4 MB; the whole-file reader, over twice the file."
    import tracemalloc
    from dllm_nb.datafiles import scan_json_file
    row = {'messages': [{'role': 'user', 'content': 'word ' * 40}, {'role': 'assistant', 'content': 'reply ' * 60}], 'answer': 'x'}
    p = tmp_path / ('big.json' if array else 'big.jsonl')
    p.write_text(json.dumps([row] * 20000) if array else ''.join(json.dumps(row) + '\n' for _ in range(20000)))
    def peak(fn):
        tracemalloc.start(); fn(); peak = tracemalloc.get_traced_memory()[1]; tracemalloc.stop(); return peak
    assert p.stat().st_size > 12e6
    assert peak(lambda: scan_json_file(p, tmp_path / 'index.arrow')) < 4e6
    def whole_file(): rows = json.loads(p.read_text()) if array else [json.loads(l) for l in p.read_text().splitlines()]
    assert peak(whole_file) > 2 * p.stat().st_size                     # what the old reader held: the check can fail
