"""Which attributes a method sets on its ctx, which it loads, and whether anything else may set them.

In backward, ctx is the graph node autograd built for the call (an instance of the generated class
``<Name>Backward``, not of the Function class): it has what torch gives every node, and what forward or
setup_context stored on it. These facts say what a method stores and loads, as written in its own body;
when the ctx reaches code this module cannot follow (a helper, an alias, a closure, ``ctx.__dict__``,
a ``setattr`` with a computed name), ``opaque`` says any attribute may have been set.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set

import libcst as cst

from ...models.class_model import Method
from .saved_paths import _gradient_locals, _PathWalker, _Unknown
from ...syntax.walk import walk_scope

# What a ctx offers in backward without forward setting it: ``dir()`` of a real ctx in backward under
# torch 2.13 (BackwardCFunction and its bases), the same in the combined and setup_context styles; plus
# what torch.amp.custom_fwd stores on ctx (``_dtype``, ``_fwd_used_autocast``: whether it is missing is
# the business of the rule on custom_fwd/custom_bwd pairing). Dunder names are provided too.
TORCH_CTX_ATTRIBUTES: FrozenSet[str] = frozenset(
    {
        "_autograd_function_id", "_compiled_autograd_backward_state", "_compiled_autograd_key", "_forward_cls",
        "_get_compiled_autograd_symints", "_get_user_fn", "_input_metadata", "_is_pure_view",
        "_materialize_non_diff_grads", "_raw_saved_tensors", "_register_hook", "_register_hook_dict",
        "_sequence_nr", "_set_sequence_nr", "apply", "apply_boxed", "apply_jvp", "dirty_tensors", "mark_dirty",
        "mark_non_differentiable", "mark_shared_storage", "materialize_grads", "maybe_clear_saved_tensors",
        "metadata", "name", "needs_input_grad", "next_functions", "non_differentiable", "register_hook",
        "register_prehook", "requires_grad", "save_for_backward", "save_for_forward", "saved_for_forward",
        "saved_tensors", "saved_variables", "set_materialize_grads", "to_save",
        "_dtype", "_fwd_used_autocast",
    }
)

# Builtins that read an attribute by name and store nothing: ctx passed to them does not escape.
_PROBES = ("getattr", "hasattr")


@dataclass
class CtxAttributes:
    """The ctx attributes one method stores (``ctx.a = v``, ``ctx.a, ctx.b = ...``, ``ctx.a += v``,
    ``setattr(ctx, "a", v)``, ``for ctx.a in ...``, ``del ctx.a``) and loads, in the method's own scope."""

    stores: Dict[str, List[cst.CSTNode]] = field(default_factory=dict)
    loads: Dict[str, List[cst.Attribute]] = field(default_factory=dict)  # in the order written
    probed: Set[str] = field(default_factory=set)  # getattr(ctx, "a", ...) / hasattr(ctx, "a")
    opaque: bool = False  # ctx reaches code that may set any attribute


def ctx_attributes(method: Method) -> Optional[CtxAttributes]:
    """The ctx attributes ``method`` stores and loads; None when it has no ctx or no body."""
    ctx_name, node = method.ctx_name, method.node
    if ctx_name is None or node is None:
        return None
    facts = method.facts
    found = CtxAttributes()
    stored_targets: Set[int] = set()
    for store in facts.ctx_stores:
        found.stores.setdefault(store.attribute, []).append(store.node)
        stored_targets.add(id(store.node))
    for target in _store_targets(method):
        for attribute in _ctx_attributes_in_target(target, ctx_name):
            found.stores.setdefault(attribute.attr.value, []).append(attribute)
            stored_targets.add(id(attribute))
    for name, reads in facts.ctx_reads.items():
        loads = [read for read in reads if id(read) not in stored_targets]
        if loads:
            found.loads[name] = loads
    accounted = sum(len(reads) for reads in facts.ctx_reads.values())
    for call in facts.calls:
        accounted += _ctx_arguments_accounted(call, ctx_name, found)
        accounted += sum(1 for arg in call.args if arg.keyword is not None and arg.keyword.value == ctx_name)
    everywhere = method.name_count(ctx_name)
    found.opaque = (
        found.opaque
        or ctx_name in facts.bindings  # rebound, or bound to another name as well
        or facts.ctx_references != accounted  # held in a name or container, returned, compared ...
        or everywhere != facts.ctx_references + 1  # seen by a nested function or lambda (+1: the parameter)
        or any(name.startswith("__") for name in facts.ctx_reads)  # ctx.__dict__, ctx.__setattr__
    )
    return found


def _ctx_arguments_accounted(call: cst.Call, ctx_name: str, found: CtxAttributes) -> int:
    """How many of ``call``'s arguments are the bare ctx; marks ``found`` opaque when the call may store
    on it (anything but getattr/hasattr, and setattr with a literal name, which the facts record)."""
    passed = [arg for arg in call.args if isinstance(arg.value, cst.Name) and arg.value.value == ctx_name]
    if not passed:
        return 0
    func = call.func.value if isinstance(call.func, cst.Name) else None
    first = call.args[0]
    literal_name = len(call.args) >= 2 and isinstance(call.args[1].value, cst.SimpleString)
    if len(passed) == 1 and first is passed[0] and not first.star and not first.keyword:
        if func in _PROBES:
            if literal_name:
                name = call.args[1].value.evaluated_value  # type: ignore[attr-defined]
                if isinstance(name, str):
                    found.probed.add(name)
            return 1
        if func == "setattr" and literal_name and len(call.args) == 3:
            return 1
    found.opaque = True
    return len(passed)


