"""AGF117: ctx.saved_tensors read where nothing was saved, or its tuple used as a tensor."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel, Method
from ..engine.facts.ctx.saved_arguments import saving_method
from ..engine.facts.ctx.saved_paths import (
    failing_saved_reads,
    returns_a_value,
    saved_tuple_used_as_tensor,
    saving_paths,
    unconditional,
)
from .base import Finding, Rule, beside

# The methods that read ``ctx.saved_tensors`` (vjp is backward's other name).
_READERS = ("backward", "vjp", "jvp")


class SavedTensorsReadRule(Rule):
    code = "AGF117"
    applies_to_custom_ops = True
    name = "saved_tensors read where nothing was saved, or used as a tensor"
    message = "{method} reads ctx.saved_tensors, but {saver} saves nothing; call ctx.save_for_backward there"
    partial = "{method} reads ctx.saved_tensors, empty if {saver} returns at line {line}; save on every path"
    as_tensor = (
        "{name} is the tuple ctx.saved_tensors, used as a tensor on line {line}; write `{name}, = ctx.saved_tensors`"
    )
    invalid = (
        """
        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * x

            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                return 2 * x * grad_output
        """,
        """
        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, grad_output):
                x = ctx.saved_tensors
                return grad_output * 2 * x.sign().abs()
        """,
    )
    valid = (
        """
        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                return 2 * x * grad_output
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        readers = [
            method
            for name in _READERS
            for method in [model.own_methods.get(name)]
            if method is not None and method.node is not None and "saved_tensors" in method.facts.ctx_reads
        ]
        if not readers:
            return
        forward = model.method("forward")
        if forward is None or not returns_a_value(forward) or analysis.backward_never_runs(model):
            return  # no output a gradient can flow through: backward never runs as written
        for reader in readers:
            yield from self._unsaved(model, reader)
            for misuse in saved_tuple_used_as_tensor(reader, analysis.inference(reader)):
                line, _ = reader.position(misuse.use)
                yield self.report(reader, misuse.binding, self.as_tensor, name=misuse.name, line=line)

    def _unsaved(self, model: ClassModel, reader: Method) -> Iterator[Finding]:
        saver = saving_method(model)
        if saver is None:
            return
        paths = saving_paths(saver)
        failing = failing_saved_reads(reader)
        if paths is None or not failing:
            return
        if paths.never_saves:
            # Whatever path ran, the tuple is empty: every read that takes an element fails.
            for read in failing[:1]:
                yield self.report(reader, read, method=reader.qualname, saver=beside(saver, reader))
            return
        if paths.unsaved_exit is None:
            return
        line, _ = saver.position(paths.unsaved_exit)
        for reached in unconditional(reader, failing)[:1]:
            yield self.report(
                reader, reached, self.partial, method=reader.qualname, saver=beside(saver, reader), line=line
            )
