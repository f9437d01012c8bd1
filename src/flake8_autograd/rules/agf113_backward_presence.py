"""AGF113: both backward and vjp defined, or a forward with neither."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis import Analysis
from ..engine.model import ClassModel
from .base import Finding, Rule


class BackwardPresenceRule(Rule):
    code = "AGF113"
    name = "backward and vjp both defined, or neither"
    both_message = "{cls} defines both backward and vjp, which PyTorch rejects; keep only backward"
    message = (
        "{cls} defines forward but no backward; define backward(ctx, *grad_outputs), "
        "or wrap the computation without a custom Function"
    )
    invalid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()
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
        backward, vjp = model.method("backward"), model.method("vjp")
        own = model.own_methods
        if backward is not None and vjp is not None and (own.get("backward") is backward or own.get("vjp") is vjp):
            later = vjp if model.own_methods.get("vjp") is vjp else backward
            yield self.report(later, template=self.both_message, cls=model.name)
            return
        forward = model.own_methods.get("forward")
        if forward is None or backward is not None or vjp is not None or model.has_unknown_base:
            return
        if analysis.discovery.has_local_subclass(model.site):
            return  # a base whose subclasses supply backward
        yield self.report(forward, cls=model.name)
