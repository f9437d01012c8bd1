"""AGF102: a value that is not a tensor passed to save_for_backward."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel
from ..engine.facts.ctx.saved_arguments import non_tensor_arguments
from .base import Finding, Rule


class SaveNonTensorRule(Rule):
    code = "AGF102"
    applies_to_custom_ops = True
    name = "non-tensor passed to save_for_backward"
    message = "{method} saves {value}, not a tensor; store it as a ctx attribute"
    invalid = (
        """
        class ViewFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, x.shape)
                return x.view(-1)
        """,
    )
    valid = (
        """
        class ScaleFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, weight=None):
                ctx.save_for_backward(x, weight)
                ctx.shape = x.shape
                return x * 2
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in ("forward", "setup_context"):
            method = model.own_methods.get(name)
            if method is None or method.node is None:
                continue
            for argument in non_tensor_arguments(method, analysis.inference(method), "save_for_backward"):
                yield self.report(method, argument.node, method=method.qualname, value=argument.value)
