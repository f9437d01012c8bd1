"""A fast pre-order walk over libcst trees, and the small readers of nodes the engine shares.

libcst's visitor rebuilds every node it passes, which costs about half a parse. Linting only reads
the tree, so this walk reads each node's dataclass fields directly, skipping whitespace and
punctuation fields, and caches the field list per node type.
"""

from __future__ import annotations

import dataclasses
import operator
import typing
from typing import Callable, Dict, FrozenSet, Hashable, Iterator, List, Optional, Tuple, Type

import libcst as cst

_PUNCTUATION_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "comma",
        "semicolon",
        "leading_lines",
        "lines_after_decorators",
        "header",
        "footer",
        "trailing_whitespace",
        "newline",
        "equal",
        "star",
        "colon",
        "dot",
        "lbracket",
        "rbracket",
        "lbrace",
        "rbrace",
        "asynchronous",
        "operator",
        "whitespace_before_colon",
    }
)

_fields_by_type: Dict[Type[cst.CSTNode], Tuple[str, ...]] = {}

# What is certain of a condition: True or False when it can only be that where the code runs, None when
# unknown. A walk given one leaves out the branch of an ``if`` that is certainly not taken.
Settle = Callable[[cst.BaseExpression], Optional[bool]]

# Nodes that open a new scope: statements inside them belong to another function.
SCOPE_NODES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def _node_classes(root: type) -> FrozenSet[type]:
    found = {root}
    subclass: type
    for subclass in root.__subclasses__():
        found |= _node_classes(subclass)
    return frozenset(found)


# Every libcst node class: ``type(value) in NODE_TYPES`` is a set lookup where ``isinstance(value,
# cst.CSTNode)`` is a call into the abstract base class machinery, and the walks below ask it of
# every field of every node.
NODE_TYPES = _node_classes(cst.CSTNode)
SCOPE_TYPES = frozenset(SCOPE_NODES)  # the same, for ``type(node) in SCOPE_TYPES``
_ENDING_TYPES = frozenset({cst.Return, cst.Raise})


def _child_fields(node_type: Type[cst.CSTNode]) -> Tuple[str, ...]:
    fields = _fields_by_type.get(node_type)
    if fields is None:
        fields = tuple(
            field.name
            for field in dataclasses.fields(node_type)
            if field.name not in _PUNCTUATION_FIELDS and "whitespace" not in field.name
        )
        _fields_by_type[node_type] = fields
    return fields


def _holds_no_node(hint: object) -> bool:
    """Whether a field declared ``hint`` can never hold a node: text, a flag, a quote character."""
    return hint in (str, bool, int, Optional[str]) or typing.get_origin(hint) is typing.Literal


Reader = Callable[[cst.CSTNode], List[cst.CSTNode]]


def _children_reader(node_type: Type[cst.CSTNode]) -> Optional[Reader]:
    """A function listing the children of a ``node_type`` node: its child fields read in one C call,
    fields that only ever hold text or flags (``Name.value``) left out; None for a node type that has no
    other field (``Name``, ``Integer``: a leaf). The walks below ask it for every node they pass, so it is
    built once per node type."""
    try:
        hints = typing.get_type_hints(node_type)
    except Exception:  # noqa: BLE001 - an annotation that cannot be resolved: read every child field
        hints = {}
    fields = tuple(name for name in _child_fields(node_type) if not _holds_no_node(hints.get(name)))
    node_types = NODE_TYPES
    if not fields:
        return None
    if len(fields) == 1:
        read_one = operator.attrgetter(fields[0])

        def one_field(node: cst.CSTNode) -> List[cst.CSTNode]:
            value = read_one(node)
            if type(value) in node_types:
                return [value]
            if type(value) is tuple or type(value) is list:
                return [item for item in value if type(item) in node_types]
            return []

        return one_field
    read_all = operator.attrgetter(*fields)

    def several_fields(node: cst.CSTNode) -> List[cst.CSTNode]:
        found: List[cst.CSTNode] = []
        for value in read_all(node):
            if type(value) in node_types:
                found.append(value)
            elif type(value) is tuple or type(value) is list:
                found.extend([item for item in value if type(item) in node_types])
        return found

    return several_fields


_readers: Dict[type, Optional[Reader]] = {}


def _reader(node_type: type) -> Optional[Reader]:
    """The children reader of ``node_type`` (None: a leaf), built on first use."""
    if node_type not in _readers:
        _readers[node_type] = _children_reader(node_type)
    return _readers[node_type]


def children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The direct child nodes of ``node`` that can hold code (not whitespace or punctuation), in field
    order, as a new list the caller may change."""
    reader = _readers[type(node)] if type(node) in _readers else _reader(type(node))
    return reader(node) if reader is not None else []


def walk_scope(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below ``root`` in pre-order, without entering nested functions, classes or lambdas.

    The nested scope node itself is yielded (its name and decorators are evaluated in this scope),
    but not its body.
    """
    stack = children(root)
    if type(root) is cst.IndentedBlock:
        stack = _reachable(stack)
    stack.reverse()
    while stack:
        node = stack.pop()
        yield node
        if type(node) in SCOPE_TYPES:
            continue
        kids = children(node)
        if type(node) is cst.IndentedBlock:
            kids = _reachable(kids)
        kids.reverse()
        stack.extend(kids)


