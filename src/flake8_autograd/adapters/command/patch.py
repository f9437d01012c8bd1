"""``--diff``: the fixes as a unified patch that ``patch -p1`` and ``git apply`` apply.

Lines end at ``\\n`` only, as diff and git see them: a bare CR (a CR-only file, a CR inside a string) is
part of its line. The lines are compared by an anchored ("patience") diff: lines that occur once in each
version anchor the comparison, the longest run of anchors in the same order is kept, and each gap between
anchors is compared the same way. Fixes change a few lines between many unchanged ones, each class has a
line of its own (``class Name(...)``), so the gaps stay small and the time grows with the file's length,
where difflib's grows with its square.
"""

from __future__ import annotations

import difflib
import io
import os
from bisect import bisect_left
from typing import Dict, List, Sequence, Tuple

CONTEXT = 3  # unchanged lines around each change, as ``diff -u`` shows

_NO_NEWLINE = b"\\ No newline at end of file\n"

# A gap with no line found once on each side is left to difflib, which is quadratic, only when it is this
# small (in pairs of lines); a larger one is shown as replaced whole: a longer patch, still an exact one.
_SMALL_GAP = 400 * 400

# How git quotes a file name (quote_c_style): the usual C escapes, other bytes outside printable ASCII
# in octal.
_C_ESCAPES = {0x07: b"\\a", 0x08: b"\\b", 0x09: b"\\t", 0x0A: b"\\n", 0x0B: b"\\v", 0x0C: b"\\f", 0x0D: b"\\r"}
_QUOTED = [
    _C_ESCAPES.get(byte, b"\\%03o" % byte) if byte < 0x20 or byte >= 0x7F else bytes([byte])
    for byte in range(256)
]
_QUOTED[ord('"')] = b'\\"'
_QUOTED[ord("\\")] = b"\\\\"
_PLAIN = frozenset(byte for byte in range(0x20, 0x7F) if byte not in b'"\\')


class UnnamedInPatch(ValueError):
    """The file is outside the current folder: a patch applied from there cannot name it."""


# (first line, end) in the old version and in the new one of a run of lines that differ
_Change = Tuple[int, int, int, int]


def unified_diff(path: str, before: bytes, after: bytes) -> bytes:
    """A patch from ``before`` to ``after`` that ``patch -p1`` and ``git apply`` apply from the current
    folder: ``a/`` and ``b/`` prefixes on the path relative to it, lines as bytes in the file's encoding.

    Raises ``UnnamedInPatch`` for a file outside the current folder (``a/../x.py`` is refused by both
    tools), unless nothing changed.
    """
    if before == after:
        return b""
    label = _relative_label(path)
    old, new = _lines(before), _lines(after)
    pieces = [b"--- ", _header_name(b"a/" + label), b"\n+++ ", _header_name(b"b/" + label), b"\n"]
    changes = _changes(_matching_lines(old, new), len(old), len(new))
    for group in _hunk_groups(changes):
        _append_hunk(pieces, old, new, group)
    return b"".join(pieces)


def _lines(data: bytes) -> List[bytes]:
    # Binary readlines splits at b"\n" alone (bytes.splitlines would split at \r, \x0b, \x0c, \x1c-\x1e too).
    return io.BytesIO(data).readlines()


def _relative_label(path: str) -> bytes:
    """The file ``--fix`` would write, named from the current folder: through a symbolic link, the file
    it points to (``patch`` and ``git apply`` refuse to patch a link, or a file beyond a linked folder)."""
    try:
        relative = os.path.relpath(os.path.realpath(path), os.path.realpath(os.getcwd())).replace(os.sep, "/")
    except ValueError:  # on another drive than the current folder (Windows)
        relative = "../"
    if relative == ".." or relative.startswith("../"):
        raise UnnamedInPatch(
            "outside the current folder (or a link to a file there), so a patch applied from here cannot name it; "
            "run --diff from a folder that holds it"
        )
    return os.fsencode(relative)


def _header_name(name: bytes) -> bytes:
    """``name`` as both tools read it back. Like git: a name with a space gets a tab after it (so that the
    name does not end at the space), one with a quote, backslash, control or non-ASCII byte, or ending in a
    space, is written in double quotes with C escapes."""
    if all(byte in _PLAIN for byte in name) and not name.endswith(b" "):
        return name + b"\t" if b" " in name else name
    return b'"' + b"".join(_QUOTED[byte] for byte in name) + b'"'


