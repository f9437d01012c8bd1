"""Parsing one class with libcst, and mapping its nodes back to file positions.

Only the lines of a Function class are parsed, not the whole file: on ordinary modules that is a
small fraction of the text. A class nested in a function or another class is indented; it is parsed
under a one-line ``if 1:`` header, which keeps its own indentation and columns unchanged.
Positions are computed lazily, only for classes that have something to report, because libcst's
position pass costs more than the parse itself. Most findings sit in a method: such a node is placed
by regenerating that method alone, from its ``def`` (whose position flake8's ``ast`` gives), and the
generation stops as soon as the node is placed. Only nodes outside any method pay for the pass over
the whole class.

Deeply nested code needs care. libcst's native parser overflows the C stack (a segfault that takes
the whole flake8 run down) a few thousand levels deep, and its parse time grows faster than the
depth: a class nested deeper than :data:`MAX_SYNTAX_DEPTH` is not parsed at all (the checker reports
that as AGF000 at the class). libcst's position
pass recurses in Python once per level and fails a few hundred levels deep; there, positions come
from flake8's ``ast`` tree instead, statement by statement.

A form feed in the indentation of a line that starts a statement (or a decorator, ``else:``...) resets
Python's count of the indentation, but libcst's tokenizer counts it as a character: on a block's first
statement the parse fails ("no matching outer block for dedent"), elsewhere the form feed is dropped
from the code libcst gives back. libcst is given such lines without the form feed and whatever precedes
it (what Python ignores), and the columns on those lines are shifted back to the file's.
"""

from __future__ import annotations

import ast
import io
import re
import unicodedata
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Type, TypeVar, Union, cast

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from .walk import children

_INDENTED_HEADER = "if 1:\n"

# Deeper than this (as libcst nests it), a class is skipped, with an AGF000 that says so: far from the C
# stack limit of the native parser, and still parsed in well under a second.
MAX_SYNTAX_DEPTH = 1_000

Position = Tuple[int, int]
# How far the passes over one method have gone: one stopped at the node asked for, one to the end (or one
# whose positions are not the file's: nothing is placed), or one to the end that failed (each node is then
# placed by a pass that stops at it).
_STOPPED, _WHOLE, _FAILED = "stopped", "whole", "failed"


