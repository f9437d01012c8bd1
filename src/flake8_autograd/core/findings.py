"""What the engine hands every adapter: findings, each a code and message at a line and column.

Kept apart from the rules so that the engine's entry point and the adapters can name a finding
without importing libcst, which the rules need.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .fixes import Fix

# The code of a finding that reports a failure of the plugin itself, never of the code checked.
INTERNAL_ERROR = "AGF000"


@dataclass(frozen=True)
class Finding:
    line: int  # 1-based
    column: int  # 0-based, as flake8 expects from plugins
    code: str
    message: str  # starts with the code
    # The edits that repair this finding, when the rule is certain of them (only while fixes are wanted).
    fix: Optional[Fix] = field(default=None, compare=False, repr=False)
    # Where the reported code ends (exclusive, same units as line and column), when the rule knows: only
    # the command asks for it (flake8 has no end positions); neither compared nor sorted on.
    end_line: Optional[int] = field(default=None, compare=False, repr=False)
    end_column: Optional[int] = field(default=None, compare=False, repr=False)
    # False when the finding rests on a fact the model cannot settle (a path it cannot prove runs, a
    # value it cannot prove is a tensor): a code on by default reports it only with preview on.
    proven: bool = field(default=True, compare=False, repr=False)

    @property
    def sort_key(self) -> "tuple[int, int, str]":
        return (self.line, self.column, self.code)


def internal_error(line: int, column: int, where: str, error: Exception) -> Finding:
    """An exception the engine caught while checking ``where``, as a finding instead of a crash."""
    message = f"{INTERNAL_ERROR} internal error while checking {where}: {type(error).__name__}; please report"
    return Finding(line, column, INTERNAL_ERROR, message)


def too_deep(line: int, column: int, where: str, limit: int) -> Finding:
    """A class the engine does not parse because its code nests deeper than ``limit`` levels: said at the
    class, so that a class is never skipped in silence."""
    message = (
        f"{INTERNAL_ERROR} {where} is nested too deeply to check (more than {limit} levels, such as a chain of "
        f"{limit} elif branches); none of its findings are reported"
    )
    return Finding(line, column, INTERNAL_ERROR, message)
