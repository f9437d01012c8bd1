"""From libcst and ``ast`` nodes to the file positions findings and fix edits are made at.

Only the class is parsed with libcst (engine/syntax/source.py), maybe shifted from the file: a
:class:`NodeLocator` maps its nodes back, and checks that the file holds the code an edit means to change.
"""

from __future__ import annotations

import ast
from typing import Mapping, Optional, Sequence, Tuple
from weakref import WeakKeyDictionary

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider, Scope, ScopeProvider

from ...core.fixes import Edit, Position, text_between
from .source import Segment


def node_end(segment: object, node: cst.CSTNode, start: Position) -> Optional[Position]:
    """Where the code a finding reports ends (exclusive), the finding starting at ``start``; None when
    it cannot be told for certain.

    ``node`` is what the rule reported at: its span's end, when the span starts where the finding does.
    A ``def`` or ``class`` (a finding at the statement's first line) ends with its name, on that line.
    """
    named = isinstance(node, (cst.FunctionDef, cst.ClassDef))
    target: cst.CSTNode = node.name if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else node
    found = locator(segment) if isinstance(segment, Segment) else None
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


# -- from libcst nodes to file positions --------------------------------------------------------------
class NodeLocator:
    """File ranges of the nodes of one parsed class, and edits at them checked against the file's text.

    Every edit made here first checks that the file holds, at the range computed, exactly the code of
    the node (or the text) it means to change: a position libcst computes differently from the file
    (form feeds in indentation, say) gives no fix rather than a wrong one.
    """

    def __init__(self, segment: Segment) -> None:
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


def locator(segment: Segment) -> Optional[NodeLocator]:
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
