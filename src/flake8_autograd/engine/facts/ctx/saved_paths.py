"""Which paths of forward save tensors, and which reads of ``ctx.saved_tensors`` need some.

``ctx.saved_tensors`` is an empty tuple when the method that fills it (forward or setup_context) made no
``ctx.save_for_backward`` call on the path that ran, so a read that takes an element fails there. These
facts answer only where the answer is certain; anything they cannot follow (``ctx`` handed to a call or a
nested function, ``match``, ``while True``, a ``finally`` that saves, a branch on whether a gradient is
needed, an ``if`` with no ``else`` that saves or returns: a save made optional on purpose) gives
"unknown", which the rules take as silence.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set

import libcst as cst

from ..counting import is_none
from .gradient_paths import gradient_branch
from ...models.class_model import Method
from ..tensor_kinds import Kind
from ..tensors.inference import TensorInference
from ...syntax.walk import children, walk_scope

# The ctx calls that fill ``saved_tensors`` (backward sees the first, jvp the second; both count as a save
# for either, so the facts never report a path that saves through the other one).
SAVING_CALLS = ("save_for_backward", "save_for_forward")

# Names whose presence in a test means the branch follows whether a gradient is wanted: a forward that
# saves only when one is may be right (autograd calls backward only then), so such paths are unknown.
_GRADIENT_TESTS = frozenset({"needs_input_grad", "requires_grad", "is_grad_enabled", "grad_enabled"})


class _Unknown(Exception):
    """A construct the path walk does not follow."""


@dataclass
class SavingPaths:
    """How a saving method's paths end: ``never_saves`` when it has no saving call at all, and else the
    first way out reached on a path without one (None when every path saves): a ``return <value>`` of
    forward, or the end of setup_context (whose result autograd ignores)."""

    never_saves: bool
    unsaved_exit: Optional[cst.CSTNode] = None


def saving_paths(saver: Method) -> Optional[SavingPaths]:
    """The saving paths of ``saver`` (forward or setup_context); None when they are not certain."""
    node, ctx_name = saver.node, saver.ctx_name
    if node is None or ctx_name is None or saver.facts.yields or not ctx_used_only_directly(saver):
        return None
    saves = [call for name in SAVING_CALLS for call in saver.facts.ctx_calls.get(name, [])]
    if not saves:
        return SavingPaths(True)
    in_forward = saver.name == "forward"
    walker = _PathWalker(saver, saves, any_return=not in_forward, gradient_names=saver.derived(_gradient_locals))
    walker.flags = saver.derived(_caller_values)
    try:
        falls_off_unsaved = walker.block(node.body, live=True)
    except _Unknown:
        return None
    if walker.unsaved_exit is None and falls_off_unsaved and not in_forward:
        body = node.body
        walker.unsaved_exit = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else node
    return SavingPaths(False, walker.unsaved_exit)


def ctx_used_only_directly(method: Method) -> bool:
    """Every use of the ctx is ``ctx.<attribute>`` in the method's own scope: no call receives it, no name
    or container holds it, no nested function or lambda sees it, and it is never rebound."""
    facts, ctx_name = method.facts, method.ctx_name
    if ctx_name is None or method.node is None or ctx_name in facts.bindings:
        return False
    attribute_uses = sum(len(reads) for reads in facts.ctx_reads.values())
    if facts.ctx_references != attribute_uses:
        return False
    # The parameter itself is the one use of the name outside the body's own scope.
    return method.name_count(ctx_name) == facts.ctx_references + 1


def returns_a_value(method: Method) -> bool:
    """Whether ``method`` has a ``return <value>``: a forward without one (a stub a subclass replaces, a
    forward that only raises) gives no output, and its class's backward never runs as written."""
    return any(_returns_value(ret) for ret in method.facts.returns)


def _returns_value(ret: cst.Return) -> bool:
    """``return <value>``: forward returning None gives no output, so autograd never calls backward."""
    return ret.value is not None and not is_none(ret.value)


