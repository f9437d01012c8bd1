"""AGF109: forward modifies a tensor input in place without ctx.mark_dirty."""

from __future__ import annotations

from typing import Iterator, Set

import libcst as cst

from ..engine.analysis.aliases import Write, method_writes
from ..engine.analysis.module_analysis import Analysis
from ..engine.facts.counting import slot_is_none
from ..engine.models.class_model import ClassModel, Method
from ..engine.facts.tensor_kinds import Kind
from .base import Finding, Rule


class InPlaceInputRule(Rule):
    code = "AGF109"
    name = "input modified in place without mark_dirty"
    message = "{method} changes input {input!r} in place ({how}); call ctx.mark_dirty({input}) or use a copy"
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
        inputs = model.forward_inputs()
        if forward is None or forward.node is None or inputs is None:
            return
        dirty = _marked_dirty(model, forward)
        if dirty is None:
            return
        inference = analysis.inference(forward)
        positions = {param.name: index for index, param in enumerate(inputs.params)}
        reported: Set[str] = set()
        for write in method_writes(forward, analysis):
            index = positions.get(write.root)
            if index is None or write.root in dirty or write.root in reported:
                continue
            if write.how in _ALIASING or _copies_itself(write):
                continue
            param = inputs.params[index]
            kind = inference.input_kind(param)
            if kind is Kind.UNKNOWN and param.name in forward.facts.tensor_uses:
                kind = Kind.TENSOR  # ``x += ...`` keeps the object: its tensor uses still tell what it is
            # An in-place method (``x.add_()``) names a tensor by itself; ``x[i] = v``, ``x += v`` or a write
            # through ``x[0]``, ``x.data`` or a helper needs proof (x may be a list, or hold a tensor).
            direct_method = write.through is None and write.how.startswith(".")
            if kind is Kind.NOT_TENSOR or (kind is not Kind.TENSOR and not direct_method):
                continue
            if _is_buffer(model, forward, analysis, index, write.root):
                continue
            reported.add(write.root)
            yield self.report(forward, write.node, method=forward.qualname, input=write.root, how=write.describe())


# ``x.set_(y)`` makes x share y's storage: a deliberate aliasing idiom (the input is typically a leaf
# parameter, on which mark_dirty raises), not a computation written over the caller's values.
_ALIASING = frozenset({".set_()"})


def _copies_itself(write: Write) -> bool:
    """``x.copy_(x)``: the values stay as they are (torch's own Resize does this for quantized tensors)."""
    call = write.node
    if write.how != ".copy_()" or write.through is not None or not isinstance(call, cst.Call) or len(call.args) != 1:
        return False
    source = call.args[0].value
    return isinstance(source, cst.Name) and source.value == write.root


def _is_buffer(model: ClassModel, forward: Method, analysis: Analysis, index: int, name: str) -> bool:
    """An input that takes no gradient (None in every backward slot) and is not returned: a running statistic.

    Updating such a buffer in place is harmless, and ``mark_dirty`` on it would fail ("marked as dirty ...
    were not returned as output").
    """
    backward = model.method("backward") or model.method("vjp")
    if backward is None or backward.node is None:
        return False
    gradients = analysis.returns(backward)
    if not gradients or any(
        counted.slots is None or index >= len(counted.slots) or not slot_is_none(counted.slots[index])
        for counted in gradients
    ):
        return False
    outputs = analysis.returns(forward)
    if not outputs:
        return False
    for counted in outputs:
        if counted.slots is None:
            return False  # what forward returns is unknown: it may be this input
        if any(isinstance(node, cst.Name) and node.value == name for slot in counted.slots for node in slot):
            return False
    return True


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
