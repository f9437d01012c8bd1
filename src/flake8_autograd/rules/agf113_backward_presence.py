"""AGF113: both backward and vjp defined, or a forward with neither."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis.module_analysis import Analysis
from ..engine.facts.abstract_forward import forward_is_abstract
from ..engine.facts.grad_mode import applied_only_without_grad
from ..engine.models.class_model import ClassModel
from .base import Finding, Rule


class BackwardPresenceRule(Rule):
    code = "AGF113"
    name = "backward and vjp both defined, or neither"
    both_message = "{cls} defines both backward and vjp; keep only backward"
    message = "{cls} defines forward but no backward; define backward(ctx, *grad_outputs)"
    invalid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()
        """,
    )
    valid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = x.exp()
                ctx.save_for_backward(out)
                return out

            @staticmethod
            def backward(ctx, grad):
                (out,) = ctx.saved_tensors
                return grad * out
        """,
    )

    inherited_message = "{cls} inherits forward from {base} but no backward; define backward(ctx, *grad_outputs)"

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        backward, vjp = model.method("backward"), model.method("vjp")
        own = model.own_methods
        if backward is not None and vjp is not None:
            if own.get("vjp") is vjp:
                yield self.report(vjp, template=self.both_message, cls=model.name)
            elif own.get("backward") is backward:
                yield self.report(backward, template=self.both_message, cls=model.name)
            return
        forward = model.method("forward")
        if forward is None or backward is not None or vjp is not None or model.has_unknown_base:
            return
        if model.method("jvp") is not None:
            return  # forward-mode AD only: a jvp without backward is a complete Function for that use
        for name in ("forward", "setup_context"):
            method = model.method(name)
            if method is not None and method.facts.ctx_calls.get("mark_non_differentiable"):
                return  # outputs marked non-differentiable may never need a backward
        if analysis.backward_never_runs(model):
            return  # every output is an integer tensor, marked non-differentiable or not a tensor: no node
        if forward_is_abstract(model):
            return  # forward raises on the class itself (a hook only subclasses define): no output, no node
        if analysis.discovery.has_local_subclass(model.site) and not analysis.apply_calls(model.name):
            return  # a base whose subclasses supply backward, and which the module never applies itself
        if applied_only_without_grad(analysis.tree, analysis.imports, model.name):
            return  # every use runs with gradients off: no graph node is recorded, backward is never reached
        if forward.owner is model:
            yield self.report(forward, cls=model.name)
        else:
            yield self.report_in(model, template=self.inherited_message, cls=model.name, base=forward.owner.name)