class _PathWalker:
    """Follows the statements of a body with one bit: whether a path that has not saved yet reaches here."""

    def __init__(
        self,
        method: Method,
        saves: Sequence[cst.CSTNode],
        any_return: bool,
        gradient_names: FrozenSet[str] = frozenset(),
    ) -> None:
        self.method = method
        self.saves = {id(save) for save in saves}
        # Where the saves are in the method's shared walk: "does this statement save" is then a look at a
        # few numbers, not a walk of the statement (asked of every statement at every depth).
        spans = [method.span(save) for save in saves]
        self.save_places: Optional[List[int]] = sorted(span[0] for span in spans if span is not None)
        if len(self.save_places) != len(saves):
            self.save_places = None  # a save the shared walk did not reach: walk each statement
        self.gradient_names = gradient_names  # locals holding a gradient test (``wanted = any(ctx.needs_input_grad)``)
        self.any_return = any_return  # setup_context: every return is a way out; forward: one with a value
        self.unsaved_exit: Optional[cst.CSTNode] = None
        # Values the caller chooses (forward's parameters): a branch on one of them that saves or returns
        # may be an inference mode the caller runs without a gradient, unknown when this is set.
        self.flags: FrozenSet[str] = frozenset()

    def _saves_in(self, node: cst.CSTNode) -> bool:
        span = self.method.span(node) if self.save_places is not None else None
        if span is None:
            return any(id(found) in self.saves for found in walk_scope(node))
        start, end = span
        places = self.save_places or []  # sorted: the first place past ``start`` answers
        following = bisect.bisect_right(places, start)
        return following < len(places) and places[following] < end

    def _mentions_gradient_test(self, test: cst.BaseExpression) -> bool:
        names = self.method.names_in(test)
        return not names.isdisjoint(_GRADIENT_TESTS) or not names.isdisjoint(self.gradient_names)

    def block(self, suite: cst.BaseSuite, live: bool) -> bool:
        if isinstance(suite, cst.SimpleStatementSuite):
            return self.statements([cst.SimpleStatementLine(body=suite.body)], live)
        if isinstance(suite, cst.IndentedBlock):
            return self.statements(suite.body, live)
        raise _Unknown

    def statements(self, statements: Sequence[cst.BaseStatement], live: bool) -> bool:
        for statement in statements:
            if not live and not self._saves_in(statement):
                continue  # every path here has saved; nested returns need no look (they are saved paths)
            live = self.statement(statement, live)
        return live

    def settled_branch(self, statement: cst.If, live: bool) -> Optional[bool]:
        """Whether a path not saved yet leaves ``statement`` when its test settles which arm backward can
        follow (gradient_paths.py): the arm taken only when no input needs a gradient ends no path backward
        follows, so it is walked as one that needs nothing. None when the test does not settle it."""
        wanted = gradient_branch(self.method, statement.test)
        if wanted is None:
            return None
        if self._saves_in(statement.test):
            live = False
        body_live, other_live = (live, False) if wanted else (False, live)
        taken = self.block(statement.body, body_live)
        orelse = statement.orelse
        if orelse is None:
            return taken or other_live
        if isinstance(orelse, cst.If):
            return self.statement(orelse, other_live) or taken
        return self.block(orelse.body, other_live) or taken

    def _chosen_by_flag(self, statement: cst.If) -> bool:
        """A test on a value the caller chooses, with an arm that saves or returns: which arm runs with
        backward to come is the caller's business (an inference flag may go with no_grad)."""
        if not self.flags or not _reads_flag(statement.test, self.flags, 0):
            return False
        return self._saves_in(statement) or _has_return(self.method, statement)

    def statement(self, statement: cst.BaseStatement, live: bool) -> bool:
        if isinstance(statement, cst.SimpleStatementLine):
            return self.simple(statement.body, live)
        if isinstance(statement, cst.If):
            settled = self.settled_branch(statement, live)
            if settled is not None:
                return settled
            if self._mentions_gradient_test(statement.test) or (live and self._chosen_by_flag(statement)):
                raise _Unknown
            if self._saves_in(statement.test):
                live = False
            orelse = statement.orelse
            settle = self.method.owner.settle
            verdict = settle(statement.test) if settle is not None else None
            if verdict is True:
                return self.block(statement.body, live)  # the other arms never run
            if verdict is False:
                if orelse is None:
                    return live
                return self.statement(orelse, live) if isinstance(orelse, cst.If) else self.block(orelse.body, live)
            if orelse is None and live and (self._saves_in(statement.body) or _has_return(self.method, statement.body)):
                # ``if training: ctx.save_for_backward(x)``, ``if flag: return x * 2``: skipping the save
                # is a choice the condition makes; only an arm of a full if/else may have forgotten it.
                raise _Unknown
            taken = self.block(statement.body, live)
            if orelse is None:
                return taken or live
            if isinstance(orelse, cst.If):
                return self.statement(orelse, live) or taken
            return self.block(orelse.body, live) or taken
        if isinstance(statement, (cst.For, cst.While)):
            return self.loop(statement, live)
        if isinstance(statement, cst.With):
            if any(self._saves_in(item) for item in statement.items):
                live = False
            return self.block(statement.body, live)
        if isinstance(statement, cst.Try):
            return self.try_statement(statement, live)
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return live  # ctx is not seen inside (checked before): a definition saves nothing
        raise _Unknown  # match, try*, ...

    def simple(self, smalls: Sequence[cst.BaseSmallStatement], live: bool) -> bool:
        for small in smalls:
            if self._saves_in(small):
                live = False  # ``return ctx.save_for_backward(x) or y`` saves before it returns
            kind = type(small)  # exact classes: a failing isinstance of a libcst class asks its ABC
            if kind is cst.Return:
                assert isinstance(small, cst.Return)
                if live and (self.any_return or _returns_value(small)) and self.unsaved_exit is None:
                    self.unsaved_exit = small
                return False
            if kind is cst.Raise or kind is cst.Break or kind is cst.Continue:
                return False  # a loop's state after it is worked out by ``loop``
        return live

    def loop(self, statement: "cst.For | cst.While", live: bool) -> bool:
        if isinstance(statement, cst.While) and _always_true(statement.test):
            raise _Unknown  # left only by ``break`` or a return: the state after it is not ``live``
        header: cst.CSTNode = statement.iter if isinstance(statement, cst.For) else statement.test
        if self._saves_in(header):
            live = False
        saves_in_body = self._saves_in(statement.body)
        self.block(statement.body, live)  # returns inside the body, on a path not saved yet
        # The body may run no time; a save inside it counts as made (a false "unsaved" would be an alarm).
        after = False if saves_in_body else live
        if statement.orelse is not None:
            after = self.block(statement.orelse.body, after)
        return after

    def try_statement(self, statement: cst.Try, live: bool) -> bool:
        final = statement.finalbody
        if final is not None and (self._saves_in(final) or _has_return(self.method, final.body)):
            raise _Unknown
        after_body = self.block(statement.body, live)
        if statement.orelse is not None:
            after_body = self.block(statement.orelse.body, after_body)
        # A handler may start anywhere in the body; once the body holds a save, take it as made.
        entry = False if self._saves_in(statement.body) else live
        after = after_body
        for handler in statement.handlers:
            after = self.block(handler.body, entry) or after
        if final is not None:
            after = self.block(final.body, after)
        return after


