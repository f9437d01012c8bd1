"""AGF119: ``ctx.saved_variables``, the deprecated alias of ``ctx.saved_tensors``."""

from __future__ import annotations

from typing import Iterator, Optional

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel
from ..core.fixes import Fix
from ..engine.syntax.locate import locator
from .base import Finding, Rule

DEPRECATED = "saved_variables"


class SavedVariablesRule(Rule):
    code = "AGF119"
    name = "deprecated ctx.saved_variables"
    message = "{method} reads {ctx}.saved_variables (deprecated); read {ctx}.saved_tensors"
    invalid = (
        """
        class SquareFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_variables
                return 2 * x * grad
        """,
    )
    valid = (
        """
        class SquareFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 2 * x * grad
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for method in model.own_methods.values():
            if method.node is None or method.ctx_name is None:
                continue
            stored = {id(store.node) for store in method.facts.ctx_stores}
            for read in method.facts.ctx_reads.get(DEPRECATED, []):
                if id(read) not in stored:  # ``ctx.saved_variables = ...`` is no read of the alias
                    yield self.report(method, read, method=method.qualname, ctx=method.ctx_name)

    def fix(self, finding: Finding, model: ClassModel, analysis: Analysis) -> Optional[Fix]:
        """``ctx.saved_variables`` becomes ``ctx.saved_tensors``: the same tuple, under its current name."""
        for method in model.own_methods.values():
            if method.node is None:
                continue
            for read in method.facts.ctx_reads.get(DEPRECATED, []):
                if method.position(read) != (finding.line, finding.column):
                    continue
                where = locator(model.segment)
                edit = where.replace(read.attr, "saved_tensors") if where is not None else None
                return Fix((edit,)) if edit is not None else None
        return None
