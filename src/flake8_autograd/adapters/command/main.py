"""``flake8-autograd [PATH ...]``: the engine the flake8 plugin runs, as a command of its own.

Exit status: 0 nothing found (or ``--exit-zero``, ``--write-baseline``, ``--explain``), 1 findings (with
``--baseline``, those it does not record), 2 a usage or configuration error, a file that could not
be read, decoded or (with ``--fix``) written, a folder that could not be listed, or (with ``--diff``) a
file named in a patch (the other files are still checked; 2 wins over 1), output that could not be
written, or an internal error. With ``--fix``, the findings are those that remain; with ``--diff``, those
found before any fix. ``--fix -`` writes standard input fixed to stdout, alone; what remains goes to stderr.

``--fix`` and ``--diff`` refuse the same files (see ``command.files.fix_refusal``): a link met while walking
a folder that leads out of it, and any file outside the current folder. A link named on the command line
is followed to the file it leads to, by both.
"""

from __future__ import annotations

import io
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, TextIO, Tuple, Union

from .baseline import BaselineError, Known, new_findings, read_baseline, write_baseline
from .explain import explain
from .files import fix_refusal, is_excluded, python_files
from .fixer import FixedFile, fix_source, fixed_files
from .formats import FORMATS, Run
from .patch import UnnamedInPatch, unified_diff
from .runner import Outcome, Report, check_files, check_source
from .settings import Settings, UsageError, parse_settings
from ...rules import PREVIEW_CODES

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
STDIN = "-"


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return 130  # the shell's convention for a run stopped by Ctrl-C
    except Exception as error:  # a bug: one line, and not the status of findings (1)
        _say(f"internal error: {type(error).__name__}: {error}; please report")
        return EXIT_ERROR


def _main(argv: Optional[Sequence[str]]) -> int:
    try:
        settings = parse_settings(argv, _current_directory())
        for warning in settings.check.warnings():  # a selection that changes nothing (--select AGF999)
            _say(f"warning: {warning}")
        if settings.explain is not None:
            return _explain(settings.explain)
        known = read_baseline(settings.baseline) if settings.baseline and not settings.write_baseline else None
        if settings.fix and not settings.diff and settings.paths == (STDIN,):
            return _fix_stdin(settings, known)
        if settings.fix or settings.diff:
            return _fix(settings, known)
    except (UsageError, BaselineError) as error:
        _say(str(error))
        return EXIT_ERROR
    outcomes = _check(settings)
    for outcome in outcomes:
        if outcome.error:
            _say(f"{outcome.path}: {outcome.error}")
        elif outcome.notice:
            _say(f"{outcome.path}: {outcome.notice}")
    reports = [report for outcome in outcomes for report in outcome.reports]
    errors = [(outcome.path, outcome.error) for outcome in outcomes if outcome.error]
    if settings.write_baseline:
        return _write_baseline(settings, reports, errors)
    reports = _new_only(reports, settings, known)
    rules = settings.check.rules
    written = _write(FORMATS[settings.output_format](reports, Run(rules, PREVIEW_CODES, errors)))
    if written:  # after a report cut short, nothing more
        _statistics(reports, settings)
        if settings.output_format == "text":
            _fixable_summary(reports, settings)
    if errors or not written:
        return EXIT_ERROR
    return _status(reports, settings)


def _fix(settings: Settings, known: Optional[Known]) -> int:
    """--fix writes the fixed files and reports what remains; --diff prints the fixes and writes nothing."""
    results = _fix_all(settings)
    for result in results:
        if result.outcome.error:
            _say(f"{result.outcome.path}: {result.outcome.error}")
        elif result.outcome.notice:
            _say(f"{result.outcome.path}: {result.outcome.notice}")
    errors = [(result.outcome.path, result.outcome.error) for result in results if result.outcome.error]
    if settings.diff:
        return _diff(results, errors, settings)
    fixed = sum(result.fixed for result in results)
    remaining = [report for result in results for report in result.outcome.reports]
    changed = sum(1 for result in results if result.after != result.before)
    summary = f"fixed {_count(fixed, fixed + len(remaining))} in {_plural(changed, 'file')}"
    remaining = _new_only(remaining, settings, known)
    written = _write(FORMATS[settings.output_format](remaining, Run(settings.check.rules, PREVIEW_CODES, errors)))
    if written:
        _statistics(remaining, settings)
    _tell(summary + _unsafe_hint(remaining, settings))
    if errors or not written:
        return EXIT_ERROR
    return _status(remaining, settings)