def _always_true(test: cst.BaseExpression) -> bool:
    return (isinstance(test, cst.Name) and test.value == "True") or (
        isinstance(test, cst.Integer) and test.value != "0"
    )


def _gradient_locals(method: Method) -> FrozenSet[str]:
    """Locals some binding of which holds a gradient test, directly or through another such local
    (``store = any(ctx.needs_input_grad)``; ``keep = store and training``). Ask ``method.derived`` for it."""
    mentioned = {
        name: [method.names_in(binding.value) for binding in bindings if binding.value is not None]
        for name, bindings in method.facts.bindings.items()
    }
    found: Set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, names in mentioned.items():
            if name not in found and any(
                not each.isdisjoint(_GRADIENT_TESTS) or not each.isdisjoint(found) for each in names
            ):
                found.add(name)
                changed = True
    return frozenset(found)


# Tensor attributes and methods a test may ask of an input without being a choice of the caller: the
# branch follows the data (``x.dim() == 1``), which a caller cannot pair with no_grad.
_DATA_QUESTIONS = frozenset({"dim", "ndim", "ndimension", "shape", "size", "numel", "dtype", "device", "is_cuda",
                             "is_contiguous", "stride", "layout", "is_sparse"})
_MAX_TEST_DEPTH = 40


def _caller_values(method: Method) -> FrozenSet[str]:
    """The names of values the caller passes as they are: forward's parameters after ctx, or in
    setup_context the names unpacked from (or indexed out of) its ``inputs``. Ask ``method.derived``."""
    signature = method.signature
    if signature is None:
        return frozenset()
    params = [param.name for param in signature.positional[1:] + signature.keyword_only]
    if method.name != "setup_context":
        return frozenset(params)
    inputs = params[0] if params else None
    found = set()
    for name, bindings in method.facts.bindings.items():
        for binding in bindings:
            value = binding.value
            if isinstance(value, cst.Subscript):
                value = value.value
            if isinstance(value, cst.Name) and value.value == inputs:
                found.add(name)
    return frozenset(found)


