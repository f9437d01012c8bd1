"""AGF103: ctx.saved_tensors unpacked into a different number of names than forward saved."""

from __future__ import annotations

from typing import Iterator, Optional, Set, Tuple

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel
from .base import Finding, Rule


class SavedUnpackCountRule(Rule):
    code = "AGF103"
    applies_to_custom_ops = True
    name = "saved_tensors unpacked into the wrong number of names"
    message = "{method} unpacks {names} but {saver} saves {saved}; unpack one name per saved tensor"
    invalid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, grad):
                a, b, c = ctx.saved_tensors
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
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        backward = model.own_methods.get("backward")
        if backward is None or backward.node is None:
            return
        saved = _saved_count(model)
        forward = model.method("forward")
        if saved is None or forward is None or analysis.backward_never_runs(model):
            return  # nothing saved to compare with, or autograd never calls backward
        saver_name, count = saved
        if saver_name.startswith(model.name + "."):
            saver_name = saver_name[len(model.name) + 1:]  # the class's own method: its name is enough
        reported: Set[int] = set()
        for bindings in backward.facts.bindings.values():
            for binding in bindings:
                value = binding.value
                if (
                    binding.unpack_length is None
                    or not isinstance(value, cst.Attribute)
                    or value.attr.value != "saved_tensors"
                    or not isinstance(value.value, cst.Name)
                    or value.value.value != backward.ctx_name
                    or id(value) in reported
                ):
                    continue
                reported.add(id(value))
                if binding.unpack_length != count:
                    yield self.report(
                        backward, value, method=backward.qualname, names=_plural(binding.unpack_length, "name"),
                        saver=saver_name, saved=_plural(count, "tensor"),
                    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _saved_count(model: ClassModel) -> Optional[Tuple[str, int]]:
    """The number of tensors the class saves, when one save call without ``*`` says so."""
    name = "setup_context" if model.setup_context_style else "forward"
    method = model.method(name)
    if method is None or method.node is None:
        return None
    calls = method.facts.ctx_calls.get("save_for_backward", [])
    if len(calls) != 1 or any(arg.star or arg.keyword is not None for arg in calls[0].args):
        return None
    return method.qualname, len(calls[0].args)
