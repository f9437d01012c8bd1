"""Applying fixes: text edits in file coordinates, merged without overlap.

A rule that can repair what it reports attaches a :class:`Fix` to its finding (the fix is computed in
the rule's own module, beside its check). This module only knows about text: it applies the edits of
several fixes to a file, skipping any fix that overlaps one already taken (the next pass of the fix
loop sees the file again and can take it then).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, List, Sequence, Tuple

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
    """The edits that together repair one finding; applied all or none."""

    edits: Tuple[Edit, ...]

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


def _newline_of(lines: Sequence[str]) -> str:
    for line in lines:
        match = _LINE_END.search(line)
        if match:
            return match.group()
    return "\n"


def _overlaps(fix: Fix, taken: Sequence[Fix]) -> bool:
    for other in taken:
        for edit in fix.edits:
            for kept in other.edits:
                if edit.start < kept.end and kept.start < edit.end:
                    return True
                if edit.start == kept.start:  # two insertions at one point: order would be a guess
                    return True
    return False


def apply_fixes(text: str, fixes: Iterable[Fix]) -> Tuple[str, int]:
    """``text`` with every fix applied that does not overlap an earlier one; and how many were applied."""
    taken: List[Fix] = []
    for fix in sorted(fixes, key=lambda fix: fix.span):
        if fix.edits and not _overlaps(fix, taken):
            taken.append(fix)
    if not taken:
        return text, 0
    lines = split_lines(text)
    offsets = _offsets(lines)
    newline = _newline_of(lines)

    def offset(position: Position) -> int:
        line, column = position
        return offsets[line - 1] + column

    edits = sorted((edit for fix in taken for edit in fix.edits), key=lambda edit: edit.start, reverse=True)
    for edit in edits:
        replacement = edit.replacement.replace("\n", newline)  # keep the file's own line endings
        text = text[:offset(edit.start)] + replacement + text[offset(edit.end):]
    return text, len(taken)
