"""AGF125: custom_fwd / custom_bwd not paired, or used with the setup_context style."""

from __future__ import annotations

from typing import Iterator, Optional

from ..engine.amp import AmpDecorators, amp_decorators
from ..engine.analysis import Analysis
from ..engine.model import ClassModel, Method, uses_first_as_ctx
from .base import Finding, Rule

# The attributes custom_fwd stores on ctx; a class that stores them itself pairs the helpers by hand.
_AUTOCAST_STATE = frozenset({"_fwd_used_autocast", "_dtype"})

_FORWARD_WITHOUT_BACKWARD = (
    "{method} is decorated with custom_fwd (no cast_inputs) but {backward} is not decorated with custom_bwd, "
    "so backward runs outside forward's autocast state; decorate {backward} with custom_bwd too"
)
_BACKWARD_IN_SETUP_CONTEXT_STYLE = (
    "{method} is decorated with custom_bwd, which reads the autocast state custom_fwd stores on ctx; a "
    "setup_context-style forward gets no ctx, so backward raises AttributeError; remove custom_bwd "
    "(or define forward(ctx, ...) without setup_context)"
)
_FORWARD_IN_SETUP_CONTEXT_STYLE = (
    "{method} is decorated with custom_fwd (no cast_inputs), which stores autocast state on its first "
    "argument: in the setup_context style that is an input, not ctx, and custom_bwd cannot pair with it; "
    "pass cast_inputs=... (or define forward(ctx, ...) without setup_context and add custom_bwd)"
)


class CustomFwdBwdRule(Rule):
    code = "AGF125"
    name = "custom_fwd / custom_bwd not paired, or with setup_context"
    message = (
        "{method} is decorated with custom_bwd but {forward} is not decorated with custom_fwd, so backward "
        "raises AttributeError reading ctx._fwd_used_autocast; decorate {forward} with custom_fwd too"
    )
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
                backward, backward_amp.custom_bwd, method=backward.qualname, forward=forward.qualname
            )
        if (
            forward_amp.custom_fwd is not None
            and not forward_amp.casts_inputs
            and backward_amp.none
            and forward.owner is model
        ):
            yield self.report(
                forward, forward_amp.custom_fwd, _FORWARD_WITHOUT_BACKWARD,
                method=forward.qualname, backward=backward.qualname,
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


def _sets_autocast_state(model: ClassModel) -> bool:
    """Some contract method of the class stores custom_fwd's attributes on ctx itself."""
    for owner in model.mro:
        for method in owner.own_methods.values():
            if method.node is not None and any(store.attribute in _AUTOCAST_STATE for store in method.facts.ctx_stores):
                return True
    return False
