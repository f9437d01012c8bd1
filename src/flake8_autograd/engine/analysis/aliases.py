"""Writes into a method's parameters: directly, through a value that certainly aliases one, or through a helper.

A view (``x.view(...)``, ``x.transpose(...)``, basic indexing such as ``x[0]`` or ``x[:, 1:]``, an element of
``x.unbind()``), ``x.data`` and ``x.detach()`` share the parameter's memory: writing into one writes into the
parameter. ``x.reshape``, ``x.flatten``, ``x.contiguous()`` and advanced indexing (``x[mask]``, ``x[idx]`` with
an index of unknown type) may copy, so a chain through them proves nothing and is not followed.

A write is an in-place method (``.add_()``), an indexed or augmented assignment, ``out=``, a torch in-place
function (``torch.relu_(x)``, ``F.relu(x, inplace=True)``), or a call of a function of the same module whose
own body writes into the matching parameter (followed one level deep; a write in the helper guarded by a flag
parameter, ``if inplace:``, counts only when the call sets that flag).
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from .module_analysis import Analysis, _top_level_names as top_level_names  # one reading of what a statement binds
from ..models.body_facts import BodyFacts, collect_facts
from ..models.class_model import Method
from ..syntax.names import ImportTable
from ..syntax.source import syntax_depth_exceeds
from ..syntax.walk import cst_dotted, short_code, walk_scope

# Methods whose result always shares the receiver's memory.
VIEW_METHODS = frozenset(
    {
        "view",
        "view_as",
        "transpose",
        "t",
        "permute",
        "squeeze",
        "unsqueeze",
        "expand",
        "expand_as",
        "narrow",
        "select",
        "detach",
        "diagonal",
        "movedim",
        "moveaxis",
        "swapaxes",
        "swapdims",
        "unfold",
        "as_strided",
    }
)
VIEW_ATTRIBUTES = frozenset({"data", "T", "mT"})
# Methods returning a sequence of views of the receiver.
SPLITTING_METHODS = frozenset({"unbind", "chunk", "split"})

# In-place methods that do not change a tensor's values.
NOT_DATA_WRITES = frozenset({"requires_grad_", "retain_grad", "share_memory_", "record_stream"})

# ``torch.nn.functional`` functions that write into their first argument when given ``inplace=True``.
_INPLACE_FLAG_FUNCTIONS = frozenset(
    {
        "relu",
        "relu6",
        "elu",
        "selu",
        "celu",
        "leaky_relu",
        "rrelu",
        "hardtanh",
        "threshold",
        "hardsigmoid",
        "hardswish",
        "silu",
        "mish",
        "dropout",
        "dropout1d",
        "dropout2d",
        "dropout3d",
        "alpha_dropout",
        "feature_alpha_dropout",
    }
)

_MAX_ALIAS_DEPTH = 8  # a chain of local aliases longer than this is not followed


@dataclass(frozen=True)
class Write:
    """A write into parameter ``root``: ``node`` is the statement or call, ``how`` the kind of write."""

    root: str
    node: cst.CSTNode
    how: str  # ``.add_()``, ``indexed assignment``, ``out=``, ``torch.relu_()``, ``helper()``
    through: Optional[str] = None  # the alias written (``k``, ``x[0]``), or the helper; None: the name itself

    def describe(self) -> str:
        """The write for a message: ``.mul_()``, ``out= via x[0]``, ``helper()`` (a helper writing into its
        argument)."""
        return self.how if self.through is None else f"{self.how} via {self.through}"


class _Scope:
    """The facts and parameter names of one function body."""

    def __init__(self, facts: BodyFacts, params: Sequence[str], bound_once: Sequence[str] = ()) -> None:
        self.facts = facts
        self.params = frozenset(params)
        # Locals that are roots by their one binding (a tensor unpacked from ``ctx.saved_tensors``).
        self.bound_once = frozenset(bound_once)
        self._augmented: Dict[str, int] = {}
        for change in facts.in_place:
            if change.how == "augmented assignment":
                self._augmented[change.name] = self._augmented.get(change.name, 0) + 1

    def definitions(self, name: str) -> int:
        """How many times the body binds ``name``, ``name += ...`` (which keeps the object) aside."""
        return len(self.facts.bindings.get(name, [])) - self._augmented.get(name, 0)

    def alias_root(self, node: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        """The parameter ``node`` certainly shares memory with; None when it may be anything else."""
        if depth > _MAX_ALIAS_DEPTH:
            return None
        if isinstance(node, cst.Name):
            return self._name_root(node.value, depth)
        if isinstance(node, cst.Attribute) and node.attr.value in VIEW_ATTRIBUTES:
            return self.alias_root(node.value, depth + 1)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if node.func.attr.value in VIEW_METHODS:
                return self.alias_root(node.func.value, depth + 1)
            return None
        if isinstance(node, cst.Subscript):
            if _splits(node.value) and _single_integer_index(node):
                return self.alias_root(_receiver(node.value), depth + 1)
            if _basic_index(node):
                return self.alias_root(node.value, depth + 1)
        return None

    def _name_root(self, name: str, depth: int) -> Optional[str]:
        if name in self.params:
            return name if self.definitions(name) == 0 else None
        if name in self.bound_once:
            return name if self.definitions(name) == 1 else None
        if self.definitions(name) != 1:
            return None
        values = [binding for binding in self.facts.bindings[name] if binding.value is not None]
        if len(values) != 1:
            return None  # bound by a loop, a ``with``, ...: not followed
        (binding,) = values
        assert binding.value is not None
        if binding.index is None:
            return self.alias_root(binding.value, depth + 1)
        if _splits(binding.value):  # ``a, b = x.unbind(0)``
            return self.alias_root(_receiver(binding.value), depth + 1)
        return None

    def writes(self, imports: ImportTable, helpers: Optional["_Helpers"]) -> Iterator[Write]:
        """Every write into a parameter, in body order within each kind."""
        facts = self.facts
        for change in facts.in_place:
            if change.how == "out=" and not _torch_call(change.node, imports):
                continue  # ``flash_backward(dout, q, k, v, out=out)``: a kernel's own ``out`` may be read
            root = self._name_root(change.name, 0)
            if root is not None:
                yield Write(root, change.node, change.how, None if root == change.name else change.name)
        for change in facts.expression_writes:
            assert change.target is not None
            yield from self._write_through(change.target, change.node, change.how)
        for call in facts.calls:
            yield from self._call_writes(call, imports, helpers)

    def _write_through(self, target: cst.BaseExpression, node: cst.CSTNode, how: str) -> Iterator[Write]:
        root = self.alias_root(target)
        if root is not None:
            yield Write(root, node, how, short_code(target) or "a view")

    def _call_writes(self, call: cst.Call, imports: ImportTable, helpers: Optional["_Helpers"]) -> Iterator[Write]:
        func = call.func
        if isinstance(func, cst.Attribute) and not isinstance(func.value, cst.Name):
            method = func.attr.value
            if _is_in_place_method(method):
                yield from self._write_through(func.value, call, f".{method}()")
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "out" and not isinstance(arg.value, cst.Name):
                if _torch_call(call, imports):
                    yield from self._write_through(arg.value, call, "out=")
        dotted = cst_dotted(func)
        if dotted is None:
            return
        resolved = imports.resolve_dotted(dotted) or ""
        written = _torch_function_target(resolved, call)
        if written is not None:
            root = self.alias_root(written)
            how = f"{dotted}()" if _is_in_place_method(resolved) else f"{dotted}(inplace=True)"
            if root is not None:
                yield Write(root, call, how, None if _names(written, root) else short_code(written) or "a view")
            return
        helper = func.value if isinstance(func, cst.Name) else None
        if helpers is None or helper is None or helper in self.facts.bindings or helper in self.params:
            return
        for argument in helpers.written_arguments(helper, call):
            root = self.alias_root(argument)
            if root is not None:
                through = short_code(argument) if not _names(argument, root) else None
                yield Write(root, call, f"{helper}()", through)


def _torch_call(node: cst.CSTNode, imports: ImportTable) -> bool:
    """A call of a torch function (``torch.mul(a, b, out=c)``), whose ``out=`` is what it writes; other
    callees (kernel wrappers) may name an input ``out``."""
    if not isinstance(node, cst.Call):
        return False
    dotted = cst_dotted(node.func)
    return dotted is not None and (imports.resolve_dotted(dotted) or "").startswith("torch.")


def _names(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _is_in_place_method(method: str) -> bool:
    return method.endswith("_") and not method.endswith("__") and method not in NOT_DATA_WRITES


def _receiver(call: cst.BaseExpression) -> cst.BaseExpression:
    assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
    return call.func.value


def _splits(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in SPLITTING_METHODS
    )


def _integer(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, cst.Integer)


def _single_integer_index(node: cst.Subscript) -> bool:
    if len(node.slice) != 1:
        return False
    element = node.slice[0].slice
    return isinstance(element, cst.Index) and element.star is None and _integer(element.value)


def _basic_index(node: cst.Subscript) -> bool:
    """Every index is a slice, an integer written out, ``None`` or ``...``: the result is a view."""
    for element in node.slice:
        index = element.slice
        if isinstance(index, cst.Slice):
            continue
        if not isinstance(index, cst.Index) or index.star is not None:
            return False
        value = index.value
        if _integer(value) or isinstance(value, cst.Ellipsis):
            continue
        if isinstance(value, cst.Name) and value.value == "None":
            continue
        return False
    return True


def _torch_function_target(resolved: str, call: cst.Call) -> Optional[cst.BaseExpression]:
    """The tensor a torch function writes into: ``torch.relu_(x)``, ``F.relu(x, inplace=True)``."""
    if not resolved.startswith("torch.") or not call.args or call.args[0].keyword is not None or call.args[0].star:
        return None
    name = resolved.rsplit(".", 1)[-1]
    if _is_in_place_method(name):
        return call.args[0].value
    if resolved.startswith("torch.nn.functional.") and name in _INPLACE_FLAG_FUNCTIONS:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "inplace" and _truth(arg.value) is True:
                return call.args[0].value
    return None


def _truth(node: Optional[cst.BaseExpression]) -> Optional[bool]:
    """The truth of a constant written out; None when not a constant."""
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return node.value == "True"
    if isinstance(node, cst.Integer):
        return node.evaluated_value != 0
    return None


def method_writes(method: Method, analysis: Analysis) -> List[Write]:
    """Every write ``method`` makes into one of its parameters, directly, through an alias or a helper."""
    if method.node is None or method.signature is None:
        return []
    params = [param.name for param in method.signature.positional]
    return list(_Scope(method.facts, params).writes(analysis.imports, _helpers_of(analysis)))


def local_writes(method: Method, analysis: Analysis, names: Sequence[str]) -> List[Write]:
    """Every write ``method`` makes into one of ``names``, locals each bound once (by the caller's reading,
    e.g. unpacked from ``ctx.saved_tensors``), directly, through an alias or a helper. A name bound again
    (``x = x.clone()``) is no longer the object it first held: writes into it are not returned."""
    if method.node is None or not names:
        return []
    scope = _Scope(method.facts, (), bound_once=names)
    return list(scope.writes(analysis.imports, _helpers_of(analysis)))


# --- one level of helpers: module functions writing into a parameter ------------------------------------


# A condition on a helper's parameter: (parameter, TRUTH or IS_NONE, the value it must have for a node to run).
# A test on parameters that is neither ``p``, ``not p``, ``p is None`` nor ``p is not None`` is UNKNOWN.
_Guard = Tuple[str, str, bool]
TRUTH, IS_NONE, UNKNOWN = "truth", "is None", "unknown"


@dataclass(frozen=True)
class _HelperWrite:
    param: str
    guards: Tuple[_Guard, ...]  # every one must hold at the call for the write to happen


class _HelperFunction:
    def __init__(self, node: cst.FunctionDef, imports: ImportTable) -> None:
        signature = node.params
        self.positional = [param.name.value for param in list(signature.posonly_params) + list(signature.params)]
        self.keyword_only = {param.name.value for param in signature.kwonly_params}
        self.defaults: Dict[str, Optional[cst.BaseExpression]] = {
            param.name.value: param.default
            for param in list(signature.posonly_params) + list(signature.params) + list(signature.kwonly_params)
        }
        scope = _Scope(collect_facts(node, None), self.positional + sorted(self.keyword_only))
        writes = list(scope.writes(imports, None))
        guards = _FlagGuards(node, set(self.defaults)) if writes else None
        self.writes = [_HelperWrite(write.root, guards.of(write.node) if guards else ()) for write in writes]

    def argument(self, call: cst.Call, param: str) -> Tuple[bool, Optional[cst.BaseExpression]]:
        """(known, the expression ``call`` binds to ``param``, None for its default)."""
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == param:
                return True, arg.value
        positional = [arg for arg in call.args if arg.keyword is None]
        if any(arg.star for arg in call.args):
            return False, None
        if param in self.positional:
            index = self.positional.index(param)
            if index < len(positional):
                return True, positional[index].value
        return True, None

    def written_arguments(self, call: cst.Call) -> Iterator[cst.BaseExpression]:
        for write in self.writes:
            known, argument = self.argument(call, write.param)
            if not known or argument is None:
                continue
            if all(self._holds(call, guard) for guard in write.guards):
                yield argument

    def _holds(self, call: cst.Call, guard: _Guard) -> bool:
        """Whether ``guard`` certainly holds for ``call``; False when unsure."""
        param, test, wanted = guard
        known, value = self.argument(call, param)
        if not known or test == UNKNOWN:
            return False
        value = value if value is not None else self.defaults.get(param)
        if test == IS_NONE:
            if isinstance(value, cst.Name) and value.value == "None":
                return wanted
            is_constant = isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)) or _truth(value) is not None
            return is_constant and not wanted
        return _truth(value) is wanted


class _FlagGuards:
    """For each node of ``function`` under a test on its parameters (``if inplace:``): what must hold for it
    to run. Tests that mention no parameter are not conditions (as in a contract method, either branch may run).

    ``if not flag: return ...`` also guards every node the walk meets after it with ``flag``: a conservative
    reading, since such a node may sit in another branch (the guard then only makes the helper quieter).
    A node keeps how many early exits came before it, not a copy of them: linear in the body's size.
    """

    def __init__(self, function: cst.FunctionDef, params: Set[str]) -> None:
        self._branches: Dict[int, Tuple[_Guard, ...]] = {}
        self._exits_before: Dict[int, int] = {}
        self._exits: List[_Guard] = []  # what the early exits met so far leave holding
        inside_exit: Set[int] = set()
        for node in walk_scope(function.body):
            if self._exits and id(node) not in inside_exit:
                self._exits_before[id(node)] = len(self._exits)
            if not isinstance(node, cst.If):
                continue
            flag = _flag_test(node.test, params)
            if flag is None:
                continue
            branches: List[Tuple[cst.CSTNode, _Guard]] = [(node.body, flag)]
            if node.orelse is not None:
                branches.append((node.orelse, _negated(flag)))
            for branch, holds in branches:
                for inner in walk_scope(branch):
                    self._branches[id(inner)] = self._branches.get(id(inner), ()) + (holds,)
            if node.orelse is None and _exits(node.body):
                inside_exit.update(id(inner) for inner in walk_scope(node.body))
                self._exits.append(_negated(flag))

    def of(self, node: cst.CSTNode) -> Tuple[_Guard, ...]:
        key = id(node)
        return self._branches.get(key, ()) + tuple(self._exits[: self._exits_before.get(key, 0)])


def _negated(guard: _Guard) -> _Guard:
    return guard if guard[1] == UNKNOWN else (guard[0], guard[1], not guard[2])


def _flag_test(test: cst.BaseExpression, params: Set[str]) -> Optional[_Guard]:
    """The condition ``test`` puts on the parameters; None when it mentions none."""
    if isinstance(test, cst.Name) and test.value in params:
        return test.value, TRUTH, True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _flag_test(test.expression, params)
        return _negated(inner) if inner is not None else None
    if (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value in params
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].comparator, cst.Name)
        and test.comparisons[0].comparator.value == "None"
        and isinstance(test.comparisons[0].operator, (cst.Is, cst.IsNot))
    ):
        return test.left.value, IS_NONE, isinstance(test.comparisons[0].operator, cst.Is)
    if any(isinstance(node, cst.Name) and node.value in params for node in walk_scope(test)):
        return "", UNKNOWN, False
    return None


def _exits(body: cst.BaseSuite) -> bool:
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    last = statements[-1] if statements else None
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(small, (cst.Return, cst.Raise)) for small in last.body)
    if isinstance(last, cst.SimpleStatementSuite):
        return any(isinstance(small, (cst.Return, cst.Raise)) for small in last.body)
    return False


class _Helpers:
    """The module's top-level functions bound once, each parsed on its first call from a contract method."""

    def __init__(self, tree: ast.Module, imports: ImportTable) -> None:
        self.imports = imports
        self._tree = tree
        self._sources: Optional[Dict[str, ast.FunctionDef]] = None  # read on the first call of a bare name
        self._parsed: Dict[str, Optional[_HelperFunction]] = {}

    def _functions_bound_once(self) -> Dict[str, ast.FunctionDef]:
        bound: Dict[str, int] = {}
        for statement in self._tree.body:
            for name in top_level_names(statement):
                bound[name] = bound.get(name, 0) + 1
        return {
            statement.name: statement
            for statement in self._tree.body
            if isinstance(statement, ast.FunctionDef) and bound[statement.name] == 1
        }

    def written_arguments(self, name: str, call: cst.Call) -> Iterator[cst.BaseExpression]:
        if self._sources is None:
            self._sources = self._functions_bound_once()
        if name not in self._parsed:
            self._parsed[name] = self._parse(name)
        helper = self._parsed[name]
        if helper is not None:
            yield from helper.written_arguments(call)

    def _parse(self, name: str) -> Optional[_HelperFunction]:
        source = (self._sources or {}).get(name)
        if source is None or not _may_write(source, self.imports):
            return None
        if syntax_depth_exceeds(source):  # libcst's parser would overflow the C stack on it
            return None
        try:  # the module was parsed by ``ast`` only: parse this one function again, as libcst
            module = cst.parse_module(ast.unparse(source))
        except Exception:  # noqa: BLE001 - a helper that cannot be read again is not followed
            return None
        function = module.body[0] if module.body else None
        if not isinstance(function, cst.FunctionDef):
            return None
        helper = _HelperFunction(function, self.imports)
        return helper if helper.writes else None


