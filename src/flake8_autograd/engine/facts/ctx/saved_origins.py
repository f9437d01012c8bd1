"""Where the tensors a reader takes from ``ctx.saved_tensors`` come from.

``ctx.save_for_backward`` keeps the very tensor objects it is handed. When one of them is a forward input,
it is the caller's tensor; when it is a tensor forward returns, it is the output the caller holds. These
facts name such tensors, and only where that is certain: the saving method makes every save call with
plain names and the same number of tensors, the saved name is bound once in forward (a parameter never
bound again, or a local forward returns as itself), and the reader binds the tensor once, by unpacking
``ctx.saved_tensors`` or taking one constant index of it. Anything else is left out (silence).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

import libcst as cst

from ...models.body_facts import Binding, constant_index
from ...models.class_model import ClassModel, Method

# The attributes that hand back what ``save_for_backward`` kept (``saved_variables`` is the deprecated name).
_SAVED_ATTRIBUTES = ("saved_tensors", "saved_variables")

INPUT, OUTPUT = "input", "output"


@dataclass(frozen=True)
class CallerTensor:
    """A local of the reader bound to a saved tensor that is the caller's object."""

    name: str  # the reader's local
    origin: str  # INPUT or OUTPUT
    source: str  # the name the saving method passed to save_for_backward


def caller_tensors(model: ClassModel, reader: Method) -> List[CallerTensor]:
    """The locals of ``reader`` (backward or vjp) that hold a forward input or a returned output, saved."""
    if reader.node is None or reader.ctx_name is None:
        return []
    saved = _saved_names(model)
    if saved is None:
        return []
    origins = _setup_context_origins(model) if model.setup_context_style else _forward_origins(model)
    found: List[CallerTensor] = []
    for name, bindings in reader.facts.bindings.items():
        valued = [binding for binding in bindings if binding.value is not None]
        if len(valued) != 1 or reader.definitions(name) != 1:
            continue  # bound again (``x = x.clone()``): the name no longer holds the saved object
        index = _saved_index(valued[0], reader.ctx_name, len(saved))
        if index is None:
            continue
        source = saved[index]
        origin = origins.get(source)
        if origin is not None:
            found.append(CallerTensor(name, origin, source))
    return found


def _saved_names(model: ClassModel) -> Optional[List[str]]:
    """The names passed to save_for_backward, position by position, when every call agrees on them."""
    saver = model.method("setup_context" if model.setup_context_style else "forward")
    if saver is None or saver.node is None or saver.ctx_name is None:
        return None
    calls = saver.facts.ctx_calls.get("save_for_backward", [])
    names: Optional[List[str]] = None
    for call in calls:
        if any(arg.star or arg.keyword is not None or not isinstance(arg.value, cst.Name) for arg in call.args):
            return None
        these = [arg.value.value for arg in call.args if isinstance(arg.value, cst.Name)]
        if names is not None and these != names:
            return None  # paths that save different tensors: which one backward reads is unknown
        names = these
    return names


def _saved_index(binding: Binding, ctx_name: str, count: int) -> Optional[int]:
    """The position in ``ctx.saved_tensors`` that ``binding`` takes, when it takes one certainly."""
    value = binding.value
    if binding.index is not None:
        if binding.unpack_length == count and _is_saved_tuple(value, ctx_name):
            return binding.index
        return None
    if isinstance(value, cst.Subscript) and _is_saved_tuple(value.value, ctx_name):
        index = constant_index(value)
        if index is not None and 0 <= index < count:
            return index
    return None


def _is_saved_tuple(node: Optional[cst.BaseExpression], ctx_name: str) -> bool:
    return (
        isinstance(node, cst.Attribute)
        and node.attr.value in _SAVED_ATTRIBUTES
        and isinstance(node.value, cst.Name)
        and node.value.value == ctx_name
    )


def _forward_origins(model: ClassModel) -> Dict[str, str]:
    """Forward's names that hold the caller's objects: inputs never bound again, locals returned as such."""
    forward = model.method("forward")
    inputs = model.forward_inputs()
    if forward is None or forward.node is None or inputs is None:
        return {}
    origins = {name: INPUT for name in inputs.names if not forward.rebinds(name)}
    for name in _returned_names(forward):  # an input returned as-is stays an input: the caller's either way
        if name not in origins and len(forward.facts.bindings.get(name, [])) == 1:
            origins[name] = OUTPUT
    return origins


def _returned_names(method: Method) -> List[str]:
    """Names a ``return`` gives back as themselves: ``return y`` or an element of ``return y, z``."""
    names: List[str] = []
    for ret in method.facts.returns:
        value = ret.value
        elements = [value]
        if isinstance(value, (cst.Tuple, cst.List)):
            elements = [element.value for element in value.elements if isinstance(element, cst.Element)]
        names.extend(element.value for element in elements if isinstance(element, cst.Name))
    return names


def _setup_context_origins(model: ClassModel) -> Dict[str, str]:
    """setup_context's names for the caller's objects: its ``output``, or parts of ``inputs`` and ``output``."""
    setup = model.method("setup_context")
    if setup is None or setup.signature is None or len(setup.signature.positional) != 3:
        return {}
    _, inputs, output = (param.name for param in setup.signature.positional)
    parents = {inputs: INPUT, output: OUTPUT}
    origins: Dict[str, str] = {}
    if not setup.rebinds(output):
        origins[output] = OUTPUT
    for name, bindings in setup.facts.bindings.items():
        if len(bindings) != 1 or name in parents:
            continue
        value = bindings[0].value
        if bindings[0].index is not None and isinstance(value, cst.Name):
            parent = value.value  # ``x, weight = inputs``
        elif bindings[0].index is None and isinstance(value, cst.Subscript) and constant_index(value) is not None:
            parent = value.value.value if isinstance(value.value, cst.Name) else ""  # ``x = inputs[0]``
        else:
            continue
        if parent in parents and not setup.rebinds(parent):
            origins[name] = parents[parent]
    return origins
