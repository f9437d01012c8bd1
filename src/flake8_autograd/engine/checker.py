"""Checking one module: the entry point every adapter (flake8 plugin, command line) calls."""

from __future__ import annotations

import ast
import gc
from contextlib import contextmanager
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from ..rules import RULES
from ..rules.base import Finding, Rule
from .analysis import Analysis
from .discovery import MAX_LOCAL_DEPTH, ClassSite, Discovery
from .model import ClassModel
from .source import parse_class

INTERNAL_ERROR = "AGF000"


def might_define_function(text: str, extra_bases: Sequence[str]) -> bool:
    """A text test that rules out most files before any tree is looked at.

    Every spelling of an autograd Function base contains ``Function`` (``Function``,
    ``ag.Function``, ``InplaceFunction``, an alias imported as ``from ... import Function as F``).
    """
    if "Function" in text:
        return True
    return any(base.rsplit(".", 1)[-1] in text for base in extra_bases)


def check_module(
    tree: ast.Module,
    lines: Sequence[str],
    filename: str = "<unknown>",
    extra_bases: Sequence[str] = (),
    rules: Optional[Iterable[Rule]] = None,
) -> List[Finding]:
    """All findings for one module, sorted by position. Never raises."""
    if not might_define_function("".join(lines), extra_bases):
        return []
    with _collecting_class_by_class() as collect:
        try:
            return _check_module(tree, lines, filename, extra_bases, rules, collect)
        except Exception as error:  # noqa: BLE001 - a plugin must never take the whole flake8 run down
            return [_internal_error(1, 0, "module", error)]


def _check_module(
    tree: ast.Module,
    lines: Sequence[str],
    filename: str,
    extra_bases: Sequence[str],
    rules: Optional[Iterable[Rule]],
    collect: Callable[[], object],
) -> List[Finding]:
    discovery = Discovery(tree, filename, extra_bases)
    sites = discovery.function_classes
    if not sites:
        return []
    analysis = Analysis(tree, discovery)
    builder = _ModelBuilder(lines)
    active = list(RULES if rules is None else rules)
    findings: Dict[Tuple[int, int, str], Finding] = {}
    for site in sites:
        for finding in _check_class(site, builder, analysis, active):
            findings.setdefault((finding.line, finding.column, finding.code), finding)
        if not discovery.has_local_subclass(site):
            # Nothing reads this class again: drop it, so that what is held stays one class, not the file.
            dropped = builder.forget(site)
            if dropped is not None:
                analysis.forget(dropped)
        collect()
    return sorted(findings.values(), key=lambda finding: finding.sort_key)


@contextmanager
def _collecting_class_by_class() -> Iterator[Callable[[], object]]:
    """Python's automatic garbage collection off while a module is checked; a young collection after
    each class instead.

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


def _check_class(site: ClassSite, builder: "_ModelBuilder", analysis: Analysis, rules: List[Rule]) -> List[Finding]:
    try:
        model = builder.build(site)
        if model is None:
            return []  # libcst cannot parse this class: nothing reliable to say
        findings: List[Finding] = []
        for rule in rules:
            findings.extend(rule.check(model, analysis))
        return findings
    except Exception as error:  # noqa: BLE001
        return [_internal_error(site.node.lineno, site.node.col_offset, site.name, error)]


def _internal_error(line: int, column: int, where: str, error: Exception) -> Finding:
    message = (
        f"{INTERNAL_ERROR} internal error while checking {where}: {type(error).__name__}; please report"
    )
    return Finding(line, column, INTERNAL_ERROR, message)


class _ModelBuilder:
    """Parses each class at most once and links models to the models of their local bases."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
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
        finally:
            self._building.discard(key)
        self._models[key] = model
        return model

    def forget(self, site: ClassSite) -> Optional[ClassModel]:
        """Drop the model of ``site`` (to be built again if asked for); the model dropped, if any."""
        return self._models.pop(id(site), None)
