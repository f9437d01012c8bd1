"""What a rule is: a code, a message, examples it must catch and must not, and a check over the model."""

from __future__ import annotations

import ast
import functools
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterator, Optional, Sequence

import libcst as cst

from ..core.findings import Finding as Finding  # re-exported: what a rule yields is part of what a rule is
from ..core.fixes import Fix, ends_wanted, fixes_wanted
from ..engine.syntax.locate import node_end

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.analysis.module_analysis import Analysis
    from ..engine.discovery.custom_ops import CustomOpSite
    from ..engine.models.class_model import ClassModel, Method

DOCS_URL = "https://github.com/flake8-autograd/flake8-autograd/blob/main/docs/rules/{code}.md"


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
    # Whether the rule also reads a custom op's register_autograd, modelled as the Function PyTorch
    # generates for it (engine/models/custom_op_model.py): only rules whose contract carries over say so.
    applies_to_custom_ops: ClassVar[bool] = False

    def check(self, model: "ClassModel", analysis: "Analysis") -> Iterator[Finding]:
        raise NotImplementedError

    def fix(self, finding: Finding, model: "ClassModel", analysis: "Analysis") -> Optional[Fix]:
        """The edits that repair ``finding``, one of this rule's on ``model``; None unless they are certain.

        A rule that can repair what it reports overrides this beside its check; the check itself is
        left as it is (the findings it yields get their fix attached on the way out).
        """
        return None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "fix" in cls.__dict__ and "check" in cls.__dict__:
            setattr(cls, "check", _attaching_fixes(cls.__dict__["check"]))

    def report(
        self,
        where: "Method",
        node: Optional[cst.CSTNode] = None,
        template: Optional[str] = None,
        *,
        proven: bool = True,
        **fields: Any,
    ) -> Finding:
        """A finding at ``node`` (default: the ``def`` of ``where``) with the message filled in; ``proven``
        False for one that rests on a fact the model cannot settle (reported by default only with preview)."""
        line, column = where.position(node)
        text = (template or self.message).format(**fields)
        finding = Finding(line, column, self.code, f"{self.code} {text}", proven=proven)
        if not ends_wanted():
            return finding
        target = node if node is not None else (where.node if where.node is not None else where.statement)
        if target is None:
            target = where.owner.node
        return _ending(finding, where.owner.segment, target)

    def report_in(
        self, model: "ClassModel", node: Optional[cst.CSTNode] = None, template: Optional[str] = None, **fields: Any
    ) -> Finding:
        """A finding at ``node`` of ``model``'s own body, or at its ``class`` line for a mistake no statement holds."""
        text = (template or self.message).format(**fields)
        if node is None:
            line, column = model.site.node.lineno, model.site.node.col_offset
        else:
            line, column = model.segment.position(node)
        finding = Finding(line, column, self.code, f"{self.code} {text}")
        if not ends_wanted():
            return finding
        return _ending(finding, model.segment, node if node is not None else model.node)


def _ending(finding: Finding, segment: object, node: cst.CSTNode) -> Finding:
    """``finding`` with the end of the code it reports, ``node`` (a ``def`` or ``class``: its name), when known."""
    try:
        end = node_end(segment, node, (finding.line, finding.column))
    except Exception:  # noqa: BLE001 - an end that cannot be computed is no end; the finding still stands
        end = None
    if end is None:
        return finding
    return replace(finding, end_line=end[0], end_column=end[1])


class OpRule(Rule):
    """A rule about a ``torch.library.custom_op`` operator and what is registered for it (its fake, its
    autograd pair), read from flake8's ``ast`` tree: subclasses implement :meth:`check_op`."""

    def check(self, model: "ClassModel", analysis: "Analysis") -> Iterator[Finding]:
        return iter(())  # no Function class is an operator

    def check_op(self, op: "CustomOpSite", analysis: "Analysis") -> Iterator[Finding]:
        raise NotImplementedError

    def report_at(self, node: ast.AST, template: Optional[str] = None, **fields: Any) -> Finding:
        """A finding at ``node`` of flake8's tree (a def, a parameter, a call) with the message filled in."""
        text = (template or self.message).format(**fields)
        line, column = getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
        end_line, end_column = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or end_line is None:
            end_line = end_column = None  # the command ends a finding at a def on the def's line
        return Finding(line, column, self.code, f"{self.code} {text}", end_line=end_line, end_column=end_column)


CheckMethod = Callable[[Rule, "ClassModel", "Analysis"], Iterator[Finding]]


def _attaching_fixes(check: CheckMethod) -> CheckMethod:
    """``check`` with the rule's fix attached to each finding, when the command asks for fixes."""

    @functools.wraps(check)
    def check_and_fix(rule: Rule, model: "ClassModel", analysis: "Analysis") -> Iterator[Finding]:
        for finding in check(rule, model, analysis):
            if fixes_wanted() and finding.fix is None:
                fix = _try_fix(rule, finding, model, analysis)
                if fix is not None:
                    finding = replace(finding, fix=fix)
            yield finding

    return check_and_fix


def _try_fix(rule: Rule, finding: Finding, model: "ClassModel", analysis: "Analysis") -> Optional[Fix]:
    try:
        fix = rule.fix(finding, model, analysis)
    except Exception:  # noqa: BLE001 - a fix that cannot be computed is no fix; the finding still stands
        return None
    if fix is None or not fix.edits:
        return None
    return fix


def listed(names: Sequence[str], limit: int = 4) -> str:
    """``names`` for a message, the first few of a long list: ``a, b, c, ... (9 more)`` (a message stays
    one line however many inputs a Function takes)."""
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[: limit - 1]) + f", ... ({len(names) - limit + 1} more)"


def beside(method: "Method", reader: "Method") -> str:
    """How a message that opens with ``reader``'s name names ``method``: by its bare name when both are
    methods of one class (``forward``), else in full (a base's method, an operator's registered function)."""
    owner = reader.qualname.rpartition(".")[0]
    return method.name if owner and method.qualname == f"{owner}.{method.name}" else method.qualname
