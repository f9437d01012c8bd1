"""Parsing one class with libcst, and mapping its nodes back to file positions.

Only the lines of a Function class are parsed, not the whole file: on ordinary modules that is a
small fraction of the text. A class nested in a function or another class is indented; it is parsed
under a one-line ``if 1:`` header, which keeps its own indentation and columns unchanged.
Positions are computed lazily, only for classes that have something to report, because libcst's
position pass costs more than the parse itself.
"""

from __future__ import annotations

import ast
from typing import Dict, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

_INDENTED_HEADER = "if 1:\n"


class Segment:
    """The source of one class statement (decorators included), parsed with libcst."""

    def __init__(
        self, module: cst.Module, class_node: cst.ClassDef, first_line: int, header_lines: int, text: str
    ) -> None:
        self.module = module
        self.text = text
        self.class_node = class_node
        self._line_offset = first_line - 1 - header_lines
        self._positions: Optional[Dict[cst.CSTNode, CodeRange]] = None

    def position(self, node: cst.CSTNode) -> Tuple[int, int]:
        """(1-based line, 0-based column) of ``node`` in the file."""
        if self._positions is None:
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._positions = dict(wrapper.resolve(PositionProvider))
        code_range = self._positions.get(node)
        if code_range is None:
            return self._line_offset + 1, 0
        return code_range.start.line + self._line_offset, code_range.start.column


def parse_class(lines: Sequence[str], node: ast.ClassDef) -> Optional[Segment]:
    """Parse the class ``node`` from the file's ``lines``; None when libcst cannot parse it."""
    first_line = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
    last_line = getattr(node, "end_lineno", None)
    if last_line is None:  # pragma: no cover - Python < 3.8 has no end positions
        return None
    text = "".join(lines[first_line - 1:last_line])
    if text.startswith("\ufeff"):
        text = text[1:]
    indented = node.col_offset > 0
    if indented:
        text = _INDENTED_HEADER + text
    if not text.endswith(("\n", "\r")):
        text += "\n"
    try:
        module = cst.parse_module(text)
    except Exception:  # libcst rejects syntax it does not know (newer grammar): stay silent
        return None
    statement: Optional[cst.CSTNode] = module.body[0] if module.body else None
    if indented and isinstance(statement, cst.If) and isinstance(statement.body, cst.IndentedBlock):
        statement = statement.body.body[0] if statement.body.body else None
    if not isinstance(statement, cst.ClassDef):
        return None
    return Segment(module, statement, first_line, 1 if indented else 0, text)
