"""Property tests: whatever valid Python the engine is handed, it returns findings and never fails.

Three sources of programs:

* programs generated from the Python grammar by hypothesmith, placed at module level, as the body of
  a Function class, as the bodies of its contract methods, and after a Function class;
* mutants of the fixture Function classes: lines dropped or duplicated, decorators removed or
  swapped, parameters renamed or added, methods made async or replaced by assignments, classes
  nested in functions and classes, bodies emptied;
* deep and long code: expressions nested or chained a thousand levels deep, long chains of names
  and elifs, in the places the engine looks (returns, ctx stores, annotations, setup_context).

Only programs ``ast.parse`` accepts are used (flake8 runs no plugin on the others). A few examples per
test by default; set ``AGF_PROPERTY_EXAMPLES`` (e.g. ``AGF_PROPERTY_EXAMPLES=2000``) for a long run.
"""

from __future__ import annotations

import ast
import os
import re
import textwrap
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Protocol, Sequence, Tuple, TypeVar

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from conftest import fixture_paths, source_lines as flake8_lines
from flake8_autograd.checking.checker import INTERNAL_ERROR, check_module
from flake8_autograd.core.settings import Settings
from flake8_autograd.engine.syntax.source import syntax_depth_exceeds
from flake8_autograd.rules.base import Finding

DEFAULT_EXAMPLES = 25
EVERY_RULE = Settings(preview=True)  # the preview rules run on users' code too (--autograd-preview)
LONG_RUN_FALLBACK = 1_000  # AGF_PROPERTY_EXAMPLES set to something that is not a number


def example_count() -> int:
    value = os.environ.get("AGF_PROPERTY_EXAMPLES", "").strip()
    if not value:
        return DEFAULT_EXAMPLES
    try:
        return max(1, int(value))
    except ValueError:
        return LONG_RUN_FALLBACK


settings.register_profile(
    "agf-properties",
    max_examples=example_count(),
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
PROPERTIES = settings.get_profile("agf-properties")


# -- helpers ----------------------------------------------------------------------------------------
def parse(source: str) -> Optional[ast.Module]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes and the like in generated code
        try:
            return ast.parse(source)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None


def assert_never_fails(source: str, filename: str = "generated.py", extra_bases: Sequence[str] = ()) -> List[Finding]:
    """Run the engine on ``source`` as flake8 would: a list of well-formed findings, no AGF000 but the
    documented notice for a class nested deeper than libcst may parse (the notice only where it is)."""
    lines = flake8_lines(source)
    tree = parse("".join(lines))
    assume(tree is not None)
    assert tree is not None
    findings = check_module(tree, lines, filename, Settings(function_bases=tuple(extra_bases), preview=True))
    assert isinstance(findings, list)
    internal = [finding for finding in findings if finding.code == INTERNAL_ERROR]
    if internal and all("nested too deeply to check" in finding.message for finding in internal):
        assert any(syntax_depth_exceeds(node) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)), source
        internal = []
    assert not internal, f"{internal}\n--- source ---\n{source}"
    for finding in findings:
        assert isinstance(finding, Finding)
        assert 1 <= finding.line <= max(1, len(lines)), finding
        assert finding.column >= 0, finding
        assert finding.message.startswith(finding.code), finding
    return findings


# -- (a) programs from the grammar ------------------------------------------------------------------
FUNCTION_HEADER = "import torch\n\n\nclass Fn(torch.autograd.Function):\n"