class Segment:
    """The source of one class statement (decorators included), parsed with libcst."""

    def __init__(
        self,
        module: cst.Module,
        class_node: cst.ClassDef,
        first_line: int,
        header_lines: int,
        text: str,
        class_ast: ast.ClassDef,
        lines: Sequence[str],
        column_shifts: Optional[Dict[int, int]] = None,
    ) -> None:
        self.module = module
        self.text = text  # as given to libcst
        # File line -> characters of its indentation left out of ``text`` (form feeds and what precedes them).
        self.column_shifts: Dict[int, int] = column_shifts or {}
        self.class_node = class_node
        self.class_ast = class_ast  # flake8's tree of the class: positions when libcst's fail
        self.lines = lines
        self._line_offset = first_line - 1 - header_lines
        self._positions: Optional[Dict[cst.CSTNode, Position]] = None
        self._defs: Optional[Dict[cst.CSTNode, Position]] = None
        self._placed: Dict[cst.CSTNode, Position] = {}
        self._passes: Dict[cst.FunctionDef, str] = {}  # how far the passes over each method have gone

    def position(self, node: cst.CSTNode, method: Optional[cst.FunctionDef] = None) -> Position:
        """(1-based line, 0-based column) of ``node`` in the file.

        ``method``, a ``def`` of this class's body said to hold ``node``, lets the node be placed by
        regenerating that method alone; the answer is the same as the whole-class pass gives.
        """
        if self._positions is None and method is not None:
            found = self._place_in_method(node, method)
            if found is not None:
                return found
        if self._positions is None:
            self._positions = self._resolve()
        found = self._positions.get(node)
        if found is None:
            return self._line_offset + 1, 0
        return found

    def _place_in_method(self, node: cst.CSTNode, method: cst.FunctionDef) -> Optional[Position]:
        """``node``'s position from a pass over ``method`` alone; None when that pass cannot tell.

        Every pass keeps the position of each node it generated whole. The first pass over a method stops
        once ``node`` is placed; a method asked again, for a node that pass did not reach, is generated
        whole, once: many findings in one method (a return each) cost two passes, not one each.
        """
        anchor = self._def_positions().get(method)
        if anchor is None:
            return None  # not a def of this class's own body
        found = self._placed.get(node)
        if found is not None:
            return found
        passes = self._passes.get(method)
        if passes == _WHOLE:
            return None  # not in this method (or the method's positions are not the file's)
        if passes == _STOPPED:
            went = self._generate(None, method, anchor)
            self._passes[method] = _FAILED if went == _FAILED else _WHOLE
            if went != _FAILED:
                return self._placed.get(node)
        # The first pass over the method, or its whole pass fails (a RecursionError far down): stop at the node.
        went = self._generate(node, method, anchor)
        if passes is None:
            self._passes[method] = _STOPPED if went in (_STOPPED, _FAILED) else _WHOLE
        return self._placed.get(node)

    def _generate(self, node: Optional[cst.CSTNode], method: cst.FunctionDef, anchor: Position) -> Optional[str]:
        """One pass over ``method``, stopping once ``node`` is placed (``None``: going to the end); the
        position of every node generated whole, and of ``node``, goes to ``_placed``. How far it went
        (:data:`_STOPPED` at the node, :data:`_WHOLE` to the end, :data:`_FAILED`), or None when its
        positions are not the file's."""
        state = _PlacingState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            provider=PositionProvider(),
            indent_tokens=self._body_indent(),
        )
        state.target, state.method, state.ranges = node, method, {}
        went = _WHOLE
        try:
            method._codegen(state)
        except _Placed:
            went = _STOPPED
        except Exception:  # noqa: BLE001 - RecursionError some hundred levels deep: the whole-class pass decides
            went = _FAILED
        start = state.def_start
        shifts = self.column_shifts
        if start is None or start.column + shifts.get(anchor[0], 0) != anchor[1]:
            # libcst did not give back the text it parsed: its positions, which the findings have always
            # used, come from its pass.
            return None
        offset = anchor[0] - start.line
        for each, code_range in state.ranges.items():
            line = offset + code_range.start.line
            self._placed.setdefault(each, (line, code_range.start.column + shifts.get(line, 0)))
        target = state.target_start
        if node is not None and target is not None:
            line = offset + target.line
            self._placed[node] = (line, target.column + shifts.get(line, 0))
        return went

    def _def_positions(self) -> Dict[cst.CSTNode, Position]:
        """Each ``def`` of the class body at the position flake8's ``ast`` gives its keyword.

        libcst places a def at that keyword (``def``, or ``async``) too: this anchors a pass that
        starts at the method, wherever the method is in the class.
        """
        if self._defs is None:
            self._defs = {}
            body = self.class_node.body
            statements = body.body if isinstance(body, cst.IndentedBlock) else ()
            defs = [item for item in statements if isinstance(item, cst.FunctionDef)]
            kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
            ast_defs = [item for item in self.class_ast.body if isinstance(item, kinds)]
            if len(defs) == len(ast_defs):  # always, for the same text; else no method is placed on its own
                for node, ast_def in zip(defs, ast_defs):
                    self._defs[node] = self._ast_position(ast_def)
        return self._defs

    def _body_indent(self) -> List[str]:
        """The indentation libcst's code generation has pushed when it reaches a statement of the class body."""
        indents: List[str] = []
        blocks: List[cst.BaseSuite] = [self.class_node.body]
        wrapper = self.module.body[0] if self.module.body else None
        if wrapper is not self.class_node and isinstance(wrapper, cst.If):
            blocks.insert(0, wrapper.body)  # the ``if 1:`` header of an indented class
        for block in blocks:
            if isinstance(block, cst.IndentedBlock):
                indents.append(self.module.default_indent if block.indent is None else block.indent)
        return indents

    def _resolve(self) -> Dict[cst.CSTNode, Position]:
        try:
            ranges = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        except Exception:  # noqa: BLE001 - RecursionError some hundred levels deep (or the KeyError libcst makes of it)
            return self._statement_positions()
        offset = self._line_offset
        positions = {
            node: (code_range.start.line + offset, code_range.start.column) for node, code_range in ranges.items()
        }
        if self.column_shifts:
            shifts = self.column_shifts
            positions = {node: (line, column + shifts.get(line, 0)) for node, (line, column) in positions.items()}
        return positions

    def _statement_positions(self) -> Dict[cst.CSTNode, Position]:
        """Each statement at the position ``ast`` gives it; every other node at its statement's."""
        statements: Dict[cst.CSTNode, Position] = {self.class_node: self._ast_position(self.class_ast)}
        pending: List[Tuple[cst.CSTNode, ast.AST]] = [(self.class_node, self.class_ast)]
        while pending:
            statement, node = pending.pop()
            for suite, body in _blocks(statement, node):
                units = list(_units(suite))
                if len(units) != len(body):
                    continue  # the two trees disagree here: leave this block to the enclosing statement
                for (unit, line), ast_statement in zip(units, body):
                    if not _same_kind(unit, ast_statement):
                        break
                    position = self._ast_position(ast_statement)
                    statements[unit] = position
                    if line is not None:
                        statements.setdefault(line, position)  # a line of statements starts at its first
                    pending.append((unit, ast_statement))
        positions: Dict[cst.CSTNode, Position] = {}
        stack: List[Tuple[cst.CSTNode, Position]] = [(self.class_node, statements[self.class_node])]
        while stack:  # every node takes the position of the nearest statement around it
            current, inherited = stack.pop()
            position = statements.get(current, inherited)
            positions[current] = position
            stack.extend((child, position) for child in children(current))
        return positions

    def _ast_position(self, node: ast.AST) -> Position:
        line: int = getattr(node, "lineno", 1)
        offset: int = getattr(node, "col_offset", 0)  # in UTF-8 bytes; libcst counts characters
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return line, len(text.encode("utf-8", "surrogatepass")[:offset].decode("utf-8", "ignore"))


