"""`bench/gpu.py` (the GPU checks of issue 18) runs end to end at toy sizes on the CPU, so the device run is not its
first run. It measures nothing here: it checks the script's plumbing and the equalities it reports."""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_bench_smoke(tmp_path):
    out = tmp_path / 'gpu.json'
    r = subprocess.run([sys.executable, str(ROOT / 'bench' / 'gpu.py'), '--smoke', '--only', 'bf16,mfu',
                        '--out', str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    res = json.loads(out.read_text())
    s = res['bf16']['summary']
    assert len(res['bf16']['fp32']['losses']) == len(res['bf16']['bf16']['losses']) == 3
    assert s['max_abs_diff'] < 0.1                       # bf16 params vs fp32 on a toy model, 3 steps
    assert {r['mode'] for r in res['mfu']} == {'block_diffusion', 'mdlm'}
    assert all(r['tokens_per_s'] > 0 and r['tflops'] > 0 for r in res['mfu'])
    assert 'MFU block_diffusion' in r.stdout and 'bf16 vs fp32' in r.stdout


def test_step_flops_formula():
    sys.path.insert(0, str(ROOT / 'bench'))
    from gpu import step_flops
    # one grad pass of 10 tokens over 5 keys: 10 * (6N + 12 L d K); one no-grad pass: 10 * (2N + 4 L d K)
    assert step_flops(100, 2, 8, [(10, 5, True)]) == 10 * (600 + 12 * 2 * 8 * 5)
    assert step_flops(100, 2, 8, [(10, 5, False)]) == 10 * (200 + 4 * 2 * 8 * 5)


def test_gpu_bench_flex_smoke(tmp_path):
    "Part `flex` on the CPU (forward only there): all three mask paths give the sdpa loss; Flex holds far less mask."
    out = tmp_path / 'gpu.json'
    r = subprocess.run([sys.executable, str(ROOT / 'bench' / 'gpu.py'), '--smoke', '--only', 'flex', '--out', str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    rows = json.loads(out.read_text())['flex']
    assert {(x['S'], x['path']) for x in rows} == {(S, p) for S in (64, 128) for p in ('sdpa', 'flex_dense', 'flex')}
    assert all('error' not in x and x['loss_diff_vs_sdpa'] < 1e-4 for x in rows), rows
    for S in (64, 128):
        kib = {x['path']: x['mask_kib'] for x in rows if x['S'] == S}
        assert kib['flex'] * 20 < kib['sdpa'] < kib['flex_dense'], kib     # flex_dense holds the dense mask and a BlockMask