TEMPLATES: Dict[str, str] = {
    "module": "import torch\n{program}",
    "class_body": FUNCTION_HEADER + "{program4}",
    "forward_backward": (
        FUNCTION_HEADER
        + "    @staticmethod\n    def forward(ctx, x, y):\n{program8}\n"
        + "    @staticmethod\n    def backward(ctx, grad):\n{program8}"
    ),
    "setup_context": (
        FUNCTION_HEADER
        + "    @staticmethod\n    def forward(x, y: torch.Tensor, scale=1.0):\n        return x * y\n\n"
        + "    @staticmethod\n    def setup_context(ctx, inputs, output):\n{program8}\n"
        + "    @staticmethod\n    def backward(ctx, grad):\n        return grad, grad\n"
    ),
    "after_function": (
        FUNCTION_HEADER
        + "    @staticmethod\n    def forward(ctx, x, y):\n        ctx.x = x\n        return x * y\n\n"
        + "    @staticmethod\n    def backward(ctx, grad):\n        return grad\n\n\n{program}Fn.apply(1, 2, 3)\n"
    ),
    "nested_in_function": (
        "import torch\n\n\ndef factory():\n    class Fn(torch.autograd.Function):\n"
        + "        @staticmethod\n        def backward(ctx, grad):\n{program12}\n    return Fn\n"
    ),
}


def render(template: str, program: str) -> str:
    if not program.endswith("\n"):
        program += "\n"
    block = program + "pass\n"  # a block is never empty, whatever the program holds
    return TEMPLATES[template].format(
        program=program,
        program4=textwrap.indent(block, " " * 4),
        program8=textwrap.indent(block, " " * 8),
        program12=textwrap.indent(block, " " * 12),
    )


def place(template: str, program: str) -> str:
    """The program placed by ``template``; at module level when the placement does not parse."""
    source = render(template, program)
    if parse(source) is None:
        event("placement did not parse: module level")
        return render("module", program)
    event(f"placed: {template}")
    return source


@pytest.mark.slow  # generated programs
@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # hypothesmith compiles what it generates
def test_grammar_generated_programs_never_fail() -> None:
    hypothesmith = pytest.importorskip("hypothesmith")

    @PROPERTIES
    @given(program=hypothesmith.from_grammar(), template=st.sampled_from(sorted(TEMPLATES)))
    def check(program: str, template: str) -> None:
        assert_never_fails(place(template, program))

    check()


@pytest.mark.slow  # generated programs
@pytest.mark.filterwarnings("ignore::SyntaxWarning")
def test_grammar_generated_programs_with_project_bases_never_fail() -> None:
    """The same, with the Function base spelled as a project base passed through the option."""
    hypothesmith = pytest.importorskip("hypothesmith")

    @PROPERTIES
    @given(
        program=hypothesmith.from_grammar(),
        template=st.sampled_from(sorted(TEMPLATES)),
        base=st.sampled_from(["Fn", "Base", "pkg.ops.Base", "torch.autograd.Function"]),
    )
    def check(program: str, template: str, base: str) -> None:
        source = place(template, program).replace("torch.autograd.Function", base)
        assert_never_fails(source, extra_bases=[base, "pkg.ops.Base"])

    check()


# -- (b) mutants of the fixture classes -------------------------------------------------------------
# Every fixture file (the preview rules' too); one being edited into invalid Python is left out.
FIXTURE_TEXTS: Dict[str, str] = {
    path.name: text
    for path in fixture_paths()
    for text in [path.read_text(encoding="utf-8")]
    if parse(text) is not None
}


def split_units(text: str) -> Tuple[List[str], List[List[str]]]:
    """The header (docstring and imports) and each top-level class or function, with its decorators."""
    lines = text.splitlines(keepends=True)
    tree = ast.parse(text)
    units: List[List[str]] = []
    header_end = len(lines)
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
            header_end = min(header_end, first - 1)
            units.append(lines[first - 1:node.end_lineno])
    return lines[:header_end], units


FIXTURE_UNITS: Dict[str, Tuple[List[str], List[List[str]]]] = {
    name: split_units(text) for name, text in FIXTURE_TEXTS.items()
}

T = TypeVar("T")


class Draw(Protocol):
    """What mutations draw their choices with: a composite's ``draw``, or ``data.draw``."""

    def __call__(self, strategy: st.SearchStrategy[T]) -> T:
        ...


Mutation = Callable[[List[str], Draw], List[str]]

