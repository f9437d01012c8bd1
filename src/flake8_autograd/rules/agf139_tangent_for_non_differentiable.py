"""AGF139: jvp returns a tangent for an output forward marks non-differentiable: forward-mode AD raises."""

from __future__ import annotations

from typing import Dict, Iterator, Optional, Set

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.facts.tensor_kinds import Kind
from ..engine.models.class_model import ClassModel, Method
from .base import Finding, Rule


class TangentForNonDifferentiableRule(Rule):
    code = "AGF139"
    name = "jvp returns a tangent for an output marked non-differentiable"
    message = "{method} returns a tangent for output {index} ({name}), marked non-differentiable; return None there"
    invalid = (
        """
        class SortWithIndices(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                values, indices = x.sort()
                ctx.mark_non_differentiable(indices)
                ctx.save_for_forward(indices)
                return values, indices

            @staticmethod
            def jvp(ctx, x_t):
                (indices,) = ctx.saved_tensors
                return x_t.gather(-1, indices), x_t * 0
        """,
    )
    valid = (
        """
        class SortWithIndices(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                values, indices = x.sort()
                ctx.mark_non_differentiable(indices)
                ctx.save_for_forward(indices)
                return values, indices

            @staticmethod
            def jvp(ctx, x_t):
                (indices,) = ctx.saved_tensors
                return x_t.gather(-1, indices), None
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        forward = model.own_methods.get("forward")
        jvp = model.own_methods.get("jvp")
        if model.setup_context_style or forward is None or jvp is None or jvp.node is None:
            return
        marked = _marked_outputs(forward)
        if not marked:
            return
        inference = analysis.inference(jvp)
        for ret in jvp.facts.returns:
            if not isinstance(ret.value, cst.Tuple):
                continue
            elements = ret.value.elements
            if any(isinstance(element, cst.StarredElement) for element in elements):
                continue
            for index, name in sorted(marked.items()):
                if index < len(elements) and inference.kind(elements[index].value) is Kind.TENSOR:
                    yield self.report(jvp, elements[index].value, method=jvp.qualname, index=index, name=name)


def _marked_outputs(forward: Method) -> Dict[int, str]:
    """The positions of forward's outputs that are certainly marked non-differentiable: forward returns once,
    a tuple, at its end, and marks the name at that position in a statement of its own at the top of its body
    (so on every path), the name bound once."""
    node = forward.node
    ctx = forward.ctx_name
    if node is None or ctx is None or not isinstance(node.body, cst.IndentedBlock) or len(forward.facts.returns) != 1:
        return {}
    statements = node.body.body
    last = statements[-1] if statements else None
    (ret,) = forward.facts.returns
    if not (isinstance(last, cst.SimpleStatementLine) and last.body and last.body[-1] is ret):
        return {}
    if not isinstance(ret.value, cst.Tuple):
        return {}
    marked_names: Set[str] = set()
    for statement in statements:
        call = _top_level_mark(statement, ctx)
        if call is not None:
            marked_names.update(
                arg.value.value for arg in call.args
                if not arg.star and arg.keyword is None and isinstance(arg.value, cst.Name)
            )
    found: Dict[int, str] = {}
    for index, element in enumerate(ret.value.elements):
        value = element.value
        if (
            not isinstance(element, cst.StarredElement) and isinstance(value, cst.Name)
            and value.value in marked_names and len(forward.facts.bindings.get(value.value, [])) == 1
        ):
            found[index] = value.value
    return found


def _top_level_mark(statement: cst.CSTNode, ctx: str) -> Optional[cst.Call]:
    """``ctx.mark_non_differentiable(...)`` written as a statement of its own line, else None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return None
    func = small.value.func
    if (
        isinstance(func, cst.Attribute) and func.attr.value == "mark_non_differentiable"
        and isinstance(func.value, cst.Name) and func.value.value == ctx
    ):
        return small.value
    return None
