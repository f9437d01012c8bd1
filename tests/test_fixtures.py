"""Fixture files: every line's findings must be exactly the codes its trailing comment names."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import List, Tuple

import pytest

from conftest import FIXTURES, expected_findings, fixture_paths, lint
from flake8_autograd.rules import PREVIEW_CODES, PREVIEW_RULES, RULES
from flake8_autograd.engine.discovery.custom_ops import CustomOpDiscovery
from flake8_autograd.engine.discovery.functions import iter_statements
from flake8_autograd.engine.syntax.names import ImportTable
from flake8_autograd.rules.base import OpRule, Rule

_CASE = re.compile(r"^class (\w+)")


@pytest.mark.parametrize("path", fixture_paths(), ids=lambda path: path.name)
def test_fixture_findings_match_comments(path: Path) -> None:
    # A fixture of a preview rule (named after its code) is checked with every rule on; a default rule's
    # fixture as installed, so a preview rule's finding there would show as unexpected.
    preview = path.name[:6].upper() in PREVIEW_CODES
    findings = lint(path.read_text(encoding="utf-8"), filename=str(path), preview=preview)
    actual = {(finding.line, finding.code) for finding in findings}
    expected = expected_findings(path)
    assert sorted(actual - expected) == [], "unexpected findings (false alarms)"
    assert sorted(expected - actual) == [], "missed findings"


@pytest.mark.parametrize(
    "rule, minimum, minimum_silent",
    # The five first codes (AGF0xx) keep their larger fixtures whether on by default or in preview.
    [(rule, 15, 8) if rule.code < "AGF100" else (rule, 10, 5) for rule in RULES + PREVIEW_RULES],
    ids=lambda value: getattr(value, "code", str(value)),
)
def test_each_rule_has_enough_cases(rule: Rule, minimum: int, minimum_silent: int) -> None:
    """Each AGF0xx rule's fixture holds >= 15 top-level cases, >= 8 of which stay silent (AGF1xx: 10 and 5)."""
    code = rule.code
    path = FIXTURES / f"{code.lower()}.py"
    assert path.exists(), f"{path.name} is missing"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    expected = expected_findings(path)
    flagged = silent = 0
    for lines in _case_spans(rule, tree):
        if any((line, code) in expected for line in lines):
            flagged += 1
        else:
            silent += 1
    assert flagged + silent >= minimum, f"{path.name}: {flagged + silent} cases"
    assert silent >= minimum_silent, f"{path.name}: {silent} must-stay-silent cases"
    assert flagged >= 1


def _case_spans(rule: Rule, tree: ast.Module) -> List[range]:
    """The lines of each case: a top-level class, or for an op rule a custom op with everything registered
    for it (from the op's ``def`` to the last line of its registrations)."""
    if not isinstance(rule, OpRule):
        nodes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
        return [range(node.lineno, (node.end_lineno or node.lineno) + 1) for node in nodes]
    spans = []
    for op in CustomOpDiscovery(tree, ImportTable.from_ast(_statements(tree), "fixture.py")).ops:
        parts: List[ast.AST] = [op.function, *op.fakes]
        for registration in op.registrations:
            functions = (registration.call, registration.backward, registration.setup_context)
            parts.extend(part for part in functions if part is not None)
        first = min(getattr(part, "lineno") for part in parts)
        last = max(getattr(part, "end_lineno") or getattr(part, "lineno") for part in parts)
        spans.append(range(first, last + 1))
    return spans


def _statements(tree: ast.Module) -> List[Tuple[ast.stmt, bool, bool]]:
    return [
        (statement, place.nested, place.fallback)
        for statement, place in iter_statements(tree.body)
        if isinstance(statement, ast.stmt)
    ]
