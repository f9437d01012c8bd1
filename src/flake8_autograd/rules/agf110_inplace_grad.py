"""AGF110: backward modifies a gradient it received in place."""

from __future__ import annotations

from typing import Iterator, Set

from ..engine.analysis.aliases import method_writes
from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel
from .base import Finding, Rule


class InPlaceGradRule(Rule):
    code = "AGF110"
    applies_to_custom_ops = True
    name = "gradient modified in place in backward"
    message = "{method} changes gradient {grad!r} in place ({how}); compute a new tensor"
    invalid = (
        """
        class ScaleFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                grad.mul_(2)
                return grad
        """,
    )
    valid = (
        """
        class ScaleFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in ("backward", "vjp"):
            method = model.own_methods.get(name)
            if method is None or method.signature is None or method.ctx_name is None:
                continue
            grads = {param.name for param in method.signature.positional[1:]}
            reported: Set[str] = set()
            for write in method_writes(method, analysis):  # a gradient bound again anywhere is not followed
                if write.root not in grads or write.root in reported:
                    continue
                reported.add(write.root)
                yield self.report(method, write.node, method=method.qualname, grad=write.root, how=write.describe())
