"""AGF005: backward computes gradients for several inputs without consulting ctx.needs_input_grad."""

from __future__ import annotations

from typing import Iterator, List, Set

import libcst as cst

from ..engine.analysis import Analysis
from ..engine.model import ClassModel, Method, forward_inputs
from ..engine.tensors import Kind
from ..engine.walk import fingerprint, walk
from .base import Finding, Rule


class NeedsInputGradRule(Rule):
    code = "AGF005"
    name = "needs_input_grad not consulted"
    message = (
        "{method} computes gradients for {inputs} without checking ctx.needs_input_grad; "
        "compute each only when ctx.needs_input_grad[i] is true and return None otherwise"
    )
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
                return grad * b, grad * a
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
        """
        class FusedFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return fused_forward(a, b)

            @staticmethod
            def backward(ctx, grad):
                grad_a, grad_b = fused_backward(grad, *ctx.saved_tensors)
                return grad_a, grad_b
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        method = model.own_methods.get("backward")
        if method is None or method.node is None or method.facts.ctx_escapes:
            return
        inputs = forward_inputs(model)
        if inputs is None or inputs.total < 2:
            return
        forward = model.method("forward")
        forward_inference = analysis.inference(forward) if forward is not None and forward.node is not None else None
        for counted in analysis.returns(method):
            if counted.slots is None or counted.falls_off:
                continue
            computed = []
            computations = set()  # one value returned in two slots is one computation
            for param, slot in zip(inputs.params, counted.slots):
                if forward_inference is not None and forward_inference.input_kind(param) is Kind.NOT_TENSOR:
                    continue  # a non-tensor input takes no gradient at all (PyTorch requires None there)
                if any(_is_computed(node, method) for node in slot):
                    computed.append(param.name)
                    computations.add(tuple(fingerprint(node) for node in slot))
            if len(computations) >= 2:
                if not any(_reads_needs_input_grad(base) for base in model.mro):
                    yield self.report(method, method=method.qualname, inputs=", ".join(computed))
                return


def _reads_needs_input_grad(model: ClassModel) -> bool:
    """Any ``.needs_input_grad`` in the class, nested functions included (a helper may check it)."""
    return any(
        isinstance(node, cst.Attribute) and node.attr.value == "needs_input_grad" for node in walk(model.node)
    )


def _is_computed(node: cst.BaseExpression, method: Method) -> bool:
    """Whether producing this value costs work: a call, arithmetic or indexing, following locals.

    A worklist rather than a recursion: a chain of aliases may be any length.
    """
    pending: List[cst.CSTNode] = [node]
    followed: Set[str] = set()
    while pending:
        value = pending.pop()
        for candidate in [value, *walk(value)]:
            if isinstance(candidate, (cst.Call, cst.BinaryOperation)):
                return True
            if isinstance(candidate, cst.Subscript) and not _reads_ctx(candidate.value, method):
                return True
            if isinstance(candidate, cst.Name) and candidate.value not in followed:
                followed.add(candidate.value)
                pending.extend(_followed_values(candidate.value, method))
    return False


def _followed_values(name: str, method: Method) -> List[cst.BaseExpression]:
    """The values a local name is bound to; none when one binding is not followed."""
    values: List[cst.BaseExpression] = []
    for binding in method.facts.bindings.get(name, ()):  # none: a parameter passed through, a global, a builtin
        if binding.value is None:
            return []  # bound in a loop, a with, ...: unsure, so not counted
        if binding.index is not None and isinstance(binding.value, cst.Call):
            return []  # unpacked from one fused call that yields several gradients
        values.append(binding.value)
    return values


def _reads_ctx(node: cst.BaseExpression, method: Method) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value == method.ctx_name
