"""AGF131: a register_fake function whose parameters cannot take the arguments the op passes it."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterator, List

from ..engine.syntax.names import ast_dotted
from ..engine.facts.op_facts import binding_error, op_calls
from .base import Finding, OpRule

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.analysis.module_analysis import Analysis
    from ..engine.discovery.custom_ops import CustomOpSite


class FakeSignatureRule(OpRule):
    code = "AGF131"
    name = "a register_fake function whose parameters cannot take the arguments of the op"
    message = "the fake implementation {fake} of op {op} {why}; make it take {params}"
    invalid = (
        """
        @torch.library.custom_op("example::scaled_add", mutates_args=())
        def scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
            return x + alpha * y

        @scaled_add.register_fake
        def _(x, y):
            return torch.empty_like(x)
        """,
    )
    valid = (
        """
        @torch.library.custom_op("example::scaled_add", mutates_args=())
        def scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
            return x + alpha * y

        @scaled_add.register_fake
        def _(x, y, alpha):
            return torch.empty_like(x)
        """,
    )

    def check_op(self, op: "CustomOpSite", analysis: "Analysis") -> Iterator[Finding]:
        calls = op_calls(op.function)
        if calls is None:
            return
        for fake in op.fakes:
            if _wrapped(fake, op):
                continue  # another decorator: torch receives what it returns, whose signature is unseen
            for call in calls:
                why = binding_error(fake, call)
                if why is not None:
                    yield self.report_at(
                        fake, fake=f"'{fake.name}'", op=f"'{op.name}'", why=why,
                        params=f"({', '.join(_signature(op.function))})",
                    )
                    break


def _wrapped(fake: ast.FunctionDef, op: "CustomOpSite") -> bool:
    """A fake with a decorator besides the ``register_fake`` one."""
    registering = [d for d in fake.decorator_list if _registers_fake(d)]
    return len(fake.decorator_list) != len(registering) or len(registering) > 1


def _registers_fake(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    dotted = ast_dotted(target)
    return dotted is not None and dotted.split(".")[-1] in ("register_fake", "impl_abstract")


def _signature(function: ast.FunctionDef) -> List[str]:
    """The op's parameters as written, without annotations (``x, y, *, alpha=...``)."""
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    first_default = len(positional) - len(arguments.defaults)
    shown = [arg.arg if index < first_default else f"{arg.arg}=..." for index, arg in enumerate(positional)]
    if arguments.kwonlyargs:
        shown.append("*")
        shown.extend(
            arg.arg if default is None else f"{arg.arg}=..."
            for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults)
        )
    return shown
