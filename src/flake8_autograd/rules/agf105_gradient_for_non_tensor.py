"""AGF105: a gradient that is not None returned for an input that is not a tensor."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ..engine.analysis import Analysis
from ..engine.model import ClassModel, forward_inputs
from ..engine.tensors import Kind
from .base import Finding, Rule

# Expressions that are certainly not None: computations and number literals.
_NOT_NONE = (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Integer, cst.Float)


class GradientForNonTensorRule(Rule):
    code = "AGF105"
    name = "gradient returned for a non-tensor input"
    message = (
        "{method} returns a gradient for {input!r} (position {position}), which is not a tensor; "
        "return None in that slot"
    )
    invalid = (
        """
        class ScaleFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, scale: float):
                ctx.scale = scale
                return x * scale

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.scale, grad.sum()
        """,
    )
    valid = (
        """
        class ScaleFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, scale: float):
                ctx.scale = scale
                return x * scale

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.scale, None
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        inputs = forward_inputs(model)
        forward = model.method("forward")
        if inputs is None or forward is None or forward.node is None:
            return
        forward_inference = analysis.inference(forward)
        non_tensors = {
            index for index, param in enumerate(inputs.params)
            if forward_inference.input_kind(param) is Kind.NOT_TENSOR
        }
        if not non_tensors:
            return
        for name in ("backward", "vjp"):
            method = model.own_methods.get(name)
            if method is None or method.node is None:
                continue
            inference = analysis.inference(method)
            for counted in analysis.returns(method):
                if counted.slots is None or counted.falls_off:
                    continue
                for index in sorted(non_tensors):
                    if index >= len(counted.slots):
                        continue
                    slot = counted.slots[index]
                    if all(
                        isinstance(node, _NOT_NONE) and inference.kind(node) in (Kind.TENSOR, Kind.NOT_TENSOR)
                        for node in slot
                    ):
                        yield self.report(
                            method, slot[0], method=method.qualname, input=inputs.params[index].name,
                            position=index + 1,
                        )