_DEF = re.compile(r"^(?P<indent>\s*)(?P<async>async\s+)?def\s+(?P<name>\w+)\((?P<params>[^()]*)\)(?P<rest>.*)$")
REPLACEMENT_NAMES = ["ctx", "self", "cls", "context", "_", "x", "grad", "inputs", "output", "info", "ctx_"]
EXTRA_PARAMETERS = [
    "*args", "**kwargs", "*args, **kwargs", "y=None", "scale=2.0", "z: torch.Tensor", "w: 'torch.Tensor' = None",
    "*", "/", "*, flag=False", "bias: Optional[torch.Tensor] = None", "ctx", "x", "*grads",
]
DECORATORS = [
    "classmethod", "property", "staticmethod", "torch.jit.unused", "staticmethod()", "functools.wraps(f)",
    "builtins.staticmethod", "once_differentiable", "staticmethod.__func__",
]
NEST_HEADERS = [
    "def factory():", "class Outer:", "if torch.cuda.is_available():", "try:", "with torch.no_grad():",
    "async def factory():", "def factory(torch=torch):", "class Outer(torch.autograd.Function):",
]
EMPTY_BODIES = ["pass", "...", '"""docstring only"""', "raise NotImplementedError", "return", "yield"]
ASSIGNED_METHODS = [
    "staticmethod(lambda {params}: None)", "lambda {params}: None", "staticmethod(_impl)", "_impl",
    "staticmethod(lambda *args: args)", "staticmethod(functools.partial(_impl, 1))",
]


@dataclass(frozen=True)
class Block:
    """A class or def in a list of lines, 0-based; ``end`` is exclusive."""

    first: int  # the first decorator, or the header
    header: int
    body: int
    end: int
    column: int


def blocks(lines: List[str], kinds: Tuple[type, ...]) -> List[Block]:
    tree = parse("".join(lines))
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, kinds) and isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
            end = node.end_lineno if node.end_lineno is not None else node.lineno
            found.append(Block(first - 1, node.lineno - 1, node.body[0].lineno - 1, end, node.col_offset))
    return found


def _pick_line(lines: List[str], draw: Draw) -> int:
    return draw(st.integers(0, max(0, len(lines) - 1)))


def drop_line(lines: List[str], draw: Draw) -> List[str]:
    index = _pick_line(lines, draw)
    return lines[:index] + lines[index + 1:]


def duplicate_line(lines: List[str], draw: Draw) -> List[str]:
    index = _pick_line(lines, draw)
    return lines[:index + 1] + lines[index:]


def _decorator_lines(lines: List[str]) -> List[int]:
    return [index for index, line in enumerate(lines) if line.lstrip().startswith("@")]


def remove_decorators(lines: List[str], draw: Draw) -> List[str]:
    decorators = _decorator_lines(lines)
    if not decorators:
        return lines
    if draw(st.booleans()):
        return [line for index, line in enumerate(lines) if index not in decorators]
    index = draw(st.sampled_from(decorators))
    return lines[:index] + lines[index + 1:]


def swap_decorator(lines: List[str], draw: Draw) -> List[str]:
    decorators = _decorator_lines(lines)
    if not decorators:
        return lines
    index = draw(st.sampled_from(decorators))
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
    return lines[:index] + [f"{indent}@{draw(st.sampled_from(DECORATORS))}\n"] + lines[index + 1:]


def _def_lines(lines: List[str]) -> List[int]:
    return [index for index, line in enumerate(lines) if _DEF.match(line.rstrip("\n"))]


def _rewrite_def(match: "re.Match[str]", params: List[str]) -> str:
    prefix = f"{match.group('indent')}{match.group('async') or ''}def {match.group('name')}"
    return f"{prefix}({', '.join(params)}){match.group('rest')}\n"


