"""AGF114: @once_differentiable written above @staticmethod."""

from __future__ import annotations

from typing import Iterator, List, Optional

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import CONTRACT_METHODS, ClassModel
from ..core.fixes import Fix
from ..engine.syntax.locate import bare_code, locator
from .base import Finding, Rule


class DecoratorOrderRule(Rule):
    code = "AGF114"
    name = "@once_differentiable above @staticmethod"
    message = "{method} has @once_differentiable above @staticmethod; put @staticmethod first"
    invalid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

            @once_differentiable
            @staticmethod
            def backward(ctx, grad):
                return grad
        """,
    )
    valid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

            @staticmethod
            @once_differentiable
            def backward(ctx, grad):
                return grad
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in CONTRACT_METHODS:
            method = model.own_methods.get(name)
            if method is None or method.node is None:
                continue
            names = [decorator.rsplit(".", 1)[-1] for decorator in method.decorators]
            if "once_differentiable" in names and "staticmethod" in names:
                if names.index("once_differentiable") < names.index("staticmethod"):
                    decorator = method.node.decorators[names.index("once_differentiable")]
                    yield self.report(method, decorator, method=method.qualname)

    def fix(self, finding: Finding, model: ClassModel, analysis: Analysis) -> Optional[Fix]:
        """Move ``@staticmethod`` to the top; the decorators above it move down one, in their order.

        Only the decorator expressions are exchanged, so comments and blank lines stay where they are.
        """
        for name in CONTRACT_METHODS:
            method = model.own_methods.get(name)
            if method is None or method.node is None:
                continue
            names = [decorator.rsplit(".", 1)[-1] for decorator in method.decorators]
            if "once_differentiable" not in names or "staticmethod" not in names:
                continue
            decorators = method.node.decorators
            if method.position(decorators[names.index("once_differentiable")]) != (finding.line, finding.column):
                continue
            static = names.index("staticmethod")
            expressions: List[cst.BaseExpression] = [decorator.decorator for decorator in decorators[: static + 1]]
            reordered = [expressions[-1], *expressions[:-1]]
            where = locator(model.segment)
            if where is None:
                return None
            edits = [where.replace(old, bare_code(new)) for old, new in zip(expressions, reordered)]
            if any(edit is None for edit in edits):
                return None
            return Fix(tuple(edit for edit in edits if edit is not None))
        return None
