"""``--diff``: the fixes as a unified patch that ``patch -p1`` and ``git apply`` apply."""

from __future__ import annotations

import difflib
import os


_NO_NEWLINE = b"\n\\ No newline at end of file\n"


def unified_diff(path: str, before: bytes, after: bytes) -> bytes:
    """A patch from ``before`` to ``after`` that ``patch -p1`` and ``git apply`` apply from the current
    folder: ``a/`` and ``b/`` prefixes on the path relative to it, lines as bytes in the file's encoding."""
    if before == after:
        return b""
    label = _relative_label(path)
    lines = difflib.diff_bytes(
        difflib.unified_diff,
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        b"a/" + label,
        b"b/" + label,
        lineterm=b"\n",
    )
    # A last line without a line end is marked as diff marks it, so that none is added when applied.
    return b"".join(line if line.endswith(b"\n") else line + _NO_NEWLINE for line in lines)


def _relative_label(path: str) -> bytes:
    try:
        relative = os.path.relpath(os.path.abspath(path))
    except ValueError:  # another drive than the current folder's (Windows): keep the path as given
        relative = path
    return os.fsencode(relative.replace(os.sep, "/"))
