"""AGF133: a custom op returns one of its tensor arguments, or a view of one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import ast

from ..engine.facts.op_facts import AliasFinder, own_scope, stable_tensor_parameters
from .base import Finding, OpRule

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.analysis.module_analysis import Analysis
    from ..engine.discovery.custom_ops import CustomOpSite


class ReturnsInputRule(OpRule):
    code = "AGF133"
    name = "a custom op returns one of its tensor arguments, or a view of one"
    message = "op {op} returns {what}; return a new tensor ({clone})"
    invalid = (
        """
        @torch.library.custom_op("example::flatten_rows", mutates_args=())
        def flatten_rows(x: torch.Tensor) -> torch.Tensor:
            return x.view(x.shape[0], -1)
        """,
    )
    valid = (
        """
        @torch.library.custom_op("example::flatten_rows", mutates_args=())
        def flatten_rows(x: torch.Tensor) -> torch.Tensor:
            return x.view(x.shape[0], -1).clone()
        """,
    )

    def check_op(self, op: "CustomOpSite", analysis: "Analysis") -> Iterator[Finding]:
        imports = analysis.discovery.imports
        parameters = set(stable_tensor_parameters(op.function, imports, optional=True))
        if not parameters:
            return
        finder = AliasFinder(op.function, parameters, imports)
        returns = sorted(
            (node for node in own_scope(op.function) if isinstance(node, ast.Return) and node.value is not None),
            key=lambda node: (node.lineno, node.col_offset),
        )
        for node in returns:
            assert node.value is not None
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for value in values:
                name = finder.aliased(value)
                if name is not None:
                    if isinstance(value, ast.Name) and value.id == name:
                        what = f"its argument '{name}'"
                    else:
                        what = f"'{ast.unparse(value)}', an alias of '{name}'"
                    clone = f"{value.id}.clone()" if isinstance(value, ast.Name) else "add .clone()"
                    yield self.report_at(value, op=f"'{op.name}'", what=what, clone=clone)
                    break
