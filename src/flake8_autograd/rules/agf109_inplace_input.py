"""AGF109: forward modifies a tensor input in place without ctx.mark_dirty."""

from __future__ import annotations

from typing import Iterator, Set

import libcst as cst

from ..engine.analysis import Analysis
from ..engine.model import ClassModel, Method, forward_inputs
from ..engine.tensors import Kind
from .base import Finding, Rule


class InPlaceInputRule(Rule):
    code = "AGF109"
    name = "input modified in place without mark_dirty"
    message = (
        "{method} modifies input {input!r} in place ({how}) without ctx.mark_dirty({input}); "
        "call ctx.mark_dirty({input}) and return it, or work on a copy"
    )
    invalid = (
        """
        class ReluFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor):
                x.clamp_(min=0)
                ctx.save_for_backward(x)
                return x
        """,
    )
    valid = (
        """
        class ReluFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor):
                x.clamp_(min=0)
                ctx.mark_dirty(x)
                ctx.save_for_backward(x)
                return x
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        forward = model.own_methods.get("forward")
        inputs = forward_inputs(model)
        if forward is None or forward.node is None or inputs is None:
            return
        dirty = _marked_dirty(model, forward)
        if dirty is None:
            return
        inference = analysis.inference(forward)
        names = {param.name: param for param in inputs.params}
        reported: Set[str] = set()
        for change in forward.facts.in_place:
            param = names.get(change.name)
            if param is None or change.name in dirty or change.name in reported:
                continue
            if forward.rebinds(change.name):
                continue
            kind = inference.input_kind(param)
            # An in-place method (``x.add_()``) names a tensor by itself; ``x[i] = v`` or ``x += v`` needs proof.
            if kind is Kind.NOT_TENSOR or (kind is not Kind.TENSOR and not change.how.startswith(".")):
                continue
            reported.add(change.name)
            yield self.report(forward, change.node, method=forward.qualname, input=change.name, how=change.how)


def _marked_dirty(model: ClassModel, forward: Method) -> "Set[str] | None":
    """Names passed to ctx.mark_dirty (in forward, or setup_context); None when unsure (``*args``)."""
    names: Set[str] = set()
    method = model.method("setup_context") if model.setup_context_style else forward
    if method is None:
        return names
    for call in method.facts.ctx_calls.get("mark_dirty", []):
        for arg in call.args:
            if arg.star or not isinstance(arg.value, cst.Name):
                return None  # marks something we cannot name: stay silent
            names.add(arg.value.value)
    if model.setup_context_style and method.facts.ctx_calls.get("mark_dirty"):
        return None  # names in setup_context are its own; trust that it marks the right ones
    return names
