"""AGF134: a register_autograd backward or setup_context reads ``data_ptr()`` or global state (a global a
function assigns, or a module-level ContextVar / threading.local)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, Iterator, List, Set, Tuple

from ..engine.facts.op_facts import global_writes, own_scope, rebound_names, state_holder_uses
from .base import Finding, OpRule

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.analysis.module_analysis import Analysis
    from ..engine.discovery.custom_ops import CustomOpSite


class UntraceableAutogradRule(OpRule):
    code = "AGF134"
    name = "a register_autograd backward or setup_context calls data_ptr() or reads or writes global state"
    message = (
        "{role} {function} of op {op} calls .data_ptr() (raises under torch.compile); compare tensors instead"
    )
    global_write_message = "{role} {function} of op {op} assigns the global '{name}'; keep per-call state on ctx"
    global_read_message = (
        "{role} {function} of op {op} reads global '{name}', set by {writer}; pass it as an op argument"
    )
    state_read_message = "{role} {function} of op {op} reads {kind} '{name}'; pass the value as an op argument"
    state_write_message = "{role} {function} of op {op} writes {kind} '{name}'; keep per-call state on ctx"
    invalid = (
        """
        @torch.library.custom_op("example::double", mutates_args=())
        def double(x: torch.Tensor) -> torch.Tensor:
            return x * 2

        def double_setup(ctx, inputs, output):
            ctx.pointer = inputs[0].data_ptr()

        def double_backward(ctx, grad):
            return grad * 2

        double.register_autograd(double_backward, setup_context=double_setup)
        """,
    )
    valid = (
        """
        @torch.library.custom_op("example::double", mutates_args=())
        def double(x: torch.Tensor) -> torch.Tensor:
            return x * 2

        def double_setup(ctx, inputs, output):
            ctx.shape = inputs[0].shape

        def double_backward(ctx, grad):
            return grad * 2

        double.register_autograd(double_backward, setup_context=double_setup)
        """,
    )

    def check_op(self, op: "CustomOpSite", analysis: "Analysis") -> Iterator[Finding]:
        functions: List[Tuple[str, ast.FunctionDef]] = []
        for registration in op.registrations:
            for role, function in (("backward", registration.backward), ("setup_context", registration.setup_context)):
                if function is not None and all(function is not seen for _, seen in functions):
                    functions.append((role, function))
        if not functions:
            return
        mutable_globals = analysis.mutable_globals()  # module-wide: worked out once, not per operator
        holders = analysis.state_holders()
        for role, function in functions:
            fields = {"role": role, "function": f"'{function.name}'", "op": f"'{op.name}'"}
            for node in _data_ptr_calls(function):
                yield self.report_at(node, **fields)
            writes = global_writes(function)
            for name, store in sorted(writes.items(), key=lambda item: _position(item[1])):
                yield self.report_at(store, self.global_write_message, name=name, **fields)
            local = rebound_names(function) | _parameters(function)
            for name, (read, writer) in _global_reads(function, mutable_globals, local).items():
                yield self.report_at(read, self.global_read_message, name=name, writer=writer, **fields)
            reported: Set[str] = set()
            for use in state_holder_uses(function, holders, local):
                if use.name not in reported:  # the first use of each holder in the function
                    reported.add(use.name)
                    template = self.state_write_message if use.written else self.state_read_message
                    yield self.report_at(use.node, template, name=use.name, kind=use.kind, **fields)


def _data_ptr_calls(function: ast.FunctionDef) -> List[ast.Call]:
    """The ``.data_ptr()`` calls of ``function``'s own scope, the first of each line."""
    calls = [
        node for node in own_scope(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "data_ptr"
        and not node.args and not node.keywords
    ]
    first_of_line: Dict[int, ast.Call] = {}
    for call in sorted(calls, key=_position):
        first_of_line.setdefault(call.lineno, call)
    return list(first_of_line.values())


def _global_reads(
    function: ast.FunctionDef, mutable_globals: Dict[str, str], local: Set[str]
) -> Dict[str, Tuple[ast.Name, str]]:
    reads: Dict[str, Tuple[ast.Name, str]] = {}
    names = sorted(
        (node for node in own_scope(function) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)),
        key=_position,
    )
    for node in names:
        if node.id in mutable_globals and node.id not in local and node.id not in reads:
            reads[node.id] = (node, f"'{mutable_globals[node.id]}'")
    return reads


def _parameters(function: ast.FunctionDef) -> Set[str]:
    arguments = function.args
    every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
    names = {arg.arg for arg in every}
    names.update(arg.arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None)
    return names


def _position(node: ast.AST) -> Tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)
