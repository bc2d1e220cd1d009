#!/usr/bin/env bash
# Wheels the GPU machine's image lacks (it has torch, transformers, tokenizers, numpy, pyarrow, pandas, fsspec,
# huggingface-hub, matplotlib, tqdm, pyyaml, safetensors; not datasets, dill, multiprocess, fastcore), for its
# Python 3.12. Run here, in the repo root; then on the device:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
#   python3 bench/gpu.py --out $OUT/gpu.json 2>&1 | tee $OUT/gpu.log
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl 'datasets>=3,<5' 'dill<0.4.1' 'multiprocess<0.70.19' 'fastcore==1.8.18'
ls -la .whl
