"""AGF122: a tensor passed to ctx.save_for_backward that backward never reads."""

from __future__ import annotations

from typing import Iterator, List

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel
from ..engine.facts.ctx.saved_slots import unread_saves
from ..engine.syntax.walk import short_code
from .base import Finding, Rule, beside


class SavedUnreadRule(Rule):
    code = "AGF122"
    applies_to_custom_ops = True
    name = "a saved tensor backward never reads"
    message = "{method} never reads saved {names}; stop saving {pronoun} in {saver}"
    invalid = (
        """
        class Wasteful(torch.autograd.Function):
            @staticmethod
            def forward(ctx, input):
                intermediate = input.exp()
                output = intermediate * 2
                ctx.save_for_backward(input, intermediate, output)
                return output

            @staticmethod
            def backward(ctx, grad_output):
                input, intermediate, output = ctx.saved_tensors
                return grad_output * output
        """,
    )
    valid = (
        """
        class Lean(torch.autograd.Function):
            @staticmethod
            def forward(ctx, input):
                output = input.exp() * 2
                ctx.save_for_backward(output)
                return output

            @staticmethod
            def backward(ctx, grad_output):
                (output,) = ctx.saved_tensors
                return grad_output * output
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        found = unread_saves(model, analysis.discovery.has_local_subclass(model.site), analysis.inference)
        if found is None:
            return
        forward = model.method("forward")
        if forward is None or analysis.backward_never_runs(model):
            return  # backward never runs: what it would read does not matter
        names = _names(found.save, found.unread)
        yield self.report(
            found.saver, found.unread[0], method=found.reader.qualname, names=names,
            pronoun="it" if len(found.unread) == 1 else "them", saver=beside(found.saver, found.reader),
        )


def _names(save: cst.Call, unread: List[cst.BaseExpression]) -> str:
    """``a``, ``a and b``, ``a, b and c``: each argument's code, or its position when too long to quote."""
    positions = {id(arg.value): index for index, arg in enumerate(save.args)}
    quoted = [short_code(argument) or f"argument {positions[id(argument)] + 1}" for argument in unread]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
