"""Checking one module: the entry point every adapter (flake8 plugin, command line) calls.

Most files that reach this point (they mention ``Function``) hold no Function class. For them the
work is one walk over the statements of flake8's ``ast`` tree (:mod:`.discovery`); this module and
discovery import neither libcst nor the rules. :mod:`.class_checks`, which does, is imported when a
Function class is first found.
"""

from __future__ import annotations

import ast
import sys
from typing import TYPE_CHECKING, Iterable, List, Optional, Sequence

from ..core.conventions import CtxNames, TorchVersion
from ..core.findings import INTERNAL_ERROR, Finding, internal_error
from ..engine.discovery.custom_ops import CustomOpDiscovery
from ..engine.discovery.functions import Discovery

if TYPE_CHECKING:  # pragma: no cover
    from ..rules.base import Rule

__all__ = ["INTERNAL_ERROR", "check_module", "check_tree", "class_checks_loaded", "might_define_function"]

_CLASS_CHECKS = __name__.rsplit(".", 1)[0] + ".class_checks"


def might_define_function(text: str, extra_bases: Sequence[str]) -> bool:
    """A text test that rules out most files before any tree is looked at.

    Every spelling of an autograd Function base contains ``Function`` (``Function``,
    ``ag.Function``, ``InplaceFunction``, an alias imported as ``from ... import Function as F``).
    """
    if "Function" in text or "custom_op" in text:  # a Function class, or a torch.library custom op
        return True
    return any(base.rsplit(".", 1)[-1] in text for base in extra_bases)


def check_module(
    tree: ast.Module,
    lines: Sequence[str],
    filename: str = "<unknown>",
    extra_bases: Sequence[str] = (),
    rules: Optional[Iterable["Rule"]] = None,
    *,
    preview: bool = False,
    ctx_names: CtxNames = CtxNames(),
    min_torch_version: Optional[TorchVersion] = None,
) -> List[Finding]:
    """All findings for one module, sorted by position. Never raises.

    ``rules`` defaults to the core rules, with the preview rules too when ``preview`` is set.
    ``ctx_names`` are the accepted names of the context parameter (AGF002); ``min_torch_version`` the
    oldest torch release the project supports (None: not said).
    """
    if not might_define_function("".join(lines), extra_bases):
        return []
    return check_tree(
        tree, lines, filename, extra_bases, rules, preview=preview, ctx_names=ctx_names,
        min_torch_version=min_torch_version,
    )


def check_tree(
    tree: ast.Module,
    lines: Sequence[str],
    filename: str = "<unknown>",
    extra_bases: Sequence[str] = (),
    rules: Optional[Iterable["Rule"]] = None,
    *,
    preview: bool = False,
    ctx_names: CtxNames = CtxNames(),
    min_torch_version: Optional[TorchVersion] = None,
) -> List[Finding]:
    """:func:`check_module` for an adapter that has already passed the file through the text test (so
    that the text of every such file is not joined and searched twice)."""
    try:
        discovery = Discovery(tree, filename, extra_bases)
        custom_ops = None
        if any("custom_op" in line for line in lines):
            custom_ops = CustomOpDiscovery(tree, discovery.imports)
            if not custom_ops.ops:
                custom_ops = None
        if not discovery.function_classes and custom_ops is None:
            return []
        from . import class_checks  # libcst and the rules: needed from the first Function class on

        return class_checks.check_classes(
            tree, lines, discovery, rules, preview, ctx_names, min_torch_version, custom_ops=custom_ops
        )
    except Exception as error:  # noqa: BLE001 - a plugin must never take the whole flake8 run down
        return [internal_error(1, 0, "module", error)]


def class_checks_loaded() -> bool:
    """Whether some module checked so far held a Function class (so libcst and the rules are loaded)."""
    return _CLASS_CHECKS in sys.modules
