"""AGF001: a contract method must be a @staticmethod."""

from __future__ import annotations

from typing import Iterator, Optional

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import CONTRACT_METHODS, ClassModel
from ..core.fixes import Edit, Fix
from ..engine.syntax.locate import locator
from .base import Finding, Rule


INSTANCE_UNSAFE_BECAUSE = (
    "the module makes instances of the class: a call through an instance (instance.forward(x)) no longer "
    "passes the instance as the first argument"
)


class StaticMethodRule(Rule):
    code = "AGF001"
    name = "contract method must be a @staticmethod"
    message = "{method} is not a @staticmethod; add @staticmethod"
    classmethod_message = "{method} is a @classmethod, which torch.compile cannot inline; make it a @staticmethod"
    invalid = (
        """
        class MyFn(torch.autograd.Function):
            def forward(ctx, x):
                return x * 2
        """,
        """
        class MyFn(torch.autograd.Function):
            @classmethod
            def backward(cls, ctx, grad):
                return grad * 2
        """,
    )
    valid = (
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            @once_differentiable
            def backward(ctx, grad):
                return grad * 2
        """,
        """
        class MyFn(torch.autograd.Function):
            backward = staticmethod(_backward_impl)
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in CONTRACT_METHODS:
            method = model.own_methods.get(name)
            if method is None or method.node is None or method.is_static:
                continue
            if method.is_classmethod:
                yield self.report(method, template=self.classmethod_message, method=method.qualname)
            else:
                yield self.report(method, method=method.qualname)

    def fix(self, finding: Finding, model: ClassModel, analysis: Analysis) -> Optional[Fix]:
        """Add ``@staticmethod`` above every other decorator.

        Not over ``@classmethod``: which parameter then takes the ctx is for the author to say. Not over
        ``@property`` either: that method is not meant as a contract method at all. Not in a legacy class
        with an ``__init__`` (``self.mask = mask``): once static, forward and backward get a fresh ctx,
        not the instance, and what ``__init__`` stored is gone (AttributeError at run time). Safe: through
        the class (``apply``, ``Cls.forward(ctx, ...)``) the method gets the same arguments static or not;
        unsafe (:data:`INSTANCE_UNSAFE_BECAUSE`) where the module makes instances of the class.
        """
        if any("__init__" in cls.own_methods for cls in model.mro):
            return None
        for name in CONTRACT_METHODS:
            method = model.own_methods.get(name)
            if method is None or method.node is None or method.position() != (finding.line, finding.column):
                continue
            if method.is_static or method.is_classmethod or "property" in method.decorators:
                return None
            where = locator(model.segment)
            if where is None:
                return None
            # The outermost decorator, or the def itself; only whitespace may precede it on its line.
            anchor = method.node.decorators[0] if method.node.decorators else method.node
            indent = where.line_prefix(anchor)
            span = where.span(anchor)
            if indent is None or span is None:
                return None
            instantiated = any(use.what == "instantiated" for use in analysis.direct_uses(model.site))
            unsafe_because = INSTANCE_UNSAFE_BECAUSE if instantiated else None
            return Fix((Edit.insert(span[0], "@staticmethod\n" + indent),), unsafe_because)
        return None
