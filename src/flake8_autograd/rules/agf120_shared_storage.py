"""AGF120: a per-call tensor kept on the class or in a module global for backward, instead of on ctx."""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterator, List, Optional, Set

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.models.class_model import ClassModel, Method
from ..engine.facts.module_facts import statement_names
from ..engine.facts.tensor_kinds import Kind
from ..engine.facts.tensors.inference import TensorInference
from ..engine.syntax.walk import short_code
from .base import Finding, Rule


class SharedStorageRule(Rule):
    code = "AGF120"
    name = "per-call tensor kept on the class or in a global"
    message = "{method} keeps tensor {value} in shared {place}; use ctx.save_for_backward"
    invalid = (
        """
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor, w: torch.Tensor):
                Scale.saved_w = w
                return x * w

            @staticmethod
            def backward(ctx, grad):
                return grad * Scale.saved_w, None
        """,
    )
    valid = (
        """
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                Scale.calls = 1
                ctx.save_for_backward(w)
                return x * w

            @staticmethod
            def backward(ctx, grad):
                (w,) = ctx.saved_tensors
                return grad * w, None
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        method = model.own_methods.get("setup_context" if model.setup_context_style else "forward")
        backward = model.own_methods.get("backward")
        if method is None or method.node is None or backward is None or backward.node is None:
            return
        inference = analysis.inference(method)
        backward_reads = _shared_reads(backward, model, analysis)
        for store in _shared_stores(method, model, analysis):
            if store.key not in backward_reads or not _per_call_tensor(store.value, method, inference):
                continue
            yield self.report(
                method, store.target, method=method.qualname, value=_quote(store.value), place=store.place,
            )


@dataclass(frozen=True)
class _SharedStore:
    """``Cls.attr = v``, ``global g; g = v`` or ``CACHE[k] = v`` (CACHE a module-level dict)."""

    target: cst.BaseExpression
    value: cst.BaseExpression
    key: str  # what backward must read for the store to matter: "Cls.attr", "g", "CACHE[]"
    place: str  # how the message names where it is kept


def _shared_stores(method: Method, model: ClassModel, analysis: Analysis) -> Iterator[_SharedStore]:
    declared_global = _declared_global(method)
    dicts = _module_dicts(analysis)
    local = set(method.facts.bindings) | _parameters(method)
    for node in method.nodes_of(cst.Assign):
        if not isinstance(node, cst.Assign) or isinstance(node.value, (cst.Tuple, cst.List)):
            continue
        for assign_target in node.targets:
            target = assign_target.target
            key = _shared_key(target, model, local, declared_global, dicts)
            if key is None:
                continue
            place = f"class attribute {key.partition('.')[2]}" if "." in key else (
                f"module dict {key[:-2]}" if key.endswith("[]") else f"global {key}"
            )
            yield _SharedStore(target, node.value, key, place)


def _shared_key(
    target: cst.BaseExpression, model: ClassModel, local: Set[str], declared_global: Set[str], dicts: FrozenSet[str]
) -> Optional[str]:
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
        owner = target.value.value
        if owner == model.name and owner not in local:
            return f"{owner}.{target.attr.value}"
        return None
    if isinstance(target, cst.Name) and target.value in declared_global:
        return target.value
    if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
        name = target.value.value
        if name in dicts and (name not in local or name in declared_global):
            return f"{name}[]"
    return None


def _shared_reads(method: Method, model: ClassModel, analysis: Analysis) -> Set[str]:
    """The shared places ``method`` loads: ``Cls.attr``, a global name, a module dict subscripted."""
    local = set(method.facts.bindings) | _parameters(method)
    declared_global = _declared_global(method)
    dicts = _module_dicts(analysis)
    found: Set[str] = set()
    for node in method.nodes_of(cst.Attribute, cst.Name, cst.Subscript, cst.Call):
        kind = type(node)  # only these exact classes: no isinstance through libcst's ABCs
        if kind is cst.Attribute and isinstance(node.value, cst.Name):  # type: ignore[attr-defined]
            assert isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
            if node.value.value == model.name and model.name not in local:
                found.add(f"{model.name}.{node.attr.value}")
        elif kind is cst.Name:
            assert isinstance(node, cst.Name)
            if node.value not in local or node.value in declared_global:
                found.add(node.value)  # a free name is the module's
        elif kind is cst.Subscript:
            assert isinstance(node, cst.Subscript)
            if isinstance(node.value, cst.Name) and node.value.value in dicts:
                found.add(f"{node.value.value}[]")
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            owner = node.func.value  # CACHE.get(k), CACHE.pop(k)
            if isinstance(owner, cst.Name) and owner.value in dicts and node.func.attr.value in ("get", "pop"):
                found.add(f"{owner.value}[]")
    return found


def _per_call_tensor(value: cst.BaseExpression, method: Method, inference: TensorInference) -> bool:
    """Certainly a tensor, and made from this call's own values (an input, the output, a local), not a
    constant built the same way on every call."""
    if inference.kind(value) is not Kind.TENSOR:
        return False
    own = (set(method.facts.bindings) | _parameters(method)) - {method.ctx_name or ""}
    return any(name.value in own for name in _names_in(value))


def _names_in(node: cst.CSTNode) -> List[cst.Name]:
    names: List[cst.Name] = []

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            names.append(name)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)  # ``x.shape``: x, not the attribute's own name
            return False

    node.visit(_Names())
    return names


def _declared_global(method: Method) -> Set[str]:
    return {
        item.name.value for node in method.nodes_of(cst.Global) if isinstance(node, cst.Global) for item in node.names
    }


def _parameters(method: Method) -> Set[str]:
    signature = method.signature
    if signature is None:
        return set()
    return {param.name for param in signature.positional + signature.keyword_only}


# The module dicts of each module, read once per module (every class asks twice).
_MODULE_DICTS: "weakref.WeakKeyDictionary[Analysis, FrozenSet[str]]" = weakref.WeakKeyDictionary()


def _module_dicts(analysis: Analysis) -> FrozenSet[str]:
    """Names the module binds once, at its top level, to a dict (``{}``, ``dict()``, a dict display)."""
    found = _MODULE_DICTS.get(analysis)
    if found is None:
        found = _MODULE_DICTS[analysis] = _read_module_dicts(analysis.tree)
    return found


def _read_module_dicts(tree: ast.Module) -> FrozenSet[str]:
    bound: Dict[str, List[Optional[ast.expr]]] = {}
    for statement in tree.body:
        value: Optional[ast.expr] = None
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            value = statement.value
        for name in statement_names(statement):  # any other binding counts, with no value
            bound.setdefault(name, []).append(value)
    return frozenset(name for name, values in bound.items() if len(values) == 1 and _is_dict(values[0]))


def _is_dict(value: Optional[ast.expr]) -> bool:
    """A dict display, or ``dict()`` / ``OrderedDict()`` called with no arguments."""
    if isinstance(value, ast.Dict):
        return True
    return (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
        and value.func.id in ("dict", "OrderedDict") and not value.args and not value.keywords
    )


def _quote(node: cst.BaseExpression) -> str:
    code = short_code(node)
    return f"'{code}'" if code is not None else "value"
