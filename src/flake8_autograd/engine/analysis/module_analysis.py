"""Per-module facts shared by all rules: imports, ``apply`` call sites, cached inference."""

from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ...core.settings import DEFAULT_SETTINGS, Settings
from ..facts.counting import CountedReturn, backward_never_runs, counted_returns, inputs_certainly_given_gradients
from ..facts.ctx.attributes import stored_through_graph_nodes
from ..discovery.functions import ClassSite, Discovery
from ..facts.grad_free import grad_free_arguments
from ..models.class_model import ClassModel, Method
from ..facts.module_facts import ApplyCall, ModuleFacts, statement_names
from ..syntax.name_uses import NameUses, name_uses
from ..syntax.names import ImportTable, ast_dotted
from ..facts.op_facts import globals_assigned_in_functions, module_bound_names, module_state_holders
from ..facts.memory_and_layout import ALLOCATIONS, LAYOUT_METHODS
from ..syntax.scopes import CLASS, ModuleScopes, Scope
from ..facts.tensor_kinds import Kind
from ..facts.tensors.inference import TensorInference
from ..syntax.walk import Settle
from .feasibility import Conditions


@dataclass(frozen=True, eq=False)
class DirectUse:
    """``Cls()`` (instantiation) or ``Cls.forward(...)``/``Cls.backward(...)`` outside any Function class,
    where the name ``Cls`` is bound to the Function class and to nothing else."""

    call: ast.Call  # ``Cls()``, or ``Cls.forward(...)``
    what: str  # "instantiated" or the method name called directly
    called_at_once: bool = False  # ``Cls()(...)``: the new instance is called and dropped
    grad_free: bool = False  # no argument can be a tensor that requires grad (:mod:`.grad_free`)

    @property
    def line(self) -> int:
        return self.call.lineno


def _named_besides_apply(lines: Sequence[str], discovery: Discovery) -> bool:
    """Whether the code may name a Function class of the module other than in ``Cls.apply`` and its own
    ``class Cls`` statement. A direct use (``Cls()``, ``Cls.forward(...)``, an alias ``f = Cls``) must
    name it so; when none is named, the walk that finds direct uses has nothing to find. Each line that
    mentions a class is tokenized alone, so a mention inside a string or a comment does not count; a line
    that does not tokenize alone (part of a multi-line string or bracket) counts as a mention."""
    names = {site.name for site in discovery.function_classes}
    if not names:
        return False
    spelled = "|".join(re.escape(name) for name in sorted(names))
    mention = re.compile(r"(?:" + spelled + r")\b")
    # What tokenizing would pass over anyway: ``Cls.apply`` and ``class Cls``, each in one line.
    passed_over = re.compile(r"(?<![\w.])(?:" + spelled + r")\s*\.\s*apply\b|\bclass\s+(?:" + spelled + r")\b")
    for line in lines:
        if not _starts_a_name(mention, line, _WORD_OR_DOT):
            continue
        if _starts_a_name(mention, passed_over.sub("", line), _WORD_OR_DOT) and _names_in_code(line, names):
            return True
    return False


_WORD = re.compile(r"\w")
_WORD_OR_DOT = re.compile(r"[\w.]")


def _starts_a_name(pattern: "re.Pattern[str]", text: str, not_after: "re.Pattern[str]") -> bool:
    """Whether ``pattern`` matches in ``text`` at a place not right after a character ``not_after`` matches.

    The pattern starts with the names themselves, which lets the regular expression engine skip ahead to
    where a name can start; a lookbehind written first would have it try every position of the text. After
    a match in the wrong place, the search goes on from the next character."""
    found = pattern.search(text)
    while found is not None:
        start = found.start()
        if start == 0 or not not_after.match(text, start - 1):
            return True
        found = pattern.search(text, start + 1)
    return False


_LAYOUT_TOKENS = frozenset(
    {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER, tokenize.COMMENT}
)


def _names_in_code(line: str, names: Set[str]) -> bool:
    """Whether ``line``, tokenized alone, holds one of ``names`` as code other than ``Name.apply`` or
    ``class Name``. A line that opens a bracket it does not close (``x = Cls.apply(``, the first line
    of a call written over several) is read up to its end: every token of it was read by then."""
    tokens: List[tokenize.TokenInfo] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type not in _LAYOUT_TOKENS:
                tokens.append(token)
    except tokenize.TokenError as error:
        if "multi-line statement" not in str(error.args[0] if error.args else ""):
            return True  # inside a string, or not code alone: who knows what it names
    except (SyntaxError, IndentationError):
        return True
    for index, token in enumerate(tokens):
        if token.type != tokenize.NAME or token.string not in names:
            continue
        before = tokens[index - 1].string if index else ""
        after = [each.string for each in tokens[index + 1:index + 3]]
        if before == "class" or before == "." or after == [".", "apply"]:
            continue
        return True
    return False


