"""dllm_nb.config: presets, overrides, type parsing, the single ConfigError, and save/load round trips."""
import ast, re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from dllm_nb.config import (config_help, Config, ConfigError, DLLMConfig, TrainConfig, config_keys, config_to_dict, load_config,
                            mode_block_size, save_config, saved_config, validate_config)
from dllm_nb.modes import get_mode

ROOT = Path(__file__).resolve().parents[1]
PRESETS = sorted((ROOT / 'configs').glob('*.yaml'))
# world sizes each preset is meant for (CPU presets: 1 and 2 processes; GPU presets: 1 node x 8, 2 nodes x 8)
WORLDS = {'default': (1, 2), 'mdlm_cpu': (1, 2), 'mdlm_tiny': (1, 2), 'hybrid_tiny': (1, 2), 'hybrid_cpu': (1, 2), 'idlm_cpu': (1, 2), 'llada_sft': (1, 8, 16),
          'diffusiongemma_sft': (1, 8, 16), 'smollm2_cpu': (1,), 'smollm2_adapt': (1,), 'smollm2_ar': (1,), 'dflash_smollm2_cpu': (1,),
          'rl_countdown': (1, 2), 'rl_sudoku': (1, 2)}


def need(path) -> list[str]:
    "Overrides a preset needs to validate: a dflash preset names its target on the command line."
    return ['dflash.target=x'] if 'dflash' in Path(path).stem else []


def test_every_preset_has_its_world_sizes():
    assert {p.stem for p in PRESETS} == set(WORLDS)


@pytest.mark.parametrize('path', PRESETS, ids=[p.stem for p in PRESETS])
def test_preset_loads_validates_and_round_trips(path, tmp_path):
    for w in WORLDS[path.stem]:
        cfg = load_config(path, need(path), world_size=w)
        assert cfg.train.grad_accum(w) * cfg.train.micro_batch_size * w == cfg.train.global_batch_size
    assert load_config(save_config(cfg, tmp_path / 'saved.yaml'), world_size=1) == cfg
    assert load_config(path.stem, need(path), world_size=1) == cfg  # by preset name


def test_presets_say_what_they_are():
    cfgs = {p.stem: load_config(p, need(p), world_size=1) for p in PRESETS}
    assert (cfgs['default'].dllm.mode, cfgs['default'].block_diffusion.self_conditioning) == ('block_diffusion', True)
    assert cfgs['default'].block_diffusion.block_size in (4, 8) and cfgs['default'].model.path is None
    assert cfgs['mdlm_tiny'].dllm.mode == 'mdlm' and cfgs['hybrid_tiny'].dllm.mode == 'hybrid'
    l = cfgs['llada_sft']
    assert (l.dllm.mode, l.model.dtype, l.model.attn_implementation) == ('mdlm', 'bfloat16', 'flex_attention')
    g = cfgs['diffusiongemma_sft']
    assert (g.dllm.mode, g.block_diffusion.block_size, g.block_diffusion.self_conditioning) == ('block_diffusion', 256, True)
    m = cfgs['mdlm_cpu']
    assert (m.dllm.mode, m.mdlm.ar_warmup_steps, m.mdlm.shift_logits, m.mdlm.ar_loss_weight, m.mdlm.suffix_mask_prob,
            m.train.max_steps) == ('mdlm', 600, True, 1.0, 0.75, 2000)
    i = cfgs['idlm_cpu']
    assert (i.dllm.mode, i.idlm.block_size, i.idlm.clean_loss_weight, i.idlm.ar_warmup_steps, i.train.max_steps) == ('idlm', 1, 1.0, 600, 1800)


def test_default_yaml_is_the_dataclass_default():
    assert load_config(ROOT / 'configs' / 'default.yaml', world_size=1) == Config()
    assert load_config(None, world_size=1) == Config()


def test_every_field_is_commented():
    "Every key, the registered modes' sections included (declared in their own modules), has a comment: its --help text."
    notes = config_help()
    assert set(notes) == set(config_keys())
    assert [k for k, (_, _, note) in notes.items() if not note] == []


