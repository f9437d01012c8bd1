"""What a rule is: a code, a message, examples it must catch and must not, and a check over the model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, Optional, Sequence

import libcst as cst

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.analysis import Analysis
    from ..engine.model import ClassModel, Method

DOCS_URL = "https://github.com/flake8-autograd/flake8-autograd/blob/main/docs/rules/{code}.md"


@dataclass(frozen=True)
class Finding:
    line: int  # 1-based
    column: int  # 0-based, as flake8 expects from plugins
    code: str
    message: str  # starts with the code

    @property
    def sort_key(self) -> "tuple[int, int, str]":
        return (self.line, self.column, self.code)


class Rule:
    """Subclasses set the class attributes and implement :meth:`check`.

    ``invalid`` examples must each produce this rule's code at least once; ``valid`` examples must
    produce none. Both are run as tests and shown in the docs.
    """

    code: ClassVar[str]
    name: ClassVar[str]  # a few words, for tables
    message: ClassVar[str]  # str.format template; the finding's text after the code
    invalid: ClassVar[Sequence[str]] = ()
    valid: ClassVar[Sequence[str]] = ()

    def check(self, model: "ClassModel", analysis: "Analysis") -> Iterator[Finding]:
        raise NotImplementedError

    def report(
        self, where: "Method", node: Optional[cst.CSTNode] = None, template: Optional[str] = None, **fields: Any
    ) -> Finding:
        """A finding at ``node`` (default: the ``def`` of ``where``) with the message filled in."""
        line, column = where.position(node)
        text = (template or self.message).format(**fields)
        return Finding(line, column, self.code, f"{self.code} {text}")

    def report_in(
        self, model: "ClassModel", node: Optional[cst.CSTNode] = None, template: Optional[str] = None, **fields: Any
    ) -> Finding:
        """A finding at ``node`` of ``model``'s own body, or at its ``class`` line for a mistake no statement holds."""
        text = (template or self.message).format(**fields)
        if node is None:
            line, column = model.site.node.lineno, model.site.node.col_offset
        else:
            line, column = model.segment.position(node)
        return Finding(line, column, self.code, f"{self.code} {text}")