class Analysis:
    def __init__(
        self,
        tree: ast.Module,
        discovery: Discovery,
        settings: Settings = DEFAULT_SETTINGS,
        lines: Optional[Sequence[str]] = None,
    ) -> None:
        self.tree = tree
        self.lines = lines  # the module's text, when known: a cheap test before walking the module
        self.discovery = discovery
        self.settings = settings
        # What the rules read of the settings.
        self.ctx_names = settings.ctx_names  # the project's accepted names of the context parameter
        self.min_torch_version = settings.min_torch_version  # the oldest torch supported; None: not said
        self.imports: ImportTable = discovery.imports
        self._apply_calls: Optional[Dict[str, List[ApplyCall]]] = None
        self._direct_uses: Optional[Dict[ast.ClassDef, List[DirectUse]]] = None  # by the class statement
        self._direct_use_index: Optional[Dict[Tuple[ast.ClassDef, int, int], DirectUse]] = None
        self._module_scopes: Optional[ModuleScopes] = None
        self._named_besides: Optional[bool] = None
        # Per-method caches, keyed by the method itself (so that a key is never a reused id) and
        # emptied class by class (forget), so that a checked class's libcst tree can be freed.
        self._inference: Dict[Tuple[Method, str], TensorInference] = {}
        self._returns: Dict[Method, List[CountedReturn]] = {}
        self._backward_never_runs: Dict[ClassModel, bool] = {}
        self._allocating: Optional[FrozenSet[str]] = None
        self._name_uses: Optional[NameUses] = None
        # Module-wide facts the custom-op rules read, worked out once for all the operators of the module.
        self._mutable_globals: Optional[Dict[str, str]] = None
        self._state_holders: Optional[Dict[str, str]] = None
        self._bound_names: Optional[Set[str]] = None
        self._graph_node_stores: Optional[Tuple[Optional[FrozenSet[str]]]] = None
        self._conditions: Optional[Conditions] = None
        # Facts across the module's functions and callers, read when first asked.
        self.module_facts = ModuleFacts(tree, discovery, self.apply_calls, lines)

    def inference(self, method: Method, role: Optional[str] = None) -> TensorInference:
        key = (method, role or method.name)
        found = self._inference.get(key)
        if found is None:
            found = TensorInference(
                method, method.owner, self.imports, role or method.name, module=self.module_facts,
                given_gradients=inputs_certainly_given_gradients,
            )
            self._inference[key] = found
        return found

    def returns(self, method: Method) -> List[CountedReturn]:
        found = self._returns.get(method)
        if found is None:
            found = counted_returns(method, self.inference(method))
            self._returns[method] = found
        return found

    def backward_never_runs(self, model: ClassModel) -> bool:
        """:func:`.counting.backward_never_runs` of ``model``, worked out once for all the rules that ask.

        Asked of forward's shared inference, whose step budget the rules asking before may have spent: an
        answer the budget cut short is worked out again with a fresh budget, so that every rule reads the
        one answer a fresh inference gives, whichever rules ran first.
        """
        found = self._backward_never_runs.get(model)
        if found is None:
            forward = model.method("forward")
            if forward is None:
                found = False
            else:
                shared = self.inference(forward)
                cuts = shared.cuts
                found = backward_never_runs(model, shared)
                if shared.cuts != cuts:
                    fresh = TensorInference(
                        forward, forward.owner, self.imports, "forward", module=self.module_facts,
                        given_gradients=inputs_certainly_given_gradients,
                    )
                    found = backward_never_runs(model, fresh)
            self._backward_never_runs[model] = found
        return found

    def settle_for(self, model: ClassModel) -> Settle:
        """What is certain of a condition in ``model``'s methods (:mod:`.feasibility`): the module's
        constants and the torch it proves are read once, when a condition other than a bare literal
        is first asked; each condition is settled once."""
        found: Dict[int, Optional[bool]] = {}

        def settle(test: cst.BaseExpression) -> Optional[bool]:
            key = id(test)  # the model holds its tree, and this function lives no longer than the model
            if key not in found:
                if self._conditions is None:
                    self._conditions = Conditions(self.tree, self.imports, self.min_torch_version)
                found[key] = self._conditions.settle(test, model)
            return found[key]

        return settle

    def forget(self, model: ClassModel) -> None:
        """Drop what is cached for the methods of ``model``, a class no other class will look at again."""
        self._backward_never_runs.pop(model, None)
        # A method of a class released before (``ClassModel.release``) has no owner left: dropped as well.
        self._inference = {
            key: value for key, value in self._inference.items() if getattr(key[0], "owner", model) is not model
        }
        self._returns = {
            method: value for method, value in self._returns.items() if getattr(method, "owner", model) is not model
        }

    def name_uses(self) -> NameUses:
        """How the module names attributes and classes (one walk, when a fix first asks)."""
        if self._name_uses is None:
            self._name_uses = name_uses(self.tree)
        return self._name_uses

    def allocating_helpers(self) -> FrozenSet[str]:
        """The module's functions that only hand back fresh memory (every ``return`` an allocation such
        as ``torch.empty(...)``, maybe reshaped), defined once at module level and bound to nothing else."""
        if self._allocating is None:
            self._allocating = _allocating_helpers(self.tree)
        return self._allocating

    def mutable_globals(self) -> Dict[str, str]:
        """:func:`.op_facts.globals_assigned_in_functions` of the module, read once."""
        if self._mutable_globals is None:
            self._mutable_globals = globals_assigned_in_functions(self.tree)
        return self._mutable_globals

    def state_holders(self) -> Dict[str, str]:
        """:func:`.op_facts.module_state_holders` of the module, read once."""
        if self._state_holders is None:
            self._state_holders = module_state_holders(self.tree, self.imports, self.mutable_globals())
        return self._state_holders

    def bound_names(self) -> Set[str]:
        """:func:`.op_facts.module_bound_names` of the module, read once."""
        if self._bound_names is None:
            self._bound_names = module_bound_names(self.tree)
        return self._bound_names

    def graph_node_stores(self) -> Optional[FrozenSet[str]]:
        """:func:`.ctx_attributes.stored_through_graph_nodes` of the module, read once (not once per class)."""
        if self._graph_node_stores is None:
            self._graph_node_stores = (stored_through_graph_nodes(self.tree, self.lines),)
        return self._graph_node_stores[0]

    def apply_calls(self, class_name: str) -> List[ApplyCall]:
        if self._apply_calls is None:
            if self.lines is not None and not self._may_call_apply():
                self._apply_calls = {}  # no class of the module is applied or instantiated in its text
            else:
                self._apply_calls = self._collect_calls()
        return self._apply_calls.get(class_name, [])

    def _may_call_apply(self) -> bool:
        """Whether the text can hold a call site of a Function class of the module: ``Cls.apply`` written
        out, or the class named otherwise (``Cls()(x)``, an alias)."""
        assert self.lines is not None
        names = sorted(site.name for site in self.discovery.function_classes)
        if not names:
            return False
        applied = re.compile(r"(?:" + "|".join(re.escape(name) for name in names) + r")\s*\.\s*apply\b")
        # On the whole text: ``Cls`` and ``.apply`` may stand on two lines inside brackets.
        return _starts_a_name(applied, "".join(self.lines), _WORD) or self._named_besides_apply()

    def _named_besides_apply(self) -> bool:
        """:func:`_named_besides_apply` of the module, worked out once (call sites and direct uses both ask)."""
        if self._named_besides is None:
            assert self.lines is not None
            self._named_besides = _named_besides_apply(self.lines, self.discovery)
        return self._named_besides

    def direct_uses(self, site: ClassSite) -> List[DirectUse]:
        """The direct uses of the Function class ``site``, in the order of the module."""
        if self._direct_uses is None:
            if self.lines is not None and not self._named_besides_apply():
                self._direct_uses = {}  # no Function class is named but as ``Cls.apply``: nothing to walk for
            else:
                self._direct_uses = _DirectUseReader(self.tree, self.discovery).read(self.module_scopes())
        return self._direct_uses.get(site.node, [])

    def module_scopes(self) -> ModuleScopes:
        """The module's scopes, walked once for the readers that resolve names in it (direct uses, apply
        sites), with every call, assignment and ``with`` found; each reader picks its own among them."""
        if self._module_scopes is None:
            self._module_scopes = ModuleScopes(self.tree, _SCOPE_WALK_KEEPS)
        return self._module_scopes

    def direct_use_at(self, site: ClassSite, line: int, byte_column: int) -> Optional[DirectUse]:
        """The direct use of ``site`` whose call starts at ``line`` and ``byte_column`` (as ``ast`` counts)."""
        if self._direct_use_index is None:
            self.direct_uses(site)
            assert self._direct_uses is not None
            self._direct_use_index = {
                (node, use.line, use.call.col_offset): use for node, uses in self._direct_uses.items() for use in uses
            }
        return self._direct_use_index.get((site.node, line, byte_column))

    def only_literals_passed(self, class_name: str, index: int) -> bool:
        """Whether every ``apply`` call of the module leaves input ``index`` to its default or passes a
        certain non-tensor (a literal, a scalar-annotated parameter, a scalar ``self`` attribute: see
        :meth:`.ModuleFacts.argument_kinds`).

        A parameter known as a non-tensor only by its literal default (``slope=0.01``) may still be given a
        tensor by a caller; one call passing anything else, or passing arguments we cannot count, says so.
        """
        kinds = self.module_facts.argument_kinds(class_name, index)
        return kinds is not None and all(kind in (None, Kind.NOT_TENSOR) for kind in kinds)

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
        """The module's calls and assignments, read from the shared scope walk (which the readers of call
        sites need anyway), only when a rule needs call sites; in the module's order."""
        calls: Dict[str, List[ApplyCall]] = {}
        aliases: Dict[str, str] = {}  # fn = Cls.apply
        nodes = [node for node, _scope in self.module_scopes().found]
        # ``Cls()(a, b)`` passes its arguments as ``Cls.apply(a, b)`` would (AGF111's fix writes that):
        # the outer call is a call site of the class the inner one instantiates. Which class a name is
        # takes a scope walk, run only for a module that has such a call.
        names = {site.name for site in self.discovery.function_classes}
        instantiated: Dict[int, str] = {}
        if any(_instantiated_name(node) in names for node in nodes if isinstance(node, ast.Call)):
            instantiated = {
                id(use.call): site.name
                for site in self.discovery.function_classes
                for use in self.direct_uses(site)
                if use.called_at_once
            }
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
                owner = instantiated.get(id(node.func))
            if owner is None:
                continue
            unknown = node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args)
            call = (
                ApplyCall(node.lineno, None, node=node) if unknown
                else ApplyCall(node.lineno, len(node.args), tuple(node.args), node)
            )
            calls.setdefault(owner, []).append(call)
        return calls


