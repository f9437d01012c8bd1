"""AGF003: a tensor stored as an attribute of ctx instead of through save_for_backward."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from weakref import WeakKeyDictionary
from typing import Dict, Iterator, List, Optional, Sequence

import ast

import libcst as cst

from ..engine.analysis.module_analysis import Analysis
from ..engine.analysis.buffers import filled_output_buffer
from ..engine.models.body_facts import CtxStore
from ..engine.models.class_model import ClassModel, Method
from ..engine.facts.tensor_kinds import Kind
from ..engine.facts.tensors.inference import TensorInference
from ..engine.syntax.walk import cst_dotted, short_code, walk_scope
from ..core.fixes import Edit, Fix
from ..engine.syntax.locate import locator
from .base import Finding, Rule


class TensorOnCtxRule(Rule):
    code = "AGF003"
    applies_to_custom_ops = True
    name = "tensor stored on ctx instead of save_for_backward"
    message = "{method} keeps tensor {value} on ctx.{attribute}; use ctx.save_for_backward"
    invalid = (
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor):
                ctx.x = x
                return x * 2
        """,
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = torch.exp(x)
                ctx.out = out
                return out
        """,
    )
    valid = (
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.shape = x.shape
                ctx.scale = float(x.size(0))
                ctx.save_for_backward(x)
                return x * 2
        """,
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, handle):
                ctx.handle = make_handle(handle)
                return x.clone()
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        role = "setup_context" if model.setup_context_style else "forward"
        method = model.own_methods.get(role)
        if method is None or method.node is None or method.ctx_name is None:
            return
        inference = analysis.inference(method)
        for store in method.facts.ctx_stores:
            value = self._describe(store, inference, analysis)
            if value is not None and not _callers_pass_numbers(store, model, inference, analysis):
                yield self.report(method, store.node, method=method.qualname, value=value, attribute=store.attribute)

    def fix(self, finding: Finding, model: ClassModel, analysis: Analysis) -> Optional[Fix]:
        """``ctx.x = x`` becomes ``ctx.save_for_backward(x)``, and each ``ctx.x`` in backward
        ``ctx.saved_tensors[0]``. Unsafe (:data:`UNSAFE_BECAUSE`): saving changes what a second backward
        and an in-place change of the tensor do.

        Only the simplest case, where that is the whole story: forward inputs or the returned output,
        each stored once, unconditionally, by a forward that saves nothing else, returns once at its end
        and never changes them afterwards; read only by backward, only as ``ctx.x``, never changed there;
        the attribute named nowhere else in the module; the ctx never handed on or rebound; the class
        named only as ``Cls.apply`` (no composition ``Cls.forward(ctx, ...)``, no subclass, no test
        driving it with a ctx of its own); no call of the module passing a number for a stored input.

        A second call would replace what the first saved, so every such store of the forward is repaired
        by one fix: one call, where the last of them stood, saving all their tensors (the others' lines
        removed), and each read indexing its own tensor. That one fix is attached to each finding it repairs.
        """
        forward = model.own_methods.get("forward")
        backward = model.own_methods.get("backward")
        if forward is None or backward is None:
            return None
        if forward not in _MERGED:
            _MERGED[forward] = _merged_saving(model, forward, backward, analysis)
        stores = _MERGED[forward]
        if stores is None or not any(forward.position(store.target) == (finding.line, finding.column)
                                     for store in stores.stores):
            return None
        return stores.fix

    @staticmethod
    def _describe(
        store: CtxStore, inference: TensorInference, analysis: Analysis
    ) -> Optional[str]:
        """How to name the value, when the stored value holds a tensor."""
        if store.unpacked:
            # One part of an unpacking (``out, ctx.lse = kernel(x)``): a tensor only when that element
            # certainly is one; a starred or nested part, or an element of unknown kind, is not reported.
            if store.index is None or store.unpack_length is None:
                return None
            if inference.element_kind(store.value, store.index, store.unpack_length) is not Kind.TENSOR:
                return None
            return f"element {store.index} of {_quote(store.value)}"
        values: List[cst.BaseExpression] = [store.value]
        if isinstance(store.value, (cst.Tuple, cst.List)):
            if any(isinstance(element, cst.StarredElement) for element in store.value.elements):
                return None
            values = [element.value for element in store.value.elements]
        tensors = [value for value in values if inference.kind(value) is Kind.TENSOR]
        if not tensors or all(_also_saved(value, inference) for value in tensors):
            return None
        if _output_buffer(store, inference, analysis):
            return None
        # Named by the element that holds data (a workspace beside it holds none).
        tensors.sort(key=lambda value: _uninitialised(value, inference))
        label = _quote(tensors[0])
        if len(tensors) > 1:
            label = f"{label} (and {len(tensors) - 1} more)"
        return label


