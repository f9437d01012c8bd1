"""Whether a Function's forward can run on its own class at all, or only on a subclass that fills it in.

An abstract base keeps the shared shape of a family of Functions: its forward dispatches to a hook that
each subclass defines (``return cls._kernel(ctx, x)``, ``return self.impl(x)``) or raises
``NotImplementedError``. Applied itself, such a forward raises before any output exists, so autograd
never records a node for the class and never looks for its backward; the subclasses are what runs.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..models.class_model import ClassModel, Method

# What ``torch.autograd.Function`` (and the ctx it inherits from) already has: a call of one of these is
# no call of a missing hook.
FUNCTION_ATTRIBUTES = frozenset(
    "apply backward forward jvp vjp vmap setup_context generate_vmap_rule mark_dirty mark_non_differentiable"
    " mark_shared_storage materialize_grads save_for_backward save_for_forward saved_tensors saved_variables"
    " set_materialize_grads needs_input_grad dirty_tensors non_differentiable to_save metadata name"
    " next_functions register_hook register_prehook requires_grad".split()
)


def forward_is_abstract(model: ClassModel) -> bool:
    """Forward cannot give a value on ``model`` itself: every way out of it raises, or returns the result
    of calling a hook on its class or instance (``cls.hook(...)``, ``self.hook(...)``, directly or
    through a local name bound to nothing else) that neither ``model`` nor any of its bases defines.

    False whenever a base is out of sight (it may define the hook), and for a forward that can fall off
    its end or yields: only what is certain counts."""
    forward = model.method("forward")
    if forward is None or forward.node is None or forward.owner is not model or model.has_unknown_base:
        return False
    facts = forward.facts
    if facts.yields or _may_fall_off(forward.node):
        return False
    if not facts.returns:
        return True  # every way out raises (``raise NotImplementedError``)
    receiver = _receiver(forward)
    if receiver is None:
        return False
    return all(
        ret.value is not None and _calls_missing_hook(ret.value, receiver, model, forward)
        for ret in facts.returns
    )


def _receiver(forward: Method) -> Optional[str]:
    """The name forward's class (``cls`` of a classmethod) or instance (``self`` of a legacy method) has."""
    node = forward.node
    if node is None or forward.is_static or not node.params.params:
        return None
    return node.params.params[0].name.value


def _may_fall_off(node: cst.FunctionDef) -> bool:
    """Whether the body may end without a ``return`` or ``raise`` as its last statement."""
    body = node.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return True
    last = body.body[-1]
    if not isinstance(last, cst.SimpleStatementLine) or not last.body:
        return True
    return not isinstance(last.body[-1], (cst.Return, cst.Raise))


def _calls_missing_hook(value: cst.BaseExpression, receiver: str, model: ClassModel, forward: Method) -> bool:
    if isinstance(value, cst.Name) and value.value != receiver:
        bindings = forward.facts.bindings.get(value.value) or []
        return bool(bindings) and all(
            binding.value is not None and binding.index is None and isinstance(binding.value, cst.Call)
            and _is_missing_hook_call(binding.value, receiver, model)
            for binding in bindings
        )
    return isinstance(value, cst.Call) and _is_missing_hook_call(value, receiver, model)


def _is_missing_hook_call(call: cst.Call, receiver: str, model: ClassModel) -> bool:
    func = call.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == receiver):
        return False
    hook = func.attr.value
    if hook.startswith("__") or hook in FUNCTION_ATTRIBUTES:
        return False
    return model.method(hook) is None and model.class_attribute(hook) is None
