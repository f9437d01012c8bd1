"""Feasible paths: what is certain of a condition where the code can run.

A branch that can never be taken must not count: a ``return`` under ``if False:`` is not a way out of
backward, a store on ctx under ``if TYPE_CHECKING:`` never happens. :class:`Conditions` settles a
condition to True, False or None (unknown) from what the module itself fixes:

- literals (``False``, ``0``, ``None``, ``"x"``), ``not``, ``and``, ``or``;
- a module-level name bound exactly once in the whole module, by a top-level assignment of a value
  settled here (``LEGACY = False``), with no other binding anywhere (assignment, ``del``, loop, ``with``,
  import, parameter, ``global`` statement, walrus, ...): its value; ``typing.TYPE_CHECKING`` is False
  at run time;
- a comparison of torch's version (``torch.__version__`` as a string, parsed by
  ``packaging.version``, or split into numbers, directly or through such a constant) with a release
  older than the oldest torch the code can run on (:func:`oldest_torch`).

Anything else is unknown, and unknown keeps both branches. Conditions are read from flake8's ``ast``
(a libcst condition is turned into ``ast`` through its code), so the module's constants are found
once, by one walk of the module, when a class first asks.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, Type, Union

import libcst as cst

from ...core.conventions import TorchVersion
from ..models.class_model import ClassModel
from ..syntax.names import ImportTable, ast_dotted
from ..syntax.walk import cst_dotted, is_larger_than, walk

# A condition larger than this is not read: real guards are short, and the conversion to ``ast``
# must stay cheap and far from Python's recursion limit.
_MAX_CONDITION_NODES = 80
# Constants defined through constants: deeper than this is unknown.
_MAX_DEPTH = 8

_TORCH_VERSION_NAMES = frozenset({"torch.__version__", "torch.version.__version__"})
_VERSION_PARSERS = frozenset(
    {"packaging.version.parse", "packaging.version.Version", "pkg_resources.parse_version"}
)
_TYPE_CHECKING = frozenset({"typing.TYPE_CHECKING", "typing_extensions.TYPE_CHECKING"})
# Every import whose value the evaluator reads: a condition naming none of them (nor a constant of the
# module) is settled by its literals alone, or not at all.
_FIXED_IMPORTS = _TYPE_CHECKING | _TORCH_VERSION_NAMES | _VERSION_PARSERS

# APIs a module cannot use on an older torch, and the release that brought each. A module that uses one
# where it runs at import (a top-level import, a decorator of a top-level definition, a top-level
# call) cannot run on an older torch. Each was checked against PyTorch's history:
_API_RELEASES: Dict[str, TorchVersion] = {
    "torch.library.custom_op": TorchVersion(2, 4),  # pytorch/pytorch#122344 (torch/_library/custom_ops.py)
    "torch.amp.custom_fwd": TorchVersion(2, 4),  # pytorch/pytorch#126531, device-agnostic, in 2.4
    "torch.amp.custom_bwd": TorchVersion(2, 4),  # (torch.cuda.amp's deprecated in their favour)
    "torch.func": TorchVersion(2, 0),  # functorch's APIs as torch.func, new in 2.0
    "torch.compile": TorchVersion(2, 0),  # the 2.0 release
    "torch.cuda.amp.custom_fwd": TorchVersion(1, 6),  # torch.cuda.amp, new in 1.6
    "torch.cuda.amp.custom_bwd": TorchVersion(1, 6),
}
# What a Function class itself proves of the torch it runs on: a ``setup_context`` staticmethod is read
# by autograd only since 2.0 (before, forward got the ctx and the class could not work), and
# ``ctx.set_materialize_grads`` exists since 1.7 (pytorch/pytorch#41821).
_SETUP_CONTEXT_RELEASE = TorchVersion(2, 0)
_SET_MATERIALIZE_GRADS_RELEASE = TorchVersion(1, 7)

_LITERAL_NAMES = {"True": True, "False": False, "None": False}
_SIMPLE_RELEASE = re.compile(r"^([0-9]+)(?:\.([0-9]+))*$", re.ASCII)


@dataclass(frozen=True)
class _Known:
    """A value the module fixes: a literal, or a tuple of them."""

    value: Any


@dataclass(frozen=True)
class _Torch:
    """torch's version, as code handles it: ``str`` (``torch.__version__``), ``parsed`` (a packaging
    Version of it), ``parts`` (its ``split('.')``, the first ``size`` of them when sliced), ``ints`` (the
    first ``size`` parts as a tuple of int), ``part`` and ``int`` (the part at ``size``, as str or int)."""

    form: str
    size: Optional[int] = None


@dataclass(frozen=True)
class _Release:
    """A release written as a literal and parsed (``version.parse("1.10")``)."""

    release: Tuple[int, ...]


_Value = Union[_Known, _Torch, _Release, None]


def oldest_torch(setting: Optional[TorchVersion], module_floor: Optional[TorchVersion],
                 class_floor: Optional[TorchVersion]) -> Optional[TorchVersion]:
    """The oldest torch the code can run on: the project's setting when given, else the newest release
    an API the module (or the class) uses proves, else unknown."""
    if setting is not None:
        return setting
    floors = [floor for floor in (module_floor, class_floor) if floor is not None]
    return max(floors) if floors else None


class Conditions:
    """The module's constants and the oldest torch it proves, found once; settles conditions."""

    def __init__(self, tree: ast.Module, imports: ImportTable, min_torch_version: Optional[TorchVersion]) -> None:
        self.imports = imports
        self.setting = min_torch_version
        self._tree = tree
        # The names a top-level assignment binds: only these can be constants. Cheap (the top level only),
        # so most conditions (``x is None``, ``ctx.needs_input_grad[0]``) are found unsettled without the
        # walk of the whole module that the constants need.
        self._candidates: Set[str] = set()
        for statement in tree.body:
            if isinstance(statement, (ast.Assign, ast.AnnAssign)):
                for target in statement.targets if isinstance(statement, ast.Assign) else [statement.target]:
                    self._candidates.update(
                        node.id for node in ast.walk(target) if isinstance(node, ast.Name)
                    )
        self._read = False
        self._constants: Dict[str, Tuple[ast.expr, Optional[int]]] = {}
        self._bound_once: Set[str] = set()
        self._bound: Optional[Set[str]] = None  # every name the module binds; None: unknown (``globals()``)
        self._module_floor: Optional[TorchVersion] = None

    @property
    def module_floor(self) -> Optional[TorchVersion]:
        self._ensure_read()
        return self._module_floor

    def _ensure_read(self) -> None:
        if not self._read:
            self._read = True
            self._read_module(self._tree)

    def settle(self, test: cst.BaseExpression, model: ClassModel) -> Optional[bool]:
        """True or False when ``test``, in a method of ``model``, can only be that; None when unknown."""
        if isinstance(test, cst.Name):
            if test.value in _LITERAL_NAMES:
                return _LITERAL_NAMES[test.value]
            if test.value not in self._candidates and self.imports.resolve_name(test.value) is None:
                return None  # a parameter, a local: what the caller passes
        elif self._unsettled(test):
            return None
        return self._settle(test, lambda: oldest_torch(self.setting, self.module_floor, _class_floor(model)))

    def _settle(self, test: cst.BaseExpression, floor: Callable[[], Optional[TorchVersion]]) -> Optional[bool]:
        if isinstance(test, cst.Name):  # the common case, with no code to generate
            if test.value in _LITERAL_NAMES:
                return _LITERAL_NAMES[test.value]
            expression: Optional[ast.expr] = ast.Name(id=test.value, ctx=ast.Load())
        elif self._unsettled(test):
            return None
        else:
            expression = _as_ast(test)
        if expression is None:
            return None
        try:
            return _Evaluator(self, floor).truth(expression, 0)
        except (RecursionError, ValueError, TypeError, OverflowError):
            return None

    def _unsettled(self, test: cst.BaseExpression) -> bool:
        """Whether ``test`` certainly cannot be settled, seen without generating its code: too large, or
        naming only what the module does not fix (``x is None``, ``grad.dim() == 2``, ``x.dtype ==
        torch.half``), the most common conditions by far. A literal, a constant of the module or an
        import that fixes a value (``TYPE_CHECKING``, torch's version and what parses it) may settle it;
        any other import (``torch``) names what only the running program knows."""
        below: List[cst.CSTNode] = []
        for node in walk(test):  # one walk, given up on past the size limit
            below.append(node)
            if len(below) > _MAX_CONDITION_NODES:
                return True
        free = [node.value for node in below if type(node) is cst.Name and node.value not in _LITERAL_NAMES]
        if not free or any(name in self._candidates for name in free):
            return False
        if any(self._names_a_fixed_import(node) for node in [test, *below]):
            return False
        # Only what the caller passes, and literals: a literal settles it only as an operand of and/or/not
        # (``DEBUG and x``); compared with something unknown (``x is not None``) it settles nothing.
        return not any(_bare_literal_operand(node) for node in [test, *below])

    def _names_a_fixed_import(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` is a name or dotted name standing for an import the evaluator reads a value
        from (``TYPE_CHECKING``, ``torch.__version__``, ``packaging.version.parse``)."""
        if type(node) is not cst.Name and type(node) is not cst.Attribute:
            return False
        dotted = cst_dotted(node)
        return dotted is not None and self.imports.resolve_dotted(dotted) in _FIXED_IMPORTS

    # --- the module: its names bound exactly once, and the torch it proves --------------------------

    def _read_module(self, tree: ast.Module) -> None:
        counts: Dict[str, int] = {}
        star_lines: List[int] = []
        rebinds_everything = False
        for node in ast.walk(tree):
            for name in _bound_names(node):
                counts[name] = counts.get(name, 0) + 1
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                for name in node.names:
                    counts[name] = counts.get(name, 0) + 2  # a function may rebind it: never once
            elif isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
                star_lines.append(node.lineno)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("globals", "vars"):
                rebinds_everything = True  # ``globals()[name] = ...`` binds what no statement shows
        if rebinds_everything:
            return
        self._bound = set(counts)
        self._bound_once = {name for name, count in counts.items() if count == 1}
        for statement in tree.body:
            self._read_top_level(statement, star_lines)
        self._module_floor = _module_floor(tree, self.imports)

    def _read_top_level(self, statement: ast.stmt, star_lines: List[int]) -> None:
        if any(line > statement.lineno for line in star_lines):
            return  # a later ``import *`` may bind the name again
        if isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets: List[ast.expr] = [statement.target]
            value: ast.expr = statement.value
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            targets, value = [statement.targets[0]], statement.value
        else:
            return
        target = targets[0]
        if isinstance(target, ast.Name) and target.id in self._bound_once:
            self._constants[target.id] = (value, None)
        elif isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(each, ast.Name) for each in target.elts):
            for index, each in enumerate(target.elts):
                assert isinstance(each, ast.Name)
                if each.id in self._bound_once:
                    self._constants[each.id] = (value, index)

    def constant(self, name: str) -> Optional[Tuple[ast.expr, Optional[int]]]:
        self._ensure_read()
        return self._constants.get(name)

    def bound_once(self, name: str) -> bool:
        self._ensure_read()
        return name in self._bound_once

    def rebound(self, dotted: str) -> bool:
        """Whether the module may bind the head of ``dotted`` itself (a builtin it shadows)."""
        self._ensure_read()
        return self._bound is None or dotted.partition(".")[0] in self._bound


def _bare_literal_operand(node: cst.CSTNode) -> bool:
    """``node`` is ``and``/``or``/``not`` with a literal name (``True``, ``False``, ``None``) as an operand."""
    if type(node) is cst.BooleanOperation:
        assert isinstance(node, cst.BooleanOperation)
        operands = [node.left, node.right]
    elif type(node) is cst.UnaryOperation and isinstance(node.operator, cst.Not):
        assert isinstance(node, cst.UnaryOperation)
        operands = [node.expression]
    else:
        return False
    return any(isinstance(operand, cst.Name) and operand.value in _LITERAL_NAMES for operand in operands)


def _bound_names(node: ast.AST) -> List[str]:
    """The names ``node`` binds, in whatever scope: a store or ``del`` of a name, a parameter, a
    definition, an import, an ``except ... as``, a ``match`` capture."""
    if isinstance(node, ast.Name):
        return [node.id] if isinstance(node.ctx, (ast.Store, ast.Del)) else []
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".", 1)[0] for alias in node.names if alias.name != "*"]
    if isinstance(node, ast.ExceptHandler):
        return [node.name] if node.name else []
    name = getattr(node, "name", None) if type(node).__name__ in ("MatchAs", "MatchStar") else None
    rest = getattr(node, "rest", None) if type(node).__name__ == "MatchMapping" else None
    return [each for each in (name, rest) if isinstance(each, str)]


def _as_ast(test: cst.BaseExpression) -> Optional[ast.expr]:
    """``test`` as an ``ast`` expression, through its code; None when too large or not an expression."""
    if is_larger_than(test, _MAX_CONDITION_NODES):
        return None
    try:
        code = cst.Module(body=[]).code_for_node(test)
        return ast.parse(f"({code}\n)", mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _module_floor(tree: ast.Module, imports: ImportTable) -> Optional[TorchVersion]:
    """The newest release among the APIs the module uses where it runs at import: a top-level import, a
    decorator of a top-level function or class or of a method of a top-level class, a top-level
    statement's call. A use inside a function, a ``try`` or an ``if`` proves nothing (it may be guarded)."""
    uses: List[ast.expr] = []
    floor: Optional[TorchVersion] = None
    for statement in tree.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                dotted = alias.name
                if isinstance(statement, ast.ImportFrom):  # a relative import is the project's own
                    dotted = f"{statement.module}.{alias.name}" if statement.module and not statement.level else ""
                floor = _newer(floor, _api_release(dotted))
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            uses.extend(statement.decorator_list)
            if isinstance(statement, ast.ClassDef):
                for inner in statement.body:
                    if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        uses.extend(inner.decorator_list)
        elif isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign)) and statement.value is not None:
            uses.append(statement.value)
    for use in uses:
        while isinstance(use, ast.Call):
            use = use.func
        named = ast_dotted(use)
        if named is not None:
            floor = _newer(floor, _api_release(imports.resolve_dotted(named) or ""))
    return floor


def _api_release(dotted: str) -> Optional[TorchVersion]:
    """The release that brought ``dotted`` (or the module it lies in), if the table knows it."""
    while dotted:
        found = _API_RELEASES.get(dotted)
        if found is not None:
            return found
        dotted = dotted.rpartition(".")[0]
    return None


def _newer(first: Optional[TorchVersion], second: Optional[TorchVersion]) -> Optional[TorchVersion]:
    if first is None or second is None:
        return first or second
    return max(first, second)


def _class_floor(model: ClassModel) -> Optional[TorchVersion]:
    """What the class proves: a ``setup_context`` staticmethod of its own (2.0), a call of
    ``ctx.set_materialize_grads`` standing directly in its forward or setup_context (1.7)."""
    floor: Optional[TorchVersion] = None
    setup = model.own_methods.get("setup_context")
    if setup is not None and setup.node is not None and setup.is_static:
        floor = _SETUP_CONTEXT_RELEASE
    for role in ("forward", "setup_context"):
        method = model.own_methods.get(role)
        body = method.node.body if method is not None and method.node is not None else None
        if not isinstance(body, cst.IndentedBlock):
            continue
        for statement in body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                call = small.value if isinstance(small, cst.Expr) else None
                if (
                    isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                    and call.func.attr.value == "set_materialize_grads"
                ):
                    floor = _newer(floor, _SET_MATERIALIZE_GRADS_RELEASE)
    return floor


class _Evaluator:
    """Reads one condition: values the module fixes, torch's version, and what compares them."""

    def __init__(self, conditions: Conditions, floor: Callable[[], Optional[TorchVersion]]) -> None:
        self.conditions = conditions
        self._floor_of = floor
        self._floor: Optional[Tuple[Optional[TorchVersion]]] = None

    @property
    def floor(self) -> Optional[TorchVersion]:
        """The oldest torch the code runs on, worked out only for a condition that compares versions."""
        if self._floor is None:
            self._floor = (self._floor_of(),)
        return self._floor[0]

    def truth(self, node: ast.expr, depth: int) -> Optional[bool]:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.truth(node.operand, depth + 1)
            return None if inner is None else not inner
        if isinstance(node, ast.BoolOp):
            verdicts = [self.truth(value, depth + 1) for value in node.values]
            decisive = isinstance(node.op, ast.Or)  # ``or`` is settled by one true operand, ``and`` by one false
            if decisive in verdicts:
                return decisive
            return None if None in verdicts else not decisive
        if isinstance(node, ast.Compare):
            return self._compare(node, depth)
        value = self.value(node, depth)
        if isinstance(value, _Known):
            return bool(value.value)
        return None

    def value(self, node: ast.expr, depth: int) -> _Value:
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, ast.Constant):
            return _Known(node.value)
        if isinstance(node, ast.Tuple):
            elements = [self.value(element, depth + 1) for element in node.elts]
            if all(isinstance(element, _Known) for element in elements):
                return _Known(tuple(element.value for element in elements))  # type: ignore[union-attr]
            return None
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self._named(node, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self._int_parts(node, depth)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, depth)
        return None

    def _named(self, node: Union[ast.Name, ast.Attribute], depth: int) -> _Value:
        dotted = ast_dotted(node)
        if dotted is None:
            return None
        head = dotted.partition(".")[0]
        resolved = self.conditions.imports.resolve_dotted(dotted)
        if resolved in _TYPE_CHECKING and self.conditions.bound_once(head):
            return _Known(False)
        if resolved in _TORCH_VERSION_NAMES:
            return _Torch("str")
        if isinstance(node, ast.Name):
            constant = self.conditions.constant(node.id)
            if constant is not None:
                value, index = constant
                found = self.value(value, depth + 1)
                return found if index is None else _element(found, index)
        return None

    def _call(self, node: ast.Call, depth: int) -> _Value:
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            return None
        func = ast_dotted(node.func)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "split" and len(node.args) <= 1:
            receiver = self.value(node.func.value, depth + 1)
            separator = self.value(node.args[0], depth + 1) if node.args else None
            if receiver == _Torch("str") and separator == _Known("."):
                return _Torch("parts")
            if receiver == _Torch("str") and separator == _Known("+"):
                return _Torch("local")  # ``split('+')[0]`` is the version without its local part
            return None
        if func is None or len(node.args) > 2:
            return None
        resolved = self.conditions.imports.resolve_dotted(func) or func
        if len(node.args) == 1 and resolved in _VERSION_PARSERS:
            argument = self.value(node.args[0], depth + 1)
            if argument == _Torch("str"):
                return _Torch("parsed")
            if isinstance(argument, _Known) and isinstance(argument.value, str):
                match = _SIMPLE_RELEASE.match(argument.value)
                return _Release(tuple(int(part) for part in argument.value.split("."))) if match else None
            return None
        if func in ("int", "map", "tuple", "list") and self.conditions.rebound(func):
            return None  # ``int``, ``map`` or ``tuple`` of the module's own
        if func == "map":
            return self._int_parts(node, depth)
        if func == "int" and len(node.args) == 1:
            argument = self.value(node.args[0], depth + 1)
            if isinstance(argument, _Torch) and argument.form == "part":
                return _Torch("int", argument.size)
            return None
        if func in ("tuple", "list") and len(node.args) == 1:
            return self._int_parts(node.args[0], depth)
        return None

    def _int_parts(self, node: ast.expr, depth: int) -> _Value:
        """``map(int, parts[:k])`` or ``(int(x) for x in parts[:k])``: the first k numbers, as a tuple."""
        source: Optional[ast.expr] = None
        if (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "map"
            and len(node.args) == 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == "int"
        ):
            source = node.args[1]
        elif isinstance(node, (ast.GeneratorExp, ast.ListComp)) and len(node.generators) == 1:
            generator = node.generators[0]
            element = node.elt
            if (
                not generator.ifs and not generator.is_async and isinstance(generator.target, ast.Name)
                and isinstance(element, ast.Call) and isinstance(element.func, ast.Name) and element.func.id == "int"
                and len(element.args) == 1 and not element.keywords and isinstance(element.args[0], ast.Name)
                and element.args[0].id == generator.target.id
            ):
                source = generator.iter
        if source is None:
            return None
        parts = self.value(source, depth + 1)
        if isinstance(parts, _Torch) and parts.form == "parts" and parts.size is not None and parts.size <= 2:
            return _Torch("ints", parts.size)  # only major and minor are always numbers
        return None

    def _subscript(self, node: ast.Subscript, depth: int) -> _Value:
        index = node.slice
        receiver = self.value(node.value, depth + 1)
        if receiver == _Torch("local") and isinstance(index, ast.Constant) and index.value == 0:
            return _Torch("str")
        if not (isinstance(receiver, _Torch) and receiver.form == "parts"):
            return None
        if isinstance(index, ast.Constant) and isinstance(index.value, int) and not isinstance(index.value, bool):
            return _element(receiver, index.value)
        if isinstance(index, ast.Slice) and index.lower is None and index.step is None and index.upper is not None:
            upper = self.value(index.upper, depth + 1)
            if isinstance(upper, _Known) and type(upper.value) is int and upper.value > 0:
                return _Torch("parts", upper.value)
        return None

    def _compare(self, node: ast.Compare, depth: int) -> Optional[bool]:
        if len(node.ops) != 1:
            return None
        operator = type(node.ops[0])
        left, right = self.value(node.left, depth + 1), self.value(node.comparators[0], depth + 1)
        if isinstance(left, _Known) and isinstance(right, _Known):
            return _literal_comparison(operator, left.value, right.value)
        if isinstance(right, _Torch) and operator in _MIRRORED:  # ``"1.0" > torch.__version__``
            left, right, operator = right, left, _MIRRORED[operator]
        if not isinstance(left, _Torch) or self.floor is None:
            return None
        floor = (self.floor.major, self.floor.minor)
        if left.form == "parsed" and isinstance(right, _Release):
            # Every torch the code runs on has a release at least the floor, pre-releases included
            # (2.4.0a0 has release 2.4.0): it is newer than any strictly older release, whatever its tags.
            return _versus_older(operator, _padded(right.release) < _padded(floor))
        if left.form == "ints" and isinstance(right, _Known) and _int_tuple(right.value):
            size = left.size or 0
            return _versus_older(operator, right.value <= floor[:size], strictly=right.value < floor[:size])
        if left.form == "int" and left.size == 0 and isinstance(right, _Known) and type(right.value) is int:
            return _versus_older(operator, right.value <= floor[0], strictly=right.value < floor[0])
        if left.form == "str" and isinstance(right, _Known) and isinstance(right.value, str):
            return _versus_older(operator, _string_older(right.value, floor[0]))
        return None


# ``literal OP version`` read as ``version OP' literal``.
_MIRRORED: Dict[Type[ast.cmpop], Type[ast.cmpop]] = {
    ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq,
}


def _versus_older(operator: Type[ast.cmpop], older: bool, strictly: Optional[bool] = None) -> Optional[bool]:
    """``version OP literal`` where every version the code runs on is at least the floor. ``older``: the
    literal is at most the floor (``version < literal`` and ``>=`` are settled); ``strictly``: strictly
    below it (every operator is settled). For parsed versions and strings both are the strict test."""
    strictly = older if strictly is None else strictly
    if operator is ast.Lt and older:
        return False
    if operator is ast.GtE and older:
        return True
    if not strictly:
        return None
    settled: Dict[Type[ast.cmpop], bool] = {ast.LtE: False, ast.Gt: True, ast.Eq: False, ast.NotEq: True}
    return settled.get(operator)


def _string_older(literal: str, floor_major: int) -> bool:
    """Whether every version string of a torch at least the floor compares above ``literal`` as a string.

    Strings compare character by character, so "2.10" < "2.9": only a literal whose major is a single
    digit below the floor's (also a single digit) is settled, its first character deciding. A torch
    numbered 10 or more would break this; none is in sight.
    """
    match = re.match(r"^([0-9])(?:\.|$)", literal)
    return match is not None and floor_major <= 9 and int(match.group(1)) < floor_major


def _padded(release: Tuple[int, ...]) -> Tuple[int, ...]:
    trimmed = list(release)
    while trimmed and trimmed[-1] == 0:
        trimmed.pop()
    return tuple(trimmed)


def _int_tuple(value: Any) -> bool:
    return isinstance(value, tuple) and all(type(each) is int for each in value)


def _element(value: _Value, index: int) -> _Value:
    """The ``index``-th element of a value unpacked into names (``MAJOR, MINOR = ...``) or indexed."""
    if isinstance(value, _Torch) and value.form in ("parts", "ints") and index >= 0:
        if value.size is not None and index >= value.size:
            return None
        if index > 1:
            return None  # past major and minor a part may be "0+cu121"
        return _Torch("part" if value.form == "parts" else "int", index)
    if isinstance(value, _Known) and isinstance(value.value, tuple) and 0 <= index < len(value.value):
        return _Known(value.value[index])
    return None


def _literal_comparison(operator: Type[ast.cmpop], left: Any, right: Any) -> Optional[bool]:
    """Two literals compared: only numbers with numbers and strings with strings (a comparison Python
    refuses, or one between types, is unknown)."""
    numbers = (int, float)
    if not (
        (type(left) in numbers and type(right) in numbers) or (type(left) is str and type(right) is str)
        or (_int_tuple(left) and _int_tuple(right))
    ):
        return None
    comparisons: Dict[Type[ast.cmpop], Callable[[], bool]] = {
        ast.Lt: lambda: left < right, ast.LtE: lambda: left <= right, ast.Gt: lambda: left > right,
        ast.GtE: lambda: left >= right, ast.Eq: lambda: left == right, ast.NotEq: lambda: left != right,
    }
    compare = comparisons.get(operator)
    return None if compare is None else bool(compare())
