"""Which binding a bare name refers to, by Python's scoping rules, read from flake8's ``ast`` tree.

One walk over the module records, for every scope (the module, each class body, function, lambda and
comprehension), the names bound in it and its ``global``/``nonlocal`` declarations. A name read in some
scope is then resolved as the compiler does: a name bound anywhere in a function is local to it unless
declared ``global`` (or ``nonlocal``); a free name is looked up in the enclosing functions and the type
parameters of an enclosing generic class or function (``class C[T]``), never in an enclosing class
body, and last in the module.

The walk keeps its own stack (no recursion), so deep expressions cost no Python stack.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

MODULE, CLASS, FUNCTION, COMPREHENSION = "module", "class", "function", "comprehension"
# The scope of a generic class's or function's type parameters (``class C[T]``, 3.12 on), between it and
# the scope it is defined in: unlike a class body, it is seen from the methods of the class.
TYPE_PARAMETERS = "type parameters"

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
# Patterns that bind a name (3.10 on): ``case x``, ``case [*rest]``; ``case {**rest}`` is read apart.
_CAPTURES: Tuple[type, ...] = tuple(getattr(ast, name) for name in ("MatchAs", "MatchStar") if hasattr(ast, name))
_MAPPING_PATTERN: Tuple[type, ...] = (ast.MatchMapping,) if hasattr(ast, "MatchMapping") else ()


@dataclass(eq=False)
class Scope:
    """One scope: the names written as bound in it, and what it declares ``global`` or ``nonlocal``."""

    node: ast.AST
    kind: str  # MODULE, CLASS, FUNCTION (lambdas too), COMPREHENSION or TYPE_PARAMETERS
    parent: Optional["Scope"]
    written: Dict[str, List[ast.AST]] = field(default_factory=dict)  # name -> the nodes binding it here
    declared_global: Set[str] = field(default_factory=set)
    declared_nonlocal: Set[str] = field(default_factory=set)
    star_import: bool = False  # ``from m import *``: any name may be rebound

    def bind(self, name: str, node: ast.AST) -> None:
        self.written.setdefault(name, []).append(node)


class ModuleScopes:
    """The scopes of one module, and its nodes of the ``wanted`` classes, each with the scope it is read in."""

    def __init__(self, tree: ast.Module, wanted: FrozenSet[type]) -> None:
        self.module = Scope(tree, MODULE, None)
        self.found: List[Tuple[ast.AST, Scope]] = []
        self._bindings: Optional[Dict[Tuple[int, str], List[ast.AST]]] = None
        self._walk(tree, wanted)

    # -- resolving -------------------------------------------------------------------------------
    def resolve(self, scope: Scope, name: str) -> Scope:
        """The scope whose binding of ``name`` a read in ``scope`` gets (the module when no other binds it)."""
        if scope.kind == MODULE or name in scope.declared_global:
            return self.module
        if name in scope.declared_nonlocal:
            return self._enclosing_binder(scope.parent, name)
        if name in scope.written:
            return scope
        return self._enclosing_binder(scope.parent, name)

    def sole_binding(self, scope: Scope, name: str) -> Optional[ast.AST]:
        """The one statement that binds ``name`` in ``scope`` (wherever it is written: a function's
        ``global`` assignment binds in the module); None when there are several, none, or who knows."""
        if scope.star_import:
            return None
        binders = self._all_bindings().get((id(scope), name), [])
        return binders[0] if len(binders) == 1 else None

    def _enclosing_binder(self, scope: Optional[Scope], name: str) -> Scope:
        """Where a free ``name`` is found, looking outward from ``scope`` past class bodies."""
        while scope is not None and scope.kind != MODULE:
            if scope.kind != CLASS:
                if name in scope.declared_global:
                    return self.module  # a ``global`` in an enclosing function makes the free name global too
                if name in scope.written and name not in scope.declared_nonlocal:
                    return scope
            scope = scope.parent
        return self.module

    def _binding_scope(self, scope: Scope, name: str) -> Scope:
        """The scope a binding of ``name`` written in ``scope`` lands in."""
        if name in scope.declared_global:
            return self.module
        if name in scope.declared_nonlocal:
            return self._enclosing_binder(scope.parent, name)
        return scope

    def _all_bindings(self) -> Dict[Tuple[int, str], List[ast.AST]]:
        """(id of a scope, name) -> every node that binds the name in that scope; built once, after the walk
        (a declaration anywhere in a scope decides where all its bindings of that name land)."""
        if self._bindings is None:
            bindings: Dict[Tuple[int, str], List[ast.AST]] = {}
            for scope in self._scopes:
                for name, nodes in scope.written.items():
                    target = self._binding_scope(scope, name)
                    bindings.setdefault((id(target), name), []).extend(nodes)
            self._bindings = bindings
        return self._bindings

    # -- the walk --------------------------------------------------------------------------------
    def _walk(self, tree: ast.Module, wanted: FrozenSet[type]) -> None:
        self._scopes: List[Scope] = [self.module]
        pending: List[Tuple[ast.AST, Scope]] = [(statement, self.module) for statement in reversed(tree.body)]

        def push(nodes: Iterable[Optional[ast.AST]], scope: Scope) -> None:
            pending.extend((node, scope) for node in reversed(list(nodes)) if node is not None)

        while pending:
            node, scope = pending.pop()
            kind = type(node)
            if kind in wanted:
                self.found.append((node, scope))
            if kind not in _BINDING_TYPES:
                # Most nodes bind nothing and open no scope: queue their children, in field order.
                for child in reversed(_ast_children(node)):
                    pending.append((child, scope))
                continue
            if isinstance(node, ast.Name):
                if not isinstance(node.ctx, ast.Load):
                    scope.bind(node.id, node)  # assignment, for/with/comprehension target, del
            elif isinstance(node, _FUNCTIONS) or isinstance(node, ast.Lambda):
                if not isinstance(node, ast.Lambda):
                    scope.bind(node.name, node)
                typed = self._type_parameters(node, scope)
                inner = self._open(node, FUNCTION, typed)
                arguments = node.args
                # Decorators and defaults are evaluated where the function is defined; annotations there
                # too, or in the scope of its type parameters when it has some.
                outside: List[Optional[ast.AST]] = []
                annotations: List[Optional[ast.AST]] = []
                if not isinstance(node, ast.Lambda):
                    outside.extend(node.decorator_list)
                outside.extend(arguments.defaults)
                outside.extend(arguments.kw_defaults)
                for argument in _arguments(arguments):
                    inner.bind(argument.arg, argument)
                    annotations.append(argument.annotation)
                if not isinstance(node, ast.Lambda):
                    annotations.append(node.returns)
                    body: List[ast.AST] = list(node.body)
                else:
                    body = [node.body]
                push(body, inner)
                push(annotations, typed)
                push(outside, scope)
            elif isinstance(node, ast.ClassDef):
                scope.bind(node.name, node)
                typed = self._type_parameters(node, scope)
                inner = self._open(node, CLASS, typed)
                push(node.body, inner)
                push([*node.bases, *node.keywords], typed)  # ``class C[T](Base[T])``
                push(node.decorator_list, scope)
            elif isinstance(node, _COMPREHENSIONS):
                self._comprehension(node, scope, push)
            elif isinstance(node, ast.NamedExpr):
                # ``(x := ...)`` in a comprehension binds in the scope around the comprehension.
                binder = scope
                while binder.kind == COMPREHENSION and binder.parent is not None:
                    binder = binder.parent
                if isinstance(node.target, ast.Name):
                    binder.bind(node.target.id, node)
                push([node.value], scope)
            elif isinstance(node, ast.Global):
                scope.declared_global.update(node.names)
            elif isinstance(node, ast.Nonlocal):
                scope.declared_nonlocal.update(node.names)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.name == "*":
                        scope.star_import = True
                    else:
                        scope.bind(alias.asname or alias.name.split(".")[0], node)
            else:
                if isinstance(node, ast.ExceptHandler) and node.name:
                    scope.bind(node.name, node)
                elif _CAPTURES and isinstance(node, _CAPTURES) and getattr(node, "name", None):
                    scope.bind(getattr(node, "name"), node)
                elif _MAPPING_PATTERN and isinstance(node, _MAPPING_PATTERN) and getattr(node, "rest", None):
                    scope.bind(getattr(node, "rest"), node)
                push(ast.iter_child_nodes(node), scope)

    def _open(self, node: ast.AST, kind: str, parent: Scope) -> Scope:
        scope = Scope(node, kind, parent)
        self._scopes.append(scope)
        return scope

    def _type_parameters(self, node: ast.AST, scope: Scope) -> Scope:
        """The scope of the type parameters of a generic class or function (``class C[T]``, 3.12 on), around
        its own scope; ``scope`` itself when it has none."""
        parameters = getattr(node, "type_params", None)
        if not parameters:
            return scope
        typed = self._open(node, TYPE_PARAMETERS, scope)
        for parameter in parameters:
            name = getattr(parameter, "name", None)
            if isinstance(name, str):
                typed.bind(name, parameter)
        return typed

    def _comprehension(
        self, node: ast.AST, scope: Scope, push: Callable[[Iterable[Optional[ast.AST]], Scope], None]
    ) -> None:
        generators: List[ast.comprehension] = getattr(node, "generators")
        inner = self._open(node, COMPREHENSION, scope)
        inside: List[Optional[ast.AST]] = []
        for index, generator in enumerate(generators):
            inside.append(generator.target)
            if index:
                inside.append(generator.iter)  # the first iterable is evaluated outside
            inside.extend(generator.ifs)
        if isinstance(node, ast.DictComp):
            inside.extend([node.key, node.value])
        else:
            inside.append(getattr(node, "elt"))
        push(inside, inner)
        if generators:
            push([generators[0].iter], scope)


# Every node class the walk reads for more than its children: what binds a name, opens a scope or
# declares one (``global``). An ``ast.Name`` in a load only reads, but the walk looks at its ``ctx``.
_BINDING_TYPES = frozenset(
    {ast.Name, *_FUNCTIONS, ast.Lambda, ast.ClassDef, *_COMPREHENSIONS, ast.NamedExpr, ast.Global, ast.Nonlocal,
     ast.Import, ast.ImportFrom, ast.ExceptHandler, *_CAPTURES, *_MAPPING_PATTERN}
)
_FIELDS_BY_TYPE: Dict[type, Tuple[str, ...]] = {}


def _ast_children(node: ast.AST) -> List[ast.AST]:
    """``list(ast.iter_child_nodes(node))`` without the children that hold nothing: expression contexts and
    operators (``Load``, ``Add``), which have no fields, bind nothing and hold no node."""
    kind = type(node)
    fields = _FIELDS_BY_TYPE.get(kind)
    if fields is None:
        fields = _FIELDS_BY_TYPE[kind] = tuple(kind._fields)
    found: List[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if type(value) is list:
            found.extend([item for item in value if isinstance(item, ast.AST) and item._fields])
        elif isinstance(value, ast.AST) and value._fields:
            found.append(value)
    return found


def _arguments(arguments: ast.arguments) -> List[ast.arg]:
    found = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    found.extend(argument for argument in (arguments.vararg, arguments.kwarg) if argument is not None)
    return found