def test_overrides_are_parsed_by_field_type():
    cfg = load_config('default', ['dllm.mode=mdlm', 'train.max_steps=50', 'output_dir=runs/x', 'train.lr=3e-4',
                                  'train.tensorboard=yes', 'train.betas=0.8,0.9', 'dllm.mask_token=<|m|>',
                                  'data.pad_seq_len_divisible=16', 'train.grad_clip=none', 'model.vocab_size=64'],
                      world_size=1)
    assert (cfg.dllm.mode, cfg.train.max_steps, cfg.output_dir, cfg.train.lr) == ('mdlm', 50, 'runs/x', 3e-4)
    assert (cfg.train.tensorboard, cfg.train.betas, cfg.dllm.mask_token) == (True, (0.8, 0.9), '<|m|>')
    assert (cfg.data.pad_seq_len_divisible, cfg.train.grad_clip, cfg.model.vocab_size) == (16, None, 64)
    assert isinstance(cfg.train.max_steps, int) and isinstance(cfg.train.lr, float)
    assert load_config(None, ['train.lr=1'], world_size=1).train.lr == 1.0  # int literal into a float field


def test_later_overrides_win_and_overrides_beat_the_preset():
    cfg = load_config('mdlm_tiny', ['train.max_steps=3', 'train.max_steps=4'], world_size=1)
    assert cfg.train.max_steps == 4


def test_all_problems_in_one_error():
    with pytest.raises(ConfigError) as e:
        load_config(None, ['train.max_step=5', 'train.lr=fast', 'dllm.mode=mlm', 'model=llama', 'seed=-1',
                           'train.micro_batch_size=3', 'oops'], world_size=1)
    p = e.value.problems
    assert len(p) == 7, p
    assert "did you mean 'train.max_steps'" in p[0]
    assert "train.lr='fast' is not a valid float" in p[1]
    assert "not one of ['mdlm', 'hybrid', 'block_diffusion', 'idlm', 'dflash', 'ar']" in p[2]
    assert "'model' is a section" in p[3]
    assert 'not key=value' in p[4]
    assert any('seed=-1' in x for x in p) and any('micro_batch_size * world_size = 3 * 1' in x for x in p)
    assert str(e.value).startswith('7 problems in the config:')


def test_bare_field_name_points_to_its_section():
    with pytest.raises(ConfigError, match="did you mean 'train.max_steps'"):
        load_config(None, ['max_steps=5'], world_size=1)


def test_unknown_yaml_key_and_bad_yaml(tmp_path):
    (tmp_path / 'a.yaml').write_text('train:\n  lrate: 0.1\n')
    with pytest.raises(ConfigError, match="unknown key 'train.lrate'; did you mean 'train.lr'"):
        load_config(tmp_path / 'a.yaml', world_size=1)
    (tmp_path / 'b.yaml').write_text('- 1\n- 2\n')
    with pytest.raises(ConfigError, match='mapping'):
        load_config(tmp_path / 'b.yaml', world_size=1)
    with pytest.raises(ConfigError, match='does not exist'):
        load_config(tmp_path / 'missing.yaml', world_size=1)


@pytest.mark.parametrize('overrides, match', [
    (['dllm.mode=mdlm', 'dllm.mask_token=null'], 'needs dllm.mask_token'),
    (['dllm.mode=hybrid', 'dllm.mask_token='], 'needs dllm.mask_token'),
    (['block_diffusion.block_size=0'], 'block_diffusion.block_size=0 must be >= 1'),
    (['dllm.mode=hybrid', 'hybrid.block_size=0'], 'hybrid.block_size=0 must be >= 1'),
    (['dllm.mode=mdlm', 'block_diffusion.sliding_window=8'],
     "block_diffusion.sliding_window=8 is set, but only dllm.mode=block_diffusion reads the block_diffusion: section and "
     "the mode is 'mdlm': remove it (default None), or set dllm.mode=block_diffusion"),
    (['dllm.mode=idlm', 'dflash.target=x'], "dflash.target='x' is set, but only dllm.mode=dflash reads"),
    (['block_diffusion.sliding_window=0'], 'sliding_window=0 must be >= 1'),
    (['data.max_len=62'], 'not a multiple of 4 (from block_diffusion.block_size=4)'),
    (['data.pad_seq_len_divisible=6'], 'not a multiple of 12 (from block_diffusion.block_size=4 and data.pad_seq_len_divisible=6)'),
    (['dllm.mode=hybrid', 'hybrid.block_size=8', 'data.max_len=60'], 'not a multiple of 8 (from hybrid.block_size=8)'),
    (['dllm.mode=mdlm', 'data.max_len=60', 'data.pad_seq_len_divisible=16'], 'set data.max_len to 48 or 64'),
    (['train.warmup_steps=2500'], 'warmup_steps=2500'),
    (['train.resume=/no/such/ckpt'], 'does not exist'),
    (['model.num_heads=3'], 'not divisible by model.num_heads=3'),
    (['train.betas=0.9,1.0'], 'betas'),
    (['dllm.eps=0'], 'dllm.eps=0.0 must be in (0, 1)'),
    (['dllm.mode=mdlm', 'mdlm.ar_loss_weight=-1'], 'mdlm.ar_loss_weight=-1.0 must be >= 0'),
    (['mdlm.ar_loss_weight=0.5'], "mdlm.ar_loss_weight=0.5 is set, but only dllm.mode=mdlm reads"),
    # the flat keys of the layout before per-mode sections name their new home
    (['dllm.mode=mdlm', 'dllm.ar_loss_weight=1'], 'dllm.ar_loss_weight moved to mdlm.ar_loss_weight'),
    (['dllm.block_size=8', 'dllm.mode=hybrid'], 'dllm.block_size moved to hybrid.block_size'),
    (['dllm.mode=mdlm', 'dllm.self_conditioning=false'],
     "dllm.self_conditioning moved to block_diffusion.self_conditioning (each mode's settings are in its own section): "
     "only dllm.mode=block_diffusion reads it and the mode is 'mdlm'"),
])
def test_inconsistent_settings(overrides, match):
    with pytest.raises(ConfigError, match=re.escape(match)):
        load_config(None, overrides, world_size=1)


