"""AGF004: backward (or vjp) returns a different number of gradients than forward takes inputs."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.facts.counting import CountedReturn, fall_off_mirrors_forward, slot_is_none
from ..engine.models.custom_op_model import is_custom_op
from ..engine.models.class_model import ClassModel, ForwardInputs, Method, forward_inputs, return_index
from ..engine.facts.tensor_kinds import Kind, annotation_kind
from ..core.fixes import Edit, Fix
from ..engine.syntax.locate import locator
from .base import Finding, Rule, listed


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


class GradientCountRule(Rule):
    code = "AGF004"
    applies_to_custom_ops = True
    name = "backward returns the wrong number of gradients"
    message = "{method} {returned} for {inputs} ({names}); return one per input, None for none"
    call_message = (
        "{method} {returned} but {cls}.apply gets {arguments} on line {line}; return one per input, None for none"
    )
    surplus_message = "{method} {returned} for {inputs} ({names}); drop the extra values"
    # An operator's registration: its positional inputs are certain, and surplus Nones are not forgiven.
    op_message = "{method} {returned} for {inputs} ({names}) of op {cls}; return one per positional input"
    op_surplus_message = "{method} {returned} for {inputs} ({names}) of op {cls}; drop the extra values"
    falls_off = "can end without a return (one None)"
    invalid = (
        """
        class LinearFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, weight, bias):
                ctx.save_for_backward(x, weight)
                return x @ weight.t() + bias

            @staticmethod
            def backward(ctx, grad):
                x, weight = ctx.saved_tensors
                return grad @ weight, grad.t() @ x
        """,
    )
    valid = (
        """
        class ScaleFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, scale=2.0, inplace=False):
                ctx.scale = scale
                return x * scale

            @staticmethod
            def backward(ctx, grad):
                return (grad * ctx.scale,) + (None,) * 2
        """,
        """
        class FusedFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *tensors):
                return kernel_forward(*tensors)

            @staticmethod
            def backward(ctx, grad):
                return kernel_backward(grad)
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        inputs = forward_inputs(model)
        forward = model.method("forward")
        if inputs is None or forward is None:
            return
        if analysis.backward_never_runs(model):
            return  # no output can carry a gradient: autograd never calls backward
        for name in ("backward", "vjp"):
            method = model.method(name)
            if method is None or method.node is None:
                continue
            inherited = method.owner is not model
            if inherited and forward.owner is not model:
                continue  # the pair is checked where it is defined
            for counted in analysis.returns(method):
                if counted.falls_off and fall_off_mirrors_forward(method, forward):
                    continue  # forward returned None on that path: no node, so backward never gets there
                finding = self._check_return(model, method, counted, inputs, analysis)
                if finding is not None:
                    if inherited:
                        yield Finding(*forward.position(), finding.code, finding.message, proven=finding.proven)
                    else:
                        yield finding

    def _check_return(
        self, model: ClassModel, method: Method, counted: CountedReturn, inputs: ForwardInputs, analysis: Analysis
    ) -> Optional[Finding]:
        slots = counted.slots
        if slots is None:
            return None
        count = len(slots)
        node = None if counted.falls_off else counted.node
        # A class's own name, also for a backward it inherits; an operator's registered function by its name.
        qualname = method.qualname if is_custom_op(model) else f"{model.name}.{method.name}"
        returned = self.falls_off if counted.falls_off else "returns " + _plural(count, "gradient")
        # Falling off the end after returns elsewhere happens only on the paths no return takes, which the
        # model cannot prove are taken; a backward with no return at all always ends that way.
        proven = not (counted.falls_off and method.facts.returns)
        fields = dict(
            method=qualname,
            returned=returned,
            inputs=_plural(inputs.total, "input"),
            names=listed(inputs.names) or "none",
        )
        if is_custom_op(model):
            # The dispatcher drops trailing arguments left at their defaults before autograd counts: fewer
            # gradients than inputs fail only for a caller that passes another value, not certain here.
            required = sum(1 for param in inputs.params if not param.has_default)
            if count == inputs.total or required <= count < inputs.total:
                return None
            # The generated Function has one more input (its metadata), which backward's result gets a None for.
            template = self.op_message if count < inputs.total else self.op_surplus_message
            return self.report(
                method, node, template=template, proven=proven, cls=model.name, **fields
            )
        if count < inputs.required:
            return self.report(method, node, proven=proven, **fields)
        if count < inputs.total:
            longer = [call for call in analysis.apply_calls(model.name) if (call.positional or 0) > count]
            if longer:
                call = longer[0]
                return self.report(
                    method, node, template=self.call_message, proven=proven, cls=model.name,
                    arguments=_plural(call.positional or 0, "argument"), line=call.line, **fields,
                )
            return None
        if count > inputs.total and not all(slot_is_none(extra) for extra in slots[inputs.total:]):
            return self.report(method, node, template=self.surplus_message, proven=proven, **fields)
        return None

    def fix(self, finding: Finding, model: ClassModel, analysis: Analysis) -> Optional[Fix]:
        """Append a ``None`` per missing gradient, when every input left without one is not a tensor.

        Only a tuple display (``return a, b``) or one value that is a tensor or ``None``: appending to a
        name that holds a tuple would nest it instead. Safe: PyTorch rejects the short count on every call
        that reaches the return, and ``None`` is what it takes for an input that is not a tensor.
        """
        inputs = forward_inputs(model)
        forward = model.method("forward")
        if inputs is None or forward is None or forward.node is None:
            return None
        for name in ("backward", "vjp"):
            method = model.own_methods.get(name)
            if method is None or method.node is None:
                continue
            returns = analysis.returns(method)  # one per return statement, in order, then falling off
            index = return_index(method, (finding.line, finding.column))
            counted = returns[index] if index is not None and index < len(returns) else None
            if counted is not None and not counted.falls_off and isinstance(counted.node, cst.Return):
                return _append_nones(model, method, forward, counted.node, counted, inputs, analysis)
        return None


def _append_nones(
    model: ClassModel,
    method: Method,
    forward: Method,
    ret: cst.Return,
    counted: CountedReturn,
    inputs: ForwardInputs,
    analysis: Analysis,
) -> Optional[Fix]:
    if counted.slots is None or ret.value is None:
        return None
    count = len(counted.slots)
    missing = range(count, inputs.total)
    if not missing or not all(_surely_not_tensor(model, forward, index, inputs, analysis) for index in missing):
        return None
    value = ret.value
    if isinstance(value, cst.Tuple):
        if len(value.elements) != count or any(isinstance(element, cst.StarredElement) for element in value.elements):
            return None
        last = value.elements[-1].value
    elif analysis.inference(method).kind(value) in (Kind.TENSOR, Kind.NONE) and count == 1:
        last = value
    else:
        return None
    where = locator(model.segment)
    # after the parentheses of a last element written ``(g)``: inside them the Nones would make it a tuple
    end = where.end_with_parentheses(last) if where is not None else None
    if end is None:
        return None
    return Fix((Edit.insert(end, ", None" * len(missing)),))


def _surely_not_tensor(
    model: ClassModel, forward: Method, index: int, inputs: ForwardInputs, analysis: Analysis
) -> bool:
    """Input ``index`` is declared a non-tensor, or has a literal default no call overrides (AGF105's test)."""
    param = inputs.params[index]
    if analysis.inference(forward).input_kind(param) is not Kind.NOT_TENSOR:
        return False
    declared = annotation_kind(param.annotation, analysis.imports) is Kind.NOT_TENSOR
    return declared or analysis.only_literals_passed(model.name, index)
