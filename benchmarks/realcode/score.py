"""Score flake8-autograd against hand labels of Function classes from real projects.

Run with the package importable (or from a checkout: ``src`` is added to the path)::

    python benchmarks/realcode/score.py                      # the dev split, default codes
    python benchmarks/realcode/score.py --split test --preview
    python benchmarks/realcode/score.py --split holdout --preview   # only once a change set is finished
    python benchmarks/realcode/score.py --split holdout-2026-11-27 --preview   # the same, the second holdout
    python benchmarks/realcode/score.py --list-test-findings --preview

Scoring mode: the engine runs in-process on the file of each labelled class, as installed (the default
codes, reporting only what they prove) or, with ``--preview``, with every rule and preview on; a finding
counts for the labelled class whose span (from ``ast``) holds its line, and findings outside labelled
classes are ignored. Per class and code, TP = min(labelled, found), FP = found - TP,
FN = labelled - TP: lines are recorded in the labels but need not match. One table per split, default
and preview codes apart (preview ones only with ``--preview``); ``--split both`` is dev and test, ``--split
all`` adds the holdout split (not the holdout of 2026-11-27, scored only when named).

Listing mode (``--list-test-findings``): every finding on every ``.py`` file of the test projects, with
its verdict from ``judgements.toml`` (or UNJUDGED), then the precision per code from the judged ones.

The data (``projects.toml``, ``labels/*.toml``, ``adjudications.toml``, ``judgements.toml``) sits next
to this script unless ``--data`` names another folder; docs/accuracy.md describes the formats. Exit
status 0, or 2 with a one-line reason when a data file is malformed.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10 need the backport
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
DEFAULT_CACHE = Path("~/.cache/flake8-autograd-realcode").expanduser()
SPLITS = ("dev", "test", "holdout", "holdout-2026-11-27")
# --split names a split or one of these groups; "both" keeps the meaning it had before the holdout split.
# "all" is dev, test and the first holdout: the holdout of 2026-11-27 is unseen until it is scored, so it is
# run only when named (--split holdout-2026-11-27), never as part of a group.
SPLIT_GROUPS = {"both": ("dev", "test"), "all": ("dev", "test", "holdout")}
VERDICTS = ("true", "false", "debatable")
WRONG_SIDES = ("label", "linter")

try:
    import flake8_autograd  # noqa: F401 - only checks the package is importable
except ImportError:  # a checkout without the package installed
    sys.path.insert(0, str(HERE.parent.parent / "src"))

from flake8_autograd.adapters.command.runner import (  # noqa: E402
    CheckOptions,
    Report,
    SourceError,
    check_file,
    decode_lines,
)
from flake8_autograd.engine.discovery.custom_ops import CustomOpDiscovery  # noqa: E402
from flake8_autograd.engine.discovery.functions import Discovery  # noqa: E402
from flake8_autograd.rules import MESSAGES, RULES  # noqa: E402

DEFAULT_CODES = frozenset(rule.code for rule in RULES)
# The codes whose docs the labellers wrote against. A code added later has no labels: its findings are
# counted apart (and judged one by one on whole projects with sweep.py), never scored as false alarms.
LABELLED_CODES = frozenset(
    [f"AGF00{number}" for number in range(1, 6)] + [f"AGF{number}" for number in range(101, 117)]
)
# What the labels of custom ops (``kind = "op"``) cover: the Function codes that carry over to a
# register_autograd registration, and the operator's own codes.
OP_LABELLED_CODES = frozenset(
    ["AGF003", "AGF004", "AGF005", "AGF110", "AGF116", "AGF117", "AGF122", "AGF124", "AGF128"]
    + [f"AGF{number}" for number in range(101, 108)] + [f"AGF{number}" for number in range(131, 135)]
)
LABEL_KINDS = ("class", "op")
# Every rule runs; which codes are shown is decided afterwards.
# With --preview every rule runs with preview on (a default code's unproven findings too); without it, the
# linter runs as installed: what a user sees by default.
ALL_RULES = CheckOptions(preview=True)
AS_INSTALLED = CheckOptions()


class MalformedData(Exception):
    """A data file the scorer cannot trust; the message is the one-line reason."""


@dataclass(frozen=True)
class Project:
    name: str
    split: str


@dataclass(frozen=True)
class Violation:
    code: str
    line: int
    reason: str


@dataclass(frozen=True)
class LabelledClass:
    project: str
    path: str  # relative to the project's cache folder
    line: int  # the `class` line
    name: str
    labeller: str
    violations: Tuple[Violation, ...]
    kind: str = "class"  # "op": a custom op at its implementation's def, named by the name the op is bound to
    # The codes the labeller was asked about, when fewer than a kind's default (a label's ``codes`` key).
    codes: Optional[FrozenSet[str]] = None

    @property
    def labelled_codes(self) -> FrozenSet[str]:
        if self.codes is not None:
            return self.codes
        return OP_LABELLED_CODES if self.kind == "op" else LABELLED_CODES

    @property
    def where(self) -> str:
        return f"{self.project}/{self.path}:{self.line} {self.name}"


@dataclass(frozen=True)
class Adjudication:
    project: str
    path: str
    class_line: int
    code: str
    line: int
    wrong: str  # "label" or "linter"
    reason: str
    date: str


@dataclass(frozen=True)
class Judgement:
    project: str
    path: str
    line: int
    code: str
    verdict: str
    reason: str


@dataclass(frozen=True)
class Benchmark:
    projects: Dict[str, Project]
    labels: Tuple[LabelledClass, ...]
    adjudications: Tuple[Adjudication, ...]
    judgements: Tuple[Judgement, ...]

    def in_split(self, project: str, split: str) -> bool:
        return self.projects[project].split == split


# Reading and checking the data files


def load_benchmark(data: Path) -> Benchmark:
    """Read every data file under ``data``; raises MalformedData on the first problem."""
    projects = _load_projects(data / "projects.toml")
    labels: List[LabelledClass] = []
    for label_file in sorted((data / "labels").glob("*.toml")):
        labels.extend(_load_labels(label_file, projects))
    seen: Dict[Tuple[str, str, int], str] = {}
    for label in labels:
        key = (label.project, label.path, label.line)
        if key in seen:
            raise MalformedData(f"{label.where}: class labelled twice (also as {seen[key]})")
        seen[key] = label.name
    adjudications = _load_adjudications(data / "adjudications.toml", projects)
    judgements = _load_judgements(data / "judgements.toml", projects)
    return Benchmark(projects, tuple(labels), adjudications, judgements)


def _read_toml(path: Path, required: bool) -> Dict[str, Any]:
    if not path.is_file():
        if required:
            raise MalformedData(f"{path}: no such file")
        return {}
    try:
        with open(path, "rb") as stream:
            return tomllib.load(stream)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise MalformedData(f"{path}: not valid TOML: {error}") from None
    except OSError as error:
        raise MalformedData(f"{path}: cannot read: {error.strerror or error}") from None


def _tables(document: Mapping[str, Any], key: str, path: Path) -> List[Tuple[str, Mapping[str, Any]]]:
    """The ``[[key]]`` tables of a document, each with a name for messages."""
    tables = document.get(key, [])
    if not isinstance(tables, list) or not all(isinstance(table, dict) for table in tables):
        raise MalformedData(f"{path}: '{key}' must be [[{key}]] tables")
    return [(f"{path}: [[{key}]] #{number}", table) for number, table in enumerate(tables, start=1)]


def _text(table: Mapping[str, Any], key: str, where: str, choices: Sequence[str] = ()) -> str:
    value = table.get(key)
    if not isinstance(value, str):
        raise MalformedData(f"{where}: '{key}' must be a string")
    if choices and value not in choices:
        raise MalformedData(f"{where}: '{key}' must be one of {', '.join(choices)}, not {value!r}")
    return value


def _number(table: Mapping[str, Any], key: str, where: str) -> int:
    value = table.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise MalformedData(f"{where}: '{key}' must be a line number (an integer from 1)")
    return value


def _code(table: Mapping[str, Any], where: str) -> str:
    code = _text(table, "code", where)
    if code not in MESSAGES:
        raise MalformedData(f"{where}: unknown code {code!r}")
    return code


def _project(table: Mapping[str, Any], where: str, projects: Mapping[str, Project]) -> str:
    name = _text(table, "project", where)
    if name not in projects:
        raise MalformedData(f"{where}: project {name!r} is not in projects.toml")
    return name


def _relative_path(table: Mapping[str, Any], where: str) -> str:
    path = _text(table, "path", where)
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or ".." in parts or "\\" in path:
        raise MalformedData(f"{where}: 'path' must be relative to the project's folder, with '/'")
    return path


def _load_projects(path: Path) -> Dict[str, Project]:
    projects: Dict[str, Project] = {}
    for where, table in _tables(_read_toml(path, required=True), "project", path):
        name = _text(table, "name", where)
        if not name or "/" in name or name.startswith("."):
            raise MalformedData(f"{where}: 'name' must be a folder name")
        if name in projects:
            raise MalformedData(f"{where}: project {name!r} listed twice")
        projects[name] = Project(name, _text(table, "split", where, SPLITS))
    return projects


def _load_labels(path: Path, projects: Mapping[str, Project]) -> List[LabelledClass]:
    labels = []
    for where, table in _tables(_read_toml(path, required=True), "class", path):
        violations = table.get("violations")
        if not isinstance(violations, list) or not all(isinstance(item, dict) for item in violations):
            raise MalformedData(f"{where}: 'violations' must be a list of inline tables ([] when clean)")
        uncovered = table.get("uncovered", [])
        if not isinstance(uncovered, list) or not all(isinstance(item, str) for item in uncovered):
            raise MalformedData(f"{where}: 'uncovered' must be a list of strings")
        codes = table.get("codes")
        if codes is not None and (not isinstance(codes, list) or not all(isinstance(code, str) for code in codes)):
            raise MalformedData(f"{where}: 'codes' must be a list of codes")
        labels.append(
            LabelledClass(
                codes=None if codes is None else frozenset(_code({"code": code}, where) for code in codes),
                project=_project(table, where, projects),
                path=_relative_path(table, where),
                line=_number(table, "line", where),
                name=_text(table, "name", where),
                labeller=_text(table, "labeller", where),
                kind=_text(table, "kind", where, LABEL_KINDS) if "kind" in table else "class",
                violations=tuple(
                    Violation(
                        _code(item, f"{where} violation #{number}"),
                        _number(item, "line", f"{where} violation #{number}"),
                        str(item.get("reason", "")),
                    )
                    for number, item in enumerate(violations, start=1)
                ),
            )
        )
    return labels


def _load_adjudications(path: Path, projects: Mapping[str, Project]) -> Tuple[Adjudication, ...]:
    adjudications = []
    for where, table in _tables(_read_toml(path, required=False), "adjudication", path):
        date = table.get("date")
        if date is None:
            raise MalformedData(f"{where}: 'date' is missing")
        adjudications.append(
            Adjudication(
                project=_project(table, where, projects),
                path=_relative_path(table, where),
                class_line=_number(table, "class_line", where),
                code=_code(table, where),
                line=_number(table, "line", where),
                wrong=_text(table, "wrong", where, WRONG_SIDES),
                reason=_text(table, "reason", where),
                date=str(date),  # a TOML date or a string
            )
        )
    return tuple(adjudications)


def _load_judgements(path: Path, projects: Mapping[str, Project]) -> Tuple[Judgement, ...]:
    judgements = []
    for where, table in _tables(_read_toml(path, required=False), "finding", path):
        judgements.append(
            Judgement(
                project=_project(table, where, projects),
                path=_relative_path(table, where),
                line=_number(table, "line", where),
                code=_code(table, where),
                verdict=_text(table, "verdict", where, VERDICTS),
                reason=_text(table, "reason", where),
            )
        )
    return tuple(judgements)


# Scoring


@dataclass
class Tally:
    labelled: int = 0
    found: int = 0
    true_positives: int = 0

    @property
    def false_positives(self) -> int:
        return self.found - self.true_positives

    @property
    def false_negatives(self) -> int:
        return self.labelled - self.true_positives

    @property
    def precision(self) -> Optional[float]:
        return self.true_positives / self.found if self.found else None

    @property
    def recall(self) -> Optional[float]:
        return self.true_positives / self.labelled if self.labelled else None

    def add(self, other: Tally) -> None:
        self.labelled += other.labelled
        self.found += other.found
        self.true_positives += other.true_positives


@dataclass(frozen=True)
class Disagreement:
    """A labelled class where the counts of one code differ: the lines of both sides."""

    labelled_class: LabelledClass
    code: str
    labelled_lines: Tuple[int, ...]
    found_lines: Tuple[int, ...]
    adjudicated: Optional[str] = None  # which side an adjudication found wrong, if one was recorded


@dataclass
class SplitScore:
    split: str
    projects: int = 0
    classes: int = 0
    clean_classes: int = 0
    tallies: Dict[str, Tally] = field(default_factory=dict)
    missing: List[Tuple[LabelledClass, str]] = field(default_factory=list)
    disagreements: List[Disagreement] = field(default_factory=list)
    adjudications: Counter[str] = field(default_factory=Counter)
    unlabelled: Counter[str] = field(default_factory=Counter)  # findings of codes the labels do not cover

    def total(self, default: bool) -> Tally:
        total = Tally()
        for code, tally in self.tallies.items():
            if (code in DEFAULT_CODES) == default:
                total.add(tally)
        return total


@dataclass
class _CheckedFile:
    """One cached file: its findings and the span of every class in it, or why it could not be read."""

    reports: Tuple[Report, ...] = ()
    spans: Dict[Tuple[int, str], Tuple[int, int]] = field(default_factory=dict)
    # Each custom op's parts (its def, backward, setup_context, fakes, registration calls), by (def line, name).
    op_spans: Dict[Tuple[int, str], List[Tuple[int, int]]] = field(default_factory=dict)
    problem: Optional[str] = None


def _check(path: Path, preview: bool) -> _CheckedFile:
    if not path.is_file():
        return _CheckedFile(problem="no such file in the cache")
    outcome = check_file(str(path), ALL_RULES if preview else AS_INSTALLED)
    if outcome.error:
        return _CheckedFile(problem=outcome.error)
    try:
        tree = ast.parse("".join(decode_lines(path.read_bytes())))
    except (SourceError, SyntaxError, ValueError, RecursionError, OSError) as error:
        return _CheckedFile(problem=f"cannot parse: {error}")
    spans = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            # A finding on a class decorator belongs to the class too.
            start = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
            spans[(node.lineno, node.name)] = (start, node.end_lineno or node.lineno)
    return _CheckedFile(outcome.reports, spans, _op_spans(tree, str(path)))


def _op_spans(tree: ast.Module, filename: str) -> Dict[Tuple[int, str], List[Tuple[int, int]]]:
    found: Dict[Tuple[int, str], List[Tuple[int, int]]] = {}
    for op in CustomOpDiscovery(tree, Discovery(tree, filename).imports).ops:
        parts: List[ast.AST] = [op.function, *op.fakes]
        for registration in op.registrations:
            functions = (registration.backward, registration.setup_context)
            parts += [registration.call, *(function for function in functions if function is not None)]
        found[(op.function.lineno, op.binding)] = [_span(part) for part in parts]
    return found


def _span(node: ast.AST) -> Tuple[int, int]:
    decorators = getattr(node, "decorator_list", [])
    start = min([getattr(node, "lineno", 1)] + [decorator.lineno for decorator in decorators])
    return start, getattr(node, "end_lineno", None) or start


def score_split(benchmark: Benchmark, split: str, cache: Path, preview: bool) -> SplitScore:
    """The tallies of one split; preview codes are left out unless ``preview``."""
    score = SplitScore(split)
    score.projects = sum(project.split == split for project in benchmark.projects.values())
    shown = _shown(preview)
    by_file: Dict[Tuple[str, str], List[LabelledClass]] = {}
    for label in benchmark.labels:
        if benchmark.in_split(label.project, split):
            by_file.setdefault((label.project, label.path), []).append(label)
            score.classes += 1
            score.clean_classes += not label.violations
    for (project, relative), labels in by_file.items():
        checked = _check(cache / project / relative, preview)
        spans: Dict[LabelledClass, Tuple[int, int]] = {}
        op_parts: Dict[LabelledClass, List[Tuple[int, int]]] = {}
        for label in labels:
            key = (label.line, label.name)
            if checked.problem:
                score.missing.append((label, checked.problem))
            elif label.kind == "op":
                if key in checked.op_spans:
                    op_parts[label] = checked.op_spans[key]
                else:
                    score.missing.append((label, f"no custom op {label.name} defined at line {label.line}"))
            elif key in checked.spans:
                spans[label] = checked.spans[key]
            else:
                score.missing.append((label, f"no class {label.name} at line {label.line}"))
        found: Dict[LabelledClass, List[Report]] = {label: [] for label in [*spans, *op_parts]}
        for report in checked.reports:
            holders = [label for label, (start, end) in spans.items() if start <= report.line <= end]
            if holders:  # the innermost labelled class holds the finding
                found[min(holders, key=lambda label: spans[label][1] - spans[label][0])].append(report)
                continue
            ops = [
                label for label, parts in op_parts.items() if any(start <= report.line <= end for start, end in parts)
            ]
            if ops:  # a part of a labelled op; a setup_context or backward shared by several ops is each one's
                for label in ops:
                    found[label].append(report)
            else:  # a use of the class elsewhere in the module (AGF111 `Fn()`): the class its message names
                owner = _named_owner(report, labels, spans, checked.spans)
                if owner is not None:
                    found[owner].append(report)
        for label, reports in found.items():
            shown_reports = [report for report in reports if shown(report.code)]
            covered = label.labelled_codes
            score.unlabelled.update(report.code for report in shown_reports if report.code not in covered)
            _tally_class(score, label, [report for report in shown_reports if report.code in covered], shown)
    sides: Dict[Tuple[str, str, int, str], str] = {}
    for adjudication in benchmark.adjudications:
        if benchmark.in_split(adjudication.project, split):
            score.adjudications[adjudication.wrong] += 1
            key = (adjudication.project, adjudication.path, adjudication.class_line, adjudication.code)
            sides[key] = adjudication.wrong
    for index, item in enumerate(score.disagreements):
        where = item.labelled_class
        side = sides.get((where.project, where.path, where.line, item.code))
        score.disagreements[index] = replace(item, adjudicated=side)
    return score


def _named_owner(
    report: Report,
    labels: Sequence[LabelledClass],
    labelled_spans: Mapping[LabelledClass, Tuple[int, int]],
    all_spans: Mapping[Tuple[int, str], Tuple[int, int]],
) -> Optional[LabelledClass]:
    """The labelled class a finding outside every labelled class is about: the one its message names
    (every message opens with ``Name`` or ``Name.method``), when the file has one class of that name and
    the finding is not inside it (then it is that unlabelled class's own)."""
    name = report.text.split(" ", 1)[0].split(".", 1)[0]
    same_name = [span for (_, class_name), span in all_spans.items() if class_name == name]
    named = [label for label in labels if label.name == name and label in labelled_spans]
    if len(same_name) != 1 or len(named) != 1:
        return None
    return named[0]


def _tally_class(
    score: SplitScore, label: LabelledClass, reports: Sequence[Report], shown: Callable[[str], bool]
) -> None:
    labelled_codes = {violation.code for violation in label.violations if shown(violation.code)}
    codes = sorted(labelled_codes | {report.code for report in reports})
    for code in codes:
        labelled_lines = tuple(sorted(item.line for item in label.violations if item.code == code))
        found_lines = tuple(sorted(report.line for report in reports if report.code == code))
        tally = score.tallies.setdefault(code, Tally())
        tally.labelled += len(labelled_lines)
        tally.found += len(found_lines)
        tally.true_positives += min(len(labelled_lines), len(found_lines))
        if len(labelled_lines) != len(found_lines):
            score.disagreements.append(Disagreement(label, code, labelled_lines, found_lines))


def _shown(preview: bool) -> Callable[[str], bool]:
    return lambda code: preview or code in DEFAULT_CODES


def _count(number: int, noun: str) -> str:
    plural = noun + "es" if noun.endswith("ss") else noun + "s"
    return f"{number} {noun if number == 1 else plural}"


def _ratio(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.3f}"


def format_split(score: SplitScore, preview: bool, details: bool) -> List[str]:
    lines = [
        f"{score.split} split: {_count(score.projects, 'project')}, {_count(score.classes, 'labelled class')} "
        f"({score.clean_classes} clean), {len(score.missing)} missing"
    ]
    header = ("code", "rules", "labelled", "found", "TP", "FP", "FN", "precision", "recall")
    rows: List[Tuple[str, ...]] = [header]

    def row(code: str, rules: str, tally: Tally) -> Tuple[str, ...]:
        counts = (tally.labelled, tally.found, tally.true_positives, tally.false_positives, tally.false_negatives)
        return (code, rules, *map(str, counts), _ratio(tally.precision), _ratio(tally.recall))

    for default in (True, False):
        if default or preview:
            for code in sorted(code for code in score.tallies if (code in DEFAULT_CODES) == default):
                rows.append(row(code, "default" if default else "preview", score.tallies[code]))
    rows.append(row("total", "default", score.total(default=True)))
    if preview:
        rows.append(row("total", "preview", score.total(default=False)))
    widths = [max(len(cells[column]) for cells in rows) for column in range(len(header))]
    for cells in rows:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip())
    if not preview:
        lines.append("(preview codes not shown; --preview shows them)")
    if score.unlabelled:
        counts = ", ".join(f"{code} {number}" for code, number in sorted(score.unlabelled.items()))
        lines.append(f"codes newer than the labels, not scored (judge them with sweep.py): {counts}")
    lines.append(
        f"adjudications: {score.adjudications['label']} label wrong, {score.adjudications['linter']} linter wrong"
    )
    for label, reason in sorted(score.missing, key=lambda item: (item[0].project, item[0].path, item[0].line)):
        lines.append(f"missing: {label.where}: {reason}")
    open_disagreements = [item for item in score.disagreements if item.adjudicated is None]
    lines.append(
        f"disagreements: {len(score.disagreements)}, "
        f"{len(score.disagreements) - len(open_disagreements)} adjudicated, {len(open_disagreements)} open"
    )
    if details:
        for item in score.disagreements:
            verdict = "open" if item.adjudicated is None else f"adjudicated: {item.adjudicated} wrong"
            lines.append(
                f"disagreement: {item.labelled_class.where} {item.code}: labelled at "
                f"{list(item.labelled_lines)}, found at {list(item.found_lines)} ({verdict})"
            )
    return lines


