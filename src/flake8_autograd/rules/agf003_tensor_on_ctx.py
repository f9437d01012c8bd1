"""AGF003: a tensor stored as an attribute of ctx instead of through save_for_backward."""

from __future__ import annotations

from typing import Iterator, List, Optional

import libcst as cst

from ..engine.analysis import Analysis
from ..engine.model import ClassModel, CtxStore
from ..engine.tensors import Kind, TensorInference
from ..engine.walk import is_larger_than
from .base import Finding, Rule

HARMS = {
    "input": "an input kept on ctx skips the in-place version check, so gradients can be silently wrong",
    "output": "an output kept on ctx forms a reference cycle that holds its memory until the garbage collector runs",
    "other": "a tensor kept on ctx escapes saved-tensor hooks and is not checked for in-place changes",
}


class TensorOnCtxRule(Rule):
    code = "AGF003"
    name = "tensor stored on ctx instead of save_for_backward"
    message = (
        "{method} stores tensor {value} as ctx.{attribute}: {harm}; "
        "pass it to ctx.save_for_backward() and read ctx.saved_tensors in backward"
    )
    invalid = (
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor):
                ctx.x = x
                return x * 2
        """,
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = torch.exp(x)
                ctx.out = out
                return out
        """,
    )
    valid = (
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.shape = x.shape
                ctx.scale = float(x.size(0))
                ctx.save_for_backward(x)
                return x * 2
        """,
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, handle):
                ctx.handle = make_handle(handle)
                return x.clone()
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        role = "setup_context" if model.setup_context_style else "forward"
        method = model.own_methods.get(role)
        if method is None or method.node is None or method.ctx_name is None:
            return
        inference = analysis.inference(method)
        for store in method.facts.ctx_stores:
            described = self._describe(store, inference)
            if described is not None:
                value, origin = described
                yield self.report(
                    method, store.node, method=method.qualname, value=value, attribute=store.attribute,
                    harm=HARMS[origin],
                )

    @staticmethod
    def _describe(store: CtxStore, inference: TensorInference) -> Optional["tuple[str, str]"]:
        """(how to name the value, which harm applies) when the stored value holds a tensor."""
        values: List[cst.BaseExpression] = [store.value]
        if isinstance(store.value, (cst.Tuple, cst.List)):
            if any(isinstance(element, cst.StarredElement) for element in store.value.elements):
                return None
            values = [element.value for element in store.value.elements]
        tensors = [value for value in values if inference.kind(value) is Kind.TENSOR]
        if not tensors:
            return None
        origins = {inference.origin(value) for value in tensors}
        origin = "other"
        if "output" in origins or _is_returned(store, inference, tensors):
            origin = "output"
        elif "input" in origins:
            origin = "input"
        label = _quote(tensors[0])
        if len(tensors) > 1:
            label = f"{label} (and {len(tensors) - 1} more)"
        return label, origin


def _quote(node: cst.BaseExpression) -> str:
    if is_larger_than(node, _MAX_QUOTED_NODES):
        return "value"  # too long to quote anyway; and generating its code recurses once per level
    code = _EMPTY_MODULE.code_for_node(node)
    return f"'{code}'" if len(code) <= 40 and "\n" not in code else "value"


_EMPTY_MODULE = cst.Module(body=[])
# Code of 40 characters holds fewer nodes than this.
_MAX_QUOTED_NODES = 100


def _is_returned(store: CtxStore, inference: TensorInference, tensors: List[cst.BaseExpression]) -> bool:
    """Whether a stored local is also what forward returns (directly or in a returned tuple)."""
    if inference.role != "forward":
        return False
    names = {value.value for value in tensors if isinstance(value, cst.Name)}
    for ret in inference.facts.returns:
        returned = ret.value
        if returned is None:
            continue
        elements = returned.elements if isinstance(returned, (cst.Tuple, cst.List)) else None
        candidates = [element.value for element in elements] if elements is not None else [returned]
        if any(isinstance(candidate, cst.Name) and candidate.value in names for candidate in candidates):
            return True
    return False
