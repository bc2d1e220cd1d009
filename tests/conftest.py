"Test session setup: offline Hugging Face, a private HF_HOME, headless matplotlib, small thread pools; the file-size-limit fixture."
import os, resource, signal, tempfile
import pytest

# These must be set before any Hugging Face library is imported.
os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('HF_DATASETS_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')
os.environ.setdefault('HF_HOME', tempfile.mkdtemp(prefix='dllm_nb_hf_'))
os.environ.setdefault('MPLBACKEND', 'Agg')
os.environ.setdefault('TOKENIZERS_PARALLELISM', 'false')


def pytest_configure(config):
    # torch.compile imports torch/utils/mkldnn.py, which torch 2.13 still writes with the deprecated torch.jit.script_method:
    # torch warns about its own code on every first compile (here: transformers' flex-attention integration compiles
    # flex_attention). dllm_nb never calls torch.jit; this one message is ignored, nothing else.
    config.addinivalue_line('filterwarnings', 'ignore:`torch.jit.script_method` is deprecated:DeprecationWarning')


@pytest.fixture
def fsize():
    "`cap(n)`: from then on this process may grow no file past `n` bytes (EFBIG, as a full disk gives ENOSPC); `cap(None)` lifts it."
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)                 # (Python ignores it already): an error, not death
    yield lambda n: resource.setrlimit(resource.RLIMIT_FSIZE, (soft if n is None else n, hard))
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard)); signal.signal(signal.SIGXFSZ, old)
