"""Output buffers: a ctx attribute backward fills and hands back as a gradient.

A caller may give forward a tensor for the gradient to be written into (``grad_out=None``), which
forward keeps on ctx. Backward takes it, or fresh memory when there is none (``if g is None: g =
torch.empty(...)``, or a helper that returns its parameter when given one and allocates otherwise),
hands it to a kernel that fills it, and returns it (or a view of it) as a gradient. Its contents
before backward are never read: it is where the result goes, not state backward computes with.

Every use of the attribute and of the locals holding it must be one of those steps: a test against
``None``, a metadata read (``.shape``, ``.dtype``, ``.size()``), a view, an argument of a call that
is not a ``torch`` function (the kernel), an overwrite (``out=``, ``.copy_()``, ``[...] =``), or the
returned value. One use as an operand (``g * 2``, ``torch.add(g, x)``, ``g += x``) and it is data.
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from .module_analysis import Analysis, _allocates, _top_level_names as top_level_names
from ..models.class_model import Method
from ..syntax.names import ast_dotted
from ..facts.memory_and_layout import ALLOCATIONS, LAYOUT_METHODS
from ..syntax.walk import children, cst_dotted, walk, walk_scope

# Reading these tells nothing of a tensor's contents.
_METADATA_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad"})
_METADATA_METHODS = frozenset({"size", "dim", "numel", "stride", "is_contiguous", "data_ptr", "element_size"})
# Methods that overwrite every element, whatever it held.
_OVERWRITES = frozenset({"copy_", "zero_", "fill_"})
# How deep a chain of locals is followed before giving up.
_MAX_NAMES = 20


def filled_output_buffer(backward: Method, attribute: str, analysis: Analysis) -> bool:
    """``ctx.<attribute>`` is a buffer ``backward`` fills and returns as a gradient, with fresh memory
    allocated in its place on another path: its contents before backward are never read."""
    if backward.node is None or backward.ctx_name is None or backward.facts.ctx_escapes:
        return False
    reads = backward.facts.ctx_reads.get(attribute, [])
    if not reads:
        return False
    trace = _Trace(backward, analysis)
    for read in reads:
        if not trace.follow(read):
            return False
    return trace.complete()


@dataclass
class _Trace:
    """The uses of a buffer through the locals that hold it, judged one by one."""

    backward: Method
    analysis: Analysis
    names: Set[str] = field(default_factory=set)  # locals that hold the buffer (or fresh memory)
    returned: bool = False
    filled: bool = False
    allocated: bool = False
    _parents: Optional[Dict[int, cst.CSTNode]] = None

    def follow(self, node: cst.BaseExpression) -> bool:
        """Whether this use of the buffer is one of the allowed steps (following views and locals)."""
        parents = self._parent_map()
        current: cst.CSTNode = node
        while True:
            parent = parents.get(id(current))
            if parent is None:
                return False
            if isinstance(parent, cst.Attribute) and parent.value is current:
                outer = parents.get(id(parent))
                called = isinstance(outer, cst.Call) and outer.func is parent
                attr = parent.attr.value
                if not called:
                    return attr in _METADATA_ATTRIBUTES
                assert isinstance(outer, cst.Call)
                if attr in _METADATA_METHODS:
                    return True
                if attr in _OVERWRITES:
                    self.filled = True
                    return True
                if attr in LAYOUT_METHODS:
                    current = outer  # a view (or copy) of the buffer: follow where it goes
                    continue
                return False
            if isinstance(parent, cst.Subscript) and parent.value is current:
                outer = parents.get(id(parent))
                if isinstance(outer, cst.AssignTarget):
                    self.filled = True
                    return True
                current = parent
                continue
            if isinstance(parent, cst.IfExp) and parent.test is not current:
                current = parent
                continue
            if isinstance(parent, cst.Comparison):
                return _none_test(parent)
            if isinstance(parent, cst.Arg):
                call = parents.get(id(parent))
                return isinstance(call, cst.Call) and self._argument(call, parent)
            if isinstance(parent, cst.Element):
                display = parents.get(id(parent))
                outer = parents.get(id(display)) if display is not None else None
                if isinstance(outer, cst.Return):
                    self.returned = True
                    return True
                if isinstance(outer, cst.Arg):
                    call = parents.get(id(outer))
                    return isinstance(call, cst.Call) and self._argument(call, outer)
                return False
            if isinstance(parent, cst.Return):
                self.returned = True
                return True
            if isinstance(parent, cst.Assign) and parent.value is current:
                return all(self._hold(target.target) for target in parent.targets)
            return False

    def _argument(self, call: cst.Call, arg: cst.Arg) -> bool:
        """The buffer given to a call: a pass-through helper (follow its result), or a kernel filling it."""
        if arg.star:
            return False
        helper = _pass_through_helper(call, arg, self.analysis)
        if helper:
            self.allocated = True
            return self.follow(call)
        if call.func is arg.value:
            return False
        if arg.keyword is not None and arg.keyword.value == "out":
            self.filled = True
            return True
        dotted = cst_dotted(call.func) or ""
        resolved = self.analysis.imports.resolve_dotted(dotted) or dotted
        if resolved.startswith("torch.") or dotted.startswith("torch."):
            return False  # a torch function reads its tensor arguments
        self.filled = True  # an unknown call: the kernel writing into it
        return True

    def _hold(self, target: cst.BaseExpression) -> bool:
        """A local bound to the buffer: every binding of it must be the buffer, fresh memory or None,
        and every use of it an allowed step."""
        if not isinstance(target, cst.Name):
            return False
        name = target.value
        if name in self.names:
            return True
        if len(self.names) >= _MAX_NAMES or name in self._params():
            return False
        self.names.add(name)
        for binding in self.backward.facts.bindings.get(name, []):
            if binding.value is None or binding.index is not None:
                return False
            if not self._buffer_value(binding.value):
                return False
        return self._uses_allowed(name)

    def _buffer_value(self, value: cst.BaseExpression) -> bool:
        """A bound value that is the buffer itself (checked through its own uses), fresh memory or None."""
        if isinstance(value, cst.IfExp):
            return self._buffer_value(value.body) and self._buffer_value(value.orelse)
        if isinstance(value, cst.Name) and value.value == "None":
            return True
        if _allocation(value, self.analysis):
            self.allocated = True
            return True
        return self._holds_buffer(value)

    def _holds_buffer(self, value: cst.BaseExpression) -> bool:
        """``ctx.<attribute>``, a local holding it, a view of either, or a pass-through helper's result:
        its own uses are judged where they are found."""
        ctx = self.backward.ctx_name
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and (
            value.func.attr.value in LAYOUT_METHODS
        ):
            value = value.func.value
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == ctx:
            return True
        if isinstance(value, cst.Name):
            return value.value in self.names
        return isinstance(value, cst.Call) and any(
            _pass_through_helper(value, arg, self.analysis) for arg in value.args
        )

    def _uses_allowed(self, name: str) -> bool:
        uses = [
            node for node in walk_scope(self._body())
            if isinstance(node, cst.Name) and node.value == name and not self._is_binding_target(node)
        ]
        everywhere = sum(1 for node in walk(self._body()) if isinstance(node, cst.Name) and node.value == name)
        targets = sum(1 for node in walk_scope(self._body()) if isinstance(node, cst.Name)
                      and node.value == name and self._is_binding_target(node))
        if len(uses) + targets != everywhere:
            return False  # read in a nested function or past a return: not followed
        return all(self.follow(use) for use in uses)

    def _is_binding_target(self, node: cst.Name) -> bool:
        parent = self._parent_map().get(id(node))
        return isinstance(parent, cst.AssignTarget)

    def complete(self) -> bool:
        return self.returned and self.filled and self.allocated

    def _body(self) -> cst.BaseSuite:
        assert self.backward.node is not None
        return self.backward.node.body

    def _params(self) -> Set[str]:
        signature = self.backward.signature
        if signature is None:
            return set()
        params = [param.name for param in signature.positional + signature.keyword_only]
        for extra in (signature.vararg, signature.kwarg):
            if extra is not None:
                params.append(extra.name)
        return set(params)

    def _parent_map(self) -> Dict[int, cst.CSTNode]:
        if self._parents is None:
            self._parents = self.backward.derived(_parent_map)  # once per method, not per attribute traced
        return self._parents


def _parent_map(backward: Method) -> Dict[int, cst.CSTNode]:
    """The node around each node of ``backward``'s own scope, by id."""
    assert backward.node is not None
    parents: Dict[int, cst.CSTNode] = {}
    body = backward.node.body
    for child in children(body):
        parents[id(child)] = body
    for node in walk_scope(body):
        for child in children(node):
            parents[id(child)] = node
    return parents


