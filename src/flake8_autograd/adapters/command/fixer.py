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
import errno
import functools
import io
import multiprocessing
import os
import stat
import tempfile
from collections import Counter
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ...core.fixes import apply_fixes_taken
from ...rules.base import Finding
from .runner import CheckOptions, Outcome, check_source, lint_lines, source_encoding, to_report

# Each pass applies the fixes that do not overlap; one that overlapped is taken on the next pass.
# A pass redone without a failed fix counts too, so a run ends after at most this many lint passes.
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
        codec = codecs.lookup(source_encoding(data)).name
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


def applies(finding: Finding, options: CheckOptions) -> bool:
    """Whether ``--fix`` (or ``--diff``) applies the finding's fix under ``options``."""
    fix = finding.fix
    return fix is not None and (fix.safe or options.unsafe_fixes)


def _finding_key(finding: Finding) -> Tuple[str, str]:
    # Positions move as fixes add and remove lines; the message names the class, method and value.
    return finding.code, finding.message


def fix_text(text: str, path: str, options: CheckOptions) -> Tuple[str, int, List[Finding], Optional[str]]:
    """The text with its fixes applied; how many were; and the findings (and notice) of the result.

    A fix must remove the finding it repairs and leave a file Python can read. One that does not is a
    failed fix: its pass is made again without it, it is not offered again, and the notice names it
    (a bug of the rule's, never a reason to keep applying it).
    """
    fixed = 0
    failed: Dict[Tuple[str, str], int] = {}  # finding key -> the line it was at when its fix failed
    findings, notice = lint_lines(_engine_lines(text), path, options)
    for _ in range(MAX_PASSES):
        wanted = [f for f in findings if applies(f, options) and _finding_key(f) not in failed]
        if not wanted:
            break
        candidate, taken = apply_fixes_taken(text, [finding.fix for finding in wanted if finding.fix is not None])
        if not taken or candidate == text:
            break
        repaired = [finding for finding in wanted if finding.fix in taken]
        if not _parses(candidate):
            failed.update(_breaking(text, repaired))
            continue  # this pass again, without the fixes that break the file
        after, after_notice = lint_lines(_engine_lines(candidate), path, options)
        stubborn = _not_removed(findings, repaired, after)
        if stubborn:
            failed.update((key, line) for key, line in stubborn.items() if key not in failed)
            continue
        text, fixed = candidate, fixed + len(repaired)
        findings, notice = after, after_notice
    if failed:
        said = "; ".join(f"{code} at line {line}" for (code, _), line in sorted(failed.items(), key=lambda i: i[1]))
        failure = f"a fix did not repair its finding and was not applied ({said}); please report"
        notice = f"{notice}; {failure}" if notice else failure
    return text, fixed, findings, notice


def _breaking(text: str, repaired: Sequence[Finding]) -> Dict[Tuple[str, str], int]:
    """The findings whose fix, applied alone, leaves text Python cannot read."""
    broken: Dict[Tuple[str, str], int] = {}
    for finding in repaired:
        assert finding.fix is not None
        alone, _ = apply_fixes_taken(text, [finding.fix])
        if not _parses(alone):
            broken[_finding_key(finding)] = finding.line
    if not broken:  # each parses alone but not together: none of them this time
        broken = {_finding_key(finding): finding.line for finding in repaired}
    return broken


def _not_removed(
    before: Sequence[Finding], repaired: Sequence[Finding], after: Sequence[Finding]
) -> Dict[Tuple[str, str], int]:
    """The repaired findings still there after their fix (counted by key: one key may stand for several)."""
    count_before = Counter(_finding_key(finding) for finding in before)
    count_repaired = Counter(_finding_key(finding) for finding in repaired)
    count_after = Counter(_finding_key(finding) for finding in after)
    lines = {_finding_key(finding): finding.line for finding in repaired}
    return {
        key: lines[key]
        for key, count in count_repaired.items()
        if count_after[key] > count_before[key] - count
    }


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
    lines = _engine_lines(text)
    outcome = Outcome(path, tuple(to_report(path, finding, lines) for finding in findings), notice=notice)
    return FixedFile(outcome, fixed, data, after)


