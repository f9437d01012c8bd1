"""Fixture files: every line's findings must be exactly the codes its trailing comment names."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import FIXTURES, expected_findings, fixture_paths, lint
from flake8_autograd.rules import RULES

_CASE = re.compile(r"^class (\w+)")


@pytest.mark.parametrize("path", fixture_paths(), ids=lambda path: path.name)
def test_fixture_findings_match_comments(path: Path) -> None:
    actual = {(finding.line, finding.code) for finding in lint(path.read_text(encoding="utf-8"), filename=str(path))}
    expected = expected_findings(path)
    assert sorted(actual - expected) == [], "unexpected findings (false alarms)"
    assert sorted(expected - actual) == [], "missed findings"


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.code)
def test_each_rule_has_enough_cases(rule: object) -> None:
    """Each rule's fixture holds >= 15 top-level cases, >= 8 of which must stay silent."""
    code = rule.code  # type: ignore[attr-defined]
    path = FIXTURES / f"{code.lower()}.py"
    assert path.exists(), f"{path.name} is missing"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    expected = expected_findings(path)
    flagged = silent = 0
    for node in tree.body:
        if not isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            continue
        lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        if any((line, code) in expected for line in lines):
            flagged += 1
        else:
            silent += 1
    assert flagged + silent >= 15, f"{path.name}: {flagged + silent} cases"
    assert silent >= 8, f"{path.name}: {silent} must-stay-silent cases"
    assert flagged >= 1
