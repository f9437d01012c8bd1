"""``flake8-autograd [PATH ...]``: the engine the flake8 plugin runs, as a command of its own.

Exit status: 0 nothing found, 1 findings, 2 a usage or configuration error, or a file that could not
be read, decoded or (with ``--fix``) written (the other files are still checked; 2 wins over 1). With
``--fix``, the findings are those that remain; with ``--diff``, those found before any fix.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from .command.files import is_excluded, python_files
from .command.fixer import FixedFile, fix_source, fixed_files
from .command.formats import FORMATS, Run
from .command.patch import unified_diff
from .command.runner import Outcome, check_files, check_source
from .command.settings import Settings, UsageError, parse_settings
from .rules import PREVIEW_RULES

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
STDIN = "-"


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return 130  # the shell's convention for a run stopped by Ctrl-C


def _main(argv: Optional[Sequence[str]]) -> int:
    try:
        settings = parse_settings(argv, _current_directory())
    except UsageError as error:
        _say(str(error))
        return EXIT_ERROR
    if settings.fix or settings.diff:
        return _fix(settings)
    outcomes = _check(settings)
    for outcome in outcomes:
        if outcome.error:
            _say(f"{outcome.path}: {outcome.error}")
        elif outcome.notice:
            _say(f"{outcome.path}: {outcome.notice}")
    reports = [report for outcome in outcomes for report in outcome.reports]
    errors = [(outcome.path, outcome.error) for outcome in outcomes if outcome.error]
    rules = settings.check.rules
    preview_codes = frozenset(rule.code for rule in PREVIEW_RULES)
    _write(FORMATS[settings.output_format](reports, Run(rules, preview_codes, errors)))
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if reports else EXIT_CLEAN


def _fix(settings: Settings) -> int:
    """--fix writes the fixed files and reports what remains; --diff prints the fixes and writes nothing."""
    results = _fix_all(settings)
    for result in results:
        if result.outcome.error:
            _say(f"{result.outcome.path}: {result.outcome.error}")
        elif result.outcome.notice:
            _say(f"{result.outcome.path}: {result.outcome.notice}")
    errors = [(result.outcome.path, result.outcome.error) for result in results if result.outcome.error]
    fixed = sum(result.fixed for result in results)
    remaining = [report for result in results for report in result.outcome.reports]
    changed = sum(1 for result in results if result.after != result.before)
    if settings.diff:
        patch = b"".join(unified_diff(result.outcome.path, result.before, result.after) for result in results)
        _write_bytes(patch)  # stdout holds the patch alone, ready for ``patch -p1``
        found = fixed + len(remaining)
        print(f"would fix {_count(fixed, found)} in {_plural(changed, 'file')}", file=sys.stderr)
        if errors:
            return EXIT_ERROR
        return EXIT_FINDINGS if found else EXIT_CLEAN
    preview_codes = frozenset(rule.code for rule in PREVIEW_RULES)
    _write(FORMATS[settings.output_format](remaining, Run(settings.check.rules, preview_codes, errors)))
    print(f"fixed {_count(fixed, fixed + len(remaining))} in {_plural(changed, 'file')}", file=sys.stderr)
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if remaining else EXIT_CLEAN


def _fix_all(settings: Settings) -> List[FixedFile]:
    paths = python_files(settings.paths, settings.exclude)
    write = settings.fix and not settings.diff
    results = fixed_files([path for path in paths if path != STDIN], settings.check, write, settings.jobs)
    if STDIN in paths:  # only with --diff: standard input cannot be rewritten
        name = settings.stdin_filename
        if name == "stdin" or not is_excluded(name, settings.exclude):
            try:
                data = sys.stdin.buffer.read()
            except OSError as error:
                failed = Outcome(name, error=f"cannot read standard input: {error}")
                results.append(FixedFile(failed, 0, b"", b""))
            else:
                results.append(fix_source(data, name, settings.check))
    return sorted(results, key=lambda result: result.outcome.path)


def _count(fixed: int, found: int) -> str:
    return f"{fixed} of {_plural(found, 'finding')}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _current_directory() -> Path:
    try:
        return Path.cwd()
    except OSError as error:  # the folder was removed under us
        raise UsageError(f"cannot use the current folder: {error}") from None


def _check(settings: Settings) -> List[Outcome]:
    paths = python_files(settings.paths, settings.exclude)
    outcomes = check_files([path for path in paths if path != STDIN], settings.check, settings.jobs)
    if STDIN in paths:
        name = settings.stdin_filename
        # As in flake8: a display name that the excludes match skips standard input too.
        if name == "stdin" or not is_excluded(name, settings.exclude):
            outcomes.append(_check_stdin(name, settings))
    # flake8's order: by file name, then position; the same whatever -j is.
    return sorted(outcomes, key=lambda outcome: outcome.path)


def _check_stdin(name: str, settings: Settings) -> Outcome:
    try:
        data = sys.stdin.buffer.read()
    except OSError as error:
        return Outcome(name, error=f"cannot read standard input: {error}")
    return check_source(data, name, settings.check)


def _say(message: str) -> None:
    print(f"flake8-autograd: {message}", file=sys.stderr)


def _write_bytes(output: bytes) -> None:
    if not output:
        return
    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(output)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _write(output: str) -> None:
    if not output:
        return
    try:
        stream = sys.stdout
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")  # a path or name the terminal cannot show
        stream.write(output)
        stream.flush()
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, without a second error at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