class _Placed(Exception):
    """Raised out of code generation once the node asked for is placed: the rest is not generated."""


class _PlacingState(PositionProvidingCodegenState):
    """libcst's position-recording code generation, run over one method, that stops once it knows
    where ``target`` starts and where the method's own ``def`` starts (its anchor in the file).

    A node's start is libcst's: where its syntactic position opens (an ``IndentedBlock``'s is its first
    statement's), else where its generation begins. Ranges are recorded only for nodes fully
    generated, since enclosing nodes read them (``start_node``, ``end_node``) when they close.
    """

    # Plain class attributes, not dataclass fields: set on each instance after it is made.
    target: Optional[cst.CSTNode] = None
    method: Optional[cst.CSTNode] = None
    target_start: Optional[CodePosition] = None
    def_start: Optional[CodePosition] = None
    ranges: Dict[cst.CSTNode, CodeRange]  # what libcst keeps in its provider; only these two methods use it

    def _starts(self, node: cst.CSTNode, start: CodePosition) -> None:
        if node is self.method:
            self.def_start = start
        if node is self.target:
            self.target_start = start
        if self.target_start is not None and self.def_start is not None:
            raise _Placed

    @contextmanager
    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: Optional[cst.CSTNode] = None,
        end_node: Optional[cst.CSTNode] = None,
    ) -> Iterator[None]:
        computed = self.ranges
        if start_node is None:
            self._starts(node, CodePosition(self.line, self.column))
        elif node is self.target:
            self.target = start_node  # the block starts where its first statement does
        start = CodePosition(self.line, self.column)
        yield  # no ``finally``: once placed, nothing more is recorded (an enclosing range may lack its end)
        start = computed[start_node].start if start_node is not None else start
        end = computed[end_node].end if end_node is not None else CodePosition(self.line, self.column)
        computed[node] = CodeRange(start, end)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        computed = self.ranges
        if node not in computed:  # no syntactic position recorded: the node starts where it began
            computed[node] = CodeRange(start, CodePosition(self.line, self.column))
            self._starts(node, start)


