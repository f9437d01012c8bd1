"""``--explain CODE``: the rule's page, as docs/rules has it.

A wheel carries the pages as package data (``flake8_autograd/rule_pages``, copied from docs/rules when
the wheel is built); a source checkout reads docs/rules itself. Without either, the page is made from
the rule class: its name, message, link and examples.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Optional

from ...rules import PREVIEW_CODES, PREVIEW_RULES, RULES
from ...rules.base import DOCS_URL, Rule

PAGES_PACKAGE = "rule_pages"  # below flake8_autograd, in a built wheel
_SOURCE_PAGES = Path(__file__).resolve().parents[4] / "docs" / "rules"  # src/flake8_autograd/adapters/command -> root


def explain(code: str) -> Optional[str]:
    """The page of the rule ``code``; None for a code no rule has."""
    rule = next((rule for rule in RULES + PREVIEW_RULES if rule.code == code), None)
    if rule is None:
        return None
    page = _packaged_page(code) or _source_page(code)
    if page is None:
        page = _page_of(rule)
    return page if page.endswith("\n") else page + "\n"


def _packaged_page(code: str) -> Optional[str]:
    try:
        page = resources.files("flake8_autograd") / PAGES_PACKAGE / f"{code}.md"
        return page.read_text(encoding="utf-8") if page.is_file() else None
    except (OSError, UnicodeError, ModuleNotFoundError):
        return None


def _source_page(code: str) -> Optional[str]:
    try:
        return (_SOURCE_PAGES / f"{code}.md").read_text(encoding="utf-8")
    except (OSError, UnicodeError):
        return None


def _page_of(rule: Rule) -> str:
    parts = [f"# {rule.code}: {rule.name}", ""]
    if rule.code in PREVIEW_CODES:
        parts += ["A preview rule: it runs with --preview.", ""]
    parts += [f"Message: {rule.code} {rule.message}", "", f"The full page: {DOCS_URL.format(code=rule.code)}"]
    for title, examples in (("Reported", rule.invalid), ("Not reported", rule.valid)):
        for example in examples[:1]:
            parts += ["", f"## {title}", "", "```python", example.rstrip("\n"), "```"]
    return "\n".join(parts)
