"""Fixes as text edits in file coordinates, and applying them merged without overlap.

A rule that can repair what it reports attaches a :class:`Fix` to its finding (the fix is computed in
the rule's own module, beside its check). This module only knows about text: it applies the edits of
several fixes to a file, skipping any fix that overlaps one already taken (the next pass of the fix
loop sees the file again and can take it then). Where an edit goes in the file, from a libcst or
``ast`` node, is engine/syntax/locate.py's.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

Position = Tuple[int, int]  # (1-based line, 0-based column in characters), as findings report them

_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Edit:
    """Replace the text from ``start`` up to (not including) ``end`` with ``replacement``."""

    start: Position
    end: Position
    replacement: str

    @classmethod
    def insert(cls, at: Position, text: str) -> "Edit":
        return cls(at, at, text)


@dataclass(frozen=True)
class Fix:
    """The edits that together repair one finding; applied all or none.

    A fix is *safe* when it provably keeps what working code computes (``--fix`` applies it); otherwise
    ``unsafe_because`` says what it may change, and only ``--unsafe-fixes`` applies it.
    """

    edits: Tuple[Edit, ...]
    unsafe_because: Optional[str] = None

    @property
    def safe(self) -> bool:
        return self.unsafe_because is None

    @property
    def span(self) -> Tuple[Position, Position]:
        return min(edit.start for edit in self.edits), max(edit.end for edit in self.edits)


def split_lines(text: str) -> List[str]:
    """The file's lines with their own line endings (``\\r\\n``, ``\\r`` or ``\\n``) kept.

    Unlike ``str.splitlines`` this does not split at form feeds and other characters Python's
    tokenizer treats as ordinary whitespace.
    """
    lines: List[str] = []
    start = 0
    for match in _LINE_END.finditer(text):
        lines.append(text[start:match.end()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def _offsets(lines: Sequence[str]) -> List[int]:
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    return offsets


def _newline_of(lines: Sequence[str], line: int) -> str:
    """The line ending of the edited line (1-based), else of the nearest line above it, else ``\\n``.

    A file may mix line endings; inserted lines take their neighbours', not the file's first one.
    """
    for index in range(min(line, len(lines)) - 1, -1, -1):
        match = _LINE_END.search(lines[index])
        if match:
            return match.group()
    return _newline_of(lines, len(lines)) if line < len(lines) else "\n"


class _TakenEdits:
    """The edits of the fixes taken so far, kept sorted by start, none overlapping another.

    Because the taken edits never overlap, they are sorted by their ends too: whether a new edit
    overlaps one is answered by its neighbours alone (a binary search, not a scan of every fix).
    """

    def __init__(self) -> None:
        self.starts: List[Position] = []
        self.ends: List[Position] = []

    def clashes(self, edit: Edit) -> bool:
        index = bisect.bisect_left(self.starts, edit.start)
        if index < len(self.starts):
            following = self.starts[index]
            # one that starts at the same point (two insertions there: their order would be a guess),
            # or inside this edit
            if following == edit.start or following < edit.end:
                return True
        return index > 0 and self.ends[index - 1] > edit.start  # the one before reaches into this edit

    def add(self, edit: Edit) -> None:
        index = bisect.bisect_left(self.starts, edit.start)
        self.starts.insert(index, edit.start)
        self.ends.insert(index, edit.end)


def _self_overlapping(fix: Fix) -> bool:
    edits = sorted(fix.edits, key=lambda edit: (edit.start, edit.end))
    return any(later.start < earlier.end for earlier, later in zip(edits, edits[1:]))


def apply_fixes(text: str, fixes: Iterable[Fix]) -> Tuple[str, int]:
    """``text`` with every fix applied that does not overlap an earlier one; and how many findings that fixed.

    One fix may be attached to several findings (one edit that repairs them together, such as one
    ``save_for_backward`` call for several tensors): it is applied once and counts for each of them.
    """
    findings_per_fix = Counter(fix for fix in fixes if fix.edits)
    fixed, taken = apply_fixes_taken(text, findings_per_fix)
    return fixed, sum(findings_per_fix[fix] for fix in taken)


def apply_fixes_taken(text: str, fixes: Iterable[Fix]) -> Tuple[str, List[Fix]]:
    """``text`` with every fix applied that does not overlap an earlier one, and the fixes applied."""
    taken = _TakenEdits()
    chosen: List[Edit] = []
    applied: List[Fix] = []
    for fix in sorted(dict.fromkeys(fix for fix in fixes if fix.edits), key=lambda fix: fix.span):
        if _self_overlapping(fix) or any(taken.clashes(edit) for edit in fix.edits):
            continue  # the next pass sees the file again and can take it then
        for edit in fix.edits:
            taken.add(edit)
        chosen.extend(fix.edits)
        applied.append(fix)
    if not chosen:
        return text, []
    lines = split_lines(text)
    offsets = _offsets(lines)

    def offset(position: Position) -> int:
        line, column = position
        return offsets[line - 1] + column

    pieces: List[str] = []
    copied_up_to = 0
    # one pass over the text: a stable sort keeps a fix's own edits in their order
    for edit in sorted(chosen, key=lambda edit: (edit.start, edit.end)):
        start = offset(edit.start)
        pieces.append(text[copied_up_to:start])
        # keep the file's own line endings: those of the line edited
        pieces.append(edit.replacement.replace("\n", _newline_of(lines, edit.start[0])))
        copied_up_to = offset(edit.end)
    pieces.append(text[copied_up_to:])
    return "".join(pieces), applied


# -- computing fixes: wanted only by the command ------------------------------------------------------
# flake8 has no use for fixes, and finding where a node ends costs a libcst position pass over the whole
# class: rules attach fixes only while this flag is set (the command sets it around each file).
_FIXES_WANTED: ContextVar[bool] = ContextVar("flake8_autograd_fixes_wanted", default=False)


def fixes_wanted() -> bool:
    return _FIXES_WANTED.get()


@contextmanager
def computing_fixes() -> Iterator[None]:
    """Within this block, rules attach a :class:`Fix` to each finding they can repair for certain."""
    token = _FIXES_WANTED.set(True)
    try:
        yield
    finally:
        _FIXES_WANTED.reset(token)


# -- where a finding ends: wanted only by the command --------------------------------------------------
# flake8 takes a start alone; the command's JSON and SARIF show where the reported code ends too, which
# costs the same position pass over the class as a fix does.
_ENDS_WANTED: ContextVar[bool] = ContextVar("flake8_autograd_ends_wanted", default=False)


def ends_wanted() -> bool:
    return _ENDS_WANTED.get()


@contextmanager
def computing_ends() -> Iterator[None]:
    """Within this block, rules give each finding reported at a node the end of that node's span."""
    token = _ENDS_WANTED.set(True)
    try:
        yield
    finally:
        _ENDS_WANTED.reset(token)


def text_between(lines: Sequence[str], start: Position, end: Position) -> Optional[str]:
    (first, first_column), (last, last_column) = start, end
    if not (0 < first <= last <= len(lines)):
        return None
    if first == last:
        return lines[first - 1][first_column:last_column]
    parts = [lines[first - 1][first_column:], *lines[first:last - 1], lines[last - 1][:last_column]]
    return "".join(parts)
