"""AGF138: backward reads ctx.saved_tensors twice where the class clears them on the first access."""

from __future__ import annotations

from typing import Iterator, List, Tuple

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel, Method
from .base import Finding, Rule

_SETTING = "clear_saved_tensors_on_access"


class SavedTensorsReadTwiceRule(Rule):
    code = "AGF138"
    name = "ctx.saved_tensors read twice where the class clears it on the first access"
    message = (
        "{method} reads ctx.saved_tensors again, which raises with clear_saved_tensors_on_access = True; "
        "unpack it once"
    )
    invalid = (
        """
        class Square(torch.autograd.Function):
            clear_saved_tensors_on_access = True

            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                scale = 2 * ctx.saved_tensors[0]
                return grad * scale * ctx.saved_tensors[0].sign()
        """,
    )
    valid = (
        """
        class Square(torch.autograd.Function):
            clear_saved_tensors_on_access = True

            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * 2 * x
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        setting = model.class_attribute(_SETTING)
        if not (isinstance(setting, cst.Name) and setting.value == "True") or model.has_unknown_base:
            return
        backward = model.own_methods.get("backward")
        if backward is None or backward.node is None or backward.ctx_name is None:
            return
        reads = _unconditional_reads(backward, backward.ctx_name)
        if len(reads) < 2:
            return
        (first, _), (second, node) = reads[0], reads[1]
        nodes = backward.body_nodes()
        for each in nodes[first:second]:
            if type(each) in (cst.Return, cst.Raise):
                span = backward.span(each)
                if span is None or not span[0] < second < span[1]:
                    return  # a way out between the two reads (not the one holding the second): it may never run
        yield self.report(backward, node, method=backward.qualname)


# Parts of a node that run only on some paths, by the node's class: the reads inside them are not counted.
_CONDITIONAL_PARTS = {
    cst.If: ("body", "orelse"),
    cst.For: ("body", "orelse"),
    cst.While: ("body", "orelse"),
    cst.Try: ("body", "handlers", "orelse", "finalbody"),
    cst.TryStar: ("body", "handlers", "orelse", "finalbody"),
    cst.IfExp: ("body", "orelse"),
    cst.BooleanOperation: ("right",),
    cst.Match: ("cases",),
}
_SKIPPED_WHOLE = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.FunctionDef, cst.ClassDef)


def _unconditional_reads(method: Method, ctx: str) -> List[Tuple[int, cst.Attribute]]:
    """The reads of ``ctx.saved_tensors`` in ``method``'s body that run whenever the body gets to them (not
    in a branch, a loop, a ``try``, the right side of ``and``/``or``, a comprehension or a lambda), with their
    place in the shared walk, in order."""
    nodes = method.body_nodes()
    skipped: List[Tuple[int, int]] = []
    for node in nodes:
        parts = _CONDITIONAL_PARTS.get(type(node), ())
        for part in parts:
            value = getattr(node, part, None)
            for child in value if isinstance(value, (list, tuple)) else [value]:
                span = method.span(child) if isinstance(child, cst.CSTNode) else None
                if span is not None:
                    skipped.append(span)
        if isinstance(node, _SKIPPED_WHOLE):
            span = method.span(node)
            if span is not None:
                skipped.append(span)
    reads: List[Tuple[int, cst.Attribute]] = []
    for node in method.nodes_of(cst.Attribute):
        assert isinstance(node, cst.Attribute)
        if node.attr.value != "saved_tensors" or not (isinstance(node.value, cst.Name) and node.value.value == ctx):
            continue
        span = method.span(node)
        if span is None or any(start <= span[0] < end for start, end in skipped):
            continue
        reads.append((span[0], node))
    return reads
