"""Applying fixes: text edits in file coordinates, merged without overlap.

A rule that can repair what it reports attaches a :class:`Fix` to its finding (the fix is computed in
the rule's own module, beside its check). This module only knows about text: it applies the edits of
several fixes to a file, skipping any fix that overlaps one already taken (the next pass of the fix
loop sees the file again and can take it then); and it maps libcst and ``ast`` nodes to the file
positions edits are made at (:class:`NodeLocator`).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import Counter
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, cast
from weakref import WeakKeyDictionary

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider, Scope, ScopeProvider

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.syntax.source import Segment

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


def node_end(segment: object, node: cst.CSTNode, start: Position) -> Optional[Position]:
    """Where the code a finding reports ends (exclusive), the finding starting at ``start``; None when
    it cannot be told for certain.

    ``node`` is what the rule reported at: its span's end, when the span starts where the finding does.
    A ``def`` or ``class`` (a finding at the statement's first line) ends with its name, on that line.
    """
    named = isinstance(node, (cst.FunctionDef, cst.ClassDef))
    target: cst.CSTNode = node.name if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else node
    found = locator(cast("Segment", segment)) if isinstance(segment, _segment_type()) else None
    span = found.span(target) if found is not None else None
    if span is not None and (span[0][0] == start[0] if named else span[0] == start):
        return span[1] if span[1] >= start else None
    lines: Sequence[str] = getattr(segment, "lines", ())
    if named:  # the name on the finding's line, after the keyword
        name = target.value if isinstance(target, cst.Name) else ""
        text = lines[start[0] - 1] if name and 0 < start[0] <= len(lines) else ""
        at = text.find(name, start[1]) if text else -1
        return (start[0], at + len(name)) if at >= 0 else None
    try:
        code = bare_code(target)
    except Exception:  # noqa: BLE001 - a node libcst cannot generate alone: no end
        return None
    if "\n" in code or "\r" in code:
        return None
    return start[0], start[1] + len(code)


def _segment_type() -> type:
    from ..engine.syntax.source import Segment

    return Segment


# -- from libcst nodes to file positions --------------------------------------------------------------
class NodeLocator:
    """File ranges of the nodes of one parsed class, and edits at them checked against the file's text.

    Every edit made here first checks that the file holds, at the range computed, exactly the code of
    the node (or the text) it means to change: a position libcst computes differently from the file
    (form feeds in indentation, say) gives no fix rather than a wrong one.
    """

    def __init__(self, segment: "Segment") -> None:
        self.lines: Sequence[str] = segment.lines
        self._wrapper = MetadataWrapper(segment.module, unsafe_skip_copy=True)
        ranges = self._wrapper.resolve(PositionProvider)
        self._ranges: Mapping[cst.CSTNode, CodeRange] = ranges
        # Lines of the parsed text are shifted from the file's (only the class was parsed, maybe under a
        # header line); the class keyword is where both libcst and ``ast`` put the class.
        self._line_shift = segment.class_ast.lineno - ranges[segment.class_node].start.line
        self._column_shifts = segment.column_shifts
        self._scopes: Optional[Mapping[cst.CSTNode, Optional[Scope]]] = None

    def span(self, node: cst.CSTNode) -> Optional[Tuple[Position, Position]]:
        """Where ``node`` starts and ends in the file (parentheses around an expression excluded)."""
        found = self._ranges.get(node)
        if found is None:
            return None
        start_line, end_line = found.start.line + self._line_shift, found.end.line + self._line_shift
        # libcst parsed some lines without the form feeds of their indentation (and what precedes them):
        # on those lines the file's columns are further right
        shifts = self._column_shifts
        return (start_line, found.start.column + shifts.get(start_line, 0)), (
            end_line, found.end.column + shifts.get(end_line, 0)
        )

    def end_with_parentheses(self, node: cst.BaseExpression) -> Optional[Position]:
        """Where ``node`` ends with the parentheses written around it (``(a)`` ends after its ``)``); None
        when anything but blanks stands between it and them on its line (a comment, a line break)."""
        span = self.span(node)
        if span is None or self.text(*span) != bare_code(node):
            return None
        line, column = span[1]
        text = self.lines[line - 1]
        for _ in node.rpar:
            while column < len(text) and text[column] in " \t":
                column += 1
            if column >= len(text) or text[column] != ")":
                return None
            column += 1
        return line, column

    def scope_of(self, node: cst.CSTNode) -> Optional[Scope]:
        if self._scopes is None:
            self._scopes = self._wrapper.resolve(ScopeProvider)
        return self._scopes.get(node)

    def text(self, start: Position, end: Position) -> Optional[str]:
        """The file's text between two positions; None when a position is outside the file."""
        return text_between(self.lines, start, end)

    def replace(self, node: cst.CSTNode, replacement: str) -> Optional[Edit]:
        """An edit replacing ``node`` (without its parentheses), when the file holds its code there."""
        span = self.span(node)
        if span is None or self.text(*span) != bare_code(node):
            return None
        return Edit(span[0], span[1], replacement)

    def delete_line(self, node: cst.CSTNode) -> Optional[Edit]:
        """An edit removing the line that holds ``node`` and nothing else (no comment, no other statement)."""
        span = self.span(node)
        prefix = self.line_prefix(node)
        if span is None or prefix is None or self.text(*span) != bare_code(node):
            return None
        (line, _), (end_line, end_column) = span
        if end_line != line or line >= len(self.lines) or self.lines[line - 1][end_column:].strip(" \t\r\n"):
            return None
        return Edit((line, 0), (line + 1, 0), "")

    def line_prefix(self, node: cst.CSTNode) -> Optional[str]:
        """The whitespace before ``node`` on its line; None when anything else precedes it."""
        span = self.span(node)
        if span is None:
            return None
        (line, column), _ = span
        if not 0 < line <= len(self.lines):
            return None
        prefix = self.lines[line - 1][:column]
        return prefix if prefix.strip(" \t") == "" else None


