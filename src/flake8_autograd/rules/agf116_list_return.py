"""AGF116: backward returns a list display, which PyTorch counts as one value."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ..engine.analysis import Analysis
from ..engine.model import ClassModel
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
