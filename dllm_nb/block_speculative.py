"""Moved: verified block decoding is `dllm_nb.block_diffusion.speculative` (notebook `07e_block_diffusion_speculative`),
re-exported by `dllm_nb.block_diffusion`. This stub is written by hand (no notebook exports it): importing one of its
old names raises an `ImportError` that says where it lives now."""
from .core import moved_names

__getattr__ = moved_names(__name__, {n: 'block_diffusion' for n in ('VerifyContext', 'accept', 'VerifiedOutput', 'generate_block_speculative')})
