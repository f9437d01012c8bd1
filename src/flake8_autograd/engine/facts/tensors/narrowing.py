"""Narrowing by tests: what an ``if`` test (or conditional expression) proves of the kind of plain names.

``x is None``, ``isinstance(x, torch.Tensor)``, ``torch.is_tensor(x)`` and their ``not``/``and``/``or``
combinations decide the kind of ``x`` in the branch where the test holds, or where it fails, unless the
branch rebinds ``x``.
"""

from __future__ import annotations

from typing import Callable, Dict

import libcst as cst

from ...models.class_model import Method
from ...syntax.names import ImportTable
from ...syntax.walk import walk_scope
from .reaching_bindings import binds_in
from ..tensor_kinds import Kind, annotation_kind, resolved_dotted

Narrowing = Dict[str, Kind]


# How deep a test's ``not``/``and``/``or`` nesting is read: libcst nests one level per operand, and a test
# deeper than this proves nothing here rather than exhausting the interpreter's stack.
MAX_TEST_DEPTH = 100


def proven_by_test(
    test: cst.BaseExpression, imports: ImportTable, bound_here: Callable[[str], bool], depth: int = 0
) -> "tuple[Narrowing, Narrowing]":
    """What a test proves of plain names: (where it holds, where it fails). ``bound_here`` tells whether
    the body binds a name itself (then ``isinstance`` is not the builtin)."""
    if depth > MAX_TEST_DEPTH:
        return {}, {}
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        negated_holds, negated_fails = proven_by_test(test.expression, imports, bound_here, depth + 1)
        return negated_fails, negated_holds
    if isinstance(test, cst.BooleanOperation):
        left = proven_by_test(test.left, imports, bound_here, depth + 1)
        right = proven_by_test(test.right, imports, bound_here, depth + 1)
        if isinstance(test.operator, cst.And):
            return {**left[0], **right[0]}, {}
        return {}, {**left[1], **right[1]}
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name):
        target = test.comparisons[0]
        if isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
            if isinstance(target.operator, cst.Is):
                return {test.left.value: Kind.NONE}, {}
            if isinstance(target.operator, cst.IsNot):
                return {}, {test.left.value: Kind.NONE}
        return {}, {}
    if not isinstance(test, cst.Call) or any(arg.star or arg.keyword is not None for arg in test.args):
        return {}, {}
    args = [arg.value for arg in test.args]
    if not args or not isinstance(args[0], cst.Name):
        return {}, {}
    name = args[0].value
    if resolved_dotted(test.func, imports) == "torch.is_tensor" and len(args) == 1:
        return {name: Kind.TENSOR}, {name: Kind.NOT_TENSOR}
    is_builtin = isinstance(test.func, cst.Name) and test.func.value == "isinstance"
    if not is_builtin or len(args) != 2 or imports.resolve_name("isinstance") is not None:
        return {}, {}
    if bound_here("isinstance"):
        return {}, {}
    types = [element.value for element in args[1].elements] if isinstance(args[1], cst.Tuple) else [args[1]]
    exact = ["torch.Tensor" == (resolved_dotted(kind, imports) or "") for kind in types]
    declared = [annotation_kind(kind, imports) for kind in types]
    holds: Narrowing = {}
    fails: Narrowing = {}
    if all(kind is Kind.NOT_TENSOR for kind in declared):
        holds[name] = Kind.NOT_TENSOR
    elif all(kind is Kind.TENSOR for kind in declared):
        holds[name] = Kind.TENSOR
    if any(exact):
        fails[name] = Kind.NOT_TENSOR  # not a tensor, of any subclass
    return holds, fails


def _narrow(branch: cst.CSTNode, narrowing: Narrowing, into: Dict[int, Kind]) -> None:
    """Record the narrowed kind of each use of a narrowed name in ``branch``, unless the branch rebinds it."""
    for name, kind in narrowing.items():
        if binds_in(branch, name):
            continue
        for node in [branch, *walk_scope(branch)]:
            if isinstance(node, cst.Name) and node.value == name:
                into[id(node)] = kind  # walked outside in: an inner test overrides an outer one


def narrowings(method: Method, imports: ImportTable, bound_here: Callable[[str], bool]) -> Dict[int, Kind]:
    """The kind of each name use in ``method`` that an enclosing ``if`` test (or conditional expression)
    decides."""
    found: Dict[int, Kind] = {}
    if method.node is None:
        return found
    for node in method.nodes_of(cst.If, cst.IfExp):
        if isinstance(node, (cst.If, cst.IfExp)):
            holds, fails = proven_by_test(node.test, imports, bound_here)
            if holds:
                _narrow(node.body, holds, found)
            if fails and node.orelse is not None:
                _narrow(node.orelse, fails, found)
    return found
