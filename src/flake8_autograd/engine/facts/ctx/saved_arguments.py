"""The saving calls (``ctx.save_for_backward`` / ``ctx.save_for_forward``): which method makes them, and
which of their arguments are certainly not tensors, which both calls reject (None is allowed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, Optional

import libcst as cst

from ...models.custom_op_model import is_custom_op
from ...models.class_model import ClassModel, Method
from ..tensor_kinds import Kind
from ..tensors.inference import TensorInference
from ...syntax.walk import short_code


def saving_method(model: ClassModel) -> Optional[Method]:
    """The method whose ctx fills saved_tensors (forward, or setup_context), when it is certainly the only
    one: none of the class's methods may come from a base this module cannot see."""
    if model.has_unknown_base:
        return None
    if model.setup_context_style:
        forward = model.method("forward")
        if forward is not None and forward.ctx_name is not None:
            return None  # a leftover ctx in forward (AGF112): which one saves is not clear
        return model.method("setup_context")
    return model.method("forward")


@dataclass(frozen=True)
class NonTensorArgument:
    """One argument a saving call rejects: ``node``, and ``value``, how a message names it."""

    node: cst.BaseExpression
    value: str


def non_tensor_arguments(method: Method, inference: TensorInference, call_name: str) -> Iterator[NonTensorArgument]:
    """The arguments of ``ctx.<call_name>(...)`` calls in ``method`` (forward or setup_context) that are
    certainly not tensors: by what the expression is, never by a guess about an input."""
    whole = _whole_tuples(method) if method.name == "setup_context" else {}
    for call in method.facts.ctx_calls.get(call_name, []):
        for arg in call.args:
            if arg.star or arg.keyword is not None:
                continue
            if isinstance(arg.value, cst.Name) and arg.value.value in whole:
                # ``inputs`` is always a tuple; ``output`` is one when forward returns several values.
                if whole[arg.value.value] or inference.kind(arg.value) is Kind.NOT_TENSOR:
                    value = f"'{arg.value.value}'" + (" (a tuple)" if whole[arg.value.value] else "")
                    yield NonTensorArgument(arg.value, value)
            elif _certainly_not_tensor(arg.value, inference):
                code = short_code(arg.value)
                yield NonTensorArgument(arg.value, f"'{code}'" if code is not None else "a value")


def _whole_tuples(method: Method) -> Dict[str, bool]:
    """setup_context's ``inputs`` (always a tuple: True) and ``output`` (a tuple when forward returns one)."""
    signature = method.signature
    if signature is None or signature.vararg is not None:
        return {}
    names = {param.name: index == 1 for index, param in enumerate(signature.positional[1:3], start=1)}
    return {name: is_inputs for name, is_inputs in names.items() if name not in method.facts.bindings}


def _certainly_not_tensor(node: cst.BaseExpression, inference: TensorInference) -> bool:
    """Not a tensor by what the expression is, not by a guess about an input (whose caller decides)."""
    if isinstance(node, cst.Name) and node.value in inference.params:
        return False
    if inference.origin(node) == "input" and not is_custom_op(inference.model):
        # setup_context's ``inputs[i]``: forward's parameter, as unknown as in forward. An operator's
        # annotations are its schema, which the dispatcher enforces: there, what they say is certain.
        return False
    return inference.kind(node) is Kind.NOT_TENSOR