def _also_saved(value: cst.BaseExpression, inference: TensorInference) -> bool:
    """A name (bound at most once) that forward also passes to save_for_backward: the ctx copy is a
    duplicate, and backward can read the checked one."""
    if not isinstance(value, cst.Name) or len(inference.facts.bindings.get(value.value, [])) > 1:
        return False
    return any(
        isinstance(arg.value, cst.Name) and arg.value.value == value.value and not arg.star
        for call in inference.facts.ctx_calls.get("save_for_backward", [])
        for arg in call.args
    )


# Allocations whose contents are undefined: a buffer for backward to write into, not data it reads.
_UNINITIALISED = frozenset({"torch.empty", "torch.empty_like", "torch.empty_strided"})
# Methods that overwrite every element whatever it held.
_OVERWRITING_METHODS = frozenset({"copy_", "zero_", "fill_"})


def _output_buffer(store: CtxStore, inference: TensorInference, analysis: Analysis) -> bool:
    """A tensor kept on ctx only to be written: allocated uninitialised by the store itself and not
    touched again by forward, one that backward only overwrites (``out=``, ``copy_``, ``[...] =``), or
    one that backward fills and returns as a gradient, with fresh memory in its place when it is absent
    (the caller's buffer for the gradient)."""
    value = store.value
    if _zero_sized(value, inference):
        return True  # placeholders of no elements hold no data, whoever writes into them
    if len(inference.facts.ctx_reads.get(store.attribute, [])) != 1:
        return False  # forward reads it back (fills it, or keeps using it): saved data
    if _uninitialised(value, inference):
        return True
    if isinstance(value, (cst.Tuple, cst.List)):
        # A display of workspaces (``[torch.empty(n), torch.empty(m)]``): no data kept, whatever backward
        # writes into them; one element made otherwise is data again.
        tensors = [element.value for element in value.elements if inference.kind(element.value) is Kind.TENSOR]
        if tensors and all(_uninitialised(tensor, inference) for tensor in tensors):
            return True
    backward = inference.model.method("backward")
    if backward is None or backward.node is None or backward.ctx_name is None or backward.facts.ctx_escapes:
        return False
    reads = backward.facts.ctx_reads.get(store.attribute, [])
    written = backward.derived(_written_in_backward)
    if reads and all(id(read) in written for read in reads):
        return True
    return filled_output_buffer(backward, store.attribute, analysis)


# Allocations given their size as arguments: ``torch.empty(0)``, ``x.new_zeros(0)``.
_SIZED_ALLOCATIONS = frozenset({"torch.empty", "torch.zeros", "torch.ones"})
_SIZED_ALLOCATION_METHODS = frozenset({"new_empty", "new_zeros", "new_ones"})


def _zero_sized(value: cst.BaseExpression, inference: TensorInference) -> bool:
    """An allocation of no elements (``x.new_empty(0)``), or a display of nothing but such allocations."""
    if isinstance(value, (cst.Tuple, cst.List)):
        elements = value.elements
        return bool(elements) and all(
            not isinstance(element, cst.StarredElement) and _zero_sized(element.value, inference)
            for element in elements
        )
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    dotted = inference.imports.resolve_dotted(cst_dotted(func) or "")
    if dotted not in _SIZED_ALLOCATIONS and not (
        isinstance(func, cst.Attribute) and func.attr.value in _SIZED_ALLOCATION_METHODS
    ):
        return False
    sizes = [arg.value for arg in value.args if arg.keyword is None and not arg.star]
    if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
        sizes = [element.value for element in sizes[0].elements if not isinstance(element, cst.StarredElement)]
    return any(isinstance(size, cst.Integer) and size.evaluated_value == 0 for size in sizes)


