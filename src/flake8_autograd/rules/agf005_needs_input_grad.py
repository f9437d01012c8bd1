"""AGF005: backward computes gradients for several inputs without consulting ctx.needs_input_grad."""

from __future__ import annotations

from typing import FrozenSet, Iterator, List

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel, forward_inputs
from ..engine.facts.provenance import Computation, Provenance
from ..engine.facts.tensor_kinds import Kind
from ..engine.facts.tied_inputs import apply_call_sources, tied
from ..engine.syntax.walk import walk
from .base import Finding, Rule, listed


class NeedsInputGradRule(Rule):
    code = "AGF005"
    applies_to_custom_ops = True
    name = "needs_input_grad not consulted"
    message = "{method} always computes gradients for {inputs}; check ctx.needs_input_grad first"
    invalid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, grad):
                a, b = ctx.saved_tensors
                return grad * b, grad * a
        """,
    )
    valid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, grad):
                a, b = ctx.saved_tensors
                grad_a = grad * b if ctx.needs_input_grad[0] else None
                grad_b = grad * a if ctx.needs_input_grad[1] else None
                return grad_a, grad_b
        """,
        """
        class FusedFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return fused_forward(a, b)

            @staticmethod
            def backward(ctx, grad):
                grad_a, grad_b = fused_backward(grad, *ctx.saved_tensors)
                return grad_a, grad_b
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        method = model.own_methods.get("backward")
        if method is None or method.node is None or method.facts.ctx_escapes:
            return
        inputs = forward_inputs(model)
        if inputs is None or inputs.total < 2:
            return
        forward = model.method("forward")
        forward_inference = analysis.inference(forward) if forward is not None and forward.node is not None else None
        savers = [saver for saver in (forward, model.method("setup_context")) if saver is not None]
        provenance = Provenance(method, analysis.allocating_helpers(), savers)
        for counted in analysis.returns(method):
            if counted.slots is None or counted.falls_off:
                continue
            computed: List[str] = []
            positions: List[int] = []  # of the computed gradients, among apply's arguments
            slot_producers: List[FrozenSet[Computation]] = []
            for position, (param, slot) in enumerate(zip(inputs.params, counted.slots)):
                if forward_inference is not None and forward_inference.input_kind(param) is Kind.NOT_TENSOR:
                    continue  # a non-tensor input takes no gradient at all (PyTorch requires None there)
                producers = frozenset().union(*(provenance.returned_producers(node) for node in slot))
                if producers:
                    computed.append(param.name)
                    positions.append(position)
                    slot_producers.append(producers)
            # Gradients that share their work (one fused call, one launch filling several buffers, a
            # chain of kernels) are one computation: a needs_input_grad check could not split it.
            groups = provenance.separate_groups(slot_producers) if len(computed) >= 2 else []
            if len(groups) >= 2 and _untied_count(groups, positions, model, analysis) >= 2:
                if not any(_checks_whether_inputs_need_grad(base) for base in model.mro):
                    yield self.report(method, method=method.qualname, inputs=listed(computed))
                return


def _untied_count(groups: List[List[int]], positions: List[int], model: ClassModel, analysis: Analysis) -> int:
    """How many groups of separate work remain once groups whose arguments every apply call of the module
    derives from the same values of the caller are taken as one: they need gradients together, so
    needs_input_grad could never skip one of them alone."""
    if not analysis.apply_calls(model.name):
        return len(groups)  # no call in the module: nothing to trace (the module's calls are read once)
    calls = apply_call_sources(analysis.tree, model.name)
    if not calls:
        return len(groups)
    arguments = [[positions[index] for index in group] for group in groups]
    merged = list(range(len(groups)))

    def root(index: int) -> int:
        while merged[index] != index:
            index = merged[index]
        return index

    for first in range(len(groups)):
        for second in range(first + 1, len(groups)):
            if root(first) != root(second) and tied(calls, arguments[first], arguments[second]):
                merged[root(second)] = root(first)
    return len({root(index) for index in range(len(groups))})


def _checks_whether_inputs_need_grad(model: ClassModel) -> bool:
    """Any ``.needs_input_grad`` in the class, nested functions included (a helper may check it); or
    a ``.requires_grad`` that forward keeps on ctx or that backward reads (the same check, spelled
    by hand). A ``requires_grad`` forward only uses itself (whether to save at all) is not one."""
    if any(_reads(node, "needs_input_grad") for node in walk(model.node)):
        return True
    for method in model.own_methods.values():
        if method.node is None:
            continue
        if method.name == "backward" and any(_reads(node, "requires_grad") for node in walk(method.node)):
            return True
        for store in method.facts.ctx_stores:
            if any(_reads(node, "requires_grad") for node in [store.value, *walk(store.value)]):
                return True
    return False


def _reads(node: cst.CSTNode, attribute: str) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == attribute
