"""Which ctx calls replace an earlier call of the same method: two ``ctx.save_for_backward`` (or
``ctx.save_for_forward``) calls on one path of forward, where the second silently replaces the first.

Only certain orders count: both calls in one block at some level, the first before the second, nothing
between them that always leaves, and at least one of them not behind a condition of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple, Union

import libcst as cst

from ..models.class_model import Method
from ..syntax.walk import walk_scope


def replacing_calls(method: Method, calls: Sequence[cst.Call]) -> Iterator[Tuple[cst.Call, cst.Call]]:
    """``(earlier, later)`` for each of ``calls`` that certainly runs after an earlier one on some path
    (the first such earlier call), so that what it stores replaces what the earlier one stored."""
    if method.node is None or len(calls) < 2:
        return
    paths = _paths(method.node, calls)
    for later in range(1, len(calls)):
        for earlier in range(later):
            first, second = paths[earlier], paths[later]
            if first is not None and second is not None and _replaces(first, second):
                yield calls[earlier], calls[later]
                break


@dataclass(frozen=True)
class _Step:
    """One level of where a call sits: the ``index``-th statement of one block of a compound statement."""

    owner: int  # id of the statement (or def, or line) that owns the block
    branch: str  # which of its blocks: "body", "orelse", "handler0", ...
    index: int
    certain: bool  # the block runs whenever its owner does (a with body, a try body, a line's statements)
    block: Sequence[cst.CSTNode]  # the statements of the block (small statements for a line)
    after: Sequence[cst.CSTNode] = ()  # statements of the owner that run once the block completes (else, finally)


Path = Tuple[_Step, ...]


def _replaces(first: Path, second: Path) -> bool:
    """Whether the call at ``second`` certainly runs after the one at ``first`` on some path.

    That needs both in one block at some level, the first before the second, nothing in between that
    always leaves (return, raise, break, continue), and at least one of them not behind a condition of
    its own: two saves under two sibling ``if``s may exclude each other, which is unknown, so silent.
    """
    depth = 0
    for depth, (a, b) in enumerate(zip(first, second)):
        if (a.owner, a.branch) != (b.owner, b.branch):
            return False  # different arms of one if/try/match
        if a.index != b.index:
            break
    else:
        return False  # the same expression: not two separate calls
    shared = first[depth]
    if shared.index > second[depth].index:
        return False
    first_tail, second_tail = first[depth + 1:], second[depth + 1:]
    if not (all(step.certain for step in first_tail) or all(step.certain for step in second_tail)):
        return False
    # The first call's own blocks run on to their end, then every statement up to the second's.
    for step in first_tail:
        if not _all_complete(step.block[step.index + 1:]) or not _all_complete(step.after):
            return False
    if not _all_complete(shared.block[shared.index + 1:second[depth].index]):
        return False
    return all(_all_complete(step.block[:step.index]) for step in second_tail)


def _paths(function: cst.FunctionDef, calls: Sequence[cst.Call]) -> List[Optional[Path]]:
    """Where each call sits; None for calls in headers (``if save(...)``), ``while True`` or nested functions."""
    found: List[Optional[Path]] = [None] * len(calls)
    wanted = {id(call): index for index, call in enumerate(calls)}

    def visit(
        statements: Sequence[cst.BaseStatement], owner: int, branch: str, certain: bool, prefix: Path,
        after: Sequence[cst.BaseStatement] = (),
    ) -> None:
        for index, statement in enumerate(statements):
            path = prefix + (_Step(owner, branch, index, certain, statements, after),)
            if isinstance(statement, cst.SimpleStatementLine):
                for position, small in enumerate(statement.body):
                    for node in walk_scope(small):
                        if id(node) in wanted:
                            line = _Step(id(statement), "line", position, True, statement.body)
                            found[wanted[id(node)]] = path + (line,)
                continue
            key = id(statement)
            if isinstance(statement, cst.If):
                visit(_body(statement.body), key, "body", False, path)
                orelse = statement.orelse
                if isinstance(orelse, cst.If):
                    visit([orelse], key, "orelse", False, path)
                elif orelse is not None:
                    visit(_body(orelse.body), key, "orelse", False, path)
            elif isinstance(statement, cst.With):
                visit(_body(statement.body), key, "body", True, path)
            elif isinstance(statement, (cst.Try, cst.TryStar)):
                final = _body(statement.finalbody.body) if statement.finalbody is not None else ()
                orelse_block = _body(statement.orelse.body) if statement.orelse is not None else ()
                visit(_body(statement.body), key, "body", True, path, tuple(orelse_block) + tuple(final))
                handlers: Sequence[Union[cst.ExceptHandler, cst.ExceptStarHandler]] = statement.handlers
                for number, handler in enumerate(handlers):
                    visit(_body(handler.body), key, f"handler{number}", False, path, final)
                visit(orelse_block, key, "orelse", False, path, final)
                visit(final, key, "finally", True, path)
            elif isinstance(statement, (cst.For, cst.While)):
                if not _forever(statement):
                    visit(_body(statement.body), key, "body", False, path)
            elif isinstance(statement, cst.Match):
                for number, case in enumerate(statement.cases):
                    visit(_body(case.body), key, f"case{number}", False, path)

    visit(_body(function.body), id(function), "body", True, ())
    return found


_LEAVES = (cst.Return, cst.Raise, cst.Continue, cst.Break)


def _body(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=suite.body)]
    return ()


def _forever(loop: "cst.For | cst.While") -> bool:
    return isinstance(loop, cst.While) and isinstance(loop.test, cst.Name) and loop.test.value == "True"


def _all_complete(statements: Sequence[cst.CSTNode]) -> bool:
    return all(_completes(statement) for statement in statements)


def _completes(statement: cst.CSTNode) -> bool:
    """Whether running ``statement`` may reach its end; False where unsure (which keeps the rule silent)."""
    if isinstance(statement, cst.SimpleStatementLine):
        return _all_complete(statement.body)
    if isinstance(statement, cst.BaseSmallStatement):
        return not isinstance(statement, _LEAVES)
    if isinstance(statement, cst.If):
        orelse = statement.orelse
        if _all_complete(_body(statement.body)) or orelse is None:
            return True
        return _completes(orelse) if isinstance(orelse, cst.If) else _all_complete(_body(orelse.body))
    if isinstance(statement, cst.With):
        return _all_complete(_body(statement.body))
    if isinstance(statement, (cst.For, cst.While)):
        return not _forever(statement)  # a loop may run zero times
    if isinstance(statement, (cst.Try, cst.TryStar)):
        final = statement.finalbody
        if final is not None and not _all_complete(_body(final.body)):
            return False
        orelse = statement.orelse
        if _all_complete(_body(statement.body)) and (orelse is None or _all_complete(_body(orelse.body))):
            return True
        handlers: Sequence[Union[cst.ExceptHandler, cst.ExceptStarHandler]] = statement.handlers
        return any(_all_complete(_body(handler.body)) for handler in handlers)
    if isinstance(statement, cst.Match):
        return any(_all_complete(_body(case.body)) for case in statement.cases)
    return isinstance(statement, (cst.FunctionDef, cst.ClassDef))
