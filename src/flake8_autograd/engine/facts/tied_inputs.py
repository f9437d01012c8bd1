"""Tied inputs: ``apply`` arguments whose requires-grad the module's callers tie together.

``ctx.needs_input_grad[i]`` is whether the ``i``-th argument of ``Cls.apply(...)`` requires grad. When
every call of ``apply`` in the module derives two sets of arguments from the same values of the caller,
one set requires grad exactly when the other does, and a check of ``needs_input_grad`` could never skip
the work of one set alone (AGF005).

Each argument is traced, in the function that makes the call, to its *sources*: the caller's parameters
(``self.weight``: an attribute of one) and module-level values it is computed from, through the
function's assignments (all of a name's bindings at once, not per path). What cannot carry the
requires-grad of a source cuts the trace: ``.detach()``, ``.data``, a value bound under
``torch.no_grad()`` or ``torch.inference_mode()``, literals, metadata (``x.shape``, ``x.size()``,
``x.device``), comparisons, integer conversions and indices (``x.long()``, ``x.argmax()``), fresh
allocations (``torch.zeros(...)``, ``torch.arange(...)``), and parameters annotated as integers, flags
or integer tensors. What is not followed (a comprehension, a lambda) is a source of its own, equal to
no other.

Read from flake8's ``ast`` tree, once per module, and only when a rule asks.
"""

from __future__ import annotations

import ast
import weakref
from typing import Dict, FrozenSet, Hashable, List, Optional, Sequence, Set, Tuple

from ..syntax.names import ast_dotted

Source = Hashable
# For one apply call: the sources of each positional argument.
CallSources = Tuple[FrozenSet[Source], ...]

# Attributes that are metadata, or a detached view: they carry no requires-grad.
_METADATA_ATTRIBUTES = frozenset(
    "shape dtype device ndim is_cuda is_sparse layout requires_grad grad_fn is_leaf data names".split()
)
# Methods whose result carries no requires-grad: detached, metadata, integers and flags.
_CUT_METHODS = frozenset(
    """
    detach detach_ size dim numel stride item tolist element_size nelement data_ptr is_contiguous
    long int short bool byte char argmax argmin argsort nonzero new_zeros new_empty new_ones new_full
    new_tensor isnan isinf isfinite eq ne lt le gt ge logical_not logical_and logical_or sign
    """.split()
)
# Methods whose arguments give only sizes, dims or a dtype: the result is the receiver's data.
_SHAPE_METHODS = frozenset(
    """
    view view_as reshape reshape_as expand expand_as repeat repeat_interleave permute transpose flatten
    unflatten squeeze unsqueeze narrow split chunk movedim swapaxes select to type type_as contiguous
    """.split()
)
# The first parameter of a method: ``self.proj(x)`` calls one of the instance's values.
_INSTANCE_NAMES = frozenset({"self", "cls"})
# Functions whose result carries no requires-grad: Python conversions and tests, fresh allocations.
_CUT_FUNCTIONS = frozenset(
    """
    len int float bool str isinstance range type id hash repr
    empty empty_like zeros zeros_like ones ones_like full full_like empty_strided arange randn rand
    randint randperm randn_like rand_like eye linspace logspace argmax argmin argsort nonzero
    is_tensor is_floating_point numel
    """.split()
)
# Context managers under which nothing computed requires grad.
_GRAD_OFF = frozenset({"no_grad", "inference_mode"})
# Annotations of parameters that never require grad (integers, flags, integer tensors, metadata).
_NO_GRAD_ANNOTATIONS = frozenset(
    """
    int bool float str None Optional Union typing.Optional typing.Union
    torch.LongTensor torch.IntTensor torch.BoolTensor torch.ByteTensor torch.dtype torch.device torch.Size
    """.split()
)

_Sites = Dict[str, Optional[List[Tuple[ast.AST, ast.Call]]]]  # class -> (calling function, call), or None


