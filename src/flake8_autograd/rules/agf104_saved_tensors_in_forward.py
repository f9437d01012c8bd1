"""AGF104: ctx.saved_tensors read in forward or setup_context, where it is always empty."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel
from .base import Finding, Rule


class SavedTensorsInForwardRule(Rule):
    code = "AGF104"
    applies_to_custom_ops = True
    name = "saved_tensors read in forward or setup_context"
    message = "{method} reads ctx.saved_tensors (empty until backward); use the tensors themselves"
    invalid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                (saved,) = ctx.saved_tensors
                return saved.exp()
        """,
    )
    valid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = x.exp()
                ctx.save_for_backward(out)
                return out

            @staticmethod
            def backward(ctx, grad):
                (out,) = ctx.saved_tensors
                return grad * out
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in ("forward", "setup_context"):
            method = model.own_methods.get(name)
            if method is None or method.node is None or method.ctx_name is None:
                continue
            for node in method.facts.ctx_reads.get("saved_tensors", []):
                yield self.report(method, node, method=method.qualname)