def test_mode_without_mask_token_is_fine_for_block_diffusion():
    assert load_config(None, ['dllm.mask_token=null'], world_size=1).dllm.mask_token is None


def test_world_size_comes_from_torchrun_env(monkeypatch):
    monkeypatch.setenv('WORLD_SIZE', '3')
    with pytest.raises(ConfigError, match='not divisible by world_size=3'):
        load_config(None)
    monkeypatch.setenv('WORLD_SIZE', '2')
    assert load_config(None).train.grad_accum(2) == 1


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 64), st.integers(1, 16), st.integers(1, 16))
def test_batch_arithmetic(G, mb, W):
    t = TrainConfig(global_batch_size=G, micro_batch_size=mb)
    if G % (mb * W) == 0:
        assert t.grad_accum(W) * mb * W == G
        validate_config(Config(train=t), world_size=W)
    else:
        with pytest.raises(ConfigError) as e: t.grad_accum(W)
        msg = e.value.problems[0]
        assert f'train.global_batch_size={G}' in msg and 'e.g.' in msg  # says what to change, with a value
        if G % W == 0:  # every suggested micro-batch size really works
            divs = ast.literal_eval(msg.rsplit(': ', 1)[1])
            assert divs and all(TrainConfig(global_batch_size=G, micro_batch_size=d).grad_accum(W) for d in divs)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(['mdlm', 'hybrid', 'block_diffusion']), st.sampled_from([1, 2, 4, 8]), st.integers(1, 40),
       st.floats(1e-6, 1.0, allow_nan=False), st.booleans(), st.sampled_from(['iid', 'antithetic', 'stratified']))
def test_round_trip_through_yaml_and_cli(mode, block, steps, lr, sc, ts):
    key = get_mode(mode).block_key                        # mdlm's is sampler_block_size (the record names it)
    ov = [f'dllm.mode={mode}', f'{mode}.{key}={block}', f'train.max_steps={steps}', f'train.warmup_steps=0',
          f'train.lr={lr!r}', f'dllm.t_sampling={ts}'] + ([f'block_diffusion.self_conditioning={sc}'] if mode == 'block_diffusion' else [])
    cfg = load_config(None, ov, world_size=1)
    assert (cfg.dllm.mode, mode_block_size(cfg), cfg.train.max_steps, cfg.train.lr) == (mode, block, steps, lr)
    d = config_to_dict(cfg)
    assert yaml.safe_load(yaml.safe_dump(d)) == d
    def leaves(sec, pre):                                  # nested sections too (model.lora)
        for k, v in sec.items(): yield from leaves(v, f'{pre}{k}.') if isinstance(v, dict) else [(f'{pre}{k}', v)]
    flat = [f'{k}={v}' for s, sec in d.items() if isinstance(sec, dict) for k, v in leaves(sec, f'{s}.')
            if v is not None and not isinstance(v, list)]
    again = load_config(None, flat + [f'output_dir={cfg.output_dir}', f'seed={cfg.seed}', 'train.betas=0.9,0.95'], world_size=1)
    assert again == cfg