class _ModuleCalls:
    """The module's ``Cls.apply(...)`` calls, found in one walk; their arguments' sources are traced only
    for a class a rule asks about (most classes are never asked: they have one group of gradient work)."""

    def __init__(self, tree: ast.Module) -> None:
        self.module_names = _module_bindings(tree)
        self.sites = _find_sites(tree)
        self.tracers: Dict[int, _Tracer] = {}  # by id of the calling function
        self.sources: Dict[str, Optional[List[CallSources]]] = {}

    def of(self, class_name: str) -> Optional[List[CallSources]]:
        if class_name not in self.sources:
            sites = self.sites.get(class_name, [])
            self.sources[class_name] = None if sites is None else [
                tuple(self._tracer(function).sources(arg) for arg in call.args) for function, call in sites
            ]
        return self.sources[class_name]

    def _tracer(self, function: ast.AST) -> "_Tracer":
        tracer = self.tracers.get(id(function))
        if tracer is None:
            tracer = _Tracer(function, self.module_names)
            self.tracers[id(function)] = tracer
        return tracer


_MEMO: "weakref.WeakKeyDictionary[ast.Module, _ModuleCalls]" = weakref.WeakKeyDictionary()


def apply_call_sources(tree: ast.Module, class_name: str) -> Optional[List[CallSources]]:
    """The sources of the positional arguments of each ``class_name.apply(...)`` call in the module;
    None when some use of the class may call it unseen (an alias of ``apply``, the class passed on, a
    call with ``*args`` or keywords, a call outside a function)."""
    known = _MEMO.get(tree)
    if known is None:
        known = _ModuleCalls(tree)
        _MEMO[tree] = known
    return known.of(class_name)


def tied(calls: Optional[List[CallSources]], first: Sequence[int], second: Sequence[int]) -> bool:
    """Whether at every call (one at least) the arguments at positions ``first`` and those at ``second``
    have the same sources, and some."""
    if not calls:
        return False
    for call in calls:
        if max([*first, *second]) >= len(call):
            return False
        first_sources = frozenset().union(*(call[index] for index in first))
        if not first_sources or first_sources != frozenset().union(*(call[index] for index in second)):
            return False
    return True


def _find_sites(tree: ast.Module) -> _Sites:
    """One walk of the module: each ``Cls.apply(...)`` call made in a function's own body (not in a
    lambda, a class body or at module level, where its caller cannot be read) with its function."""
    found: Dict[str, List[Tuple[ast.AST, ast.Call]]] = {}
    unknown: Set[str] = set()
    applied: Set[int] = set()  # the ``Cls`` Name nodes of calls read here
    loaded: List[ast.Name] = []
    pending: List[Tuple[ast.AST, Optional[ast.AST]]] = [(tree, None)]  # (node, the function whose body holds it)
    while pending:
        node, function = pending.pop()
        owner = _apply_owner(node)
        if owner is not None and function is not None:
            assert isinstance(node, ast.Call)
            applied.add(id(node.func.value))  # type: ignore[attr-defined]
            if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
                unknown.add(owner)
            else:
                found.setdefault(owner, []).append((function, node))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loaded.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # Decorators, defaults and annotations run where the def is; the body is the function's own.
            outer = [*node.decorator_list, node.args, *([node.returns] if node.returns else [])]
            pending.extend((child, function) for child in outer)
            pending.extend((statement, node) for statement in node.body)
        elif isinstance(node, (ast.Lambda, ast.ClassDef)):
            pending.extend((child, None) for child in ast.iter_child_nodes(node))
        else:
            pending.extend((child, function) for child in ast.iter_child_nodes(node))
    # Any other reference to a class (``fn = Cls.apply``, ``run(Cls)``, a call at module level or in a
    # lambda) hides calls.
    unknown.update(name.id for name in loaded if id(name) not in applied)
    sites: _Sites = {owner: calls for owner, calls in found.items()}
    for owner in unknown:
        sites[owner] = None
    return sites


def _apply_owner(node: ast.AST) -> Optional[str]:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "apply"
        and isinstance(node.func.value, ast.Name)
    ):
        return node.func.value.id
    return None


def _own_scope(function: ast.AST) -> List[ast.AST]:
    """The nodes of a function's body, nested functions, classes and lambdas left out."""
    found: List[ast.AST] = []
    pending: List[ast.AST] = list(reversed(getattr(function, "body", [])))
    while pending:
        node = pending.pop()
        found.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        pending.extend(reversed(list(ast.iter_child_nodes(node))))
    return found


def _module_bindings(tree: ast.Module) -> Dict[str, bool]:
    """Module-level names: True for a value assigned there (a source), False for an import, a def or a class."""
    names: Dict[str, bool] = {}
    for statement in tree.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                names[(alias.asname or alias.name).split(".")[0]] = False
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[statement.name] = False
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        names.setdefault(node.id, True)
    return names


