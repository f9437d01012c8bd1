"""AGF105: a gradient that is not None returned for an input that is not a tensor."""

from __future__ import annotations

from typing import Iterator, Set

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel, Method
from ..engine.facts.tensor_kinds import Kind, annotation_kind
from ..engine.facts.tensors.inference import TensorInference
from .base import Finding, Rule

# Expressions that are certainly not None: computations and number literals.
_NOT_NONE = (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Integer, cst.Float)


class GradientForNonTensorRule(Rule):
    code = "AGF105"
    applies_to_custom_ops = True
    name = "gradient returned for a non-tensor input"
    message = "{method} returns a gradient for non-tensor {input!r} (position {position}); return None there"
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
        inputs = model.forward_inputs()
        forward = model.method("forward")
        if inputs is None or forward is None or forward.node is None:
            return
        forward_inference = analysis.inference(forward)
        non_tensors = {
            index for index, param in enumerate(inputs.params)
            if forward_inference.input_kind(param) is Kind.NOT_TENSOR
            # Declared non-tensor, or a literal default no call in this module overrides with something else.
            and (
                annotation_kind(param.annotation, analysis.imports) is Kind.NOT_TENSOR
                or analysis.only_literals_passed(model.name, index)
            )
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
                    if all(_never_none(node, method, inference, set()) for node in slot):
                        yield self.report(
                            method, slot[0], method=method.qualname, input=inputs.params[index].name,
                            position=index + 1,
                        )


def _never_none(node: cst.BaseExpression, method: Method, inference: TensorInference, seen: Set[str]) -> bool:
    """A computation or a number, directly or through local names every binding of which is one."""
    if isinstance(node, cst.Name):
        bindings = method.facts.bindings.get(node.value)
        if not bindings or node.value in inference.params or node.value in seen or len(seen) > _MAX_NAMES:
            return False
        seen.add(node.value)
        return all(
            binding.value is not None and binding.index is None and _never_none(binding.value, method, inference, seen)
            for binding in bindings
        )
    return isinstance(node, _NOT_NONE) and inference.kind(node) in (Kind.TENSOR, Kind.NOT_TENSOR)


# How many local names are followed from one returned slot.
_MAX_NAMES = 20