def rename_parameter(lines: List[str], draw: Draw) -> List[str]:
    defs = _def_lines(lines)
    if not defs:
        return lines
    index = draw(st.sampled_from(defs))
    match = _DEF.match(lines[index].rstrip("\n"))
    assert match is not None
    params = [param.strip() for param in match.group("params").split(",") if param.strip()]
    if not params:
        return lines
    position = draw(st.integers(0, len(params) - 1))
    old = re.match(r"\**(\w+)", params[position])
    if old is None:
        return lines
    new = draw(st.sampled_from(REPLACEMENT_NAMES))
    params[position] = params[position].replace(old.group(1), new, 1)
    result = lines[:index] + [_rewrite_def(match, params)] + lines[index + 1:]
    if draw(st.booleans()):  # rename the uses below the def too
        pattern = re.compile(rf"\b{re.escape(old.group(1))}\b")
        result = [pattern.sub(new, line) if number > index else line for number, line in enumerate(result)]
    return result


def add_parameter(lines: List[str], draw: Draw) -> List[str]:
    defs = _def_lines(lines)
    if not defs:
        return lines
    index = draw(st.sampled_from(defs))
    match = _DEF.match(lines[index].rstrip("\n"))
    assert match is not None
    params = [param.strip() for param in match.group("params").split(",") if param.strip()]
    params.insert(draw(st.integers(0, len(params))), draw(st.sampled_from(EXTRA_PARAMETERS)))
    target = draw(st.integers(0, len(params) - 1))
    if draw(st.booleans()) and re.fullmatch(r"\w+", params[target]):  # annotate or default one more
        params[target] += draw(st.sampled_from([": torch.Tensor", ": int", "=None", ": 'Tensor'", "=1"]))
    return lines[:index] + [_rewrite_def(match, params)] + lines[index + 1:]


def make_async(lines: List[str], draw: Draw) -> List[str]:
    defs = _def_lines(lines)
    if not defs:
        return lines
    index = draw(st.sampled_from(defs))
    return lines[:index] + [re.sub(r"^(\s*)def ", r"\1async def ", lines[index])] + lines[index + 1:]


def empty_body(lines: List[str], draw: Draw) -> List[str]:
    found = [block for block in blocks(lines, (ast.ClassDef, ast.FunctionDef)) if block.body > block.header]
    if not found:
        return lines
    block = draw(st.sampled_from(found))
    statement = draw(st.sampled_from(EMPTY_BODIES))
    return lines[:block.body] + [" " * (block.column + 4) + statement + "\n"] + lines[block.end:]


def nest(lines: List[str], draw: Draw) -> List[str]:
    """Move one class into a function, a class, an ``if``, a ``try`` or a ``with``."""
    found = blocks(lines, (ast.ClassDef,))
    if not found:
        return lines
    block = draw(st.sampled_from(found))
    header = draw(st.sampled_from(NEST_HEADERS))
    indent = " " * block.column
    moved = ["    " + line if line.strip() else line for line in lines[block.first:block.end]]
    tail = [indent + "except ImportError:\n", indent + "    pass\n"] if header == "try:" else []
    return lines[:block.first] + [indent + header + "\n"] + moved + tail + lines[block.end:]


def method_as_assignment(lines: List[str], draw: Draw) -> List[str]:
    """Replace a method by ``name = staticmethod(lambda ...)``, a lambda or a name."""
    found = blocks(lines, (ast.FunctionDef,))
    if not found:
        return lines
    block = draw(st.sampled_from(found))
    match = _DEF.match(lines[block.header].rstrip("\n"))
    if match is None:
        return lines
    params = ", ".join(re.split(r"[:=]", param)[0].strip() for param in match.group("params").split(",") if param)
    value = draw(st.sampled_from(ASSIGNED_METHODS)).format(params=params)
    return lines[:block.first] + [" " * block.column + f"{match.group('name')} = {value}\n"] + lines[block.end:]


MUTATIONS: List[Mutation] = [
    drop_line, duplicate_line, remove_decorators, swap_decorator, rename_parameter, add_parameter, make_async,
    empty_body, nest, method_as_assignment,
]


