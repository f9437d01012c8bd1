"""Facts about a custom op's own functions, read from flake8's ``ast`` tree: which parameters are tensors
(the annotations PyTorch builds the op's schema from), which names a function rebinds, and the
statements of a function's own scope.

The op rules (AGF131-AGF134) query these; each fact stays silent (unknown) rather than guess.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set, Tuple, Union

from ..syntax.names import ImportTable, ast_dotted

AnyFunction = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_OPTIONAL_FORMS = frozenset({"Optional", "typing.Optional"})


def own_scope(function: AnyFunction) -> Iterator[ast.AST]:
    """Every node of ``function``'s body, not descending into nested functions, lambdas or classes
    (their names are their own; a comprehension reads the function's names, so it is walked)."""
    pending: List[ast.AST] = list(function.body) if isinstance(function.body, list) else [function.body]
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, _NESTED_SCOPES):
            # A nested def's decorators and defaults run in this scope; its body does not.
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                pending.extend(node.decorator_list)
            continue
        pending.extend(ast.iter_child_nodes(node))


def _is_tensor_type(node: ast.expr, imports: ImportTable) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return False
    dotted = ast_dotted(node)
    if dotted is None:
        return False
    resolved = imports.resolve_dotted(dotted)
    return resolved == "torch.Tensor" or (resolved is None and dotted == "Tensor")


def _optional_of(node: ast.expr, imports: ImportTable) -> Optional[ast.expr]:
    """``X`` for ``Optional[X]``, ``X | None`` or ``None | X``; None otherwise."""
    if isinstance(node, ast.Subscript):
        dotted = ast_dotted(node.value)
        if dotted is not None and (dotted in _OPTIONAL_FORMS or imports.resolve_dotted(dotted) == "typing.Optional"):
            return node.slice
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        for side, other in ((node.left, node.right), (node.right, node.left)):
            if isinstance(other, ast.Constant) and other.value is None:
                return side
    return None


def is_tensor_annotation(annotation: Optional[ast.expr], imports: ImportTable, optional: bool = False) -> bool:
    """``Tensor`` / ``torch.Tensor`` (and, with ``optional``, ``Optional[Tensor]`` / ``Tensor | None``)."""
    if annotation is None:
        return False
    if _is_tensor_type(annotation, imports):
        return True
    inner = _optional_of(annotation, imports) if optional else None
    return inner is not None and _is_tensor_type(inner, imports)


def holds_tensors(annotation: Optional[ast.expr], imports: ImportTable) -> bool:
    """A tensor, an optional tensor, or a list / sequence of tensors: what ``mutates_args`` may name."""
    if is_tensor_annotation(annotation, imports, optional=True):
        return True
    if isinstance(annotation, ast.Subscript):
        dotted = ast_dotted(annotation.value) or ""
        if dotted.split(".")[-1] in ("list", "List", "Sequence"):
            return is_tensor_annotation(annotation.slice, imports, optional=True)
    return False


def tensor_parameters(function: ast.FunctionDef, imports: ImportTable, optional: bool = False) -> Dict[str, ast.arg]:
    """The op's parameters annotated as a tensor, by name (positional and keyword-only alike)."""
    arguments = function.args
    every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
    return {arg.arg: arg for arg in every if is_tensor_annotation(arg.annotation, imports, optional)}


