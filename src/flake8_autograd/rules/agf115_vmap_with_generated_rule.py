"""AGF115: vmap defined while generate_vmap_rule = True."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel
from .base import Finding, Rule


class VmapWithGeneratedRuleRule(Rule):
    code = "AGF115"
    name = "vmap defined with generate_vmap_rule = True"
    message = "{method} is defined while generate_vmap_rule is True; drop one of them"
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

    flag_message = "{cls} sets generate_vmap_rule = True but inherits vmap from {base}; drop one of them"

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        vmap = model.method("vmap")
        flag_owner = model.class_attribute_owner("generate_vmap_rule")
        if vmap is None or flag_owner is None:
            return
        flag = flag_owner.class_attributes["generate_vmap_rule"]
        if not (isinstance(flag, cst.Name) and flag.value == "True"):
            return
        # Report once, in the class that brings the pair together.
        if vmap.owner is model:
            yield self.report(vmap, method=vmap.qualname)
        elif flag_owner is model:
            statement = model.class_attribute_statements["generate_vmap_rule"]
            yield self.report_in(model, statement, template=self.flag_message, cls=model.name, base=vmap.owner.name)
