"""``--fix`` and ``--diff``: repair what the rules can repair for certain, in place or as a patch.

A file is fixed in passes: lint, apply every fix that does not overlap another, lint the result again.
Edits are made to the text as read (its own line endings), and the bytes are encoded back with the
file's own encoding and BOM, so that every line no fix touches stays byte for byte as it was. A file
whose bytes would not survive that round trip is left alone (its findings are still reported).
"""

from __future__ import annotations

import ast
import codecs
import contextlib
import functools
import io
import multiprocessing
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ..fixes import apply_fixes
from ..rules.base import Finding
from .runner import CheckOptions, Outcome, check_source, lint_lines, to_report

# Each pass applies the fixes that do not overlap; one that overlapped is taken on the next pass.
MAX_PASSES = 10


@dataclass(frozen=True)
class FixedFile:
    """What fixing one file gave."""

    outcome: Outcome  # the findings that remain, or why the file could not be checked or written
    fixed: int  # how many findings were fixed
    before: bytes
    after: bytes  # equal to ``before`` when nothing was fixed


@dataclass(frozen=True)
class _Text:
    """A file's text decoded exactly: ``bom + text.encode(encoding)`` gives its bytes back."""

    encoding: str
    bom: bytes
    text: str  # line endings as in the file

    def encode(self, text: str) -> bytes:
        return self.bom + text.encode(self.encoding)


def _decode_exactly(data: bytes) -> Optional[_Text]:
    """The text of a file as Python reads it, when re-encoding it gives the same bytes; else None."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        codec = codecs.lookup(encoding).name
    except (SyntaxError, LookupError):
        return None
    bom = b""
    if codec == "utf-8-sig":  # a BOM: written back as it was read
        codec, bom = "utf-8", codecs.BOM_UTF8
    if not data.startswith(bom) or "\n".encode(codec, "replace") != b"\n":
        return None  # not an encoding in which line ends are the ASCII bytes a patch splits at
    try:
        text = data[len(bom):].decode(codec)
        if bom + text.encode(codec) != data:
            return None
    except (UnicodeError, LookupError):
        return None
    return _Text(codec, bom, text)


def _engine_lines(text: str) -> List[str]:
    """The lines the engine reads: line endings made ``\\n`` (as reading a file does), nothing else split."""
    return io.StringIO(text, newline=None).readlines()


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def fix_text(text: str, path: str, options: CheckOptions) -> Tuple[str, int, List[Finding], Optional[str]]:
    """The text with its fixes applied; how many were; and the findings (and notice) of the result."""
    fixed = 0
    findings, notice = lint_lines(_engine_lines(text), path, options)
    for _ in range(MAX_PASSES):
        fixes = [finding.fix for finding in findings if finding.fix is not None]
        if not fixes:
            break
        candidate, count = apply_fixes(text, fixes)
        if count == 0 or candidate == text or not _parses(candidate):
            break  # a fix must never leave a file Python cannot read: stop at the last good text
        text, fixed = candidate, fixed + count
        findings, notice = lint_lines(_engine_lines(text), path, options)
    return text, fixed, findings, notice


def fix_source(data: bytes, path: str, options: CheckOptions) -> FixedFile:
    """Fix the bytes of one file (nothing is written); never raises."""
    decoded = _decode_exactly(data)
    if decoded is None:
        return FixedFile(check_source(data, path, options), 0, data, data)
    try:
        text, fixed, findings, notice = fix_text(decoded.text, path, options)
        after = decoded.encode(text)
    except Exception as error:  # noqa: BLE001 - one file must not stop the run; say so and go on
        failed = Outcome(path, error=f"internal error while fixing: {type(error).__name__}: {error}; please report")
        return FixedFile(failed, 0, data, data)
    outcome = Outcome(path, tuple(to_report(path, finding) for finding in findings), notice=notice)
    return FixedFile(outcome, fixed, data, after)


def fix_file(path: str, options: CheckOptions, write: bool) -> FixedFile:
    """Fix one file, and replace it when ``write`` and something was fixed; never raises."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as error:
        return FixedFile(Outcome(path, error=f"cannot read: {error.strerror or error}"), 0, b"", b"")
    result = fix_source(data, path, options)
    if write and result.after != result.before:
        try:
            replace_file(path, result.before, result.after)
        except OSError as error:
            failed = Outcome(path, result.outcome.reports, error=f"cannot write the fixes: {error.strerror or error}")
            return FixedFile(failed, 0, data, data)
    return result


def replace_file(path: str, expected: bytes, data: bytes) -> None:
    """Replace the file's bytes at once: a temporary file beside it, then ``os.replace``.

    Readers see the old file or the new one, never half of one. The mode is kept; a symbolic link is
    followed, so the file it points to is replaced, not the link. A file changed since it was read is
    left alone.
    """
    target = os.path.realpath(path)
    with open(target, "rb") as stream:
        if stream.read() != expected:
            raise OSError(f"{path} changed while it was being fixed; left as it is")
    mode = stat.S_IMODE(os.stat(target).st_mode)
    directory, name = os.path.split(target)
    handle, temporary = tempfile.mkstemp(dir=directory or ".", prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def fixed_files(paths: Sequence[str], options: CheckOptions, write: bool, jobs: int) -> List[FixedFile]:
    """Fix ``paths`` in one process or several; results in the order of ``paths``."""
    work = functools.partial(fix_file, options=options, write=write)
    jobs = min(jobs, len(paths))
    if jobs > 1:
        try:
            pool = multiprocessing.Pool(jobs)
        except (OSError, ImportError):  # no process support here: run serially
            pass
        else:
            with pool:
                return pool.map(work, paths, chunksize=max(1, len(paths) // (jobs * 8)))
    return [work(path) for path in paths]