def rebound_names(function: AnyFunction) -> Set[str]:
    """Names ``function`` binds again in its own scope (assignment, loop, ``with``, walrus, import, ``del``,
    a nested def...). An augmented assignment is left out: on a tensor it writes in place, it does not
    rebind. ``global`` / ``nonlocal`` names count as rebound (they are not the parameter any more)."""
    augmented = {id(node.target) for node in own_scope(function) if isinstance(node, ast.AugAssign)}
    names: Set[str] = set()
    for node in own_scope(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if id(node) not in augmented:
                names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
    return names


def stable_tensor_parameters(
    function: ast.FunctionDef, imports: ImportTable, optional: bool = False
) -> Dict[str, ast.arg]:
    """Tensor parameters that keep the caller's tensor all through the op's body (never rebound)."""
    rebound = rebound_names(function)
    return {name: arg for name, arg in tensor_parameters(function, imports, optional).items() if name not in rebound}


@dataclass(frozen=True)
class OpCall:
    """One way PyTorch calls an op's fake: how many positional values, which keyword names."""

    positional: int
    keywords: Tuple[str, ...]

    def describe(self, names: List[str]) -> str:
        shown = names[: self.positional] + [f"{name}=..." for name in self.keywords]
        return f"({', '.join(shown)})"


def op_calls(function: ast.FunctionDef) -> Optional[List[OpCall]]:
    """The argument shapes PyTorch passes to an op's fake implementation; None when unknown (``*args``).

    The dispatcher drops trailing positional arguments equal to their defaults and keyword-only ones
    equal to theirs (checked on torch 2.13), so an op ``(x, scale=1.0, *, alpha=2.0)`` reaches the fake
    as ``(x)``, ``(x, scale)``, ``(x, alpha=...)`` or ``(x, scale, alpha=...)``.
    """
    arguments = function.args
    if arguments.vararg is not None or arguments.kwarg is not None:
        return None
    positional = arguments.posonlyargs + arguments.args
    required = len(positional) - len(arguments.defaults)
    keyword_required = tuple(
        arg.arg for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults) if default is None
    )
    keyword_optional = tuple(
        arg.arg for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults) if default is not None
    )
    keyword_sets = [keyword_required, keyword_required + keyword_optional]
    if len(keyword_optional) <= 3:
        keyword_sets.extend(keyword_required + (name,) for name in keyword_optional)
    calls: List[OpCall] = []
    for count in range(max(required, 0), len(positional) + 1):
        for keywords in keyword_sets:
            call = OpCall(count, keywords)
            if call not in calls:
                calls.append(call)
    return calls


def binding_error(function: ast.FunctionDef, call: OpCall) -> Optional[str]:
    """Why ``function`` cannot be called with ``call``'s arguments (Python's binding rules), in a few words
    for a message ("takes 2 positional arguments, not 3"); None if it can."""
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    first_default = len(positional) - len(arguments.defaults)
    if call.positional > len(positional) and arguments.vararg is None:
        return f"takes {_count(len(positional), 'positional argument')}, not {call.positional}"
    bound = {arg.arg for arg in positional[: call.positional]}
    keyword_names = {arg.arg for arg in arguments.args[max(call.positional - len(arguments.posonlyargs), 0):]}
    keyword_names.update(arg.arg for arg in arguments.kwonlyargs)
    for name in call.keywords:
        if name in bound:
            return f"gets two values for '{name}'"
        if name in keyword_names:
            bound.add(name)
        elif arguments.kwarg is None:
            return f"gets unexpected keyword '{name}'"
    for index, arg in enumerate(positional):
        if index >= first_default:
            break
        if arg.arg not in bound:
            return f"requires '{arg.arg}'"
    for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        if default is None and arg.arg not in bound:
            return f"requires keyword '{arg.arg}'"
    return None


def parameter_names(function: ast.FunctionDef) -> List[str]:
    arguments = function.args
    return [arg.arg for arg in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]


def globals_assigned_in_functions(tree: ast.Module) -> Dict[str, str]:
    """Module names some function assigns through ``global`` (state that changes between calls), each with
    the name of the first function that does."""
    writers: Dict[str, str] = {}
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for function in sorted(functions, key=_position):
        for name in global_writes(function):
            writers.setdefault(name, function.name)
    return writers


def global_writes(function: AnyFunction) -> Dict[str, ast.Name]:
    """Names ``function`` declares ``global`` and assigns, each with its first store."""
    declared = {name for node in own_scope(function) if isinstance(node, ast.Global) for name in node.names}
    stores: Dict[str, ast.Name] = {}
    for node in sorted(own_scope(function), key=_position):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and node.id in declared:
            stores.setdefault(node.id, node)
    return stores


def _position(node: ast.AST) -> Tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


# Tensor methods with a trailing underscore that change only autograd bookkeeping, not the data:
# ``torch.library.opcheck`` does not count them as mutations (checked on torch 2.13).
_BOOKKEEPING_METHODS = frozenset({"requires_grad_", "share_memory_"})
# torch functions that write their first argument in place (besides every ``torch.<name>_``).
_IN_PLACE_MODULES = ("torch.", "torch.nn.init.", "torch.nn.functional.")


def _is_in_place_name(name: str) -> bool:
    return name.endswith("_") and not name.startswith("_") and name not in _BOOKKEEPING_METHODS


def _parameter_of(node: ast.expr, parameters: Set[str]) -> Optional[str]:
    """``p`` for ``p`` or ``p.data`` with ``p`` one of ``parameters``."""
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return node.id if isinstance(node, ast.Name) and node.id in parameters else None


