"""AGF116: backward or forward returns a list display, which PyTorch takes as one value."""

from __future__ import annotations

from typing import Iterator, List, Optional

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.custom_op_model import is_custom_op
from ..engine.models.class_model import ClassModel, return_index
from ..core.fixes import Edit, Fix
from ..engine.syntax.locate import bare_code, locator
from .base import Finding, Rule


FORWARD_UNSAFE_BECAUSE = (
    "callers of apply then get a tuple where they got a list (append, + [...] fail on it), and its tensors "
    "become outputs autograd tracks, so backward starts to run"
)


class ListReturnRule(Rule):
    code = "AGF116"
    applies_to_custom_ops = True
    name = "backward or forward returns a list"
    message = "{method} returns a list; return a tuple"
    forward_message = "{method} returns a list, so backward never runs; return a tuple"
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
                return [grad * b, grad * a]
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
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        # An operator may return a list: its return annotation (``list[Tensor]``) makes that one output.
        names = ("backward",) if is_custom_op(model) else ("backward", "vjp", "forward")
        for name in names:
            method = model.own_methods.get(name)
            if method is None or method.node is None:
                continue
            template = self.forward_message if name == "forward" else None
            for ret in method.facts.returns:
                if isinstance(ret.value, cst.List):
                    yield self.report(method, ret, template, method=method.qualname)

    def fix(self, finding: Finding, model: ClassModel, analysis: Analysis) -> Optional[Fix]:
        """``[a, b]`` becomes ``(a, b)``; a single element gets the comma that makes it a tuple.

        Safe in backward and vjp: PyTorch rejects a returned list on every call. In forward the tuple makes
        each element an output with a gradient, so backward starts to run with one incoming gradient per
        element: the fix is made only when backward takes exactly that many and every return of forward
        has that length, and it is unsafe (:data:`FORWARD_UNSAFE_BECAUSE`): callers get a tuple where they
        got a list.
        """
        for name in ("backward", "vjp", "forward"):
            method = model.own_methods.get(name)
            if method is None or method.node is None:
                continue
            index = return_index(method, (finding.line, finding.column))
            ret = method.facts.returns[index] if index is not None else None
            if ret is None or not isinstance(ret.value, cst.List):
                continue
            if name == "forward" and not _backward_takes_each_element(model, method.facts.returns, ret.value):
                return None
            where = locator(model.segment)
            span = where.span(ret.value) if where is not None else None
            if where is None or span is None or where.text(*span) != bare_code(ret.value):
                return None
            (first_line, first_column), (last_line, last_column) = span
            elements = ret.value.elements
            needs_comma = len(elements) == 1 and not isinstance(elements[0].comma, cst.Comma)
            return Fix(
                (
                    Edit((first_line, first_column), (first_line, first_column + 1), "("),
                    Edit((last_line, last_column - 1), (last_line, last_column), ",)" if needs_comma else ")"),
                ),
                FORWARD_UNSAFE_BECAUSE if name == "forward" else None,
            )
        return None


def _backward_takes_each_element(model: ClassModel, returns: List[cst.Return], listed: cst.List) -> bool:
    """Every return of forward is a display of ``listed``'s length, and backward takes one gradient each."""
    count = len(listed.elements)
    for ret in returns:
        value = ret.value
        if not isinstance(value, (cst.List, cst.Tuple)) or len(value.elements) != count:
            return False
        if any(isinstance(element, cst.StarredElement) for element in value.elements):
            return False
    backward = model.method("backward") or model.method("vjp")
    signature = backward.signature if backward is not None else None
    if signature is None or signature.vararg is not None or signature.keyword_only:
        return False
    gradients = signature.positional[1:]  # after ctx
    return len(gradients) == count and not any(param.has_default for param in gradients)
