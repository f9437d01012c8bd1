"""AGF001: a contract method must be a @staticmethod."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis import Analysis
from ..engine.model import CONTRACT_METHODS, ClassModel
from .base import Finding, Rule


class StaticMethodRule(Rule):
    code = "AGF001"
    name = "contract method must be a @staticmethod"
    message = "{method} must be a @staticmethod; add @staticmethod above the def"
    classmethod_message = (
        "{method} must be a @staticmethod, not a @classmethod; replace @classmethod with @staticmethod"
    )
    invalid = (
        """
        class MyFn(torch.autograd.Function):
            def forward(ctx, x):
                return x * 2
        """,
        """
        class MyFn(torch.autograd.Function):
            @classmethod
            def backward(cls, ctx, grad):
                return grad * 2
        """,
    )
    valid = (
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            @once_differentiable
            def backward(ctx, grad):
                return grad * 2
        """,
        """
        class MyFn(torch.autograd.Function):
            backward = staticmethod(_backward_impl)
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in CONTRACT_METHODS:
            method = model.own_methods.get(name)
            if method is None or method.node is None or method.is_static:
                continue
            if method.is_classmethod:
                yield self.report(method, template=self.classmethod_message, method=method.qualname)
            else:
                yield self.report(method, method=method.qualname)
