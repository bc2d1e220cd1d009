"Test session setup: offline Hugging Face, a private HF_HOME, headless matplotlib, small thread pools."
import os, tempfile

# These must be set before any Hugging Face library is imported.
os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('HF_DATASETS_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')
os.environ.setdefault('HF_HOME', tempfile.mkdtemp(prefix='dllm_nb_hf_'))
os.environ.setdefault('MPLBACKEND', 'Agg')
os.environ.setdefault('TOKENIZERS_PARALLELISM', 'false')
