"""Checking the Function classes of one module: parse each class with libcst, build its model, and
hand the model to every rule. Reached through :func:`.checker.check_tree` (or ``check_module``),
once discovery has found at least one class.
"""

from __future__ import annotations

import ast
import functools
import gc
from contextlib import contextmanager
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from ..core.findings import Finding, internal_error, too_deep
from ..core.settings import Settings
from ..rules import PREVIEW_RULES, RULES
from ..rules.base import OpRule, Rule
from ..engine.analysis.module_analysis import Analysis
from ..engine.discovery.custom_ops import CustomOpDiscovery, CustomOpSite
from ..engine.discovery.functions import MAX_LOCAL_DEPTH, ClassSite, Discovery
from ..engine.models.class_model import ClassModel
from ..engine.syntax.source import MAX_SYNTAX_DEPTH, parse_class, syntax_depth_exceeds


def rules_for(settings: Settings) -> Sequence[Rule]:
    """The rules ``settings`` run: those on by default, then the preview rules whose codes it names (all of
    them when it names none and preview is on), in the registry's order. Worked out once per selection."""
    return _rules(settings.preview, settings.preview_codes)


@functools.lru_cache(maxsize=None)
def _rules(preview: bool, preview_codes: Optional[FrozenSet[str]]) -> Tuple[Rule, ...]:
    if preview_codes is None:
        return tuple(RULES + PREVIEW_RULES if preview else RULES)
    return tuple(RULES + [rule for rule in PREVIEW_RULES if rule.code in preview_codes])


def check_classes(
    tree: ast.Module,
    lines: Sequence[str],
    discovery: Discovery,
    settings: Settings,
    *,
    custom_ops: Optional[CustomOpDiscovery] = None,
) -> List[Finding]:
    """The findings of every class ``discovery`` found, and of every custom op ``custom_ops`` found,
    sorted by position (without the unproven ones unless preview is on); a rule that raises costs one
    internal-error finding at its class (or op), not the others' findings."""
    active = rules_for(settings)
    analysis = Analysis(tree, discovery, settings, lines)
    builder = _ModelBuilder(lines, analysis)
    findings: Dict[Tuple[int, int, str], Finding] = {}
    with _collecting_class_by_class() as collect:
        for site in discovery.function_classes:
            for finding in _check_class(site, builder, analysis, active):
                if finding.proven or settings.preview:
                    findings.setdefault((finding.line, finding.column, finding.code), finding)
            if not discovery.has_local_subclass(site):
                # Nothing reads this class again: drop it, so that what is held stays one class, not the file.
                _drop(site, builder, analysis)
            collect()
    if custom_ops is not None:
        op_rules = [rule for rule in active if isinstance(rule, OpRule)]
        registration_rules = [rule for rule in active if rule.applies_to_custom_ops and not isinstance(rule, OpRule)]
        for op in custom_ops.ops:
            for finding in _check_op(op, analysis, op_rules):
                findings.setdefault((finding.line, finding.column, finding.code), finding)
            if registration_rules and op.registrations:
                for finding in _check_registrations(op, lines, analysis, registration_rules):
                    if finding.proven or settings.preview:
                        findings.setdefault((finding.line, finding.column, finding.code), finding)
    return sorted(findings.values(), key=lambda finding: finding.sort_key)


def _check_registrations(
    op: CustomOpSite, lines: Sequence[str], analysis: Analysis, rules: Sequence[Rule]
) -> List[Finding]:
    """The Function rules that carry over, on each ``register_autograd`` of ``op`` (a model of the
    Function PyTorch generates for it). A setup_context that cannot take PyTorch's call is left to
    AGF128 alone: the other rules would read its parameters in places they are not."""
    from ..engine.models.custom_op_model import op_models

    findings: List[Finding] = []
    try:
        models = op_models(op, lines)
        # a registration libcst must not parse is left out of the models: said, never skipped in silence
        defs = {id(each): each for registration in op.registrations
                for each in (op.function, registration.backward, registration.setup_context) if each is not None}
        if any(syntax_depth_exceeds(each) for each in defs.values()):
            findings.append(too_deep(op.function.lineno, op.function.col_offset, op.binding, MAX_SYNTAX_DEPTH))
    except Exception as error:  # noqa: BLE001 - a plugin must never take the whole flake8 run down
        return [internal_error(op.function.lineno, op.function.col_offset, op.binding, error)]
    for model in models:
        chosen = rules if model.setup_context_callable else [rule for rule in rules if rule.code == "AGF128"]
        try:
            for rule in chosen:
                findings.extend(rule.check(model, analysis))
        except Exception as error:  # noqa: BLE001 - as for a class: one internal error, not the run
            findings.append(internal_error(op.function.lineno, op.function.col_offset, op.binding, error))
        analysis.forget(model)
    return findings