# Listing the findings on the test projects


def list_test_findings(benchmark: Benchmark, cache: Path, preview: bool) -> List[str]:
    verdicts = {(item.project, item.path, item.line, item.code): item.verdict for item in benchmark.judgements}
    used: Set[Tuple[str, str, int, str]] = set()
    counts: Dict[str, Counter[str]] = {}
    lines: List[str] = []
    missing_projects: List[str] = []
    for project in benchmark.projects.values():
        if project.split != "test":
            continue
        folder = cache / project.name
        if not folder.is_dir():
            missing_projects.append(project.name)
            continue
        for path in sorted(folder.rglob("*.py")):
            if not path.is_file():
                continue
            relative = path.relative_to(folder).as_posix()
            # Every rule runs, so that the judgement of a finding hidden here (a preview code) is not stale.
            outcome = check_file(str(path), ALL_RULES)
            if outcome.error or outcome.notice:
                lines.append(f"{project.name}\t{relative}\tnot checked: {outcome.error or outcome.notice}")
            for report in sorted(outcome.reports, key=lambda report: (report.line, report.column, report.code)):
                key = (project.name, relative, report.line, report.code)
                used.add(key)  # a judgement of a hidden preview finding is not stale
                if not _shown(preview)(report.code):
                    continue
                verdict = verdicts.get(key, "UNJUDGED")
                counts.setdefault(report.code, Counter())[verdict] += 1
                lines.append(
                    f"{project.name}\t{relative}:{report.line}:{report.column}\t{report.code}\t{report.text}\t{verdict}"
                )
    for name in missing_projects:
        lines.append(f"missing: project {name} has no folder in the cache")
    findings = sum(sum(counter.values()) for counter in counts.values())
    unjudged = sum(counter["UNJUDGED"] for counter in counts.values())
    lines.append(
        f"{_count(findings, 'finding')}, {unjudged} unjudged, "
        f"{_count(len(verdicts.keys() - used), 'judgement')} matching no finding, "
        f"{_count(len(missing_projects), 'project')} missing"
    )
    per_code = []
    for code in sorted(counts):
        counter = counts[code]
        judged = counter["true"] + counter["false"]
        precision = _ratio(counter["true"] / judged if judged else None)
        per_code.append(
            f"{code} {precision} ({counter['true']} true, {counter['false']} false, "
            f"{counter['debatable']} debatable, {counter['UNJUDGED']} unjudged)"
        )
    lines.append("precision from judged findings: " + ("; ".join(per_code) if per_code else "no findings"))
    return lines


