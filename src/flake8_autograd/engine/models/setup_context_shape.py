"""The shape of a setup_context: its parameters against the call PyTorch makes, and its ``inputs``.

``Function.apply`` calls ``setup_context(ctx, inputs, output)`` with three positional arguments. Before
that it binds forward's defaults (``inspect.signature(forward).bind(...).apply_defaults()``), so
``inputs`` always holds one value per positional parameter of forward, whatever the call passed: its
length is known from forward's signature alone. torch.library's ``register_autograd`` calls its
setup_context the same way (by keyword, with ``keyword_only_inputs`` as well when the operator has
keyword-only arguments), so the query takes the parameters the caller passes and the input count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Union

import libcst as cst

from .class_model import Method, Signature

# What ``Function.apply`` passes to setup_context, in order.
FUNCTION_SETUP_CONTEXT_ARGUMENTS = ("ctx", "inputs", "output")


@dataclass(frozen=True)
class ParameterMismatch:
    """The parameters cannot take the arguments PyTorch passes: a TypeError at every call."""

    node: cst.CSTNode  # the ``def``
    takes: str  # "2 positional parameters", "4 required positional parameters", ...


@dataclass(frozen=True)
class InputsUnpackMismatch:
    """``a, b = inputs`` with a number of names ``inputs`` never has: a ValueError at every call."""

    node: cst.CSTNode  # the assignment
    names: int  # names the target unpacks into (the starred one aside)
    starred: bool
    inputs: int  # how many values ``inputs`` holds


@dataclass(frozen=True)
class InputsUsedAsTensor:
    """The parameter that receives the tuple of inputs used as a tensor (``setup_context(ctx, x, output)``)."""

    node: cst.Param
    name: str


@dataclass(frozen=True)
class KeywordMismatch:
    """The parameters cannot take the keyword arguments torch.library passes: a TypeError at the first call."""

    node: cst.CSTNode  # the ``def``
    reason: str  # Python's complaint in a few words: "gets unexpected keyword 'inputs'", ...


SetupContextMistake = Union[ParameterMismatch, KeywordMismatch, InputsUnpackMismatch, InputsUsedAsTensor]


def setup_context_mistakes(
    method: Method,
    input_count: Optional[int],
    input_names: Sequence[str] = (),
    arguments: Sequence[str] = FUNCTION_SETUP_CONTEXT_ARGUMENTS,
    *,
    by_keyword: bool = False,
) -> List[SetupContextMistake]:
    """The certain mistakes of ``method`` (a setup_context) called with ``arguments`` (by keyword when
    ``by_keyword``, else by position) and an ``inputs`` tuple of ``input_count`` values (None: unknown,
    the unpackings are not checked) whose parameters in forward (or the operator) are ``input_names``.
    A signature that cannot take the call hides the rest."""
    parameters: Optional[Union[ParameterMismatch, KeywordMismatch]] = (
        keyword_mismatch(method.node, arguments) if by_keyword and method.node is not None
        else None if by_keyword else parameter_mismatch(method, len(arguments))
    )
    if parameters is not None:
        return [parameters]
    inputs = _inputs_parameter(method, arguments)
    if inputs is None:
        return []
    found: List[SetupContextMistake] = []
    if input_count is not None:
        found.extend(inputs_unpack_mismatches(method, inputs, input_count))
    used = inputs_used_as_tensor(method, inputs) if inputs in input_names else None
    if used is not None:
        found.append(used)
    return found


def parameter_mismatch(method: Method, passed: int) -> Optional[ParameterMismatch]:
    """``method``'s signature cannot take ``passed`` positional arguments (and nothing else)."""
    signature = method.signature
    if signature is None or method.node is None:
        return None
    positional = len(signature.positional)
    required = sum(1 for param in signature.positional if not param.has_default)
    if signature.vararg is None and positional < passed:
        return ParameterMismatch(method.node, _count(positional, "positional parameter"))
    if required > passed:
        return ParameterMismatch(method.node, _count(required, "required positional parameter"))
    keyword_only = [param.name for param in signature.keyword_only if not param.has_default]
    if keyword_only:
        return ParameterMismatch(method.node, f"the required keyword-only parameter '{keyword_only[0]}'")
    return None