def _check_op(op: CustomOpSite, analysis: Analysis, rules: List[OpRule]) -> List[Finding]:
    try:
        findings: List[Finding] = []
        for rule in rules:
            findings.extend(rule.check_op(op, analysis))
        return findings
    except Exception as error:  # noqa: BLE001 - a plugin must never take the whole flake8 run down
        return [internal_error(op.function.lineno, op.function.col_offset, op.binding, error)]


def _drop(site: ClassSite, builder: "_ModelBuilder", analysis: Analysis) -> None:
    """Forget the model of ``site`` and what is cached for it (in a function of its own, so that no
    local name keeps the model alive through the collection that follows)."""
    dropped = builder.forget(site)
    if dropped is not None:
        analysis.forget(dropped)
        dropped.release()


@contextmanager
def _collecting_class_by_class() -> Iterator[Callable[[], object]]:
    """Python's automatic garbage collection off while a module's classes are checked; a young
    collection after each class instead.

    A class's model holds reference cycles (a method and its class), so a dropped class waits for the
    cyclic collector. Left to itself, the collector runs every few hundred allocations, promotes the
    class's libcst nodes (thousands per class, all alive while the class is checked) to its oldest
    generation, and so ends up walking everything that generation holds, flake8's ``ast`` tree of the
    whole file included: the time per class then grows with the file. Collecting generation 0 once a
    class is checked walks only what was made since the last class, and frees the dropped class at once.
    The host's setting is restored on the way out; where the host has turned collection off, nothing is
    collected here either.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield (lambda: gc.collect(0)) if enabled else (lambda: None)
    finally:
        if enabled:
            gc.enable()


def _check_class(site: ClassSite, builder: "_ModelBuilder", analysis: Analysis, rules: Sequence[Rule]) -> List[Finding]:
    try:
        model = builder.build(site)
        if model is None:
            if syntax_depth_exceeds(site.node):
                return [too_deep(site.node.lineno, site.node.col_offset, site.name, MAX_SYNTAX_DEPTH)]
            return []  # libcst cannot parse this class: nothing reliable to say
        findings: List[Finding] = []
        for rule in rules:
            findings.extend(rule.check(model, analysis))
        return findings
    except Exception as error:  # noqa: BLE001 - a plugin must never take the whole flake8 run down
        return [internal_error(site.node.lineno, site.node.col_offset, site.name, error)]


class _ModelBuilder:
    """Parses each class at most once and links models to the models of their local bases."""

    def __init__(self, lines: Sequence[str], analysis: Optional[Analysis] = None) -> None:
        self.lines = lines
        self.analysis = analysis  # settles the conditions of the models' methods (dead branches)
        self._models: Dict[int, Optional[ClassModel]] = {}
        self._building: Set[int] = set()

    def build(self, site: ClassSite) -> Optional[ClassModel]:
        key = id(site)
        if key in self._models:
            return self._models[key]
        if key in self._building or len(self._building) > MAX_LOCAL_DEPTH:
            return None  # a cycle of local bases, or a hierarchy too deep to follow
        self._building.add(key)
        try:
            segment = parse_class(self.lines, site.node)
            model = None
            if segment is not None:
                bases = [self.build(base) for base in site.local_bases]
                model = ClassModel(site, segment, bases)
                if self.analysis is not None:
                    model.settle = self.analysis.settle_for(model)
        finally:
            self._building.discard(key)
        self._models[key] = model
        return model

    def forget(self, site: ClassSite) -> Optional[ClassModel]:
        """Drop the model of ``site`` (to be built again if asked for); the model dropped, if any."""
        return self._models.pop(id(site), None)