def add_data_arguments(
    parser: argparse.ArgumentParser,
    data_files: str,
    split_default: str,
    split_help: str,
    split_choices: Sequence[str] = ("dev", "test", "both"),
) -> None:
    """--cache, --data and --split, as the benchmark's scripts take them."""
    parser.add_argument(
        "--cache", type=Path, default=DEFAULT_CACHE, help=f"the downloaded projects (default {DEFAULT_CACHE})"
    )
    parser.add_argument(
        "--data", type=Path, default=HERE, help=f"the folder of {data_files} (default: this script's)"
    )
    parser.add_argument(
        "--split", choices=split_choices, default=split_default, help=f"{split_help} (default {split_default})"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    add_data_arguments(
        parser, "projects.toml and labels/", "dev", "which projects to score", (*SPLITS, *SPLIT_GROUPS)
    )
    parser.add_argument("--preview", action="store_true", help="also show the preview codes (AGF002-AGF005, AGF1xx)")
    parser.add_argument("--details", action="store_true", help="list every class and code where the counts differ")
    parser.add_argument(
        "--list-test-findings",
        action="store_true",
        help="list every finding on the test projects with its verdict from judgements.toml",
    )
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    arguments = build_parser().parse_args(argv)
    try:
        benchmark = load_benchmark(arguments.data)
    except MalformedData as error:
        print(f"score.py: error: {error}", file=sys.stderr)
        return 2
    cache = arguments.cache.expanduser()
    output: List[str] = []
    if arguments.list_test_findings:
        output = list_test_findings(benchmark, cache, arguments.preview)
    else:
        splits = SPLIT_GROUPS.get(arguments.split, (arguments.split,))
        for split in splits:
            if output:
                output.append("")
            score = score_split(benchmark, split, cache, arguments.preview)
            output.extend(format_split(score, arguments.preview, arguments.details))
    print("\n".join(output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
