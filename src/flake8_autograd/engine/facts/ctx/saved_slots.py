"""Which tensors given to ``ctx.save_for_backward`` backward never reads.

``save_for_backward`` keeps every tensor it is handed alive until backward runs (or the graph is freed),
whether backward reads it or not. Slot ``i`` of ``ctx.saved_tensors`` is read by a name unpacked at
position ``i`` that the reader loads somewhere (nested functions included), or by ``ctx.saved_tensors[i]``
with a constant ``i``. The facts answer only where that is certain: one save call with plain arguments in
the method that fills the tuple, a ctx used only as ``ctx.<attribute>`` in the saver and in every reader
(no helper receives it), and every read of the tuple an unpacking into as many names as were saved or a
constant index. Anything else (the tuple passed on, iterated, indexed by a variable, starred, measured
with ``len``; a local subclass that may read it in its own backward) gives None, which rules take as silence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Set, Tuple

import libcst as cst

from ...models.class_model import ClassModel, Method
from .saved_paths import ctx_used_only_directly, returns_a_value
from ..tensor_kinds import Kind
from ..tensors.inference import TensorInference
from ...syntax.walk import fingerprint

# The methods autograd calls with the ctx that forward (or setup_context) filled. jvp sees only what
# ``save_for_forward`` kept, but a read there is counted too: it shows an intent to use the slot.
READERS = ("backward", "vjp", "jvp")

# Attributes that hand back the saved tuple; the deprecated name is taken as a read of every slot.
_WHOLE_TUPLE_ALIASES = ("saved_variables", "to_save")


@dataclass
class UnreadSaves:
    """The arguments of ``save`` (a call in ``saver``) whose slots no reader takes."""

    saver: Method
    save: cst.Call
    unread: List[cst.BaseExpression]
    reader: Method  # backward, for the message


def unread_saves(
    model: ClassModel, subclassed: bool, kinds: Callable[[Method], TensorInference]
) -> Optional[UnreadSaves]:
    """The tensors ``model`` saves for backward and never reads; None when that is not certain.

    ``subclassed``: a class of the module derives from ``model`` (its backward may read more slots).
    ``kinds``: the tensor inference of a method (the saver's tells which arguments hold no tensor).
    """
    if subclassed:
        return None
    saver = _saver(model)
    backward = model.own_methods.get("backward")
    if saver is None or backward is None or backward.node is None or not returns_a_value(backward):
        return None  # no backward of this class's own, or one that only raises: nothing to compare with
    saves = saver.facts.ctx_calls.get("save_for_backward", [])
    if len(saves) != 1 or any(arg.star or arg.keyword is not None for arg in saves[0].args):
        return None  # saves on several paths, or a packed ``*tensors``: which slot holds what is unclear
    if any(attribute in saver.facts.ctx_reads for attribute in ("saved_tensors", *_WHOLE_TUPLE_ALIASES)):
        return None
    save = saves[0]
    arguments = [arg.value for arg in save.args]
    read = _slots_read(model, saver, len(arguments))
    if read is None:
        return None
    inference = kinds(saver)
    if any(inference.kind(argument) is Kind.NOT_TENSOR for argument in arguments):
        return None  # the save raises (AGF102): forward never gets as far as keeping anything
    # The same tensor read through another slot (``save(x, x)``), or kept on ctx as well (AGF003's
    # mistake, whose fix is to read the saved one), stays alive whatever this slot holds.
    kept_anyway = {fingerprint(arguments[slot]) for slot in read if slot < len(arguments)}
    kept_anyway.update(fingerprint(store.value) for store in saver.facts.ctx_stores)
    unread = [
        argument
        for slot, argument in enumerate(arguments)
        if slot not in read and inference.kind(argument) is not Kind.NONE and fingerprint(argument) not in kept_anyway
    ]
    return UnreadSaves(saver, save, unread, backward) if unread else None


def _saver(model: ClassModel) -> Optional[Method]:
    """The class's own method that fills ``saved_tensors``, with a ctx used only directly."""
    forward = model.own_methods.get("forward")
    if model.setup_context_style:
        if forward is not None and forward.ctx_name is not None:
            return None  # a leftover ctx in forward (AGF112): which one saves is not clear
        saver = model.own_methods.get("setup_context")
    else:
        saver = forward
    if saver is None or saver.node is None or saver.facts.yields or not ctx_used_only_directly(saver):
        return None
    first = saver.node.params.params[0].name.value if saver.node.params.params else None
    if saver.is_classmethod or first == "cls" and saver.ctx_name != "cls":
        return None  # ``forward(cls, ctx, ...)``: a base's forward that subclasses (with their backward) call
    return saver


def _slots_read(model: ClassModel, saver: Method, count: int) -> Optional[Set[int]]:
    """The slots any method of the class reads; None when some read is not certain."""
    read: Set[int] = set()
    for method in model.own_methods.values():
        if method is saver or method.name == "forward":
            continue
        reads_tuple = any(
            attribute in method.facts.ctx_reads for attribute in ("saved_tensors", *_WHOLE_TUPLE_ALIASES)
        )
        if method.name not in READERS:
            if reads_tuple:
                return None  # a helper reading a ctx's tuple: which ctx, and for what, is unknown
            continue
        if method.node is None or method.ctx_name is None or not ctx_used_only_directly(method):
            return None  # ``helper(ctx)``, a nested function seeing ctx: the slots it takes are unknown
        if any(attribute in method.facts.ctx_reads for attribute in _WHOLE_TUPLE_ALIASES):
            return None
        slots = _slots_read_by(method, count)
        if slots is None:
            return None
        read |= slots
    return read


def _slots_read_by(reader: Method, count: int) -> Optional[Set[int]]:
    reads = reader.facts.ctx_reads.get("saved_tensors", [])
    if not reads:
        return set()
    indexed = {
        id(subscript.node.value): subscript.index
        for subscript in reader.facts.ctx_subscripts
        if subscript.attribute == "saved_tensors" and subscript.index is not None
    }
    unpacked = {
        id(node.value): node
        for node in reader.nodes_of(cst.Assign)
        if isinstance(node, cst.Assign) and len(node.targets) == 1
    }
    read: Set[int] = set()
    for value in reads:
        index = indexed.get(id(value))
        if index is not None:
            read.add(index)
            continue
        assignment = unpacked.get(id(value))
        slots = _slots_unpacked(reader, assignment, count) if assignment is not None else None
        if slots is None:
            return None  # the tuple used whole: passed on, iterated, starred, ``len``
        read |= slots
    return read


def _slots_unpacked(reader: Method, assignment: cst.Assign, count: int) -> Optional[Set[int]]:
    """The slots ``a, b, c = ctx.saved_tensors`` reads: those whose name ``reader`` loads anywhere."""
    target = assignment.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != count:
        return None  # one name for the whole tuple, or a count that differs (AGF103)
    if any(isinstance(element, cst.StarredElement) for element in target.elements):
        return None
    bound = {id(element.value) for element in target.elements}
    loaded = _names_mentioned(reader, bound)
    read: Set[int] = set()
    for slot, element in enumerate(target.elements):
        name = element.value
        if not isinstance(name, cst.Name) or name.value in loaded:
            read.add(slot)  # ``(a, b), c = ...``, ``ctx.x, y = ...``: taken as read
    return read


def _names_mentioned(reader: Method, skipped: Set[int]) -> Set[str]:
    """Every name ``reader`` mentions as a variable (loaded, bound again, deleted; nested functions and
    lambdas included), except the Name nodes in ``skipped``: a mention other than the unpacking counts as
    a read, which errs toward silence."""
    return {name.value for name in reader.derived(_variable_names) if id(name) not in skipped}


def _variable_names(reader: Method) -> Tuple[cst.Name, ...]:
    """The Name nodes of ``reader``'s body (nested scopes included) that stand for a variable, not an
    attribute or a keyword; one walk, however many unpackings ask. Ask ``reader.derived`` for it."""
    not_variables: Set[int] = set()
    names: List[cst.Name] = []
    for node in reader.whole_body():
        kind = type(node)  # a parsed tree holds only these concrete classes: no isinstance through libcst's ABCs
        if kind is cst.Attribute:
            not_variables.add(id(node.attr))  # type: ignore[attr-defined]
        elif kind is cst.Arg and node.keyword is not None:  # type: ignore[attr-defined]
            not_variables.add(id(node.keyword))  # type: ignore[attr-defined]
        elif kind is cst.Name and id(node) not in not_variables:
            names.append(node)  # type: ignore[arg-type]
    return tuple(names)
