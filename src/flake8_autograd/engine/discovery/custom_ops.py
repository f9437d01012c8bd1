"""Finding the custom operators of a module and their registrations, from flake8's ``ast`` tree.

``torch.library.custom_op`` turns a function into an operator; ``register_autograd`` gives it a
backward and a setup_context, ``register_fake`` a fake (meta) implementation. The contract of the
autograd pair is a Function's, with the op's annotated signature in place of forward's: so a
registration found here becomes a model the Function rules can read (:mod:`.custom_op_model`).

Only statements are walked, as in :mod:`.discovery`, and only in a module whose text names one of the
entry points; every function named must be a ``def`` bound once at the module's top level, or it is
left unknown (None), never guessed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .functions import iter_statements
from ..syntax.names import ImportTable, ast_dotted

# The decorators (or plain calls) that make an operator, as torch spells them.
CUSTOM_OP_FACTORIES = frozenset({"torch.library.custom_op", "torch._library.custom_ops.custom_op"})
# Module-level functions that register for an operator named by its "namespace::name" string.
_LIBRARY_REGISTER_AUTOGRAD = frozenset({"torch.library.register_autograd"})
_LIBRARY_REGISTER_FAKE = frozenset({"torch.library.register_fake", "torch.library.impl_abstract"})
# Words a module's text must hold for any of this to be worth a walk.
TEXT_MARKERS = ("custom_op",)


@dataclass
class Registration:
    """One ``register_autograd``: the call, and the functions it names (None: not a same-module def)."""

    call: ast.Call
    backward: Optional[ast.FunctionDef]
    setup_context: Optional[ast.FunctionDef]
    backward_named: bool  # a backward argument is given (a lambda or an import when ``backward`` is None)
    setup_context_named: bool


@dataclass
class CustomOpSite:
    """An operator made by ``custom_op`` from a function of this module, and what is registered for it."""

    function: ast.FunctionDef  # the implementation, whose annotated signature is the op's
    binding: str  # the module-level name the op is bound to
    factory: ast.Call  # the ``custom_op(...)`` call: a decorator, or the value of an assignment
    qualname: Optional[str]  # "namespace::name" when written as a literal
    mutates_args: Optional[Tuple[str, ...]]  # None: not a literal tuple/list of names ("unknown" is kept apart)
    mutates_unknown: bool  # ``mutates_args="unknown"``: the op may mutate anything
    registrations: List[Registration] = field(default_factory=list)
    fakes: List[ast.FunctionDef] = field(default_factory=list)
    unresolved_fakes: int = 0  # ``register_fake`` of something that is not a same-module def

    @property
    def name(self) -> str:
        return self.binding


def might_define_custom_op(text: str) -> bool:
    return any(marker in text for marker in TEXT_MARKERS)


class CustomOpDiscovery:
    """The custom ops of one module, with their autograd and fake registrations."""

    def __init__(self, tree: ast.Module, imports: ImportTable) -> None:
        self.imports = imports
        self.ops: List[CustomOpSite] = []
        # Statements at module level, inside ``if``/``try``/``with`` blocks too (``if HAS_TRITON:``), not in
        # functions or classes: where an operator and its registrations are made.
        statements = [
            node for node, place in iter_statements(tree.body) if not place.nested and isinstance(node, ast.stmt)
        ]
        bound = _binding_counts(statements)
        self._defs = {
            node.name: node for node in statements if isinstance(node, ast.FunctionDef) and bound.get(node.name) == 1
        }
        by_binding: Dict[str, CustomOpSite] = {}
        by_qualname: Dict[str, CustomOpSite] = {}
        for node in statements:
            site = self._op_of(node)
            if site is not None and bound.get(site.binding) == 1:  # bound twice: which op is meant is unknown
                self.ops.append(site)
                by_binding[site.binding] = site
                if site.qualname is not None:
                    by_qualname[site.qualname] = site
        for node in statements if self.ops else ():
            self._read_statement(node, by_binding, by_qualname)

    def _read_statement(
        self, node: ast.AST, by_binding: Dict[str, CustomOpSite], by_qualname: Dict[str, CustomOpSite]
    ) -> None:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self._read_registration(node.value, by_binding, by_qualname)
        elif isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                self._read_fake_decorator(node, decorator, by_binding, by_qualname)

    def _resolved(self, node: ast.expr) -> Optional[str]:
        dotted = ast_dotted(node)
        return self.imports.resolve_dotted(dotted) if dotted is not None else None

    def _op_of(self, node: ast.stmt) -> Optional[CustomOpSite]:
        """``@custom_op("ns::f", mutates_args=())`` on a def, or ``f = custom_op("ns::f", impl, ...)``."""
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and self._resolved(decorator.func) in CUSTOM_OP_FACTORIES:
                    if len(node.decorator_list) != 1:
                        return None  # another decorator wraps the op or the function: not what torch sees
                    return _site(node, node.name, decorator)
            return None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            call = node.value
            if isinstance(call, ast.Call) and self._resolved(call.func) in CUSTOM_OP_FACTORIES:
                function = _argument(call, 1, "fn")
                if isinstance(function, ast.Name) and function.id in self._defs:
                    return _site(self._defs[function.id], node.targets[0].id, call)
        return None

    def _read_registration(
        self, call: ast.Call, by_binding: Dict[str, CustomOpSite], by_qualname: Dict[str, CustomOpSite]
    ) -> None:
        site: Optional[CustomOpSite] = None
        first_function = 0
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in by_binding:
            site = by_binding[func.value.id]
            method = func.attr
        else:
            resolved = self._resolved(func)
            if resolved in _LIBRARY_REGISTER_AUTOGRAD:
                method = "register_autograd"
            elif resolved in _LIBRARY_REGISTER_FAKE:
                method = "register_fake"
            else:
                return
            target = _argument(call, 0, "op")
            site = self._site_named(target, by_binding, by_qualname)
            first_function = 1
        if site is None:
            return
        if method == "register_autograd":
            backward = _argument(call, first_function, "backward")
            setup = _argument(call, first_function + 1, "setup_context")
            site.registrations.append(
                Registration(call, self._def_named(backward), self._def_named(setup), backward is not None,
                             setup is not None)
            )
        elif method == "register_fake":
            fake = _argument(call, first_function, "func")
            if fake is not None:
                found = self._def_named(fake)
                if found is not None:
                    site.fakes.append(found)
                else:
                    site.unresolved_fakes += 1

    def _read_fake_decorator(
        self, node: ast.FunctionDef, decorator: ast.expr, by_binding: Dict[str, CustomOpSite],
        by_qualname: Dict[str, CustomOpSite],
    ) -> None:
        """``@op.register_fake`` or ``@torch.library.register_fake("ns::op")`` on a def."""
        if isinstance(decorator, ast.Attribute) and decorator.attr == "register_fake":
            if isinstance(decorator.value, ast.Name) and decorator.value.id in by_binding:
                by_binding[decorator.value.id].fakes.append(node)
            return
        if isinstance(decorator, ast.Call) and self._resolved(decorator.func) in _LIBRARY_REGISTER_FAKE:
            if len(decorator.args) + len(decorator.keywords) == 1:
                site = self._site_named(_argument(decorator, 0, "op"), by_binding, by_qualname)
                if site is not None:
                    site.fakes.append(node)

    def _site_named(
        self, target: Optional[ast.expr], by_binding: Dict[str, CustomOpSite], by_qualname: Dict[str, CustomOpSite]
    ) -> Optional[CustomOpSite]:
        if isinstance(target, ast.Constant) and isinstance(target.value, str):
            return by_qualname.get(target.value)
        if isinstance(target, ast.Name):
            return by_binding.get(target.id)
        return None

    def _def_named(self, node: Optional[ast.expr]) -> Optional[ast.FunctionDef]:
        if isinstance(node, ast.Name):
            return self._defs.get(node.id)
        return None


def _site(function: ast.FunctionDef, binding: str, factory: ast.Call) -> CustomOpSite:
    name = _argument(factory, 0, "name")
    qualname = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None
    mutates = next((keyword.value for keyword in factory.keywords if keyword.arg == "mutates_args"), None)
    unknown = isinstance(mutates, ast.Constant) and mutates.value == "unknown"
    names: Optional[Tuple[str, ...]] = None
    if isinstance(mutates, (ast.Tuple, ast.List, ast.Set)) and all(
        isinstance(element, ast.Constant) and isinstance(element.value, str) for element in mutates.elts
    ):
        names = tuple(str(element.value) for element in mutates.elts)  # type: ignore[attr-defined]
    elif isinstance(mutates, ast.Constant) and isinstance(mutates.value, str) and not unknown:
        names = (mutates.value,)  # a single name: torch accepts a string for one argument
    return CustomOpSite(function, binding, factory, qualname, names, unknown)


def _argument(call: ast.Call, position: int, keyword: str) -> Optional[ast.expr]:
    """The argument at ``position`` or named ``keyword``; None when absent or hidden by ``*args``."""
    for given in call.keywords:
        if given.arg == keyword:
            return given.value
    if any(isinstance(argument, ast.Starred) for argument in call.args[: position + 1]):
        return None
    return call.args[position] if position < len(call.args) else None


def _binding_counts(statements: Sequence[ast.stmt]) -> Dict[str, int]:
    """How many times the module's own statements bind each name (a function's locals do not count)."""
    bound: Dict[str, int] = {}
    for node in statements:
        for name in _bound_names(node):
            bound[name] = bound.get(name, 0) + 1
    return bound


def _bound_names(node: ast.AST) -> List[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    targets: List[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        targets = [node.target]
    names: List[str] = []
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                names.append(sub.id)
    return names