def _none_test(comparison: cst.Comparison) -> bool:
    """``x is None`` / ``x is not None``: reads no contents."""
    return len(comparison.comparisons) == 1 and isinstance(
        comparison.comparisons[0].operator, (cst.Is, cst.IsNot)
    ) and (
        _is_none(comparison.comparisons[0].comparator) or _is_none(comparison.left)
    )


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _allocation(value: cst.BaseExpression, analysis: Analysis) -> bool:
    """Fresh memory: ``torch.empty(...)``, ``x.new_zeros(...)``, maybe reshaped, or a module function
    that only allocates."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and (
        value.func.attr.value in LAYOUT_METHODS
    ):
        value = value.func.value
    if not isinstance(value, cst.Call):
        return False
    dotted = cst_dotted(value.func) or ""
    if dotted.rsplit(".", 1)[-1] in ALLOCATIONS:
        return True
    return isinstance(value.func, cst.Name) and value.func.value in analysis.allocating_helpers()


def _pass_through_helper(call: cst.Call, arg: cst.Arg, analysis: Analysis) -> bool:
    """``call`` is a function of the module (or a static method of one of its classes) that returns the
    parameter ``arg`` binds when it is given one and fresh memory otherwise."""
    found = _helpers_of(analysis).lookup(cst_dotted(call.func))
    if found is None:
        return False
    params, passed = found
    if arg.keyword is not None:
        return arg.keyword.value == passed
    positional = [each for each in call.args if each.keyword is None]
    if any(each.star for each in call.args):
        return False
    index = next(i for i, each in enumerate(positional) if each is arg)
    return index < len(params) and params[index] == passed


class _Helpers:
    """The module's pass-through-or-allocate helpers, found on first use of a name."""

    def __init__(self, tree: ast.Module) -> None:
        self._tree = tree
        self._found: Dict[str, Optional[Tuple[List[str], str]]] = {}
        self._bound: Optional[Dict[str, int]] = None

    def lookup(self, dotted: Optional[str]) -> Optional[Tuple[List[str], str]]:
        """(the positional parameters, the one handed back) of the helper ``dotted`` names."""
        if dotted is None or dotted.count(".") > 1:
            return None
        if dotted not in self._found:
            self._found[dotted] = self._read(dotted)
        return self._found[dotted]

    def _read(self, dotted: str) -> Optional[Tuple[List[str], str]]:
        if self._bound is None:
            self._bound = {}
            for statement in self._tree.body:
                for name in top_level_names(statement):
                    self._bound[name] = self._bound.get(name, 0) + 1
        owner, _, method = dotted.rpartition(".")
        first = owner or method
        if self._bound.get(first) != 1:
            return None
        for statement in self._tree.body:
            if not owner and isinstance(statement, ast.FunctionDef) and statement.name == method:
                return _passes_through(statement, skip_first=False)
            if owner and isinstance(statement, ast.ClassDef) and statement.name == owner:
                for item in statement.body:
                    if isinstance(item, ast.FunctionDef) and item.name == method:
                        decorators = {ast_dotted(d) for d in item.decorator_list}
                        if "staticmethod" in decorators:
                            return _passes_through(item, skip_first=False)
                        if "classmethod" in decorators:
                            return _passes_through(item, skip_first=True)
                        return None
        return None


