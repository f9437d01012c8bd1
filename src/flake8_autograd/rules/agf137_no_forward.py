"""AGF137: a Function applied in the module that defines no forward: every such call raises."""

from __future__ import annotations

import difflib
import re
from typing import Iterator, Optional

import libcst as cst

from ..engine.analysis.apply_sites import apply_sites
from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel
from .base import Finding, Rule


class NoForwardRule(Rule):
    code = "AGF137"
    name = "a Function applied in the module that defines no forward"
    message = "{cls} defines no forward but line {line} applies it (raises NotImplementedError); define forward{hint}"
    invalid = (
        """
        class Double(torch.autograd.Function):
            @staticmethod
            def foward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        def double(x):
            return Double.apply(x)
        """,
    )
    valid = (
        """
        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        def double(x):
            return Double.apply(x)
        """,
        """
        class Scaled(torch.autograd.Function):  # a base: its subclasses define forward
            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.scale
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        if model.method("forward") is not None or not _class_fully_seen(model, analysis):
            return
        sites = apply_sites(analysis, model.site)
        if not sites:
            return  # never applied here: an abstract base, or applied from another module
        yield self.report_in(model, cls=model.name, line=sites[0].call.lineno, hint=_meant(model))


def _class_fully_seen(model: ClassModel, analysis: Analysis) -> bool:
    """Whether every way the class (or a local base) could get a forward is in view: no base outside the
    module, no class decorator or keyword (a metaclass), no ``__init_subclass__`` or ``apply`` of its own, a
    body of plain definitions and assignments (no ``if``/``try`` that may define one), and no assignment of
    ``Cls.forward`` or ``setattr`` anywhere in the module."""
    if model.has_unknown_base:
        return False
    for each in model.mro:
        node = each.site.node
        if node.decorator_list or node.keywords or "__init_subclass__" in each.own_methods:
            return False
        if "apply" in each.own_methods or each.class_attribute("apply") is not None:
            return False
        body = each.node.body
        statements = body.body if isinstance(body, cst.IndentedBlock) else ()
        if any(not isinstance(statement, (cst.FunctionDef, cst.ClassDef, cst.SimpleStatementLine))
               for statement in statements):
            return False
    text = "".join(analysis.lines or ())
    if not text or "setattr" in text:
        return False
    names = "|".join(re.escape(each.name) for each in model.mro)
    return re.search(r"\b(?:" + names + r")\s*\.\s*forward\s*=[^=]", text) is None


def _meant(model: ClassModel) -> str:
    """`` (is foward meant?)`` when the class defines a method named almost like forward."""
    matches = difflib.get_close_matches("forward", list(model.own_methods), n=1, cutoff=0.75)
    close: Optional[str] = matches[0] if matches else None
    if close is None:
        close = next((name for name in model.own_methods if name.lower().strip("_") == "forward"), None)
    return f" (is {close} meant?)" if close is not None else ""