def walk_scope_spans(
    root: cst.CSTNode, settle: Optional[Settle] = None
) -> Tuple[Tuple[cst.CSTNode, ...], List[int]]:
    """The nodes ``walk_scope(root)`` yields, in the same order, with where each one's subtree ends: the
    nodes below ``nodes[i]`` are ``nodes[i + 1 : ends[i]]``. One walk answers "what is below this node"
    for every node of a body, where a walk per question costs the size of the subtree each time.

    With ``settle``, the branch of an ``if`` (or ``elif``) whose condition is certainly false, or the
    ``else`` of one certainly true, is left out: that code never runs, so no fact read from the walk
    (a return, a store on ctx, a computation) should count it. The condition itself stays."""
    nodes: List[cst.CSTNode] = []
    ends: List[int] = []
    stack: List["cst.CSTNode | int"] = list(children(root))
    if type(root) is cst.IndentedBlock:
        stack = list(_reachable(stack))  # type: ignore[arg-type]
    stack.reverse()
    readers = _readers
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is int:
            ends[item] = len(nodes)  # type: ignore[index] # every node below ``nodes[item]`` has been taken
            continue
        node: cst.CSTNode = item  # type: ignore[assignment]
        index = len(nodes)
        nodes.append(node)
        ends.append(index + 1)
        reader = readers[kind] if kind in readers else _reader(kind)
        if reader is None or kind in SCOPE_TYPES:
            continue
        kids = reader(node)
        if not kids:
            continue
        if kind is cst.IndentedBlock:
            kids = _reachable(kids)
        elif settle is not None and kind is cst.If:
            kids = _taken(node, kids, settle)  # type: ignore[arg-type]
        stack.append(index)  # popped once the children and everything below them are done
        kids.reverse()
        stack.extend(kids)
    return tuple(nodes), ends


def _taken(node: cst.If, kids: List[cst.CSTNode], settle: Settle) -> List[cst.CSTNode]:
    """The children of ``node`` that may run: its condition, and the arms it does not rule out."""
    verdict = settle(node.test)
    if verdict is None:
        return kids
    dropped = node.body if verdict is False else node.orelse
    return [kid for kid in kids if kid is not dropped]


def _reachable(statements: List[cst.CSTNode]) -> List[cst.CSTNode]:
    """The statements of a block up to its first ``return``, ``raise`` or ``assert False`` (``assert 0``,
    ``assert None``): what follows never runs (a leftover ``return`` after the real one must not count
    as one)."""
    for index, statement in enumerate(statements):
        if type(statement) is not cst.SimpleStatementLine:
            continue  # exact types: an ``isinstance`` of a libcst class that fails calls into its ABC
        if any(
            type(small) in _ENDING_TYPES or (type(small) is cst.Assert and _falsy(small.test))
            for small in statement.body
        ):
            return statements[: index + 1]
    return statements


def _falsy(test: cst.BaseExpression) -> bool:
    """``False``, ``None`` or ``0`` as written: an ``assert`` of it always raises (unless Python runs with
    ``-O``, which drops asserts, and then what follows runs: a linter reads the code as written)."""
    if isinstance(test, cst.Name):
        return test.value in ("False", "None")
    return isinstance(test, cst.Integer) and test.value in ("0", "0x0", "0o0", "0b0")


def walk(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below ``root`` in pre-order, nested scopes included."""
    stack = children(root)
    readers = _readers
    while stack:
        node = stack.pop()
        yield node
        reader = readers[type(node)] if type(node) in readers else _reader(type(node))
        if reader is not None:
            stack.extend(reader(node))


def fingerprint(root: cst.CSTNode) -> Tuple[Hashable, ...]:
    """A key equal for two expressions that are the same code up to whitespace, parentheses and comments.

    Built without recursion, unlike ``Module.code_for_node``, so any depth of nesting is fine.
    """
    key: List[Hashable] = []
    stack: List[object] = [root]
    while stack:
        item = stack.pop()
        if not isinstance(item, cst.CSTNode):
            key.append(item if isinstance(item, Hashable) else repr(item))
            continue
        key.append(type(item))  # a type, never equal to a string value
        operator = getattr(item, "operator", None)
        if isinstance(operator, cst.CSTNode):  # operators are left out of the child fields
            key.append(type(operator))
        for name in reversed(_child_fields(type(item))):
            value = getattr(item, name)
            if isinstance(value, (tuple, list)):
                stack.extend(reversed(value))
                stack.append(len(value))  # popped before the items: the key stays unambiguous
            else:
                stack.append(value)
    return tuple(key)


def is_larger_than(root: cst.CSTNode, limit: int) -> bool:
    """Whether ``root`` has more than ``limit`` nodes below it (stops counting there)."""
    count = 0
    for _node in walk(root):
        count += 1
        if count > limit:
            return True
    return False


# Code of 40 characters holds fewer nodes than this (a node takes at least a character, bar a few
# wrappers such as an argument around its value).
_MAX_QUOTED_NODES = 100
_EMPTY_MODULE = cst.Module(body=[])


def short_code(node: cst.CSTNode, max_length: int = 40) -> Optional[str]:
    """The code of ``node`` when it fits on one line of ``max_length`` characters, else None.

    The node's size is checked first: libcst generates code recursively, some frames per level of
    nesting, so a deep expression (a long implicit string concatenation, hundreds of ``not``) would
    exhaust Python's stack, and it is far too long to quote anyway.
    """
    if is_larger_than(node, _MAX_QUOTED_NODES):
        return None
    code = _EMPTY_MODULE.code_for_node(node)
    return code if len(code) <= max_length and "\n" not in code else None


def cst_dotted(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a chain of libcst names and attributes, else None."""
    parts: List[str] = []
    while type(node) is cst.Attribute:  # exact classes: a failing isinstance of a libcst class asks its ABC
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))
