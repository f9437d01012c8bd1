"""AGF111: a Function class instantiated, or its forward/backward called directly, instead of apply."""

from __future__ import annotations

import ast
from typing import Iterator, Optional, Sequence, Tuple

from ..engine.analysis.module_analysis import Analysis, DirectUse
from ..engine.models.class_model import ClassModel
from ..core.fixes import Edit, Fix, text_between
from ..engine.syntax.locate import ast_span
from .base import Finding, Rule


class DirectUseRule(Rule):
    code = "AGF111"
    name = "Function used without apply"
    message = "{cls}{what}; call {cls}.apply(...) instead"
    invalid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

        def exp(x):
            return ExpFn()(x)
        """,
    )
    valid = (
        """
        class ExpFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

        def exp(x):
            return ExpFn.apply(x)
        """,
    )
    _WHAT = {
        "instantiated": " is instantiated (legacy style)",
        "forward": ".forward is called directly, skipping backward",
        "backward": ".backward is called directly, outside autograd",
    }

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        lines = model.segment.lines
        for use in analysis.direct_uses(model.site):
            if _bypasses_nothing(use, model) or _given_no_ctx(use, model):
                continue
            line, column = _start(use.call, lines)
            text = self.message.format(cls=model.name, what=self._WHAT[use.what])
            yield Finding(line, column, self.code, f"{self.code} {text}")

    def fix(self, finding: Finding, model: ClassModel, analysis: Analysis) -> Optional[Fix]:
        """``Cls()(args)`` becomes ``Cls.apply(args)``.

        Only an instance called at once, of a class whose forward is a staticmethod (so ``apply`` passes
        the ctx first); a direct ``Cls.forward(...)`` call skips autograd, and what it meant is unknown.
        And only where calling the instance certainly runs ``Function.__call__``, the legacy path PyTorch
        rejects: not when the class or a base defines ``__call__`` or ``__new__`` (or a base is unseen), a
        decorator may replace the class, or the module sets such a method on it later
        (``Fn.__call__ = ...``); there the instance is made on purpose, and ``apply`` would skip that code.
        """
        forward = model.method("forward")
        if forward is None or forward.node is None or not forward.is_static:
            return None
        if not _instance_call_is_functions(model, analysis):
            return None
        lines = model.segment.lines
        if not 0 < finding.line <= len(lines):
            return None
        use = analysis.direct_use_at(model.site, finding.line, _byte_offset(lines[finding.line - 1], finding.column))
        if use is None or use.what != "instantiated" or not use.called_at_once:
            return None
        created = use.call
        if created.args or created.keywords:
            return None
        span = ast_span(created, lines)
        written = text_between(lines, *span) if span is not None else None
        # Only blanks may sit between the brackets (a comment there would be lost).
        if span is None or written is None or "".join(written.split()) != f"{model.name}()":
            return None
        return Fix((Edit(span[0], span[1], f"{model.name}.apply"),))


_INSTANCE_HOOKS = ("__call__", "__new__", "__init_subclass__", "__class_getitem__")


def _instance_call_is_functions(model: ClassModel, analysis: Analysis) -> bool:
    """Whether ``Cls()(...)`` certainly runs ``torch.autograd.Function``'s own construction and call."""
    if model.has_unknown_base:
        return False
    for cls in model.mro:
        statement = cls.site.node  # a decorator may replace the class, a metaclass its construction
        if statement.decorator_list or statement.keywords:
            return False
        if any(hook in cls.own_methods or hook in cls.class_attributes for hook in _INSTANCE_HOOKS):
            return False
    uses = analysis.name_uses()
    return not any(uses.attribute_count(hook) or uses.named_as_string(hook) for hook in _INSTANCE_HOOKS[:2])


def _bypasses_nothing(use: DirectUse, model: ClassModel) -> bool:
    """A direct forward call given no argument that can be a tensor requiring grad, to a forward that
    never touches its ctx: apply would record no graph node for such arguments either, and the ctx
    (``None``, usually) is never read, so the call loses nothing apply would give."""
    if use.what != "forward" or not use.grad_free:
        return False
    forward = model.method("forward")
    if forward is None or forward.node is None:
        return False  # ``forward = staticmethod(impl)``: what it does with the ctx is unknown
    return forward.ctx_name is None or forward.facts.ctx_references == 0


def _given_no_ctx(use: DirectUse, model: ClassModel) -> bool:
    """A direct forward call whose ctx argument is the literal ``None``: the caller says it has no
    context, so it knows no graph node is made; such calls are deliberate (an autograd-free fast path, a
    storage object dequantized), and reporting them cost more false alarms than the bugs it caught."""
    if use.what != "forward":
        return False
    forward = model.method("forward")
    if forward is None:
        return False
    if forward.node is None:
        ctx_name = None if model.setup_context_style else ""  # ``forward = staticmethod(impl)``: first is ctx
    else:
        ctx_name = forward.ctx_name  # None in the setup_context style: the first argument is an input
    if ctx_name is None:
        return False
    call = use.call
    if call.args and not isinstance(call.args[0], ast.Starred):
        return _is_none(call.args[0])
    return any(keyword.arg == ctx_name and ctx_name and _is_none(keyword.value) for keyword in call.keywords)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _start(node: ast.expr, lines: Sequence[str]) -> Tuple[int, int]:
    """Where ``node`` starts: its line, and its column in characters (``ast`` counts UTF-8 bytes)."""
    span = ast_span(node, lines)
    return span[0] if span is not None else (node.lineno, node.col_offset)


def _byte_offset(line: str, column: int) -> int:
    """The UTF-8 byte offset of character ``column`` of ``line``: the column as ``ast`` counts it."""
    return len(line[:column].encode("utf-8", "surrogatepass"))