# Compound statements of libcst and the ast statements they correspond to.
_COMPOUND: Dict[Type[cst.CSTNode], Tuple[Type[ast.AST], ...]] = {
    cst.ClassDef: (ast.ClassDef,),
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.If: (ast.If,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.Try: (ast.Try,),
}
for _cst_name, _ast_name in (("TryStar", "TryStar"), ("Match", "Match")):  # newer syntax, newer versions only
    if hasattr(cst, _cst_name) and hasattr(ast, _ast_name):
        _COMPOUND[getattr(cst, _cst_name)] = (getattr(ast, _ast_name),)


def _same_kind(statement: cst.CSTNode, node: ast.AST) -> bool:
    expected = _COMPOUND.get(type(statement))
    if expected is None:  # a small statement: any simple ast statement
        return not any(isinstance(node, kinds) for kinds in _COMPOUND.values())
    return isinstance(node, expected)


Block = Tuple[Union[cst.BaseSuite, List[cst.CSTNode]], List[ast.stmt]]


def _blocks(statement: cst.CSTNode, node: ast.AST) -> Iterator[Block]:
    """The statement blocks of a compound statement, each with the ast statements it holds."""
    for name in ("body", "orelse", "finalbody"):
        suite = getattr(statement, name, None)
        body = getattr(node, name, None)
        if suite is None or not isinstance(body, list):
            continue
        if isinstance(suite, cst.If):  # elif: the orelse of ast holds one If
            yield [suite], body
        elif isinstance(suite, (cst.Else, cst.Finally)):
            yield suite.body, body
        elif isinstance(suite, cst.BaseSuite):
            yield suite, body
    for name in ("handlers", "cases"):
        clauses = getattr(statement, name, ())
        ast_clauses = getattr(node, name, None) or []
        if len(clauses) == len(ast_clauses):
            for clause, ast_clause in zip(clauses, ast_clauses):
                yield clause.body, ast_clause.body


def _units(suite: Union[cst.BaseSuite, List[cst.CSTNode]]) -> Iterator[Tuple[cst.CSTNode, Optional[cst.CSTNode]]]:
    """The statements of a block as ast counts them: each small statement of a line on its own.

    Each comes with the line of small statements it opens, if any.
    """
    items: Sequence[cst.CSTNode] = suite if isinstance(suite, list) else getattr(suite, "body", ())
    for item in items:
        if isinstance(item, cst.SimpleStatementLine):
            for index, small in enumerate(item.body):
                yield small, item if index == 0 else None
        else:
            yield item, None


# A word with a character outside ASCII: where an identifier Python normalizes may be.
_NON_ASCII_WORD = re.compile(r"\w*[^\x00-\x7f]\w*")

ModuleT = TypeVar("ModuleT", bound=cst.CSTNode)


def normalized_names(tree: ModuleT, text: str) -> ModuleT:
    """``tree`` (parsed from ``text``) with its identifiers NFKC-normalized, as Python reads them (``ｃｔｘ``
    is ``ctx``, as in flake8's ``ast`` tree): libcst keeps them as written, and the rules compare names.

    Only a name whose normal form is as long is changed, so that every column stays where it is in the
    file (fullwidth and mathematical letters are; a ligature such as ``ﬁ`` is not, and stays as written).
    A fix that regenerates such a name does not match the file's text and is withheld. The tree is
    walked only when ``text`` holds a word that is not normalized already (almost never).
    """
    if text.isascii() or all(
        unicodedata.is_normalized("NFKC", word) for word in _NON_ASCII_WORD.findall(text)
    ):
        return tree
    return cast(ModuleT, tree.visit(_NormalizedNames()))


class _NormalizedNames(cst.CSTTransformer):
    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        value = updated_node.value
        if value.isascii():
            return updated_node
        normal = unicodedata.normalize("NFKC", value)
        if normal == value or len(normal) != len(value):
            return updated_node
        return updated_node.with_changes(value=normal)


def syntax_depth_exceeds(root: ast.AST, limit: int = MAX_SYNTAX_DEPTH) -> bool:
    """Whether libcst would nest ``root`` deeper than ``limit``.

    Where ast keeps a chain of ``and``/``or`` operands flat, libcst nests one level per operand. Run on
    every class that is parsed, so written for speed: leaves without fields (``Load``, operators) are
    not visited.
    """
    stack: List[Tuple[ast.AST, int]] = [(root, 1)]
    push = stack.append
    while stack:
        node, depth = stack.pop()
        if type(node) is ast.BoolOp:
            depth += len(node.values) - 1
        if depth > limit:
            return True
        depth += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        push((item, depth))
            elif isinstance(value, ast.AST) and value._fields:
                push((value, depth))
    return False


def logical_indentation(line: str) -> int:
    """The indentation of a line as Python's tokenizer counts it: a form feed starts it over."""
    column = 0
    for character in line:
        if character == " ":
            column += 1
        elif character == "\t":
            column = (column // 8 + 1) * 8
        elif character == "\x0c":
            column = 0
        else:
            break
    return column


def parse_class(lines: Sequence[str], node: ast.ClassDef) -> Optional[Segment]:
    """Parse the class ``node`` from the file's ``lines``; None when libcst cannot parse it (or should not)."""
    first_line = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
    last_line = getattr(node, "end_lineno", None)
    if last_line is None:  # pragma: no cover - Python < 3.8 has no end positions
        return None
    if syntax_depth_exceeds(node):
        return None
    class_lines = list(lines[first_line - 1:last_line])
    if class_lines and class_lines[0].startswith("\ufeff"):
        class_lines[0] = class_lines[0][1:]
    text = "".join(class_lines)
    column_shifts: Dict[int, int] = {}
    if "\x0c" in text:
        column_shifts = _drop_form_feeds_from_indentation(class_lines, first_line)
        text = "".join(class_lines)
    indented = logical_indentation(text) > 0
    if indented:
        text = _INDENTED_HEADER + text
    if not text.endswith(("\n", "\r")):
        text += "\n"
    try:
        module = normalized_names(cst.parse_module(text), text)
    except Exception:  # libcst rejects syntax it does not know (newer grammar): stay silent
        return None
    statement: Optional[cst.CSTNode] = module.body[0] if module.body else None
    if indented and isinstance(statement, cst.If) and isinstance(statement.body, cst.IndentedBlock):
        statement = statement.body.body[0] if statement.body.body else None
    if not isinstance(statement, cst.ClassDef):
        return None
    return Segment(module, statement, first_line, 1 if indented else 0, text, node, lines, column_shifts)


def _drop_form_feeds_from_indentation(class_lines: List[str], first_line: int) -> Dict[int, int]:
    """Cut, from each line of ``class_lines`` that starts a logical line, its indentation up to its last
    form feed (Python's tokenizer counts the indentation from there); the number of characters cut,
    by file line (the class starts at ``first_line``).

    Only such lines: libcst keeps a form feed anywhere else (a comment line, inside brackets, after a
    backslash, in a string) as the whitespace it is.
    """
    import tokenize  # rarely needed: only for a class with a form feed

    starts: List[int] = []
    at_start = True
    skipped = (tokenize.INDENT, tokenize.DEDENT, tokenize.NL, tokenize.COMMENT)
    try:
        for token in tokenize.generate_tokens(io.StringIO("".join(class_lines)).readline):
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                at_start = True
            elif at_start and token.type not in skipped:
                starts.append(token.start[0])
                at_start = False
    except (tokenize.TokenError, SyntaxError):
        return {}  # libcst is left to decide: a class that does not tokenize alone is not parsed
    shifts: Dict[int, int] = {}
    for row in starts:
        line = class_lines[row - 1]
        indentation = line[: len(line) - len(line.lstrip(" \t\x0c"))]
        if "\x0c" in indentation:
            cut = indentation.rindex("\x0c") + 1
            class_lines[row - 1] = line[cut:]
            shifts[first_line + row - 1] = cut
    return shifts
