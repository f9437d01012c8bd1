"""Deep expressions in every place a rule reads one, and form feeds in a class's indentation.

Deep expressions: a rule that generates the code of an expression, or recurses over it, exhausts
Python's stack a few hundred levels deep (libcst generates code recursively, several frames a level),
and the class then gets an internal error (AGF000) instead of its findings. The sweep below puts each
of several deep shapes in each place the rules look at, and runs the real executables over all of the
files at once.

Form feeds: Python's tokenizer starts the indentation count over at a form feed, but libcst's does
not, so a class whose indentation holds one used to fail to parse and was skipped without a word.
"""

from __future__ import annotations

import ast
import subprocess
import textwrap
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import lint, source_lines
from flake8_autograd.adapters.command.fixer import fix_text
from flake8_autograd.adapters.command.runner import CheckOptions
from flake8_autograd.engine.syntax.source import parse_class
from test_command import COMMAND
from test_robustness import BUGGY, REPORT_LINE, Run, flake8

# -- deep expressions -------------------------------------------------------------------------------


def _nested(depth: int, inner: str, template: str) -> str:
    expression = inner
    for _ in range(depth):
        expression = template.format(expression)
    return expression


# Brackets of every kind nest at most 200 deep (CPython's tokenizer refuses more, "too many nested
# parentheses"), and each place below adds one: 190 leaves room.
BRACKETS = 190


