"""The accuracy figures the README states are those docs/accuracy.md tables, and those are within what
benchmarks/realcode/judgements.toml holds (no corpus needed: the verdicts are in the repository; which
judged findings the linter still reports is what the scorer, run on the corpus, tells)."""

from __future__ import annotations

import re
import sys
from collections import Counter
from typing import Dict, Tuple

from conftest import ROOT

from flake8_autograd.rules import PREVIEW_RULES, RULES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the test extras install tomli before Python 3.11
    import tomli as tomllib

RULE_PAGES = "https://github.com/flake8-autograd/flake8-autograd/blob/main/docs/rules/"
Counts = Tuple[int, int, int]  # true, false, debatable


def judged_counts() -> Dict[str, Counts]:
    with open(ROOT / "benchmarks" / "realcode" / "judgements.toml", "rb") as stream:
        findings = tomllib.load(stream)["finding"]
    verdicts = Counter((finding["code"], finding["verdict"]) for finding in findings)
    codes = {finding["code"] for finding in findings}
    return {code: (verdicts[code, "true"], verdicts[code, "false"], verdicts[code, "debatable"]) for code in codes}


def precision(counts: Counts, digits: int) -> str:
    true, false, _ = counts
    return f"{true / (true + false):.{digits}f}" if true + false else "—"


def current_judged_counts() -> Dict[str, Counts]:
    """The 'after' columns of the report's judged-findings table."""
    report = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8")
    rows = re.findall(
        r"^\| (AGF\d{3}) \| [^|]+ \| [^|]+ \| (\d+) / (\d+) / (\d+) \| ([0-9.]+|—) \|$", report, re.MULTILINE
    )
    assert rows, "docs/accuracy.md has no before/after table of judged findings"
    result: Dict[str, Counts] = {}
    for code, true, false, debatable, stated in rows:
        counts = (int(true), int(false), int(debatable))
        assert stated == precision(counts, 3), code
        result.setdefault(code, counts)  # the newest round's table comes first in the report
    return result


def current_figures() -> Dict[str, Tuple[str, Counts, str, str]]:
    """The report's "Current figures" table: state, judged counts, precision and source of each code."""
    report = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8")
    section = report.split("\n## Current figures\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(
        r"^\| (AGF\d{3}) \| (on by default|preview) \| (\d+) / (\d+) / (\d+) \| ([0-9.]+|not measured) \| ([^|]+) \|"
        r" ([0-9.]*) ?\|$",
        section, re.MULTILINE,
    )
    result: Dict[str, Tuple[str, Counts, str, str]] = {}
    for code, state, true, false, debatable, stated, source, _ in rows:
        assert code not in result, code
        result[code] = (state, (int(true), int(false), int(debatable)), stated, source.strip())
    return result


def test_current_figures_cover_every_code_with_its_state_and_precision() -> None:
    figures = current_figures()
    default = {rule.code for rule in RULES}
    assert set(figures) == default | {rule.code for rule in PREVIEW_RULES}
    for code, (state, counts, stated, source) in figures.items():
        assert (state == "on by default") == (code in default), code
        true, false, _ = counts
        assert stated == (precision(counts, 3) if true + false else "not measured"), code


def test_current_figures_are_the_newest_round_of_judged_test_findings() -> None:
    judged = current_judged_counts()
    for code, (_, counts, _, source) in current_figures().items():
        if source == "test":
            assert counts == judged.get(code, (0, 0, 0)), code


def test_readme_states_each_codes_precision_as_the_report_does() -> None:
    """The README's one rule table ends each row with the report's current figure for the code."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for code, (_, counts, _, _) in current_figures().items():
        true, false, debatable = counts
        row = re.search(rf"^\| \[{code}\]\({RULE_PAGES}{code}\.md\) \|.*\| (.+) \|$", readme, re.MULTILINE)
        assert row, f"README has no row for {code}"
        expected = (
            f"{precision(counts, 2)} ({true} true, {false} false, {debatable} debatable)" if true + false
            else "not measured"
        )
        assert row.group(1) == expected, code


def test_reported_figures_are_backed_by_recorded_judgements() -> None:
    recorded = judged_counts()
    for code, counts in current_judged_counts().items():
        assert all(stated <= kept for stated, kept in zip(counts, recorded.get(code, (0, 0, 0)))), code
