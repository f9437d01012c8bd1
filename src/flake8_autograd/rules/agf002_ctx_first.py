"""AGF002: the first parameter of a contract method that receives ctx must be named as the ctx (``ctx``,
``_ctx``, ``func_ctx``, or the names a project sets)."""

from __future__ import annotations

from typing import Iterator, List, Optional

import libcst as cst
from libcst.metadata import Assignment

from ..engine.analysis.module_analysis import Analysis
from ..core.conventions import CtxNames
from ..engine.models.class_model import ClassModel, Method, Param, uses_first_as_ctx
from ..engine.syntax.walk import walk
from ..core.fixes import Fix
from ..engine.syntax.locate import NodeLocator, locator
from .base import Finding, Rule

# Calls that read local variables by name: a rename would change what they see.
_NAME_READERS = frozenset({"locals", "vars", "eval", "exec", "dir"})

# vmap takes ``info`` first; forward takes ctx only in the combined style (checked below).
_TAKES_CTX = ("forward", "setup_context", "backward", "vjp", "jvp")


class CtxFirstRule(Rule):
    code = "AGF002"
    name = "first parameter must be ctx"
    message = "{method} takes {first!r} first; name the first parameter {ctx}"
    missing_message = "{method} takes no ctx parameter; add {ctx} as the first parameter"
    forward_without_ctx_message = (
        "{method} takes {first!r} first, not ctx; add {ctx} before it, or define setup_context"
    )
    invalid = (
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def backward(self, grad):
                return grad
        """,
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def forward(x):
                return x.clone()
        """,
    )
    valid = (
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def forward(x):
                return x.clone()

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass
        """,
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def vmap(info, in_dims, x):
                return x, in_dims[0]
        """,
        """
        class MyFn(torch.autograd.Function):
            @staticmethod
            def backward(_ctx, grad):
                return grad
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        names = analysis.ctx_names
        for name in _TAKES_CTX:
            method = model.own_methods.get(name)
            if method is None or method.signature is None:
                continue
            if name == "forward" and model.setup_context_style:
                continue
            first = method.signature.first
            if first is None:
                if method.signature.vararg is None:
                    yield self.report(
                        method, template=self.missing_message, method=method.qualname, ctx=names.preferred
                    )
            elif first.name == "self" and not method.is_static and not method.is_classmethod:
                continue  # a legacy method, whose self is the instance: AGF001 reports the missing @staticmethod
            elif not names.accepts(first.name):
                if name == "forward" and not uses_first_as_ctx(method):
                    template = self.forward_without_ctx_message
                else:
                    template = self.message
                yield self.report(
                    method, first.node, template=template, method=method.qualname, first=first.name, ctx=names.preferred
                )

    def fix(self, finding: Finding, model: ClassModel, analysis: Analysis) -> Optional[Fix]:
        """Rename the first parameter to the preferred ctx name (``ctx``), with every reference to it in the method.

        Only a rename of a parameter already used as the ctx (or named like one): a method with no first
        parameter, or one whose first parameter was meant as an input or a gradient, needs a parameter
        added, which is for the author to do.
        """
        for name in _TAKES_CTX:
            method = model.own_methods.get(name)
            if method is None or method.node is None or method.signature is None:
                continue
            first = method.signature.first
            names = analysis.ctx_names
            if first is None or names.accepts(first.name):
                continue
            if method.position(first.node) != (finding.line, finding.column):
                continue
            if not uses_first_as_ctx(method):
                return None  # ``backward(grad, *rest)``: the author meant an input or gradient, not the ctx
            if name == "forward" and model.setup_context_style:
                return None
            if analysis.name_uses().keywords[first.name]:
                return None  # a call passes it by name (``Fn.forward(self=...)``): the rename would break it
            where = locator(model.segment)
            return _rename_to_ctx(method, first, where, names) if where is not None else None
        return None


def _rename_to_ctx(method: Method, first: Param, where: NodeLocator, ctx_names: CtxNames) -> Optional[Fix]:
    """Edits renaming ``first`` to the preferred ctx name, when the method's scopes say that changes nothing else."""
    assert method.node is not None
    names = _names_in(method.node)
    old, new = first.name, ctx_names.preferred
    if any(node.value in (new, *_NAME_READERS) for node in names):
        return None  # ctx already means something here (or a name is read dynamically)
    if _declares(method.node, old):
        return None  # ``global``/``nonlocal`` of the old name in a nested scope: bindings cross scopes
    scope = where.scope_of(first.node)
    if scope is None:
        return None
    assignments = list(scope.assignments[old])
    if len(assignments) != 1 or not isinstance(assignments[0], Assignment) or assignments[0].node is not first.node:
        return None  # the method binds the name again: which value a use sees depends on the path
    targets: List[cst.CSTNode] = [first.node.name]
    for access in assignments[0].references:
        if not isinstance(access.node, cst.Name) or access.node.value != old:
            return None  # a reference libcst finds elsewhere (a string annotation, say)
        targets.append(access.node)
    # Every use of the old name in the method must be one of the references the rename covers.
    if sum(1 for node in names if node.value == old) != len(targets):
        return None
    edits = [where.replace(node, new) for node in targets]
    if any(edit is None for edit in edits):
        return None
    printed = _printed_by_name(method, old)
    return Fix(tuple(edit for edit in edits if edit is not None), DEBUG_PRINT_UNSAFE_BECAUSE if printed else None)


DEBUG_PRINT_UNSAFE_BECAUSE = (
    "an f-string's = specifier prints the parameter's name with its value (f\"{self=}\"): the text it "
    "produces changes"
)


def _printed_by_name(method: Method, name: str) -> bool:
    """Whether an f-string ``{expression=}`` of the method writes out ``name`` (its text is printed too)."""
    for node in method.whole_body():
        if type(node) is cst.FormattedStringExpression and getattr(node, "equal", None) is not None:
            if any(type(each) is cst.Name and each.value == name for each in (node.expression, *walk(node.expression))):
                return True
    return False


class _NameCollector(cst.CSTVisitor):
    """Every name in code, except attribute names (``x.ctx``) and keywords of calls (``f(ctx=...)``)."""

    def __init__(self) -> None:
        self.names: List[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def _names_in(function: cst.FunctionDef) -> List[cst.Name]:
    collector = _NameCollector()
    function.visit(collector)
    return collector.names


class _Declarations(cst.CSTVisitor):
    def __init__(self) -> None:
        self.declared: List[str] = []

    def visit_Global(self, node: cst.Global) -> None:
        self.declared.extend(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.declared.extend(item.name.value for item in node.names)


def _declares(function: cst.FunctionDef, name: str) -> bool:
    declarations = _Declarations()
    function.visit(declarations)
    return name in declarations.declared
