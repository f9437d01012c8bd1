"""AGF002: the first parameter of a contract method that receives ctx must be named ``ctx``."""

from __future__ import annotations

from typing import Iterator

from ..engine.analysis import Analysis
from ..engine.model import ClassModel, uses_first_as_ctx
from .base import Finding, Rule

# vmap takes ``info`` first; forward takes ctx only in the combined style (checked below).
_TAKES_CTX = ("forward", "setup_context", "backward", "vjp", "jvp")


class CtxFirstRule(Rule):
    code = "AGF002"
    name = "first parameter must be ctx"
    message = "{method} takes {first!r} first; name the first parameter ctx"
    missing_message = "{method} takes no ctx parameter; add ctx as the first parameter"
    forward_without_ctx_message = (
        "{method} takes {first!r} first, not ctx; add ctx before it, or define setup_context(ctx, inputs, output)"
    )
    invalid = (
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def backward(self, grad):
                return grad
        """,
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def forward(x):
                return x.clone()
        """,
    )
    valid = (
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def forward(x):
                return x.clone()

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass
        """,
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def vmap(info, in_dims, x):
                return x, in_dims[0]
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in _TAKES_CTX:
            method = model.own_methods.get(name)
            if method is None or method.signature is None:
                continue
            if name == "forward" and model.setup_context_style:
                continue
            first = method.signature.first
            if first is None:
                if method.signature.vararg is None:
                    yield self.report(method, template=self.missing_message, method=method.qualname)
            elif first.name != "ctx":
                if name == "forward" and not uses_first_as_ctx(method):
                    template = self.forward_without_ctx_message
                else:
                    template = self.message
                yield self.report(method, first.node, template=template, method=method.qualname, first=first.name)
