"""Per-module facts shared by all rules: imports, ``apply`` call sites, cached inference."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from .counting import CountedReturn, counted_returns
from .discovery import Discovery
from .model import Method
from .names import ImportTable, ast_dotted
from .tensors import TensorInference


@dataclass(frozen=True)
class ApplyCall:
    """``Cls.apply(a, b)`` (or a call through ``fn = Cls.apply``) somewhere in the module."""

    line: int
    positional: Optional[int]  # None when a ``*args`` or keyword makes the count unknown


class Analysis:
    def __init__(self, tree: ast.Module, discovery: Discovery) -> None:
        self.tree = tree
        self.discovery = discovery
        self.imports: ImportTable = discovery.imports
        self._apply_calls: Optional[Dict[str, List[ApplyCall]]] = None
        self._inference: Dict[Tuple[int, str], TensorInference] = {}
        self._returns: Dict[int, List[CountedReturn]] = {}

    def inference(self, method: Method, role: Optional[str] = None) -> TensorInference:
        key = (id(method), role or method.name)
        found = self._inference.get(key)
        if found is None:
            found = TensorInference(method, method.owner, self.imports, role or method.name)
            self._inference[key] = found
        return found

    def returns(self, method: Method) -> List[CountedReturn]:
        found = self._returns.get(id(method))
        if found is None:
            found = counted_returns(method, self.inference(method))
            self._returns[id(method)] = found
        return found

    def apply_calls(self, class_name: str) -> List[ApplyCall]:
        if self._apply_calls is None:
            self._apply_calls = self._collect_apply_calls()
        return self._apply_calls.get(class_name, [])

    def _collect_apply_calls(self) -> Dict[str, List[ApplyCall]]:
        """One pass over the module's expressions, run only when a rule needs call sites."""
        calls: Dict[str, List[ApplyCall]] = {}
        aliases: Dict[str, str] = {}  # fn = Cls.apply
        nodes = list(ast.walk(self.tree))
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                owner = _apply_owner(node.value)
                if owner is not None:
                    aliases[node.targets[0].id] = owner
        for node in nodes:
            if not isinstance(node, ast.Call):
                continue
            owner = _apply_owner(node.func)
            if owner is None and isinstance(node.func, ast.Name):
                owner = aliases.get(node.func.id)
            if owner is None:
                continue
            unknown = node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args)
            calls.setdefault(owner, []).append(ApplyCall(node.lineno, None if unknown else len(node.args)))
        return calls


def _apply_owner(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Attribute) and node.attr == "apply":
        owner = ast_dotted(node.value)
        if owner is not None:
            return owner.rsplit(".", 1)[-1]
    return None
