"""DFlash: a small block-diffusion drafter trained against a frozen causal target, and lossless speculative decoding with it.

A package of five modules, each exported from its notebook, in import order: `drafter` (anchors, blocks, the mask predicate,
the drafter model; `15a_dflash_drafter`), `mode` (loss, strategy, building from a config, the `dflash` mode's registration;
`15b_dflash_mode`), `speculative` (`speculative_generate`, copies, the n-gram index, acceptance replay; `15c_dflash_speculative`),
`head` (`NextTokenHead` and its training; `15d_dflash_head`) and `cli` (prompt sets, self-distillation, the command lines;
`15e_dflash_cli`). This file is written by hand (no notebook exports it): it re-exports every public name, so
`from dllm_nb.dflash import X` works for all of them, and importing it registers the `dflash` mode."""
from . import drafter, mode, speculative, head, cli
from .drafter import *      # noqa: F401,F403
from .mode import *         # noqa: F401,F403
from .speculative import *  # noqa: F401,F403
from .head import *         # noqa: F401,F403
from .cli import *          # noqa: F401,F403

__all__ = [*drafter.__all__, *mode.__all__, *speculative.__all__, *head.__all__, *cli.__all__]
