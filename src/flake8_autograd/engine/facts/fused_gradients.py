"""Gradients that are results of one fused call, and what a method's gradients are made of.

In forward (or setup_context): the saved values it computed as one of several results of one call (a
fused forward that also yields gradients), unpacked from the call or filled by one launch together with
another saved buffer. In backward: the incoming gradients and the locals made of them, the names unpacked
from one call and how many of them are read, and what is read from ctx rather than computed.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Hashable, List, Sequence, Set, Tuple

import libcst as cst

from ..models.class_model import Method
from ..syntax.walk import children
from .memory_and_layout import handed_as_views, is_allocation, is_none, wrapped_value

# What forward saved, as backward reads it: ``("saved", i)`` for a ``save_for_backward`` position,
# ``("attribute", name)`` for a ctx attribute.
SavedKey = Tuple[Hashable, ...]

# Budget against pathological code: nodes visited in one walk.
MAX_STEPS = 2_000


def forward_gradients(method: Method, savers: Sequence[Method]) -> FrozenSet[SavedKey]:
    """What forward saved for backward that it computed as one of several results of one call (a fused
    forward that also yields gradients): ``("saved", i)`` for ``save_for_backward`` positions,
    ``("attribute", name)`` for ctx attributes.

    Such a result is a name unpacked from a call (maybe set to None beforehand, the call made on one
    branch only), or a preallocated buffer that one launch fills together with another saved buffer
    (``kernel(a, b, grad_a, grad_b)``, ``loss(a, b, grads=grad_a, ...)``)."""
    found: Set[SavedKey] = set()
    for saver in savers:
        if saver.node is None or saver is method:
            continue
        facts = saver.facts
        saved: List[Tuple[SavedKey, cst.BaseExpression]] = []
        for call in facts.ctx_calls.get("save_for_backward", ()):
            if not any(arg.star for arg in call.args):
                saved.extend((("saved", index), arg.value) for index, arg in enumerate(call.args))
        saved.extend((("attribute", store.attribute), store.value) for store in facts.ctx_stores if not store.unpacked)
        saved_names = {value.value for _, value in saved if isinstance(value, cst.Name)}
        launches = _forward_launches(saver, saved_names)
        for key, value in saved:
            if isinstance(value, cst.Name) and (_fused_result(saver, value.value) or value.value in launches):
                found.add(key)
    return frozenset(found)


def _fused_result(method: Method, name: str) -> bool:
    """``name`` is one of several results of a call in ``method`` on every binding that is not None:
    ``loss, grad_a, grad_b = fused(...)``, after ``grad_a = grad_b = None`` or not."""
    bindings = [
        binding for binding in method.facts.bindings.get(name, ())
        if binding.value is None or binding.index is not None or not is_none(binding.value)
    ]
    return bool(bindings) and all(
        binding.index is not None and isinstance(binding.value, cst.Call) for binding in bindings
    )


def _forward_launches(method: Method, saved: Set[str]) -> Set[str]:
    """The saved names of ``method`` that are preallocated buffers filled by one launch alone, a launch
    that fills another saved buffer too: the gradients one fused forward call writes."""
    facts = method.facts
    viewed = handed_as_views(method)
    filler: Dict[str, cst.Call] = {}
    for name in saved:
        bindings = facts.bindings.get(name, ())
        if not bindings or not all(
            binding.index is None and binding.value is not None and is_allocation(binding.value)
            for binding in bindings
        ):
            continue
        calls = [
            call for call in [*facts.filled_by.get(name, ()), *viewed.get(name, ())]
            if not is_ctx_read(call.func, method)
            and wrapped_value(call) is None
            and not is_allocation(call)
        ]
        if len({id(call) for call in calls}) == 1:
            filler[name] = calls[0]
    return {
        name for name, call in filler.items()
        if any(other != name and each is call for other, each in filler.items())
    }


def unpacked_from_call(name: str, method: Method) -> bool:
    """``name`` is one of several results unpacked from one call (``a, b = fused(...)``)."""
    bindings = method.facts.bindings.get(name, ())
    return any(binding.index is not None and isinstance(binding.value, cst.Call) for binding in bindings)


def carrying_gradients(method: Method, gradients: FrozenSet[str]) -> FrozenSet[str]:
    """The incoming gradients and the locals made of them (``dout_re, dout_im = split(dout)``)."""
    mentioned: Dict[str, Set[str]] = {}
    for name, bound in method.facts.bindings.items():
        names: Set[str] = set()
        for binding in bound:
            if binding.value is not None:
                names.update(_names_in(binding.value))
        mentioned[name] = names
    carrying = set(gradients)
    changed = True
    while changed:  # a fixed point: each round adds a name or stops
        changed = False
        for name, names in mentioned.items():
            if name not in carrying and not names.isdisjoint(carrying):
                carrying.add(name)
                changed = True
    return frozenset(carrying)


def _names_in(node: cst.CSTNode) -> Set[str]:
    found: Set[str] = set()
    pending: List[cst.CSTNode] = [node]
    steps = 0
    while pending and steps < MAX_STEPS:
        steps += 1
        item = pending.pop()
        if isinstance(item, cst.Name):
            found.add(item.value)
        pending.extend(children(item))
    return found


def results_used(call: cst.Call, method: Method) -> int:
    """How many of the names unpacked from ``call`` are read somewhere in the method."""
    facts = method.facts
    unpacked = [
        name for name, bindings in facts.bindings.items()
        if any(binding.index is not None and binding.value is call for binding in bindings)
    ]
    if method.node is None:
        return 0
    occurrences: Dict[str, int] = {name: 0 for name in unpacked}
    for node in method.body_nodes():
        if isinstance(node, cst.Name) and node.value in occurrences:
            occurrences[node.value] += 1
    # Every binding of a name is one occurrence of it as a target; any more is a read.
    return sum(1 for name in unpacked if occurrences[name] > len(facts.bindings[name]))


def incoming_gradients(method: Method) -> FrozenSet[str]:
    """The names of backward's parameters other than ctx: the gradients it receives."""
    signature = method.signature
    if signature is None:
        return frozenset()
    params = [param.name for param in signature.positional if param.name != method.ctx_name]
    if signature.vararg is not None:
        params.append(signature.vararg.name)
    return frozenset(params)


def mentions_any(node: cst.CSTNode, names: FrozenSet[str]) -> bool:
    pending: List[cst.CSTNode] = [node]
    steps = 0
    while pending and steps < MAX_STEPS:
        steps += 1
        item = pending.pop()
        if isinstance(item, cst.Name) and item.value in names:
            return True
        pending.extend(children(item))
    return False


def is_ctx_read(node: cst.BaseExpression, method: Method) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value == method.ctx_name
