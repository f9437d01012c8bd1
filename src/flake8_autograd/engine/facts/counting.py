"""Counting the gradients a backward returns.

A return is counted only when its length is certain: a tuple display, sums and products of tuple
displays and integer literals (``(g,) + (None,) * 4``), a single tensor or ``None``, or a local
name every binding of which agrees. Anything else is unknown, and rules stay silent on unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from ..models.body_facts import Binding
from ..models.class_model import ClassModel, Method
from ..syntax.names import ImportTable
from .tensor_kinds import Kind
from .integer_dtypes import is_integer_tensor
from .tensors.inference import TensorInference
from ..syntax.walk import Settle, fingerprint, walk_scope

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
    if isinstance(body, cst.IndentedBlock) and (
        (can_fall_off(body.body, method.owner.settle) and not _fall_off_needs_no_gradient(method, inference, body.body))
        or (method.name in GRADIENT_RETURNING and not facts.returns and _ends_in_returning_call(body.body))
    ):
        results.append(CountedReturn(method.node, [(_NONE,)]))
    return results


# ``any(ctx.needs_input_grad)``: true whenever one input needs a gradient.
_EVERY_INPUT = -1


def _fall_off_needs_no_gradient(method: Method, inference: TensorInference, body: Sequence[cst.BaseStatement]) -> bool:
    """Whether backward can fall off its end only when no input needs a gradient, a call autograd never
    makes: the body ends in an ``if``/``elif`` chain with no ``else`` whose every branch returns, and for
    each input some condition of the chain is true whenever ``ctx.needs_input_grad`` is true for it
    (``if ctx.needs_input_grad[0]: ... elif ctx.needs_input_grad[1]: ...``). needs_input_grad cannot
    change inside backward, and autograd calls backward only when an input requires grad."""
    if method.name != "backward" or method.signature is None or method.signature.first is None or not body:
        return False
    chain = body[-1]
    if not isinstance(chain, cst.If):
        return False
    ctx = method.signature.first.name
    covered: Set[int] = set()
    branch: Optional[cst.If] = chain
    while branch is not None:
        if _block_falls_off(branch.body):
            return False
        try:
            covered |= _implied_by_needs_input_grad(branch.test, ctx)
        except RecursionError:  # a condition of thousands of terms: nothing is certain
            return False
        orelse = branch.orelse
        if isinstance(orelse, cst.Else):
            return False  # an else that returns leaves no fall-through; one that falls off is a real one
        branch = orelse
    if _EVERY_INPUT in covered:
        return True
    inputs = inference.model.forward_inputs()
    return inputs is not None and inputs.total > 0 and covered >= set(range(inputs.total))


def _implied_by_needs_input_grad(test: cst.BaseExpression, ctx: str) -> Set[int]:
    """The inputs ``i`` for which ``ctx.needs_input_grad[i]`` being true makes ``test`` true; ``_EVERY_INPUT``
    stands for all of them. Empty when nothing is certain."""
    if isinstance(test, cst.Subscript) and _is_needs_input_grad(test.value, ctx) and len(test.slice) == 1:
        index = test.slice[0].slice
        value = _constant_int(index.value) if isinstance(index, cst.Index) else None
        return {value} if value is not None and value >= 0 else set()
    if (
        isinstance(test, cst.Call)
        and isinstance(test.func, cst.Name)
        and test.func.value == "any"
        and len(test.args) == 1
        and _is_needs_input_grad(test.args[0].value, ctx)
    ):
        return {_EVERY_INPUT}
    if isinstance(test, cst.BooleanOperation):
        left, right = _implied_by_needs_input_grad(test.left, ctx), _implied_by_needs_input_grad(test.right, ctx)
        if isinstance(test.operator, cst.Or):
            return left | right
        if _EVERY_INPUT in left:
            return right
        if _EVERY_INPUT in right:
            return left
        return left & right
    return set()


def _is_needs_input_grad(node: cst.BaseExpression, ctx: str) -> bool:
    return (
        isinstance(node, cst.Attribute)
        and node.attr.value == "needs_input_grad"
        and isinstance(node.value, cst.Name)
        and node.value.value == ctx
    )


# Words in the name of a call that may be meant never to return (it raises or exits).
_NEVER_RETURNING_WORDS = ("raise", "error", "fail", "exit", "abort", "throw", "unsupported", "implemented", "skip")


def _ends_in_returning_call(statements: Sequence[cst.BaseStatement]) -> bool:
    """A body with no ``return`` that ends in a call of a method or module function, ``ext.backward(g, out)``:
    that call returns (unless its name says it raises), and so does the body, with None.

    A bare name (``helper(g)``) may be a local helper that always raises: not counted.
    """
    last = statements[-1] if statements else None
    if isinstance(last, cst.With) and isinstance(last.body, cst.IndentedBlock):
        return _ends_in_returning_call(last.body.body)
    if not isinstance(last, cst.SimpleStatementLine) or not last.body:
        return False
    final = last.body[-1]
    if not isinstance(final, cst.Expr) or not isinstance(final.value, cst.Call):
        return False
    func = final.value.func
    if not isinstance(func, cst.Attribute):
        return False
    name = func.attr.value.lower()
    return not any(word in name for word in _NEVER_RETURNING_WORDS)


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

    def _unpacked(self, node: cst.BaseExpression) -> Optional[List[Slot]]:
        """Slots of ``*node`` in a display: a tuple, or a list display (a list name may be appended to)."""
        return self._budgeted(self._unpacked_slots, node)

    def _slots(self, node: cst.BaseExpression) -> Optional[List[Slot]]:
        if isinstance(node, cst.Tuple):
            return self._display(node.elements)
        if isinstance(node, (cst.BinaryOperation, cst.Subscript)):
            sequence = self._sequence_slots(node)
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
            return self._arithmetic(node, self._sequence)
        if isinstance(node, cst.Subscript):
            return self._sliced(node)
        if isinstance(node, cst.Name) and node.value != "None":
            return self._name(node.value, tuples_only=True)
        return None

    def _unpacked_slots(self, node: cst.BaseExpression) -> Optional[List[Slot]]:
        if isinstance(node, cst.List):
            return self._display(node.elements)
        if isinstance(node, cst.BinaryOperation):  # ``*[None] * 3``
            return self._arithmetic(node, self._unpacked)
        return self._sequence_slots(node)

    def _display(self, elements: Sequence[cst.BaseElement]) -> Optional[List[Slot]]:
        """The slots of a tuple or list display; ``*name`` counts when the length of ``name`` is certain."""
        slots: List[Slot] = []
        for element in elements:
            if isinstance(element, cst.StarredElement):
                unpacked = self._unpacked(element.value)
                if unpacked is None:
                    return None
                slots.extend(unpacked)
            else:
                slots.append((element.value,))
            if len(slots) > MAX_SLOTS:
                return None
        return slots

    def _sliced(self, node: cst.Subscript) -> Optional[List[Slot]]:
        """``grads[:3]`` of a tuple of certain length, with constant bounds."""
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Slice):
            return None
        bounds = node.slice[0].slice
        limits: List[Optional[int]] = []
        for bound in (bounds.lower, bounds.upper, bounds.step):
            if bound is None:
                limits.append(None)
                continue
            value = _constant_int(bound)
            if value is None:
                return None
            limits.append(value)
        if limits[2] == 0:
            return None
        sequence = self._sequence(node.value)
        return None if sequence is None else sequence[slice(*limits)]

    def _arithmetic(
        self, node: cst.BinaryOperation, operand_slots: Callable[[cst.BaseExpression], Optional[List[Slot]]]
    ) -> Optional[List[Slot]]:
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
                sequence = operand_slots(operand)
                if sequence is None or len(total) + len(sequence) > MAX_SLOTS:
                    return None
                total.extend(sequence)
            return total
        if isinstance(node.operator, cst.Multiply):
            for sequence_side, times_side in ((node.left, node.right), (node.right, node.left)):
                if isinstance(times_side, cst.Integer):
                    sequence = operand_slots(sequence_side)
                    times = int(times_side.evaluated_value)
                    if sequence is not None and 0 <= times <= MAX_SLOTS and len(sequence) * times <= MAX_SLOTS:
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


def _constant_int(node: cst.BaseExpression) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        magnitude = _constant_int(node.expression) if isinstance(node.expression, cst.Integer) else None
        return None if magnitude is None else -magnitude
    return None


def can_fall_off(statements: Sequence[cst.BaseStatement], settle: Optional[Settle] = None) -> bool:
    """Whether running ``statements`` can reach their end, answered only where that is certain.

    Loops, ``try``, ``match`` and a final bare call (which may never return) count as not falling
    off: a false "yes" would be a false alarm. A final ``assert`` or ``raise`` ends the block. With
    ``settle``, an arm of an ``if`` that is certainly not taken does not fall off, since it never runs:
    ``if True: return x`` ends the block, ``if LEGACY: return`` (``LEGACY = False``) does not.
    """
    while statements:
        last = statements[-1]
        if isinstance(last, cst.SimpleStatementLine):
            final = last.body[-1] if last.body else None
            if isinstance(final, (cst.Return, cst.Raise, cst.Assert)):
                return False
            return not (isinstance(final, cst.Expr) and isinstance(final.value, (cst.Call, cst.Await)))
        if isinstance(last, cst.If):
            verdict = settle(last.test) if settle is not None else None
            if verdict is not False and _block_falls_off(last.body, settle):
                return True
            orelse = last.orelse
            if verdict is True:
                return False  # the arm taken does not fall off (above); the others never run
            if orelse is None:
                return True
            if isinstance(orelse, cst.If):  # elif: a loop, not a recursion, however long the chain
                statements = [orelse]
                continue
            return _block_falls_off(orelse.body, settle)
        if isinstance(last, cst.With):
            return _block_falls_off(last.body, settle)
        return False
    return True


def _block_falls_off(block: cst.BaseSuite, settle: Optional[Settle] = None) -> bool:
    # Recursion here follows indentation, which Python caps at 100 levels.
    if isinstance(block, cst.IndentedBlock):
        return can_fall_off(block.body, settle)
    if isinstance(block, cst.SimpleStatementSuite):
        return can_fall_off([cst.SimpleStatementLine(body=block.body)], settle)
    return False


# --- Reachability: when autograd never calls backward, or never takes one of its ways out ------------

# Models whose backward is being read for the gradients it returns: a forward input asked about meanwhile
# (backward reading what forward saved) is answered without this fact, so the question does not recur.
_READING_GRADIENTS: Set[int] = set()


def inputs_certainly_given_gradients(model: ClassModel, imports: ImportTable) -> FrozenSet[str]:
    """Forward's inputs for which every way out of the class's own backward returns a gradient that is
    certainly not None (what :class:`.TensorInference` of forward is given, to read them as tensors)."""
    inputs = model.forward_inputs()
    backward = model.own_methods.get("backward")
    if inputs is None or backward is None or backward.node is None or id(model) in _READING_GRADIENTS:
        return frozenset()
    _READING_GRADIENTS.add(id(model))
    try:
        inference = TensorInference(backward, model, imports, "backward")
        returns = counted_returns(backward, inference)
        if not returns or any(way.slots is None or len(way.slots) != len(inputs.params) for way in returns):
            return frozenset()
        return frozenset(
            param.name for index, param in enumerate(inputs.params)
            if all(_certainly_a_value(value, inference) for way in returns for value in (way.slots or [])[index])
        )
    finally:
        _READING_GRADIENTS.discard(id(model))


def _certainly_a_value(node: cst.BaseExpression, inference: TensorInference) -> bool:
    """Arithmetic, or a call known to give a tensor: never None, whatever the operands are."""
    if isinstance(node, cst.BinaryOperation):
        return True
    if isinstance(node, cst.UnaryOperation):
        return not isinstance(node.operator, cst.Not)
    return isinstance(node, cst.Call) and inference.kind(node) is Kind.TENSOR


def backward_never_runs(model: ClassModel, inference: TensorInference) -> bool:
    """No output of forward can carry a gradient, so autograd builds no node and never calls backward.

    An output carries none when it is passed to ``ctx.mark_non_differentiable``, is an integer or bool
    tensor by construction, or is not a tensor; a forward that returns only None gives no output at all.
    ``inference`` is forward's. (jvp still runs for such outputs under forward-mode AD.)
    """
    forward = model.method("forward")
    if forward is None or forward.node is None or forward.facts.yields or is_stub(forward.node):
        return False
    marked, all_marked = _marked_non_differentiable(model, forward)
    if all_marked:
        return True
    for ret in forward.facts.returns:
        value = ret.value
        if value is None:
            continue
        if isinstance(value, cst.Name) and value.value in marked.starred:
            continue
        elements = value.elements if isinstance(value, cst.Tuple) else [cst.Element(value)]
        for element in elements:
            if isinstance(element, cst.StarredElement):
                if not (isinstance(element.value, cst.Name) and element.value.value in marked.starred):
                    return False
            elif not _carries_no_gradient(element.value, marked.names, inference):
                return False
    return True


@dataclass
class _Marked:
    names: Set[str]  # ctx.mark_non_differentiable(a, b)
    starred: Set[str]  # ctx.mark_non_differentiable(*outputs): every element of ``outputs``


def _marked_non_differentiable(model: ClassModel, forward: Method) -> Tuple[_Marked, bool]:
    """The names forward marks non-differentiable, and whether setup_context marks its whole ``output``."""
    marked = _Marked(set(), set())
    if forward.ctx_name is not None:
        for call in forward.facts.ctx_calls.get("mark_non_differentiable", []):
            for arg in call.args:
                if isinstance(arg.value, cst.Name) and arg.keyword is None:
                    (marked.starred if arg.star == "*" else marked.names).add(arg.value.value)
    setup = model.method("setup_context") if model.setup_context_style else None
    if setup is None or setup.signature is None or len(setup.signature.positional) < 3:
        return marked, False
    output = setup.signature.positional[2].name
    whole = any(
        isinstance(arg.value, cst.Name) and arg.value.value == output and arg.keyword is None
        for call in setup.facts.ctx_calls.get("mark_non_differentiable", [])
        for arg in call.args
    )
    return marked, whole


def _carries_no_gradient(node: cst.BaseExpression, marked: Set[str], inference: TensorInference) -> bool:
    if is_none(node) or (isinstance(node, cst.Name) and node.value in marked):
        return True
    if inference.kind(node) in (Kind.NONE, Kind.NOT_TENSOR):
        return True
    return is_integer_tensor(node, inference)


def fall_off_mirrors_forward(backward: Method, forward: Method) -> bool:
    """Backward falls off its end only where forward returned None, so autograd never gets there.

    Both end with an ``if``/``elif`` chain; backward's has no ``else`` and each of its branches returns
    or raises; every condition of forward's chain is also one of backward's, and forward returns only
    inside the branches of its chain (its ``else``, if any, does not return). When backward falls
    through, all its conditions are false, so forward's were too: forward returned None (or raised),
    and ``apply`` built no node.
    """
    backward_chain = _final_chain(backward)
    forward_chain = _final_chain(forward)
    if backward_chain is None or forward_chain is None:
        return False
    backward_tests, backward_branches, backward_else = backward_chain
    forward_tests, forward_branches, _ = forward_chain
    if backward_else is not None or any(_block_falls_off(branch) for branch in backward_branches):
        return False
    inside = {
        id(node) for branch in forward_branches for node in walk_scope(branch) if isinstance(node, cst.Return)
    }
    if any(id(ret) not in inside for ret in forward.facts.returns):
        return False
    backward_keys = {fingerprint(test) for test in backward_tests}
    return all(fingerprint(test) in backward_keys for test in forward_tests)


def _final_chain(
    method: Method,
) -> Optional[Tuple[List[cst.BaseExpression], List[cst.BaseSuite], Optional[cst.BaseSuite]]]:
    """The conditions and branches of the ``if``/``elif`` chain that ends ``method``, and its ``else``."""
    node = method.node
    if node is None or not isinstance(node.body, cst.IndentedBlock) or not node.body.body:
        return None
    current = node.body.body[-1]
    if not isinstance(current, cst.If):
        return None
    tests: List[cst.BaseExpression] = []
    branches: List[cst.BaseSuite] = []
    while True:
        tests.append(current.test)
        branches.append(current.body)
        orelse = current.orelse
        if isinstance(orelse, cst.If):
            current = orelse
            continue
        return tests, branches, None if orelse is None else orelse.body
