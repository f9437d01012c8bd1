"""Counting the gradients a backward returns.

A return is counted only when its length is certain: a tuple display, sums and products of tuple
displays and integer literals (``(g,) + (None,) * 4``), a single tensor or ``None``, or a local
name every binding of which agrees. Anything else is unknown, and rules stay silent on unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from .model import Binding, Method
from .tensors import Kind, TensorInference

_NONE = cst.Name("None")

# More returned values than any real backward has: counting stops (and stays silent) past this.
MAX_SLOTS = 1_000

# A budget against pathological code (long chains of names, huge sums): past it, the count is unknown.
# The depth keeps the recursion (a few frames a level, plus tensor inference at the leaves) far from
# Python's limit; the steps keep the time linear.
MAX_DEPTH = 50
MAX_STEPS = 10_000

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
    results = [CountedReturn(ret, _returned_slots(method, ret, counter)) for ret in facts.returns]
    body = method.node.body
    if isinstance(body, cst.IndentedBlock) and can_fall_off(body.body):
        results.append(CountedReturn(method.node, [(_NONE,)]))
    return results


def _returned_slots(method: Method, ret: cst.Return, counter: "_Counter") -> Optional[List[Slot]]:
    if ret.value is None:
        return [(_NONE,)]
    value = ret.value
    if method.name in GRADIENT_RETURNING and isinstance(value, cst.List):
        # PyTorch takes a list as one value (AGF116 reports that); the count the author meant is its
        # length, and it is what a tuple, the fix, will hold.
        if any(isinstance(element, cst.StarredElement) for element in value.elements):
            return None
        return [(element.value,) for element in value.elements]
    return counter.slots(value)


# The methods whose return value PyTorch reads as one gradient per input (AGF116 reports their lists).
GRADIENT_RETURNING = frozenset({"backward", "vjp"})


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
    """Counts the slots of returned values; unknown (None) past a budget, so pathological code stays cheap."""

    def __init__(self, inference: TensorInference) -> None:
        self.inference = inference
        self._following: Set[str] = set()
        self._memo: Dict[Tuple[str, bool], Optional[List[Slot]]] = {}
        self._steps = 0
        self._depth = 0
        self._cuts = 0  # how often the budget cut a count short

    def slots(self, node: cst.BaseExpression) -> Optional[List[Slot]]:
        return self._budgeted(self._slots, node)

    def _sequence(self, node: cst.BaseExpression) -> Optional[List[Slot]]:
        """Slots of an operand of ``+``/``*``: it must be a tuple, not a single tensor."""
        return self._budgeted(self._sequence_slots, node)

    def _budgeted(
        self, count: Callable[[cst.BaseExpression], Optional[List[Slot]]], node: cst.BaseExpression
    ) -> Optional[List[Slot]]:
        self._steps += 1
        if self._steps > MAX_STEPS or self._depth >= MAX_DEPTH:
            self._cuts += 1
            return None
        self._depth += 1
        try:
            return count(node)
        finally:
            self._depth -= 1

    def _slots(self, node: cst.BaseExpression) -> Optional[List[Slot]]:
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

    def _sequence_slots(self, node: cst.BaseExpression) -> Optional[List[Slot]]:
        if isinstance(node, cst.Tuple):
            return self._slots(node)
        if isinstance(node, cst.BinaryOperation):
            return self._arithmetic(node)
        if isinstance(node, cst.Name) and node.value != "None":
            return self._name(node.value, tuples_only=True)
        return None

    def _arithmetic(self, node: cst.BinaryOperation) -> Optional[List[Slot]]:
        if isinstance(node.operator, cst.Add):
            # ``a + b + c`` nests to the left, one level per operand: walk the chain in a loop.
            operands: List[cst.BaseExpression] = []
            current: cst.BaseExpression = node
            while isinstance(current, cst.BinaryOperation) and isinstance(current.operator, cst.Add):
                operands.append(current.right)
                current = current.left
            operands.append(current)
            total: List[Slot] = []
            for operand in reversed(operands):
                sequence = self._sequence(operand)
                if sequence is None or len(total) + len(sequence) > MAX_SLOTS:
                    return None
                total.extend(sequence)
            return total
        if isinstance(node.operator, cst.Multiply):
            for sequence_side, times_side in ((node.left, node.right), (node.right, node.left)):
                if isinstance(times_side, cst.Integer):
                    sequence = self._sequence(sequence_side)
                    times = int(times_side.evaluated_value)
                    if sequence is not None and 0 <= len(sequence) * times <= MAX_SLOTS:
                        return sequence * times
        return None

    def _name(self, name: str, tuples_only: bool = False) -> Optional[List[Slot]]:
        key = (name, tuples_only)
        if key in self._memo:  # each name is counted once: a name used twice costs nothing more
            found = self._memo[key]
        else:
            bindings = self.inference.facts.bindings.get(name)
            if not bindings or name in self.inference.params:
                return None
            if name in self._following:
                self._cuts += 1  # a cycle: what is memoized must not depend on where the cycle was entered
                return None
            cuts = self._cuts
            self._following.add(name)
            try:
                found = self._bindings(bindings, tuples_only)
            finally:
                self._following.discard(name)
            if cuts == self._cuts:  # a count the budget cut short may be known on another path: not kept
                self._memo[key] = found
        return None if found is None else list(found)  # callers own their list; the memo keeps its own

    def _bindings(self, bindings: Sequence[Binding], tuples_only: bool) -> Optional[List[Slot]]:
        counted: List[List[Slot]] = []
        for binding in bindings:
            if binding.value is None or binding.index is not None:
                return None
            found = self._sequence(binding.value) if tuples_only else self.slots(binding.value)
            if found is None:
                return None
            counted.append(found)
        if any(len(other) != len(counted[0]) for other in counted):
            return None
        if len(counted) == 1:
            return counted[0]
        # Merge the paths slot by slot; one node reached on two paths is kept once.
        return [
            tuple(dict.fromkeys(node for path in counted for node in path[index])) for index in range(len(counted[0]))
        ]


def can_fall_off(statements: Sequence[cst.BaseStatement]) -> bool:
    """Whether running ``statements`` can reach their end, answered only where that is certain.

    Loops, ``try``, ``match`` and a final bare call (which may never return) count as not falling
    off: a false "yes" would be a false alarm.
    """
    while statements:
        last = statements[-1]
        if isinstance(last, cst.SimpleStatementLine):
            final = last.body[-1] if last.body else None
            if isinstance(final, (cst.Return, cst.Raise, cst.Assert)):
                return False
            return not (isinstance(final, cst.Expr) and isinstance(final.value, (cst.Call, cst.Await)))
        if isinstance(last, cst.If):
            if _block_falls_off(last.body):
                return True
            orelse = last.orelse
            if orelse is None:
                return True
            if isinstance(orelse, cst.If):  # elif: a loop, not a recursion, however long the chain
                statements = [orelse]
                continue
            return _block_falls_off(orelse.body)
        if isinstance(last, cst.With):
            return _block_falls_off(last.body)
        return False
    return True


def _block_falls_off(block: cst.BaseSuite) -> bool:
    # Recursion here follows indentation, which Python caps at 100 levels.
    if isinstance(block, cst.IndentedBlock):
        return can_fall_off(block.body)
    if isinstance(block, cst.SimpleStatementSuite):
        return can_fall_off([cst.SimpleStatementLine(body=block.body)])
    return False
