"""Counting the gradients a backward returns.

A return is counted only when its length is certain: a tuple display, sums and products of tuple
displays and integer literals (``(g,) + (None,) * 4``), a single tensor or ``None``, or a local
name every binding of which agrees. Anything else is unknown, and rules stay silent on unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from .model import Method
from .tensors import Kind, TensorInference

_NONE = cst.Name("None")

# More returned values than any real backward has: counting stops (and stays silent) past this.
MAX_SLOTS = 1_000

# One returned value: the expression that produces it on each path (several when the returned name
# is bound on several paths, e.g. in both branches of an ``if``).
Slot = Tuple[cst.BaseExpression, ...]


@dataclass
class CountedReturn:
    """One way out of a method: a ``return`` statement, or falling off the end (``node`` is the def)."""

    node: Union[cst.Return, cst.FunctionDef]
    slots: Optional[List[Slot]]  # one entry per returned value; None if the count is unknown

    @property
    def count(self) -> Optional[int]:
        return None if self.slots is None else len(self.slots)

    @property
    def falls_off(self) -> bool:
        return isinstance(self.node, cst.FunctionDef)


def counted_returns(method: Method, inference: TensorInference) -> List[CountedReturn]:
    """Every way out of ``method`` with the values it returns (generators yield no count)."""
    facts = method.facts
    if method.node is None or facts.yields or is_stub(method.node):
        return []
    counter = _Counter(inference)
    results = [
        CountedReturn(ret, [(_NONE,)] if ret.value is None else counter.slots(ret.value)) for ret in facts.returns
    ]
    body = method.node.body
    if isinstance(body, cst.IndentedBlock) and can_fall_off(body.body):
        results.append(CountedReturn(method.node, [(_NONE,)]))
    return results


def is_stub(function: cst.FunctionDef) -> bool:
    """A body of only a docstring, ``pass`` or ``...``: a placeholder meant to be overridden."""
    body = function.body
    statements = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else ()
    for statement in statements:
        smalls = statement.body if isinstance(statement, cst.SimpleStatementLine) else [statement]
        for small in smalls:
            if isinstance(small, cst.Pass):
                continue
            if isinstance(small, cst.Expr) and isinstance(
                small.value, (cst.Ellipsis, cst.SimpleString, cst.ConcatenatedString)
            ):
                continue
            return False
    return True


def is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def slot_is_none(slot: Slot) -> bool:
    return all(is_none(node) for node in slot)


class _Counter:
    def __init__(self, inference: TensorInference) -> None:
        self.inference = inference
        self._following: Set[str] = set()

    def slots(self, node: cst.BaseExpression) -> Optional[List[Slot]]:
        if isinstance(node, cst.Tuple):
            if any(isinstance(element, cst.StarredElement) for element in node.elements):
                return None
            return [(element.value,) for element in node.elements]
        if isinstance(node, cst.BinaryOperation):
            sequence = self._arithmetic(node)
            if sequence is not None:
                return sequence
        if isinstance(node, cst.Name):
            if node.value == "None":
                return [(node,)]
            named = self._name(node.value)
            if named is not None:
                return named
        if self.inference.kind(node) in (Kind.TENSOR, Kind.NONE):
            return [(node,)]
        return None

    def _arithmetic(self, node: cst.BinaryOperation) -> Optional[List[Slot]]:
        if isinstance(node.operator, cst.Add):
            left, right = self._sequence(node.left), self._sequence(node.right)
            if left is None or right is None or len(left) + len(right) > MAX_SLOTS:
                return None
            return left + right
        if isinstance(node.operator, cst.Multiply):
            for sequence_side, times_side in ((node.left, node.right), (node.right, node.left)):
                if isinstance(times_side, cst.Integer):
                    sequence = self._sequence(sequence_side)
                    times = int(times_side.evaluated_value)
                    if sequence is not None and 0 <= len(sequence) * times <= MAX_SLOTS:
                        return sequence * times
        return None

    def _sequence(self, node: cst.BaseExpression) -> Optional[List[Slot]]:
        """Slots of an operand of ``+``/``*``: it must be a tuple, not a single tensor."""
        if isinstance(node, cst.Tuple):
            return self.slots(node)
        if isinstance(node, cst.BinaryOperation):
            return self._arithmetic(node)
        if isinstance(node, cst.Name) and node.value != "None":
            return self._name(node.value, tuples_only=True)
        return None

    def _name(self, name: str, tuples_only: bool = False) -> Optional[List[Slot]]:
        bindings = self.inference.facts.bindings.get(name)
        if not bindings or name in self.inference.params or name in self._following:
            return None
        self._following.add(name)
        try:
            counted: List[List[Slot]] = []
            for binding in bindings:
                if binding.value is None or binding.index is not None:
                    return None
                value = binding.value
                found = self._sequence(value) if tuples_only else self.slots(value)
                if found is None:
                    return None
                counted.append(found)
        finally:
            self._following.discard(name)
        if any(len(other) != len(counted[0]) for other in counted):
            return None
        # Merge the paths slot by slot.
        return [tuple(node for path in counted for node in path[index]) for index in range(len(counted[0]))]


def can_fall_off(statements: Sequence[cst.BaseStatement]) -> bool:
    """Whether running ``statements`` can reach their end, answered only where that is certain.

    Loops, ``try``, ``match`` and a final bare call (which may never return) count as not falling
    off: a false "yes" would be a false alarm.
    """
    if not statements:
        return True
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        final = last.body[-1] if last.body else None
        if isinstance(final, (cst.Return, cst.Raise)):
            return False
        if isinstance(final, cst.Expr) and isinstance(final.value, (cst.Call, cst.Await)):
            return False
        if isinstance(final, cst.Assert):
            return False
        return True
    if isinstance(last, cst.If):
        if _block_falls_off(last.body):
            return True
        orelse = last.orelse
        if orelse is None:
            return True
        if isinstance(orelse, cst.If):
            return can_fall_off([orelse])
        return _block_falls_off(orelse.body)
    if isinstance(last, cst.With):
        return _block_falls_off(last.body)
    return False


def _block_falls_off(block: cst.BaseSuite) -> bool:
    if isinstance(block, cst.IndentedBlock):
        return can_fall_off(block.body)
    if isinstance(block, cst.SimpleStatementSuite):
        return can_fall_off([cst.SimpleStatementLine(body=block.body)])
    return False