def fix_file(path: str, options: CheckOptions, write: bool, refusal: Optional[str] = None) -> FixedFile:
    """Fix one file, and write it when ``write`` and something was fixed; never raises.

    A file with a ``refusal`` (why it must not be changed) that has something to fix is left as it is,
    with the refusal as its error, whether or not ``write``: ``--diff`` refuses what ``--fix`` would.
    """
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as error:
        return FixedFile(Outcome(path, error=f"cannot read: {error.strerror or error}"), 0, b"", b"")
    result = fix_source(data, path, options)
    if refusal is not None and result.after != result.before:
        return _left_as_it_is(data, path, options, refusal)
    if write and result.after != result.before:
        try:
            replace_file(path, result.before, result.after)
        except WriteRefused as refusal:
            return _left_as_it_is(data, path, options, str(refusal))
        except OSError as error:
            return _left_as_it_is(data, path, options, f"cannot write the fixes: {error.strerror or error}")
    return result


def _left_as_it_is(data: bytes, path: str, options: CheckOptions, reason: str) -> FixedFile:
    """A file the fixes were not written to: the findings of the file as it stands (those before any fix,
    fixable ones marked so), and why it was not written; nothing counted as fixed."""
    as_it_stands = check_source(data, path, options)
    if as_it_stands.error:
        reason = f"{reason}; {as_it_stands.error}"
    return FixedFile(Outcome(path, as_it_stands.reports, error=reason, notice=as_it_stands.notice), 0, data, data)


class WriteRefused(OSError):
    """The file was left as it is on purpose; the message says why."""


_CHANGED = "changed while it was being fixed; left as it is"
_ANY_WRITE_BIT = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
_NAME_KEPT_IN_TEMPORARY = 64  # characters of the file's name in its temporary's: never too long a name


def replace_file(path: str, expected: bytes, data: bytes) -> None:
    """Write ``data`` over the file at ``path``, which must still hold ``expected``.

    A symbolic link is followed: the file it points to is written, and the link stays (which links the
    command may follow is decided before, by ``files.fix_refusal``). There are two
    ways to write a file, and each keeps something the other loses:

    - Replaced at once: a complete temporary file beside it, given its mode, then ``os.replace``.
      Readers, and a crash, see the old bytes or the new ones, never half of them; but the result is
      a new file, owned by whoever runs the command, without the old one's extended attributes (ACLs,
      security labels) or its other names (hard links).
    - Written in place (``r+b``, write, truncate, ``fsync``): the same file, so its owner, group,
      extended attributes, hard links and mode stay; but a reader at that moment, or a crash, can see
      it half written. The space a longer file needs is taken before a byte is written, and a write
      that fails puts the old bytes back where it can.

    A file is replaced at once when that loses nothing: it has one name, and the temporary file, once
    given its mode, has its owner, group and extended attributes. Otherwise it is written in place, as
    it is when no temporary file can be made beside it (a read-only folder, say).

    Raises ``WriteRefused`` for a file the user may not write, or without a write bit at all (root could
    write it, but its owner marked it read-only), as editors refuse it; and for a file that changed
    since it was read. Any other failure raises ``OSError``.
    """
    target = os.path.realpath(path)
    status = os.stat(target)
    if not status.st_mode & _ANY_WRITE_BIT or not os.access(target, os.W_OK):
        raise WriteRefused("is read-only; left as it is")
    temporary = _temporary_like(target, status) if status.st_nlink == 1 else None
    if temporary is None:
        _write_in_place(target, expected, data)
    else:
        _replace_at_once(target, temporary, expected, data)


