"""Checking files: read each one as flake8 does, run the shared engine, drop what the user silenced.

Reading follows flake8 (and Python): the encoding comes from a BOM or a PEP 263 coding cookie
(``tokenize.detect_encoding``, with lines that may end at a bare CR, as Python's own tokenizer ends
them), line endings are made ``\\n``, and the engine gets the same lines and ``ast`` tree flake8 hands
the plugin. Unlike flake8, which falls back to latin-1, a file that does not
decode is an error: its findings would be guesses.
"""

from __future__ import annotations

import ast
import functools
import io
import multiprocessing
import re
import tokenize
from dataclasses import dataclass, field, replace
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from ...core.conventions import CtxNames, TorchVersion
from ...checking.checker import check_tree, might_define_function
from ...core.fixes import Edit, Fix, computing_ends, computing_fixes
from ...core.settings import Settings
from ...rules import PREVIEW_RULES, RULES
from ...rules.base import Finding, Rule
from ...checking.selection import CODES, PREFIX, PREVIEW_CODES, ineffective_selections, preview_codes_to_run, reported
from .files import is_excluded
from .noqa import InlineNoqa, file_is_exempt


@dataclass(frozen=True)
class Report:
    """One finding as the command shows it."""

    path: str
    line: int  # 1-based
    column: int  # 1-based, as flake8 prints it
    code: str
    text: str  # the message after the code
    fixable: bool  # the finding has a fix (safe: applied by --fix; unsafe: only with --unsafe-fixes)
    unsafe_because: Optional[str] = None  # what an unsafe fix may change; None for a safe one (or none)
    source: str = ""  # the text of the finding's line, stripped (what a baseline matches on)
    # Where the reported code ends: the line, and the column just after its last character (1-based, as
    # ``column``; SARIF's endColumn). Without an end the rule knows, the end of the finding's line.
    end_line: int = 0
    end_column: int = 0
    edits: Tuple[Edit, ...] = ()  # the fix's edits, in the file's coordinates (Edit's: columns from 0)

    @property
    def applicability(self) -> Optional[str]:
        """``"safe"``, ``"unsafe"``, or None when there is no fix."""
        if not self.fixable:
            return None
        return "safe" if self.unsafe_because is None else "unsafe"


@dataclass(frozen=True)
class Outcome:
    """What checking one file gave: its reports, or why it could not be checked."""

    path: str
    reports: Tuple[Report, ...] = ()
    error: Optional[str] = None  # the file could not be read or decoded: the run fails (exit 2)
    notice: Optional[str] = None  # the file was skipped for a reason worth saying (not valid Python)


