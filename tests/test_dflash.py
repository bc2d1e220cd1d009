"""DFlash end to end through the CLIs: `dllm.mode=dflash` training against a saved tiny target, the drafter's `final/`,
and `python -m dllm_nb.generate --speculative` (lossless against the target's own greedy decoding)."""
import json, os, subprocess, sys
from pathlib import Path

import torch

from dllm_nb.core import native_bf16

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(ROOT), 'TOKENIZERS_PARALLELISM': 'false'}
TINY = ['data.train_size=48', 'data.val_size=8', 'train.global_batch_size=8', 'train.micro_batch_size=4',
        'train.warmup_steps=1', 'train.eval_every=2', 'train.eval_batches=1', 'train.log_every=1', 'train.save_every=2',
        'dflash.block_size=4', 'dflash.num_blocks_per_sample=4', 'dflash.layer_ids=0,1']


def run(args, timeout=600):
    r = subprocess.run([sys.executable, *args], env=ENV, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert r.returncode == 0, f'{args}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-5000:]}'
    return r


def make_target(path: Path):
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.models import build_backbone, tiny_config
    tok = load_tokenizer()
    torch.manual_seed(0)
    build_backbone(tiny_config('llama', vocab_size=len(tok), hidden_size=32, num_layers=2, num_heads=2,
                               num_kv_heads=1)).save_pretrained(path)
    tok.save_pretrained(path)
    return tok


def test_dflash_cli_train_and_speculative(tmp_path):
    from dllm_nb.dflash import DFlashDrafter, speculative_generate, target_greedy
    from dllm_nb.sampling import encode_prompts
    tok = make_target(tmp_path / 'target')
    target_bytes = {p.name: p.read_bytes() for p in (tmp_path / 'target').iterdir()}
    r = run(['-m', 'dllm_nb.train', 'dllm.mode=dflash', f'dflash.target={tmp_path}/target', f'output_dir={tmp_path}/run',
             'train.max_steps=3', *TINY])
    assert 'mode=dflash' in r.stdout and 'validation loss' in r.stdout
    final = tmp_path / 'run' / 'final'
    names = sorted(p.name for p in final.iterdir())
    assert 'drafter.safetensors' in names and 'model.safetensors' not in names, names      # the target is not saved
    conf = json.loads((final / 'dflash_config.json').read_text())
    assert conf['target'] == str((tmp_path / 'target').resolve()) and conf['layer_ids'] == [0, 1]
    assert {p.name: p.read_bytes() for p in (tmp_path / 'target').iterdir()} == target_bytes    # the target is untouched
    prompts = ['What is 123 + 456?', 'Reverse the words: cat dog sun']
    g = run(['-m', 'dllm_nb.generate', '--checkpoint', str(final), '--speculative', '--device', 'cpu', '--max-new-tokens', '12', '--max-draft', '3',
             *sum((['--prompt', p] for p in prompts), [])])
    assert 'mean acceptance length' in g.stdout and all(f'{p} -> ' in g.stdout for p in prompts)
    # unset flags take the CPU defaults, a given one wins; the settings used are printed
    assert 'speculative decoding on cpu: --min-confidence 0.5 --lookup 3 --max-draft 3' in g.stderr, g.stderr[-2000:]
    assert 'note: --batch-size' not in g.stderr                                  # batch 1 on a CPU unless asked
    # copies from a distilled file's answers, no drafter: the same (lossless) output
    corpus = tmp_path / 'answers.jsonl'
    corpus.write_text(''.join(json.dumps(dict(messages=[dict(role='user', content=f'q{i}'), dict(role='assistant', content=a)])) + '\n'
                              for i, a in enumerate(['The sum is 579.', 'sun dog cat'])))
    c = run(['-m', 'dllm_nb.generate', '--checkpoint', str(final), '--speculative', '--device', 'cpu', '--max-new-tokens', '12',
             '--corpus', str(corpus), '--no-drafter', '--batch-size', '2', *sum((['--prompt', p] for p in prompts), [])])
    assert 'note: --batch-size 2: on a CPU speculative decoding at batch > 1 measured slower' in c.stderr, c.stderr[-2000:]
    assert 'copies from' in c.stderr and 'NgramIndex(2 sequences' in c.stderr, c.stderr[-2000:]
    assert '--max-draft 1 --min-share 0.2 (skinny linears)' in c.stderr, c.stderr[-2000:]         # the CPU defaults
    assert [l for l in c.stdout.splitlines() if ' -> ' in l] == [l for l in g.stdout.splitlines() if ' -> ' in l]
    drafter = DFlashDrafter.from_pretrained(final)
    ids = encode_prompts(prompts, tok)
    out = speculative_generate(drafter, ids, 12, tok.eos_token_id)
    assert out.sequences == target_greedy(drafter.target, ids, 12, tok.eos_token_id)


def test_dflash_feature_file_is_written_once_and_reused(tmp_path):
    "cache_target_features + feature_file (bf16 features, fused drafter): the first run writes the file, the second reads it."
    make_target(tmp_path / 'target')
    args = ['-m', 'dllm_nb.train', 'dllm.mode=dflash', f'dflash.target={tmp_path}/target', 'train.max_steps=2', *TINY,
            'dflash.cache_target_features=true', f'dflash.feature_file={tmp_path}/feats.pt', 'dflash.train_feature_dtype=bfloat16',
            'dflash.fuse_context=true']
    r1 = run([*args, f'output_dir={tmp_path}/a'])
    assert 'target features' in r1.stderr and (tmp_path / 'feats.pt').exists()
    assert ('without bf16 dot products' in r1.stderr) == (not native_bf16())      # the slow-bf16 warning, where it applies
    saved = torch.load(tmp_path / 'feats.pt', weights_only=True)
    assert saved['meta']['layer_ids'] == [0, 1] and saved['meta']['dtype'] == 'torch.bfloat16' and len(saved['keys']) >= 48
    assert all(f.dtype == torch.bfloat16 for f in saved['feats'])
    stamp = (tmp_path / 'feats.pt').stat().st_mtime_ns
    r2 = run([*args, f'output_dir={tmp_path}/b'])
    assert 'target features' not in r2.stderr and (tmp_path / 'feats.pt').stat().st_mtime_ns == stamp   # nothing recomputed
    assert json.loads((tmp_path / 'b' / 'final' / 'dflash_config.json').read_text())['fuse_context'] is True
    bad = run_fail([*args, 'dflash.train_feature_dtype=float32', f'output_dir={tmp_path}/c'])
    assert 'written for other settings' in bad and 'dtype' in bad


def run_fail(args):
    r = subprocess.run([sys.executable, *args], env=ENV, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode != 0, r.stdout[-2000:]
    return r.stdout + r.stderr


def test_dflash_config_errors():
    from dllm_nb.config import ConfigError, load_config
    try: load_config(None, ['dllm.mode=dflash', 'dflash.block_size=1'], world_size=1)
    except ConfigError as e: msg = str(e)
    else: raise AssertionError('no error')
    assert 'dflash.target' in msg and 'dflash.block_size=1' in msg


def test_dflash_split_invariance_across_processes(tmp_path):
    "dflash step: (1 proc, bs 8) == (1 proc, acc 4, bs 2) == (2 torchrun procs with FSDP2, bs 2): loss, weight sum, grads."
    make_target(tmp_path / 'target')
    script, env = str(ROOT / 'tests' / 'scripts' / 'split_step.py'), {'DFLASH_TARGET': str(tmp_path / 'target')}
    torchrun = ['-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2']
    for args in ([script, str(tmp_path / 'a.pt'), '8', 'dflash'], [script, str(tmp_path / 'b.pt'), '2', 'dflash'],
                 torchrun + [script, str(tmp_path / 'c.pt'), '2', 'dflash']):
        r = subprocess.run([sys.executable, *args], env={**ENV, **env}, capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert r.returncode == 0, f'{args}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}'
    a, b, c = (torch.load(tmp_path / f'{k}.pt')['dflash'] for k in 'abc')
    assert a['grads'] and not any('target' in n or 'embed_tokens' in n for n in a['grads'])
    for other in (b, c):
        assert other['num_diffusion'] == a['num_diffusion'] and abs(other['loss'] - a['loss']) <= 1e-5 * abs(a['loss'])
        for n, g in a['grads'].items():
            assert (other['grads'][n] - g).abs().max() <= 1e-5 * g.abs().max() + 1e-7, n


def test_prompt_set_loads_without_duplicates_and_a_fixed_split():
    from importlib.resources import files
    from dllm_nb.dflash import prompt_set, read_prompts
    rows = prompt_set()
    f = files('dllm_nb') / 'assets' / 'prompts' / 'instructions.jsonl'
    assert len(rows) >= 250 and len(f.read_bytes()) <= 200_000
    assert len({r['prompt'].strip().lower() for r in rows}) == len(rows)                 # no duplicates
    kinds = {r['kind'] for r in rows}
    assert kinds == {'arithmetic', 'rewriting', 'lists', 'facts', 'code', 'chat'}
    for k in kinds:                                   # the split is written in the file: every 5th prompt of a kind
        ks = [r for r in rows if r['kind'] == k]
        assert [r['split'] for r in ks] == ['test' if i % 5 == 4 else 'train' for i in range(len(ks))]
    train, test = prompt_set('train'), prompt_set('test')
    assert len(train) + len(test) == len(rows) and not {r['prompt'] for r in train} & {r['prompt'] for r in test}
    assert read_prompts('shipped:test') == [r['prompt'] for r in test] and test[0]['prompt'] == rows[4]['prompt']



def test_extra_prompts_are_distinct_training_prompts_outside_the_shipped_set():
    from importlib.resources import files
    from dllm_nb.dflash import prompt_set, read_prompts
    extra, shipped = prompt_set('extra'), prompt_set()
    assert len(extra) >= 500 and {r['split'] for r in extra} == {'train'}
    assert {r['kind'] for r in extra} == {r['kind'] for r in shipped}
    low = [r['prompt'].strip().lower() for r in extra]
    assert len(set(low)) == len(low)                                                    # no duplicates
    assert not set(low) & {r['prompt'].strip().lower() for r in shipped}                # the held-out split stays unseen
    more = prompt_set('more')                                                           # thousands more, gzipped
    assert len(more) >= 5000 and {r['split'] for r in more} == {'train'} and {r['kind'] for r in more} == {r['kind'] for r in shipped}
    low_more = [r['prompt'].strip().lower() for r in more]
    assert len(set(low_more)) == len(low_more) and not set(low_more) & (set(low) | {r['prompt'].strip().lower() for r in shipped})
    d = files('dllm_nb') / 'assets' / 'prompts'
    assert sum(len((d / f).read_bytes()) for f in ('instructions.jsonl', 'instructions_extra.jsonl', 'instructions_more.jsonl.gz')) <= 200_000
    assert read_prompts('shipped:extra') == [r['prompt'] for r in extra]
    assert read_prompts('shipped:more') == [r['prompt'] for r in more]
    import pytest
    with pytest.raises(ValueError, match="'train', 'test', 'extra' or 'more'"): prompt_set('dev')

def test_distill_cli_writes_target_greedy_and_resumes(tmp_path):
    from dllm_nb.data import read_json_rows
    from dllm_nb.dflash import load_target, read_prompts, target_greedy
    from dllm_nb.sampling import encode_prompts
    tok = make_target(tmp_path / 'target')
    out, args = tmp_path / 'd.jsonl', ['-m', 'dllm_nb.dflash', 'distill', '--target', str(tmp_path / 'target'),
                                       '--prompts', 'shipped:test', '--max-new-tokens', '10', '--batch-size', '2']
    r = run([*args, '--out', str(out), '--limit', '3'])
    assert 'wrote 3 responses' in r.stdout
    with open(out, 'a') as f: f.write('{"messages": [{"role": "user", "content": "cut')     # a killed run's last line
    r = run([*args, '--out', str(out), '--limit', '5'])
    assert 'wrote 2 responses (3 of 5 prompts were already there)' in r.stdout
    rows, _ = read_json_rows(out)
    prompts = read_prompts('shipped:test')[:5]
    assert [r['messages'][0]['content'] for r in rows] == prompts
    ref = target_greedy(load_target(tmp_path / 'target'), encode_prompts(prompts, tok), 10, tok.eos_token_id)
    assert [r['messages'][1]['content'] for r in rows] == [tok.decode(t) for t in ref]
    assert all(r['messages'][1]['role'] == 'assistant' and isinstance(r['finished'], bool) for r in rows)


def test_speculative_cli_checks_copy_flags_before_loading(tmp_path):
    "--no-drafter with nothing to copy from, or a --corpus file that is not there: one line, before the drafter loads."
    import pytest
    from dllm_nb.generate import main
    base = ['--checkpoint', str(tmp_path / 'no_drafter_here'), '--prompt', 'hi', '--speculative', '--device', 'cpu']
    with pytest.raises(SystemExit, match='--no-drafter leaves nothing to verify'): main([*base, '--no-drafter', '--lookup', '0'])
    with pytest.raises(SystemExit, match='--corpus nope.jsonl: no such file'): main([*base, '--corpus', 'nope.jsonl'])
    with pytest.raises(SystemExit, match=r'--min-share 1.5: a share of occurrences, in \[0, 1\]'): main([*base, '--min-share', '1.5'])
    with pytest.raises(SystemExit, match='--min-share applies to --corpus copies'): main([*base, '--min-share', '0.3'])


def test_chat_responses_renders_answers_and_names_a_bad_row(tmp_path):
    "The corpus reader: each row's answer tokens as rendered in training; a row without a final assistant turn is named by line."
    import pytest
    from dllm_nb.data import DataError
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.dflash import NgramIndex, chat_responses
    tok = load_tokenizer()
    rows = [dict(messages=[dict(role='user', content='What is 1 + 2?'), dict(role='assistant', content='The sum is 3.')]),
            dict(messages=[dict(role='user', content='Say hi'), dict(role='assistant', content='hi there')])]
    good = tmp_path / 'good.jsonl'
    good.write_text(''.join(json.dumps(r) + '\n' for r in rows))
    P, R = chat_responses(good, tok)
    assert len(P) == len(R) == 2 and 'The sum is 3.' in tok.decode(R[0]) and 'What is 1 + 2?' in tok.decode(P[0])
    assert 'What is' not in tok.decode(R[0])                                  # the answer alone, not the prompt
    ix = NgramIndex.from_chat_jsonl(good, tok, min_share=0)
    assert ix.draft(R[0][:3], 2) == R[0][3:5] and ix.prompts == set(map(tuple, P))                                 # a suffix of an answer continues as that answer
    bad = tmp_path / 'bad.jsonl'
    bad.write_text(json.dumps(rows[0]) + '\n' + json.dumps(dict(messages=[dict(role='user', content='no answer')])) + '\n')
    with pytest.raises(DataError, match=r'bad.jsonl:2: need .messages. ending in an assistant turn'): chat_responses(bad, tok)


def test_head_cli_trains_reuses_states_and_decodes_losslessly(tmp_path):
    "`dflash head` on a tiny target's distilled answers: saved as a NextTokenHead, states file reused, generate --speculative lossless."
    from dllm_nb.dflash import NextTokenHead, load_drafter, target_greedy
    from dllm_nb.sampling import encode_prompts
    tok = make_target(tmp_path / 'target')
    data = tmp_path / 'distilled.jsonl'
    run(['-m', 'dllm_nb.dflash', 'distill', '--target', str(tmp_path / 'target'), '--prompts', 'shipped:train', '--limit', '24',
         '--max-new-tokens', '12', '--out', str(data)])
    rel = os.path.relpath(tmp_path / 'target', ROOT)                  # a relative --target is recorded resolved
    args = ['-m', 'dllm_nb.dflash', 'head', '--target', rel, '--data', str(data), '--out', str(tmp_path / 'head'),
            '--epochs', '2', '--hidden', '32', '--vocab', '64', '--val-rows', '4', '--features', str(tmp_path / 'states.pt')]
    r = run(args)
    assert 'target states' in r.stderr and 'NextTokenHead' in r.stdout and 'from 20 rows' in r.stdout, r.stdout[-2000:]
    log = json.loads((tmp_path / 'head' / 'head_log.json').read_text())
    assert log['rows'] == 20 and [e['epoch'] for e in log['log']] == [1, 2] and 0 <= log['log'][-1]['val_top1'] <= 1
    conf = json.loads((tmp_path / 'head' / 'dflash_config.json').read_text())
    assert conf['model_class'] == 'NextTokenHead' and conf['draft_vocab_size'] == 64
    assert conf['target'] == str((tmp_path / 'target').resolve()), conf['target']
    r2 = run(args)                                                    # the states are read back, not recomputed
    assert 'target states from' in r2.stderr and 'target states:' not in r2.stderr, r2.stderr[-2000:]
    assert 'need 0 < N' in run_fail([*args[:-4], '--val-rows', '24'])
    prompts = ['What is 123 + 456?', 'Reverse the words: cat dog sun']
    g = run(['-m', 'dllm_nb.generate', '--checkpoint', str(tmp_path / 'head'), '--speculative', '--device', 'cpu',
             '--max-new-tokens', '12', '--batch-size', '2', *sum((['--prompt', p] for p in prompts), [])])
    assert 'speculative decoding on cpu: --min-confidence 0.0 --lookup 3 --max-draft 1' in g.stderr, g.stderr[-2000:]
    assert 'note: --batch-size' not in g.stderr                      # a head measured 1.0x at batch 4: no warning
    head = load_drafter(tmp_path / 'head')
    assert isinstance(head, NextTokenHead)
    ref = target_greedy(head.target, encode_prompts(prompts, tok), 12, tok.eos_token_id)
    assert '\n'.join(f'{p} -> {tok.decode(s)}' for p, s in zip(prompts, ref)) in g.stdout        # the target's own greedy text


OLD_NAMES = ('ANCHOR_SAMPLING MASKED DRAFTER_CONFIG DRAFTER_WEIGHTS WEIGHT_QUANTUM DFLASH CPU_SPECULATIVE OTHER_SPECULATIVE '
             'HEAD_SPECULATIVE PROMPT_SET EXTRA_PROMPTS MORE_PROMPTS anchor_candidates sample_anchors Blocks make_blocks dflash_mask_mod '
             'dflash_mask dflash_block_mask DrafterConfig default_layer_ids default_gamma rope DrafterLayer DFlashDrafter target_features '
             'load_target decay_weights quantized_weights block_weights dflash_loss Anchored DFlashSettings DFlashStrategy draft_vocab '
             'warm_feature_cache target_rope_theta init_from_target build_dflash_model SpecOutput draft_block lookup_draft NgramIndex '
             'chat_responses speculative_generate replay_acceptance target_greedy offset_accuracy HeadConfig NextTokenHead draft_next '
             'drafter_class load_drafter head_examples train_head head_accuracy head_cli speculative_settings speculative_cli prompt_set '
             'read_prompts self_distill main').split()   # `dllm_nb/dflash.py`'s `__all__` before it became a package (issue 50)


def test_the_package_keeps_the_module_s_names_and_registers_the_mode():
    "In a fresh interpreter: `import dllm_nb.dflash` registers `dflash`, and every name the one-file module exported is still there."
    code = ("import dllm_nb.dflash as d, dllm_nb.registry as r, sys; names = sys.argv[1:]; "
            "print(r.MODES['dflash'].Strategy is d.DFlashStrategy, [n for n in names if n not in d.__all__ or not hasattr(d, n)])")
    assert run(['-c', code, *OLD_NAMES]).stdout.split() == ['True', '[]']
    assert 'not_a_name' in run(['-c', code, 'not_a_name']).stdout                  # the check can fail
