"""AGF132: a custom op writes in place to an argument its ``mutates_args`` does not list; or an op that
lists mutated arguments is given an autograd formula."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Set

from ..engine.facts.op_facts import holds_tensors, in_place_writes, stable_tensor_parameters
from .base import Finding, OpRule

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.analysis.module_analysis import Analysis
    from ..engine.discovery.custom_ops import CustomOpSite


class UndeclaredMutationRule(OpRule):
    code = "AGF132"
    name = (
        "a custom op writes in place to an argument mutates_args does not list, or gets register_autograd "
        "while it mutates"
    )
    message = "op {op} writes '{name}' in place ({how}); list it in mutates_args or write to a copy"
    register_autograd_message = (
        "register_autograd on op {op}, which mutates {mutated}, raises; give the formula to a functional op "
        "(mutates_args=())"
    )
    invalid = (
        """
        @torch.library.custom_op("example::relu_inplace", mutates_args=())
        def relu_inplace(x: torch.Tensor) -> None:
            x.clamp_(min=0)
        """,
    )
    valid = (
        """
        @torch.library.custom_op("example::relu_inplace", mutates_args=("x",))
        def relu_inplace(x: torch.Tensor) -> None:
            x.clamp_(min=0)
        """,
    )

    def check_op(self, op: "CustomOpSite", analysis: "Analysis") -> Iterator[Finding]:
        imports = analysis.discovery.imports
        if op.mutates_args is not None and not op.mutates_unknown:
            declared: Set[str] = set(op.mutates_args)
            parameters = set(stable_tensor_parameters(op.function, imports, optional=True)) - declared
            reported: Set[str] = set()
            for write in in_place_writes(op.function, parameters, imports):
                if write.parameter not in reported:
                    reported.add(write.parameter)
                    yield self.report_at(write.node, op=f"'{op.name}'", name=write.parameter, how=write.how)
        mutated = self._mutated(op, analysis)
        if mutated is not None:
            for registration in op.registrations:
                yield self.report_at(
                    registration.call, self.register_autograd_message, op=f"'{op.name}'", mutated=mutated
                )

    @staticmethod
    def _mutated(op: "CustomOpSite", analysis: "Analysis") -> "str | None":
        """What the op's schema marks as written, when certain: the names listed, or every tensor
        argument for ``mutates_args="unknown"``; None when it marks nothing (or it is not known)."""
        if op.mutates_args:
            return ", ".join(f"'{name}'" for name in op.mutates_args)
        if op.mutates_unknown:
            arguments = op.function.args
            every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
            if any(holds_tensors(arg.annotation, analysis.discovery.imports) for arg in every):
                return "every tensor argument (mutates_args=\"unknown\")"
        return None
