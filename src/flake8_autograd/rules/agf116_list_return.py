"""AGF116: backward returns a list display, which PyTorch counts as one value."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from ..engine.analysis import Analysis
from ..engine.model import ClassModel
from ..fixes import Edit, Fix, bare_code, locator
from .base import Finding, Rule


class ListReturnRule(Rule):
    code = "AGF116"
    name = "backward returns a list"
    message = "{method} returns a list, which PyTorch counts as one gradient; return a tuple"
    invalid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, grad):
                a, b = ctx.saved_tensors
                return [grad * b, grad * a]
        """,
    )
    valid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, grad):
                a, b = ctx.saved_tensors
                grad_a = grad * b if ctx.needs_input_grad[0] else None
                grad_b = grad * a if ctx.needs_input_grad[1] else None
                return grad_a, grad_b
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in ("backward", "vjp"):
            method = model.own_methods.get(name)
            if method is None or method.node is None:
                continue
            for ret in method.facts.returns:
                if isinstance(ret.value, cst.List):
                    yield self.report(method, ret, method=method.qualname)

    def fix(self, finding: Finding, model: ClassModel, analysis: Analysis) -> Optional[Fix]:
        """``[a, b]`` becomes ``(a, b)``; a single element gets the comma that makes it a tuple."""
        for name in ("backward", "vjp"):
            method = model.own_methods.get(name)
            if method is None or method.node is None:
                continue
            for ret in method.facts.returns:
                if not isinstance(ret.value, cst.List) or method.position(ret) != (finding.line, finding.column):
                    continue
                where = locator(model.segment)
                span = where.span(ret.value) if where is not None else None
                if where is None or span is None or where.text(*span) != bare_code(ret.value):
                    return None
                (first_line, first_column), (last_line, last_column) = span
                elements = ret.value.elements
                needs_comma = len(elements) == 1 and not isinstance(elements[0].comma, cst.Comma)
                return Fix(
                    (
                        Edit((first_line, first_column), (first_line, first_column + 1), "("),
                        Edit((last_line, last_column - 1), (last_line, last_column), ",)" if needs_comma else ")"),
                    )
                )
        return None
