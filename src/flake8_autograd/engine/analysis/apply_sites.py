"""The module's calls that certainly call one Function class's ``apply``, found by Python's scoping rules.

``Cls.apply(...)`` counts where ``Cls`` is bound to the class statement and to nothing else; a call
``fn(...)`` counts where ``fn``'s only binding is ``fn = Cls.apply`` with ``Cls`` so bound. A name bound
twice (``fn`` rebound to a wrapper ``def``), a parameter, ``mod.Cls.apply`` or any other spelling is not
followed: what it calls is unknown.
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from .module_analysis import Analysis
from ..discovery.functions import ClassSite
from ..syntax.scopes import ModuleScopes, Scope


@dataclass(frozen=True)
class ApplySite:
    """One call of a class's ``apply``: how many positional arguments it passes and what else."""

    call: ast.Call
    positional: int  # positional arguments written out (a ``*args`` counts as none)
    starred: bool  # a ``*args`` among them: the count is unknown
    keywords: Tuple[Optional[str], ...]  # keyword names; None for ``**options``


_MEMO: "weakref.WeakKeyDictionary[Analysis, Dict[ast.ClassDef, List[ApplySite]]]" = weakref.WeakKeyDictionary()


def apply_sites(analysis: Analysis, site: ClassSite) -> List[ApplySite]:
    """The calls of ``site``'s ``apply`` in the module, in the order of the module."""
    if not analysis.apply_calls(site.name):
        return []  # the loose reading finds no call of the name: there is none to resolve
    found = _MEMO.get(analysis)
    if found is None:
        found = _read(analysis)
        _MEMO[analysis] = found
    return found.get(site.node, [])


def _read(analysis: Analysis) -> Dict[ast.ClassDef, List[ApplySite]]:
    classes = {site.node for site in analysis.discovery.function_classes}
    scopes = analysis.module_scopes()
    aliases: Dict[int, Tuple[ast.Attribute, Scope]] = {}  # id of ``fn`` in ``fn = Cls.apply`` -> its value
    calls: List[Tuple[ast.Call, Scope]] = []
    for node, scope in scopes.found:
        if not _wanted(node):
            continue
        if isinstance(node, ast.Assign):
            assert isinstance(node.value, ast.Attribute)
            aliases[id(node.targets[0])] = (node.value, scope)
        elif isinstance(node, ast.Call):
            calls.append((node, scope))
    sites: Dict[ast.ClassDef, List[ApplySite]] = {}
    for call, scope in calls:
        func = call.func
        if isinstance(func, ast.Name):
            binding = _sole_binding(scopes, scope, func.id)
            alias = aliases.get(id(binding)) if binding is not None else None
            if alias is None:
                continue
            func, scope = alias
        assert isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
        statement = _sole_binding(scopes, scope, func.value.id)
        if isinstance(statement, ast.ClassDef) and statement in classes:
            sites.setdefault(statement, []).append(_site(call))
    return sites


def _wanted(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) or _is_apply(node.func)
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and _is_apply(node.value)
    )


def _is_apply(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "apply" and isinstance(node.value, ast.Name)


def _sole_binding(scopes: ModuleScopes, scope: Scope, name: str) -> Optional[ast.AST]:
    return scopes.sole_binding(scopes.resolve(scope, name), name)


def _site(call: ast.Call) -> ApplySite:
    starred = any(isinstance(arg, ast.Starred) for arg in call.args)
    positional = sum(1 for arg in call.args if not isinstance(arg, ast.Starred))
    return ApplySite(call, positional, starred, tuple(keyword.arg for keyword in call.keywords))
