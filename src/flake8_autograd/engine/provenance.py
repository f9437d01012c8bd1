"""Provenance: which computations in a method body produce a value.

A gradient that backward returns is *computed* when some work in backward produces it: a call, an
arithmetic operation, an indexing. Two gradients share a computation when one call yields both (a
fused kernel unpacked into two names, a kernel that fills two preallocated buffers, one
``torch.autograd.backward`` whose ``.grad`` results are read). Work that only changes how a value is
laid out (``.view()``, ``.to()``, ``.contiguous()``, ...) does not count: the value still comes from
what it wraps.

What is made of a fused call's results does not count either (``fit(grad_a, rows)`` after
``grad_a, grad_b = fused(grad, ...)``): the work that a check of ``needs_input_grad`` could skip is
the fused call's, which serves every input at once. A buffer allocated by one of the module's own
helpers (a function whose every return is an allocation) is a buffer like any other.

The answer is a set of keys, one per computation; the empty set means "not computed here" (a
parameter passed through, a constant, a saved tensor, or a value the engine does not follow).
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Hashable, List, Set, Tuple

import libcst as cst

from .model import Method
from .walk import children, cst_dotted, fingerprint, walk_scope

Computation = Tuple[Hashable, ...]

# Methods that return the same data in another shape, dtype, device or memory layout.
LAYOUT_METHODS = frozenset(
    """
    view view_as reshape reshape_as to contiguous t transpose permute squeeze unsqueeze flatten unflatten
    float double half bfloat16 type type_as expand expand_as detach clone movedim swapaxes cpu cuda
    """.split()
)
LAYOUT_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data"})

# Calls that wrap a value without computing (the value is their first argument).
WRAPPERS = frozenset({"from_local"})

# Calls that only allocate memory: the value is whatever later fills it.
ALLOCATIONS = frozenset(
    """
    empty empty_like zeros zeros_like ones ones_like full full_like empty_strided
    new_empty new_zeros new_ones new_full
    """.split()
)

# ``x.grad`` after one ``torch.autograd.backward``: every such read comes from that one call.
_GRAD_READ: Computation = ("grad attribute",)

# Budget against pathological code: nodes visited in one walk.
MAX_STEPS = 2_000


def computations(
    node: cst.BaseExpression, method: Method, allocating: FrozenSet[str] = frozenset()
) -> FrozenSet[Computation]:
    """The computations in ``method`` that produce ``node``'s value (empty: none, or not followed).

    ``allocating`` names the module's functions that only allocate memory."""
    found: Set[Computation] = set()
    followed: Set[str] = set()
    pending: List[cst.CSTNode] = [node]
    steps = 0
    while pending:
        steps += 1
        if steps > MAX_STEPS:
            return frozenset()
        value = pending.pop()
        if isinstance(value, cst.Name):
            if value.value not in followed:
                followed.add(value.value)
                pending.extend(_bound_values(value.value, method, found, allocating))
        elif isinstance(value, cst.Call):
            wrapped = _wrapped_value(value)
            if wrapped is not None:
                pending.append(wrapped)
            elif not _reworks_fused_gradient(value, method):
                found.add(("call", fingerprint(value)))
        elif isinstance(value, cst.Attribute):
            if value.attr.value == "grad":
                found.add(_GRAD_READ)
            elif value.attr.value in LAYOUT_ATTRIBUTES:
                pending.append(value.value)
            # any other attribute (ctx.x, obj.field) is read, not computed
        elif isinstance(value, cst.Subscript):
            if _is_ctx_read(value.value, method):
                continue  # ctx.saved_tensors[0], ctx.sizes[1]
            base = value.value
            if isinstance(base, cst.Name) and base.value in method.facts.bindings:
                # A part of a local result comes from what made it (nothing, for a fused kernel's). Followed
                # in this walk, once per name: a fresh walk per subscript would redo the name's whole
                # history for every part taken of it, exponential in a chain of such locals.
                pending.append(base)
            else:
                found.add(("subscript", fingerprint(value)))  # indexing a parameter is work of its own
        elif isinstance(value, cst.BinaryOperation):
            found.add(("arithmetic", fingerprint(value)))
        else:
            pending.extend(children(value))  # parentheses, conditionals, unary operators, displays
    return frozenset(found)


