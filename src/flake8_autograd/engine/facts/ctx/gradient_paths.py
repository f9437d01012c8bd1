"""Which branches of forward (or setup_context) autograd can follow with backward to come.

Autograd calls backward only through the graph node ``apply`` records, and it records one only when an
input requires a gradient (``ctx.needs_input_grad[i]`` is then true for that input, checked under torch
2.13). So a branch taken only when no input needs a gradient (``if not any(ctx.needs_input_grad): return
out``) ends a path backward never follows, and a store made under a test that holds whenever some input
needs one (``if any(ctx.needs_input_grad): ctx.w = w``) is made on every path backward follows.

Only tests whose meaning is certain are read: ``ctx.needs_input_grad[i]`` with a constant index,
``any(ctx.needs_input_grad)``, ``x.requires_grad`` of an input of forward (in forward itself), ``not``,
``and``, ``or``, and a local bound once to such a test. ``torch.is_grad_enabled()`` is not one: it is
false inside forward under ``apply`` whatever the inputs, so a branch on it says nothing of backward.
"""

from __future__ import annotations

from typing import FrozenSet, Optional, Tuple

import libcst as cst

from ...models.class_model import Method

# Stands for every input in the sets below (``any(ctx.needs_input_grad)``).
_EVERY = -1
# Levels of ``not``/``and``/``or`` and of locals followed: no real test comes close.
_MAX_DEPTH = 12

_Sets = Tuple[FrozenSet[int], FrozenSet[int]]
_NOTHING: _Sets = (frozenset(), frozenset())


def gradient_branch(method: Method, test: cst.BaseExpression) -> Optional[bool]:
    """True when ``test`` holds whenever an input of the Function needs a gradient (its false arm is
    followed only when none does, and backward never runs after it); False when it holds only when no
    input needs one (its true arm is such a path); None when neither is certain."""
    total = _input_count(method)
    covers, excludes = _sets(method, test, 0)
    if _all(covers, total):
        return True
    if _all(excludes, total):
        return False
    return None


def _all(inputs: FrozenSet[int], total: Optional[int]) -> bool:
    return _EVERY in inputs or (total is not None and total > 0 and inputs >= frozenset(range(total)))


def _input_count(method: Method) -> Optional[int]:
    inputs = method.owner.forward_inputs()
    return inputs.total if inputs is not None else None


def _sets(method: Method, test: cst.BaseExpression, depth: int) -> _Sets:
    """``(covers, excludes)``: the inputs ``i`` for which ``needs_input_grad[i]`` makes ``test`` true, and
    those for which ``test`` being true means ``needs_input_grad[i]`` is false."""
    if depth > _MAX_DEPTH:
        return _NOTHING
    ctx = method.ctx_name
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        covers, excludes = _sets(method, test.expression, depth + 1)
        return excludes, covers
    if isinstance(test, cst.BooleanOperation):
        left, right = _sets(method, test.left, depth + 1), _sets(method, test.right, depth + 1)
        if isinstance(test.operator, cst.Or):
            return left[0] | right[0], _both(left[1], right[1])
        return _both(left[0], right[0]), left[1] | right[1]
    if isinstance(test, cst.Subscript) and _is_needs_input_grad(test.value, ctx) and len(test.slice) == 1:
        index = test.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
            value = index.value.evaluated_value
            if isinstance(value, int) and value >= 0:
                return frozenset({value}), frozenset()
        return _NOTHING
    if (
        isinstance(test, cst.Call)
        and isinstance(test.func, cst.Name)
        and test.func.value == "any"
        and len(test.args) == 1
        and not test.args[0].star
        and _is_needs_input_grad(test.args[0].value, ctx)
    ):
        return frozenset({_EVERY}), frozenset()
    if isinstance(test, cst.Attribute) and test.attr.value == "requires_grad" and isinstance(test.value, cst.Name):
        position = _input_index(method, test.value.value)
        return (frozenset({position}), frozenset()) if position is not None else _NOTHING
    if isinstance(test, cst.Name):
        bindings = method.facts.bindings.get(test.value, [])
        if len(bindings) == 1 and bindings[0].index is None and bindings[0].value is not None:
            return _sets(method, bindings[0].value, depth + 1)  # ``wanted = any(ctx.needs_input_grad)``
    return _NOTHING


def _both(left: FrozenSet[int], right: FrozenSet[int]) -> FrozenSet[int]:
    """Inputs in both sets, ``_EVERY`` standing for all of them."""
    if _EVERY in left:
        return right
    if _EVERY in right:
        return left
    return left & right


def _input_index(method: Method, name: str) -> Optional[int]:
    """The position among the Function's inputs of forward's parameter ``name``, never rebound in forward."""
    if method.name != "forward" or name in method.facts.bindings:
        return None
    inputs = method.owner.forward_inputs()
    if inputs is None or name not in inputs.names:
        return None
    return inputs.names.index(name)


def _is_needs_input_grad(node: cst.BaseExpression, ctx: Optional[str]) -> bool:
    return (
        ctx is not None
        and isinstance(node, cst.Attribute)
        and node.attr.value == "needs_input_grad"
        and isinstance(node.value, cst.Name)
        and node.value.value == ctx
    )
