"""Block diffusion (`dllm.mode=block_diffusion`): an encoder/canvas model on one shared causal-LM backbone, its KV-cached
sampler and verified decoding, and the mode's registration.

A package of four modules, each exported from its notebook, in import order: `model` (canvas geometry, self-conditioning,
`BlockDiffusionLM`; `07c_block_diffusion_model`), `sampler` (the cached and re-encoding contexts, `generate_block_diffusion`;
`07d_block_diffusion_sampler`), `speculative` (verified decoding, `generate_block_speculative`;
`07e_block_diffusion_speculative`) and `mode` (settings, strategy, building from a config, likelihoods, the registration;
`08e_block_diffusion`). This file is written by hand (no notebook exports it): it re-exports every public name, so
`from dllm_nb.block_diffusion import X` works for all of them, and importing it registers the `block_diffusion` mode."""
from . import model, sampler, speculative, mode
from .model import *        # noqa: F401,F403
from .sampler import *      # noqa: F401,F403
from .speculative import *  # noqa: F401,F403
from .mode import *         # noqa: F401,F403

__all__ = [*model.__all__, *sampler.__all__, *speculative.__all__, *mode.__all__]
