"""AGF102: a value that is not a tensor passed to save_for_backward."""

from __future__ import annotations

from typing import Dict, Iterator

import libcst as cst

from ..engine.analysis import Analysis
from ..engine.model import ClassModel, Method
from ..engine.tensors import Kind, TensorInference
from ..engine.walk import short_code
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
            whole = _whole_tuples(method) if name == "setup_context" else {}
            for call in method.facts.ctx_calls.get("save_for_backward", []):
                for arg in call.args:
                    if arg.star or arg.keyword is not None:
                        continue
                    if isinstance(arg.value, cst.Name) and arg.value.value in whole:
                        # ``inputs`` is always a tuple; ``output`` is one when forward returns several values.
                        if whole[arg.value.value] or inference.kind(arg.value) is Kind.NOT_TENSOR:
                            value = f"'{arg.value.value}'" + (" (a tuple)" if whole[arg.value.value] else "")
                            yield self.report(method, arg.value, method=method.qualname, value=value)
                    elif _certainly_not_tensor(arg.value, inference):
                        code = short_code(arg.value)
                        value = f"'{code}'" if code is not None else "a value"
                        yield self.report(method, arg.value, method=method.qualname, value=value)


def _whole_tuples(method: Method) -> Dict[str, bool]:
    """setup_context's ``inputs`` (always a tuple: True) and ``output`` (a tuple when forward returns one)."""
    signature = method.signature
    if signature is None or signature.vararg is not None:
        return {}
    names = {param.name: index == 1 for index, param in enumerate(signature.positional[1:3], start=1)}
    return {name: is_inputs for name, is_inputs in names.items() if name not in method.facts.bindings}


def _certainly_not_tensor(node: cst.BaseExpression, inference: TensorInference) -> bool:
    """Not a tensor by what the expression is, not by a guess about an input (whose caller decides)."""
    if isinstance(node, cst.Name) and node.value in inference.params:
        return False
    if inference.origin(node) == "input":
        return False  # setup_context's ``inputs[i]``: forward's parameter, as unknown as in forward
    return inference.kind(node) is Kind.NOT_TENSOR
