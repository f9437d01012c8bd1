"""AGF128: setup_context's parameters, or its unpacking of ``inputs``, do not match what PyTorch passes."""

from __future__ import annotations

from typing import Iterator, Sequence

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel, forward_inputs
from ..engine.models.custom_op_model import CustomOpModel
from ..engine.models.setup_context_shape import (
    FUNCTION_SETUP_CONTEXT_ARGUMENTS,
    InputsUnpackMismatch,
    InputsUsedAsTensor,
    KeywordMismatch,
    ParameterMismatch,
    setup_context_mistakes,
)
from .base import Finding, Rule


class SetupContextShapeRule(Rule):
    code = "AGF128"
    applies_to_custom_ops = True
    name = "setup_context's parameters or unpacking of inputs do not match what PyTorch passes"
    message = "{method} takes {takes}; make it take (ctx, inputs, output)"
    unpack_message = (
        "{method} unpacks {names} names from inputs, which holds {count} (defaults included); unpack {count} names"
    )
    keyword_message = "{method} {reason}; make it take ({expected})"
    tuple_message = "{method} uses '{name}', the tuple of forward's inputs, as a tensor; unpack it ({example} = inputs)"
    invalid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(x, w, bias=None):
                return x * w if bias is None else x * w + bias

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, w = inputs
                ctx.save_for_backward(x, w)

            @staticmethod
            def backward(ctx, grad):
                x, w = ctx.saved_tensors
                return grad * w, grad * x, None
        """,
    )
    valid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(x, w, bias=None):
                return x * w if bias is None else x * w + bias

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, w, _ = inputs
                ctx.save_for_backward(x, w)

            @staticmethod
            def backward(ctx, grad):
                x, w = ctx.saved_tensors
                return grad * w, grad * x, None
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        method = model.own_methods.get("setup_context")
        if method is None or method.node is None:
            return
        forward = model.method("forward")
        inputs = forward_inputs(model) if forward is not None and not forward.keeps_leftover_ctx else None
        # Unknown inputs (``*args``, an unseen forward) leave the unpackings unchecked, not the rest.
        # The parameter that receives inputs counts as mistaken for a tensor only when it is named after one
        # of forward's inputs (``setup_context(ctx, x, output)``); ``save_for_backward(inputs)`` is AGF102's.
        count, names = (inputs.total, inputs.names) if inputs is not None else (None, [])
        # An operator's setup_context is called by keyword, with keyword_only_inputs too when it has any.
        by_keyword = isinstance(model, CustomOpModel)
        arguments: Sequence[str] = FUNCTION_SETUP_CONTEXT_ARGUMENTS
        if isinstance(model, CustomOpModel):
            arguments = model.setup_context_arguments
        for mistake in setup_context_mistakes(method, count, names, arguments, by_keyword=by_keyword):
            if isinstance(mistake, ParameterMismatch):
                yield self.report(method, None, method=method.qualname, takes=mistake.takes)
            elif isinstance(mistake, KeywordMismatch):
                yield self.report(
                    method, None, self.keyword_message, method=method.qualname, reason=mistake.reason,
                    expected=", ".join(arguments),
                )
            elif isinstance(mistake, InputsUnpackMismatch):
                yield self.report(
                    method,
                    mistake.node,
                    self.unpack_message,
                    method=method.qualname,
                    names=f"{mistake.names}{' or more' if mistake.starred else ''}",
                    count=mistake.inputs,
                )
            elif isinstance(mistake, InputsUsedAsTensor):
                example = ", ".join(names) + ("," if len(names) == 1 else "")
                yield self.report(
                    method, mistake.node, self.tuple_message, method=method.qualname, name=mistake.name, example=example
                )