# What the shared scope walk records: everything the readers of :meth:`Analysis.module_scopes` want.
_SCOPE_WALK_KEEPS: FrozenSet[type] = frozenset({ast.Call, ast.Assign, ast.With, ast.AsyncWith})


class _DirectUseReader:
    """Finds the direct uses of the module's Function classes in one walk of the module.

    A use counts only where its name is bound to the Function class and to nothing else: a parameter,
    a local assignment, an import or any other rebinding of the name in the scope the name is read
    from, or a second binding beside the class statement, leaves the name's value unknown.
    """

    def __init__(self, tree: ast.Module, discovery: Discovery) -> None:
        self.tree = tree
        self.discovery = discovery
        self.sites = {site.node: site for site in discovery.function_classes}
        self.names = {site.name for site in discovery.function_classes}
        # What the fast-path test found in each function, read once per function.
        self._function_facts: Dict[ast.AST, Tuple[bool, FrozenSet[str]]] = {}

    def read(self, scopes: ModuleScopes) -> Dict[ast.ClassDef, List[DirectUse]]:
        found = [(node, scope) for node, scope in scopes.found if self._wanted(node)]
        gradless = _Intervals(
            node for node, _ in found if isinstance(node, (ast.With, ast.AsyncWith))
            and _mentions(node.items, _GRADLESS_CONTEXTS)
        )
        called_at_once = {
            id(node.func) for node, _ in found if isinstance(node, ast.Call) and isinstance(node.func, ast.Call)
        }
        uses: Dict[ast.ClassDef, List[DirectUse]] = {}
        for node, scope in found:
            target = _direct_target(node, self.names)
            if target is None:
                continue
            assert isinstance(node, ast.Call)
            name, what = target
            site = self._function_class(scopes, scope, name, node)
            if site is None:
                continue
            # Inside a Function, calling another Function's forward is composition, not a mistake.
            if what != "instantiated" and self._inside_function_class(scope):
                continue
            if what == "forward" and self._fast_path(name, node, scope, gradless):
                continue
            grad_free = what == "forward" and grad_free_arguments(node, scope, scopes, self.discovery)
            uses.setdefault(site.node, []).append(DirectUse(node, what, id(node) in called_at_once, grad_free))
        return uses

    def _wanted(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            return _direct_target(node, self.names) is not None or isinstance(node.func, ast.Call)
        return isinstance(node, (ast.With, ast.AsyncWith))

    def _function_class(self, scopes: ModuleScopes, scope: Scope, name: str, node: ast.Call) -> Optional[ClassSite]:
        """The Function class ``name`` stands for where ``node`` reads it; None when it may be anything else."""
        binder = scopes.resolve(scope, name)
        statement = scopes.sole_binding(binder, name)
        if not isinstance(statement, ast.ClassDef):
            return None
        site = self.sites.get(statement)
        if site is None:
            return None
        if binder.kind == CLASS and _position(node) < _end(statement):
            return None  # a class body reads a name not bound yet from the module
        return site

    def _inside_function_class(self, scope: Optional[Scope]) -> bool:
        while scope is not None:
            if scope.kind == CLASS and scope.node in self.sites:
                return True
            scope = scope.parent
        return False

    def _fast_path(self, owner: str, node: ast.Call, scope: Scope, gradless: "_Intervals") -> bool:
        """Whether a ``Cls.forward(...)`` call is where no gradient is wanted: under ``torch.no_grad()`` (or
        ``inference_mode``), or in a function that tests the grad state and calls ``Cls.apply`` otherwise
        (``if not torch.is_grad_enabled(): return Cls.forward(None, x)``). A test of anything else
        (``self.training``) does not say gradients are off, so that use stays."""
        if gradless.holds(node.lineno):
            return True
        function = _enclosing_function(scope)
        if function is None:
            return False
        facts = self._function_facts.get(function)
        if facts is None:
            inner = list(ast.walk(function))
            tests_grad_state = any(
                isinstance(each, (ast.If, ast.IfExp)) and _mentions([each.test], _GRAD_STATE) for each in inner
            )
            applied = frozenset(
                owner for each in inner if isinstance(each, ast.Call) for owner in [_apply_owner(each.func)] if owner
            )
            facts = self._function_facts[function] = (tests_grad_state, applied)
        tests_grad_state, applied = facts
        return tests_grad_state and owner in applied


def _direct_target(node: ast.AST, names: Set[str]) -> Optional[Tuple[str, str]]:
    """(class name, what) for ``Name()`` or ``Name.forward(...)``/``Name.backward(...)`` of a name in ``names``."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name) and func.id in names:
        return func.id, "instantiated"
    if (
        isinstance(func, ast.Attribute)
        and func.attr in ("forward", "backward")
        and isinstance(func.value, ast.Name)
        and func.value.id in names
    ):
        return func.value.id, func.attr
    return None


def _enclosing_function(scope: Optional[Scope]) -> Optional[ast.AST]:
    """The innermost ``def`` around a scope (lambdas, comprehensions and class bodies are looked through)."""
    while scope is not None:
        if isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return scope.node
        scope = scope.parent
    return None


def _position(node: ast.AST) -> Tuple[int, int]:
    return int(getattr(node, "lineno", 0)), int(getattr(node, "col_offset", 0))


def _end(node: ast.AST) -> Tuple[int, int]:
    line, column = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
    return (line, column or 0) if line is not None else _position(node)


class _Intervals:
    """The lines of some statements, merged, so that whether a line is in one of them is a binary search."""

    def __init__(self, statements: Iterable[ast.AST]) -> None:
        spans = sorted((_position(node)[0], _end(node)[0]) for node in statements)
        self.starts: List[int] = []
        self.ends: List[int] = []
        for start, end in spans:
            if self.ends and start <= self.ends[-1]:
                self.ends[-1] = max(self.ends[-1], end)
            else:
                self.starts.append(start)
                self.ends.append(end)

    def holds(self, line: int) -> bool:
        index = bisect.bisect_right(self.starts, line) - 1
        return index >= 0 and line <= self.ends[index]


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


# What a statement binds, read one way for the whole engine (aliases and buffers read it from here).
_top_level_names = statement_names


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


def _instantiated_name(call: ast.Call) -> Optional[str]:
    """``Name`` for a call of the form ``Name()(...)``."""
    inner = call.func
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and not inner.args and not inner.keywords:
        return inner.func.id
    return None


def _apply_owner(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Attribute) and node.attr == "apply":
        owner = ast_dotted(node.value)
        if owner is not None:
            return owner.rsplit(".", 1)[-1]
    return None
