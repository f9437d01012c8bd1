"""AGF127: backward never reads the incoming gradient of an output that carries one."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis.module_analysis import Analysis
from ..engine.analysis.differentiable_outputs import differentiable_outputs, names_read
from ..engine.models.class_model import ClassModel
from .base import Finding, Rule, listed


class UnreadOutputGradientRule(Rule):
    code = "AGF127"
    name = "gradient of a differentiable output never read"
    message = "{method} ignores {grads} ({outputs}); use {them} or mark the {output} non-differentiable"
    invalid = (
        """
        class SinCos(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin(), x.cos()

            @staticmethod
            def backward(ctx, grad_sin, grad_cos):
                (x,) = ctx.saved_tensors
                return grad_sin * x.cos()
        """,
    )
    valid = (
        """
        class SinCos(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin(), x.cos()

            @staticmethod
            def backward(ctx, grad_sin, grad_cos):
                (x,) = ctx.saved_tensors
                return grad_sin * x.cos() - grad_cos * x.sin()
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        backward = model.own_methods.get("backward")
        if backward is None or backward.node is None or backward.signature is None:
            return
        signature = backward.signature
        if signature.vararg is not None or signature.kwarg is not None or not signature.positional:
            return  # ``*grad_outputs``: the gradients are read together, or forwarded
        grads = signature.positional[1:]
        outputs = differentiable_outputs(model, analysis)
        if outputs is None or outputs.count != len(grads) or not outputs.certain:
            return  # the count differs (AGF107's question) or no output certainly carries a gradient
        read = names_read(backward)
        dropped = [
            index for index, grad in enumerate(grads)
            # ``_grad``: the author marks the gradient as meant to be unused (a stand-in, a test double).
            if index in outputs.certain and grad.name not in read and not grad.name.startswith("_")
        ]
        if not dropped:
            return
        many = len(dropped) > 1
        yield self.report(
            backward, grads[dropped[0]].node.name,
            method=backward.qualname,
            grads=listed([grads[index].name for index in dropped]),
            outputs=("outputs " if many else "output ") + ", ".join(str(index + 1) for index in dropped),
            them="them" if many else "it",
            output="outputs" if many else "output",
        )