def keyword_mismatch(node: cst.FunctionDef, arguments: Sequence[str]) -> Optional[KeywordMismatch]:
    """``node`` cannot be called with the keyword arguments ``arguments`` and nothing else, as
    torch.library calls an operator's setup_context (the names, not the order, must match)."""
    signature = Signature.of(node)
    positional_only = {param.name.value for param in node.params.posonly_params}
    everyone = signature.positional + signature.keyword_only
    by_keyword = {param.name for param in everyone} - positional_only
    reason: Optional[str] = None
    unexpected = [name for name in arguments if name not in by_keyword]
    if unexpected and signature.kwarg is None:
        name = unexpected[0]
        reason = (
            f"takes '{name}' positional-only, but it is passed by keyword" if name in positional_only
            else f"gets unexpected keyword '{name}'"
        )
    else:
        passed = by_keyword & set(arguments)
        missing = [param.name for param in everyone if not param.has_default and param.name not in passed]
        if missing:
            reason = f"requires '{missing[0]}'"
    return KeywordMismatch(node, reason) if reason is not None else None


def inputs_unpack_mismatches(method: Method, inputs: str, input_count: int) -> List[InputsUnpackMismatch]:
    """Unpackings of the parameter ``inputs`` into a number of names its ``input_count`` values cannot fill.

    Silent when the body binds ``inputs`` again, or asks ``len(inputs)`` (an unpacking under such a test
    may be a branch that never runs)."""
    facts = method.facts
    if inputs in facts.bindings or any(_is_len_of(call, inputs) for call in facts.calls):
        return []
    found = []
    for node in method.body_nodes():
        if not isinstance(node, cst.Assign) or not _is_name(node.value, inputs):
            continue
        for target in node.targets:
            if not isinstance(target.target, (cst.Tuple, cst.List)):
                continue
            elements = target.target.elements
            starred = any(isinstance(element, cst.StarredElement) for element in elements)
            names = len(elements) - (1 if starred else 0)
            if names > input_count or (not starred and names != input_count):
                found.append(InputsUnpackMismatch(node, names, starred, input_count))
    return found


def inputs_used_as_tensor(method: Method, inputs: str) -> Optional[InputsUsedAsTensor]:
    """The parameter ``inputs`` used as a tensor (saved, or read through a tensor-only attribute) and
    never as a sequence: it is a tuple, so the use fails."""
    facts = method.facts
    signature = method.signature
    if signature is None or inputs in facts.bindings or inputs not in facts.tensor_uses:
        return None
    if any(_is_len_of(call, inputs) for call in facts.calls) or _used_as_sequence(method, inputs):
        return None
    param = next(param for param in signature.positional if param.name == inputs)
    return InputsUsedAsTensor(param.node, inputs)


def _inputs_parameter(method: Method, arguments: Sequence[str]) -> Optional[str]:
    """The name of the parameter that receives ``inputs`` (positional, by the order of ``arguments``)."""
    signature = method.signature
    if signature is None or "inputs" not in arguments:
        return None
    position = list(arguments).index("inputs")
    if position >= len(signature.positional):
        return None
    return signature.positional[position].name


def _used_as_sequence(method: Method, name: str) -> bool:
    """``name[i]``, ``*name``, ``for v in name``, ``a, b = name``: a use a tuple allows."""
    for node in method.body_nodes():
        if isinstance(node, cst.Subscript) and _is_name(node.value, name):
            return True
        if isinstance(node, (cst.StarredElement, cst.Arg)) and _is_name(node.value, name):
            if isinstance(node, cst.StarredElement) or node.star:
                return True
        if isinstance(node, (cst.For, cst.CompFor)) and _is_name(node.iter, name):
            return True
        if isinstance(node, cst.Assign) and _is_name(node.value, name):
            if any(isinstance(target.target, (cst.Tuple, cst.List)) for target in node.targets):
                return True
    return False


def _is_len_of(call: cst.Call, name: str) -> bool:
    return (
        isinstance(call.func, cst.Name)
        and call.func.value == "len"
        and len(call.args) == 1
        and _is_name(call.args[0].value, name)
    )


def _is_name(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")
