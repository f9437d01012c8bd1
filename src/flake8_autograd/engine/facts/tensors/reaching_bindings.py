"""What may bind a name, and which binding a use of a name reads.

The names an assignment target, an import or a ``del`` binds; whether anything in a subtree (in its
scope) may bind a name; and, for a use on straight-line code, the plain rebinding (``name = value``)
every path to it passed last (:class:`ReachingBindings`).
"""

from __future__ import annotations

import bisect
import itertools
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ...models.class_model import Method
from ...syntax.walk import children, cst_dotted, walk_scope

# Comprehensions and nested scopes: the names inside are their own.
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def target_names(target: cst.BaseExpression) -> List["cst.CSTNode | str"]:
    """The names an assignment target binds (a subscript or attribute target binds none)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def bound_names(node: cst.CSTNode) -> List["cst.CSTNode | str"]:
    """The names a ``del``, an import, ``global``/``nonlocal`` or a match capture binds."""
    if isinstance(node, cst.Del):
        return target_names(node.target)
    if isinstance(node, (cst.Import, cst.ImportFrom)) and isinstance(node.names, (list, tuple)):
        names: List["cst.CSTNode | str"] = []
        for alias in node.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            if isinstance(bound, cst.Name):
                names.append(bound.value)
            elif isinstance(bound, cst.Attribute):
                dotted = cst_dotted(bound)
                names.append((dotted or "").split(".")[0])
        return names
    if isinstance(node, (cst.Global, cst.Nonlocal)):
        return [item.name.value for item in node.names]
    if isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
        return [node.name.value]
    return []


def binds_in(root: cst.CSTNode, name: str) -> bool:
    """Whether anything below ``root`` (in its scope) may bind ``name``: an assignment, ``+=``, a loop or
    comprehension variable, ``with ... as``, ``del``, an import, a definition."""
    return next(_binding_nodes(root, name), None) is not None


def _binding_nodes(root: cst.CSTNode, name: str, include_root: bool = False) -> Iterator[cst.CSTNode]:
    """The nodes below ``root`` (in its scope; ``root`` too if asked) that may bind ``name`` (see :func:`binds_in`)."""
    for node in itertools.chain([root] if include_root else [], walk_scope(root)):
        if type(node) in _BINDING_NODES and name in _names_bound_by(node):
            yield node


# The only nodes that may bind a name (see :func:`_names_bound_by`).
_BINDING_NODES = frozenset(
    {
        cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.Del, cst.WithItem,
        cst.ExceptHandler, cst.FunctionDef, cst.ClassDef, cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal,
        cst.MatchAs, cst.MatchStar,
    }
)


def _names_bound_by(node: cst.CSTNode) -> List["cst.CSTNode | str"]:
    """The names ``node`` itself may bind (not the nodes below it)."""
    targets: List[cst.CSTNode] = []
    if isinstance(node, cst.Assign):
        targets = [target.target for target in node.targets]
    elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.Del)):
        targets = [node.target]
    elif isinstance(node, cst.WithItem) and node.asname is not None:
        targets = [node.asname.name]
    elif isinstance(node, cst.ExceptHandler) and node.name is not None:
        targets = [node.name.name]
    elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        targets = [node.name]
    else:
        return bound_names(node)
    return [bound for target in targets if isinstance(target, cst.BaseExpression) for bound in target_names(target)]


# Nodes whose children run in sequence, one after the other: statements of a block, small statements of a line.
_SEQUENCES = (cst.IndentedBlock, cst.SimpleStatementLine, cst.SimpleStatementSuite)
_LOOPS = (cst.For, cst.While)
# The same classes, for ``type(node) in``; none of them has a subclass.
_OWN_SCOPE_TYPES = frozenset(COMPREHENSIONS + NESTED_SCOPES)
_SEQUENCE_TYPES = frozenset(_SEQUENCES)
_LOOP_TYPES = frozenset(_LOOPS)
_VALUE_THEN_TARGET_TYPES = frozenset({cst.Assign, cst.AnnAssign, cst.NamedExpr})
_TARGET_HOLDER_TYPES = frozenset({cst.Assign, cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.AssignTarget})


# Nodes inside an expression, which bind no name but by a walrus.
_EXPRESSION_PARTS = (
    cst.BaseExpression, cst.Arg, cst.BaseElement, cst.BaseDictElement, cst.SubscriptElement, cst.BaseSlice,
    cst.ComparisonTarget, cst.FormattedStringExpression,
)


class ReachingBindings:
    """Which plain rebinding (``name = value``) a use of a name reads, found on straight-line code only.

    From the use, the statements before it are read backwards, climbing out of ``if``/``with``/``try``
    blocks and loops: the first one that binds the name decides, if it is a plain rebinding. Any other
    binding on the way (in a branch, by a loop back edge, ``as name``, a walrus) leaves the answer open,
    and so does a use in a nested scope or a comprehension.
    """

    def __init__(self, method: Method) -> None:
        assert method.node is not None
        function, nodes = method.node, method.body_nodes()
        self._method = method
        self._function = function
        self._parents: Dict[int, cst.CSTNode] = {}
        self._walrus = False  # whether an expression of the body binds a name (``(x := ...)``)
        for node in [function.body, *nodes]:
            if type(node) is cst.NamedExpr:
                self._walrus = True
            if type(node) not in NESTED_SCOPES:
                for child in children(node):
                    self._parents[id(child)] = node
        self._parents[id(function.body)] = function
        self._found: Dict[int, Optional[cst.BaseExpression]] = {}
        self._binding: Dict[Tuple[int, str], bool] = {}  # whether a statement binds a name, asked once
        # name -> the places in the method's shared walk of the nodes that may bind it, in order
        self._binders: Optional[Dict["cst.CSTNode | str", List[int]]] = None

    def _binds(self, node: cst.CSTNode, name: str) -> bool:
        key = (id(node), name)
        if key not in self._binding:
            span = self._method.span(node)
            self._binding[key] = (
                _binds_anywhere(node, name) if span is None else self._binds_between(name, span[0], span[1])
            )
        return self._binding[key]

    def _binds_between(self, name: str, start: int, end: int, skipped: Tuple[int, int] = (0, 0)) -> bool:
        """Whether a node at a place from ``start`` to ``end`` of the shared walk, outside the ``skipped``
        places, may bind ``name``: a look at a sorted list, where a walk of each statement asked about
        costs its size (a use's search asks of every statement before it)."""
        if self._binders is None:
            self._binders = {}
            for index, node in enumerate(self._method.body_nodes()):
                if type(node) in _BINDING_NODES:
                    for bound in set(_names_bound_by(node)):
                        self._binders.setdefault(bound, []).append(index)
        places = self._binders.get(name, [])
        for place in places[bisect.bisect_left(places, start):]:
            if place >= end:
                return False
            if not skipped[0] <= place < skipped[1]:
                return True
        return False

    def value(self, use: cst.Name) -> Optional[cst.BaseExpression]:
        if id(use) not in self._found:
            self._found[id(use)] = self._search(use)
        return self._found[id(use)]

    def _search(self, use: cst.Name) -> Optional[cst.BaseExpression]:
        name = use.value
        current: cst.CSTNode = use
        while True:
            parent = self._parents.get(id(current))
            kind = type(parent)  # exact classes first: a failing isinstance of a libcst class asks its ABC
            if parent is None or parent is self._function or kind in _OWN_SCOPE_TYPES:
                return None
            if kind in _SEQUENCE_TYPES:
                assert isinstance(parent, _SEQUENCES)
                items: Sequence[cst.CSTNode] = parent.body
                position = next((index for index, item in enumerate(items) if item is current), None)
                if position is None:
                    return None
                for earlier in reversed(items[:position]):
                    rebound = _plain_rebinding(earlier, name)
                    if rebound is not None:
                        return rebound
                    if self._binds(earlier, name):
                        return None
            elif kind in _VALUE_THEN_TARGET_TYPES and current is parent.value:  # type: ignore[attr-defined]
                pass  # the value is read before the targets are bound
            elif kind in _TARGET_HOLDER_TYPES:
                return None  # the use is (in) a target
            elif kind in _LOOP_TYPES:
                assert isinstance(parent, _LOOPS)
                if self._binds(parent, name):
                    return None  # a binding later in the loop reaches this use on the next iteration
            elif isinstance(parent, _EXPRESSION_PARTS) and not self._walrus:
                pass  # an expression binds nothing without a walrus: climb on
            else:
                if self._binds_beside(parent, current, name):
                    return None  # another part of the statement (a test, ``as name``, a handler) binds it
            current = parent

    def _binds_beside(self, parent: cst.CSTNode, part: cst.CSTNode, name: str) -> bool:
        """Whether ``parent`` or a node below it that is not in ``part`` may bind ``name``."""
        outer, inner = self._method.span(parent), self._method.span(part)
        if outer is None or inner is None:
            inside = {id(part), *(id(node) for node in walk_scope(part))}
            return any(id(node) not in inside for node in _binding_nodes(parent, name, include_root=True))
        return self._binds_between(name, outer[0], outer[1], skipped=inner)


def _binds_anywhere(node: cst.CSTNode, name: str) -> bool:
    return next(_binding_nodes(node, name, include_root=True), None) is not None


def _plain_rebinding(node: cst.CSTNode, name: str) -> Optional[cst.BaseExpression]:
    """The value of ``name = value`` (a line of its own or a small statement), else None."""
    if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1:
        node = node.body[0]
    if isinstance(node, cst.Assign) and len(node.targets) == 1:
        target = node.targets[0].target
        if isinstance(target, cst.Name) and target.value == name and not binds_in(node.value, name):
            return node.value
    if isinstance(node, cst.AnnAssign) and node.value is not None:
        if isinstance(node.target, cst.Name) and node.target.value == name and not binds_in(node.value, name):
            return node.value
    return None


def mentions(statement: cst.CSTNode, name: str) -> bool:
    """Whether ``name`` is read or bound in ``statement`` (attribute names and keywords are not names)."""
    skipped: Set[int] = set()
    for node in walk_scope(statement):
        if isinstance(node, cst.Attribute):
            skipped.add(id(node.attr))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            skipped.add(id(node.keyword))
        elif isinstance(node, cst.Name) and node.value == name and id(node) not in skipped:
            return True
    return False


def rebinds_plainly(statement: cst.CSTNode, name: str) -> bool:
    """``name = value`` alone on its line."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if isinstance(small, cst.Assign):
        return len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) and (
            small.targets[0].target.value == name
        )
    return (
        isinstance(small, cst.AnnAssign) and small.value is not None
        and isinstance(small.target, cst.Name) and small.target.value == name
    )
