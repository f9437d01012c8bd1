"""AGF115: vmap defined while generate_vmap_rule = True."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ..engine.analysis import Analysis
from ..engine.model import ClassModel
from .base import Finding, Rule


class VmapWithGeneratedRuleRule(Rule):
    code = "AGF115"
    name = "vmap defined with generate_vmap_rule = True"
    message = (
        "{method} is defined although {cls}.generate_vmap_rule is True, which PyTorch rejects under vmap; "
        "drop one of them"
    )
    invalid = (
        """
        class ExpFn(torch.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x):
                return x.exp()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(output)

            @staticmethod
            def vmap(info, in_dims, x):
                return x.exp(), in_dims[0]
        """,
    )
    valid = (
        """
        class ExpFn(torch.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x):
                return x.exp()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(output)
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        vmap = model.method("vmap")
        flag = model.class_attribute("generate_vmap_rule")
        if vmap is None or not (isinstance(flag, cst.Name) and flag.value == "True"):
            return
        if vmap.owner is not model and "generate_vmap_rule" not in model.class_attributes:
            return  # reported where the pair is defined
        yield self.report(vmap, method=f"{model.name}.vmap", cls=model.name)