@dataclass(frozen=True)
class Write:
    """A statement or call of the op's body that writes a parameter's data in place."""

    parameter: str
    node: ast.AST
    how: str


def in_place_writes(function: ast.FunctionDef, parameters: Set[str], imports: ImportTable) -> List[Write]:
    """Where ``function``'s own scope writes one of ``parameters`` in place, in source order."""
    writes: List[Write] = []
    for node in own_scope(function):
        if isinstance(node, ast.Call):
            writes.extend(_call_writes(node, parameters, imports))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript):
                    name = _parameter_of(target.value, parameters)
                    if name is not None:
                        writes.append(Write(name, node, f"{name}[...] = ..."))
                elif isinstance(node, ast.AugAssign) and isinstance(target, ast.Name) and target.id in parameters:
                    writes.append(Write(target.id, node, f"{target.id} {_operator(node.op)}= ..."))
    return sorted(writes, key=lambda write: _position(write.node))


def _call_writes(call: ast.Call, parameters: Set[str], imports: ImportTable) -> Iterator[Write]:
    func = call.func
    if isinstance(func, ast.Attribute) and _is_in_place_name(func.attr):
        name = _parameter_of(func.value, parameters)
        if name is not None:
            yield Write(name, call, f"{ast.unparse(func.value)}.{func.attr}()")
            return
    dotted = ast_dotted(func)
    resolved = imports.resolve_dotted(dotted) if dotted is not None else None
    if resolved is None or not resolved.startswith("torch."):
        return  # a kernel wrapper's ``out=`` may be read, not written: only torch's own functions are known
    for keyword in call.keywords:
        if keyword.arg == "out":
            name = _parameter_of(keyword.value, parameters)
            if name is not None:
                yield Write(name, call, f"{dotted}(..., out={name})")
    first = call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None
    name = _parameter_of(first, parameters) if first is not None else None
    if name is None:
        return
    module, _, function_name = resolved.rpartition(".")
    if f"{module}." in _IN_PLACE_MODULES and _is_in_place_name(function_name):
        yield Write(name, call, f"{dotted}({name})")
    elif module == "torch.nn.functional" and any(
        keyword.arg == "inplace" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True
        for keyword in call.keywords
    ):
        yield Write(name, call, f"{dotted}({name}, inplace=True)")


def _operator(operator: ast.operator) -> str:
    return ast.unparse(ast.BinOp(ast.Name("a"), operator, ast.Name("b"))).split(" ")[1]


# Tensor methods and attributes whose result always shares the tensor's storage (each checked on torch
# 2.13 to fail the op's alias check). ``reshape``, ``flatten``, ``contiguous``, ``to`` and the like share
# it only when no copy is needed, so they are left out.
VIEW_METHODS = frozenset({
    "view", "view_as", "t", "transpose", "swapaxes", "swapdims", "permute", "movedim", "moveaxis", "expand",
    "expand_as", "squeeze", "unsqueeze", "narrow", "select", "diagonal", "as_strided", "unfold", "detach",
    "unflatten", "adjoint", "alias",
})
VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real"})
# Methods returning a tuple of views: any constant element of it is a view.
SPLITTING_METHODS = frozenset({"split", "chunk", "unbind", "tensor_split", "split_with_sizes", "hsplit", "vsplit"})
_TORCH_VIEW_FUNCTIONS = frozenset({
    "torch.t", "torch.transpose", "torch.swapaxes", "torch.swapdims", "torch.permute", "torch.movedim",
    "torch.moveaxis", "torch.squeeze", "torch.unsqueeze", "torch.narrow", "torch.select", "torch.diagonal",
    "torch.as_strided", "torch.detach", "torch.adjoint",
})


def _basic_index(index: ast.expr) -> bool:
    """An index that always makes a view: integer constants, slices, ``None`` and ``...`` (a tensor or a
    list index copies)."""
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    for item in items:
        if isinstance(item, ast.Slice):
            continue
        if isinstance(item, ast.UnaryOp) and isinstance(item.op, ast.USub):
            item = item.operand
        constant = isinstance(item, ast.Constant) and (item.value is None or item.value is Ellipsis)
        if not (constant or isinstance(item, ast.Constant) and type(item.value) is int):
            return False
    return True