def deep_shapes(depth: int) -> Dict[str, str]:
    """Expressions nested ``depth`` levels deep (as libcst nests them), each a shape of its own."""
    return {
        "implicit-string-concatenation": " ".join(['"a"'] * depth),  # flat in ast, nested in libcst
        "f-string-concatenation": " ".join(['f"{x}"'] * depth),
        "not": "not " * depth + "x",
        "unary-minus": "- " * depth + "x",
        "invert": "~" * depth + "x",
        "attributes": "x" + ".a" * depth,
        "subscripts": "x" + "[0]" * depth,
        "calls-of-calls": "x" + "()" * depth,
        "method-chain": "x" + ".t()" * (depth // 2),  # two levels each
        "binary-operations": "x" + " + 1" * depth,
        "powers": " ** ".join(["x"] * depth),  # right-associative
        "conditional-expressions": "torch.empty(1) if x else " * depth + "x",  # memory, until the last
        "lambdas": "lambda: " * depth + "x",
        "and-chain": " and ".join(["x"] * depth),  # flat in ast, nested in libcst
        "comparison-chain": " < ".join(["x"] * depth),
        "parentheses": _nested(min(depth, BRACKETS), "x", "({})"),
        "nested-calls": _nested(min(depth, BRACKETS), "x", "f({})"),
        "nested-tuples": _nested(min(depth, BRACKETS), "x", "({},)"),
        "nested-lists": _nested(min(depth, BRACKETS), "x", "[{}]"),
        "parenthesised-products": _nested(min(depth, BRACKETS), "x", "(x * {})"),
    }


# Every class holds one mistake the deep expression has nothing to do with (backward is not a
# staticmethod: AGF001 at its def), so that a class skipped as too deep to parse shows as a missing finding.
def _function_class(name: str, place: str, expression: str) -> str:
    forward_parameters = "ctx, x, y"
    forward = ["ctx.save_for_backward(x)", "ctx.y = y", "return x * y"]
    backward = ["return grad, None"]
    before_forward = ""  # lines of the class body above forward's decorator
    after = ""  # module code after the class
    if place == "save_for_backward-argument":
        forward[0] = f"ctx.save_for_backward(x, {expression})"
    elif place == "ctx-store":
        forward[1] = f"ctx.k = {expression}"
    elif place == "forward-return":
        forward[2] = f"return {expression}"
    elif place == "forward-local":
        forward = [f"t = {expression}", "ctx.save_for_backward(t)", "ctx.t = t", "return t"]
    elif place == "forward-condition":
        forward = [f"if {expression}:", "    ctx.save_for_backward(x)", "ctx.save_for_backward(y)", "return x"]
    elif place == "in-place-argument":
        forward.insert(0, f"x.add_({expression})")
    elif place == "mark_dirty-argument":
        forward.insert(0, f"ctx.mark_dirty({expression})")
    elif place == "parameter-default":
        forward_parameters = f"ctx, x, y={expression}"
    elif place == "parameter-annotation":
        forward_parameters = f"ctx, x: {expression}, y"
    elif place == "decorator":
        before_forward = f"    @{expression}\n"
    elif place == "backward-return":
        backward = [f"return {expression}"]
    elif place == "backward-local":
        backward = [f"g = {expression}", "return g, grad * 2"]
    elif place == "needs_input_grad-index":
        backward.insert(0, f"if ctx.needs_input_grad[{expression}]:\n            return grad, grad")
    elif place == "gradient-in-place-argument":
        backward.insert(0, f"grad.mul_({expression})")
    elif place == "beside-a-fixable-ctx-store":  # AGF003's fix reads backward
        forward_parameters = "ctx, x: torch.Tensor, y"
        forward[1] = "ctx.x = x"
        backward = [f"k = {expression}", "return grad * ctx.x * k, None"]
    elif place == "apply-argument":
        after = f"\n\nout = {name}.apply({expression})\n"
    elif place == "instantiation-argument":
        after = f"\n\nout = {name}()({expression})\n"
    elif place == "class-attribute":
        before_forward = f"    generate_vmap_rule = {expression}\n\n"
    indent = "\n        "
    if place == "setup_context":
        methods = (
            "    @staticmethod\n    def forward(x, y):\n        return x * y\n\n"
            "    @staticmethod\n    def setup_context(ctx, inputs, output):\n"
            f"        x, y = inputs\n        ctx.save_for_backward(x, {expression})\n        ctx.k = {expression}\n"
        )
    else:
        header = f"{before_forward}    @staticmethod\n    def forward({forward_parameters}):"
        methods = f"{header}{indent}{indent.join(forward)}\n"
    return (
        f"\n\nclass {name}(torch.autograd.Function):\n{methods}\n"
        f"    def backward(ctx, grad):{indent}{indent.join(backward)}\n{after}"
    )


PLACES = [
    "save_for_backward-argument", "ctx-store", "forward-return", "forward-local", "forward-condition",
    "in-place-argument", "mark_dirty-argument", "parameter-default", "parameter-annotation", "decorator",
    "backward-return", "backward-local", "needs_input_grad-index", "gradient-in-place-argument",
    "beside-a-fixable-ctx-store", "apply-argument", "instantiation-argument", "class-attribute", "setup_context",
]


# The places the rules read most closely, for the deepest shapes.
PLACES_READ_CLOSELY = [
    "save_for_backward-argument", "setup_context", "ctx-store", "forward-return", "backward-return",
    "backward-local", "needs_input_grad-index", "apply-argument",
]


def deep_module(expression: str, places: List[str]) -> Tuple[str, List[int]]:
    """A module with one Function class per place, each holding ``expression`` there; the lines of
    the marker finding (AGF001 at each backward's def)."""
    text = "import torch\n\n\ndef f(*args):\n    return args\n"
    markers = []
    for index, place in enumerate(places):
        text += _function_class(f"Fn{index}", place, expression)
        markers.append(text.count("\n", 0, text.rindex("    def backward")) + 1)
    return text, markers


def write_deep_modules(folder: Path, depths: Dict[str, int], places: List[str]) -> Dict[str, List[int]]:
    """One module per shape, at its depth; the marker lines of each file written.

    Python's own parser refuses some inputs (more than 200 brackets, or about 3000 levels): those are
    not written, since neither flake8 nor this plugin ever sees them.
    """
    written = {}
    for shape, depth in depths.items():
        text, markers = deep_module(deep_shapes(depth)[shape], places)
        try:
            ast.parse(text)
        except (SyntaxError, RecursionError, MemoryError):
            continue
        (folder / f"{shape}.py").write_text(text)
        written[f"{shape}.py"] = markers
    return written


def assert_every_class_checked(run: Run, written: Dict[str, List[int]]) -> None:
    for name, markers in written.items():
        found = run.findings_in(name)
        assert not [finding for finding in found if finding[1] == "AGF000"], (name, run.stdout[-3000:])
        missing = [line for line in markers if (line, "AGF001") not in found]
        assert not missing, f"{name}: classes at lines {missing} were not checked\n{run.stdout[-3000:]}"


# Every shape in every place, through flake8, as deep as keeps the run to seconds: libcst's parser
# takes time that grows faster than the depth (most for brackets and subscripts), and pyflakes, which
# flake8 runs too, gives up from about 330 levels of most shapes. Deep enough for any code that spends
# three frames or more a level (libcst's code generation spends more).
FLAKE8_DEPTHS = {
    "implicit-string-concatenation": 500,
    "f-string-concatenation": 250,
    "not": 350,
    "unary-minus": 350,
    "invert": 350,
    "attributes": 250,
    "subscripts": 120,
    "calls-of-calls": 250,
    "method-chain": 300,
    "binary-operations": 250,
    "powers": 200,
    "conditional-expressions": 150,
    "lambdas": 200,
    "and-chain": 500,
    "comparison-chain": 990,
    "parentheses": BRACKETS,
    "nested-calls": 40,
    "nested-tuples": 40,
    "nested-lists": 40,
    "parenthesised-products": 40,
}
# Near the limits, in the places read most closely, through the command (which runs no pyflakes, and
# works out each fix it could make): libcst nests these a level each, and the engine parses a class
# up to 1000 levels deep; libcst refuses about 3500 concatenated strings.
COMMAND_DEPTHS = {
    "implicit-string-concatenation": 3000,
    "not": 990,
    "conditional-expressions": 500,  # enough for code that spends two frames a level
    "lambdas": 990,
}


def test_a_long_string_concatenation_saved_gives_its_finding(tmp_path: Path) -> None:
    """``ctx.save_for_backward("a" "a" ...)``: once AGF000 (RecursionError quoting the argument)."""
    saved = "ctx.save_for_backward(x, " + " ".join(['"a"'] * 600) + ")\n        ctx.x = x"
    (tmp_path / "concatenation.py").write_text(BUGGY.replace("ctx.x = x", saved))
    run = flake8(tmp_path, "--autograd-preview", "concatenation.py")
    run.assert_clean()
    assert (7, "AGF102") in run.findings
    assert "saves a value, not a tensor" in run.stdout


def test_deep_expressions_everywhere_through_flake8(tmp_path: Path) -> None:
    written = write_deep_modules(tmp_path, FLAKE8_DEPTHS, PLACES)
    assert len(written) == len(FLAKE8_DEPTHS)
    run = flake8(tmp_path, "--autograd-preview", "-j", "2", ".")
    run.assert_clean()
    assert_every_class_checked(run, written)


def test_the_deepest_expressions_through_the_command(tmp_path: Path) -> None:
    written = write_deep_modules(tmp_path, COMMAND_DEPTHS, PLACES_READ_CLOSELY)
    assert len(written) == len(COMMAND_DEPTHS)
    result = subprocess.run([COMMAND, "--preview", "-j", "2", "."], cwd=tmp_path, capture_output=True, timeout=600)
    run = Run(result, preview=True)
    run.assert_clean()
    assert_every_class_checked(run, written)


# -- a class too deep to parse ------------------------------------------------------------------------
def _too_deep_module(test: str) -> str:
    """Two legacy classes (AGF001 each): ``Deep``, whose forward holds ``test`` (nested past the limit as
    libcst counts), at line 4; ``Shallow`` after it."""
    return (
        "import torch\n\n\nclass Deep(torch.autograd.Function):\n"
        f"    def forward(ctx, x, k):\n{test}        return x\n\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g, None\n\n\n"
        "class Shallow(torch.autograd.Function):\n    def forward(ctx, x):\n        return x\n\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g\n"
    )


# A chain of elif branches, which CPython compiles and runs (pyflakes does not: it recurses once a branch);
# a chain of ``and`` operands, flat for ast (and pyflakes), one level each for libcst.
ELIF_CHAIN = "".join(f"        {'elif' if k else 'if'} k == {k}:\n            x = x * {k}\n" for k in range(1100))
AND_CHAIN = "        if " + " and ".join(["k"] * 1100) + ":\n            x = x * 2\n"
TOO_DEEP = (
    "AGF000 Deep is nested too deeply to check (more than 1000 levels, such as a chain of 1000 elif branches); "
    "none of its findings are reported"
)


@pytest.mark.parametrize("test", [ELIF_CHAIN, AND_CHAIN], ids=["elif-chain", "and-chain"])
def test_a_class_too_deep_to_parse_is_said_so_by_the_command(tmp_path: Path, test: str) -> None:
    (tmp_path / "deep.py").write_text(_too_deep_module(test))
    result = subprocess.run([COMMAND, "deep.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"deep.py:4:1: {TOO_DEEP}"
    assert len(lines) == 2 and " AGF001 Shallow.forward " in lines[1]  # the rest of the file is checked


def test_a_class_too_deep_to_parse_is_said_so_through_flake8(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text(_too_deep_module(AND_CHAIN))
    run = flake8(tmp_path, "deep.py")
    assert run.returncode == 1, run.stderr
    assert f"deep.py:4:1: {TOO_DEEP}" in run.stdout.splitlines()
    assert [code for _line, code in run.findings] == ["AGF000", "AGF001"]


# -- form feeds in indentation ----------------------------------------------------------------------
# Two classes, one nested in a function; AGF001, AGF002 and AGF004 in each, all with a fix. AGF002 and
# AGF004 are preview rules: the tests below turn preview on, so that every finding and fix is there.
FORM_FEED_BASE = textwrap.dedent(
    """\
    import torch


    def factory():
        class Scale(torch.autograd.Function):
            def forward(this, x: torch.Tensor, scale: float):
                this.save_for_backward(x)
                if scale > 1:
                    this.big = True
                else:
                    this.big = False
                return x * scale

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * x

        return Scale


    class Mul(torch.autograd.Function):
        def forward(this, x: torch.Tensor, scale: float):
            this.save_for_backward(x)
            return x * scale

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x
    """
)
# Where a form feed goes: (line, what is put before the line's indentation, whether a fix edits that line).
FORM_FEEDS: Dict[str, Tuple[int, str, bool]] = {
    "before-the-first-def-of-a-class": (23, "\x0c", True),
    "before-the-first-statement-of-a-method": (24, "\x0c", True),
    "within-the-indentation": (24, "    \x0c", True),
    "before-a-later-statement": (25, "\x0c", False),
    "before-an-else": (10, "\x0c", False),
    "before-a-nested-class": (5, "\x0c", False),
    "before-the-first-def-of-a-nested-class": (6, "\x0c", True),
    "before-a-return-a-fix-extends": (30, "\x0c", True),
    "before-a-class": (22, "\x0c", False),
}
Report = Tuple[int, int, str]  # line, column (1-based), code


def _with_form_feed(name: str) -> str:
    line, prefix, _edited = FORM_FEEDS[name]
    lines = FORM_FEED_BASE.split("\n")
    lines[line - 1] = prefix + lines[line - 1]
    return "\n".join(lines)


def _reports(output: str) -> Dict[str, List[Report]]:
    """Each file's (line, column, code) reports in flake8's format, sorted."""
    found: Dict[str, List[Report]] = {}
    for match in map(REPORT_LINE.match, output.splitlines()):
        if match:
            report = (int(match.group("line")), int(match.group("column")), match.group("code"))
            found.setdefault(Path(match.group("path")).name, []).append(report)
    return {name: sorted(reports) for name, reports in found.items()}


def _expected_with_form_feed(base: List[Report], name: str) -> List[Report]:
    """The reports on the file without the form feed, the columns on its line moved past what was put there."""
    line, prefix, _edited = FORM_FEEDS[name]
    return sorted((at, column + len(prefix) if at == line else column, code) for at, column, code in base)


@pytest.fixture
def form_feed_files(tmp_path: Path) -> Path:
    (tmp_path / "base.py").write_text(FORM_FEED_BASE)
    for name in FORM_FEEDS:
        (tmp_path / f"{name}.py").write_text(_with_form_feed(name))
    return tmp_path


def test_the_base_file_has_its_findings(form_feed_files: Path) -> None:
    run = flake8(form_feed_files, "base.py", preview=True)
    codes = [code for _line, _column, code in _reports(run.stdout)["base.py"]]
    assert sorted(codes) == ["AGF001", "AGF001", "AGF002", "AGF002", "AGF004", "AGF004"]


@pytest.mark.parametrize("executable", ["flake8", "flake8-autograd"])
def test_a_form_feed_in_indentation_changes_no_finding(form_feed_files: Path, executable: str) -> None:
    """Python starts counting the indentation over at a form feed; the class was once skipped."""
    if executable == "flake8":
        run = flake8(form_feed_files, ".", preview=True)
    else:
        command = [COMMAND, "--preview", "."]
        run = Run(subprocess.run(command, cwd=form_feed_files, capture_output=True, timeout=120), preview=True)
    run.assert_clean()
    reports = _reports(run.stdout)
    for name in FORM_FEEDS:
        assert reports.get(f"{name}.py") == _expected_with_form_feed(reports["base.py"], name), name


def test_fixes_keep_the_form_feed(form_feed_files: Path) -> None:
    """Fixes apply around a form feed, and keep it; on its line too, except an insertion before it."""
    command = [COMMAND, "--preview", "--fix"]
    result = subprocess.run([*command, "base.py"], cwd=form_feed_files, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    fixed_base = (form_feed_files / "base.py").read_text()
    result = subprocess.run([*command, "."], cwd=form_feed_files, capture_output=True, timeout=120)
    assert result.returncode == 1 and b"Traceback" not in result.stderr, result.stderr
    left = result.stdout.decode()
    for name, (line, prefix, edited) in FORM_FEEDS.items():
        fixed = (form_feed_files / f"{name}.py").read_text()
        ast.parse(fixed)
        original_line = FORM_FEED_BASE.split("\n")[line - 1]
        assert fixed.count("\x0c") == prefix.count("\x0c"), name  # the form feed is kept
        if not edited:
            assert prefix + original_line in fixed.split("\n"), name  # its line, unchanged
            assert fixed.replace(prefix + original_line, original_line, 1) == fixed_base, name
        else:
            # Only the fixes of the class holding the form feed may be left out (an insertion before its
            # line: the new line's indentation would be a guess).
            class_name = "Scale" if line < 20 else "Mul"
            remaining = [report for report in left.splitlines() if report.startswith(f"./{name}.py:")]
            assert all(f" {class_name}." in report for report in remaining), (name, remaining)


FORM_FEEDS_EVERYWHERE = (
    "import torch\n"
    "\n"
    "\n"
    "class Scale(torch.autograd.Function):\n"
    "\x0c    # a comment after a form feed\n"
    "  \x0c  \x0c    @staticmethod\n"  # Python counts the indentation from the last form feed: 4
    "\x0c    def forward(ctx, x: torch.Tensor, y: torch.Tensor):\n"
    "\x0c        z = (x,\n"
    "\x0c             y)\n"  # inside brackets: whitespace, not indentation
    "        w = x + \\\n"
    "\x0c            y\n"  # after a backslash: whitespace too
    "        s = '''\n"
    "\x0c   '''\n"  # inside a string
    "\x0c        ctx.x = x\n"
    "        return x * y\n"
    "\n"
    "    @staticmethod\n"
    "    def backward(ctx, grad):\n"
    "\x0c        return grad\n"
)


def test_form_feeds_elsewhere_stay_in_the_text_libcst_parses() -> None:
    lines = source_lines(FORM_FEEDS_EVERYWHERE)
    tree = ast.parse(FORM_FEEDS_EVERYWHERE)
    segment = parse_class(lines, next(node for node in tree.body if isinstance(node, ast.ClassDef)))
    assert segment is not None
    assert segment.module.code == segment.text  # libcst gives back what it parsed: its positions hold
    assert segment.text.count("\x0c") == 4  # the comment line, the bracket, the continuation, the string
    assert segment.column_shifts == {6: 6, 7: 1, 8: 1, 14: 1, 19: 1}
    findings = [(finding.line, finding.column, finding.code) for finding in lint(FORM_FEEDS_EVERYWHERE, preview=True)]
    # Columns as Python counts characters in the file: the form feeds are characters of the line.
    assert findings == [(14, 9, "AGF003"), (19, 9, "AGF004")]


def test_a_fix_on_a_line_with_a_form_feed_lands_at_the_file_columns() -> None:
    source = (
        "import torch\n\n\nclass Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(this, x):\n"
        "\x0c        this.save_for_backward(x)\n        return x * 2\n\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        return grad * 2\n"
    )
    fixed, count, _, _ = fix_text(source, "example.py", CheckOptions(preview=True))  # AGF002's rename (safe)
    assert count == 1
    assert "    def forward(ctx, x):\n\x0c        ctx.save_for_backward(x)\n" in fixed


# -- a helper of the module read again for its writes -------------------------------------------------
def test_a_helper_too_deep_for_libcst_is_not_followed_and_nothing_crashes(tmp_path: Path) -> None:
    """A module function that forward calls is parsed again to see what it writes; a long ``or`` chain in
    it (flat for ast, one level per operand for libcst) overflowed libcst's parser and killed the run."""
    chain = " or ".join(f"a{index}" for index in range(9000))
    (tmp_path / "deep_helper.py").write_text(
        "import torch\n\n\n"
        f"def helper(x):\n    y = {chain}\n    x.add_(1)\n    return x\n\n\n"
        "class Bump(torch.autograd.Function):\n"
        "    def forward(ctx, x):\n        helper(x)\n        return x\n\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        return grad\n"
    )
    result = subprocess.run([COMMAND, "--preview", "deep_helper.py"], cwd=tmp_path, capture_output=True, timeout=300)
    run = Run(result, preview=True)
    run.assert_clean()
    assert "deep_helper.py:11:5: AGF001" in result.stdout.decode()  # the class itself is still checked


def test_a_test_of_a_thousand_or_operands_loses_no_finding() -> None:
    """The narrowing of ``if x is None or ...`` read each operand one level deeper: a chain of about a
    thousand raised RecursionError, and the class lost its findings to an internal error."""
    chain = " or ".join(["x is None"] * 990)
    source = (
        "import torch\n\n\nclass Keep(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x: torch.Tensor, y):\n"
        f"        if {chain}:\n            y = 1\n"
        "        ctx.k = x\n        return x * 2\n\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        return grad * 2, None\n"
    )
    assert [(finding.line, finding.code) for finding in lint(source, preview=True)] == [(9, "AGF003")]


def _function_then(tail: str) -> str:
    return (
        "import torch\n\n\nclass Fn(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        return x\n\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        return grad\n\n\n" + tail
    )


@pytest.mark.parametrize(
    "source",
    [
        # a starred empty list repeated more times than a list can hold
        _function_then("").replace("return grad\n", "return (grad, *[] * 100000000000000000000000)\n"),
        # a direct call on `this` of a class three thousand local bases deep
        _function_then(
            "class C0:\n    pass\n"
            + "".join(f"class C{index}(C{index - 1}):\n    pass\n" for index in range(1, 3000))
            + "class D(C2999):\n    def go(this):\n        return Fn.forward(None, this)\n"
        ),
        # a direct call given a parameter annotated with a thousand-term union
        _function_then(f"def go(y: {'|'.join(['int'] * 985)}):\n    return Fn.forward(None, y)\n"),
    ],
    ids=["starred-huge-repeat", "deep-local-bases", "huge-union-annotation"],
)
def test_extreme_but_valid_shapes_raise_no_internal_error(source: str) -> None:
    assert "AGF000" not in {finding.code for finding in lint(source, preview=True)}


def test_integer_kind_of_a_chain_of_twice_bound_names_is_judged_once_per_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each name bound twice to the previous one: following every binding afresh doubled the work per link."""
    from flake8_autograd.engine.facts import integer_dtypes

    chain = "".join(f"        y{index} = y{index - 1}; y{index} = y{index - 1}\n" for index in range(1, 16))
    source = (
        "import torch\n\n\nclass Index(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x, z):\n        y0 = x.long()\n" + chain + "        return y15\n\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        return grad\n"
    )
    calls: List[int] = []
    original = integer_dtypes.is_integer_tensor

    def counted(*args: object, **kwargs: object) -> bool:
        calls.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(integer_dtypes, "is_integer_tensor", counted)
    # With every rule on: AGF004 counts the gradients due, which asks whether each output is an integer tensor.
    assert lint(source, preview=True) == []  # the only output is an integer tensor: backward never runs
    assert calls
    assert len(calls) < 400
