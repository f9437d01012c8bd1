"""Checking one module: the entry point every adapter (flake8 plugin, command line) calls.

Most files that reach this point (they mention ``Function``) hold no Function class. For them the
work is one walk over the statements of flake8's ``ast`` tree (:mod:`.discovery`); this module and
discovery import neither libcst nor the rules. :mod:`.class_checks`, which does, is imported when a
Function class is first found.
"""

from __future__ import annotations

import ast
import sys
from typing import List, Sequence

from ..core.findings import INTERNAL_ERROR, Finding, internal_error
from ..core.settings import DEFAULT_SETTINGS, Settings
from ..engine.discovery.custom_ops import CustomOpDiscovery
from ..engine.discovery.functions import Discovery

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
    tree: ast.Module, lines: Sequence[str], filename: str = "<unknown>", settings: Settings = DEFAULT_SETTINGS
) -> List[Finding]:
    """All findings for one module, sorted by position. Never raises.

    ``settings`` are the run's (:class:`~..core.settings.Settings`): the project's Function bases, the
    rules to run, the accepted names of the context parameter, the oldest torch release supported.
    """
    if not might_define_function("".join(lines), settings.function_bases):
        return []
    return check_tree(tree, lines, filename, settings)


def check_tree(
    tree: ast.Module, lines: Sequence[str], filename: str = "<unknown>", settings: Settings = DEFAULT_SETTINGS
) -> List[Finding]:
    """:func:`check_module` for an adapter that has already passed the file through the text test (so
    that the text of every such file is not joined and searched twice)."""
    try:
        discovery = Discovery(tree, filename, settings)
        custom_ops = None
        if any("custom_op" in line for line in lines):
            custom_ops = CustomOpDiscovery(tree, discovery.imports)
            if not custom_ops.ops:
                custom_ops = None
        if not discovery.function_classes and custom_ops is None:
            return []
        from . import class_checks  # libcst and the rules: needed from the first Function class on

        return class_checks.check_classes(tree, lines, discovery, settings, custom_ops=custom_ops)
    except Exception as error:  # noqa: BLE001 - a plugin must never take the whole flake8 run down
        return [internal_error(1, 0, "module", error)]


def class_checks_loaded() -> bool:
    """Whether some module checked so far held a Function class (so libcst and the rules are loaded)."""
    return _CLASS_CHECKS in sys.modules