@dataclass(frozen=True)
class CheckOptions:
    select: Tuple[str, ...] = ()  # empty: not given (every code on by default)
    ignore: Tuple[str, ...] = ()  # empty: not given (the preview codes, unless preview is on)
    function_bases: Tuple[str, ...] = ()
    preview: bool = False
    ctx_names: CtxNames = CtxNames()
    min_torch_version: Optional[TorchVersion] = None  # the oldest torch the project supports; None: not said
    unsafe_fixes: bool = False  # --fix / --diff also apply the fixes that may change what code computes
    extend_select: Tuple[str, ...] = ()
    extend_ignore: Tuple[str, ...] = ()
    # (pattern, codes): the codes are also ignored in the files the pattern matches, as flake8 matches them
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    # What the checking of every file reads, built once with the options (see __post_init__).
    settings: Settings = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        settings = Settings(
            function_bases=self.function_bases,
            preview=self.preview,
            preview_codes=preview_codes_to_run(self.preview, self.selections, self.selects),
            ctx_names=self.ctx_names,
            min_torch_version=self.min_torch_version,
        )
        object.__setattr__(self, "settings", settings)

    def for_path(self, path: str) -> "CheckOptions":
        """The options for one file: its per-file ignores added to the ignored codes (flake8's extend-ignore)."""
        if not self.per_file_ignores:
            return self
        extra = tuple(
            code for pattern, codes in self.per_file_ignores if is_excluded(path, (pattern,)) for code in codes
        )
        return replace(self, extend_ignore=self.extend_ignore + extra, per_file_ignores=()) if extra else self

    @property
    def rules(self) -> List[Rule]:
        """The rules on by default, and the preview rules whose codes are chosen (see :mod:`..selection`)."""
        return RULES + [rule for rule in PREVIEW_RULES if rule.code in self._chosen_preview_codes]

    @property
    def _chosen_preview_codes(self) -> FrozenSet[str]:
        return self.settings.preview_codes or frozenset()

    @functools.cached_property
    def _decisions(self) -> Dict[str, bool]:
        return {code: self._decide(code) for code in CODES}

    @property
    def selections(self) -> Tuple[str, ...]:
        """The codes chosen explicitly: ``select`` and ``extend_select``."""
        return self.select + self.extend_select

    def selects(self, code: str) -> bool:
        """flake8's decision: whether a finding of ``code`` is reported (``selection.reported``), the preview
        codes being ignored by default as in flake8, unless preview is on."""
        decision = self._decisions.get(code)
        return self._decide(code) if decision is None else decision

    def _decide(self, code: str) -> bool:
        return reported(
            code,
            select=self.select or None,
            extend_select=self.extend_select,
            ignore=self.ignore or None,
            extend_ignore=self.extend_ignore,
            default_ignore=() if self.preview else PREVIEW_CODES,
        )

    def warnings(self) -> List[str]:
        """A warning for each selection of this plugin's codes that changes nothing (``--select AGF999``)."""
        def runs(code: str) -> bool:
            return self.selects(code) and (code not in PREVIEW_CODES or code in self._chosen_preview_codes)

        warnings = ineffective_selections(self.selections, runs, self.selects, "--preview")
        named = any(code.startswith(self.selections) for code in CODES)
        if self.select and not named and not any(prefix.startswith(PREFIX) for prefix in self.selections):
            # A flake8 configuration's select = E,F,W: flake8 does not report this plugin's codes either.
            warnings.append(f"select {','.join(self.select)} names no flake8-autograd code: nothing is checked")
        return warnings


class SourceError(Exception):
    """The bytes are not text Python could read."""


def source_encoding(data: bytes) -> str:
    """The encoding Python reads ``data`` in: a BOM, or a coding cookie in the first two lines, else
    UTF-8 (``tokenize.detect_encoding``, whose errors it raises). Its lines may end at a bare ``\\r``, as
    CPython's tokenizer ends them: given a CR-only file, ``detect_encoding`` would read it all as one
    first line, decode that as UTF-8 to look for the cookie, and fail on the first non-ASCII byte."""
    first_lines = iter(_first_lines(data, 2))
    encoding, _ = tokenize.detect_encoding(lambda: next(first_lines, b""))
    return encoding


_LINE_END = re.compile(rb"\r\n?|\n")


def _first_lines(data: bytes, count: int) -> List[bytes]:
    lines: List[bytes] = []
    start = 0
    while len(lines) < count and start < len(data):
        end = _LINE_END.search(data, start)
        stop = end.end() if end is not None else len(data)
        lines.append(data[start:stop])
        start = stop
    return lines


def decode_lines(data: bytes) -> List[str]:
    """The lines of a Python source file, decoded as ``tokenize.open`` decodes them (flake8 reads
    files that way): BOM or coding cookie (see ``source_encoding``), else UTF-8; ``\\r\\n`` and ``\\r``
    become ``\\n``."""
    try:
        encoding = source_encoding(data)
        lines = io.TextIOWrapper(io.BytesIO(data), encoding).readlines()
    except (SyntaxError, UnicodeError, LookupError) as error:
        raise SourceError(f"cannot decode: {_reason(error)}") from None
    if lines and lines[0].startswith("\ufeff"):  # flake8 strips a BOM the codec left in place
        lines[0] = lines[0][1:]
    return lines


def _reason(error: Exception) -> str:
    if isinstance(error, SyntaxError):
        return error.msg or str(error)
    return str(error)


def check_lines(lines: Sequence[str], path: str, options: CheckOptions) -> Outcome:
    """The reports for one file's decoded lines (``path`` is the name shown and given to the engine)."""
    findings, notice = lint_lines(lines, path, options)
    return Outcome(path, tuple(to_report(path, finding, lines) for finding in findings), notice=notice)


