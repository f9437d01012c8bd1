"""AGF130: ctx.save_for_forward misused: a non-tensor, two calls on one path, no jvp to read it, or
ctx.saved_tensors read by jvp (or backward) when only the other saving call was made."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis.module_analysis import Analysis
from ..engine.facts.call_order import replacing_calls
from ..engine.models.class_model import ClassModel
from ..engine.facts.ctx.saved_arguments import non_tensor_arguments, saving_method
from ..engine.facts.ctx.saved_paths import failing_saved_reads, returns_a_value, saving_paths
from .base import Finding, Rule

# Which saving call fills ctx.saved_tensors for each reader: jvp sees only what save_for_forward saved,
# backward (and vjp, its other name) only what save_for_backward saved.
_FILLED_BY = {"backward": "save_for_backward", "vjp": "save_for_backward", "jvp": "save_for_forward"}
_OTHER = {"save_for_backward": "save_for_forward", "save_for_forward": "save_for_backward"}


class SaveForForwardRule(Rule):
    code = "AGF130"
    name = "ctx.save_for_forward misused"
    message = "{method} passes non-tensor {value} to ctx.save_for_forward; make it a ctx attribute"
    twice = "{method} calls ctx.save_for_forward again after line {first}; save every tensor in one call"
    no_jvp = "{method} calls ctx.save_for_forward with no jvp to read it; define jvp or remove the call"
    other_saver = "{method} reads ctx.saved_tensors with no ctx.{wanted} call; add one in {saver}"
    invalid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = x.exp()
                ctx.save_for_forward(out, x.shape)
                ctx.save_for_backward(out)
                return out

            @staticmethod
            def backward(ctx, grad):
                (out,) = ctx.saved_tensors
                return grad * out

            @staticmethod
            def jvp(ctx, tangent):
                (out,) = ctx.saved_tensors
                return tangent * out
        """,
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = x.exp()
                ctx.save_for_backward(out)
                return out

            @staticmethod
            def backward(ctx, grad):
                (out,) = ctx.saved_tensors
                return grad * out

            @staticmethod
            def jvp(ctx, tangent):
                (out,) = ctx.saved_tensors
                return tangent * out
        """,
    )
    valid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = x.exp()
                ctx.save_for_forward(out)
                ctx.save_for_backward(out)
                return out

            @staticmethod
            def backward(ctx, grad):
                (out,) = ctx.saved_tensors
                return grad * out

            @staticmethod
            def jvp(ctx, tangent):
                (out,) = ctx.saved_tensors
                return tangent * out
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in ("forward", "setup_context"):
            method = model.own_methods.get(name)
            if method is None or method.node is None or method.ctx_name is None:
                continue
            calls = method.facts.ctx_calls.get("save_for_forward", [])
            for argument in non_tensor_arguments(method, analysis.inference(method), "save_for_forward"):
                yield self.report(method, argument.node, method=method.qualname, value=argument.value)
            for earlier, later in replacing_calls(method, calls):
                line, _ = method.position(earlier)
                yield self.report(method, later, self.twice, method=method.qualname, first=line)
            if calls and not model.has_unknown_base and model.method("jvp") is None:
                yield self.report(method, calls[0], self.no_jvp, method=method.qualname)
        yield from self._read_from_other_saver(model, analysis)

    def _read_from_other_saver(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        """A reader that takes an element of ctx.saved_tensors while the saver makes only the saving call
        meant for the other reader: the tuple it sees is empty on every path."""
        saver = saving_method(model)
        if saver is None or saving_paths(saver) is None:
            return  # the ctx reaches code that may save through it
        made = {name for name in _OTHER if saver.facts.ctx_calls.get(name)}
        if len(made) != 1:
            return  # neither (AGF117's case) or both
        forward = model.method("forward")
        if forward is None or not returns_a_value(forward) or analysis.backward_never_runs(model):
            return
        for name, wanted in _FILLED_BY.items():
            reader = model.own_methods.get(name)
            if reader is None or reader.node is None or wanted in made:
                continue
            failing = failing_saved_reads(reader)
            for read in (failing or [])[:1]:
                yield self.report(
                    reader, read, self.other_saver, method=reader.qualname, wanted=wanted,
                    saver=saver.name if saver.owner is model else saver.qualname,
                )
