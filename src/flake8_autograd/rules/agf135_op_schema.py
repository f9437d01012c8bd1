"""AGF135: a custom op whose signature torch cannot turn into a schema (it raises at decoration)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterator, List, Tuple

from ..engine.facts.op_facts import (
    AnnotationReader, holds_tensors, parameter_type_supported, return_type_supported,
)
from .base import Finding, OpRule

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.analysis.module_analysis import Analysis
    from ..engine.discovery.custom_ops import CustomOpSite

_PARAMETER_TYPES = "Tensor, int, float, bool, str, ..."
# Default values torch cannot write in a schema (it takes None, numbers, bools, strings, dtypes, devices).
_CONTAINER_LITERALS = {
    ast.Tuple: "tuple", ast.List: "list", ast.Dict: "dict", ast.Set: "set", ast.ListComp: "list",
    ast.DictComp: "dict", ast.SetComp: "set",
}
_RETURN_TYPES = "Tensor, list[Tensor], int, a tuple of these, ..."


class OpSchemaRule(OpRule):
    code = "AGF135"
    name = "a custom op whose signature torch cannot turn into a schema (raises at decoration)"
    message = "op {op}: parameter '{name}' has no type annotation; annotate it ({types})"
    unsupported_parameter_message = "op {op}: parameter '{name}' has unsupported type {annotation}; {advice}"
    parameter_kind_message = (
        "op {op}: {what} '{name}' is not supported; give the op named parameters, one per input"
    )
    default_message = (
        "op {op}: parameter '{name}' defaults to a {kind}; default to None and build the {kind} in the body"
    )
    no_return_message = "op {op} has no return annotation; annotate it ({types})"
    unsupported_return_message = "op {op} returns unsupported type {annotation}; return {types}"
    no_mutates_message = (
        "custom_op {op} is made without mutates_args; pass mutates_args=() if the op writes no argument"
    )
    keyword_tensor_message = "op {op}: keyword-only parameter '{name}' holds tensors; move it before the '*'"
    invalid = (
        """
        @torch.library.custom_op("example::scale", mutates_args=())
        def scale(x: torch.Tensor, factor) -> torch.Tensor:
            return x * factor
        """,
    )
    valid = (
        """
        @torch.library.custom_op("example::scale", mutates_args=())
        def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
            return x * factor
        """,
    )

    def check_op(self, op: "CustomOpSite", analysis: "Analysis") -> Iterator[Finding]:
        factory = op.factory
        given = {keyword.arg for keyword in factory.keywords}
        if None in given:
            return  # ``**options``: mutates_args, schema or tags may be among them
        name = f"'{op.name}'"
        if "mutates_args" not in given:
            yield self.report_at(factory, self.no_mutates_message, op=name)
        if "schema" in given:
            return  # a written schema: the annotations are not read
        reader = AnnotationReader(analysis.discovery.imports, analysis.bound_names())
        yield from self._check_parameters(op, reader, tagged="tags" in given)
        if "tags" not in given:  # an out or in-place tag reads the return against the mutated arguments
            yield from self._check_return(op, reader)

    def _check_parameters(self, op: "CustomOpSite", reader: AnnotationReader, tagged: bool) -> Iterator[Finding]:
        name = f"'{op.name}'"
        arguments = op.function.args
        for arg in arguments.posonlyargs:
            yield self.report_at(arg, self.parameter_kind_message, op=name, what="positional-only parameter",
                                 name=arg.arg)
        for packed, what in ((arguments.vararg, "*args parameter"), (arguments.kwarg, "**kwargs parameter")):
            if packed is not None:
                yield self.report_at(packed, self.parameter_kind_message, op=name, what=what, name=packed.arg)
        for arg in arguments.args + arguments.kwonlyargs:
            if arg.annotation is None:
                yield self.report_at(arg, op=name, name=arg.arg, types=_PARAMETER_TYPES)
                continue
            term = reader.term(arg.annotation)
            if term is not None and not parameter_type_supported(term):
                advice = (
                    "use a List instead of a Tuple" if isinstance(term, tuple) and term[0] == "tuple" or term == "tuple"
                    else f"use {_PARAMETER_TYPES}"
                )
                yield self.report_at(arg.annotation, self.unsupported_parameter_message, op=name, name=arg.arg,
                                     annotation=_quoted(arg.annotation), advice=advice)
            elif not tagged and arg in arguments.kwonlyargs and holds_tensors(arg.annotation, reader.imports):
                yield self.report_at(arg, self.keyword_tensor_message, op=name, name=arg.arg)
        positional = arguments.args[len(arguments.args) - len(arguments.defaults):]
        defaults: List[Tuple[ast.arg, ast.expr]] = list(zip(positional, arguments.defaults))
        defaults += [(arg, default) for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults) if default]
        for arg, default in defaults:
            kind = _CONTAINER_LITERALS.get(type(default))
            if kind is not None:
                yield self.report_at(default, self.default_message, op=name, name=arg.arg, kind=kind)

    def _check_return(self, op: "CustomOpSite", reader: AnnotationReader) -> Iterator[Finding]:
        function = op.function
        name = f"'{op.name}'"
        if function.returns is None:
            yield self.report_at(function, self.no_return_message, op=name, types=_RETURN_TYPES)
            return
        term = reader.term(function.returns)
        if term is not None and not return_type_supported(term):
            yield self.report_at(function.returns, self.unsupported_return_message, op=name,
                                 annotation=_quoted(function.returns),
                                 types=_RETURN_TYPES)


def _quoted(annotation: ast.expr) -> str:
    """The annotation as written, in quotes (a string annotation already has them)."""
    text = ast.unparse(annotation)
    return text if isinstance(annotation, ast.Constant) else f"'{text}'"