class AliasFinder:
    """Which parameter an expression of the op's body is, or is a view of (following locals bound once)."""

    def __init__(self, function: ast.FunctionDef, parameters: Set[str], imports: ImportTable) -> None:
        self.parameters = parameters
        self.imports = imports
        stores: Dict[str, List[ast.AST]] = {}
        for node in own_scope(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                stores.setdefault(node.id, []).append(node)
        self._values: Dict[str, ast.expr] = {}
        for node in own_scope(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if len(stores.get(name, [])) == 1 and name not in parameters:
                    self._values[name] = node.value

    def aliased(self, node: ast.expr, depth: int = 0) -> Optional[str]:
        if depth > 8:
            return None
        if isinstance(node, ast.Name):
            if node.id in self.parameters:
                return node.id
            value = self._values.get(node.id)
            return self.aliased(value, depth + 1) if value is not None else None
        if isinstance(node, ast.Attribute) and node.attr in VIEW_ATTRIBUTES:
            return self.aliased(node.value, depth + 1)
        if isinstance(node, ast.Subscript):
            base = node.value
            if (
                isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute)
                and base.func.attr in SPLITTING_METHODS and _basic_index(node.slice)
            ):
                return self.aliased(base.func.value, depth + 1)
            return self.aliased(base, depth + 1) if _basic_index(node.slice) else None
        if isinstance(node, ast.Call):
            func = node.func
            dotted = ast_dotted(func)
            resolved = self.imports.resolve_dotted(dotted) if dotted is not None else None
            if resolved is not None:  # a function of an imported module, not a method of a tensor
                if resolved in _TORCH_VIEW_FUNCTIONS and node.args and not isinstance(node.args[0], ast.Starred):
                    return self.aliased(node.args[0], depth + 1)
                return None
            if isinstance(func, ast.Attribute) and (func.attr in VIEW_METHODS or _is_in_place_name(func.attr)):
                return self.aliased(func.value, depth + 1)
        return None


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


# --- the schema custom_op infers from an op's annotations ---------------------------------------------------
#
# An annotation is read as a small type term: a name ("Tensor", "int", "list", ...) or a generic
# (head, arguments), with unions flattened to ("Union", members). Only names resolved through the import
# table to typing, collections.abc or torch, or builtins the module never rebinds, are read; anything else
# is unknown (None), so a user's class (it may be a registered opaque type) is never judged.

TypeTerm = Union[str, Tuple[str, Tuple["TypeTerm", ...]]]

_TYPING_NAMES = {
    "typing.List": "list", "typing.Dict": "dict", "typing.Tuple": "tuple", "typing.Set": "set",
    "typing.FrozenSet": "frozenset", "typing.Sequence": "Sequence", "collections.abc.Sequence": "Sequence",
    "typing.Mapping": "Mapping", "collections.abc.Mapping": "Mapping", "typing.Any": "Any",
    "typing.Optional": "Optional", "typing.Union": "Union", "torch.Tensor": "Tensor",
    "torch.types.Number": "Number", "torch.dtype": "dtype", "torch.device": "device", "torch.SymInt": "SymInt",
    "torch.SymFloat": "SymFloat", "torch.SymBool": "SymBool",
}
_BUILTIN_TYPES = frozenset({
    "list", "dict", "tuple", "set", "frozenset", "str", "int", "float", "bool", "bytes", "complex", "object",
})
_GENERIC_HEADS = frozenset({"list", "dict", "tuple", "set", "frozenset", "Sequence", "Mapping"})
_NUMBER_MEMBERS = frozenset({"int", "float", "bool"})


def module_bound_names(tree: ast.Module) -> Set[str]:
    """Every name the module binds anywhere (a superset of its globals): a builtin type name among them
    may not be the builtin."""
    names: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


class AnnotationReader:
    """Reads annotations as PyTorch's ``infer_schema`` evaluates them (a string annotation is evaluated in
    the module's globals, so it reads the same as the expression)."""

    def __init__(self, imports: ImportTable, bound: Set[str]) -> None:
        self.imports = imports
        self.bound = bound

    def term(self, node: ast.expr, depth: int = 0) -> Optional[TypeTerm]:
        if depth > 8:
            return None
        if isinstance(node, ast.Constant):
            if node.value is None:
                return "None"
            if node.value is Ellipsis:
                return "..."
            if isinstance(node.value, str):
                try:
                    return self.term(ast.parse(node.value, mode="eval").body, depth + 1)
                except SyntaxError:
                    return None
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self._union([node.left, node.right], depth)
        if isinstance(node, ast.Subscript):
            head = self._name(node.value)
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head == "Optional" and len(items) == 1:
                return self._union([items[0], ast.Constant(None)], depth)
            if head == "Union":
                return self._union(items, depth)
            if head not in _GENERIC_HEADS:
                return None
            arguments = [self.term(item, depth + 1) for item in items]
            if any(argument is None for argument in arguments):
                return None
            return (head, tuple(argument for argument in arguments if argument is not None))
        if self._is_bare_typing_tuple(node):
            return None  # ``typing.Tuple`` alone has tuple as its origin and no arguments: read as ``()``
        name = self._name(node)
        return None if name in ("Optional", "Union") else name

    def _is_bare_typing_tuple(self, node: ast.expr) -> bool:
        dotted = ast_dotted(node)
        return dotted is not None and self.imports.resolve_dotted(dotted) == "typing.Tuple"

    def _name(self, node: ast.expr) -> Optional[str]:
        dotted = ast_dotted(node)
        if dotted is None:
            return None
        resolved = self.imports.resolve_dotted(dotted)
        if resolved is not None:
            return _TYPING_NAMES.get(resolved)
        if dotted in _BUILTIN_TYPES and dotted not in self.bound:
            return dotted
        return None

    def _union(self, items: List[ast.expr], depth: int) -> Optional[TypeTerm]:
        members: Set[TypeTerm] = set()
        for item in items:
            member = self.term(item, depth + 1)
            if member is None:
                return None
            if isinstance(member, tuple) and member[0] == "Union":
                members.update(member[1])
            else:
                members.add(member)
        if _NUMBER_MEMBERS <= members and members - _NUMBER_MEMBERS <= {"None"}:
            members = (members - _NUMBER_MEMBERS) | {"Number"}  # torch.types.Number is int | float | bool
        if len(members) == 1:
            return next(iter(members))
        return ("Union", tuple(sorted(members, key=repr)))


# infer_schema's parameter table (torch 2.13 ``get_supported_param_types``): each base type, whether it
# has a list form (``T[]``), a list-of-optionals form (``T?[]``) and an optional-list form (``T[]?``).
_PARAMETER_BASES: Dict[str, Tuple[bool, bool, bool]] = {
    "Tensor": (True, True, False), "int": (True, False, True), "float": (True, False, True),
    "bool": (True, False, True), "str": (False, False, False), "Number": (True, False, False),
    "dtype": (False, False, False), "device": (False, False, False),
}
_SEQUENCE_HEADS = frozenset({"list", "Sequence"})
# The return table (``SUPPORTED_RETURN_TYPES``): a tuple of these too; ``None`` for no output.
_RETURN_BASES = frozenset({"Tensor", "int", "float", "bool", "Number"})


def _optional(term: TypeTerm) -> Optional[TypeTerm]:
    """``X`` for the term of ``Optional[X]``."""
    if isinstance(term, tuple) and term[0] == "Union" and "None" in term[1] and len(term[1]) == 2:
        return next(member for member in term[1] if member != "None")
    return None


def _sequence_of(term: TypeTerm) -> Optional[TypeTerm]:
    if isinstance(term, tuple) and term[0] in _SEQUENCE_HEADS and len(term[1]) == 1:
        return term[1][0]
    return None


def parameter_type_supported(term: TypeTerm) -> bool:
    """Whether infer_schema has a schema type for a parameter annotated ``term``."""
    if isinstance(term, str) and term in _PARAMETER_BASES:
        return True
    inner = _optional(term)
    if inner is not None:
        if isinstance(inner, str) and inner in _PARAMETER_BASES:
            return True
        element = _sequence_of(inner)
        return isinstance(element, str) and _PARAMETER_BASES.get(element, (False, False, False))[2]
    element = _sequence_of(term)
    if element is None:
        return False
    if isinstance(element, str):
        return _PARAMETER_BASES.get(element, (False, False, False))[0]
    element_inner = _optional(element)
    return isinstance(element_inner, str) and _PARAMETER_BASES.get(element_inner, (False, False, False))[1]


def return_type_supported(term: TypeTerm) -> bool:
    """Whether infer_schema can read a return annotated ``term`` (``typing.Tuple`` bare is read as ``()``)."""
    if term == "None" or term in _RETURN_BASES:
        return True
    if isinstance(term, tuple) and term[0] == "tuple":
        return all(_single_return(element) for element in term[1])
    return _single_return(term)


def _single_return(term: TypeTerm) -> bool:
    return term in _RETURN_BASES or (isinstance(term, tuple) and term[0] == "list" and term[1] == ("Tensor",))


# --- per-context state held at module level ----------------------------------------------------------------

# Constructors of module-level objects that hold state between calls (the value changes, the name does not).
STATE_HOLDER_FACTORIES = {"contextvars.ContextVar": "ContextVar", "threading.local": "threading.local"}
# A ContextVar is read and written through these methods.
CONTEXT_VAR_METHODS = frozenset({"get", "set", "reset"})
# Builtins that read or write an attribute of the object they are given.
ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def module_state_holders(
    tree: ast.Module, imports: ImportTable, rebound: Optional[Dict[str, str]] = None
) -> Dict[str, str]:
    """Module-level names bound once, to ``contextvars.ContextVar(...)`` or ``threading.local()``, each with
    its kind ("ContextVar" or "threading.local"). A name a function rebinds (``global``) is left out;
    ``rebound``, when given, is :func:`globals_assigned_in_functions` of the module, already worked out."""
    counts: Dict[str, int] = {}
    holders: Dict[str, str] = {}
    for node in _module_level_statements(tree.body):
        targets: List[ast.expr] = []
        value: Optional[ast.expr] = None
        if isinstance(node, ast.Assign):
            targets, value = list(node.targets), node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets, value = [node.target], node.value if isinstance(node, ast.AnnAssign) else None
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            targets = [node.target] if isinstance(node, (ast.For, ast.AsyncFor)) else [
                item.optional_vars for item in node.items if item.optional_vars is not None
            ]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            counts[node.name] = counts.get(node.name, 0) + 1
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = (alias.asname or alias.name).split(".")[0]
                counts[name] = counts.get(name, 0) + 1
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):  # not ``state.attr = ...``
                    counts[sub.id] = counts.get(sub.id, 0) + 1
        if len(targets) == 1 and isinstance(targets[0], ast.Name) and isinstance(value, ast.Call):
            dotted = ast_dotted(value.func)
            kind = STATE_HOLDER_FACTORIES.get(imports.resolve_dotted(dotted) or "") if dotted else None
            if kind is not None:
                holders[targets[0].id] = kind
    if rebound is None:
        rebound = globals_assigned_in_functions(tree)
    return {name: kind for name, kind in holders.items() if counts.get(name) == 1 and name not in rebound}