def _diff(results: Sequence[FixedFile], errors: List[Tuple[str, str]], settings: Settings) -> int:
    """The patch on stdout, alone, ready for ``patch -p1``; a file it cannot name is an error."""
    pieces: List[bytes] = []
    fixed = found = changed = 0
    for result in results:
        found += result.fixed + len(result.outcome.reports)
        try:
            piece = unified_diff(result.outcome.path, result.before, result.after)
        except UnnamedInPatch as refusal:
            _say(f"{result.outcome.path}: {refusal}")
            errors.append((result.outcome.path, str(refusal)))
            continue
        pieces.append(piece)
        fixed += result.fixed
        changed += 1 if piece else 0
    written = _write_bytes(b"".join(pieces))
    remaining = [report for result in results for report in result.outcome.reports]
    _tell(f"would fix {_count(fixed, found)} in {_plural(changed, 'file')}{_unsafe_hint(remaining, settings)}")
    if errors or not written:
        return EXIT_ERROR  # also for a patch cut short: it must not pass for a whole one
    return EXIT_CLEAN if settings.exit_zero or not found else EXIT_FINDINGS


def _fix_all(settings: Settings) -> List[FixedFile]:
    found = python_files(settings.paths, settings.exclude, _stdin_path(settings), settings.respect_gitignore)
    write = settings.fix and not settings.diff
    here = os.path.realpath(_current_directory())
    files = [path for path in found.paths if path != STDIN]
    refusals = {path: refusal for path in files if (refusal := fix_refusal(path, found.walked_from.get(path), here))}
    results = fixed_files(files, settings.check, write, settings.jobs, refusals)
    results.extend(FixedFile(Outcome(folder, error=why), 0, b"", b"") for folder, why in found.unreadable)
    if STDIN in found.paths:  # only with --diff: standard input cannot be rewritten
        name = settings.stdin_filename
        if name == "stdin" or not is_excluded(name, settings.exclude):
            data = _read_stdin(name)
            if isinstance(data, Outcome):
                results.append(FixedFile(data, 0, b"", b""))
            else:
                results.append(fix_source(data, name, settings.check))
    return sorted(results, key=lambda result: result.outcome.path)


def _fix_stdin(settings: Settings, known: Optional[Known]) -> int:
    """``--fix -``: the fixed text on stdout, alone (an editor replaces its buffer with it); the findings that
    remain and the summary on stderr. Text that cannot be fixed is written back as it came."""
    name = settings.stdin_filename
    data = _read_stdin(name)
    if isinstance(data, Outcome):
        _say(f"{data.path}: {data.error}")
        return EXIT_ERROR
    if name != "stdin" and is_excluded(name, settings.exclude):
        return EXIT_CLEAN if _write_bytes(data) else EXIT_ERROR
    result = fix_source(data, name, settings.check)
    outcome = result.outcome
    if outcome.error or outcome.notice:
        _say(f"{outcome.path}: {outcome.error or outcome.notice}")
    written = _write_bytes(result.after)
    remaining = _new_only(list(outcome.reports), settings, known)
    errors = [(outcome.path, outcome.error)] if outcome.error else []
    report = FORMATS[settings.output_format](remaining, Run(settings.check.rules, PREVIEW_CODES, errors))
    if report:
        _tell(report.rstrip("\n"))
    found = result.fixed + len(outcome.reports)
    _tell(f"fixed {_count(result.fixed, found)}{_unsafe_hint(remaining, settings)}")
    if errors or not written:
        return EXIT_ERROR
    return _status(remaining, settings)


def _explain(code: str) -> int:
    page = explain(code)
    if page is None:  # pragma: no cover - parse_settings accepts only the codes of rules
        raise UsageError(f"--explain: no rule has the code {code}")
    return EXIT_CLEAN if _write(page) else EXIT_ERROR


def _write_baseline(settings: Settings, reports: Sequence[Report], errors: Sequence[Tuple[str, str]]) -> int:
    """Records the findings in the baseline; not when a file could not be checked (the record would lack it)."""
    assert settings.baseline is not None
    if errors:
        _say(f"{settings.baseline}: not written: {_plural(len(errors), 'file')} could not be checked")
        return EXIT_ERROR
    try:
        write_baseline(settings.baseline, reports)
    except BaselineError as error:
        _say(str(error))
        return EXIT_ERROR
    _tell(f"wrote {_plural(len(reports), 'finding')} to the baseline {settings.baseline}")
    return EXIT_CLEAN


def _new_only(reports: List[Report], settings: Settings, known: Optional[Known]) -> List[Report]:
    if known is None or settings.baseline is None:
        return reports
    return new_findings(reports, settings.baseline, known)


def _status(reports: Sequence[Report], settings: Settings) -> int:
    """1 for findings, unless --exit-zero; the caller has already returned 2 for errors."""
    return EXIT_FINDINGS if reports and not settings.exit_zero else EXIT_CLEAN


