"""AGF123: backward modifies in place a saved tensor that is the caller's (a forward input or output)."""

from __future__ import annotations

from typing import Iterator, Set

from ..engine.analysis.aliases import local_writes
from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel
from ..engine.facts.ctx.saved_origins import INPUT, caller_tensors
from .base import Finding, Rule

_ROLE = {INPUT: "input", "output": "output"}
# A helper that writes into the tensor is named by its call alone: "in place (helper())".


class InPlaceSavedRule(Rule):
    code = "AGF123"
    name = "saved input or output modified in place in backward"
    message = "{method} changes saved {whose} in place ({how}); compute a new tensor ({name} * ...)"
    invalid = (
        """
        class Sigmoid(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = torch.sigmoid(x)
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                y.mul_(1 - y)
                return grad * y
        """,
    )
    valid = (
        """
        class Sigmoid(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = torch.sigmoid(x)
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                return grad * y * (1 - y)
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for reader_name in ("backward", "vjp"):
            reader = model.own_methods.get(reader_name)
            if reader is None:
                continue
            held = {tensor.name: tensor for tensor in caller_tensors(model, reader)}
            reported: Set[str] = set()
            for write in local_writes(reader, analysis, sorted(held)):
                if write.root in reported:
                    continue
                reported.add(write.root)
                tensor = held[write.root]
                role = _ROLE[tensor.origin]
                whose = f"{role} {write.root!r}"
                if tensor.source != write.root:
                    whose = f"{write.root!r} ({role} {tensor.source!r})"
                how = write.describe()
                yield self.report(reader, write.node, method=reader.qualname, name=write.root, how=how, whose=whose)
