"""What a project sets for a run: one value, built once by each adapter from its options and handed down
to the checking, the analysis and discovery of every file.

Imported by the adapters when they read their options, before any file is checked, so it imports
nothing heavy (and, being in the core, nothing above it: the rules to run are carried as codes, which
the checking turns into rule objects).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Optional, Tuple

from .conventions import CtxNames, TorchVersion


@dataclass(frozen=True)
class Settings:
    """The settings of a run, the same for every file it checks.

    ``preview_codes`` are the preview rules that run, by code, besides the rules on by default; None
    leaves the choice to ``preview``: every preview rule when it is on, none when it is off. The adapters
    always give the codes (a preview rule runs only when its code is reported, see
    ``checking.selection``); ``preview`` alone is a shorthand for callers that run everything.
    """

    function_bases: Tuple[str, ...] = ()  # dotted names of project bases that subclass torch.autograd.Function
    preview: bool = False
    preview_codes: Optional[FrozenSet[str]] = None
    ctx_names: CtxNames = CtxNames()  # the accepted names of the context parameter (AGF002)
    min_torch_version: Optional[TorchVersion] = None  # the oldest torch the project supports; None: not said


DEFAULT_SETTINGS = Settings()
