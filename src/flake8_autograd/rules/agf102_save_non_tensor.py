"""AGF102: a value that is not a tensor passed to save_for_backward."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ..engine.analysis import Analysis
from ..engine.model import ClassModel
from ..engine.tensors import Kind, TensorInference
from .base import Finding, Rule


class SaveNonTensorRule(Rule):
    code = "AGF102"
    name = "non-tensor passed to save_for_backward"
    message = (
        "{method} passes {value}, which is not a tensor, to ctx.save_for_backward; store non-tensors as "
        "ctx attributes (ctx.name = value)"
    )
    invalid = (
        """
        class ViewFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, x.shape)
                return x.view(-1)
        """,
    )
    valid = (
        """
        class ScaleFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, weight=None):
                ctx.save_for_backward(x, weight)
                ctx.shape = x.shape
                return x * 2
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in ("forward", "setup_context"):
            method = model.own_methods.get(name)
            if method is None or method.node is None:
                continue
            inference = analysis.inference(method)
            for call in method.facts.ctx_calls.get("save_for_backward", []):
                for arg in call.args:
                    if arg.star or arg.keyword is not None:
                        continue
                    if _certainly_not_tensor(arg.value, inference):
                        code = _EMPTY.code_for_node(arg.value)
                        value = f"'{code}'" if len(code) <= 40 and "\n" not in code else "a value"
                        yield self.report(method, arg.value, method=method.qualname, value=value)


_EMPTY = cst.Module(body=[])


def _certainly_not_tensor(node: cst.BaseExpression, inference: TensorInference) -> bool:
    """Not a tensor by what the expression is, not by a guess about a parameter (whose caller decides)."""
    if isinstance(node, cst.Name) and node.value in inference.params:
        return False
    return inference.kind(node) is Kind.NOT_TENSOR
