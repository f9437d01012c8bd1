"""AGF108: jvp returns a different number of tangents than forward returns outputs."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel
from .base import Finding, Rule


class JvpCountRule(Rule):
    code = "AGF108"
    name = "jvp returns the wrong number of tangents"
    message = "{method} returns {returned} for {outputs}; return exactly one tangent per output"
    invalid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor):
                out = x.exp()
                ctx.save_for_forward(out)
                return out

            @staticmethod
            def jvp(ctx, x_t):
                (out,) = ctx.saved_tensors
                return out * x_t, None
        """,
    )
    valid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor):
                out = x.exp()
                ctx.save_for_forward(out)
                return out

            @staticmethod
            def jvp(ctx, x_t):
                (out,) = ctx.saved_tensors
                return out * x_t
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        method = model.own_methods.get("jvp")
        if method is None or method.node is None:
            return
        outputs = analysis.output_count(model)
        if outputs is None:
            return
        for counted in analysis.returns(method):
            if counted.count is None or counted.count == outputs:
                continue
            # Falling off the end returns one None: a count error for two or more outputs.
            returned = f"{counted.count} tangent" + ("s" if counted.count != 1 else "")
            yield self.report(
                method, None if counted.falls_off else counted.node, method=method.qualname,
                returned="None (falls off its end)" if counted.falls_off else returned,
                outputs=f"{outputs} output" + ("s" if outputs != 1 else ""),
            )
