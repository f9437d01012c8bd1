"""Every Function class of the real-code projects whose source ``--fix`` or ``--unsafe-fixes`` changes.

The first half of a differential check of the fixes on real code: this lists the classes a fix changes;
tests/test_fix_differential_realcode.py runs a CPU stand-in of each (its kernels replaced by plain torch
ops) before and after the fix. Reproduce the list (docs/accuracy.md, "Fixes on real code under torch")::

    python benchmarks/realcode/fetch.py                     # once: the projects, into the cache
    python benchmarks/realcode/fixdiff.py --split all --output fixdiff.md

Every ``.py`` file of the split's projects that defines a Function is fixed in-process twice, as
``flake8-autograd --fix`` (safe fixes only) and as ``--fix --unsafe-fixes`` would fix it, every rule on
(preview ones too). A class is listed when its source (from ``ast``: decorators to last line) differs
after the fix, or a finding attributed to it was fixed: ``safe`` when the safe fixes change it,
``unsafe`` when the unsafe ones change it further. A finding belongs to the class whose span holds its
line; one outside every class (a call site) to the class its message names. The codes are those of the
findings the fix removed. Output: a markdown table and the counts; files that cannot be read are counted,
and every fix that failed (``fix_text`` withheld it: it left its finding or broke the file) is listed.

With ``--stand-ins DIR`` (tests/fixdiff_cases), each stand-in there (a module naming its class in
``SOURCE = (project, file, class)``) is also checked against the class it stands for: the fixes must
make the same edits to both classes' lines (compared stripped of indentation), or the line says how
they differ. Exit status 1 when one differs or its class is missing.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Dict, List, Optional, Sequence, Tuple

from score import SPLIT_GROUPS, SPLITS, MalformedData, add_data_arguments, load_benchmark

from flake8_autograd.adapters.command.fixer import applies, fix_text
from flake8_autograd.adapters.command.runner import CheckOptions, SourceError, decode_lines, lint_lines
from flake8_autograd.checking.checker import might_define_function
from flake8_autograd.engine.discovery.functions import Discovery
from flake8_autograd.core.findings import Finding

SAFE = CheckOptions(preview=True)
UNSAFE = CheckOptions(preview=True, unsafe_fixes=True)
OUTSIDE = "(outside every Function class)"
FAILED = "a fix did not repair its finding"  # fix_text's notice of a failed fix


@dataclass(frozen=True)
class ChangedClass:
    """One class a fix changes."""

    project: str
    file: str  # relative to the project's folder in the cache
    name: str  # qualified name
    safe_codes: Tuple[str, ...]  # the codes of the findings the safe fixes removed
    unsafe_codes: Tuple[str, ...]  # those only --unsafe-fixes removed
    safe: bool  # the safe fixes change the class
    unsafe: bool  # the unsafe fixes change it further


Spans = Dict[Tuple[str, int], Tuple[int, int]]  # (qualified name, occurrence) -> first and last line


def class_spans(tree: ast.Module, path: str) -> Spans:
    """The span of every Function class, decorators included, keyed by name and occurrence."""
    spans: Spans = {}
    seen: Counter[str] = Counter()
    for site in Discovery(tree, path).function_classes:
        node = site.node
        start = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
        spans[(site.qualname, seen[site.qualname])] = (start, node.end_lineno or node.lineno)
        seen[site.qualname] += 1
    return spans


def class_sources(text: str, path: str) -> Dict[Tuple[str, int], str]:
    """The source of every Function class of ``text`` (empty when it does not parse)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    lines = text.splitlines(keepends=True)
    return {key: "".join(lines[start - 1:end]) for key, (start, end) in class_spans(tree, path).items()}


def owner(finding: Finding, spans: Spans) -> str:
    """The class a finding belongs to: the one whose span holds its line, else the one its message names."""
    holding = [(end - start, name) for (name, _), (start, end) in spans.items() if start <= finding.line <= end]
    if holding:
        return min(holding)[1]  # the innermost
    named = [name for name, _ in spans if re.search(rf"\b{re.escape(name)}\b", finding.message)]
    return max(named, key=len) if named else OUTSIDE