@st.composite
def fixture_mutants(draw: st.DrawFn) -> Tuple[str, str]:
    """(fixture file name, source): the fixture's header and one to three of its units, mutated."""
    name = draw(st.sampled_from(sorted(FIXTURE_UNITS)))
    header, units = FIXTURE_UNITS[name]
    chosen = draw(st.lists(st.sampled_from(units), min_size=1, max_size=3))
    lines = list(header)
    for unit in chosen:
        lines += ["\n", "\n"] + unit
    for _ in range(draw(st.integers(1, 5))):
        mutation = draw(st.sampled_from(MUTATIONS))
        mutated = mutation(lines, draw)
        if mutated != lines and parse("".join(mutated)) is not None:  # keep only mutants ast accepts
            event(f"mutation: {mutation.__name__}")
            lines = mutated
    return name, "".join(lines)


@pytest.mark.slow  # generated mutants of the fixtures
@PROPERTIES
@given(mutant=fixture_mutants())
def test_fixture_mutants_never_fail(mutant: Tuple[str, str]) -> None:
    name, source = mutant
    assert_never_fails(source, filename=f"tests/fixtures/{name}")


@pytest.mark.slow  # generated mutations
@PROPERTIES
@given(data=st.data(), mutation=st.sampled_from(MUTATIONS))
def test_each_mutation_alone_never_fails(data: st.DataObject, mutation: Mutation) -> None:
    """Each operator, alone on one unit: the mutant parses (then it is linted) or is discarded."""
    name = data.draw(st.sampled_from(sorted(FIXTURE_UNITS)))
    header, units = FIXTURE_UNITS[name]
    unit = data.draw(st.sampled_from(units))
    mutated = mutation(list(header) + ["\n", "\n"] + unit, data.draw)
    if parse("".join(mutated)) is not None:
        assert_never_fails("".join(mutated), filename=f"tests/fixtures/{name}")


# -- (c) deep and long code ------------------------------------------------------------------------
# Nesting and chains of any length the engine may meet: it follows them within its budgets, or stays
# silent, but never fails (a recursion too deep, a crash of libcst's native parser, a run that hangs).
UNBRACKETED = [
    "{} + grad", "grad * {}", "2 ** {}", "{} and grad", "grad or {}", "-{}", "not {}", "{}.T", "{}[0]",
    "{}()", "{} if ctx.flag else grad", "lambda: {}", "{} < grad",
]
BRACKETED = ["({})", "torch.exp({})", "[{}]", "({},)", "({}, None)", "{{'k': {}}}", "f(x={})", "({} for _ in grad)"]
# The ast parser accepts nesting to a few thousand levels, and brackets to 200.
MAX_CHAIN = 1_200
MAX_BRACKETS = 150

DEEP_PLACES = {
    "return": "    @staticmethod\n    def backward(ctx, grad):\n        return {expression}\n",
    "ctx-store": (
        "    @staticmethod\n    def forward(ctx, grad, y):\n        ctx.v = {expression}\n"
        "        ctx.save_for_backward({expression})\n        return grad\n"
    ),
    "setup-context": (
        "    @staticmethod\n    def forward(grad, y: torch.Tensor):\n        return {expression}\n\n"
        "    @staticmethod\n    def setup_context(ctx, inputs, output):\n        grad = output\n"
        "        ctx.v = {expression}\n"
    ),
    "string-annotation": '    @staticmethod\n    def forward(ctx, x: "{expression}", grad):\n        return x\n',
    "class-body": "    SOURCE = {expression}\n",
}
# Before each body: a forward it can refer to.
DEEP_FORWARD = (
    "    @staticmethod\n    def forward(ctx, x, y):\n        ctx.save_for_backward(x)\n        return x * y\n\n"
)