def _passes_through(function: ast.FunctionDef, skip_first: bool) -> Optional[Tuple[List[str], str]]:
    """Every ``return`` hands back the same parameter, never rebound, or fresh memory; both occur."""
    params = [arg.arg for arg in function.args.posonlyargs + function.args.args]
    if skip_first:
        params = params[1:]
    returned: Set[str] = set()
    allocates = False
    for node in _own_nodes(function):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return None
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and node.id in params:
            return None
        if isinstance(node, ast.Return):
            if isinstance(node.value, ast.Name) and node.value.id in params:
                returned.add(node.value.id)
            elif node.value is not None and _allocates(node.value):
                allocates = True
            else:
                return None
    if len(returned) != 1 or not allocates:
        return None
    (passed,) = returned
    return params, passed


def _own_nodes(function: ast.FunctionDef) -> List[ast.AST]:
    found: List[ast.AST] = []
    pending: List[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


# One reading of the module's helpers per module, dropped with its Analysis.
_HELPERS: "weakref.WeakKeyDictionary[Analysis, _Helpers]" = weakref.WeakKeyDictionary()


def _helpers_of(analysis: Analysis) -> _Helpers:
    found = _HELPERS.get(analysis)
    if found is None:
        found = _Helpers(analysis.tree)
        _HELPERS[analysis] = found
    return found
