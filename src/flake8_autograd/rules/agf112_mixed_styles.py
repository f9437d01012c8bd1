"""AGF112: setup_context defined while forward still takes ctx."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel, uses_first_as_ctx
from .base import Finding, Rule


class MixedStylesRule(Rule):
    code = "AGF112"
    name = "setup_context with a forward that takes ctx"
    message = "{method} takes {first!r} first, but the class has setup_context; remove {first} from forward"
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

    inherited_message = "{method} exists, but inherited {forward} takes {first!r}; override forward without {first}"

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        forward = model.method("forward")
        if not model.setup_context_style or forward is None or forward.signature is None:
            return
        first = forward.signature.first
        if first is None:
            return
        if forward.owner.setup_context_style:
            # forward was written for the separate style: report it once, in the class that defines it.
            if forward.owner is model and forward.keeps_leftover_ctx:
                yield self.report(forward, first.node, method=forward.qualname, first=first.name)
            return
        # A combined-style forward inherited by a class that adds setup_context: the mistake is the subclass's.
        setup_context = model.own_methods.get("setup_context")
        if setup_context is not None and uses_first_as_ctx(forward):
            yield self.report(
                setup_context, template=self.inherited_message, method=setup_context.qualname,
                forward=forward.qualname, first=first.name,
            )
