"""AGF129: vmap support that cannot work: asked for on a Function without setup_context, or a vmap
staticmethod that does not return (output, out_dims)."""

from __future__ import annotations

from typing import FrozenSet, Iterator

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel, Method, uses_first_as_ctx
from ..engine.facts.tensors.torch_names import TENSOR_METHODS
from .base import Finding, Rule


class VmapSupportRule(Rule):
    code = "AGF129"
    name = "vmap support without setup_context, or a vmap without out_dims"
    message = "{what} needs setup_context; move forward's ctx work into setup_context"
    returns_message = "{method} returns {count}; return a pair (output, out_dims)"
    invalid = (
        """
        class ExpFn(torch.autograd.Function):
            generate_vmap_rule = True

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
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(x):
                return x.exp()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(output)

            @staticmethod
            def vmap(info, in_dims, x):
                return x.exp()
        """,
    )
    valid = (
        """
        class ExpFn(torch.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x):
                return x.exp()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(output)

            @staticmethod
            def backward(ctx, grad):
                (out,) = ctx.saved_tensors
                return grad * out
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        yield from self._without_setup_context(model)
        vmap = model.own_methods.get("vmap")
        if vmap is None or vmap.node is None:
            return
        inputs = _vmap_inputs(vmap)
        for counted in analysis.returns(vmap):
            # Falling off the end is left out: a body that always raises may look as if it could.
            if counted.falls_off or not isinstance(counted.node, cst.Return) or counted.count == 2:
                continue
            count = counted.count
            if count is None and counted.node.value is not None and _one_tensor(counted.node.value, inputs):
                count = 1
            if count is None:
                continue
            described = "one value" if count == 1 else f"{count} values"
            yield self.report(vmap, counted.node, self.returns_message, method=vmap.qualname, count=described)

    def _without_setup_context(self, model: ClassModel) -> Iterator[Finding]:
        """``generate_vmap_rule = True`` or a vmap staticmethod written in a class whose forward is of the
        combined style, with no setup_context anywhere in a hierarchy the module shows whole.

        ``apply`` raises under any torch.func transform before it looks at either (autograd/function.py):
        both can only take effect under ``torch.vmap``, so both are certainly dead as written.
        """
        if model.has_unknown_base or model.setup_context_style:
            return
        forward = model.method("forward")
        if forward is None or forward.node is None or not uses_first_as_ctx(forward):
            return
        flag = model.class_attributes.get("generate_vmap_rule")
        if isinstance(flag, cst.Name) and flag.value == "True":
            statement = model.class_attribute_statements["generate_vmap_rule"]
            yield self.report_in(model, statement, what=f"generate_vmap_rule = True on {model.name}")
            return  # one finding per class: adding setup_context fixes the vmap staticmethod too
        vmap = model.own_methods.get("vmap")
        if vmap is not None:
            yield self.report(vmap, what=vmap.qualname)


# Elementwise tensor methods beyond the engine's list, each returning one tensor.
_ONE_TENSOR_METHODS = TENSOR_METHODS | frozenset(
    "sin cos tan asin acos atan sinh cosh asinh acosh atanh erf erfc erfinv floor ceil round trunc frac expm1 "
    "log1p log2 log10 exp2 sinc logit".split()
)

# Operators no tuple supports: their result is never the (output, out_dims) pair.
_NO_TUPLE_OPERATORS = (cst.Subtract, cst.Divide, cst.FloorDivide, cst.MatrixMultiply, cst.Power)


def _vmap_inputs(vmap: Method) -> FrozenSet[str]:
    """vmap's parameters after ``info`` and ``in_dims``: the arguments ``apply`` was given."""
    signature = vmap.signature
    if signature is None:
        return frozenset()
    return frozenset(param.name for param in signature.positional[2:] if param.name not in vmap.facts.bindings)


def _one_tensor(node: cst.BaseExpression, inputs: FrozenSet[str]) -> bool:
    """A returned expression that is one tensor, never a pair: a tensor method called on one of vmap's
    inputs (``x.exp()``, ``x.sum(0).neg()``), or arithmetic no tuple supports (``x - y``, ``x @ w``)."""
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, _NO_TUPLE_OPERATORS)
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value not in _ONE_TENSOR_METHODS:
            return False
        node = node.func.value
        if isinstance(node, cst.Name):
            return node.value in inputs
    return False
