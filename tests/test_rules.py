"""Each rule's own examples (shown in its docs) behave as documented, and every code is documented."""

from __future__ import annotations

import ast
import re
import textwrap
from typing import List, Tuple

import pytest

from conftest import ROOT, codes
from flake8_autograd.checking.checker import check_module
from flake8_autograd.core.settings import Settings
from flake8_autograd.rules import MESSAGES, PREVIEW_RULES, RULES
from flake8_autograd.rules.base import Rule

PRELUDE = "import torch\nfrom torch.autograd.function import once_differentiable\n"


def examples(kind: str) -> List[Tuple[Rule, str]]:
    return [(rule, example) for rule in RULES + PREVIEW_RULES for example in getattr(rule, kind)]


def all_codes(source: str) -> List[str]:
    """Codes from every rule, preview ones included."""
    source = textwrap.dedent(source)
    lines = source.splitlines(keepends=True)
    findings = check_module(ast.parse(source), lines, "example.py", Settings(preview=True))
    return [finding.code for finding in findings]


def _id(case: Tuple[Rule, str]) -> str:
    return case[0].code


@pytest.mark.parametrize("case", examples("invalid"), ids=_id)
def test_invalid_examples_are_reported(case: Tuple[Rule, str]) -> None:
    rule, example = case
    assert rule.code in all_codes(PRELUDE + _dedent(example))


@pytest.mark.parametrize("case", examples("valid"), ids=_id)
def test_valid_examples_are_silent(case: Tuple[Rule, str]) -> None:
    rule, example = case
    assert codes(PRELUDE + _dedent(example)) == []  # the default rules
    assert rule.code not in all_codes(PRELUDE + _dedent(example))


def _dedent(example: str) -> str:
    return textwrap.dedent(example)


def test_codes_are_unique_and_sequential() -> None:
    registered = [rule.code for rule in RULES + PREVIEW_RULES]
    assert len(set(registered)) == len(registered)
    assert all(re.fullmatch(r"AGF\d{3}", code) for code in registered)
    assert set(MESSAGES) == set(registered)


@pytest.mark.parametrize("rule", RULES + PREVIEW_RULES, ids=lambda rule: rule.code)
def test_every_code_has_a_docs_page(rule: Rule) -> None:
    page = ROOT / "docs" / "rules" / f"{rule.code}.md"
    assert page.exists(), f"{page.name} is missing"
    text = page.read_text(encoding="utf-8")
    for heading in ("What it does", "Why is this bad?", "Example", "Use instead", "Known limits"):
        assert f"## {heading}" in text, f"{page.name} lacks '{heading}'"


@pytest.mark.parametrize("rule", RULES + PREVIEW_RULES, ids=lambda rule: rule.code)
def test_every_fix_says_whether_it_is_safe(rule: Rule) -> None:
    """A rule with a fix documents it under "Fix safety", saying when it is safe and when not (as ruff's
    pages do); a rule without one has no such section."""
    text = (ROOT / "docs" / "rules" / f"{rule.code}.md").read_text(encoding="utf-8")
    has_fix = "fix" in type(rule).__dict__
    assert ("## Fix safety" in text) == has_fix
    if has_fix:
        section = text.split("## Fix safety", 1)[1].split("\n## ", 1)[0]
        assert re.search(r"\*\*(?:always )?(?:safe|unsafe)\*\*", section, re.IGNORECASE), section


@pytest.mark.parametrize("rule", RULES + PREVIEW_RULES, ids=lambda rule: rule.code)
def test_every_code_is_in_the_readme_table(rule: Rule) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = f"https://github.com/flake8-autograd/flake8-autograd/blob/main/docs/rules/{rule.code}.md"
    assert f"[{rule.code}]({page})" in readme


@pytest.mark.parametrize("rule", RULES + PREVIEW_RULES, ids=lambda rule: rule.code)
def test_messages_start_with_an_imperative_fix(rule: Rule) -> None:
    """The message names the problem, then says what to do after a semicolon (every template of the rule)."""
    templates = [
        value for name, value in vars(type(rule)).items() if name.endswith("message") and isinstance(value, str)
    ]
    assert templates and all(";" in template for template in templates)


@pytest.mark.parametrize("rule", PREVIEW_RULES, ids=lambda rule: rule.code)
def test_preview_docs_say_how_to_enable(rule: Rule) -> None:
    text = (ROOT / "docs" / "rules" / f"{rule.code}.md").read_text(encoding="utf-8")
    assert "--autograd-preview" in text
    assert f"--extend-select {rule.code}" in text  # one preview code on, the flake8 way