_LOCATORS: "WeakKeyDictionary[Segment, Optional[NodeLocator]]" = WeakKeyDictionary()


def locator(segment: "Segment") -> Optional[NodeLocator]:
    """The locator of a class, built once (None when libcst's passes fail on it, e.g. very deep code)."""
    if segment in _LOCATORS:
        return _LOCATORS[segment]
    try:
        found: Optional[NodeLocator] = NodeLocator(segment)
    except Exception:  # noqa: BLE001 - RecursionError on deep code, or libcst's KeyError for it: no fixes
        found = None
    _LOCATORS[segment] = found
    return found


_EMPTY_MODULE = cst.Module(body=[])


def bare_code(node: cst.CSTNode) -> str:
    """The code of ``node`` without the parentheses around it (libcst's positions leave them out)."""
    if isinstance(node, cst.BaseExpression) and (node.lpar or node.rpar):
        node = node.with_changes(lpar=(), rpar=())
    return _EMPTY_MODULE.code_for_node(node)


def text_between(lines: Sequence[str], start: Position, end: Position) -> Optional[str]:
    (first, first_column), (last, last_column) = start, end
    if not (0 < first <= last <= len(lines)):
        return None
    if first == last:
        return lines[first - 1][first_column:last_column]
    parts = [lines[first - 1][first_column:], *lines[first:last - 1], lines[last - 1][:last_column]]
    return "".join(parts)


def ast_span(node: ast.expr, lines: Sequence[str]) -> Optional[Tuple[Position, Position]]:
    """Where an ``ast`` expression starts and ends, in characters (``ast`` counts UTF-8 bytes)."""
    end_line, end_offset = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
    if end_line is None or end_offset is None or not (0 < node.lineno <= end_line <= len(lines)):
        return None
    return (
        (node.lineno, _characters(lines[node.lineno - 1], node.col_offset)),
        (end_line, _characters(lines[end_line - 1], end_offset)),
    )


def _characters(line: str, byte_offset: int) -> int:
    return len(line.encode("utf-8", "surrogatepass")[:byte_offset].decode("utf-8", "ignore"))