def _module_level_statements(statements: List[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's statements at any depth of ``if`` / ``try`` / ``with`` / loops, not inside defs."""
    pending = list(reversed(statements))
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for block_name in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, block_name, None)
            if isinstance(block, list):
                pending.extend(reversed(block))


@dataclass(frozen=True)
class StateUse:
    """Where a function reads or writes a module-level state holder."""

    name: str
    kind: str
    node: ast.AST
    written: bool
    use: str  # as written: ``var.get()``, ``state.step``, ``getattr(state, ...)``


def state_holder_uses(function: AnyFunction, holders: Dict[str, str], local: Set[str]) -> List[StateUse]:
    """The reads and writes of ``holders`` in ``function``'s own scope (names in ``local`` are the
    function's own): ``var.get()`` / ``var.set(v)`` / ``var.reset(token)`` on a ContextVar, attribute loads
    and stores (and getattr / setattr) on a threading.local."""
    uses: List[StateUse] = []
    for node in own_scope(function):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            name = node.value.id
            kind = holders.get(name)
            if kind is None or name in local:
                continue
            if kind == "ContextVar" and node.attr in CONTEXT_VAR_METHODS:
                uses.append(StateUse(name, kind, node, node.attr != "get", f"{name}.{node.attr}()"))
            elif kind == "threading.local":
                written = isinstance(node.ctx, (ast.Store, ast.Del))
                uses.append(StateUse(name, kind, node, written, f"{name}.{node.attr}"))
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_FUNCTIONS
            and node.args and isinstance(node.args[0], ast.Name)
        ):
            name = node.args[0].id
            if holders.get(name) == "threading.local" and name not in local:
                written = node.func.id in ("setattr", "delattr")
                uses.append(StateUse(name, "threading.local", node, written, f"{node.func.id}({name}, ...)"))
    return sorted(uses, key=lambda use: _position(use.node))
