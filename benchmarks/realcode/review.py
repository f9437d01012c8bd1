"""Check flake8-autograd against the expert review of 2026-11-23: which judged findings it still reports.

Run with the package importable (or from a checkout: ``src`` is added to the path)::

    python benchmarks/realcode/review.py --cache /tmp/realcode/cache
    python benchmarks/realcode/review.py --details      # one line per reviewed finding of the dev projects

``reviewed.toml`` holds every finding the review judged (true, false or debatable), with the class that
held it. The engine runs in-process with every rule (preview ones too, as in the review) on each reviewed
file, as score.py does. A finding of today counts for the innermost class whose span holds its line (a
finding outside every class: the class its message names) and is matched to the reviewed findings of the
same project, path, class and code; lines need not match, since code moves as the rules change. Within one
class and code, findings on the reviewed line are paired first, the rest in line order, so a class with two
false AGF005 reviewed and one AGF005 today keeps one false alarm. A pairing on another line may be a
different finding of the same class and code: the report says how many false alarms were paired so, and
``--details`` marks each "reported on another line".

Printed: the false alarms that remain, the true findings still reported, the debatable ones that remain,
and whether the target (``MAX_FALSE_ALARMS``, ``MIN_TRUE_SHARE``) is met. ``--details`` lists the findings of
dev projects only: test projects stay unseen. Exit status 0, or 2 with a one-line reason when a data file
is malformed.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

# The folder of this script is on the path, run as a script or by the tests.
from score import (
    VERDICTS,
    MalformedData,
    Project,
    _check,
    _code,
    _load_projects,
    _number,
    _project,
    _read_toml,
    _relative_path,
    _tables,
    _text,
    add_data_arguments,
)

# The target: at most this many false alarms remain, and at least this share of the true findings stays.
MAX_FALSE_ALARMS = 3
MIN_TRUE_SHARE = 0.95


@dataclass(frozen=True)
class ReviewedFinding:
    project: str
    path: str  # relative to the project's cache folder
    line: int  # where the finding was when it was reviewed
    class_name: str
    code: str
    verdict: str
    reason: str

    @property
    def where(self) -> str:
        return f"{self.project}/{self.path}:{self.line} {self.class_name} {self.code}"


MatchKey = Tuple[str, str, str, str]  # project, path, class, code


def load_review(data: Path) -> Tuple[Dict[str, Project], Tuple[ReviewedFinding, ...]]:
    """projects.toml and reviewed.toml under ``data``; raises MalformedData on the first problem."""
    projects = _load_projects(data / "projects.toml")
    path = data / "reviewed.toml"
    findings = []
    for where, table in _tables(_read_toml(path, required=True), "finding", path):
        findings.append(
            ReviewedFinding(
                project=_project(table, where, projects),
                path=_relative_path(table, where),
                line=_number(table, "line", where),
                class_name=_text(table, "class", where),
                code=_code(table, where),
                verdict=_text(table, "verdict", where, VERDICTS),
                reason=_text(table, "reason", where),
            )
        )
    seen = set()
    for item in findings:
        key = (item.project, item.path, item.line, item.code)
        if key in seen:
            raise MalformedData(f"{path}: {item.where} listed twice")
        seen.add(key)
    return projects, tuple(findings)


@dataclass
class ReviewCheck:
    """Each reviewed finding with whether the linter still reports it, and the files it could not check."""

    reported: Dict[ReviewedFinding, bool]
    problems: List[Tuple[str, str]]  # (project/path, why it was not checked)
    # Reported ones paired with a finding of the same class and code on another line: possibly another
    # finding altogether (the matching rule counts them as the same; the report says how many).
    elsewhere: Set[ReviewedFinding] = field(default_factory=set)

    def count_elsewhere(self, verdict: str) -> int:
        return sum(item.verdict == verdict for item in self.elsewhere)

    def count(self, verdict: str, reported: bool = True) -> int:
        return sum(item.verdict == verdict and now == reported for item, now in self.reported.items())

    def total(self, verdict: str) -> int:
        return sum(item.verdict == verdict for item in self.reported)


def _enclosing_class(line: int, text: str, spans: Dict[Tuple[int, str], Tuple[int, int]]) -> str:
    holders = [(end - start, name) for (_, name), (start, end) in spans.items() if start <= line <= end]
    if holders:
        return min(holders)[1]
    # A use of a class elsewhere in the module (AGF111 `Fn()`): every message opens with `Name` or `Name.method`.
    return text.split(" ", 1)[0].split(".", 1)[0]


def _pair(
    reviewed: Sequence[ReviewedFinding], current_lines: Sequence[int]
) -> Tuple[List[ReviewedFinding], List[ReviewedFinding]]:
    """The reviewed findings of one class and code that today's findings account for: those on their
    reviewed line, and those paired with a finding on another line."""
    left = sorted(current_lines)
    matched = []
    for item in reviewed:
        if item.line in left:
            left.remove(item.line)
            matched.append(item)
    rest = sorted((item for item in reviewed if item not in matched), key=lambda item: item.line)
    return matched, rest[: len(left)]


def check_review(
    projects: Dict[str, Project], findings: Sequence[ReviewedFinding], cache: Path, split: str
) -> ReviewCheck:
    chosen = [item for item in findings if split == "both" or projects[item.project].split == split]
    by_file: Dict[Tuple[str, str], List[ReviewedFinding]] = {}
    for item in chosen:
        by_file.setdefault((item.project, item.path), []).append(item)
    reported = {item: False for item in chosen}
    elsewhere: Set[ReviewedFinding] = set()
    problems = []
    for (project, relative), items in sorted(by_file.items()):
        checked = _check(cache / project / relative, True)  # every finding judged, preview codes too
        if checked.problem:
            problems.append((f"{project}/{relative}", checked.problem))
            continue
        current: Dict[MatchKey, List[int]] = {}
        for report in checked.reports:
            name = _enclosing_class(report.line, report.text, checked.spans)
            current.setdefault((project, relative, name, report.code), []).append(report.line)
        groups: Dict[MatchKey, List[ReviewedFinding]] = {}
        for item in items:
            groups.setdefault((project, relative, item.class_name, item.code), []).append(item)
        for key, group in groups.items():
            on_line, moved = _pair(group, current.get(key, []))
            for item in on_line + moved:
                reported[item] = True
            elsewhere.update(moved)
    return ReviewCheck(reported, problems, elsewhere)


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "—"


def format_check(result: ReviewCheck, projects: Dict[str, Project], details: bool) -> List[str]:
    totals = Counter(item.verdict for item in result.reported)
    false_left, true_kept, debatable_left = (
        result.count("false"),
        result.count("true"),
        result.count("debatable"),
    )
    met = false_left <= MAX_FALSE_ALARMS and true_kept >= MIN_TRUE_SHARE * result.total("true")
    lines = [
        f"reviewed findings: {len(result.reported)} ({totals['true']} true, {totals['false']} false, "
        f"{totals['debatable']} debatable), {len(result.problems)} files not checked",
        f"false alarms remaining: {false_left} of {totals['false']}"
        f" ({result.count_elsewhere('false')} of them paired with a finding on another line)",
        f"true findings still reported: {true_kept} of {totals['true']} ({_share(true_kept, totals['true'])})",
        f"debatable remaining: {debatable_left} of {totals['debatable']}",
        f"target (at most {MAX_FALSE_ALARMS} false alarms, at least {MIN_TRUE_SHARE:.0%} of the true findings): "
        + ("met" if met else "not met"),
    ]
    lines.extend(f"not checked: {where}: {why}" for where, why in result.problems)
    if details:
        shown = [item for item in result.reported if projects[item.project].split == "dev"]
        order = {"false": 0, "true": 1, "debatable": 2}
        for item in sorted(shown, key=lambda item: (order[item.verdict], not result.reported[item], item.where)):
            status = "reported" if result.reported[item] else "gone"
            if item in result.elsewhere:
                status = "reported on another line"
            lines.append(f"{item.verdict} {status}: {item.where}: {item.reason}")
        hidden = len(result.reported) - len(shown)
        if hidden:
            lines.append(f"({hidden} findings of test projects not listed)")
    return lines


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    add_data_arguments(parser, "projects.toml and reviewed.toml", "both", "whose reviewed findings to check")
    parser.add_argument(
        "--details", action="store_true", help="list each reviewed finding of the dev projects with its status"
    )
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    arguments = build_parser().parse_args(argv)
    try:
        projects, findings = load_review(arguments.data)
    except MalformedData as error:
        print(f"review.py: error: {error}", file=sys.stderr)
        return 2
    result = check_review(projects, findings, arguments.cache.expanduser(), arguments.split)
    print("\n".join(format_check(result, projects, arguments.details)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
