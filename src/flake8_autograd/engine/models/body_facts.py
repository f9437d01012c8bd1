"""What a method body does: its bindings, returns, calls, in-place writes and uses of ctx.

One walk over the body (nested functions, classes and lambdas excluded) gathers these facts, each node read
by the reader for its type; rules and analyses read them and never walk again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Set

import libcst as cst

from ..syntax.walk import walk_scope

# Attributes and methods that exist only on tensors: a name used with one of them is a tensor.
# Not ``size``/``shape``: process groups have ``.size()``, numpy arrays and quantization states ``.shape``.
TENSOR_EVIDENCE_ATTRIBUTES = frozenset(
    {
        "contiguous",
        "view",
        "view_as",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "new_tensor",
        "data_ptr",
        "is_contiguous",
        "stride",
        "storage_offset",
        "element_size",
        "type_as",
        "expand_as",
        "reshape_as",
        "grad_fn",
        "requires_grad_",
    }
)


@dataclass
class Binding:
    """One way a local name gets a value: ``name = value`` or the ``index``-th of an unpacking.

    ``value`` is None for bindings the engine does not follow (loops, ``with``, imports, ...).
    """

    value: Optional[cst.BaseExpression]
    index: Optional[int] = None
    unpack_length: Optional[int] = None


@dataclass
class CtxStore:
    """``ctx.attr = value`` (or ``setattr(ctx, "attr", value)``) in a method body.

    A target of an unpacking whose value is not a display of the same length (``out, ctx.lse = kernel(x)``,
    ``ctx.first, *ctx.rest = rest``, ``a, (ctx.b, ctx.c) = f()``) sets the attribute too, to a part of
    ``value``: ``unpacked`` is then True, and ``index``/``unpack_length`` say which part when it is the
    ``index``-th of a flat unpacking without a star (None when the part is not one known element). An
    unpacking of a display of the same length is split, each store getting its own element as ``value``.
    """

    attribute: str
    value: cst.BaseExpression
    node: cst.CSTNode
    unpacked: bool = False
    index: Optional[int] = None
    unpack_length: Optional[int] = None


@dataclass
class CtxSubscript:
    """``ctx.attribute[index]`` with a constant index (None when not constant)."""

    attribute: str
    index: Optional[int]
    node: cst.Subscript


@dataclass
class InPlace:
    """A local name modified in place: ``x.add_(...)``, ``x[i] = v``, ``x += v`` or ``out=x``.

    In ``BodyFacts.expression_writes`` the value written is an expression (``x.view(-1)[0] = v``,
    ``x.data += v``): ``name`` is empty and ``target`` is that expression (aliases.py follows it).
    """

    name: str
    node: cst.CSTNode
    how: str
    target: Optional[cst.BaseExpression] = None


# In-place methods that change a tensor's data (``requires_grad_`` only flips a flag).
_NOT_DATA_IN_PLACE = frozenset({"requires_grad_", "retain_grad", "share_memory_", "record_stream"})


@dataclass
class BodyFacts:
    """What one walk over a method body found (nested functions, classes and lambdas excluded)."""

    bindings: Dict[str, List[Binding]] = field(default_factory=dict)
    returns: List[cst.Return] = field(default_factory=list)
    ctx_stores: List[CtxStore] = field(default_factory=list)
    ctx_calls: Dict[str, List[cst.Call]] = field(default_factory=dict)  # ctx.<method>(...) calls
    tensor_uses: Set[str] = field(default_factory=set)  # names used as tensors
    reads_needs_input_grad: bool = False
    ctx_escapes: bool = False  # ctx handed to a call, which may do anything with it
    yields: bool = False
    ctx_reads: Dict[str, List[cst.Attribute]] = field(default_factory=dict)  # ctx.<attr> loads
    ctx_subscripts: List[CtxSubscript] = field(default_factory=list)  # ctx.<attr>[i]
    in_place: List[InPlace] = field(default_factory=list)  # name modified in place
    expression_writes: List[InPlace] = field(default_factory=list)  # ``x[0][i] = v``, ``x.data += v``
    calls: List[cst.Call] = field(default_factory=list)  # every call, for in-place writes through them
    ctx_references: int = 0  # every use of the ctx name, however it is used
    ctx_arguments: int = 0  # uses of the ctx name as a call argument
    # name -> calls that receive it as an argument: a kernel launch filling a preallocated buffer
    filled_by: Dict[str, List[cst.Call]] = field(default_factory=dict)

    def bind(self, name: str, binding: Binding) -> None:
        self.bindings.setdefault(name, []).append(binding)


def collect_facts(
    function: cst.FunctionDef, ctx_name: Optional[str], nodes: Optional[Sequence[cst.CSTNode]] = None
) -> BodyFacts:
    """The facts of ``function``'s body; ``nodes``, when given, are that body's nodes already walked."""
    facts = BodyFacts()
    readers = _FACT_READERS
    for node in nodes if nodes is not None else walk_scope(function.body):
        reader = readers.get(type(node))
        if reader is not None:
            reader(facts, node, ctx_name)
    return facts


# One reader per node type, found by the node's exact type: an ``isinstance`` chain costs a call into
# libcst's abstract base classes per test, and most nodes fall through every test. Parsed trees hold
# only the concrete node classes named here, none of which has a subclass.
def _read_assign(facts: BodyFacts, node: cst.Assign, ctx_name: Optional[str]) -> None:
    for target in node.targets:
        _bind_target(facts, target.target, node.value, ctx_name, node)


def _read_annotated_assign(facts: BodyFacts, node: cst.AnnAssign, ctx_name: Optional[str]) -> None:
    if node.value is not None:
        _bind_target(facts, node.target, node.value, ctx_name, node)


def _read_augmented_assign(facts: BodyFacts, node: cst.AugAssign, ctx_name: Optional[str]) -> None:
    if isinstance(node.target, cst.Name):
        facts.bind(node.target.value, Binding(None))
        facts.in_place.append(InPlace(node.target.value, node, "augmented assignment"))
    elif isinstance(node.target, cst.Subscript) and isinstance(node.target.value, cst.Name):
        facts.in_place.append(InPlace(node.target.value.value, node, "indexed assignment"))
    elif isinstance(node.target, cst.Subscript):
        facts.expression_writes.append(InPlace("", node, "indexed assignment", node.target.value))
    elif isinstance(node.target, cst.Attribute):
        facts.expression_writes.append(InPlace("", node, "augmented assignment", node.target))


def _read_named_expression(facts: BodyFacts, node: cst.NamedExpr, ctx_name: Optional[str]) -> None:
    if isinstance(node.target, cst.Name):
        facts.bind(node.target.value, Binding(node.value))


def _read_for(facts: BodyFacts, node: cst.For, ctx_name: Optional[str]) -> None:
    _bind_opaque(facts, node.target)


def _read_with_item(facts: BodyFacts, node: cst.WithItem, ctx_name: Optional[str]) -> None:
    if node.asname is not None:
        _bind_opaque(facts, node.asname.name)


def _read_except_handler(facts: BodyFacts, node: cst.ExceptHandler, ctx_name: Optional[str]) -> None:
    if node.name is not None:
        _bind_opaque(facts, node.name.name)


def _read_import(facts: BodyFacts, node: "cst.Import | cst.ImportFrom", ctx_name: Optional[str]) -> None:
    names = node.names
    if isinstance(names, (list, tuple)):
        for alias in names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            _bind_opaque(facts, bound)


def _read_nested_definition(facts: BodyFacts, node: "cst.FunctionDef | cst.ClassDef", ctx_name: Optional[str]) -> None:
    facts.bind(node.name.value, Binding(None))


def _read_global(facts: BodyFacts, node: "cst.Global | cst.Nonlocal", ctx_name: Optional[str]) -> None:
    for name_item in node.names:
        facts.bind(name_item.name.value, Binding(None))


def _read_match_capture(facts: BodyFacts, node: "cst.MatchAs | cst.MatchStar", ctx_name: Optional[str]) -> None:
    if node.name is not None:
        facts.bind(node.name.value, Binding(None))


def _read_match_mapping(facts: BodyFacts, node: cst.MatchMapping, ctx_name: Optional[str]) -> None:
    if node.rest is not None:
        facts.bind(node.rest.value, Binding(None))


def _read_del(facts: BodyFacts, node: cst.Del, ctx_name: Optional[str]) -> None:
    _bind_opaque(facts, node.target)


def _read_return(facts: BodyFacts, node: cst.Return, ctx_name: Optional[str]) -> None:
    facts.returns.append(node)


def _read_yield(facts: BodyFacts, node: cst.Yield, ctx_name: Optional[str]) -> None:
    facts.yields = True


def _read_subscript(facts: BodyFacts, node: cst.Subscript, ctx_name: Optional[str]) -> None:
    value = node.value
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == ctx_name:
        facts.ctx_subscripts.append(CtxSubscript(value.attr.value, constant_index(node), node))


def _read_attribute(facts: BodyFacts, node: cst.Attribute, ctx_name: Optional[str]) -> None:
    if isinstance(node.value, cst.Name) and node.value.value == ctx_name and ctx_name is not None:
        facts.ctx_reads.setdefault(node.attr.value, []).append(node)
    if node.attr.value == "needs_input_grad":
        facts.reads_needs_input_grad = True
    if node.attr.value in TENSOR_EVIDENCE_ATTRIBUTES and isinstance(node.value, cst.Name):
        facts.tensor_uses.add(node.value.value)


def _read_name(facts: BodyFacts, node: cst.Name, ctx_name: Optional[str]) -> None:
    if ctx_name is not None and node.value == ctx_name:
        facts.ctx_references += 1


def _bind_target(
    facts: BodyFacts,
    target: cst.BaseExpression,
    value: cst.BaseExpression,
    ctx_name: Optional[str],
    statement: cst.CSTNode,
) -> None:
    if isinstance(target, cst.Name):
        facts.bind(target.value, Binding(value))
    elif isinstance(target, cst.Subscript):
        if isinstance(target.value, cst.Name):
            facts.in_place.append(InPlace(target.value.value, statement, "indexed assignment"))
        else:
            facts.expression_writes.append(InPlace("", statement, "indexed assignment", target.value))
    elif isinstance(target, cst.Attribute):
        if ctx_name is not None and isinstance(target.value, cst.Name) and target.value.value == ctx_name:
            facts.ctx_stores.append(CtxStore(target.attr.value, value, target))
    elif isinstance(target, (cst.Tuple, cst.List)):
        elements = target.elements
        starred = any(isinstance(element, cst.StarredElement) for element in elements)
        value_elements = _display_elements(value)
        for index, element in enumerate(elements):
            if starred:
                _bind_opaque(facts, element.value)
                _store_parts(facts, element.value, value, ctx_name, None, None)
                continue
            if value_elements is not None and len(value_elements) == len(elements):
                _bind_target(facts, element.value, value_elements[index], ctx_name, statement)
            elif isinstance(element.value, cst.Name):
                facts.bind(element.value.value, Binding(value, index, len(elements)))
            else:
                _bind_opaque(facts, element.value)
                _store_parts(facts, element.value, value, ctx_name, index, len(elements))


def _store_parts(
    facts: BodyFacts,
    target: cst.BaseExpression,
    value: cst.BaseExpression,
    ctx_name: Optional[str],
    index: Optional[int],
    length: Optional[int],
) -> None:
    """The ctx attributes in ``target``, a part of an unpacking of ``value`` that is not split element by
    element: each is set to some part of ``value`` (the ``index``-th of ``length`` when ``target`` is that
    attribute itself), which the store records so that no reader takes the attribute as never set."""
    if ctx_name is None:
        return
    if isinstance(target, cst.StarredElement):
        target, index, length = target.value, None, None  # ``*ctx.rest``: a list of some of the elements
    if isinstance(target, cst.Attribute):
        if isinstance(target.value, cst.Name) and target.value.value == ctx_name:
            facts.ctx_stores.append(CtxStore(target.attr.value, value, target, True, index, length))
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:  # a nested unpacking: which element each gets is not followed
            _store_parts(facts, element.value, value, ctx_name, None, None)


def constant_index(node: cst.Subscript) -> Optional[int]:
    if len(node.slice) != 1:
        return None
    element = node.slice[0].slice
    if isinstance(element, cst.Index) and isinstance(element.value, cst.Integer):
        value = element.value.evaluated_value
        return value if isinstance(value, int) else None
    return None


def _display_elements(value: cst.BaseExpression) -> Optional[List[cst.BaseExpression]]:
    """The elements of a tuple or list display without starred parts, else None."""
    if isinstance(value, (cst.Tuple, cst.List)):
        if any(isinstance(element, cst.StarredElement) for element in value.elements):
            return None
        return [element.value for element in value.elements]
    return None


def _bind_opaque(facts: BodyFacts, target: cst.CSTNode) -> None:
    if isinstance(target, cst.Name):
        facts.bind(target.value, Binding(None))
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _bind_opaque(facts, element.value)
    elif isinstance(target, cst.StarredElement):
        _bind_opaque(facts, target.value)


def _buffers_handed_over(value: cst.BaseExpression) -> List[str]:
    """Local names a call receives other than as a bare argument: a part of one (``dkv[:, 0]``, a
    slice of one allocation), or an element of a tuple, list or dict display (``(x, out)``,
    ``{key: dq}``), itself whole or a part."""
    kind = type(value)  # exact classes, asked of every argument: no isinstance through libcst's ABCs
    if kind is not cst.Dict and kind is not cst.Tuple and kind is not cst.List and kind is not cst.Subscript:
        return []  # a bare argument (recorded by the caller) or a call, an operation: no buffer handed over
    elements: List[cst.BaseExpression] = [value]
    if isinstance(value, cst.Dict):
        elements = [element.value for element in value.elements if isinstance(element, cst.DictElement)]
    elif isinstance(value, (cst.Tuple, cst.List)):
        elements = [element.value for element in value.elements if not isinstance(element, cst.StarredElement)]
    names = []
    for element in elements:
        if isinstance(element, cst.Subscript):
            element = element.value
            if not isinstance(element, cst.Name):
                continue
        elif element is value or not isinstance(element, cst.Name):
            continue  # a bare argument is recorded by the caller
        names.append(element.value)
    return names


def _read_call(facts: BodyFacts, call: cst.Call, ctx_name: Optional[str]) -> None:
    facts.calls.append(call)
    func = call.func
    # Exact classes (asked of every call and argument): a failing isinstance of a libcst class asks its ABC.
    func_on_name = type(func) is cst.Attribute and type(func.value) is cst.Name
    if func_on_name:
        assert isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
        method = func.attr.value
        if method.endswith("_") and not method.endswith("__") and method not in _NOT_DATA_IN_PLACE:
            facts.in_place.append(InPlace(func.value.value, call, f".{method}()"))
    for arg in call.args:
        if arg.star:
            continue
        if type(arg.value) is cst.Name:
            assert isinstance(arg.value, cst.Name)
            facts.filled_by.setdefault(arg.value.value, []).append(call)
            if arg.keyword is not None and arg.keyword.value == "out":
                facts.in_place.append(InPlace(arg.value.value, call, "out="))
        for buffer in _buffers_handed_over(arg.value):  # launch(grid, (x, out)), run(dkv[:, 0]), run({k: dq})
            facts.filled_by.setdefault(buffer, []).append(call)
    if ctx_name is None:
        return
    facts.ctx_arguments += sum(
        1 for arg in call.args if type(arg.value) is cst.Name and arg.value.value == ctx_name
    )
    if func_on_name and func.value.value == ctx_name:  # type: ignore[attr-defined]
        assert isinstance(func, cst.Attribute)
        facts.ctx_calls.setdefault(func.attr.value, []).append(call)
        if func.attr.value in ("save_for_backward", "mark_dirty", "save_for_forward", "mark_non_differentiable"):
            for arg in call.args:
                if isinstance(arg.value, cst.Name) and not arg.star and func.attr.value != "mark_non_differentiable":
                    facts.tensor_uses.add(arg.value.value)
        return
    if isinstance(func, cst.Name) and func.value == "setattr" and len(call.args) == 3:
        owner, attribute, value = (arg.value for arg in call.args)
        if (
            isinstance(owner, cst.Name)
            and owner.value == ctx_name
            and isinstance(attribute, cst.SimpleString)
            and not any(arg.star for arg in call.args)
        ):
            name = attribute.evaluated_value
            facts.ctx_stores.append(CtxStore(name if isinstance(name, str) else "?", value, call))
            return
    for arg in call.args:
        if isinstance(arg.value, cst.Name) and arg.value.value == ctx_name:
            facts.ctx_escapes = True


_FACT_READERS: Dict[type, Callable[[BodyFacts, Any, Optional[str]], None]] = {
    cst.Assign: _read_assign,
    cst.AnnAssign: _read_annotated_assign,
    cst.AugAssign: _read_augmented_assign,
    cst.NamedExpr: _read_named_expression,
    cst.For: _read_for,  # a comprehension's ``for`` binds in the comprehension's own scope: not read
    cst.WithItem: _read_with_item,
    cst.ExceptHandler: _read_except_handler,
    cst.Import: _read_import,
    cst.ImportFrom: _read_import,
    cst.FunctionDef: _read_nested_definition,  # walk_scope yields a nested scope, not its body
    cst.ClassDef: _read_nested_definition,
    cst.Global: _read_global,
    cst.Nonlocal: _read_global,
    cst.MatchAs: _read_match_capture,
    cst.MatchStar: _read_match_capture,
    cst.MatchMapping: _read_match_mapping,
    cst.Del: _read_del,
    cst.Return: _read_return,
    cst.Yield: _read_yield,
    cst.Subscript: _read_subscript,
    cst.Attribute: _read_attribute,
    cst.Call: _read_call,
    cst.Name: _read_name,
}