def _uninitialised(value: cst.BaseExpression, inference: TensorInference) -> bool:
    """An allocation whose contents are undefined (``torch.empty(...)``, ``x.new_empty(...)``)."""
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    dotted = inference.imports.resolve_dotted(cst_dotted(func) or "")
    return dotted in _UNINITIALISED or (isinstance(func, cst.Attribute) and func.attr.value == "new_empty")


def _written_in_backward(backward: Method) -> "set[int]":
    assert backward.node is not None and backward.ctx_name is not None
    return _written_ctx_attributes(backward.node, backward.ctx_name)


def _written_ctx_attributes(function: cst.FunctionDef, ctx: str) -> "set[int]":
    """The ``ctx.<name>`` nodes of ``function`` that stand where a tensor is only written."""
    def is_ctx_attribute(node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == ctx

    written: "set[int]" = set()
    for node in walk_scope(function.body):
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _OVERWRITING_METHODS:
                if is_ctx_attribute(func.value):
                    written.add(id(func.value))
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "out" and is_ctx_attribute(arg.value):
                    written.add(id(arg.value))
        elif isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Subscript) and is_ctx_attribute(target.target.value):
                    written.add(id(target.target.value))
    return written


def _callers_pass_numbers(
    store: CtxStore, model: ClassModel, inference: TensorInference, analysis: Analysis
) -> bool:
    """An input stored as itself that every ``apply`` call of the module gives a number: its tensor
    annotation is not to be trusted."""
    value = store.value
    inputs = model.forward_inputs()
    if inference.role != "forward" or not isinstance(value, cst.Name) or inputs is None:
        return False
    if value.value not in inputs.names or inference.name_origin(value.value) != "input":
        return False
    index = inputs.names.index(value.value)
    calls = analysis.apply_calls(model.name)
    return bool(calls) and all(
        call.positional is not None and index < call.positional and _is_number(call.args[index]) for call in calls
    )


def _is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _quote(node: cst.BaseExpression) -> str:
    code = short_code(node)
    return f"'{code}'" if code is not None else "value"


def _plain_pair(model: ClassModel, forward: Method, backward: Method, analysis: Analysis) -> bool:
    """The combined style, both methods here and static, and nothing that could read the ctx unseen."""
    if model.setup_context_style or model.has_unknown_base or len(model.mro) != 1:
        return False
    if analysis.discovery.has_local_subclass(model.site):
        return False
    if forward.node is None or backward.node is None or not (forward.is_static and backward.is_static):
        return False
    if forward.ctx_name is None or forward.facts.ctx_escapes or backward.facts.ctx_escapes:
        return False
    if forward.facts.ctx_calls or forward.facts.yields:
        return False  # it saves (or marks) something already: the saved tuple has a layout to keep
    saved = {"saved_tensors", "saved_variables"}
    if saved.intersection(backward.facts.ctx_reads) or backward.facts.ctx_stores:
        return False
    if not analysis.name_uses().only_applied(model.name):
        return False  # ``Cls.forward(ctx, ...)`` from another Function, a test's own ctx, ``type(..., (Cls,), ...)``
    return _ctx_only_dotted(forward) and _ctx_only_dotted(backward)


def _ctx_only_dotted(method: Method) -> bool:
    """Every use of the ctx name in the method, nested scopes included, is ``ctx.<attribute>``: the ctx is
    never aliased (``c = ctx``), handed on (``helper(ctx)``, ``lambda: helper(ctx)``, ``f(*(ctx, g))``) or
    rebound (``ctx = ...``)."""
    assert method.node is not None and method.ctx_name is not None
    ctx = method.ctx_name
    names = dotted = 0
    for node in method.whole_body():
        if type(node) is cst.Name and node.value == ctx:
            names += 1
        elif type(node) is cst.Attribute:
            if isinstance(node.value, cst.Name) and node.value.value == ctx:
                dotted += 1
            if node.attr.value == ctx:
                names -= 1  # ``other.ctx``: an attribute name, not the parameter
    return names == dotted