def _store_targets(method: Method) -> Iterator[cst.BaseExpression]:
    """Expressions the body changes, loops over, binds with ``with`` or deletes: assignments, unpacked or
    not, are the facts' stores."""
    for node in method.nodes_of(cst.AugAssign, cst.For, cst.Del, cst.WithItem):
        if isinstance(node, cst.AugAssign):
            yield node.target
        elif isinstance(node, (cst.For, cst.Del)):
            yield node.target
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            yield node.asname.name


def _ctx_attributes_in_target(target: cst.BaseExpression, ctx_name: str) -> Iterator[cst.Attribute]:
    if isinstance(target, cst.Attribute):
        if isinstance(target.value, cst.Name) and target.value.value == ctx_name:
            yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _ctx_attributes_in_target(element.value, ctx_name)
    elif isinstance(target, cst.StarredElement):
        yield from _ctx_attributes_in_target(target.value, ctx_name)


def unset_exit(setter: Method, stores: List[cst.CSTNode]) -> Optional[cst.CSTNode]:
    """The first way out of ``setter`` (forward's ``return <value>``, any end of setup_context) reached on
    a path that ran none of ``stores``; None when every path runs one, or when that is not certain.

    Unlike a save, a store under ``if flag:`` with no ``else`` is followed as written: backward has no
    way to know which path forward took unless it tests the same thing, which the caller checks.
    """
    node = setter.node
    if node is None or setter.facts.yields:
        return None
    if any(id(store) in setter.derived(_run_before_any_return) for store in stores):
        return None  # a plain statement of the body itself, before anything that can return: on every path
    in_forward = setter.name == "forward"
    walker = _StoreWalker(setter, stores, any_return=not in_forward, gradient_names=setter.derived(_gradient_locals))
    try:
        falls_off_unset = walker.block(node.body, live=True)
    except _Unknown:
        return None
    if walker.unsaved_exit is None and falls_off_unset and not in_forward:
        body = node.body
        walker.unsaved_exit = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else node
    return walker.unsaved_exit


def _run_before_any_return(method: Method) -> FrozenSet[int]:
    """Ids of the nodes of the body's own simple statements that come before every statement holding a
    ``return``: each runs on every path to a way out (one walk of the body, shared by every attribute)."""
    body = method.node.body if method.node is not None else None
    if not isinstance(body, cst.IndentedBlock):
        return frozenset()
    found: Set[int] = set()
    for statement in body.body:
        nodes = [statement, *walk_scope(statement)]
        if any(type(node) is cst.Return for node in nodes):
            break
        if isinstance(statement, cst.SimpleStatementLine):
            found.update(id(node) for node in nodes)
    return frozenset(found)


class _StoreWalker(_PathWalker):
    """The saving-path walk with stores for saves, where an ``if`` without ``else`` is a path like any."""

    def statement(self, statement: cst.BaseStatement, live: bool) -> bool:
        if isinstance(statement, cst.If):
            settled = self.settled_branch(statement, live)
            if settled is not None:
                return settled  # ``if not any(ctx.needs_input_grad): return out``: no backward follows
        if isinstance(statement, cst.If) and statement.orelse is None:
            if self._mentions_gradient_test(statement.test):
                raise _Unknown
            if self._saves_in(statement.test):
                live = False
            return self.block(statement.body, live) or live
        return super().statement(statement, live)


def guarded_nodes(method: Method) -> Set[int]:
    """Ids of the nodes of ``method`` that may not run when their statement does, or whose failure a
    handler may catch: the arms of ``a if t else b``, the right side of ``and``/``or``, comprehension
    bodies, and everything in the body of a ``try`` with handlers."""
    guarded: Set[int] = set()
    for node in method.nodes_of(
        cst.IfExp, cst.BooleanOperation, cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp, cst.Try
    ):
        parts: List[cst.CSTNode] = []
        if isinstance(node, cst.IfExp):
            parts = [node.body, node.orelse]
        elif isinstance(node, cst.BooleanOperation):
            parts = [node.right]
        elif isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            parts = [node.elt, node.for_in]
        elif isinstance(node, cst.DictComp):
            parts = [node.key, node.value, node.for_in]
        elif isinstance(node, cst.Try) and node.handlers:
            parts = [node.body]
        for part in parts:
            guarded.add(id(part))
            guarded.update(id(each) for each in method.below(part))
    return guarded


def stored_through_graph_nodes(tree: ast.Module, lines: Optional[Sequence[str]]) -> Optional[FrozenSet[str]]:
    """Attributes the module stores on a graph node from outside the class: ``out.grad_fn.attr = v``, or
    through a name bound to ``out.grad_fn``. That node is the ctx backward receives, so such an attribute
    is set before backward runs. None when a store's name is computed (``setattr(node, name, v)``)."""
    if lines is not None and not any("grad_fn" in line for line in lines):
        return frozenset()
    nodes = {
        target.id for statement in ast.walk(tree) if isinstance(statement, ast.Assign)
        and _is_graph_node(statement.value, frozenset()) for target in statement.targets
        if isinstance(target, ast.Name)
    }
    known = frozenset(nodes)
    stored: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _is_graph_node(node.value, known):
            stored.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            if node.args and _is_graph_node(node.args[0], known):
                name = node.args[1] if len(node.args) > 1 else None
                if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                    return None
                stored.add(name.value)
    return frozenset(stored)


def _is_graph_node(node: ast.expr, names: FrozenSet[str]) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "grad_fn") or (
        isinstance(node, ast.Name) and node.id in names
    )
