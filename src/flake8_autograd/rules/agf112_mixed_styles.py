"""AGF112: setup_context defined while forward still takes ctx."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis import Analysis
from ..engine.model import ClassModel
from .base import Finding, Rule


class MixedStylesRule(Rule):
    code = "AGF112"
    name = "setup_context with a forward that takes ctx"
    message = (
        "{method} takes {first!r} first although the class defines setup_context; with setup_context, "
        "forward takes only the inputs: remove {first} from forward"
    )
    invalid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(output)
        """,
    )
    valid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(x):
                return x.exp()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(output)
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        forward = model.method("forward")
        if not model.setup_context_style or forward is None or forward.signature is None:
            return
        if forward.owner is not model and model.own_methods.get("setup_context") is None:
            return  # the pair is checked where it is defined
        first = forward.signature.first
        if first is not None and (first.name == "ctx" or first.name == "context"):
            yield self.report(forward, first.node, method=f"{model.name}.forward", first=first.name)