def test_mdlm_ar_loss_weight_and_suffix_masks_reach_the_strategy():
    "mdlm.ar_loss_weight / suffix_mask_prob are wired from the config to MDLMStrategy (0 by default; mdlm_cpu.yaml sets them)."
    from dllm_nb.tokenizer import load_tokenizer
    from dllm_nb.modes import build_strategy
    tok = load_tokenizer(None)
    for path, overrides, want in ((None, ['dllm.mode=mdlm'], (0.0, 0.0)),
                                  (None, ['dllm.mode=mdlm', 'mdlm.ar_loss_weight=0.25', 'mdlm.suffix_mask_prob=0.5'], (0.25, 0.5)),
                                  ('configs/mdlm_cpu.yaml', [], (1.0, 0.75))):
        s = build_strategy(load_config(path, overrides, world_size=1), tok, 2, len(tok)).settings
        assert (s.ar_loss_weight, s.suffix_mask_prob) == want, (path, overrides, s)


def test_old_layout_yaml_is_an_error_but_an_old_run_folder_migrates(tmp_path, caplog):
    "A preset in the flat dllm.* layout is refused (naming the new keys); a run folder's saved config.yaml is migrated."
    from dllm_nb.checkpoint import saved_block_size
    old = dict(dllm=dict(mode='hybrid', block_size=8, half_life_ratio=0.5, self_conditioning=False, eps=0.01),
               data=dict(max_len=64), train=dict(max_steps=50))
    (tmp_path / 'config.yaml').write_text(yaml.safe_dump(old))
    with pytest.raises(ConfigError) as e: load_config(tmp_path / 'config.yaml', world_size=1)
    assert [p.split(' (')[0] for p in e.value.problems] == ['dllm.block_size moved to hybrid.block_size',
        'dllm.half_life_ratio moved to hybrid.half_life_ratio', 'dllm.self_conditioning moved to block_diffusion.self_conditioning']
    with caplog.at_level('WARNING', logger='dllm_nb.config'):
        cfg = saved_config(tmp_path / 'config.yaml')
        assert saved_block_size(tmp_path / 'final') == 8                    # generate/eval read the run's config.yaml
    assert (cfg.dllm.eps, cfg.hybrid.block_size, cfg.hybrid.half_life_ratio, cfg.train.max_steps) == (0.01, 8, 0.5, 50)
    assert cfg.block_diffusion == Config().block_diffusion                   # hybrid never read self_conditioning: dropped
    msgs = [r.getMessage() for r in caplog.records if r.name == 'dllm_nb.config']
    assert len(msgs) == 2 and 'dllm.block_size -> hybrid.block_size' in msgs[0] and 'self_conditioning=False dropped' in msgs[0]
    validate_config(cfg)


def test_presets_travel_with_a_plain_pip_install(tmp_path):
    "A wheel of this checkout, installed on its own, resolves `--config default` by name from a folder with no configs/."
    import subprocess, sys, zipfile
    pip = [sys.executable, '-m', 'pip', '--disable-pip-version-check', '-q']
    subprocess.run(pip + ['wheel', '--no-deps', '--no-build-isolation', '-w', str(tmp_path / 'whl'), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    wheel, = (tmp_path / 'whl').glob('dllm_nb-*.whl')
    shipped = {Path(n).name for n in zipfile.ZipFile(wheel).namelist() if n.startswith('dllm_nb/configs/')}
    assert shipped == {p.name for p in PRESETS}                            # the one copy in configs/, every preset
    subprocess.run(pip + ['install', '--no-deps', '--target', str(tmp_path / 'site'), str(wheel)], check=True,
                   capture_output=True, timeout=300)
    (tmp_path / 'elsewhere').mkdir()
    code = ("import dllm_nb, dllm_nb.config as c; print(dllm_nb.__file__); print(c.preset_dirs()[0]); "
            "print(c.load_config('default', world_size=1) == c.Config()); print(c.load_config('mdlm_cpu').dllm.mode)")
    env = {k: v for k, v in __import__('os').environ.items() if k != 'PYTHONPATH'}
    r = subprocess.run([sys.executable, '-c', code], cwd=tmp_path / 'elsewhere', capture_output=True, text=True,
                       env={**env, 'PYTHONPATH': str(tmp_path / 'site')}, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    where, presets, default_ok, mode = r.stdout.split('\n')[:4]
    assert where.startswith(str(tmp_path / 'site')), where                # the installed copy, not this checkout
    assert Path(presets) == tmp_path / 'site' / 'dllm_nb' / 'configs' and default_ok == 'True' and mode == 'mdlm'
    r = subprocess.run([sys.executable, '-m', 'dllm_nb.train', '--config', 'defualt', '--print-config'],
                       cwd=tmp_path / 'elsewhere', capture_output=True, text=True, timeout=300,
                       env={**env, 'PYTHONPATH': str(tmp_path / 'site')})
    assert r.returncode == 2 and "no preset named 'defualt'; known presets: default, " in r.stderr, r.stderr[-2000:]
