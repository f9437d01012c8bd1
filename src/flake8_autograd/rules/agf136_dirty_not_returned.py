"""AGF136: forward marks an input dirty but returns it from no return: torch raises on every call."""

from __future__ import annotations

from typing import Iterator, List, Optional

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel, Method
from .base import Finding, Rule


class DirtyNotReturnedRule(Rule):
    code = "AGF136"
    name = "ctx.mark_dirty of an input that forward never returns"
    message = "{method} marks {name} dirty but never returns it (raises on every call); return {name}"
    invalid = (
        """
        class AddOne(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        """,
    )
    valid = (
        """
        class AddOne(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, grad):
                return grad
        """,
        """
        class AddOneTwice(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                out = x
                return out, x * 2

            @staticmethod
            def backward(ctx, grad, grad_double):
                return grad + 2 * grad_double
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        if model.setup_context_style:
            return  # the outputs are forward's, the marks setup_context's: not read together here
        forward = model.own_methods.get("forward")
        if forward is None or forward.node is None or forward.ctx_name is None or forward.facts.yields:
            return
        inputs = {param.name for param in forward.signature.positional} if forward.signature else set()
        for call in forward.facts.ctx_calls.get("mark_dirty", []):
            for arg in call.args:
                if arg.star or arg.keyword is not None or not isinstance(arg.value, cst.Name):
                    continue
                name = arg.value.value
                if name in inputs and forward.definitions(name) == 0 and _never_returned(forward, name):
                    yield self.report(forward, call, method=forward.qualname, name=name)


def _never_returned(forward: Method, name: str) -> bool:
    """Whether no return of ``forward`` can hand back the object ``name`` holds: every value returned (each
    element of a returned tuple) is certainly another object. Falling off the end returns None."""
    for ret in forward.facts.returns:
        values = _returned_values(ret)
        if values is None or not all(_certainly_another(value, forward, name) for value in values):
            return False
    return True


def _returned_values(ret: cst.Return) -> Optional[List[cst.BaseExpression]]:
    value = ret.value
    if value is None:
        return []
    if isinstance(value, (cst.Tuple, cst.List)):
        if any(isinstance(element, cst.StarredElement) for element in value.elements):
            return None  # ``return (*outs,)``: what it holds is not read here
        return [element.value for element in value.elements]
    return [value]


def _certainly_another(value: cst.BaseExpression, forward: Method, name: str, depth: int = 0) -> bool:
    """A value that is never the object ``name`` holds: a literal, the result of an arithmetic operator, a
    comparison or ``.clone()`` (each a new tensor), or a local bound once to one of these. A name, a call of
    anything else (``x.add_(1)`` and ``x.contiguous()`` may hand back ``x`` itself) or a parameter (a caller
    may pass the same tensor twice) may be it."""
    if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(value, cst.Name):
        if value.value == "None":
            return True
        if value.value == name or depth > 4:
            return False
        bindings = forward.facts.bindings.get(value.value, [])
        is_parameter = forward.signature is not None and any(
            param.name == value.value for param in forward.signature.positional
        )
        if is_parameter or len(bindings) != 1 or bindings[0].value is None:
            return False
        return _certainly_another(bindings[0].value, forward, name, depth + 1)
    if isinstance(value, (cst.BinaryOperation, cst.Comparison)):
        return True
    if isinstance(value, cst.UnaryOperation):
        return isinstance(value.operator, (cst.Minus, cst.BitInvert, cst.Not))  # ``+x`` may be ``x`` itself
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "clone":
        return True
    return False
