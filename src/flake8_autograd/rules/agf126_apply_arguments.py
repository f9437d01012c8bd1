"""AGF126: ``Cls.apply(...)`` called with a number of positional arguments forward cannot take; with
``--autograd-min-torch-version`` below 2.13, also called with keyword arguments in the combined style."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional, Sequence, Tuple

from ..core.conventions import TorchVersion
from ..engine.facts.amp import amp_decorators
from ..engine.analysis.module_analysis import Analysis
from ..engine.analysis.apply_sites import ApplySite, apply_sites
from ..engine.models.class_model import ClassModel, Method, Param
from ..engine.syntax.locate import ast_span
from .base import Finding, Rule

# The first release whose ``apply`` takes keyword arguments in the combined style (forward(ctx, ...));
# older ones raise ``TypeError: apply() takes no keyword arguments``. The setup_context style binds
# keywords to forward's signature (``bind_default_args``) in every release that has that style.
APPLY_KEYWORDS_SINCE = TorchVersion(2, 13)


@dataclass(frozen=True)
class _Inputs:
    """What forward takes from ``apply``'s positional arguments."""

    params: Tuple[Param, ...]

    @property
    def most(self) -> int:
        return len(self.params)

    @property
    def least(self) -> int:
        return sum(1 for param in self.params if not param.has_default)

    def described(self) -> str:
        return f"{self.least} to {self.most}" if self.least != self.most else str(self.most)


class ApplyArgumentsRule(Rule):
    code = "AGF126"
    name = "apply called with a count of arguments forward cannot take"
    message = "{cls}.apply() gets {given} positional argument{plural} but {forward} takes {taken}; pass {taken}"
    keyword_message = (
        "{cls}.apply() gets keyword argument{plural} {names}, refused before torch {since}; pass {them} positionally"
    )
    invalid = (
        """
        class ScaleFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, factor=2.0):
                ctx.factor = factor
                return x * factor

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.factor, None

        def scale(x):
            return ScaleFn.apply(x, 3.0, True)
        """,
    )
    valid = (
        """
        class ScaleFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, factor=2.0):
                ctx.factor = factor
                return x * factor

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.factor, None

        def scale(x):
            return ScaleFn.apply(x, 3.0)
        """,
    )

    def check(self, model: ClassModel, analysis: Analysis) -> Iterator[Finding]:
        sites = apply_sites(analysis, model.site)
        if not sites:
            return
        forward = model.method("forward")
        if forward is None:
            return
        inputs = _forward_inputs(model, forward, analysis)
        refusing = _oldest_refusing_keywords(model, analysis.min_torch_version)
        lines = model.segment.lines
        for site in sites:
            named = [name for name in site.keywords if name is not None]  # ``**options`` may be empty
            if named and refusing is not None:
                yield self._report_keywords(site, lines, cls=model.name, names=named)
                continue
            if inputs is None or site.starred or site.keywords:
                continue  # ``*args`` may hold any count; a keyword may fill a slot
            if inputs.least <= site.positional <= inputs.most:
                continue
            shown = forward.name if forward.owner is model else forward.qualname
            yield self._report(site, lines, cls=model.name, forward=shown, inputs=inputs)

    def _report(self, site: ApplySite, lines: Sequence[str], cls: str, forward: str, inputs: _Inputs) -> Finding:
        text = self.message.format(
            cls=cls, given=site.positional, plural="" if site.positional == 1 else "s", forward=forward,
            taken=inputs.described(),
        )
        return self._at(site, lines, text)

    def _report_keywords(
        self, site: ApplySite, lines: Sequence[str], cls: str, names: Sequence[str]
    ) -> Finding:
        text = self.keyword_message.format(
            cls=cls, plural="" if len(names) == 1 else "s", names=", ".join(repr(name) for name in names),
            since=APPLY_KEYWORDS_SINCE, them="it" if len(names) == 1 else "them",
        )
        return self._at(site, lines, text)

    def _at(self, site: ApplySite, lines: Sequence[str], text: str) -> Finding:
        """A finding at the call (where its text starts, through brackets and continuation lines)."""
        span = ast_span(site.call, lines)
        line, column = span[0] if span is not None else (site.call.lineno, site.call.col_offset)
        return Finding(line, column, self.code, f"{self.code} {text}")


def _oldest_refusing_keywords(model: ClassModel, oldest: Optional[TorchVersion]) -> Optional[TorchVersion]:
    """The oldest torch the project supports, when that release's ``apply`` of this class refuses keyword
    arguments: older than 2.13, and ``apply`` certainly torch's own on a combined-style class (no
    setup_context, no ``apply`` of the class's own, no base this module cannot see, which may define either)."""
    if oldest is None or oldest >= APPLY_KEYWORDS_SINCE:
        return None
    if model.setup_context_style or model.has_unknown_base:
        return None
    if model.method("apply") is not None or model.class_attribute("apply") is not None:
        return None
    return oldest


def _forward_inputs(model: ClassModel, forward: Optional[Method], analysis: Analysis) -> Optional[_Inputs]:
    """The positional inputs forward takes after what ``apply`` supplies itself (ctx, in the combined style);
    None when forward's shape is not certain: ``*args``, an unseen base (which may define ``apply`` or
    forward), a decorator that may change the signature, an ``apply`` of the class's own."""
    if forward is None or forward.signature is None or forward.signature.vararg is not None:
        return None
    if model.has_unknown_base or model.method("apply") is not None or model.class_attribute("apply") is not None:
        return None
    if amp_decorators(forward, analysis.imports).unknown:
        return None  # custom_fwd passes every argument through; anything else may not
    params = tuple(forward.signature.positional)
    if not model.setup_context_style:
        if not params:
            return None  # no ctx parameter: the class is broken in another way (AGF002)
        params = params[1:]
    return _Inputs(params)
