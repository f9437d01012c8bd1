"""AGF111: a Function class instantiated, or its forward/backward called directly, instead of apply."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis import Analysis
from ..engine.model import ClassModel
from .base import Finding, Rule


class DirectUseRule(Rule):
    code = "AGF111"
    name = "Function used without apply"
    message = "{cls} is {what}; call {cls}.apply(...) instead"
    invalid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

        def exp(x):
            return ExpFn()(x)
        """,
    )
    valid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

        def exp(x):
            return ExpFn.apply(x)
        """,
    )
    _WHAT = {
        "instantiated": "instantiated (the legacy style PyTorch rejects)",
        "forward": "used by calling forward directly, which bypasses the Function's backward",
        "backward": "used by calling backward directly, outside autograd",
    }

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for use in analysis.direct_uses(model.name):
            text = self.message.format(cls=model.name, what=self._WHAT[use.what])
            yield Finding(use.line, use.column, self.code, f"{self.code} {text}")
