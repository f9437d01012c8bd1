"""AGF127: backward never reads the incoming gradient of an output that carries one."""

from __future__ import annotations

from typing import Iterator, List

from ..engine.analysis import Analysis
from ..engine.differentiable_outputs import describe, differentiable_outputs, names_read
from ..engine.model import ClassModel
from .base import Finding, Rule


class UnreadOutputGradientRule(Rule):
    code = "AGF127"
    name = "gradient of a differentiable output never read"
    message = (
        "{method} never reads {grads}, the {gradients} of forward's {outputs}, computed from the inputs as "
        "floating tensors: a loss that uses {those} gets a silently wrong gradient; add the contribution to "
        "backward, or pass {those} to ctx.mark_non_differentiable in forward"
    )
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
            grads=_listed([grads[index].name for index in dropped]),
            gradients="gradients" if many else "gradient",
            outputs=("outputs " if many else "output ") + _listed(
                [f"{index + 1} ({describe(outputs.certain[index])})" for index in dropped]
            ),
            those="those outputs" if many else "that output",
        )


def _listed(items: List[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