def lint_lines(lines: Sequence[str], path: str, options: CheckOptions) -> Tuple[List[Finding], Optional[str]]:
    """The findings the user asked for (selected, not silenced), each with its fix if it has one; and a
    notice when the file was skipped."""
    text = "".join(lines)
    if not might_define_function(text, options.settings.function_bases):
        return [], None  # most files: no tree needed
    if file_is_exempt(lines):
        return [], None
    options = options.for_path(path)  # the per-file ignores change what is reported, not the Function bases
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return [], f"skipped, not valid Python: {_syntax_reason(error)}"
    # the command always says which findings it could fix, and where each one ends
    with computing_fixes(), computing_ends():
        findings = check_tree(tree, lines, path, options.settings)
    noqa = InlineNoqa(lines)
    allowed: Dict[Tuple[int, str], bool] = {}  # a fix shared by several findings is looked at once
    selected = []
    for finding in findings:
        if not options.selects(finding.code) or noqa.silences(finding.line, finding.code):
            continue
        fix = finding.fix
        if fix is not None:
            key = (id(fix), finding.code)
            if key not in allowed:
                allowed[key] = not _edits_silenced_lines(fix, finding.code, noqa)
            if not allowed[key]:
                finding = replace(finding, fix=None)
        selected.append(finding)
    return selected, None


def _edits_silenced_lines(fix: Fix, code: str, noqa: InlineNoqa) -> bool:
    """Whether the fix edits a line on which the user silenced ``code``: one fix can repair several
    findings at once (AGF003 merges a forward's stores into one call), and a store the user kept on
    purpose must stay as written."""
    lines: Set[int] = set()
    for edit in fix.edits:
        (first, _), (last, last_column) = edit.start, edit.end
        if last_column == 0 and last > first:
            last -= 1  # an edit ending at the start of a line does not touch that line
        lines.update(range(first, last + 1))
    return any(noqa.silences(line, code) for line in lines)


def _syntax_reason(error: Exception) -> str:
    if isinstance(error, SyntaxError) and error.lineno:
        return f"{type(error).__name__}: {error.msg} (line {error.lineno})"
    return f"{type(error).__name__}: {error}"


def to_report(path: str, finding: Finding, lines: Optional[Sequence[str]] = None) -> Report:
    prefix = finding.code + " "
    text = finding.message[len(prefix):] if finding.message.startswith(prefix) else finding.message
    # A finding that carries a fix can be repaired by the command; the rules attach fixes themselves.
    fix = finding.fix
    unsafe_because = fix.unsafe_because if fix is not None else None
    line_text = lines[finding.line - 1] if lines is not None and 0 < finding.line <= len(lines) else ""
    end_line, end_column = _end_of(finding, line_text)
    return Report(
        path, finding.line, finding.column + 1, finding.code, text, fix is not None, unsafe_because,
        line_text.strip(), end_line, end_column + 1, fix.edits if fix is not None else (),
    )


def _end_of(finding: Finding, line_text: str) -> Tuple[int, int]:
    """Where the finding ends (line, 0-based column, exclusive): the rule's end, else its line's end."""
    if finding.end_line is not None and finding.end_column is not None:
        end = (finding.end_line, finding.end_column)
        if end >= (finding.line, finding.column):
            return end
    return finding.line, max(len(line_text.rstrip("\r\n")), finding.column)


def check_file(path: str, options: CheckOptions) -> Outcome:
    """Read and check one file; never raises."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as error:
        return Outcome(path, error=f"cannot read: {error.strerror or error}")
    return check_source(data, path, options)


def check_source(data: bytes, path: str, options: CheckOptions) -> Outcome:
    """Decode and check the bytes of one file (or of standard input); never raises."""
    try:
        return check_lines(decode_lines(data), path, options)
    except SourceError as error:
        return Outcome(path, error=str(error))
    except Exception as error:  # noqa: BLE001 - one file must not stop the run; say so and go on
        return Outcome(path, error=f"internal error: {type(error).__name__}: {error}; please report")


def check_files(paths: Sequence[str], options: CheckOptions, jobs: int) -> List[Outcome]:
    """Outcomes in the order of ``paths``, whether checked in one process or several."""
    check = functools.partial(check_file, options=options)
    jobs = min(jobs, len(paths))
    if jobs > 1:
        try:
            pool = multiprocessing.Pool(jobs)
        except (OSError, ImportError):  # no process support here (as flake8 does, run serially)
            pass
        else:
            with pool:
                chunk = max(1, len(paths) // (jobs * 8))
                return pool.map(check, paths, chunksize=chunk)
    return [check(path) for path in paths]
