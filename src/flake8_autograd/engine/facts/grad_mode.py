"""Where gradients are off: the code a module runs under ``torch.no_grad()`` or ``torch.inference_mode()``.

Under either, ``Cls.apply`` records no graph node, so the Function's backward can never be reached from
that call. The question answered here is whether every use of a Function class in its module is such a
call (AGF113): every reference to the class is ``Cls.apply(...)`` called inside a ``with`` block that turns
gradients off, or in a function decorated to do so, with nothing turning them back on in between.

A ``def`` or ``lambda`` starts afresh: its body runs when it is called, not where it is written, so only
its own decorators count. A class body runs where it is written and keeps the mode around it.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from ..syntax.names import ImportTable, ast_dotted

# Context managers and decorators, by their resolved names, that turn gradients off (called with no
# argument) or set them (``set_grad_enabled(False)``, ``inference_mode(False)``).
_GRAD_OFF = frozenset({"torch.no_grad", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"})
_INFERENCE = frozenset(
    {"torch.inference_mode", "torch.autograd.inference_mode", "torch.autograd.grad_mode.inference_mode"}
)
_GRAD_SET = frozenset(
    {"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"}
)
_GRAD_ON = frozenset({"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"})

OFF, ON, UNKNOWN = "off", "on", "unknown"


def applied_only_without_grad(tree: ast.Module, imports: ImportTable, class_name: str) -> bool:
    """Whether ``class_name`` is used in the module, and only as ``class_name.apply(...)`` calls made where
    gradients are off (its own ``class`` statement aside)."""
    uses = _uses_by_name(tree, imports).get(class_name, [])
    return bool(uses) and all(is_applied and mode == OFF for is_applied, mode in uses)


# The last module read, with the uses of every name in it: one walk per module, not one per class (a
# module of thousands of Function classes was quadratic). The tree is held so its id cannot be reused.
_last_read: List[Tuple[ast.Module, ImportTable, Dict[str, List[Tuple[bool, str]]]]] = []


def _uses_by_name(tree: ast.Module, imports: ImportTable) -> Dict[str, List[Tuple[bool, str]]]:
    if _last_read and _last_read[0][0] is tree and _last_read[0][1] is imports:
        return _last_read[0][2]
    uses = _ModeReader(imports).read(tree)
    _last_read[:] = [(tree, imports, uses)]
    return uses


class _ModeReader:
    def __init__(self, imports: ImportTable) -> None:
        self.imports = imports

    def read(self, tree: ast.Module) -> Dict[str, List[Tuple[bool, str]]]:
        """For each name loaded in the module: (whether it is the ``Cls`` of a ``Cls.apply(...)`` call, the
        grad mode there) for each of its loads."""
        uses: Dict[str, List[Tuple[bool, str]]] = {}
        applied: Set[int] = set()  # ids of the Name nodes that are the ``Cls`` of a ``Cls.apply(...)`` call
        pending: List[Tuple[ast.AST, str]] = [(statement, ON) for statement in reversed(tree.body)]
        while pending:
            node, mode = pending.pop()
            children: List[Tuple[ast.AST, str]] = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = self._decorated_mode(node.decorator_list)
                children = [(child, mode) for child in [*node.decorator_list, node.args, node.returns] if child]
                children += [(statement, inner) for statement in node.body]
            elif isinstance(node, ast.Lambda):
                children = [(node.args, mode), (node.body, ON)]
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                inner = mode
                for item in node.items:
                    inner = self._entered(item.context_expr, inner)
                children = [(item, mode) for item in node.items] + [(statement, inner) for statement in node.body]
            else:
                if isinstance(node, ast.Call) and _is_apply(node.func):
                    applied.add(id(node.func.value))  # type: ignore[attr-defined]
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    uses.setdefault(node.id, []).append((id(node) in applied, mode))
                children = [(child, mode) for child in ast.iter_child_nodes(node)]
            pending.extend(reversed(children))
        return uses

    def _entered(self, manager: ast.expr, mode: str) -> str:
        """The grad mode inside ``with manager:`` entered in ``mode``."""
        if not isinstance(manager, ast.Call):
            return UNKNOWN if mode == OFF else mode  # a manager held in a variable may do anything
        name = self._resolved(manager.func)
        if name in _GRAD_OFF and not manager.args and not manager.keywords:
            return OFF
        if name in _INFERENCE or name in _GRAD_SET:
            flag = _only_flag(manager)
            if name in _INFERENCE:
                return OFF if flag in (None, True) else ON if flag is False else UNKNOWN
            return OFF if flag is False else ON if flag is True else UNKNOWN
        if name in _GRAD_ON:
            return ON
        if name is not None and name.startswith("torch."):
            return mode  # torch's other managers (autocast, streams, devices, saved-tensor hooks) keep the mode
        return UNKNOWN if mode == OFF else mode  # a manager of its own may turn gradients back on

    def _decorated_mode(self, decorators: List[ast.expr]) -> str:
        """The grad mode a decorated function's body runs in: off when a decorator turns gradients off."""
        for decorator in decorators:
            if self._resolved(decorator) in _GRAD_OFF | _INFERENCE:
                return OFF  # ``@torch.no_grad`` (bare)
            if isinstance(decorator, ast.Call) and self._entered(decorator, ON) == OFF:
                return OFF
        return ON

    def _resolved(self, node: ast.expr) -> Optional[str]:
        dotted = ast_dotted(node)
        if dotted is None:
            return None
        return self.imports.resolve_dotted(dotted)


def _is_apply(func: ast.expr) -> bool:
    return isinstance(func, ast.Attribute) and func.attr == "apply" and isinstance(func.value, ast.Name)


def _only_flag(call: ast.Call) -> Optional[object]:
    """The one literal argument of ``call`` (``None`` when it has none; a sentinel when it is not a literal)."""
    values = [*call.args, *(keyword.value for keyword in call.keywords)]
    if not values:
        return None
    if len(values) == 1 and isinstance(values[0], ast.Constant) and isinstance(values[0].value, bool):
        return values[0].value
    return _NOT_LITERAL


_NOT_LITERAL = object()
