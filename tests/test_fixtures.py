"""Fixture files: every line's findings must be exactly the codes its trailing comment names."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import FIXTURES, expected_findings, fixture_paths, lint
from flake8_autograd.rules import PREVIEW_RULES, RULES
from flake8_autograd.rules.base import Rule

_CASE = re.compile(r"^class (\w+)")


@pytest.mark.parametrize("path", fixture_paths(), ids=lambda path: path.name)
def test_fixture_findings_match_comments(path: Path) -> None:
    # Fixtures of preview rules (agf1xx) are checked with every rule on; core fixtures as installed.
    findings = lint(path.read_text(encoding="utf-8"), filename=str(path), preview=path.name.startswith("agf1"))
    actual = {(finding.line, finding.code) for finding in findings}
    expected = expected_findings(path)
    assert sorted(actual - expected) == [], "unexpected findings (false alarms)"
    assert sorted(expected - actual) == [], "missed findings"


@pytest.mark.parametrize(
    "rule, minimum, minimum_silent",
    [(rule, 15, 8) for rule in RULES] + [(rule, 10, 5) for rule in PREVIEW_RULES],
    ids=lambda value: getattr(value, "code", str(value)),
)
def test_each_rule_has_enough_cases(rule: Rule, minimum: int, minimum_silent: int) -> None:
    """Each core rule's fixture holds >= 15 top-level cases, >= 8 of which stay silent (preview: 10 and 5)."""
    code = rule.code
    path = FIXTURES / f"{code.lower()}.py"
    assert path.exists(), f"{path.name} is missing"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    expected = expected_findings(path)
    flagged = silent = 0
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        if any((line, code) in expected for line in lines):
            flagged += 1
        else:
            silent += 1
    assert flagged + silent >= minimum, f"{path.name}: {flagged + silent} cases"
    assert silent >= minimum_silent, f"{path.name}: {silent} must-stay-silent cases"
    assert flagged >= 1
