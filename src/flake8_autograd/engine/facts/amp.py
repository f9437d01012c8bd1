"""Which of torch's autocast helpers decorate a contract method: ``custom_fwd`` and ``custom_bwd``.

``torch.amp.custom_fwd`` records the autocast state on ``args[0]`` (the ctx of a combined-style forward)
and ``custom_bwd`` reads it back to run backward in that state. With ``cast_inputs`` set, forward runs
with autocast disabled on inputs cast to one dtype, so backward needs no state of forward's.

A decorator is known only when the import table resolves it to one of torch's spellings; anything else
(``functools.partial(custom_fwd, ...)``, a project's own wrapper) leaves the method's decorators unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from ..models.class_model import Method
from ..syntax.names import ImportTable
from ..syntax.walk import cst_dotted

# Every module that defines or re-exports the helpers (torch.cuda.amp's are the deprecated spellings).
_AMP_MODULES = ("torch.amp", "torch.amp.autocast_mode", "torch.cuda.amp", "torch.cuda.amp.autocast_mode")
CUSTOM_FWD = frozenset(f"{module}.custom_fwd" for module in _AMP_MODULES)
CUSTOM_BWD = frozenset(f"{module}.custom_bwd" for module in _AMP_MODULES)

# Decorators that pass every argument through unchanged and keep no autocast state of their own.
_PLAIN = frozenset(
    {"staticmethod", "builtins.staticmethod", "classmethod", "builtins.classmethod", "once_differentiable",
     "torch.autograd.function.once_differentiable", "torch.autograd.once_differentiable"}
)


@dataclass(frozen=True)
class AmpDecorators:
    """The autocast helpers on one method, and whether any other decorator may act like one."""

    custom_fwd: Optional[cst.Decorator] = None
    custom_bwd: Optional[cst.Decorator] = None
    casts_inputs: bool = False  # custom_fwd(cast_inputs=<not None>), or a value we cannot read
    unknown: bool = False  # a decorator the import table does not resolve to a plain one

    @property
    def none(self) -> bool:
        """Certainly neither helper: every decorator is known, none of them is one."""
        return self.custom_fwd is None and self.custom_bwd is None and not self.unknown


def amp_decorators(method: Method, imports: ImportTable) -> AmpDecorators:
    """The autocast helpers decorating ``method``; a method bound without a ``def`` is all unknown."""
    if method.node is None:
        return AmpDecorators(unknown=True)
    custom_fwd: Optional[cst.Decorator] = None
    custom_bwd: Optional[cst.Decorator] = None
    casts_inputs = False
    unknown = False
    for decorator in method.node.decorators:
        expression = decorator.decorator
        call = expression if isinstance(expression, cst.Call) else None
        dotted = cst_dotted(call.func if call is not None else expression)
        target = imports.resolve_dotted(dotted) if dotted is not None else None
        if target in CUSTOM_FWD:
            custom_fwd = decorator
            casts_inputs = call is not None and _casts_inputs(call)
        elif target in CUSTOM_BWD:
            custom_bwd = decorator
        elif target not in _PLAIN and dotted not in _PLAIN:
            unknown = True
    return AmpDecorators(custom_fwd, custom_bwd, casts_inputs, unknown)


def _casts_inputs(call: cst.Call) -> bool:
    """``cast_inputs=`` given a value other than a literal None (``**options`` may give one too)."""
    for arg in call.args:
        if arg.star == "**":
            return True
        if arg.keyword is not None and arg.keyword.value == "cast_inputs":
            return not (isinstance(arg.value, cst.Name) and arg.value.value == "None")
    return False
