"""AGF101: ctx.save_for_backward called more than once on one path."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis.module_analysis import Analysis
from ..engine.facts.call_order import replacing_calls
from ..engine.models.class_model import ClassModel
from .base import Finding, Rule


class SaveTwiceRule(Rule):
    code = "AGF101"
    applies_to_custom_ops = True
    name = "save_for_backward called twice on one path"
    message = "{method} calls ctx.save_for_backward again after line {first}; save every tensor in one call"
    invalid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a)
                ctx.save_for_backward(b)
                return a * b
        """,
    )
    valid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b, bias=None):
                if bias is None:
                    ctx.save_for_backward(a, b)
                else:
                    ctx.save_for_backward(a, b, bias)
                return a * b
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in ("forward", "setup_context"):
            method = model.own_methods.get(name)
            if method is None or method.node is None:
                continue
            for earlier, later in replacing_calls(method, method.facts.ctx_calls.get("save_for_backward", [])):
                line, _ = method.position(earlier)
                yield self.report(method, later, method=method.qualname, first=line)
