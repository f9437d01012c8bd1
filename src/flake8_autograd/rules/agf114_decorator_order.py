"""AGF114: @once_differentiable written above @staticmethod."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis import Analysis
from ..engine.model import CONTRACT_METHODS, ClassModel
from .base import Finding, Rule


class DecoratorOrderRule(Rule):
    code = "AGF114"
    name = "@once_differentiable above @staticmethod"
    message = (
        "{method} has @once_differentiable above @staticmethod; put @staticmethod first (outermost), "
        "once_differentiable wraps the plain function"
    )
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
