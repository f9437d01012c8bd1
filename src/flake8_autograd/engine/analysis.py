"""Per-module facts shared by all rules: imports, ``apply`` call sites, cached inference."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from .counting import CountedReturn, counted_returns
from .discovery import Discovery
from .model import ClassModel, Method
from .names import ImportTable, ast_dotted
from .provenance import ALLOCATIONS, LAYOUT_METHODS
from .tensors import TensorInference


@dataclass(frozen=True)
class ApplyCall:
    """``Cls.apply(a, b)`` (or a call through ``fn = Cls.apply``) somewhere in the module."""

    line: int
    positional: Optional[int]  # None when a ``*args`` or keyword makes the count unknown
    args: Tuple[ast.expr, ...] = ()  # the positional arguments, when ``positional`` is known


@dataclass(frozen=True)
class DirectUse:
    """``Cls()`` (instantiation) or ``Cls.forward(...)``/``Cls.backward(...)`` outside any Function class."""

    line: int
    column: int
    what: str  # "instantiated" or the method name called directly


class Analysis:
    def __init__(self, tree: ast.Module, discovery: Discovery) -> None:
        self.tree = tree
        self.discovery = discovery
        self.imports: ImportTable = discovery.imports
        self._apply_calls: Optional[Dict[str, List[ApplyCall]]] = None
        self._direct_uses: Dict[str, List[DirectUse]] = {}
        # Per-method caches, keyed by the method itself (so that a key is never a reused id) and
        # emptied class by class (forget), so that a checked class's libcst tree can be freed.
        self._inference: Dict[Tuple[Method, str], TensorInference] = {}
        self._returns: Dict[Method, List[CountedReturn]] = {}
        self._allocating: Optional[FrozenSet[str]] = None

    def inference(self, method: Method, role: Optional[str] = None) -> TensorInference:
        key = (method, role or method.name)
        found = self._inference.get(key)
        if found is None:
            found = TensorInference(method, method.owner, self.imports, role or method.name)
            self._inference[key] = found
        return found

    def returns(self, method: Method) -> List[CountedReturn]:
        found = self._returns.get(method)
        if found is None:
            found = counted_returns(method, self.inference(method))
            self._returns[method] = found
        return found

    def forget(self, model: ClassModel) -> None:
        """Drop what is cached for the methods of ``model``, a class no other class will look at again."""
        self._inference = {key: value for key, value in self._inference.items() if key[0].owner is not model}
        self._returns = {method: value for method, value in self._returns.items() if method.owner is not model}

    def allocating_helpers(self) -> FrozenSet[str]:
        """The module's functions that only hand back fresh memory (every ``return`` an allocation such
        as ``torch.empty(...)``, maybe reshaped), defined once at module level and bound to nothing else."""
        if self._allocating is None:
            self._allocating = _allocating_helpers(self.tree)
        return self._allocating

    def apply_calls(self, class_name: str) -> List[ApplyCall]:
        if self._apply_calls is None:
            self._apply_calls = self._collect_calls()
        return self._apply_calls.get(class_name, [])

    def direct_uses(self, class_name: str) -> List[DirectUse]:
        if self._apply_calls is None:
            self._apply_calls = self._collect_calls()
        return self._direct_uses.get(class_name, [])

    def only_literals_passed(self, class_name: str, index: int) -> bool:
        """Whether every ``apply`` call of the module leaves input ``index`` to its default or passes a literal.

        A parameter known as a non-tensor only by its literal default (``slope=0.01``) may still be given a
        tensor by a caller; one call passing anything else, or passing arguments we cannot count, says so.
        """
        for call in self.apply_calls(class_name):
            if call.positional is None:
                return False
            if index < call.positional and not _is_literal(call.args[index]):
                return False
        return True

    def output_count(self, model: ClassModel) -> Optional[int]:
        """How many outputs forward returns, when every return agrees on a certain count."""
        forward = model.method("forward")
        if forward is None or forward.node is None:
            return None
        returns = self.returns(forward)
        counts = {counted.count for counted in returns}
        if len(counts) != 1:
            return None
        if any(_may_return_pair(node) for counted in returns for slot in counted.slots or () for node in slot):
            return None
        (count,) = counts
        return count

    def _collect_calls(self) -> Dict[str, List[ApplyCall]]:
        """One pass over the module's expressions, run only when a rule needs call sites."""
        function_names = {site.name for site in self.discovery.function_classes}
        inside = [
            (site.node.lineno, site.node.end_lineno or site.node.lineno) for site in self.discovery.function_classes
        ]
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
            self._read_direct_use(node, function_names, inside)
            owner = _apply_owner(node.func)
            if owner is None and isinstance(node.func, ast.Name):
                owner = aliases.get(node.func.id)
            if owner is None:
                continue
            unknown = node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args)
            call = ApplyCall(node.lineno, None) if unknown else ApplyCall(node.lineno, len(node.args), tuple(node.args))
            calls.setdefault(owner, []).append(call)
        self._drop_fast_paths(nodes)
        return calls

    def _drop_fast_paths(self, nodes: List[ast.AST]) -> None:
        """Forget ``Cls.forward(...)`` where no gradient is wanted: under ``torch.no_grad()`` (or
        ``inference_mode``), or in a function that tests the grad state and calls ``Cls.apply``
        otherwise (``if not torch.is_grad_enabled(): return Cls.forward(None, x)``). A test of
        anything else (``self.training``) does not say gradients are off, so that use stays."""
        forward_uses = [use for uses in self._direct_uses.values() for use in uses if use.what == "forward"]
        if not forward_uses:
            return
        functions = [node for node in nodes if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        gradless = [
            node for node in nodes
            if isinstance(node, (ast.With, ast.AsyncWith)) and _mentions(node.items, _GRADLESS_CONTEXTS)
        ]

        def within(node: ast.stmt, line: int) -> bool:
            return node.lineno <= line <= (node.end_lineno or node.lineno)

        def fast_path(owner: str, line: int) -> bool:
            if any(within(block, line) for block in gradless):
                return True
            enclosing = [function for function in functions if within(function, line)]
            function = max(enclosing, key=lambda f: f.lineno, default=None)
            if function is None:
                return False
            inner = list(ast.walk(function))
            tests_grad_state = any(
                isinstance(node, (ast.If, ast.IfExp)) and _mentions([node.test], _GRAD_STATE) for node in inner
            )
            return tests_grad_state and any(
                isinstance(node, ast.Call) and _apply_owner(node.func) == owner for node in inner
            )

        for owner, uses in self._direct_uses.items():
            uses[:] = [use for use in uses if use.what != "forward" or not fast_path(owner, use.line)]

    def _read_direct_use(self, node: ast.Call, names: Set[str], inside: List[Tuple[int, int]]) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in names:
            use = DirectUse(node.lineno, node.col_offset, "instantiated")
            self._direct_uses.setdefault(func.id, []).append(use)
        elif (
            isinstance(func, ast.Attribute)
            and func.attr in ("forward", "backward")
            and isinstance(func.value, ast.Name)
            and func.value.id in names
            and not any(start <= node.lineno <= end for start, end in inside)
        ):
            # Inside a Function, calling another Function's forward is composition, not a mistake.
            use = DirectUse(node.lineno, node.col_offset, func.attr)
            self._direct_uses.setdefault(func.value.id, []).append(use)


# Names that say whether gradients are wanted, and contexts that turn them off.
_GRAD_STATE = frozenset({"is_grad_enabled", "requires_grad", "is_inference_mode_enabled", "is_inference"})
_GRADLESS_CONTEXTS = frozenset({"no_grad", "inference_mode"})


def _mentions(roots: Sequence[ast.AST], names: FrozenSet[str]) -> bool:
    """Whether any attribute or name under ``roots`` is one of ``names``."""
    return any(
        (isinstance(node, ast.Attribute) and node.attr in names) or (isinstance(node, ast.Name) and node.id in names)
        for root in roots
        for node in ast.walk(root)
    )


# Pooling functions whose ``return_indices`` makes them return (values, indices): its positional index.
_RETURN_INDICES_POSITION = {
    **{f"max_pool{n}d": 6 for n in (1, 2, 3)},
    **{f"max_pool{n}d_with_indices": 6 for n in (1, 2, 3)},
    **{f"adaptive_max_pool{n}d": 2 for n in (1, 2, 3)},
    **{f"adaptive_max_pool{n}d_with_indices": 2 for n in (1, 2, 3)},
    **{f"fractional_max_pool{n}d": 4 for n in (2, 3)},
    **{f"fractional_max_pool{n}d_with_indices": 4 for n in (2, 3)},
}


def _may_return_pair(node: cst.BaseExpression) -> bool:
    """A pooling call given ``return_indices`` positionally (or by ``**kwargs``): possibly a pair, not one tensor."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    position = _RETURN_INDICES_POSITION.get(name or "")
    if position is None:
        return False
    if any(arg.star for arg in node.args):
        return True
    positional = [arg for arg in node.args if arg.keyword is None]
    return len(positional) > position or any(
        arg.keyword is not None and arg.keyword.value == "return_indices" for arg in node.args
    )


def _allocating_helpers(tree: ast.Module) -> FrozenSet[str]:
    bound: Dict[str, int] = {}
    for statement in tree.body:
        for name in _top_level_names(statement):
            bound[name] = bound.get(name, 0) + 1
    return frozenset(
        statement.name
        for statement in tree.body
        if isinstance(statement, ast.FunctionDef) and bound[statement.name] == 1 and _only_allocates(statement)
    )


def _top_level_names(statement: ast.stmt) -> List[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in statement.names]
    # Anything else that may bind a name (an assignment, a loop, a with, a conditional definition):
    # every name it stores.
    names: List[str] = []
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
    return names


def _only_allocates(function: ast.FunctionDef) -> bool:
    returns: List[ast.Return] = []
    pending: List[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue  # a nested scope's returns are its own
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(node, ast.Return):
            returns.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return bool(returns) and all(node.value is not None and _allocates(node.value) for node in returns)


def _allocates(node: ast.expr) -> bool:
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LAYOUT_METHODS:
        node = node.func.value
    return isinstance(node, ast.Call) and (ast_dotted(node.func) or "").rsplit(".", 1)[-1] in ALLOCATIONS


def _is_literal(node: ast.expr) -> bool:
    """A number, string or bool written out (``None`` is not: it may stand for an absent tensor)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and node.value is not None and node.value is not Ellipsis


def _apply_owner(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Attribute) and node.attr == "apply":
        owner = ast_dotted(node.value)
        if owner is not None:
            return owner.rsplit(".", 1)[-1]
    return None