@st.composite
def deep_expressions(draw: st.DrawFn) -> str:
    """A chain of one unbracketed form, wrapped in brackets, then in another chain."""
    expression = "grad"
    for wrappers, most in ((UNBRACKETED, MAX_CHAIN // 2), (BRACKETED, MAX_BRACKETS), (UNBRACKETED, MAX_CHAIN // 2)):
        wrapper = draw(st.sampled_from(wrappers))
        for _ in range(draw(st.integers(0, most))):
            expression = wrapper.format(expression)
    return expression


@st.composite
def long_statement_chains(draw: st.DrawFn) -> str:
    """A backward body of many statements that each refer to the one before."""
    count = draw(st.integers(1, MAX_CHAIN))
    form = draw(st.sampled_from(["alias", "double", "tuple", "tensor", "elif", "nested"]))
    if form == "elif":
        body = "if ctx.mode == 0:\n    return grad\n" + "".join(
            f"elif ctx.mode == {i}:\n    return grad, None\n" for i in range(1, count)
        )
    elif form == "nested":  # Python allows 100 levels of indentation
        depth = min(count, 90)
        body = "".join(" " * 4 * level + "if ctx.needs_input_grad[0]:\n" for level in range(depth))
        body += " " * 4 * depth + "return grad, grad\n"
    else:
        value = {"alias": "a{0}", "double": "a{0} + a{0}", "tuple": "a{0} + (None,)", "tensor": "a{0} * 2"}[form]
        body = "a0 = (grad,)\n" + "".join(f"a{i} = {value.format(i - 1)}\n" for i in range(1, count))
        body += f"return a{count - 1}\n"
    return "    @staticmethod\n    def backward(ctx, grad):\n" + textwrap.indent(body, " " * 8)


@pytest.mark.slow  # generated deep and long code
@PROPERTIES
@given(
    body=st.one_of(
        st.builds(lambda place, expression: DEEP_PLACES[place].format(expression=expression),
                  st.sampled_from(sorted(DEEP_PLACES)), deep_expressions()),
        long_statement_chains(),
    )
)
def test_deep_and_long_code_never_fails(body: str) -> None:
    assert_never_fails(FUNCTION_HEADER + DEEP_FORWARD + body)


# -- every unit, a few structural mutations each, without hypothesis ---------------------------------
def _unit_ids() -> List[Tuple[str, int]]:
    return [(name, index) for name in sorted(FIXTURE_UNITS) for index in range(len(FIXTURE_UNITS[name][1]))]


def structural_variants(unit: List[str]) -> List[List[str]]:
    """The unit as it is, without decorators, nested in a function and a class, and with each body emptied."""
    indented = ["    " + line if line.strip() else line for line in unit]
    variants = [
        list(unit),
        [line for line in unit if not line.lstrip().startswith("@")],
        ["def factory():\n"] + indented + ["    return None\n"],
        ["class Outer:\n"] + indented,
    ]
    for block in blocks(unit, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        if block.body > block.header:
            variants.append(unit[:block.body] + [" " * (block.column + 4) + "pass\n"] + unit[block.end:])
    return variants


@pytest.mark.slow  # every unit of every fixture, mutated
@pytest.mark.parametrize("name, index", _unit_ids(), ids=[f"{name}-{index}" for name, index in _unit_ids()])
def test_every_fixture_unit_survives_structural_mutations(name: str, index: int) -> None:
    header, units = FIXTURE_UNITS[name]
    checked = 0
    for variant in structural_variants(units[index]):
        source = "".join(header) + "\n\n" + "".join(variant)
        tree = parse(source)
        if tree is None:
            continue
        findings = check_module(tree, flake8_lines(source), f"tests/fixtures/{name}", EVERY_RULE)
        internal = [finding for finding in findings if finding.code == INTERNAL_ERROR]
        assert not internal, f"{internal}\n--- source ---\n{source}"
        checked += 1
    assert checked >= 4


def test_example_count_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGF_PROPERTY_EXAMPLES", "1234")
    assert example_count() == 1234
    monkeypatch.setenv("AGF_PROPERTY_EXAMPLES", "many")
    assert example_count() == LONG_RUN_FALLBACK
    monkeypatch.delenv("AGF_PROPERTY_EXAMPLES")
    assert example_count() == DEFAULT_EXAMPLES