def _may_write(function: ast.FunctionDef, imports: ImportTable) -> bool:
    """Whether ``function``'s ``ast`` holds anything that can write into a tensor it is handed: an
    augmented assignment or an assignment into a subscript, or a call of an in-place method, each on a
    parameter or a local (``x[0] = 1``, ``t += 1``, ``x.add_(y)``; a global such as a cache of streams is
    no parameter); a call of an in-place function (``torch.relu_(x)``, ``relu_`` imported under another
    name), an ``out=`` or ``inplace=`` argument. Without one, the helper writes none of its arguments,
    and it is not parsed again to find out."""
    nodes = list(ast.walk(function))
    arguments = function.args
    # What a name can hold an argument through: a parameter, or a local it was bound to; not a global.
    locals_ = {each.arg for each in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
    locals_.update(each.arg for each in (arguments.vararg, arguments.kwarg) if each is not None)
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            locals_.add(node.id)
    for node in nodes:
        if isinstance(node, ast.Global):
            locals_.difference_update(node.names)

    def may_hold_an_argument(target: ast.expr) -> bool:
        root = _ast_root(target)
        return root is None or root in locals_

    for node in nodes:
        kind = type(node)
        if kind is ast.AugAssign and may_hold_an_argument(node.target):  # type: ignore[attr-defined]
            return True
        if kind is ast.Subscript and type(node.ctx) is ast.Store:  # type: ignore[attr-defined]
            if may_hold_an_argument(node):  # type: ignore[arg-type]
                return True
        if kind is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            if type(func) is ast.Attribute and func.attr.endswith("_") and may_hold_an_argument(func.value):
                return True
            if type(func) is ast.Name:
                if func.id.endswith("_") or (imports.resolve_name(func.id) or "").endswith("_"):
                    return True
        if kind is ast.keyword and node.arg in ("out", "inplace"):  # type: ignore[attr-defined]
            return True
    return False


def _ast_root(node: ast.expr) -> Optional[str]:
    """The name at the root of ``x``, ``x.a``, ``x[0]``, ``x.view(-1)[0]``; None for anything else."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


# One reading of the module's helpers per module, dropped with its Analysis.
_HELPERS: "weakref.WeakKeyDictionary[Analysis, _Helpers]" = weakref.WeakKeyDictionary()


def _helpers_of(analysis: Analysis) -> _Helpers:
    found = _HELPERS.get(analysis)
    if found is None:
        found = _Helpers(analysis.tree, analysis.imports)
        _HELPERS[analysis] = found
    return found
