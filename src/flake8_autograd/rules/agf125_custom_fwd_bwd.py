"""AGF125: custom_fwd / custom_bwd not paired, or used with the setup_context style."""

from __future__ import annotations

from typing import Iterator, Optional

from ..engine.facts.amp import AmpDecorators, amp_decorators
from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel, Method, uses_first_as_ctx
from .base import Finding, Rule

# The attributes custom_fwd stores on ctx; a class that stores them itself pairs the helpers by hand.
_AUTOCAST_STATE = frozenset({"_fwd_used_autocast", "_dtype"})

_FORWARD_WITHOUT_BACKWARD = (
    "{method} has custom_fwd but {backward} has no custom_bwd; add custom_bwd to {backward}"
)
_BACKWARD_IN_SETUP_CONTEXT_STYLE = (
    "{method} has custom_bwd in the setup_context style (forward has no ctx); remove custom_bwd"
)
_FORWARD_IN_SETUP_CONTEXT_STYLE = (
    "{method} has custom_fwd without cast_inputs in the setup_context style; pass cast_inputs=..."
)


class CustomFwdBwdRule(Rule):
    code = "AGF125"
    name = "custom_fwd / custom_bwd not paired, or with setup_context"
    message = "{method} has custom_bwd but {forward} has no custom_fwd; add custom_fwd to {forward}"
    invalid = (
        """
        class MatMulFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a @ b

            @staticmethod
            @torch.amp.custom_bwd(device_type="cuda")
            def backward(ctx, grad):
                a, b = ctx.saved_tensors
                return grad @ b.t(), a.t() @ grad
        """,
        """
        class MatMulFn(torch.autograd.Function):
            @staticmethod
            @torch.amp.custom_fwd(device_type="cuda")
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a @ b

            @staticmethod
            def backward(ctx, grad):
                a, b = ctx.saved_tensors
                return grad @ b.t(), a.t() @ grad
        """,
    )
    valid = (
        """
        class MatMulFn(torch.autograd.Function):
            @staticmethod
            @torch.amp.custom_fwd(device_type="cuda")
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a @ b

            @staticmethod
            @torch.amp.custom_bwd(device_type="cuda")
            def backward(ctx, grad):
                a, b = ctx.saved_tensors
                return grad @ b.t(), a.t() @ grad
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        forward = model.method("forward")
        backward = model.method("vjp") or model.method("backward")  # autograd calls vjp when it is defined
        if forward is None or backward is None or _sets_autocast_state(model):
            return
        forward_amp = amp_decorators(forward, analysis.imports)
        backward_amp = amp_decorators(backward, analysis.imports)
        if model.setup_context_style:
            yield from self._setup_context_style(model, forward, forward_amp, backward, backward_amp)
            return
        if model.has_unknown_base and not uses_first_as_ctx(forward):
            return  # an unseen base may define setup_context: which style this is stays unknown
        if backward_amp.custom_bwd is not None and forward_amp.none and backward.owner is model:
            yield self.report(
                backward, backward_amp.custom_bwd, method=backward.qualname, forward=_named(forward, model)
            )
        if (
            forward_amp.custom_fwd is not None
            and not forward_amp.casts_inputs
            and backward_amp.none
            and forward.owner is model
        ):
            yield self.report(
                forward, forward_amp.custom_fwd, _FORWARD_WITHOUT_BACKWARD,
                method=forward.qualname, backward=_named(backward, model),
            )

    def _setup_context_style(
        self,
        model: ClassModel,
        forward: Method,
        forward_amp: AmpDecorators,
        backward: Method,
        backward_amp: AmpDecorators,
    ) -> Iterator[Finding]:
        found: Optional[Finding] = None
        if backward_amp.custom_bwd is not None and backward.owner is model:
            found = self.report(
                backward, backward_amp.custom_bwd, _BACKWARD_IN_SETUP_CONTEXT_STYLE, method=backward.qualname
            )
        elif forward_amp.custom_fwd is not None and not forward_amp.casts_inputs and forward.owner is model:
            found = self.report(
                forward, forward_amp.custom_fwd, _FORWARD_IN_SETUP_CONTEXT_STYLE, method=forward.qualname
            )
        if found is not None:
            yield found


def _named(method: Method, model: ClassModel) -> str:
    """The method's name, qualified by its class when the class is a base of ``model``."""
    return method.name if method.owner is model else method.qualname


def _sets_autocast_state(model: ClassModel) -> bool:
    """Some contract method of the class stores custom_fwd's attributes on ctx itself."""
    for owner in model.mro:
        for method in owner.own_methods.values():
            if method.node is not None and any(store.attribute in _AUTOCAST_STATE for store in method.facts.ctx_stores):
                return True
    return False