def _matching_lines(old: Sequence[bytes], new: Sequence[bytes]) -> List[Tuple[int, int]]:
    """Pairs (line in ``old``, line in ``new``) of equal lines, increasing in both: the lines kept."""
    pairs: List[Tuple[int, int]] = []
    pending = [(0, len(old), 0, len(new))]  # gaps still to compare, as [start, end) in each version
    while pending:  # a stack, not recursion: no depth limit however the gaps nest
        old_start, old_end, new_start, new_end = pending.pop()
        while old_start < old_end and new_start < new_end and old[old_start] == new[new_start]:
            pairs.append((old_start, new_start))
            old_start, new_start = old_start + 1, new_start + 1
        while old_start < old_end and new_start < new_end and old[old_end - 1] == new[new_end - 1]:
            old_end, new_end = old_end - 1, new_end - 1
            pairs.append((old_end, new_end))
        if old_start == old_end or new_start == new_end:
            continue  # only deleted or only inserted lines are left
        anchors = _unique_anchors(old, old_start, old_end, new, new_start, new_end)
        if anchors:
            for old_line, new_line in anchors:
                pairs.append((old_line, new_line))
                pending.append((old_start, old_line, new_start, new_line))
                old_start, new_start = old_line + 1, new_line + 1
            pending.append((old_start, old_end, new_start, new_end))
        elif (old_end - old_start) * (new_end - new_start) <= _SMALL_GAP:
            matcher = difflib.SequenceMatcher(None, old[old_start:old_end], new[new_start:new_end], autojunk=False)
            for old_first, new_first, size in matcher.get_matching_blocks():
                pairs.extend((old_start + old_first + k, new_start + new_first + k) for k in range(size))
    pairs.sort()
    return pairs


def _unique_anchors(
    old: Sequence[bytes], old_start: int, old_end: int, new: Sequence[bytes], new_start: int, new_end: int
) -> List[Tuple[int, int]]:
    """The longest chain, in order on both sides, of lines found exactly once in each gap."""
    # line -> [times in old, where in old, times in new, where in new]
    seen: Dict[bytes, List[int]] = {}
    for index in range(old_start, old_end):
        entry = seen.get(old[index])
        if entry is None:
            seen[old[index]] = [1, index, 0, 0]
        else:
            entry[0] += 1
    for index in range(new_start, new_end):
        entry = seen.get(new[index])
        if entry is not None:
            entry[2] += 1
            entry[3] = index
    # In order of the old position: a line seen once was entered at it, and dicts keep insertion order.
    candidates = [(entry[1], entry[3]) for entry in seen.values() if entry[0] == 1 and entry[2] == 1]
    return _longest_increasing(candidates)


def _longest_increasing(pairs: Sequence[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """The longest subsequence of ``pairs`` (ordered by their first item) whose second items increase:
    patience sorting, O(n log n)."""
    tails: List[int] = []  # the smallest second item that ends a chain of each length
    tail_pairs: List[int] = []  # the index of that pair
    previous: List[int] = []  # the index of the pair before each pair in its chain, or -1
    for index, (_, second) in enumerate(pairs):
        length = bisect_left(tails, second)
        if length == len(tails):
            tails.append(second)
            tail_pairs.append(index)
        else:
            tails[length] = second
            tail_pairs[length] = index
        previous.append(tail_pairs[length - 1] if length else -1)
    chain: List[Tuple[int, int]] = []
    index = tail_pairs[-1] if tail_pairs else -1
    while index >= 0:
        chain.append(pairs[index])
        index = previous[index]
    chain.reverse()
    return chain


def _changes(pairs: Sequence[Tuple[int, int]], old_length: int, new_length: int) -> List[_Change]:
    changes: List[_Change] = []
    old_next = new_next = 0
    for old_line, new_line in [*pairs, (old_length, new_length)]:
        if old_line != old_next or new_line != new_next:
            changes.append((old_next, old_line, new_next, new_line))
        old_next, new_next = old_line + 1, new_line + 1
    return changes


def _hunk_groups(changes: Sequence[_Change]) -> List[Sequence[_Change]]:
    """Changes whose context would touch or overlap share a hunk, as in ``diff -u``."""
    groups: List[Sequence[_Change]] = []
    start = 0
    while start < len(changes):
        end = start + 1
        while end < len(changes) and changes[end][0] - changes[end - 1][1] <= 2 * CONTEXT:
            end += 1
        groups.append(changes[start:end])
        start = end
    return groups


def _append_hunk(pieces: List[bytes], old: Sequence[bytes], new: Sequence[bytes], group: Sequence[_Change]) -> None:
    # Lines before the first change and after the last are the same in both versions, so the context
    # is as long on both sides.
    lead = min(CONTEXT, group[0][0])
    trail = min(CONTEXT, len(old) - group[-1][1])
    old_start, old_end = group[0][0] - lead, group[-1][1] + trail
    new_start, new_end = group[0][2] - lead, group[-1][3] + trail
    pieces.append(b"@@ -%s +%s @@\n" % (_range(old_start, old_end), _range(new_start, new_end)))
    unchanged_from = old_start
    for old_first, old_stop, new_first, new_stop in group:
        _append_lines(pieces, b" ", old[unchanged_from:old_first])
        _append_lines(pieces, b"-", old[old_first:old_stop])
        _append_lines(pieces, b"+", new[new_first:new_stop])
        unchanged_from = old_stop
    _append_lines(pieces, b" ", old[unchanged_from:old_end])


def _append_lines(pieces: List[bytes], mark: bytes, lines: Sequence[bytes]) -> None:
    for line in lines:
        pieces.append(mark)
        pieces.append(line)
        if not line.endswith(b"\n"):  # the last line, without a line end: none is added when applied
            pieces.append(b"\n" + _NO_NEWLINE)


def _range(start: int, end: int) -> bytes:
    """A hunk's line range as diff writes it: 1-based first line and count; an empty range names the line
    before it."""
    length = end - start
    if length == 1:
        return b"%d" % (start + 1)
    if length == 0:
        return b"%d,0" % start
    return b"%d,%d" % (start + 1, length)