def _statistics(reports: Sequence[Report], settings: Settings) -> None:
    """flake8's --statistics: each code's count and first message, after the report (on stderr when the
    report is JSON, SARIF or annotations, which a line after them would break)."""
    if not settings.statistics or not reports:
        return
    counts = Counter(report.code for report in reports)
    first: Dict[str, str] = {}
    for report in reports:
        first.setdefault(report.code, report.text)
    lines = "".join(f"{counts[code]:<5} {code} {first[code]}\n" for code in sorted(counts))
    if settings.output_format == "text":
        _write(lines)
    else:
        _tell(lines.rstrip("\n"))


def _fixable_summary(reports: Sequence[Report], settings: Settings) -> None:
    """How many findings --fix would repair, on stderr (stdout stays flake8's report)."""
    unsafe = sum(1 for report in reports if report.applicability == "unsafe")
    safe = sum(1 for report in reports if report.applicability == "safe")
    if settings.check.unsafe_fixes:  # --fix applies both
        safe, unsafe = safe + unsafe, 0
    if safe:
        hint = f" ({unsafe} more with --unsafe-fixes)" if unsafe else ""
        _tell(f"{safe} fixable with the --fix option{hint}")
    elif unsafe:
        _tell(f"{unsafe} fixable with the --fix --unsafe-fixes options")


def _unsafe_hint(remaining: Sequence[Report], settings: Settings) -> str:
    """How many of what remains an unsafe fix would repair, when --unsafe-fixes was not given."""
    if settings.check.unsafe_fixes:
        return ""
    unsafe = sum(1 for report in remaining if report.applicability == "unsafe")
    return f" ({unsafe} more with --unsafe-fixes)" if unsafe else ""


def _stdin_path(settings: Settings) -> Optional[str]:
    """The file standard input stands for, when a path is ``-`` and ``--stdin-filename`` names one."""
    if STDIN not in settings.paths or settings.stdin_filename == "stdin":
        return None
    return settings.stdin_filename


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
    found = python_files(settings.paths, settings.exclude, _stdin_path(settings), settings.respect_gitignore)
    outcomes = check_files([path for path in found.paths if path != STDIN], settings.check, settings.jobs)
    outcomes.extend(Outcome(folder, error=why) for folder, why in found.unreadable)
    if STDIN in found.paths:
        name = settings.stdin_filename
        # As in flake8: a display name that the excludes match skips standard input too.
        if name == "stdin" or not is_excluded(name, settings.exclude):
            outcomes.append(_check_stdin(name, settings))
    # flake8's order: by file name, then position; the same whatever -j is.
    return sorted(outcomes, key=lambda outcome: outcome.path)


def _check_stdin(name: str, settings: Settings) -> Outcome:
    data = _read_stdin(name)
    if isinstance(data, Outcome):
        return data
    return check_source(data, name, settings.check)


def _read_stdin(name: str) -> Union[bytes, Outcome]:
    """The bytes of standard input, or the outcome that says why there are none."""
    stream = sys.stdin
    if stream is None:  # closed when the command started (``<&-``): Python gives no stream at all
        return Outcome(name, error="cannot read standard input: it is closed")
    try:
        return stream.buffer.read()
    except OSError as error:
        return Outcome(name, error=f"cannot read standard input: {error.strerror or error}")


def _say(message: str) -> None:
    _tell(f"flake8-autograd: {message}")


def _tell(line: str) -> None:
    """A line on stderr. With stderr closed, print() would fall back to stdout, which holds only the report
    or the patch: the line is dropped instead."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(line + "\n")
        stream.flush()
    except (OSError, ValueError):  # nowhere left to say it
        pass


def _write_bytes(output: bytes) -> bool:
    """Whether ``output`` went to stdout (a reader that stopped reading counts: ``| head``); if not, says why."""

    def write(stream: TextIO) -> None:
        stream.flush()
        stream.buffer.write(output)
        stream.buffer.flush()

    return _to_stdout(bool(output), write)


def _write(output: str) -> bool:
    """As ``_write_bytes``, for text."""

    def write(stream: TextIO) -> None:
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")  # a path or name the terminal cannot show
        stream.write(output)
        stream.flush()

    return _to_stdout(bool(output), write)


def _to_stdout(anything: bool, write: Callable[[TextIO], None]) -> bool:
    if not anything:
        return True
    stream = sys.stdout
    if stream is None:
        return _cannot_write("standard output is closed")
    try:
        write(stream)
    except BrokenPipeError:
        # The reader went away: stop quietly, with the status the whole output would have had.
        _discard_stdout()
    except OSError as error:
        _discard_stdout()
        return _cannot_write(error.strerror or str(error))
    return True


def _cannot_write(why: str) -> bool:
    _say(f"cannot write the output: {why}")
    return False


def _discard_stdout() -> None:
    """Point stdout at the null device, so that flushing what is left in its buffer at exit cannot fail again
    (Python would print a second error and exit 120)."""
    stream = sys.stdout
    if stream is None:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