@dataclass(frozen=True)
class _FixableStore:
    """``ctx.<attribute> = <name>`` that one ``save_for_backward`` call can replace."""

    target: cst.Attribute
    assignment: cst.Assign
    name: str
    reads: Sequence[cst.Attribute]  # every ``ctx.<attribute>`` of backward


@dataclass(frozen=True)
class _MergedSaving:
    """The stores one fix repairs together, and that fix."""

    stores: Sequence[_FixableStore]
    fix: Fix


# The merged fix of a forward, worked out for its first finding and read by the others (kept while the
# method's tree is: a weak key).
_MERGED: "WeakKeyDictionary[Method, Optional[_MergedSaving]]" = WeakKeyDictionary()

UNSAFE_BECAUSE = (
    "save_for_backward frees what it saved after the first backward (a second backward through the graph "
    "then needs retain_graph=True) and raises on an in-place change of a saved tensor where the attribute "
    "gave a silently wrong gradient; code outside this module reading the attribute no longer finds it"
)


def _merged_saving(model: ClassModel, forward: Method, backward: Method, analysis: Analysis) -> Optional[_MergedSaving]:
    """The one fix of every fixable store of forward (worked out once per class, whichever finding asks)."""
    if not _plain_pair(model, forward, backward, analysis):
        return None
    stores = _fixable_stores(model, forward, backward, analysis)
    where = locator(model.segment)
    if not stores or where is None or forward.ctx_name is None or backward.ctx_name is None:
        return None
    *moved, last = stores
    removals = [where.delete_line(store.assignment) for store in moved]
    stores = [store for store, removal in zip(moved, removals) if removal is not None] + [last]
    names = list(dict.fromkeys(store.name for store in stores))  # a tensor stored twice is saved once
    saved = ", ".join(names)
    edits: List[Optional[Edit]] = [removal for removal in removals if removal is not None]
    edits.append(where.replace(last.assignment, f"{forward.ctx_name}.save_for_backward({saved})"))
    indexes = {name: index for index, name in enumerate(names)}
    for store in stores:
        index = indexes[store.name]
        edits += [where.replace(read, f"{backward.ctx_name}.saved_tensors[{index}]") for read in store.reads]
    if any(edit is None for edit in edits):
        return None
    return _MergedSaving(stores, Fix(tuple(edit for edit in edits if edit is not None), UNSAFE_BECAUSE))


def _fixable_stores(model: ClassModel, forward: Method, backward: Method, analysis: Analysis) -> List[_FixableStore]:
    """The tensor stores of forward (those AGF003 reports) that saving would repair, in the order stored."""
    assert forward.node is not None and backward.node is not None and backward.ctx_name is not None
    inference = analysis.inference(forward)
    uses = analysis.name_uses()
    changed = _changed_in_backward(backward)
    assignments = _top_level_assignments(forward.node)
    counted = _ForwardFacts(forward)
    fixable: List[_FixableStore] = []
    for store in forward.facts.ctx_stores:
        if store.unpacked or not isinstance(store.node, cst.Attribute) or not isinstance(store.value, cst.Name):
            continue
        if TensorOnCtxRule._describe(store, inference, analysis) is None:
            continue
        attribute, name = store.attribute, store.value.value
        assignment = assignments.get(id(store.node))
        if assignment is None or not counted.stored_safely(attribute, name):
            continue
        reads = backward.facts.ctx_reads.get(attribute, [])
        # The store and backward's reads must be every ``.attribute`` of the module: a read in a nested
        # scope, a ``del``, another method, ``out.grad_fn.attribute``, ``getattr(ctx, "attribute")`` all
        # stop reading the tensor once it is saved instead.
        if not reads or uses.attribute_count(attribute) != 1 + len(reads) or uses.named_as_string(attribute):
            continue
        if attribute in changed:
            continue  # backward changes it in place and reads it again: the saved tensor's version check raises
        if _some_caller_passes_a_number(name, model, analysis):
            continue
        fixable.append(_FixableStore(store.node, assignment, name, reads))
    return fixable


