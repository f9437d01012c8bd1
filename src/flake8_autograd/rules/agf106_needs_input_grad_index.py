"""AGF106: ctx.needs_input_grad indexed past the number of forward inputs."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel, forward_inputs
from .base import Finding, Rule, listed


class NeedsInputGradIndexRule(Rule):
    code = "AGF106"
    applies_to_custom_ops = True
    name = "needs_input_grad index out of range"
    message = "{method} reads ctx.needs_input_grad[{index}] for {inputs} ({names}); index from 0 to {last}"
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
                grad_a = grad * b if ctx.needs_input_grad[1] else None
                grad_b = grad * a if ctx.needs_input_grad[2] else None
                return grad_a, grad_b
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
        inputs = forward_inputs(model)
        if inputs is None or inputs.total == 0:
            return
        for method in model.own_methods.values():
            if method.node is None or method.ctx_name is None or method.name not in (
                "forward", "setup_context", "backward", "vjp", "jvp"
            ):
                continue
            for subscript in method.facts.ctx_subscripts:
                if subscript.attribute == "needs_input_grad" and (subscript.index or 0) >= inputs.total:
                    yield self.report(
                        method, subscript.node, method=method.qualname, index=subscript.index,
                        inputs=f"{inputs.total} input" + ("s" if inputs.total != 1 else ""),
                        names=listed(inputs.names), last=inputs.total - 1,
                    )
