"""`python -m dllm_nb.dflash distill|head ...`: the package's command line (`cli.main`). Written by hand: no notebook exports it."""
from .cli import main

raise SystemExit(main())