class _Tracer:
    """Traces expressions of one function to their sources."""

    def __init__(self, function: ast.AST, module_names: Dict[str, bool]) -> None:
        self.module_names = module_names
        self.params: Dict[str, bool] = {}  # name -> whether it can require grad
        arguments: ast.arguments = function.args  # type: ignore[attr-defined]
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            self.params[arg.arg] = not _never_requires_grad(arg.annotation)
        for starred in (arguments.vararg, arguments.kwarg):
            if starred is not None:
                self.params[starred.arg] = True
        self.bindings: Dict[str, List[Optional[ast.expr]]] = {}  # None: a value that requires no grad
        self.external: Set[str] = set()  # global / nonlocal names
        self._read_bindings(getattr(function, "body", []), grad_off=False)
        self._memo: Dict[str, FrozenSet[Source]] = {}
        self._walking: Set[str] = set()

    # -- bindings ----------------------------------------------------------------------------------
    def _bind(self, target: ast.expr, value: Optional[ast.expr], grad_off: bool) -> None:
        if isinstance(target, ast.Name):
            self.bindings.setdefault(target.id, []).append(None if grad_off else value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            elements = target.elts
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(elements) and not any(
                isinstance(element, ast.Starred) for element in [*elements, *value.elts]
            ):
                for element, part in zip(elements, value.elts):
                    self._bind(element, part, grad_off)
            elif value is not None and not any(isinstance(element, ast.Starred) for element in elements):
                for index, element in enumerate(elements):
                    # ``a, b = args``: the index-th part, as ``args[index]`` is
                    part = ast.Subscript(value=value, slice=ast.Constant(value=index), ctx=ast.Load())
                    self._bind(element, part, grad_off)
            else:
                for element in elements:
                    self._bind(element, value, grad_off)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, value, grad_off)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            base = target.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name) and not grad_off:
                self.bindings.setdefault(base.id, []).append(value)  # ``x[i] = v`` mixes v into x

    def _read_bindings(self, statements: List[ast.stmt], grad_off: bool) -> None:
        pending: List[Tuple[ast.AST, bool]] = [(statement, grad_off) for statement in reversed(statements)]
        while pending:
            node, off = pending.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bindings.setdefault(node.name, []).append(None)
                continue
            if isinstance(node, ast.Lambda):
                continue
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(target, node.value, off)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                self._bind(node.target, node.value, off)
            elif isinstance(node, ast.NamedExpr):
                self._bind(node.target, node.value, off)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                self._bind(node.target, node.iter, off)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    self.bindings.setdefault((alias.asname or alias.name).split(".")[0], []).append(None)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.external.update(node.names)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                inner = off or any(_turns_grad_off(item.context_expr) for item in node.items)
                for item in node.items:
                    if item.optional_vars is not None:
                        self._bind(item.optional_vars, item.context_expr, off)
                pending.extend((statement, inner) for statement in reversed(node.body))
                continue
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.bindings.setdefault(node.name, []).append(None)
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                continue  # its targets are its own
            pending.extend((child, off) for child in reversed(list(ast.iter_child_nodes(node))))

    # -- sources -----------------------------------------------------------------------------------
    def sources(self, node: ast.expr) -> FrozenSet[Source]:
        found: Set[Source] = set()
        pending: List[ast.AST] = [node]
        while pending:
            item = pending.pop()
            if isinstance(item, ast.Name):
                found |= self._name_sources(item.id)
            elif isinstance(item, ast.Attribute):
                if item.attr in _METADATA_ATTRIBUTES:
                    continue
                given = self._given(item)
                if given is not None:
                    found.add(("value", given))  # ``self.weight``: a value the caller was given
                else:
                    pending.append(item.value)
            elif isinstance(item, ast.Subscript) and isinstance(item.slice, ast.Constant):
                if isinstance(item.value, ast.Attribute) and item.value.attr in _METADATA_ATTRIBUTES:
                    continue  # ``x.shape[0]``
                given = self._given(item.value)
                if given is not None:
                    found.add(("value", f"{given}[{item.slice.value!r}]"))  # ``args[0]``: one of the values given
                elif isinstance(item.value, ast.Call) and isinstance(item.value.func, ast.Name):
                    # ``a, b = pick(args)``: the parts a function of the caller's hands back are values of
                    # their own, not tied to each other by what the function was given (when it was given
                    # anything that may require grad at all).
                    if self.sources(item.value):
                        found.add(("part", f"{id(item.value)}[{item.slice.value!r}]"))
                else:
                    pending.append(item.value)
            elif isinstance(item, ast.Call):
                if _cuts(item):
                    continue
                if any(keyword.arg == "requires_grad" for keyword in item.keywords):
                    found.add(("unknown", id(item)))
                func = item.func
                if isinstance(func, ast.Attribute):
                    receiver = func.value
                    if isinstance(receiver, ast.Name) and receiver.id in _INSTANCE_NAMES and self._given(func):
                        found.add(("value", self._given(func)))  # ``self.proj(x)``: a module of the instance
                    else:
                        pending.append(receiver)
                    if func.attr in _SHAPE_METHODS:
                        continue  # ``x.view(n, -1)``, ``q.type_as(k)``: sizes, a dtype taken from the arguments
                pending.extend(item.args)
                pending.extend(keyword.value for keyword in item.keywords)
            elif isinstance(item, (ast.Constant, ast.Compare, ast.JoinedStr)):
                continue
            elif isinstance(item, ast.UnaryOp) and isinstance(item.op, ast.Not):
                continue
            elif isinstance(item, ast.IfExp):
                pending.extend((item.body, item.orelse))
            elif isinstance(item, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                                   ast.Await, ast.Yield, ast.YieldFrom)):
                found.add(("unknown", id(item)))
            else:
                pending.extend(ast.iter_child_nodes(item))  # operators, displays, subscripts, slices, starred
        return frozenset(found)

    def _given(self, node: ast.expr) -> Optional[str]:
        """``self.weight`` for an attribute chain on a parameter (or a global) the function never rebinds."""
        dotted = ast_dotted(node)
        root = dotted.split(".")[0] if dotted is not None else None
        if root is not None and (self.params.get(root) or root in self.external) and root not in self.bindings:
            return dotted
        return None

    def _name_sources(self, name: str) -> FrozenSet[Source]:
        known = self._memo.get(name)
        if known is not None:
            return known
        if name in self._walking:
            return frozenset()  # ``q = q.float()``: what q is made of is gathered where the walk began
        self._walking.add(name)
        try:
            found: Set[Source] = set()
            if self.params.get(name):
                found.add(("value", name))
            elif name in self.external or (name not in self.params and name not in self.bindings):
                if self.module_names.get(name) or name in self.external:
                    found.add(("value", name))  # a module-level value
                # an import, a def, a class or a builtin: no tensor of the caller's
            for value in self.bindings.get(name, ()):
                if value is not None:
                    found |= self.sources(value)
        finally:
            self._walking.discard(name)
        result = frozenset(found)
        self._memo[name] = result
        return result


