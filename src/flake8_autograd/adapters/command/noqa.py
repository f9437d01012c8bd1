"""``# noqa`` comments, read exactly as flake8 reads them, so both tools silence the same findings.

flake8 searches for the comment in the whole logical line that holds the finding: every physical
line from the first token of the statement to its end (a bracketed expression, a backslash
continuation or a multi-line string all count as one line). A file holding a line that *starts*
with ``# flake8: noqa`` is skipped whole, even when codes follow (``# flake8: noqa: AGF003``).
"""

from __future__ import annotations

import re
import tokenize
from typing import Dict, Iterator, Optional, Sequence

# The two patterns flake8 uses (flake8.defaults), so that edge cases match as well.
_INLINE = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
_FILE = re.compile(r"\s*# flake8[:=]\s*noqa", re.IGNORECASE)
_CODE_SEPARATOR = re.compile(r"[,\s]")


def file_is_exempt(lines: Sequence[str]) -> bool:
    """Whether a line starts with ``# flake8: noqa`` (after whitespace), which skips the file."""
    return any(_FILE.match(line) for line in lines)


class InlineNoqa:
    """Which findings the ``# noqa`` comments of one file silence."""

    def __init__(self, lines: Sequence[str]) -> None:
        self._lines = lines
        self._logical: Optional[Dict[int, str]] = None

    def silences(self, line_number: int, code: str) -> bool:
        match = _INLINE.search(self._logical_line(line_number))
        if match is None:
            return False
        listed = match.group("codes")
        if listed is None:
            return True  # a bare ``# noqa``
        codes = tuple(code for code in _CODE_SEPARATOR.split(listed) if code)
        return code.startswith(codes)  # flake8 compares case-sensitively: ``# noqa:agf003`` silences nothing

    def _logical_line(self, line_number: int) -> str:
        if self._logical is None:  # tokenized only for files that have findings
            self._logical = _logical_lines(self._lines)
        text = self._logical.get(line_number)
        if text is None:  # the file does not tokenize: flake8 falls back to the physical line
            text = self._lines[line_number - 1] if 0 < line_number <= len(self._lines) else ""
        return text


def _logical_lines(lines: Sequence[str]) -> Dict[int, str]:
    """Each line number mapped to the text of all physical lines of its logical line."""
    mapping: Dict[int, str] = {}
    first = last = 0
    try:
        for token in tokenize.generate_tokens(_reader(lines).__next__):
            if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            first = min(first, token.start[0]) if first else token.start[0]
            last = max(last, token.end[0])
            if token.type in (tokenize.NL, tokenize.NEWLINE):
                joined = "".join(lines[first - 1:last])
                mapping.update(dict.fromkeys(range(first, last + 1), joined))
                first = last = 0
    except (tokenize.TokenError, SyntaxError):
        return {}
    return mapping


def _reader(lines: Sequence[str]) -> Iterator[str]:
    yield from lines
    while True:
        yield ""
