"""AGF118: ``x.data`` passed to save_for_backward, which hides in-place changes from autograd."""

from __future__ import annotations

from typing import Iterator, List, Optional, Set, Tuple

import libcst as cst

from ..engine.analysis.aliases import method_writes
from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel, Method
from ..engine.facts.tensor_kinds import Kind
from ..engine.syntax.walk import short_code
from ..core.fixes import Fix
from ..engine.syntax.locate import locator
from .base import Finding, Rule


class SaveDataRule(Rule):
    code = "AGF118"
    name = "save_for_backward of .data"
    message = "{method} saves {value} (not version-checked); save {base}.detach()"
    invalid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x.data, w.data)
                return x * w

            @staticmethod
            def backward(ctx, grad):
                x, w = ctx.saved_tensors
                return grad * w, grad * x
        """,
    )
    valid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x, w.detach())
                return x * w

            @staticmethod
            def backward(ctx, grad):
                x, w = ctx.saved_tensors
                return grad * w, grad * x
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for method, saved in _saved_data(model, analysis):
            base = short_code(saved.value) or "the tensor"
            yield self.report(method, saved, method=method.qualname, value=_quote(saved), base=base)

    def fix(self, finding: Finding, model: ClassModel, analysis: Analysis) -> Optional[Fix]:
        """``x.data`` becomes ``x.detach()``: the same memory, with the version counter kept.

        Not where the method itself changes the saved tensor in place (``x.add_()`` after the save, a
        write through ``x.data``, ``mark_dirty(x)``): there ``.data`` hid that change, and backward would
        now raise on it; what the author meant there is theirs to say. Only for a value known to be a
        tensor: another object's ``data`` attribute (a block-sparse matrix wrapper, say) may have no
        ``detach``. Unsafe (:data:`UNSAFE_BECAUSE`).
        """
        for method, saved in _saved_data(model, analysis):
            if method.position(saved) != (finding.line, finding.column):
                continue
            if analysis.inference(method).kind(saved.value) is not Kind.TENSOR:
                return None
            root = _root_name(saved.value)
            if root is not None and root in _written_names(method, analysis):
                return None
            where = locator(model.segment)
            edit = where.replace(saved.attr, "detach()") if where is not None else None
            return Fix((edit,), UNSAFE_BECAUSE) if edit is not None else None
        return None


UNSAFE_BECAUSE = (
    "the saved tensor then shares the version counter of the one it came from: an in-place change of it "
    "between forward and backward raises where .data let it pass (with a silently wrong gradient)"
)


def _saved_data(model: ClassModel, analysis: Analysis) -> Iterator[Tuple[Method, cst.Attribute]]:
    """Each ``<tensor>.data`` passed as itself to save_for_backward by forward (or setup_context)."""
    method = model.own_methods.get("setup_context" if model.setup_context_style else "forward")
    if method is None or method.node is None or method.ctx_name is None:
        return
    inference = analysis.inference(method)
    for call in method.facts.ctx_calls.get("save_for_backward", []):
        for arg in call.args:
            value = arg.value
            if arg.star or arg.keyword is not None or not isinstance(value, cst.Attribute):
                continue
            if value.attr.value != "data":
                continue
            # Only ``.data`` of a value certainly a tensor is the untracked alias: another object's ``data``
            # (a project class's field or property, a sparse matrix wrapper, a dataclass, a PackedSequence)
            # is a tensor of its own, version-checked like any other, and may have no ``detach``.
            if inference.kind(value.value) is Kind.TENSOR:
                yield method, value


def _root_name(node: cst.BaseExpression) -> Optional[str]:
    """The name an expression is reached from: ``x`` of ``x``, ``x.weight``, ``x[0]``, ``x.view(-1)``."""
    while True:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            node = node.func.value
        else:
            return None


def _written_names(method: Method, analysis: Analysis) -> Set[str]:
    """Names the method changes in place, through themselves or anything reached from them, or marks dirty."""
    facts = method.facts
    targets: List[cst.BaseExpression] = [change.target for change in facts.expression_writes if change.target]
    for call in facts.calls:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and not func.attr.value.endswith("__"):
            targets.append(func.value)
    targets += [arg.value for call in facts.ctx_calls.get("mark_dirty", []) for arg in call.args]
    written = {change.name for change in facts.in_place} | {write.root for write in method_writes(method, analysis)}
    return written | {name for name in map(_root_name, targets) if name is not None}


def _quote(node: cst.BaseExpression) -> str:
    code = short_code(node)
    return f"'{code}'" if code is not None else "a .data tensor"
