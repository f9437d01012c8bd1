"""Lint a whole corpus of Python files in-process and count what the engine did.

Usage::

    python tests/corpus_check.py [ROOT ...] [-j N] [--core-only] [--traceback] [--slowest K]

Every ``.py`` file under the roots (default: the site-packages of the running interpreter) is read
the way flake8 reads it, parsed with ``ast`` (files ``ast`` rejects are skipped, as flake8 would report
E999 instead of running plugins) and handed to ``check_module`` with every rule, preview rules
included (``--core-only``: the default rule set). The summary lists files checked and skipped,
Function classes found, findings per code, internal errors (AGF000) and exceptions that escaped
``check_module``. The exit status is 1 when there is any AGF000 or exception, else 0.

``--traceback`` re-runs each failing file through the engine pieces without the safety net, so the
report shows where the engine actually failed.
"""

from __future__ import annotations

import argparse
import ast
import functools
import io
import os
import sys
import sysconfig
import time
import tokenize
import traceback
import warnings
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, TextIO, Tuple

from flake8_autograd.checking.checker import INTERNAL_ERROR, check_module, might_define_function
from flake8_autograd.core.settings import Settings
from flake8_autograd.engine.discovery.functions import Discovery
from flake8_autograd.rules import PREVIEW_RULES, RULES, Rule

SKIPPED_DIRECTORIES = frozenset({"__pycache__", ".git", ".tox", ".hg", ".mypy_cache"})
MAX_LISTED_SKIPS = 20
CHUNK_SIZE = 8  # files handed to a worker at a time


@dataclass
class FileResult:
    path: str
    status: str  # "checked", "skipped" (unparseable or unreadable) or "exception"
    function_classes: int = 0
    codes: Dict[str, int] = field(default_factory=dict)
    internal_errors: List[str] = field(default_factory=list)  # "path:line: message"
    error: Optional[str] = None  # traceback of an exception that escaped check_module, or a skip reason
    seconds: float = 0.0


@dataclass
class Summary:
    rules: int = 0
    files_checked: int = 0
    files_skipped: int = 0
    skipped: List[Tuple[str, str]] = field(default_factory=list)  # (path, reason)
    function_classes: int = 0
    codes: Counter = field(default_factory=Counter)  # type: ignore[type-arg]
    internal_errors: List[str] = field(default_factory=list)
    exceptions: List[Tuple[str, str]] = field(default_factory=list)  # (path, traceback)
    slowest: List[Tuple[float, str]] = field(default_factory=list)
    elapsed: float = 0.0

    def add(self, result: FileResult) -> None:
        if result.status == "skipped":
            self.files_skipped += 1
            self.skipped.append((result.path, result.error or ""))
            return
        self.files_checked += 1
        self.function_classes += result.function_classes
        self.codes.update(result.codes)
        self.internal_errors.extend(result.internal_errors)
        if result.status == "exception" and result.error is not None:
            self.exceptions.append((result.path, result.error))
        self.slowest.append((result.seconds, result.path))

    @property
    def failed(self) -> bool:
        return bool(self.internal_errors or self.exceptions)


def read_lines(data: bytes) -> List[str]:
    """The lines flake8 hands to plugins for a file with these bytes.

    flake8 opens files with ``tokenize.open`` (encoding from the BOM or coding cookie, universal
    newlines), falls back to latin-1 when that fails, and strips a leading BOM.
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        lines = io.TextIOWrapper(io.BytesIO(data), encoding, line_buffering=True).readlines()
    except (SyntaxError, UnicodeError, LookupError):
        lines = io.TextIOWrapper(io.BytesIO(data), "latin-1").readlines()
    if lines and lines[0][:1] == "\ufeff":
        lines[0] = lines[0][1:]
    elif lines and lines[0][:3] == "\xef\xbb\xbf":
        lines[0] = lines[0][3:]
    return lines


def parse(lines: Sequence[str]) -> Optional[ast.Module]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences and the like in third-party code
        try:
            return ast.parse("".join(lines))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None


def rule_set(core_only: bool = False) -> List[Rule]:
    return list(RULES) if core_only else list(RULES) + list(PREVIEW_RULES)


def check_file(path: str, core_only: bool = False) -> FileResult:
    """Lint one file; never raises."""
    started = time.perf_counter()
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        return FileResult(path, "skipped", error=f"unreadable: {error}")
    lines = read_lines(data)
    tree = parse(lines)
    if tree is None:
        return FileResult(path, "skipped", error="ast.parse rejects it")
    result = FileResult(path, "checked")
    try:
        if might_define_function("".join(lines), ()):
            result.function_classes = len(Discovery(tree, path).function_classes)
        findings = check_module(tree, lines, path, Settings(preview=not core_only))
        result.codes = dict(Counter(finding.code for finding in findings))
        result.internal_errors = [
            f"{path}:{finding.line}: {finding.message}" for finding in findings if finding.code == INTERNAL_ERROR
        ]
    except Exception:  # noqa: BLE001 - counted and reported: check_module promises never to raise
        result.status = "exception"
        result.error = traceback.format_exc()
    result.seconds = time.perf_counter() - started
    return result


def explain(path: str, core_only: bool = False) -> List[str]:
    """Tracebacks of every failure in ``path``, from the engine pieces run without check_module's net."""
    from flake8_autograd.engine.analysis.module_analysis import Analysis
    from flake8_autograd.checking.class_checks import _ModelBuilder

    lines = read_lines(Path(path).read_bytes())
    tree = parse(lines)
    if tree is None:
        return []
    try:
        discovery = Discovery(tree, path)
        analysis = Analysis(tree, discovery)
        builder = _ModelBuilder(lines)
    except Exception:  # noqa: BLE001
        return [f"{path} (module level):\n{traceback.format_exc()}"]
    reports: List[str] = []
    for site in discovery.function_classes:
        try:
            model = builder.build(site)
            if model is None:
                continue
            for rule in rule_set(core_only):
                list(rule.check(model, analysis))
        except Exception:  # noqa: BLE001
            reports.append(f"{path}:{site.node.lineno} class {site.qualname}:\n{traceback.format_exc()}")
    return reports


