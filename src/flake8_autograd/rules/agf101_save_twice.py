"""AGF101: ctx.save_for_backward called more than once on one path."""

from __future__ import annotations

from typing import Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from ..engine.analysis import Analysis
from ..engine.model import ClassModel, Method
from ..engine.walk import walk_scope
from .base import Finding, Rule

# A statement's place: (id of the owning compound statement or body, branch name, index in block).
Path = Tuple[Tuple[int, str, int], ...]


class SaveTwiceRule(Rule):
    code = "AGF101"
    name = "save_for_backward called twice on one path"
    message = (
        "{method} calls ctx.save_for_backward again after line {first}; the second call silently replaces the "
        "first: save every tensor in one call"
    )
    invalid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a)
                ctx.save_for_backward(b)
                return a * b
        """,
    )
    valid = (
        """
        class MulFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b, bias=None):
                if bias is None:
                    ctx.save_for_backward(a, b)
                else:
                    ctx.save_for_backward(a, b, bias)
                return a * b
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        for name in ("forward", "setup_context"):
            method = model.own_methods.get(name)
            if method is None or method.node is None:
                continue
            calls = method.facts.ctx_calls.get("save_for_backward", [])
            if len(calls) < 2:
                continue
            paths = _paths(method, calls)
            for later in range(1, len(calls)):
                for earlier in range(later):
                    first, second = paths[earlier], paths[later]
                    if first is not None and second is not None and _same_path(first, second, method):
                        line, _ = method.position(calls[earlier])
                        yield self.report(method, calls[later], method=method.qualname, first=line)
                        break


def _paths(method: Method, calls: Sequence[cst.Call]) -> List[Optional[Path]]:
    """Where each call's statement sits; None for calls in loops, lambdas or nested functions."""
    assert method.node is not None
    found: List[Optional[Path]] = [None] * len(calls)
    wanted = {id(call): index for index, call in enumerate(calls)}

    def visit(statements: Sequence[cst.BaseStatement], owner: int, branch: str, prefix: Path) -> None:
        for index, statement in enumerate(statements):
            path = prefix + ((owner, branch, index),)
            if isinstance(statement, cst.SimpleStatementLine):
                for node in walk_scope(statement):
                    if id(node) in wanted:
                        found[wanted[id(node)]] = path
            elif isinstance(statement, cst.If):
                visit(_body(statement.body), id(statement), "body", path)
                orelse = statement.orelse
                if isinstance(orelse, cst.If):
                    visit([orelse], id(statement), "orelse", path)
                elif orelse is not None:
                    visit(_body(orelse.body), id(statement), "orelse", path)
            elif isinstance(statement, cst.With):
                visit(_body(statement.body), id(statement), "body", path)
            elif isinstance(statement, cst.Try):
                visit(_body(statement.body), id(statement), "body", path)
                for number, handler in enumerate(statement.handlers):
                    visit(_body(handler.body), id(statement), f"handler{number}", path)
            # Loops, match and the rest: calls inside stay None (unsure whether they repeat).

    visit(_body(method.node.body), id(method.node), "body", ())
    return found


def _body(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=suite.body)]
    return ()


def _same_path(first: Path, second: Path, method: Method) -> bool:
    """Both run in one execution: no branch splits them and nothing returns in between."""
    for (owner_a, branch_a, index_a), (owner_b, branch_b, index_b) in zip(first, second):
        if owner_a != owner_b:
            return False
        if branch_a != branch_b:
            return False  # different arms of one if/try
        if index_a != index_b:
            return index_a < index_b and not _exits_after(first, method)
    return False


def _exits_after(path: Path, method: Method) -> bool:
    """Whether the first call sits in a nested block of a method that returns early somewhere.

    ``if cond: save(a); return out`` followed by ``save(b)`` is two paths; without following
    control flow exactly, any return in a method whose first call is nested counts as that.
    """
    return len(path) > 1 and bool(method.facts.returns)