def removed(before: Sequence[Finding], after: Sequence[Finding], options: CheckOptions) -> List[Finding]:
    """The findings with a fix ``options`` applies that are gone after fixing (counted by code and message)."""
    left = Counter((finding.code, finding.message) for finding in after)
    gone = []
    for finding in before:
        if not applies(finding, options):
            continue
        key = (finding.code, finding.message)
        if left[key]:
            left[key] -= 1
        else:
            gone.append(finding)
    return gone


def changed_classes(
    project: str, relative: str, text: str, path: str, failed: Optional[List[str]] = None
) -> Optional[List[ChangedClass]]:
    """The classes of one file the safe and the unsafe fixes change; None when it defines no Function.
    A fix that failed (withheld, its notice asks for a report) is added to ``failed``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    spans = class_spans(tree, path)
    if not spans:
        return None
    safe_text, safe_count, safe_after, safe_notice = fix_text(text, path, SAFE)
    unsafe_text, unsafe_count, unsafe_after, unsafe_notice = fix_text(text, path, UNSAFE)
    if failed is not None:
        notices = dict.fromkeys(notice for notice in (safe_notice, unsafe_notice) if notice and FAILED in notice)
        failed += [f"{project}/{relative}: {notice}" for notice in notices]
    if not safe_count and not unsafe_count:
        return []
    before, _ = lint_lines(text.splitlines(keepends=True), path, UNSAFE)
    safe_codes: Dict[str, List[str]] = {}
    unsafe_codes: Dict[str, List[str]] = {}
    for finding in removed(before, safe_after, SAFE):
        safe_codes.setdefault(owner(finding, spans), []).append(finding.code)
    for finding in removed(before, unsafe_after, UNSAFE):
        if finding.fix is not None and not finding.fix.safe:
            unsafe_codes.setdefault(owner(finding, spans), []).append(finding.code)
    original, safe_sources, unsafe_sources = (class_sources(t, path) for t in (text, safe_text, unsafe_text))
    rows = []
    for key in spans:
        name = key[0]
        safe = safe_sources.get(key) != original[key]
        unsafe = unsafe_sources.get(key) != safe_sources.get(key)
        if safe or unsafe or name in safe_codes or name in unsafe_codes:
            rows.append(ChangedClass(
                project, relative, name, tuple(sorted(set(safe_codes.get(name, [])))),
                tuple(sorted(set(unsafe_codes.get(name, [])))), safe or name in safe_codes,
                unsafe or name in unsafe_codes,
            ))
    if OUTSIDE in safe_codes or OUTSIDE in unsafe_codes:
        rows.append(ChangedClass(
            project, relative, OUTSIDE, tuple(sorted(set(safe_codes.get(OUTSIDE, [])))),
            tuple(sorted(set(unsafe_codes.get(OUTSIDE, [])))), OUTSIDE in safe_codes, OUTSIDE in unsafe_codes,
        ))
    return rows


def scan(cache: Path, projects: Sequence[str]) -> Tuple[List[ChangedClass], int, int, List[str]]:
    """The changed classes of the projects; how many files define a Function; how many could not be read;
    the fixes that failed."""
    rows: List[ChangedClass] = []
    failed: List[str] = []
    files = unreadable = 0
    for project in projects:
        root = cache / project
        for path in sorted(root.rglob("*.py")):
            try:
                text = "".join(decode_lines(path.read_bytes()))
            except (SourceError, OSError):
                unreadable += 1
                continue
            if not might_define_function(text, ()):
                continue
            found = changed_classes(project, path.relative_to(root).as_posix(), text, str(path), failed)
            if found is not None:
                files += 1
                rows += found
    return rows, files, unreadable, failed


def table(rows: Sequence[ChangedClass], projects: int, files: int, unreadable: int, failed: Sequence[str]) -> List[str]:
    """The markdown table of the changed classes, then the counts."""
    lines = [
        "| project | file | class | safe fixes | unsafe fixes |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        safe = ", ".join(row.safe_codes) or ("changed" if row.safe else "")
        unsafe = ", ".join(row.unsafe_codes) or ("changed" if row.unsafe else "")
        lines.append(f"| {row.project} | `{row.file}` | `{row.name}` | {safe} | {unsafe} |")
    by_safe = sum(row.safe for row in rows)
    only_unsafe = sum(row.unsafe and not row.safe for row in rows)
    codes = Counter(code for row in rows for code in row.safe_codes + row.unsafe_codes)
    lines += [
        "",
        f"{projects} projects, {files} files defining a Function, {unreadable} unreadable files",
        f"{len(rows)} classes changed: {by_safe} by safe fixes, {sum(row.unsafe for row in rows)} by unsafe fixes "
        f"({only_unsafe} by unsafe fixes only)",
        "codes fixed (classes): " + ", ".join(f"{code} {number}" for code, number in sorted(codes.items())),
        f"failed fixes (withheld; each a rule's bug): {len(failed)}",
        *failed,
    ]
    return lines


def class_edits(text: str, path: str, name: str) -> Optional[List[str]]:
    """The lines of class ``name`` that ``--fix --unsafe-fixes`` removes (``-``) and adds (``+``), stripped."""
    original = class_sources(text, path).get((name, 0))
    if original is None:
        return None
    after = class_sources(fix_text(text, path, UNSAFE)[0], path).get((name, 0), "")
    diff = difflib.unified_diff(original.splitlines(), after.splitlines(), lineterm="", n=0)
    return [line[0] + line[1:].strip() for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def check_stand_ins(folder: Path, cache: Path) -> List[str]:
    """One line per stand-in: whether its fix edits its class as the fix edits the real one."""
    lines = []
    for path in sorted(folder.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        sources = [
            ast.literal_eval(node.value) for node in ast.parse(text).body
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["SOURCE"]
        ]
        if not sources:
            continue
        project, file, name = sources[0]
        real = [found for found in (cache / project).rglob(PurePosixPath(file).name) if found.as_posix().endswith(file)]
        if len(real) != 1:
            lines.append(f"{path.name}: DIFFERS: {project}/{file} not found once in the cache")
            continue
        real_text = "".join(decode_lines(real[0].read_bytes()))
        expected, found = class_edits(real_text, str(real[0]), name), class_edits(text, str(path), name)
        verdict = "same edits" if expected is not None and expected == found else f"DIFFERS: {expected} != {found}"
        lines.append(f"{path.name}: {project} {name}: {verdict}")
    return lines


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    add_data_arguments(parser, "projects.toml", "all", "which projects to fix", (*SPLITS, *SPLIT_GROUPS))
    parser.add_argument("--only", help="comma-separated names of the projects to fix (default: the split's)")
    parser.add_argument("--output", type=Path, help="write the table to this file too")
    parser.add_argument("--stand-ins", type=Path, help="check the CPU stand-ins of this folder against their classes")
    arguments = parser.parse_args(argv)
    try:
        benchmark = load_benchmark(arguments.data)
    except MalformedData as error:
        print(f"fixdiff.py: error: {error}", file=sys.stderr)
        return 2
    splits = SPLIT_GROUPS.get(arguments.split, (arguments.split,))
    projects = sorted(name for name, project in benchmark.projects.items() if project.split in splits)
    if arguments.only:
        projects = [name for name in projects if name in arguments.only.split(",")]
    rows, files, unreadable, failed = scan(arguments.cache.expanduser(), projects)
    report = "\n".join(table(rows, len(projects), files, unreadable, failed)) + "\n"
    print(report, end="")
    if arguments.output is not None:
        arguments.output.write_text(report, encoding="utf-8")
    if arguments.stand_ins is not None:
        checked = check_stand_ins(arguments.stand_ins, arguments.cache.expanduser())
        covered = {line.split(": ")[1] for line in checked if "DIFFERS" not in line}
        missing = [f"{row.project} {row.name}" for row in rows if f"{row.project} {row.name}" not in covered]
        print("\n".join(["", "Stand-ins:", *checked, f"changed classes without a stand-in: {len(missing)}", *missing]))
        return 1 if any("DIFFERS" in line for line in checked) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
