"""AGF123: backward modifies in place a saved tensor that is the caller's (a forward input or output)."""

from __future__ import annotations

from typing import Iterator, Set

from ..engine.aliases import local_writes
from ..engine.analysis import Analysis
from ..engine.model import ClassModel
from ..engine.saved_origins import INPUT, caller_tensors
from .base import Finding, Rule

_WHOSE = {INPUT: "forward's input {source!r}", "output": "the output {source!r} forward returned"}


class InPlaceSavedRule(Rule):
    code = "AGF123"
    name = "saved input or output modified in place in backward"
    message = (
        "{method} modifies saved tensor {name!r} in place ({how}); it is {whose}, so the caller's tensor "
        "changes and a second backward fails: compute a new tensor instead ({name} * ..., {name}.clone())"
    )
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
                whose = _WHOSE[tensor.origin].format(source=tensor.source)
                yield self.report(
                    reader, write.node, method=reader.qualname, name=write.root, how=write.describe(), whose=whose
                )
