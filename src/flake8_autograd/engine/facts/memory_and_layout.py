"""Values that compute nothing: a change of layout, a wrapper, a view, an allocation.

What a gradient's provenance walks through without counting it as work: ``x.view(...)``, ``x.to(...)``,
``x.T`` pass a value on; ``torch.empty_like(x)``, ``x.new_zeros(...)`` only allocate memory that a later
call fills; a view of a buffer handed to a call (``kernel(buf.view(-1))``) is that buffer written there.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Iterable, List, Optional

import libcst as cst

from ..models.class_model import Method
from ..syntax.walk import cst_dotted

# Methods that return the same data in another shape, dtype, device or memory layout.
LAYOUT_METHODS = frozenset(
    """
    view view_as reshape reshape_as to contiguous t transpose permute squeeze unsqueeze flatten unflatten
    float double half bfloat16 type type_as expand expand_as detach clone movedim swapaxes cpu cuda
    """.split()
)
LAYOUT_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag"})

# Calls that wrap a value without computing (the value is their first argument).
WRAPPERS = frozenset({"from_local"})

# Calls that only allocate memory: the value is whatever later fills it.
ALLOCATIONS = frozenset(
    """
    empty empty_like zeros zeros_like ones ones_like full full_like empty_strided
    new_empty new_zeros new_ones new_full
    """.split()
)

# In-place methods that only set an allocation's memory to a constant (``x.new(n).zero_()``).
CONSTANT_FILLS = frozenset({"zero_", "fill_"})

# Methods and attributes that give a view of a tensor's memory: a buffer handed as one is written.
_VIEW_METHODS = frozenset(
    "view view_as reshape reshape_as flatten unflatten t transpose permute squeeze unsqueeze movedim swapaxes "
    "detach narrow select as_strided".split()
)
_VIEW_ATTRIBUTES = frozenset({"T", "mT", "data"})
_DISPLAY_TYPES = frozenset({cst.Tuple, cst.List, cst.Dict})


def viewed_name(value: cst.BaseExpression) -> Optional[str]:
    """The local ``value`` is a view of, through at least one view method (``buf.view(-1)``,
    ``buf[:, 0].flatten()``), else None."""
    through_view = False
    while True:  # exact classes, asked of every argument: no isinstance through libcst's ABCs
        kind = type(value)
        if kind is cst.Call and type(value.func) is cst.Attribute and (  # type: ignore[attr-defined]
            value.func.attr.value in _VIEW_METHODS  # type: ignore[attr-defined]
        ):
            value = value.func.value  # type: ignore[attr-defined]
            through_view = True
        elif kind is cst.Attribute and value.attr.value in _VIEW_ATTRIBUTES:  # type: ignore[attr-defined]
            value = value.value  # type: ignore[attr-defined]
            through_view = True
        elif kind is cst.Subscript:
            value = value.value  # type: ignore[attr-defined]
        else:
            break
    return value.value if through_view and type(value) is cst.Name else None


def handed_as_views(method: Method) -> Dict[str, List[cst.Call]]:
    """For each local, the calls handed a view of it as an argument, alone or in a display
    (``kernel(index, grad, buf.view(-1))``, ``run(out=buf.flatten())``)."""
    handed: Dict[str, List[cst.Call]] = {}
    for call in method.facts.calls:
        for arg in call.args:
            if arg.star:
                continue
            value = arg.value
            displayed = type(value) in _DISPLAY_TYPES
            elements = display_values(value) if displayed else [value]  # type: ignore[arg-type]
            for element in elements:
                name = viewed_name(element)
                if name is not None:
                    handed.setdefault(name, []).append(call)
    return handed


def wrapped_value(call: cst.Call) -> "cst.BaseExpression | None":
    """What a layout method or wrapper call passes on, or None for a call that computes."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in LAYOUT_METHODS:
        return func.value
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if name in WRAPPERS and call.args and not call.args[0].star:
        return call.args[0].value
    return None


def _method_name(call: cst.Call) -> Optional[str]:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def display_values(display: "cst.Tuple | cst.List | cst.Dict") -> Iterable[cst.BaseExpression]:
    if isinstance(display, cst.Dict):
        return [element.value for element in display.elements if isinstance(element, cst.DictElement)]
    return [element.value for element in display.elements if not isinstance(element, cst.StarredElement)]


def is_allocation(value: cst.BaseExpression, allocating: FrozenSet[str] = frozenset()) -> bool:
    """``torch.empty_like(x)``, ``None if ... else x.new_zeros(...)``, ``torch.empty(n).view(shape)``,
    ``x.new(n).zero_()``, or a call of one of the module's helpers that only allocate: memory, no
    values yet.

    A worklist, not a recursion: a chain of a thousand conditional expressions is one level each.
    """
    pending: List[cst.BaseExpression] = [value]
    while pending:
        value = pending.pop()
        if isinstance(value, cst.IfExp):
            allocations = [branch for branch in (value.body, value.orelse) if not is_none(branch)]
            if not allocations:
                return False
            pending.extend(allocations)
            continue
        while isinstance(value, cst.Call):  # torch.empty(...).transpose(1, 2), x.new(n).zero_(): still memory
            wrapped = wrapped_value(value)
            if wrapped is None and isinstance(value.func, cst.Attribute) and value.func.attr.value in CONSTANT_FILLS:
                wrapped = value.func.value
            if wrapped is None:
                break
            value = wrapped
        if not isinstance(value, cst.Call):
            return False
        if isinstance(value.func, cst.Name) and value.func.value in allocating:
            continue
        if _method_name(value) == "new":  # the legacy ``x.new(sizes)``
            continue
        dotted = cst_dotted(value.func) or ""
        if _legacy_sized_constructor(dotted, value):
            continue
        if dotted.rsplit(".", 1)[-1] not in ALLOCATIONS:
            return False
    return True


# The legacy typed constructors (``torch.cuda.FloatTensor(n, h)``): given sizes, uninitialised memory.
_LEGACY_TENSOR_TYPES = frozenset(
    f"{kind}Tensor" for kind in "Float Double Half BFloat16 Byte Char Short Int Long Bool".split()
)


def _legacy_sized_constructor(dotted: str, call: cst.Call) -> bool:
    """``torch.FloatTensor(n, m)``, ``torch.cuda.FloatTensor(*shape)``: sizes, not data. One plain name
    could be a list of values (``torch.FloatTensor(values)``), so one argument counts only when it is a
    number or arithmetic of sizes (``n * h``, ``x.shape[0]``, ``x.size(0)``)."""
    module, _, kind = dotted.rpartition(".")
    if module not in ("torch", "torch.cuda") or kind not in _LEGACY_TENSOR_TYPES or not call.args:
        return False
    if any(arg.keyword is not None for arg in call.args):
        return False
    if len(call.args) >= 2:
        return not any(isinstance(arg.value, (cst.List, cst.Tuple, cst.ListComp)) for arg in call.args)
    only = call.args[0]
    if only.star == "*":
        return True  # ``torch.cuda.FloatTensor(*shape)``
    return isinstance(only.value, (cst.Integer, cst.BinaryOperation, cst.Subscript)) or (
        isinstance(only.value, cst.Call) and _method_name(only.value) in ("size", "numel")
    )


def is_none(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"