def python_files(roots: Iterable[Path]) -> Iterator[str]:
    for root in roots:
        if root.is_file():
            yield str(root)
            continue
        for directory, subdirectories, files in os.walk(root):
            subdirectories[:] = sorted(name for name in subdirectories if name not in SKIPPED_DIRECTORIES)
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.join(directory, name)


def default_roots() -> List[Path]:
    paths = sysconfig.get_paths()
    return sorted({Path(paths["purelib"]), Path(paths["platlib"])})


def run(roots: Sequence[Path], jobs: int = 1, core_only: bool = False) -> Summary:
    summary = Summary(rules=len(rule_set(core_only)))
    started = time.perf_counter()
    files = list(python_files(roots))
    if jobs <= 1:
        for path in files:
            summary.add(check_file(path, core_only))
    else:
        for result in check_in_workers(files, jobs, core_only):
            summary.add(result)
    summary.elapsed = time.perf_counter() - started
    return summary


def check_in_workers(files: Sequence[str], jobs: int, core_only: bool = False) -> Iterator[FileResult]:
    """Every file checked in worker processes; one that kills its worker (a segfault) is reported, not hung on.

    When a worker dies, the files that were in flight are checked again one at a time in a single
    worker: the one it dies on is the culprit. The rest resume in parallel.
    """
    check = functools.partial(check_file, core_only=core_only)
    in_flight = (2 * jobs + 1) * CHUNK_SIZE  # running and queued in the pool: where the culprit must be
    pending = list(files)
    while pending:
        done = 0
        try:
            with ProcessPoolExecutor(jobs) as pool:
                for result in pool.map(check, pending, chunksize=CHUNK_SIZE):
                    done += 1  # results come in order: the first ``done`` files are finished
                    yield result
            return
        except BrokenProcessPool:
            pending = pending[done:]
        suspects = pending[:in_flight]
        done = 0
        try:
            with ProcessPoolExecutor(1) as pool:
                for result in pool.map(check, suspects):
                    done += 1
                    yield result
        except BrokenProcessPool:
            yield FileResult(suspects[done], "exception", error="the worker process died checking this file\n")
            done += 1
        pending = pending[done:]


def report(
    summary: Summary,
    slowest: int = 5,
    show_tracebacks: bool = False,
    out: Optional[TextIO] = None,
    core_only: bool = False,
) -> None:
    stream = out if out is not None else sys.stdout

    def say(text: str = "") -> None:
        print(text, file=stream)

    say(f"rules run:               {summary.rules}")
    say(f"files checked:           {summary.files_checked}")
    say(f"files skipped:           {summary.files_skipped} (ast.parse rejects them)")
    say(f"Function classes found:  {summary.function_classes}")
    say("findings per code:")
    for code in sorted(summary.codes):
        say(f"    {code}: {summary.codes[code]}")
    say(f"AGF000 (internal error): {len(summary.internal_errors)}")
    say(f"exceptions:              {len(summary.exceptions)}")
    say(f"elapsed:                 {summary.elapsed:.1f} s")
    if slowest:
        say(f"slowest {slowest} files:")
        for seconds, path in sorted(summary.slowest, reverse=True)[:slowest]:
            say(f"    {seconds:7.3f} s  {path}")
    for path, reason in sorted(summary.skipped)[:MAX_LISTED_SKIPS]:
        say(f"skipped {path}: {reason}")
    if len(summary.skipped) > MAX_LISTED_SKIPS:
        say(f"... and {len(summary.skipped) - MAX_LISTED_SKIPS} more skipped")
    for message in summary.internal_errors:
        say(f"AGF000 at {message}")
    for path, text in summary.exceptions:
        say(f"exception in {path}:\n{text}")
    if show_tracebacks:
        for path in sorted({message.split(":", 1)[0] for message in summary.internal_errors}):
            for text in explain(path, core_only):
                say(text)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("roots", nargs="*", type=Path, help="files or directories (default: site-packages)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--core-only", action="store_true", help="run only the default rules, not the preview ones")
    parser.add_argument("--traceback", action="store_true", help="show where each AGF000 comes from")
    parser.add_argument("--slowest", type=int, default=5, help="list the K slowest files")
    options = parser.parse_args(argv)
    roots = options.roots or default_roots()
    summary = run(roots, options.jobs, options.core_only)
    report(summary, options.slowest, options.traceback, core_only=options.core_only)
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