def _wrapped_value(call: cst.Call) -> "cst.BaseExpression | None":
    """What a layout method or wrapper call passes on, or None for a call that computes."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in LAYOUT_METHODS:
        return func.value
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if name in WRAPPERS and call.args and not call.args[0].star:
        return call.args[0].value
    return None


def _bound_values(
    name: str, method: Method, found: Set[Computation], allocating: FrozenSet[str]
) -> List[cst.CSTNode]:
    """The values to follow for a local name; computations it stands for directly go into ``found``."""
    facts = method.facts
    bindings = facts.bindings.get(name, ())  # none: a parameter passed through, a global, a builtin
    if _unpacked_from_call(name, method):
        # Unpacked from one call that yields several gradients: a fused kernel cannot skip work per
        # input, so neither it nor what is later made of its result is counted.
        return []
    values: List[cst.CSTNode] = []
    for binding in bindings:
        value = binding.value
        if value is None or binding.index is not None:
            continue  # bound in a loop, a with, unpacked from ctx.saved_tensors, ...: not followed
        if _is_allocation(value, allocating) and facts.filled_by.get(name):
            # A buffer: its value comes from the calls it is handed to (a kernel launch), one for all
            # the buffers that call fills.
            found.update(("call", fingerprint(call)) for call in facts.filled_by[name] if _wrapped_value(call) is None)
            continue
        values.append(value)
    return values


def _unpacked_from_call(name: str, method: Method) -> bool:
    """``name`` is one of several results unpacked from one call (``a, b = fused(...)``)."""
    bindings = method.facts.bindings.get(name, ())
    return any(binding.index is not None and isinstance(binding.value, cst.Call) for binding in bindings)


def _reworks_fused_gradient(call: cst.Call, method: Method) -> bool:
    """``call`` takes as its first argument (or is a method of) one of the results of a fused call:
    one that consumes an incoming gradient and whose results, two or more of them used, go their own
    ways. What is made of such a result is not work of its own.

    Not a fused call: one that consumes no incoming gradient (``x, w = map(torch.Tensor.contiguous,
    ctx.saved_tensors)`` unpacks saved state), one with a single result used (``padded, _, _ =
    pad(grad)`` prepares the gradient that later, separate computations share), or one whose result
    re-binds the incoming gradient (``grad, x = prepare(grad, x)``: prepared, not computed).
    """
    func = call.func
    subject: "cst.BaseExpression | None" = func.value if isinstance(func, cst.Attribute) else None
    if subject is None and call.args and not call.args[0].star and call.args[0].keyword is None:
        subject = call.args[0].value
    while isinstance(subject, cst.Call):
        subject = _wrapped_value(subject)  # None for a call that computes
    if not isinstance(subject, cst.Name) or not _unpacked_from_call(subject.value, method):
        return False
    gradients = _incoming_gradients(method)
    if subject.value in gradients:
        return False  # the incoming gradient re-bound (``grad, x = prepare(grad, x)``) is prepared, not computed
    sources = [binding.value for binding in method.facts.bindings[subject.value] if binding.index is not None]
    return all(
        isinstance(source, cst.Call) and _mentions_any(source, gradients) and _results_used(source, method) >= 2
        for source in sources
    )


def _results_used(call: cst.Call, method: Method) -> int:
    """How many of the names unpacked from ``call`` are read somewhere in the method."""
    facts = method.facts
    unpacked = [
        name for name, bindings in facts.bindings.items()
        if any(binding.index is not None and binding.value is call for binding in bindings)
    ]
    if method.node is None:
        return 0
    occurrences: Dict[str, int] = {name: 0 for name in unpacked}
    for node in walk_scope(method.node.body):
        if isinstance(node, cst.Name) and node.value in occurrences:
            occurrences[node.value] += 1
    # Every binding of a name is one occurrence of it as a target; any more is a read.
    return sum(1 for name in unpacked if occurrences[name] > len(facts.bindings[name]))


def _incoming_gradients(method: Method) -> FrozenSet[str]:
    """The names of backward's parameters other than ctx: the gradients it receives."""
    signature = method.signature
    if signature is None:
        return frozenset()
    params = [param.name for param in signature.positional if param.name != method.ctx_name]
    if signature.vararg is not None:
        params.append(signature.vararg.name)
    return frozenset(params)


def _mentions_any(node: cst.CSTNode, names: FrozenSet[str]) -> bool:
    pending: List[cst.CSTNode] = [node]
    steps = 0
    while pending and steps < MAX_STEPS:
        steps += 1
        item = pending.pop()
        if isinstance(item, cst.Name) and item.value in names:
            return True
        pending.extend(children(item))
    return False


def _is_allocation(value: cst.BaseExpression, allocating: FrozenSet[str] = frozenset()) -> bool:
    """``torch.empty_like(x)``, ``None if ... else x.new_zeros(...)``, ``torch.empty(n).view(shape)``,
    or a call of one of the module's helpers that only allocate: memory, no values yet.

    A worklist, not a recursion: a chain of a thousand conditional expressions is one level each.
    """
    pending: List[cst.BaseExpression] = [value]
    while pending:
        value = pending.pop()
        if isinstance(value, cst.IfExp):
            allocations = [branch for branch in (value.body, value.orelse) if not _is_none(branch)]
            if not allocations:
                return False
            pending.extend(allocations)
            continue
        wrapped = _wrapped_value(value) if isinstance(value, cst.Call) else None
        while wrapped is not None:  # torch.empty(...).transpose(1, 2): still fresh memory
            value = wrapped
            wrapped = _wrapped_value(value) if isinstance(value, cst.Call) else None
        if not isinstance(value, cst.Call):
            return False
        if isinstance(value.func, cst.Name) and value.func.value in allocating:
            continue
        dotted = cst_dotted(value.func) or ""
        if dotted.rsplit(".", 1)[-1] not in ALLOCATIONS:
            return False
    return True


def _is_none(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


def _is_ctx_read(node: cst.BaseExpression, method: Method) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value == method.ctx_name