def _cuts(call: ast.Call) -> bool:
    """Whether the result of ``call`` can carry no requires-grad of its operands."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in _CUT_METHODS:
            return True
        dotted = ast_dotted(func)
        return dotted is not None and dotted.startswith("torch.") and func.attr in _CUT_FUNCTIONS
    return isinstance(func, ast.Name) and func.id in _CUT_FUNCTIONS


def _turns_grad_off(manager: ast.expr) -> bool:
    if isinstance(manager, ast.Call):
        manager = manager.func
    dotted = ast_dotted(manager)
    return dotted is not None and dotted.rsplit(".", 1)[-1] in _GRAD_OFF


def _never_requires_grad(annotation: Optional[ast.expr]) -> bool:
    """An annotation made only of integer, flag, metadata and integer-tensor types (``Optional[int]``)."""
    if annotation is None:
        return False
    names: List[str] = []
    for node in ast.walk(annotation):
        if isinstance(node, (ast.Name, ast.Attribute)):
            dotted = ast_dotted(node)
            if dotted is not None and not (isinstance(node, ast.Name) and _is_attribute_root(annotation, node)):
                names.append(dotted)
        elif isinstance(node, ast.Constant) and node.value is not None:
            return False  # a string annotation: not read
    return bool(names) and all(name in _NO_GRAD_ANNOTATIONS for name in names)


def _is_attribute_root(annotation: ast.expr, name: ast.Name) -> bool:
    """Whether ``name`` is the root of an attribute chain in ``annotation`` (``torch`` of ``torch.dtype``)."""
    return any(isinstance(node, ast.Attribute) and node.value is name for node in ast.walk(annotation))