def _temporary_like(target: str, status: os.stat_result) -> Optional[Tuple[int, str]]:
    """An empty temporary file beside ``target`` that nothing but its bytes tells from it (its open
    descriptor and path); None when there cannot be one."""
    directory, name = os.path.split(target)
    try:
        handle, temporary = tempfile.mkstemp(
            dir=directory or ".", prefix=f".{name[:_NAME_KEPT_IN_TEMPORARY]}.", suffix=".tmp"
        )
    except OSError:
        return None
    try:
        os.chmod(temporary, stat.S_IMODE(status.st_mode))  # before comparing: a mode change can change an ACL
        made = os.fstat(handle)
        if (made.st_uid, made.st_gid) == (status.st_uid, status.st_gid):
            if _extended_attributes(handle) == _extended_attributes(target):
                return handle, temporary
    except OSError:  # attributes that cannot be read cannot be compared: write in place
        pass
    except BaseException:
        _discard(handle, temporary)
        raise
    _discard(handle, temporary)
    return None


def _extended_attributes(file: Union[int, str]) -> Dict[str, bytes]:
    """A file's extended attributes, by name ({} where the system or filesystem has none)."""
    if not hasattr(os, "listxattr"):
        return {}
    try:
        names = os.listxattr(file)
    except OSError as error:
        if error.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return {}
        raise
    return {name: os.getxattr(file, name) for name in names}


def _discard(handle: int, temporary: str) -> None:
    with contextlib.suppress(OSError):
        os.close(handle)
    with contextlib.suppress(OSError):
        os.unlink(temporary)


def _replace_at_once(target: str, temporary: Tuple[int, str], expected: bytes, data: bytes) -> None:
    handle, name = temporary
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        with open(target, "rb") as stream:  # checked last, to leave the least time for an edit to be lost
            if stream.read() != expected:
                raise WriteRefused(_CHANGED)
        os.replace(name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def _write_in_place(target: str, expected: bytes, data: bytes) -> None:
    with open(target, "r+b", buffering=0) as stream:
        if stream.readall() != expected:
            raise WriteRefused(_CHANGED)
        _reserve(stream.fileno(), len(expected), len(data))  # a full disk fails here, before a byte is written
        try:
            _write_from_start(stream, data)
            os.fsync(stream.fileno())
        except OSError:
            with contextlib.suppress(OSError):  # put the old bytes back rather than leave half of the new
                _write_from_start(stream, expected)
                os.fsync(stream.fileno())
            raise


def _reserve(handle: int, size: int, new_size: int) -> None:
    """Allocate the disk space a file growing from ``size`` to ``new_size`` bytes needs, where the
    filesystem can say in advance."""
    if new_size <= size or not hasattr(os, "posix_fallocate"):
        return
    try:
        os.posix_fallocate(handle, size, new_size - size)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
            raise


def _write_from_start(stream: io.FileIO, data: bytes) -> None:
    stream.seek(0)
    view = memoryview(data)
    while view:
        view = view[stream.write(view):]
    stream.truncate(len(data))


def fixed_files(
    paths: Sequence[str], options: CheckOptions, write: bool, jobs: int, refusals: Optional[Mapping[str, str]] = None
) -> List[FixedFile]:
    """Fix ``paths`` in one process or several; results in the order of ``paths``. ``refusals``: why a
    path must be left as it is (see ``fix_file``)."""
    work = functools.partial(_fix_refused_or_not, options=options, write=write)
    items = [(path, (refusals or {}).get(path)) for path in paths]
    jobs = min(jobs, len(paths))
    if jobs > 1:
        try:
            pool = multiprocessing.Pool(jobs)
        except (OSError, ImportError):  # no process support here: run serially
            pass
        else:
            with pool:
                return pool.map(work, items, chunksize=max(1, len(paths) // (jobs * 8)))
    return [work(item) for item in items]


def _fix_refused_or_not(item: Tuple[str, Optional[str]], options: CheckOptions, write: bool) -> FixedFile:
    path, refusal = item
    return fix_file(path, options, write, refusal)
