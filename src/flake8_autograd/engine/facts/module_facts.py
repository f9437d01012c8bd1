"""What a module's own code says about values that cross a function boundary.

Three facts, read from flake8's ``ast`` tree once per module and only when a question needs them:

* a same-module helper's signature: a value passed to a parameter annotated as a tensor is one, and a
  call of a helper annotated to return a tensor (or an ``int``, a ``Tuple[int, ...]``) gives one;
* what each same-module ``Cls.apply(...)`` call passes in one position: a certain non-tensor (a
  literal, a caller's parameter annotated with a scalar type, or ``self.attr`` that the caller's class
  sets only from such values), or something unknown.

Only certain facts: a helper bound twice, decorated by anything that may change what it returns, or
shadowed where the Function class is defined, says nothing; so does an attribute some other code sets.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..discovery.functions import ClassSite, Discovery
from ..syntax.names import ImportTable, ast_dotted
from .tensor_kinds import MAX_ANNOTATION_LENGTH, Kind, annotation_kind


@dataclass(frozen=True)
class ApplyCall:
    """``Cls.apply(a, b)`` (or a call through ``fn = Cls.apply``, or ``Cls()(a, b)``) somewhere in the module."""

    line: int
    positional: Optional[int]  # None when a ``*args`` or keyword makes the count unknown
    args: Tuple[ast.expr, ...] = ()  # the positional arguments, when ``positional`` is known
    node: Optional[ast.Call] = field(default=None, compare=False)


@dataclass(frozen=True)
class HelperSignature:
    """The declared kinds of a same-module function: what it takes and what it returns."""

    positional: Tuple[Kind, ...]  # each positional parameter, in order
    keywords: Dict[str, Kind]  # each parameter a keyword can name
    returns: Kind
    return_elements: Optional[Tuple[Kind, ...]]  # ``-> Tuple[A, B]``: each element; None otherwise


# Methods (of a torch.Generator, or torch's module-level getters) that read a random generator's state.
_GENERATOR_STATE_GETTERS = frozenset({"get_state", "graphsafe_get_state", "clone_state", "get_rng_state"})

# Decorators that hand back a function returning what the decorated one returns.
_TRANSPARENT_DECORATORS: FrozenSet[str] = frozenset(
    {"torch.jit.script", "torch.jit.ignore", "torch.jit.unused", "torch.no_grad", "torch.enable_grad",
     "torch.inference_mode", "torch.compile", "torch.compiler.disable", "functools.cache", "functools.lru_cache"}
)
_TUPLES = frozenset({"Tuple", "tuple", "typing.Tuple"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

# A function's scope and the class whose body defines it directly (None for a plain function).
_Context = Tuple[Optional[ast.AST], Optional[ast.ClassDef]]


@dataclass
class _AttributeStore:
    """One way ``<something>.attr`` gets a value: ``value`` (None when augmented), or an annotation."""

    target: ast.Attribute
    value: Optional[ast.expr]
    annotation: Optional[ast.expr]
    augmented: bool
    context: _Context


@dataclass
class _Walked:
    """What one walk of the module records for the caller-side fact."""

    contexts: Dict[int, _Context] = field(default_factory=dict)  # by id of an apply call
    attribute_stores: Dict[str, List[_AttributeStore]] = field(default_factory=dict)
    class_defaults: Dict[Tuple[int, str], List[ast.stmt]] = field(default_factory=dict)  # (id(class), name)
    strings: Set[str] = field(default_factory=set)  # string constants: ``setattr(self, "x", ...)``


class ModuleFacts:
    def __init__(
        self,
        tree: ast.Module,
        discovery: Discovery,
        apply_calls: Callable[[str], List[ApplyCall]],
        lines: Optional[Sequence[str]] = None,
    ) -> None:
        self.tree = tree
        # Without the text, every function is searched for ``global`` statements.
        self._may_declare_global = lines is None or _may_declare_global("".join(lines))
        self.discovery = discovery
        self.imports: ImportTable = discovery.imports
        self._apply_calls = apply_calls
        self._top_level: Optional[Dict[str, List[ast.stmt]]] = None
        self._signatures: Dict[Tuple[str, str], Optional[HelperSignature]] = {}
        self._walked: Optional[_Walked] = None
        self._stored_names: Dict[int, FrozenSet[str]] = {}
        self._function_class_nodes: Optional[Set[int]] = None
        self._subclass_names: Optional[Dict[str, List[str]]] = None  # local subclasses by their base's name

    # -- helpers ---------------------------------------------------------------------------------
    def helper(self, name: str, where: ClassSite) -> Optional[HelperSignature]:
        """The signature of module-level function ``name`` as read from a method of ``where``."""
        if not self._sees_module_names(where):
            return None
        return self._signature(("", name))

    def static_helper(self, owner: str, name: str, where: ClassSite) -> Optional[HelperSignature]:
        """The signature of ``owner.name``, a staticmethod of module-level class ``owner``."""
        if not self._sees_module_names(where):
            return None
        return self._signature((owner, name))

    def _sees_module_names(self, where: ClassSite) -> bool:
        """A class inside a function reads a bare name from that function first: not followed."""
        return not where.in_function

    def _signature(self, key: Tuple[str, str]) -> Optional[HelperSignature]:
        if key in self._signatures:
            return self._signatures[key]
        owner, name = key
        function = self._function(name) if not owner else self._static_method(owner, name)
        found = self._read_signature(function, static=bool(owner)) if function is not None else None
        self._signatures[key] = found
        return found

    def _sole_top_level(self, name: str) -> Optional[ast.stmt]:
        if self._top_level is None:
            self._top_level = _top_level_bindings(self.tree, self._may_declare_global)
        statements = self._top_level.get(name, [])
        return statements[0] if len(statements) == 1 else None

    def _function(self, name: str) -> Optional[ast.FunctionDef]:
        statement = self._sole_top_level(name)
        return statement if isinstance(statement, ast.FunctionDef) else None

    def _static_method(self, owner: str, name: str) -> Optional[ast.FunctionDef]:
        statement = self._sole_top_level(owner)
        if not isinstance(statement, ast.ClassDef):
            return None
        bound = [each for each in statement.body if name in statement_names(each)]
        if len(bound) != 1 or not isinstance(bound[0], ast.FunctionDef):
            return None
        if not any(isinstance(decorator, ast.Name) and decorator.id == "staticmethod"
                   for decorator in bound[0].decorator_list):
            return None
        return bound[0]

    def _read_signature(self, function: ast.FunctionDef, static: bool) -> Optional[HelperSignature]:
        for decorator in function.decorator_list:
            if static and isinstance(decorator, ast.Name) and decorator.id == "staticmethod":
                continue
            dotted = ast_dotted(decorator.func if isinstance(decorator, ast.Call) else decorator)
            if dotted is None or self.imports.resolve_dotted(dotted) not in _TRANSPARENT_DECORATORS:
                return None
        arguments = function.args
        positional = tuple(self._kind(arg.annotation) for arg in arguments.posonlyargs + arguments.args)
        keywords = {arg.arg: self._kind(arg.annotation) for arg in arguments.args + arguments.kwonlyargs}
        returns = self._kind(function.returns)
        if returns is Kind.TENSOR and self._returns_generator_state(function):
            # A snapshot of a random generator (as torch.get_rng_state() gives): kept on ctx to be
            # restored, not data of the graph; of unknown kind, as torch's own getters are.
            returns = Kind.UNKNOWN
        return HelperSignature(positional, keywords, returns, self._tuple_elements(function.returns))

    def _returns_generator_state(self, function: ast.FunctionDef) -> bool:
        """Every ``return`` of ``function`` hands back a generator's state (``gen.get_state()``,
        ``torch.cuda.get_rng_state()``, ...)."""
        returned = [node.value for node in _own_returns(function)]
        return bool(returned) and all(
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in _GENERATOR_STATE_GETTERS
            for value in returned
        )

    def _kind(self, annotation: Optional[ast.expr]) -> Kind:
        parsed = _as_cst(annotation)
        return annotation_kind(parsed, self.imports) if parsed is not None else Kind.UNKNOWN

    def _tuple_elements(self, annotation: Optional[ast.expr]) -> Optional[Tuple[Kind, ...]]:
        """``Tuple[A, B]`` (not ``Tuple[A, ...]``): the declared kind of each element."""
        if not isinstance(annotation, ast.Subscript):
            return None
        base = ast_dotted(annotation.value)
        if base is None or (self.imports.resolve_dotted(base) or base) not in _TUPLES:
            return None
        elements = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        if any(isinstance(element, ast.Constant) and element.value is Ellipsis for element in elements):
            return None
        return tuple(self._kind(element) for element in elements)

    # -- callers ---------------------------------------------------------------------------------
    def argument_kinds(self, class_name: str, index: int) -> Optional[List[Optional[Kind]]]:
        """What each same-module ``apply`` call of the class (or of a local subclass) passes as input
        ``index``: ``NOT_TENSOR`` for a certain non-tensor, ``UNKNOWN`` for anything else, None where
        the call leaves it to its default. None when a call's arguments cannot be counted."""
        kinds: List[Optional[Kind]] = []
        for call in self._family_calls(class_name):
            if call.positional is None:
                return None
            if index >= call.positional:
                kinds.append(None)
            else:
                kinds.append(self._argument_kind(call, call.args[index]))
        return kinds

    def _family_calls(self, class_name: str) -> List[ApplyCall]:
        return [call for name in self._family([class_name]) for call in self._apply_calls(name)]

    def _family(self, class_names: Sequence[str]) -> List[str]:
        """``class_names`` and the names of their local subclasses at any depth, each once, nearest first."""
        if self._subclass_names is None:  # indexed once: a scan of every class per call was quadratic
            self._subclass_names = {}
            for site in self.discovery.classes:
                for base_name in dict.fromkeys(base.name for base in site.local_bases):
                    self._subclass_names.setdefault(base_name, []).append(site.name)
        names = list(dict.fromkeys(class_names))
        seen = set(names)
        for name in names:
            for subclass in self._subclass_names.get(name, ()):
                if subclass not in seen:
                    seen.add(subclass)
                    names.append(subclass)
        return names

    def _argument_kind(self, call: ApplyCall, argument: ast.expr) -> Kind:
        if _is_literal(argument):
            return Kind.NOT_TENSOR
        if call.node is None or not isinstance(argument, (ast.Name, ast.Attribute)):
            return Kind.UNKNOWN
        walked = self._walk()
        function, owner = walked.contexts.get(id(call.node), (None, None))
        if not isinstance(function, _FUNCTIONS):
            return Kind.UNKNOWN
        if isinstance(argument, ast.Name):
            return Kind.NOT_TENSOR if self._scalar_parameter(function, argument.id) else Kind.UNKNOWN
        receiver = argument.value
        if owner is None or not isinstance(receiver, ast.Name) or receiver.id != _self_name(function):
            return Kind.UNKNOWN
        if receiver.id in self._stored(function):
            return Kind.UNKNOWN
        return Kind.NOT_TENSOR if self._scalar_attribute(owner, argument.attr) else Kind.UNKNOWN

    def _scalar_parameter(self, function: ast.AST, name: str) -> bool:
        """``name`` is a parameter of ``function`` annotated as a non-tensor, and the body never rebinds it."""
        assert isinstance(function, _FUNCTIONS)
        arguments = function.args
        params = [arg for arg in arguments.posonlyargs + arguments.args + arguments.kwonlyargs if arg.arg == name]
        return (
            len(params) == 1 and self._kind(params[0].annotation) is Kind.NOT_TENSOR
            and name not in self._stored(function)
        )

    def _scalar_attribute(self, owner: ast.ClassDef, attribute: str) -> bool:
        """``self.<attribute>`` of ``owner`` holds a non-tensor: every store of that attribute in the module
        is one of ``owner``'s methods setting it from a literal or a scalar-annotated parameter (or a class
        body default that is a literal), and no string names it (``setattr``, ``register_buffer``)."""
        walked = self._walk()
        if attribute in walked.strings:
            return False
        stores = [store for store in walked.attribute_stores.get(attribute, []) if not self._on_ctx(store, owner)]
        defaults = walked.class_defaults.get((id(owner), attribute), [])
        if not stores and not defaults:
            return False
        return all(self._scalar_store(owner, store) for store in stores) and all(
            _scalar_default(statement, self) for statement in defaults  # a method or property of that name: no
        )

    def _on_ctx(self, store: _AttributeStore, owner: ast.ClassDef) -> bool:
        """A store on a parameter of another Function class's method (``ctx.step = step``): a ctx, not an
        instance of ``owner``."""
        function, store_owner = store.context
        if store_owner is None or store_owner is owner or not isinstance(function, _FUNCTIONS):
            return False
        if self._function_class_nodes is None:
            self._function_class_nodes = {id(site.node) for site in self.discovery.function_classes}
        receiver = store.target.value
        arguments = function.args
        params = {arg.arg for arg in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
        return (
            id(store_owner) in self._function_class_nodes and isinstance(receiver, ast.Name)
            and receiver.id in params
        )

    def _scalar_store(self, owner: ast.ClassDef, store: _AttributeStore) -> bool:
        function, store_owner = store.context
        if store_owner is not owner or not isinstance(function, _FUNCTIONS):
            return False
        receiver = store.target.value
        if not isinstance(receiver, ast.Name) or receiver.id != _self_name(function):
            return False
        if store.annotation is not None and self._kind(store.annotation) is Kind.NOT_TENSOR:
            return True
        value = store.value
        if value is None:
            return False
        if _is_literal(value):
            return True
        return not store.augmented and isinstance(value, ast.Name) and self._scalar_parameter(function, value.id)

    def _stored(self, function: ast.AST) -> FrozenSet[str]:
        """Every name ``function`` (nested scopes included) may rebind."""
        found = self._stored_names.get(id(function))
        if found is None:
            found = frozenset(
                node.id for node in ast.walk(function)
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
            )
            self._stored_names[id(function)] = found
        return found

    def _walk(self) -> _Walked:
        if self._walked is None:
            families = self._family([site.name for site in self.discovery.function_classes])
            calls = {id(call.node) for name in families for call in self._apply_calls(name) if call.node is not None}
            self._walked = _walk_module(self.tree, calls)
        return self._walked


def _walk_module(tree: ast.Module, calls: Set[int]) -> _Walked:
    """One pass over the module: the function and class around each apply call, every attribute store
    by attribute name, class body defaults and string constants."""
    walked = _Walked()
    stack: List[Tuple[ast.AST, _Context]] = [(tree, (None, None))]
    while stack:
        node, context = stack.pop()
        if id(node) in calls:
            walked.contexts[id(node)] = context
        inner = context
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            parent_class = context[1] if context[0] is None else None
            inner = (node, parent_class if not isinstance(node, ast.Lambda) else None)
        elif isinstance(node, ast.ClassDef):
            inner = (None, node)
            for statement in node.body:
                _record_class_default(walked, node, statement)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            _record_attribute_stores(walked, node, context)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            walked.strings.add(node.value)
        for child in ast.iter_child_nodes(node):
            stack.append((child, inner))
    return walked


def _record_attribute_stores(walked: _Walked, node: ast.stmt, context: _Context) -> None:
    if isinstance(node, ast.Assign):
        targets = [target for each in node.targets for target in _flattened(each)]
        value: Optional[ast.expr] = node.value if len(node.targets) == 1 and len(targets) == 1 else None
        annotation = None
    elif isinstance(node, ast.AnnAssign):
        targets, value, annotation = [node.target], node.value, node.annotation
    else:
        assert isinstance(node, ast.AugAssign)
        targets, value, annotation = [node.target], node.value, None
    for target in targets:
        if isinstance(target, ast.Attribute):
            store = _AttributeStore(target, value, annotation, isinstance(node, ast.AugAssign), context)
            walked.attribute_stores.setdefault(target.attr, []).append(store)


def _flattened(target: ast.expr) -> List[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [inner for element in target.elts for inner in _flattened(element)]
    if isinstance(target, ast.Starred):
        return _flattened(target.value)
    return [target]


def _record_class_default(walked: _Walked, owner: ast.ClassDef, statement: ast.stmt) -> None:
    for name in statement_names(statement):
        walked.class_defaults.setdefault((id(owner), name), []).append(statement)


def _scalar_default(statement: ast.stmt, facts: ModuleFacts) -> bool:
    """``attr = 64`` or ``attr: int = ...`` in a class body."""
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return facts._kind(statement.annotation) is Kind.NOT_TENSOR or (
            statement.value is not None and _is_literal(statement.value)
        )
    return (
        isinstance(statement, ast.Assign) and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name) and _is_literal(statement.value)
    )


def _self_name(function: ast.AST) -> Optional[str]:
    """The first parameter of a method that receives its instance (not a static or class method)."""
    assert isinstance(function, _FUNCTIONS)
    if any(isinstance(decorator, ast.Name) and decorator.id in ("staticmethod", "classmethod")
           for decorator in function.decorator_list):
        return None
    positional = function.args.posonlyargs + function.args.args
    return positional[0].arg if positional else None


# The fields of a statement that hold statements (``except`` handlers and ``case`` blocks hold them too).
_BODY_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
# Where a line may hold a ``global`` statement: at its start or after ``;`` or ``:`` (``def f(): global x``);
# the word in a comment or a string ("the global mean") mostly does not match.
_GLOBAL_STATEMENT = re.compile(r"(?:^|[;:])[^\S\n]*global\b", re.MULTILINE)  # searched in the whole text


def _may_declare_global(text: str) -> bool:
    # The word first: the pattern, tried at every position of the text, costs far more than the word's search.
    return "global" in text and _GLOBAL_STATEMENT.search(text) is not None


def _top_level_bindings(tree: ast.Module, may_declare_global: bool = True) -> Dict[str, List[ast.stmt]]:
    """Each name the module's statements bind, with every statement that binds it; a name a function
    declares ``global`` counts as bound twice (looked for only when the text may hold ``global``)."""
    bound: Dict[str, List[ast.stmt]] = {}
    for statement in tree.body:
        for name in statement_names(statement):
            bound.setdefault(name, []).append(statement)
    if may_declare_global:
        for node in _global_statements(tree):
            for name in node.names:
                bound.setdefault(name, []).append(node)
    return bound


def _global_statements(tree: ast.Module) -> List[ast.Global]:
    """The module's ``global`` statements, found among its statements alone (an expression holds none)."""
    found: List[ast.Global] = []
    stack: List[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global):
            found.append(node)
        for name in _BODY_FIELDS:
            stack.extend(getattr(node, name, None) or ())
    return found


def statement_names(statement: ast.stmt) -> List[str]:
    """The names a statement binds in the scope it sits in."""
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


def _as_cst(annotation: Optional[ast.expr]) -> Optional[cst.BaseExpression]:
    """The annotation as libcst reads it, for :func:`.tensor_kinds.annotation_kind`; None past a sane size."""
    if annotation is None:
        return None
    try:
        text = ast.unparse(annotation)
        if len(text) > MAX_ANNOTATION_LENGTH:
            return None
        return cst.parse_expression(text)
    except Exception:  # noqa: BLE001 - an annotation libcst cannot read says nothing
        return None


def _is_literal(node: ast.expr) -> bool:
    """A number, string or bool written out (``None`` is not: it may stand for an absent tensor)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and node.value is not None and node.value is not Ellipsis


def _own_returns(function: ast.FunctionDef) -> List[ast.Return]:
    """The ``return`` statements of ``function`` itself, not of functions or classes nested in it."""
    found: List[ast.Return] = []
    pending: List[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            pending.extend(ast.iter_child_nodes(node))
    return found
