"""AGF121: ctx.save_for_backward called in backward, vjp or jvp, where it does nothing."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel
from .base import Finding, Rule

# Only forward and setup_context have their saves packed into the graph node; later calls are dropped.
# (save_for_forward is left out: called later it is not dropped but replaces what ctx.saved_tensors returns.)
_AFTER_FORWARD = ("backward", "vjp", "jvp")


class SaveOutsideForwardRule(Rule):
    code = "AGF121"
    name = "ctx.save_for_backward called in backward, vjp or jvp"
    message = "{method} calls ctx.save_for_backward, a no-op after forward; call it in {saver}"
    invalid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

            @staticmethod
            def backward(ctx, grad):
                ctx.save_for_backward(grad)
                return grad
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
        for name in _AFTER_FORWARD:
            method = model.own_methods.get(name)
            if method is None or method.node is None or method.ctx_name is None:
                continue
            saver = "setup_context" if model.setup_context_style else "forward"
            for call in method.facts.ctx_calls.get("save_for_backward", []):
                yield self.report(method, call, method=method.qualname, saver=saver)