def _changed_in_backward(backward: Method) -> "set[str]":
    """The ctx attributes backward changes in place, directly (``ctx.y.mul_(2)``, ``ctx.y[0] = 0``,
    ``ctx.y += 1``, ``out=ctx.y``) or through a name bound from them (``y = ctx.y; y.mul_(2)``)."""
    assert backward.ctx_name is not None
    ctx = backward.ctx_name

    def attribute_of(node: cst.BaseExpression) -> Optional[str]:
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == ctx:
            return node.attr.value
        return None

    roots: List[cst.BaseExpression] = []
    assignments: List[cst.Assign] = []
    for node in backward.whole_body():
        if type(node) is cst.Call:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and not func.attr.value.endswith("__"):
                roots.append(func.value)
            roots += [arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value == "out"]
        elif type(node) is cst.AugAssign:
            roots.append(node.target)
        elif type(node) is cst.Assign:
            assignments.append(node)
            roots += [target.target for target in node.targets if isinstance(target.target, cst.Subscript)]
    changed: "set[str]" = set()
    changed_names: "set[str]" = set()
    for root in roots:
        while isinstance(root, cst.Subscript):
            root = root.value
        attribute = attribute_of(root)
        if attribute is not None:
            changed.add(attribute)
        elif isinstance(root, cst.Name):
            changed_names.add(root.value)
    for assign in assignments:
        bound = {name for target in assign.targets for name in _bound_names(target.target)}
        if bound & changed_names:
            changed.update(
                name for name in (attribute_of(node) for node in _attributes_in(assign.value)) if name is not None
            )
    return changed


def _bound_names(target: cst.BaseExpression) -> Iterator[str]:
    """The names an assignment target binds: ``y`` of ``y = ...``, ``y`` and ``z`` of ``y, (z, *w) = ...``."""
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _bound_names(element.value)


def _attributes_in(node: cst.CSTNode) -> List[cst.Attribute]:
    found: List[cst.Attribute] = []

    class Collect(cst.CSTVisitor):
        def visit_Attribute(self, attribute: cst.Attribute) -> None:
            found.append(attribute)

    node.visit(Collect())
    return found


def _some_caller_passes_a_number(name: str, model: ClassModel, analysis: Analysis) -> bool:
    """A call of the module that gives the stored input a number (or a string, a bool): saving it would
    raise there, where keeping it on ctx worked; the tensor annotation is not the whole story."""
    inputs = model.forward_inputs()
    if inputs is None or name not in inputs.names:
        return False
    index = inputs.names.index(name)
    return any(
        call.positional is not None and index < call.positional and _is_literal(call.args[index])
        for call in analysis.apply_calls(model.name)
    )


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and node.value is not None


def _top_level_assignments(function: cst.FunctionDef) -> Dict[int, cst.Assign]:
    """Each ``ctx.x = x`` alone on a line of the body itself (run on every call, before the only return),
    by the id of its target; none when the body does not end in its return."""
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return {}
    statements = list(body.body)
    last = statements[-1] if statements else None
    if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)):
        return {}
    found: Dict[int, cst.Assign] = {}
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            small = statement.body[0]
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                found[id(small.targets[0].target)] = small
    return found


class _ForwardFacts:
    """What every store's check reads of forward, counted once (each store then costs the same)."""

    def __init__(self, forward: Method) -> None:
        facts = forward.facts
        self.facts = facts
        self.stores_per_attribute = Counter(store.attribute for store in facts.ctx_stores)
        self.changed = {change.name for change in facts.in_place}
        signature = forward.signature
        self.inputs = {param.name for param in signature.positional[1:]} if signature is not None else set()
        returned = facts.returns[0].value if len(facts.returns) == 1 else None
        values = [element.value for element in returned.elements] if isinstance(returned, cst.Tuple) else [returned]
        self.returned = {value.value for value in values if isinstance(value, cst.Name)}

    def stored_safely(self, attribute: str, name: str) -> bool:
        """Stored once, never read back in forward; the value an input or the output, never changed after."""
        facts = self.facts
        if self.stores_per_attribute[attribute] != 1:
            return False
        if len(facts.ctx_reads.get(attribute, [])) != 1:  # the store's own target is the only use
            return False
        if len(facts.returns) != 1 or name in self.changed:
            return False
        if name in self.inputs:
            return name not in facts.bindings
        return name in self.returned and len(facts.bindings.get(name, [])) == 1
