"""Provenance: which computations in a method body produce a value.

A gradient that backward returns is *computed* when some work in backward produces it: a call, an
arithmetic operation, an indexing. Two gradients share a computation when one call yields both (a
fused kernel unpacked into two names, a kernel that fills two preallocated buffers, one
``torch.autograd.backward`` whose ``.grad`` results are read). Work that only changes how a value is
laid out (``.view()``, ``.to()``, ``.contiguous()``, ...) does not count: the value still comes from
what it wraps.

The answer is a set of keys, one per computation; the empty set means "not computed here" (a
parameter passed through, a constant, a saved tensor, or a value the engine does not follow).
"""

from __future__ import annotations

from typing import FrozenSet, Hashable, List, Set, Tuple

import libcst as cst

from .model import Method
from .walk import children, cst_dotted, fingerprint

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

# Budgets against pathological code: nodes visited, and indexings of indexings followed.
MAX_STEPS = 2_000
MAX_DEPTH = 20


def computations(node: cst.BaseExpression, method: Method, depth: int = 0) -> FrozenSet[Computation]:
    """The computations in ``method`` that produce ``node``'s value (empty: none, or not followed)."""
    if depth > MAX_DEPTH:
        return frozenset()
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
                pending.extend(_bound_values(value.value, method, found))
        elif isinstance(value, cst.Call):
            wrapped = _wrapped_value(value)
            if wrapped is not None:
                pending.append(wrapped)
            else:
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
                # A part of a local result comes from what made it (nothing, for a fused kernel's).
                found.update(computations(base, method, depth + 1))
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


def _bound_values(name: str, method: Method, found: Set[Computation]) -> List[cst.CSTNode]:
    """The values to follow for a local name; computations it stands for directly go into ``found``."""
    facts = method.facts
    bindings = facts.bindings.get(name, ())  # none: a parameter passed through, a global, a builtin
    if any(binding.index is not None and isinstance(binding.value, cst.Call) for binding in bindings):
        # Unpacked from one call that yields several gradients: a fused kernel cannot skip work per
        # input, so neither it nor what is later made of its result is counted.
        return []
    values: List[cst.CSTNode] = []
    for binding in bindings:
        value = binding.value
        if value is None or binding.index is not None:
            continue  # bound in a loop, a with, unpacked from ctx.saved_tensors, ...: not followed
        if _is_allocation(value) and facts.filled_by.get(name):
            # A buffer: its value comes from the calls it is handed to (a kernel launch), one for all
            # the buffers that call fills.
            found.update(("call", fingerprint(call)) for call in facts.filled_by[name] if _wrapped_value(call) is None)
            continue
        values.append(value)
    return values


def _is_allocation(value: cst.BaseExpression) -> bool:
    """``torch.empty_like(x)``, or ``None if ... else x.new_zeros(...)``: memory, no values yet."""
    if isinstance(value, cst.IfExp):
        branches = (value.body, value.orelse)
        allocations = [branch for branch in branches if not _is_none(branch)]
        return bool(allocations) and all(_is_allocation(branch) for branch in allocations)
    if not isinstance(value, cst.Call):
        return False
    dotted = cst_dotted(value.func) or ""
    return dotted.rsplit(".", 1)[-1] in ALLOCATIONS


def _is_none(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


def _is_ctx_read(node: cst.BaseExpression, method: Method) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value == method.ctx_name
