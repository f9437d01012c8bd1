"""The accuracy figures the README and docs/accuracy.md state are those of the judged findings kept
in benchmarks/realcode/judgements.toml (no corpus needed: the verdicts are in the repository)."""

from __future__ import annotations

import re
import sys
from collections import Counter
from typing import Dict, Tuple

from conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the test extras install tomli before Python 3.11
    import tomli as tomllib

DEFAULT_CODES = ("AGF001", "AGF002", "AGF003", "AGF004", "AGF005")


def judged_counts() -> Dict[str, Tuple[int, int, int]]:
    """(true, false, debatable) per code."""
    with open(ROOT / "benchmarks" / "realcode" / "judgements.toml", "rb") as stream:
        findings = tomllib.load(stream)["finding"]
    verdicts = Counter((finding["code"], finding["verdict"]) for finding in findings)
    codes = {finding["code"] for finding in findings}
    return {code: (verdicts[code, "true"], verdicts[code, "false"], verdicts[code, "debatable"]) for code in codes}


def precision(true: int, false: int) -> str:
    return f"{true / (true + false):.2f}" if true + false else "—"


def test_readme_states_each_default_codes_judged_precision() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    counts = judged_counts()
    for code in DEFAULT_CODES:
        true, false, debatable = counts.get(code, (0, 0, 0))
        row = re.search(rf"^\| \[{code}\]\(docs/rules/{code}\.md\) \|.*\| (.+) \|$", readme, re.MULTILINE)
        assert row, f"README has no row for {code}"
        assert row.group(1) == f"{precision(true, false)} ({true} true, {false} false, {debatable} debatable)", code


def test_accuracy_report_tables_the_judged_findings() -> None:
    report = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8")
    for code, (true, false, debatable) in judged_counts().items():
        total = true + false + debatable
        expected = (
            f"| {code} | {total} | {true} | {false} | {debatable} | "
            f"{(f'{true / (true + false):.3f}' if true + false else '—')} | {true / total:.2f} |"
        )
        assert expected in report, expected
