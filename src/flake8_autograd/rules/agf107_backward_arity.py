"""AGF107: backward takes a different number of gradients than forward returns outputs."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.custom_op_model import op_output_count
from ..engine.models.class_model import ClassModel
from .base import Finding, Rule


class BackwardArityRule(Rule):
    code = "AGF107"
    applies_to_custom_ops = True
    name = "backward takes the wrong number of gradients"
    message = "{method} takes {taken} for {outputs}; take one gradient per output (or *grad_outputs)"
    invalid = (
        """
        class SplitFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        """,
    )
    valid = (
        """
        class SplitFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, grad_a, grad_b):
                return grad_a * 2 + grad_b * 3
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in ("backward", "vjp"):
            method = model.own_methods.get(name)
            if method is None or method.signature is None or method.signature.vararg is not None:
                continue
            if method.ctx_name is None:
                continue
            outputs = op_output_count(model)  # an operator's return annotation says it
            if outputs is None:
                outputs = analysis.output_count(model)
            if outputs is None:
                return
            forward = model.method("forward")
            if forward is not None and analysis.backward_never_runs(model):
                return  # autograd never calls backward, so its parameters are never filled
            grads = method.signature.positional[1:]
            required = sum(1 for param in grads if not param.has_default)
            if required <= outputs <= len(grads):
                continue
            taken = f"{len(grads)} gradient" + ("s" if len(grads) != 1 else "")
            yield self.report(
                method, method=method.qualname, taken=taken,
                outputs=f"{outputs} output" + ("s" if outputs != 1 else ""),
            )