def _reads_flag(test: cst.CSTNode, flags: FrozenSet[str], depth: int) -> bool:
    """Whether ``test`` reads one of ``flags`` as a value (``inference``, ``not training``, ``mode ==
    "eval"``, ``cfg.inference``), not only through a question about its data (``x.dim() == 1``)."""
    if depth > _MAX_TEST_DEPTH:
        return True  # too deep to tell: taken as a flag, which keeps the finding away
    if isinstance(test, cst.Name):
        return test.value in flags
    if isinstance(test, cst.Attribute):
        if test.attr.value in _DATA_QUESTIONS:
            return False
        return _reads_flag(test.value, flags, depth + 1)
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and test.func.attr.value in _DATA_QUESTIONS:
        return any(_reads_flag(arg.value, flags, depth + 1) for arg in test.args)
    if isinstance(test, (cst.Lambda, cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
        return True  # a scope of its own: not followed, taken as a flag
    return any(_reads_flag(child, flags, depth + 1) for child in children(test))


def _has_return(method: Method, node: cst.CSTNode) -> bool:
    return any(type(found) is cst.Return for found in method.below(node))


def failing_saved_reads(reader: Method) -> Optional[List[cst.BaseExpression]]:
    """The reads of ``ctx.saved_tensors`` in ``reader`` that fail on an empty tuple: an unpacking into
    names (``x, = ctx.saved_tensors``) or a constant index (``ctx.saved_tensors[0]``).

    None when the method also reads it another way (``len(...)``, a truth test, a name bound to it,
    a loop): such a method may look before it takes, so no read is certain to fail. Reads inside a ``try``
    are left out: a handler may expect the failure.
    """
    facts, ctx_name = reader.facts, reader.ctx_name
    reads = facts.ctx_reads.get("saved_tensors", [])
    if ctx_name is None or not reads:
        return []
    unpacked = {
        id(binding.value)
        for bindings in facts.bindings.values()
        for binding in bindings
        if binding.unpack_length is not None and binding.unpack_length > 0
    }
    indexed = {
        id(subscript.node.value): subscript.node
        for subscript in facts.ctx_subscripts
        if subscript.attribute == "saved_tensors" and subscript.index is not None
    }
    guarded = {
        id(node)
        for found in reader.nodes_of(cst.Try)
        if isinstance(found, cst.Try)
        for node in reader.below(found.body)
    }
    failing: List[cst.BaseExpression] = []
    for read in reads:
        if id(read) in guarded:
            continue
        if id(read) in unpacked:
            failing.append(read)
        elif id(read) in indexed:
            failing.append(indexed[id(read)])
        else:
            return None
    return failing


def unconditional(reader: Method, nodes: Iterable[cst.CSTNode]) -> List[cst.CSTNode]:
    """Those of ``nodes`` every call of ``reader`` reaches, unless it raises first: in a statement of the
    body's top level (or of a ``with`` there) with no ``return`` before it."""
    wanted = {id(node) for node in nodes}
    found: List[cst.CSTNode] = []
    if reader.node is not None:
        _collect_unconditional(reader, reader.node.body, wanted, found)
    return found


def _collect_unconditional(
    reader: Method, suite: cst.BaseSuite, wanted: Set[int], found: List[cst.CSTNode]
) -> bool:
    """Adds the wanted nodes of ``suite`` reached on every path; False once a return may come first."""
    if isinstance(suite, cst.SimpleStatementSuite):
        statements: Sequence[cst.CSTNode] = [cst.SimpleStatementLine(body=suite.body)]
    elif isinstance(suite, cst.IndentedBlock):
        statements = suite.body
    else:
        return False
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                found.extend(node for node in reader.below(small) if id(node) in wanted)
                if isinstance(small, (cst.Return, cst.Raise)):
                    return False
        elif isinstance(statement, cst.With):
            found.extend(node for item in statement.items for node in reader.below(item) if id(node) in wanted)
            if not _collect_unconditional(reader, statement.body, wanted, found):
                return False
        elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        elif _has_return(reader, statement):
            return False
    return True


# What a tuple has besides its dunders: any other attribute of it raises AttributeError.
_TUPLE_ATTRIBUTES = frozenset({"count", "index"})
# Operators no tuple supports, whatever a tensor or a number on the other side.
_NO_TUPLE_OPERATORS = (cst.Subtract, cst.Divide, cst.FloorDivide, cst.MatrixMultiply, cst.Power)


@dataclass
class TupleAsTensor:
    """A name bound to the whole ``ctx.saved_tensors`` tuple (``binding``), then ``use``d as a tensor."""

    name: str
    binding: cst.BaseExpression
    use: cst.CSTNode


def saved_tuple_used_as_tensor(reader: Method, inference: TensorInference) -> List[TupleAsTensor]:
    """Names ``reader`` binds once, to ``ctx.saved_tensors`` itself, that it then uses in a way no tuple
    allows: a tensor attribute (``x.shape``, ``x.t()``), unary minus, or arithmetic with a tensor (``x *
    grad``, ``x + grad``) or a number (``x - 1``, ``x * 0.5``)."""
    facts, ctx_name = reader.facts, reader.ctx_name
    if ctx_name is None or "saved_tensors" not in facts.ctx_reads:
        return []
    signature = reader.signature
    params: Set[str] = set()
    if signature is not None:
        everyone = signature.positional + signature.keyword_only + [signature.vararg, signature.kwarg]
        params = {param.name for param in everyone if param is not None}
    tuples: Dict[str, cst.BaseExpression] = {}
    for name, bindings in facts.bindings.items():
        value = bindings[0].value
        if (
            len(bindings) == 1
            and name not in params
            and bindings[0].index is None
            and isinstance(value, cst.Attribute)
            and value.attr.value == "saved_tensors"
            and isinstance(value.value, cst.Name)
            and value.value.value == ctx_name
        ):
            tuples[name] = value
    if not tuples:
        return []
    found: List[TupleAsTensor] = []
    reported: Set[str] = set()
    for node in reader.nodes_of(cst.Attribute, cst.UnaryOperation, cst.BinaryOperation):
        used = _tensor_use(node, tuples, inference)
        if used is not None and used not in reported:
            reported.add(used)
            found.append(TupleAsTensor(used, tuples[used], node))
    return found


def _tuple_name(node: cst.BaseExpression, tuples: Dict[str, cst.BaseExpression]) -> Optional[str]:
    return node.value if isinstance(node, cst.Name) and node.value in tuples else None


def _tensor_use(
    node: cst.CSTNode, tuples: Dict[str, cst.BaseExpression], inference: TensorInference
) -> Optional[str]:
    if isinstance(node, cst.Attribute):
        name = _tuple_name(node.value, tuples)
        attribute = node.attr.value
        if name is not None and attribute not in _TUPLE_ATTRIBUTES and not attribute.startswith("__"):
            return name
    elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return _tuple_name(node.expression, tuples)
    elif isinstance(node, cst.BinaryOperation):
        for side, other in ((node.left, node.right), (node.right, node.left)):
            name = _tuple_name(side, tuples)
            if name is not None and _operand_fails(node.operator, other, tuples, inference):
                return name
    return None


def _operand_fails(
    operator: cst.BaseBinaryOp,
    other: cst.BaseExpression,
    tuples: Dict[str, cst.BaseExpression],
    inference: TensorInference,
) -> bool:
    """Whether a tuple combined with ``other`` by ``operator`` raises: a tuple repeats by an integer and
    concatenates with a tuple, and supports nothing else."""
    if _tuple_name(other, tuples) is not None:
        return False
    tensor = inference.kind(other) is Kind.TENSOR
    if isinstance(operator, _NO_TUPLE_OPERATORS):
        return tensor or isinstance(other, (cst.Integer, cst.Float))
    if isinstance(operator, cst.Multiply):
        return tensor or isinstance(other, cst.Float)  # a one-element integer tensor would repeat it: rare
    if isinstance(operator, cst.Add):
        return tensor
    return False
